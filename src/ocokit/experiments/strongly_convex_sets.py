"""Paper 001 (Wan and Zhang, projection-free online learning over strongly convex sets): regret exponents.

The paper has no experiments; ``strongly-convex-sets`` checks its theorems' exponents as a rough empirical
slope of log(regret) against log(T): linear losses
(:class:`~ocokit.problems.OnlineLinear`) over the l2 and l_1.5 balls (strongly convex) and the l1 ball (a
polytope), OFW with line search (Algorithm 1, Thm 1: O(T^{2/3})) against Hazan-Kale's OFW (O(T^{3/4})); and
strongly convex quadratic losses (:class:`~ocokit.problems.OnlineQuadratic`) over the l2 and l1 balls, SC-OFW
(Algorithm 2; Thm 2: O(sqrt T) over strongly convex sets, Thm 3: O(T^{2/3}) on any set).

``T`` is the largest horizon; the grid is ``T / 2^k`` for ``k < points``. Each learner runs every horizon as
one vmapped sweep of T rounds over a stack of learners (each with its horizon's theory parameters) and seeds;
horizon Tb's regret is read from the first Tb rounds against the best fixed point of those rounds, exactly a
run of Tb rounds (learners never look ahead; round t's data depends only on (seed, t)). The fitted exponent
is the log-log slope of the mean static regret over seeds against T. Default: T = 4000, 5 seeds, d = 10.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ocokit import metrics
from ocokit.algorithms import OFW, SCOFW, OFWLineSearch, ProblemInfo
from ocokit.engine import stack
from ocokit.harness import Algorithm, Claim, Experiment, Figure, Option, Outcome, Summary, per_run, play, register
from ocokit.problems import OnlineLinear, OnlineQuadratic
from ocokit.problems._base import AbstractProblem, round_at
from ocokit.sets import L1Ball, L2Ball, LpBall

NAME = "strongly-convex-sets"


def _ofw_with_thm1_eta(info: ProblemInfo) -> OFW:
    """Ablation: the decaying step of Hazan-Kale with OFW-LS's larger ``eta = D / (2 G (T+2)^{2/3})``."""
    return OFW.from_theory(info, eta=float(OFWLineSearch.from_theory(info).eta))


ALGORITHMS = (
    Algorithm("OFW-LS", OFWLineSearch.from_theory, "paper 001 Algorithm 1, eta = D / (2 G (T+2)^{2/3})"),
    Algorithm("OFW", OFW.from_theory, "Hazan-Kale OFW, eta = D / (2 G T^{3/4}), sigma_t = min(1, 2/sqrt t)"),
    Algorithm("OFW, Thm-1 eta", _ofw_with_thm1_eta,
              "ablation: Hazan-Kale's decaying step with OFW-LS's eta (no theorem)"),
    Algorithm("SC-OFW", SCOFW.from_theory, "paper 001 Algorithm 2, lam = the losses' strong convexity"),
)  # fmt: skip
LEARNERS = {a.label: a for a in ALGORITHMS}
"""Legend label -> the algorithm, its factory giving the theorems' parameters for the horizon in ``info``."""


@dataclasses.dataclass(frozen=True)
class _Setting:
    """One panel: a set and a loss family, the learners run on it and the exponent each theorem gives."""

    key: str
    title: str
    family: str  # "linear" or "quadratic": one figure each
    make_problem: Callable[[int], AbstractProblem]
    theory: Mapping[str, float | None]  # learner label -> theorem's exponent (None: no theorem)


_LIN, _QUAD = (
    (lambda K: OnlineLinear(K, drift=1.0, noise=1.0)),
    (lambda K: OnlineQuadratic(K, lam=1.0, offset=2.0, noise=1.0)),
)
_OFW = {"OFW-LS": 2 / 3, "OFW": 3 / 4, "OFW, Thm-1 eta": None}
_POLY = "l1 ball (polytope)"
SETTINGS: tuple[_Setting, ...] = (
    _Setting("l2-linear", "l2 ball", "linear", lambda d: _LIN(L2Ball(d, radius=1.0)), _OFW),
    _Setting("lp-linear", "l1.5 ball", "linear", lambda d: _LIN(LpBall(d, radius=1.0, p=1.5)), _OFW),
    _Setting("l1-linear", _POLY, "linear", lambda d: _LIN(L1Ball(d, radius=1.0)), {**_OFW, "OFW-LS": None}),
    _Setting("l2-quadratic", "l2 ball", "quadratic", lambda d: _QUAD(L2Ball(d, radius=1.0)), {"SC-OFW": 1 / 2, "OFW-LS": 2 / 3}),  # noqa: E501
    _Setting("l1-quadratic", _POLY, "quadratic", lambda d: _QUAD(L1Ball(d, radius=1.0)), {"SC-OFW": 2 / 3, "OFW-LS": None}),  # noqa: E501
)  # fmt: skip

TOLERANCE = 0.05
"""A claimed exponent a holds if the fitted slope is at most a + TOLERANCE (the theorems are upper bounds)."""


def label(algorithm: str, setting: _Setting) -> str:
    """The summary key of one learner on one setting, e.g. ``"OFW-LS | l2 ball, linear"``."""
    return f"{algorithm} | {setting.title}, {setting.family}"


def horizons(T: int, points: int) -> list[int]:
    """The grid ``round(T / 2^k)``, k = points-1..0, of distinct horizons >= 8 (largest first is T)."""
    grid = sorted({max(8, round(T / 2**k)) for k in range(points)})
    if len(grid) < 3:
        raise ValueError(f"T and points must give >= 3 distinct horizons >= 8 for a fit, got {grid}")
    return grid


def _prefix_comparator_losses(problem: AbstractProblem, episode, env_key, T: int, Ts: jax.Array) -> jax.Array:
    """``f_t(x*_Tb)`` for t <= Tb (0 after), shape ``(B, T)``: the best fixed point of each prefix Tb in ``Ts``.

    ``x*_Tb = problem.best_fixed(episode, env_key, Tb)`` with ``Tb`` traced (vmapped over the grid).
    """

    def one(Tb):
        x_star = problem.best_fixed(episode, env_key, Tb)

        def body(_, t):
            data = round_at(problem, episode, env_key, t)
            return None, jnp.where(t <= Tb, problem.loss(data, x_star), 0.0)

        return jax.lax.scan(body, None, jnp.arange(1, T + 1, dtype=jnp.int32))[1]

    return jax.vmap(one)(Ts)


def _set_constant(domain) -> float | None:
    """alpha_K of a strongly convex set w.r.t. l2 (the paper's definition of an alpha-strongly convex set).

    ``None`` for sets that are not (polytopes).
    """
    alpha = 1.0 / float(domain.radius) if isinstance(domain, L2Ball) else None
    alpha = float(domain.strong_convexity) if isinstance(domain, LpBall) else alpha
    return alpha if alpha else None


def theorem_bound(algorithm: str, problem: AbstractProblem, T: int) -> float | None:
    """The explicit regret bound a theorem gives ``algorithm`` on ``problem`` at horizon T (None: no theorem).

    OFW-LS: 001 Thm 1 (strongly convex K). OFW: Hazan (2016) Thm 7.3 as recalled in paper 001,
    ``8 D G T^{3/4}`` (external). SC-OFW: 001 Thm 2 on a strongly convex K, Thm 3 otherwise.
    """
    D = float(problem.domain.diameter)
    constants = problem.constants()
    G, lam = constants.grad_bound, constants.strong_convexity
    alpha = _set_constant(problem.domain)
    if algorithm == "OFW-LS" and alpha:
        C = max(4 * D**2, 4096 / (3 * alpha**2))
        return 11 / 4 * G * math.sqrt(C) * (T + 2) ** (2 / 3)
    if algorithm == "OFW":
        return 8 * D * G * T**0.75
    if algorithm == "SC-OFW" and lam > 0:
        if alpha:
            C = max(4 * (G + lam * D) ** 2 / lam, 288 * lam / alpha**2)
            return C * math.sqrt(2 * T) + C * math.log(T) / 2 + G * D
        C = 16 * (G + lam * D) ** 2 / lam
        return 3 * math.sqrt(2) * C * T ** (2 / 3) / 8 + C * math.log(T) / 8 + G * D
    return None


_S = {s.key: s for s in SETTINGS}


def _exponent(summary: Summary, algorithm: str, setting: str) -> tuple[float, float]:
    key = label(algorithm, _S[setting])
    if not math.isfinite(summary[key]["regret_exponent"]["mean"]):
        raise KeyError(f"{key} (regret not positive: no fit)")
    return summary[key]["regret_exponent"]["mean"], summary[key]["regret_exponent"]["se"]


def _at_most(algorithm: str, bound: float, *settings: str) -> Callable[[Summary], tuple[str, bool]]:
    def check(summary: Summary) -> tuple[str, bool]:
        fits = [_exponent(summary, algorithm, k) for k in settings]
        text = "; ".join(f"fitted exponent {e:.3f} (se {se:.3f}) vs {bound:.3f}" for e, se in fits)
        return text, all(e <= bound + TOLERANCE for e, _ in fits)

    return check


def _below(smaller: str, larger: str, *settings: str) -> Callable[[Summary], tuple[str, bool]]:
    def check(summary: Summary) -> tuple[str, bool]:
        pairs = [(_exponent(summary, smaller, k)[0], _exponent(summary, larger, k)[0]) for k in settings]
        return "; ".join(f"{a:.3f} vs {b:.3f}" for a, b in pairs), all(a < b for a, b in pairs)

    return check


def _bounds_hold(summary: Summary) -> tuple[str, bool]:
    ratios = {k: v["bound_ratio"] for k, v in summary.items() if v.get("bound_ratio") is not None}
    if not ratios:
        raise KeyError("bound_ratio")
    worst = max(ratios, key=ratios.get)
    return f"largest regret / bound {ratios[worst]:.4f} ({worst}), {len(ratios)} runs", ratios[worst] < 1.0


CLAIMS = (
    *(Claim(f"OFW with line search: regret O(T^{{2/3}}) over the {b} ball (001 Thm 1)", _at_most("OFW-LS", 2 / 3, k))
      for k, b in (("l2-linear", "l2"), ("lp-linear", "l_1.5"))),
    Claim("classic OFW: regret O(T^{3/4}) on every set (Hazan 2016, as recalled in 001)",
          _at_most("OFW", 3 / 4, "l2-linear", "lp-linear", "l1-linear")),
    Claim("with the theorems' parameters, over strongly convex sets exponent(OFW-LS) < exponent(OFW)",
          _below("OFW-LS", "OFW", "l2-linear", "lp-linear")),
    Claim("every regret stays below its theorem's explicit bound (001 Thms 1-3; Hazan 2016 Thm 7.3)", _bounds_hold),
    Claim("SC-OFW: regret O(sqrt T) over the l2 ball for strongly convex losses (001 Thm 2)",
          _at_most("SC-OFW", 1 / 2, "l2-quadratic")),
    Claim("SC-OFW: regret O(T^{2/3}) over any convex set, here the l1 ball (001 Thm 3)",
          _at_most("SC-OFW", 2 / 3, "l1-quadratic")),
)  # fmt: skip


def _fit(Ts: list[int], finals: np.ndarray) -> dict[str, float]:
    """Slope of the mean regret over seeds, its standard error, and the spread of per-seed slopes."""
    try:
        slope, se = metrics.growth_exponent(Ts, finals.mean(axis=0))
    except ValueError:
        return {"mean": math.nan, "se": math.nan, "std": math.nan}
    per_seed = [metrics.growth_exponent(Ts, f)[0] for f in finals if np.all(f > 0)]
    return {"mean": slope, "se": se, "std": float(np.std(per_seed)) if per_seed else math.nan}


def _study(exp: Experiment, ctx) -> Outcome:
    T, seeds, dim = ctx.T, ctx.seeds, ctx.options["dim"]
    grid, ran = horizons(T, ctx.options["points"]), ctx.options["settings"]
    finals: dict[str, dict[str, dict]] = {"linear": {}, "quadratic": {}}
    curves: dict[str, dict[str, dict]] = {"linear": {}, "quadratic": {}}
    summary: Summary = {}
    for setting in (s for s in SETTINGS if s.key in ran):
        problem, env = setting.make_problem(dim), {}
        for algo, theory in setting.theory.items():
            learner = stack([LEARNERS[algo].make(ProblemInfo.of(problem, Tb)) for Tb in grid])
            base = {"algorithm": algo, "setting": setting.key, "learner": learner,
                    "problem": problem, "horizons": grid, "dim": dim}  # fmt: skip

            def compute(missing, learner=learner, problem=problem, env=env):
                if "c" not in env:  # (S, B, T)
                    env["c"] = per_run(_prefix_comparator_losses, problem, T, range(seeds), jnp.asarray(grid))
                traj, seconds = play(learner, problem, T, missing, batched_learner=True)
                losses, done = np.asarray(traj.loss), {}  # (B, S, T)
                for i, s in enumerate(missing):
                    cols = {"t": np.arange(1, T + 1)}
                    for b, Tb in enumerate(grid):
                        keep = np.arange(T) < Tb
                        cols[f"loss_T{Tb}"] = np.where(keep, losses[b, i], np.nan)
                        cols[f"regret_T{Tb}"] = np.where(keep, np.cumsum(losses[b, i] - env["c"][s, b]), np.nan)
                    done[s] = cols, {"seed": s, "wall_seconds_per_round": seconds}
                return done

            configs = {s: {**base, "seed": s} for s in range(seeds)}
            records = [r[0] for r in ctx.cells(f"{algo}-{setting.key}", configs, compute).values()]
            final = np.array([[r[f"regret_T{Tb}"][Tb - 1] for Tb in grid] for r in records])  # (S, B)
            finals[setting.family].setdefault(algo, {})[setting.title] = final
            curves[setting.family].setdefault(algo, {})[setting.title] = np.stack([r[f"regret_T{T}"] for r in records])
            bounds = [theorem_bound(algo, problem, Tb) for Tb in grid]
            ratio = None if bounds[0] is None else float(np.max(final.mean(axis=0) / np.asarray(bounds)))
            summary[label(algo, setting)] = {
                "regret_exponent": _fit(grid, final), "theory_exponent": theory, "bound_ratio": ratio,
                "static_regret": metrics.mean_std(final[:, -1]), "horizons": grid,
                "mean_regret": final.mean(axis=0).tolist(), "note": LEARNERS[algo].note,
            }  # fmt: skip
    return Outcome(summary, _figures(grid, ran, finals, curves))


def _figures(grid: list[int], ran: list[str], finals, curves) -> list[Figure]:
    x, ratio, figures = np.log10(np.asarray(grid, dtype=float)), np.asarray(grid) / grid[0], []
    guides = {"linear": (("OFW-LS", 2 / 3), ("OFW", 3 / 4)), "quadratic": (("SC-OFW", 1 / 2), ("OFW-LS", 2 / 3))}
    for family, what in (("linear", "linear losses"), ("quadratic", "strongly convex losses")):
        panels = [s.title for s in SETTINGS if s.family == family and s.key in ran]
        if not panels:
            continue
        drawn = dict(finals[family])
        for algo, slope in guides[family]:  # reference slopes through each learner's first point
            first = {p: finals[family][algo][p].mean(axis=0)[0] for p in panels}
            drawn[f"slope {slope:.2g} through {algo}"] = {p: (first[p] * ratio**slope)[None] for p in panels}
        title = f"static regret at horizon T (mean +- std over seeds), {what} (001)"
        figures.append(
            Figure(drawn, f"-{family}", panels, {"x": x, "xlabel": "log10 T", "logy": panels, "title": title})
        )
        title = f"static regret over t at T = {grid[-1]}, {what} (001)"
        figures.append(Figure(curves[family], f"-{family}-curves", panels, {"title": title}))
    return figures


STRONGLY_CONVEX_SETS = register(Experiment(
    name=NAME, paper="001 (no experiments in the paper: its theorems' exponents)", study=_study, claims=CLAIMS,
    title="Regret exponents of projection-free OFW over strongly convex sets", default_T=4000, default_seeds=5,
    algorithms=ALGORITHMS,
    options=(
        Option("dim", int, 10, "dimension d of every set", low=1),
        Option("points", int, 6, "horizons in the grid T / 2^k", low=1),
        Option("settings", list, list(_S), "setting keys to run (or all)", choices=tuple(_S)),
    ),
))  # fmt: skip

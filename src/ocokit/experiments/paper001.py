"""Experiment of paper 001 (Wan and Zhang, projection-free online learning over strongly convex sets).

The paper has no experiments (spec ``paper001.md`` §5); this study checks its theorems' regret exponents
empirically (issue 4 item 4; spec §8 "a rough empirical slope of log(regret) against log(T)"):

* linear losses (:class:`~ocokit.problems.OnlineLinear`) over the l2 ball, the l_1.5 ball (both strongly
  convex sets) and the l1 ball (a polytope): OFW with line search (Algorithm 1, Thm 1: O(T^{2/3}) over
  strongly convex sets) against the classic OFW of Hazan and Kale (O(T^{3/4}) on any convex set);
* strongly convex quadratic losses (:class:`~ocokit.problems.OnlineQuadratic`) over the l2 ball and the l1
  ball: SC-OFW (Algorithm 2; Thm 2: O(sqrt T) over strongly convex sets, Thm 3: O(T^{2/3}) on any set),
  with OFW with line search for reference.

For each horizon T of a geometric grid every learner gets its theory parameters for T (``from_theory``);
the fitted exponent is the log-log slope (:func:`ocokit.metrics.growth_exponent`) of the mean static
regret over seeds against T.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ocokit import _checks, metrics
from ocokit.algorithms import OFW, SCOFW, OFWLineSearch, ProblemInfo
from ocokit.algorithms._base import AbstractLearner
from ocokit.engine import split_key, stack, sweep
from ocokit.experiments._base import (
    AbstractExperiment,
    Algorithm,
    Claim,
    Report,
    SilentProgress,
    Summary,
    register,
)
from ocokit.plotting import band_figure
from ocokit.problems import OnlineLinear, OnlineQuadratic
from ocokit.problems._base import AbstractProblem
from ocokit.results import atomic_write_json, load_records, run_path, save_records
from ocokit.sets import L1Ball, L2Ball, LpBall

NAME = "strongly-convex-sets"


def _ofw_with_thm1_eta(info: ProblemInfo) -> OFW:
    """Ablation: the decaying step of Hazan-Kale with OFW-LS's larger ``eta = D / (2 G (T+2)^{2/3})``."""
    return OFW.from_theory(info, eta=float(OFWLineSearch.from_theory(info).eta))


LEARNERS: dict[str, Callable[[ProblemInfo], AbstractLearner]] = {
    "OFW-LS": OFWLineSearch.from_theory,
    "OFW": OFW.from_theory,
    "OFW, Thm-1 eta": _ofw_with_thm1_eta,
    "SC-OFW": SCOFW.from_theory,
}
"""Legend label -> factory with the theorems' parameters for the horizon in ``info``."""


@dataclasses.dataclass(frozen=True)
class _Setting:
    """One panel: a set and a loss family, the learners run on it and the exponent each theorem gives."""

    key: str
    title: str
    family: str  # "linear" or "quadratic": one figure each
    make_problem: Callable[[int], AbstractProblem]
    theory: Mapping[str, float | None]  # learner label -> theorem's exponent (None: no theorem)


SETTINGS: tuple[_Setting, ...] = (
    _Setting(
        "l2-linear",
        "l2 ball",
        "linear",
        lambda d: OnlineLinear(L2Ball(d, radius=1.0), drift=1.0, noise=1.0),
        {"OFW-LS": 2 / 3, "OFW": 3 / 4, "OFW, Thm-1 eta": None},
    ),
    _Setting(
        "lp-linear",
        "l1.5 ball",
        "linear",
        lambda d: OnlineLinear(LpBall(d, radius=1.0, p=1.5), drift=1.0, noise=1.0),
        {"OFW-LS": 2 / 3, "OFW": 3 / 4, "OFW, Thm-1 eta": None},
    ),
    _Setting(
        "l1-linear",
        "l1 ball (polytope)",
        "linear",
        lambda d: OnlineLinear(L1Ball(d, radius=1.0), drift=1.0, noise=1.0),
        {"OFW-LS": None, "OFW": 3 / 4, "OFW, Thm-1 eta": None},
    ),
    _Setting(
        "l2-quadratic",
        "l2 ball",
        "quadratic",
        lambda d: OnlineQuadratic(L2Ball(d, radius=1.0), lam=1.0, offset=2.0, noise=1.0),
        {"SC-OFW": 1 / 2, "OFW-LS": 2 / 3},
    ),
    _Setting(
        "l1-quadratic",
        "l1 ball (polytope)",
        "quadratic",
        lambda d: OnlineQuadratic(L1Ball(d, radius=1.0), lam=1.0, offset=2.0, noise=1.0),
        {"SC-OFW": 2 / 3, "OFW-LS": None},
    ),
)

DEFAULT_OPTIONS = {"dim": "10", "points": "6", "settings": "all"}
"""``--option`` keys: ``dim`` (dimension d of every set), ``points`` (horizons in the grid T/2^k),
``settings`` (comma-separated setting keys of :data:`SETTINGS` to run, or ``all``)."""

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


@eqx.filter_jit
def _comparator_losses(problem: AbstractProblem, Ts: jax.Array, T_max: int, keys: jax.Array) -> jax.Array:
    """``f_t(x*_Tb)`` for t <= Tb (0 after), shape ``(B, S, T_max)``: the best fixed point of each prefix.

    ``x*_Tb = problem.best_fixed(episode, env_key, Tb)`` with ``Tb`` traced (vmapped over the grid).
    """

    def one(T, key):
        env_key, _ = split_key(key)
        episode = problem.episode(env_key, T_max)
        x_star = problem.best_fixed(episode, env_key, T)

        def body(_, t):
            data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
            return None, jnp.where(t <= T, problem.loss(data, x_star), 0.0)

        return jax.lax.scan(body, None, jnp.arange(1, T_max + 1, dtype=jnp.int32))[1]

    return jax.vmap(lambda T: jax.vmap(lambda k: one(T, k))(keys))(Ts)


def _set_constant(domain) -> float | None:
    """alpha_K of a strongly convex set w.r.t. l2 (spec §4.1), ``None`` for sets that are not (polytopes)."""
    if isinstance(domain, L2Ball):
        return 1.0 / float(domain.radius)
    if isinstance(domain, LpBall):
        alpha = float(domain.strong_convexity)
        return alpha if alpha > 0 else None
    return None


def theorem_bound(algorithm: str, problem: AbstractProblem, T: int) -> float | None:
    """The explicit regret bound a theorem gives ``algorithm`` on ``problem`` at horizon T (None: no theorem).

    OFW-LS: 001 Thm 1 (strongly convex K). OFW: Hazan (2016) Thm 7.3 as recalled by spec §2.1,
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


def _options(options: Mapping[str, str] | None) -> dict[str, Any]:
    merged = {**DEFAULT_OPTIONS, **dict(options or {})}
    unknown = set(merged) - set(DEFAULT_OPTIONS)
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)}; valid: {sorted(DEFAULT_OPTIONS)}")
    parsed: dict[str, Any] = {}
    for key in ("dim", "points"):
        try:
            parsed[key] = int(merged[key])
        except ValueError:
            raise ValueError(f"option {key} must be an integer, got {merged[key]!r}") from None
        _checks.positive_int(key, parsed[key])
    keys = [s.key for s in SETTINGS]
    chosen = keys if merged["settings"] == "all" else [k.strip() for k in str(merged["settings"]).split(",")]
    for k in chosen:
        _checks.one_of("settings", k, keys)
    parsed["settings"] = [k for k in keys if k in chosen]
    return parsed


def _fit(Ts: list[int], finals: np.ndarray) -> dict[str, float]:
    """Slope of the mean regret over seeds, its standard error, and the spread of per-seed slopes."""
    try:
        slope, se = metrics.growth_exponent(Ts, finals.mean(axis=0))
    except ValueError:
        return {"mean": math.nan, "se": math.nan, "std": math.nan}
    per_seed = [metrics.growth_exponent(Ts, f)[0] for f in finals if np.all(f > 0)]
    return {"mean": slope, "se": se, "std": float(np.std(per_seed)) if per_seed else math.nan}


def _exponent(summary: Summary, key: str) -> float:
    value = summary[key]["regret_exponent"]["mean"]
    if not math.isfinite(value):
        raise KeyError(f"{key} (regret not positive: no fit)")
    return value


def _at_most(key: str, bound: float) -> Callable[[Summary], tuple[str, bool]]:
    def check(summary: Summary) -> tuple[str, bool]:
        slope = _exponent(summary, key)
        se = summary[key]["regret_exponent"]["se"]
        return f"fitted exponent {slope:.3f} (se {se:.3f}) vs {bound:.3f}", slope <= bound + TOLERANCE

    return check


def _below(smaller: str, larger: str) -> Callable[[Summary], tuple[str, bool]]:
    def check(summary: Summary) -> tuple[str, bool]:
        a, b = _exponent(summary, smaller), _exponent(summary, larger)
        return f"{a:.3f} vs {b:.3f}", a < b

    return check


_S = {s.key: s for s in SETTINGS}
CLAIMS = (
    Claim(
        "OFW with line search: regret O(T^{2/3}) over the l2 ball (001 Thm 1)",
        _at_most(label("OFW-LS", _S["l2-linear"]), 2 / 3),
    ),
    Claim(
        "OFW with line search: regret O(T^{2/3}) over the l_1.5 ball (001 Thm 1)",
        _at_most(label("OFW-LS", _S["lp-linear"]), 2 / 3),
    ),
    Claim(
        "classic OFW: regret O(T^{3/4}) on every set (Hazan 2016, as recalled in 001)",
        lambda s: _all(s, [_at_most(label("OFW", _S[k]), 3 / 4) for k in ("l2-linear", "lp-linear", "l1-linear")]),
    ),
    Claim(
        "with the theorems' parameters, over strongly convex sets exponent(OFW-LS) < exponent(OFW)",
        lambda s: _all(s, [_below(label("OFW-LS", _S[k]), label("OFW", _S[k])) for k in ("l2-linear", "lp-linear")]),
    ),
    Claim(
        "every regret stays below its theorem's explicit bound (001 Thms 1-3; Hazan 2016 Thm 7.3)",
        lambda s: _bounds_hold(s),
    ),
    Claim(
        "SC-OFW: regret O(sqrt T) over the l2 ball for strongly convex losses (001 Thm 2)",
        _at_most(label("SC-OFW", _S["l2-quadratic"]), 1 / 2),
    ),
    Claim(
        "SC-OFW: regret O(T^{2/3}) over any convex set, here the l1 ball (001 Thm 3)",
        _at_most(label("SC-OFW", _S["l1-quadratic"]), 2 / 3),
    ),
)


def _all(summary: Summary, checks: list[Callable[[Summary], tuple[str, bool]]]) -> tuple[str, bool]:
    results = [c(summary) for c in checks]
    return "; ".join(text for text, _ in results), all(holds for _, holds in results)


def _bounds_hold(summary: Summary) -> tuple[str, bool]:
    ratios = {k: v["bound_ratio"] for k, v in summary.items() if v.get("bound_ratio") is not None}
    if not ratios:
        raise KeyError("bound_ratio")
    worst = max(ratios, key=ratios.get)
    return f"largest regret / bound {ratios[worst]:.4f} ({worst}), {len(ratios)} runs", ratios[worst] < 1.0


class StronglyConvexSets(AbstractExperiment):
    """Fitted regret exponents of OFW, OFW with line search and SC-OFW against paper 001's theorems.

    ``T`` is the largest horizon; the grid is ``T / 2^k`` for ``k < points`` (``--option points=6``), every
    set has dimension ``dim`` (``--option dim=10``). Each learner runs all horizons of the grid as one
    vmapped sweep of ``T`` rounds over a stack of learners (one per horizon, each with that horizon's
    theory parameters) and seeds; the regret for horizon ``Tb`` is read from the first ``Tb`` rounds of its
    run against the best fixed point of those ``Tb`` rounds. This is exactly a run of ``Tb`` rounds: the
    learners use the horizon only through their parameters and never look ahead, and round t's data
    depends only on ``(seed, t)``.

    Default size: T = 4000 (horizons 125 ... 4000), 5 seeds, d = 10: 13 compiled sweeps and 5 compiled
    comparator programs, about 66 s of CPU (2 min 45 s wall on the shared 2-core machine under load),
    nearly all of it compilation. ``--option settings=l2-linear,lp-linear`` runs a subset.
    """

    name = NAME
    paper = "001 (no experiments in the paper; spec §5, §8)"
    title = "Regret exponents of projection-free OFW over strongly convex sets"
    algorithms = (
        Algorithm("OFW-LS", OFWLineSearch.from_theory, "paper 001 Algorithm 1, eta = D / (2 G (T+2)^{2/3})"),
        Algorithm("OFW", OFW.from_theory, "Hazan-Kale OFW, eta = D / (2 G T^{3/4}), sigma_t = min(1, 2/sqrt t)"),
        Algorithm(
            "OFW, Thm-1 eta",
            _ofw_with_thm1_eta,
            "ablation: Hazan-Kale's decaying step with OFW-LS's eta (no theorem)",
        ),
        Algorithm("SC-OFW", SCOFW.from_theory, "paper 001 Algorithm 2, lam = the losses' strong convexity"),
    )
    default_T = 4000
    default_seeds = 5
    claims = CLAIMS

    def run(self, *, T, seeds, out, data_dir=None, options=None, progress=None) -> Report:
        del data_dir
        _checks.positive_int("T", T)
        _checks.positive_int("seeds", seeds)
        opts = _options(options)
        grid = horizons(T, opts["points"])
        progress = progress or SilentProgress()
        out = Path(out)
        finals: dict[str, dict[str, np.ndarray]] = {"linear": {}, "quadratic": {}}
        curves: dict[str, dict[str, np.ndarray]] = {"linear": {}, "quadratic": {}}
        summary: Summary = {}
        skipped = new = 0
        for setting in (s for s in SETTINGS if s.key in opts["settings"]):
            problem = setting.make_problem(opts["dim"])
            comparators = None
            for algo, theory in setting.theory.items():
                learner = stack([LEARNERS[algo](ProblemInfo.of(problem, Tb)) for Tb in grid])
                base = {
                    "algorithm": algo,
                    "setting": setting.key,
                    "learner": eqx.tree_pformat(learner, short_arrays=False),
                    "problem": eqx.tree_pformat(problem, short_arrays=False),
                    "horizons": grid,
                    "dim": opts["dim"],
                }
                paths = {s: run_path(out, NAME, f"{algo}-{setting.key}", {**base, "seed": s}) for s in range(seeds)}
                missing = [s for s, p in paths.items() if not p.exists()]
                skipped += seeds - len(missing)
                task = label(algo, setting)
                progress.start(task, seeds)
                progress.advance(task, seeds - len(missing))
                if missing:
                    if comparators is None:
                        keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
                        comparators = np.asarray(_comparator_losses(problem, jnp.asarray(grid), T, keys))
                    tic = time.perf_counter()
                    traj = sweep(learner, problem, T, missing, batched_learner=True)
                    losses = np.asarray(traj.loss)  # (B, S_missing, T)
                    seconds = time.perf_counter() - tic
                    for i, s in enumerate(missing):
                        columns = {"t": np.arange(1, T + 1)}
                        for b, Tb in enumerate(grid):
                            keep = np.arange(T) < Tb
                            columns[f"loss_T{Tb}"] = np.where(keep, losses[b, i], np.nan)
                            regret = np.cumsum(losses[b, i] - comparators[b, s])
                            columns[f"regret_T{Tb}"] = np.where(keep, regret, np.nan)
                        meta = {**base, "seed": s, "experiment": NAME, "wall_seconds": seconds / len(missing)}
                        save_records(paths[s], columns, meta)
                    new += len(missing)
                    progress.advance(task, len(missing))
                records = [load_records(paths[s])[0] for s in range(seeds)]
                final = np.array([[r[f"regret_T{Tb}"][Tb - 1] for Tb in grid] for r in records])  # (S, B)
                finals[setting.family].setdefault(algo, {})[setting.title] = final
                curves[setting.family].setdefault(algo, {})[setting.title] = np.stack(
                    [r[f"regret_T{grid[-1]}"] for r in records]
                )
                bounds = [theorem_bound(algo, problem, Tb) for Tb in grid]
                ratio = None if bounds[0] is None else float(np.max(final.mean(axis=0) / np.asarray(bounds)))
                summary[task] = {
                    "regret_exponent": _fit(grid, final),
                    "theory_exponent": theory,
                    "bound_ratio": ratio,
                    "static_regret": {"mean": float(final[:, -1].mean()), "std": float(final[:, -1].std())},
                    "horizons": grid,
                    "mean_regret": [float(v) for v in final.mean(axis=0)],
                    "note": next(a.note for a in self.algorithms if a.label == algo),
                }
        figure = self._figures(out, grid, opts["settings"], finals, curves)
        report = Report(NAME, summary, self.check_claims(summary), figure, skipped, new)
        config = {"T": T, "seeds": seeds, "options": dict(options or {})}
        atomic_write_json(out / "summary.json", {**report.to_json(), **config})
        return report

    def plot(self, out: Path) -> Path:
        """Redraw the figures from the runs under ``out`` (a re-run with the stored T, seeds and options)."""
        out = Path(out)
        saved = json.loads((out / "summary.json").read_text())
        report = self.run(T=saved["T"], seeds=saved["seeds"], out=out, options=saved["options"])
        if report.figure is None:
            raise ValueError(f"no figure for the settings stored under {out}")
        return report.figure

    def _figures(self, out: Path, grid: list[int], ran: list[str], finals, curves) -> Path | None:
        x = np.log10(np.asarray(grid, dtype=float))
        guides = {
            "linear": (("OFW-LS", 2 / 3), ("OFW", 3 / 4)),
            "quadratic": (("SC-OFW", 1 / 2), ("OFW-LS", 2 / 3)),
        }
        first = None
        for family, what in (("linear", "linear losses"), ("quadratic", "strongly convex losses")):
            panels = [s.title for s in SETTINGS if s.family == family and s.key in ran]
            if not panels:
                continue
            drawn = dict(finals[family])
            for algo, slope in guides[family]:  # reference slopes through each learner's first point
                drawn[f"slope {slope:.2g} through {algo}"] = {
                    p: (finals[family][algo][p].mean(axis=0)[0] * (np.asarray(grid) / grid[0]) ** slope)[None]
                    for p in panels
                }
            path = band_figure(
                drawn,
                panels,
                out / f"{NAME}-{family}.png",
                x=x,
                xlabel="log10 T",
                logy=panels,
                title=f"static regret at horizon T (mean +- std over seeds), {what} (001)",
            )
            band_figure(
                curves[family],
                panels,
                out / f"{NAME}-{family}-curves.png",
                title=f"static regret over t at T = {grid[-1]}, {what} (001)",
            )
            first = first or path
        return first


STRONGLY_CONVEX_SETS = register(StronglyConvexSets())

"""Paper 002 (Ye et al., "OCO with Memory and Limited Predictions", 2024), Sec. 5, Figs. 1-2.

Both reproduce the paper's scalar example: ``x_t`` in R (d = 1), memory h = 2, quadratic costs from a random
generator (the paper prints none; :class:`~ocokit.problems.QuadraticWithMemory` documents ours), ``x0 = 0.5``,
``eta_t = 0.2 / t``, ``alpha = 0.05``, ``delta = 0.2``, ``delta' = 1e-4``, no model error, and dynamic regret
against the offline optimum of the whole horizon (eq. 3).
Smoothing laws: Gaussian N(0, 1), truncated Gaussian on [-2, 2] and Bernoulli +-1; the truncated Gaussian uses
a quarter of the runs (the paper's 50 against 200). Bands are quartiles, centre lines medians.

* ``memory-predictions-horizon`` (Fig. 1): regret of the initialisation phase alone (subroutine (a),
  :class:`~ocokit.algorithms.BanditOCOMemory`, Algorithm 1's ``x^0``) for T = 5..20, as ``Reg / sqrt(T)`` and
  ``Reg / T``; each run is played once at the largest T and horizon T reads its first T rounds; every
  (T, seed) pair is a fresh instance.
* ``memory-predictions-window`` (Fig. 2): overall regret of Algorithm 1
  (:class:`~ocokit.algorithms.OCOMemoryLimitedPredictions`, K = W layers) at T = 20, ``log(Reg)`` against W.

The decision set is the box X = [-5, 5] (option ``box``), not R: with the paper's single-point
settings on R both phases diverge (``|x|`` reaches 1e12 within 20 rounds). Both experiments measure that
literal setting on a few seeds (``diverged`` in the summary, the last claim, the figure's title) and plot the
single-point runs on the box. The two-point runs stay far inside the box, so they are the paper's runs.
Window reading: Algorithm 1's pseudo-code (queries up to round t + W); ``strict_window=true`` takes the text's
t..t+W-1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ocokit import metrics
from ocokit.algorithms import BanditOCOMemory, OCOMemoryLimitedPredictions
from ocokit.harness import Algorithm, Claim, Experiment, Figure, Option, Outcome, per_run, play, register
from ocokit.problems import QuadraticWithMemory
from ocokit.problems._base import all_rounds
from ocokit.sets import Box

PAPER = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-4, "x0": 0.5}
HALF_WIDTH = 2.0  # the experiments' truncation [-2, 2] ("slightly modify Definition 1")
LAWS = {"gaussian": "Gaussian", "truncated_gaussian": "truncated Gaussian", "rademacher": "Bernoulli"}
POINTS = {"two_point": "two-point", "one_point": "one-point"}
DIVERGED = 1e6  # |Reg| above this (or non-finite) counts as a diverged run of the literal setting
HORIZON_CONFIGS = tuple((law, est) for law in ("gaussian", "truncated_gaussian") for est in ("two_point", "one_point"))
_LITERAL_CLAIM = "single-point feedback with the paper's parameters on X = R stays finite (the paper plots it)"
OPTIONS = (
    Option("box", float, 5.0, "X = [-box, box]", low=0, above=True),
    Option("one_point_delta_prime", float, 1e-4, "delta' of the single-point runs on the box", low=0, above=True),
    Option("truncated_share", float, 0.25, "share of the runs for the truncated Gaussian", low=0, high=1, above=True),
    Option("windows", list, list(range(1, 11)), "windows W (1-10 or a comma list)", low=1, item=int),
    Option("strict_window", bool, False, "the stated window t..t+W-1"),
    Option("literal_seeds", int, 20, "runs of the literal setting on R", low=1),
    Option("laws", list, list(LAWS), "smoothing laws to run", choices=tuple(LAWS)),
    Option("points", list, list(POINTS), "feedback kinds to run", choices=tuple(POINTS)),
)


def label(law: str, estimator: str) -> str:
    """The configuration's label, e.g. ``"truncated Gaussian, two-point"``."""
    return f"{LAWS[law]}, {POINTS[estimator]}"


def num_seeds(law: str, seeds: int, share: float) -> int:
    """Runs of a law: the truncated Gaussian gets ``share`` of them (the paper's 50 against 200)."""
    return max(1, round(seeds * share)) if law == "truncated_gaussian" else seeds


def make_problem(box: float) -> QuadraticWithMemory:
    """The paper's problem (d = 1, h = 2, ``x0 = 0.5``) on ``X = [-box, box]``."""
    return QuadraticWithMemory(Box(-box, box, dim=1), memory=2, x0=PAPER["x0"])


def iqr(values: np.ndarray) -> list[float]:
    """Interquartile range of each column (nan entries ignored)."""
    return np.subtract(*np.nanpercentile(values, [75, 25], axis=0)).tolist()


def _optimal_cost(problem: QuadraticWithMemory, episode, env_key, T: int) -> jax.Array:
    """``C_T(x*)`` of one run's first T rounds (the engine's rounds, eq. 2 on horizon T)."""
    data = all_rounds(problem, episode, env_key, T)
    return problem.total_cost(data["A"], data["B"], episode["x_star"])


def _bandit(law: str, estimator: str) -> BanditOCOMemory:
    """Subroutine (a) with the paper's parameters (Algorithm 1's ``x^0``)."""
    return BanditOCOMemory(eta=PAPER["eta"], delta=PAPER["delta"], x0=PAPER["x0"], half_width=HALF_WIDTH, law=law,
                           estimator=estimator)  # fmt: skip


def _algorithm1(law, est, W, opts, delta_prime=None) -> OCOMemoryLimitedPredictions:
    """Algorithm 1 with the paper's parameters (one-point: ``delta'`` of the options unless given)."""
    params = {**PAPER, "half_width": HALF_WIDTH}
    if est == "one_point":
        params["delta_prime"] = opts["one_point_delta_prime"] if delta_prime is None else delta_prime
    return OCOMemoryLimitedPredictions(window=W, law=law, estimator=est, strict_window=opts["strict_window"], **params)


def _regrets(learner, problem, T, seed_ids):
    """Final dynamic regret of ``learner`` on ``seed_ids`` (nan where non-finite), as one stored record."""
    traj, seconds = play(learner, problem, T, seed_ids, chunk_size=256, throw=False)
    regret, bad = metrics.dynamic_regret(traj)[:, -1], np.asarray(traj.first_bad_round)
    cols = {"seed": np.asarray(list(seed_ids)), "regret": np.where(bad >= 0, np.nan, regret), "first_bad_round": bad}
    return cols, {"wall_seconds_per_round": seconds}


def _literal(ctx, name, learners, seeds, plotted_setting) -> dict[str, Any]:
    """The paper's literal single-point setting on R (a box that never binds), ``learners[W]`` each."""
    configs = {W: {"learner": lrn, "problem": "unconstrained", "seeds": seeds,
                   "T": ctx.T, **({} if W is None else {"W": W})} for W, lrn in learners.items()}  # fmt: skip
    compute = lambda ws: {W: _regrets(learners[W], make_problem(1e12), ctx.T, range(seeds)) for W in ws}  # noqa: E731
    reg = np.concatenate([c["regret"] for c, _ in ctx.cells(name, configs, compute).values()])
    return {
        "diverged": int(np.sum(~np.isfinite(reg) | (np.abs(reg) > DIVERGED))),
        "runs": int(reg.size),
        "median_regret": float(np.median(np.where(np.isfinite(reg), reg, np.inf))),  # non-finite: +inf
        "plotted_setting": plotted_setting,
        "note": "the paper's literal one-point settings (x_t in R); not plotted",
    }


def _outcome(exp, summary, curves, panels, literal, setting, **kwargs) -> Outcome:
    lit = summary[literal]
    title = f"{exp.title} ({exp.paper})\n{setting}"
    if lit["diverged"]:
        title += f"; one-point on R (paper) diverged in {lit['diverged']}/{lit['runs']} runs: shown on the box"
    return Outcome(summary, [Figure(curves, "", panels, {"band": "quartiles", "title": title, **kwargs})])


def _horizon(exp, ctx) -> Outcome:
    o, T, seeds = ctx.options, ctx.T, ctx.seeds
    if seeds > 1000:
        raise ValueError(f"seeds must be <= 1000 (run ids are 1000 T + seed), got {seeds}")
    hs, problem = list(range(min(5, T), T + 1)), make_problem(o["box"])
    curves, summary = {}, {}
    for (law, est), algo in zip(HORIZON_CONFIGS, exp.algorithms, strict=True):
        if law not in o["laws"] or est not in o["points"]:
            continue
        learner, S = algo.make(None), num_seeds(law, seeds, o["truncated_share"])
        base = {"learner": learner, "problem": problem, "seeds": S, "T_max": T}

        def compute(missing, learner=learner, S=S):
            seed_ids = [1000 * h + s for h in hs for s in range(S)]  # fresh instance per (T, seed)
            traj, seconds = play(learner, problem, T, seed_ids, chunk_size=256, throw=False)
            loss, done = np.asarray(traj.loss), {}
            for i, h in enumerate(hs):
                rows = slice(i * S, (i + 1) * S)
                cost, best = loss[rows, :h].sum(axis=1), per_run(_optimal_cost, problem, h, seed_ids[rows])
                cols = {"seed": np.asarray(seed_ids[rows]), "regret": cost - best, "cost": cost, "optimal_cost": best}
                done[h] = cols, {"wall_seconds_per_round": seconds}
            return {h: done[h] for h in missing}

        records = list(ctx.cells(algo.label, {h: {**base, "T": h} for h in hs}, compute).values())
        reg, ts = np.stack([r[0]["regret"] for r in records], axis=1), np.asarray(hs, float)  # (S, len(hs))
        curves[algo.label] = {"Reg / sqrt(T)": reg / np.sqrt(ts), "Reg / T": reg / ts}
        summary[algo.label] = {
            "regret": metrics.quartiles(reg[:, -1]),
            "reg_over_sqrt_T": metrics.quartiles(reg[:, -1] / math.sqrt(hs[-1])),
            "reg_over_T": metrics.quartiles(reg[:, -1] / hs[-1]),
            "by_T": {"T": hs, "mean_regret": np.nanmean(np.where(np.isfinite(reg), reg, np.nan), axis=0).tolist(),
                     "median_regret": np.nanmedian(reg, axis=0).tolist(),
                     "iqr_reg_over_sqrt_T": iqr(reg / np.sqrt(ts))},
            "seeds": S, "diverged": int((~np.isfinite(reg).all(axis=1)).sum()),
            "wall_seconds_per_round": float(np.mean([r[1]["wall_seconds_per_round"] for r in records])),
            "note": "subroutine (a) alone = Algorithm 1's x^0",
        }  # fmt: skip
    box = f"X = [-{o['box']:g}, {o['box']:g}]"
    literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained)"
    summary[literal] = _literal(ctx, literal, {None: _bandit("truncated_gaussian", "one_point")},
                                min(seeds, o["literal_seeds"]), f"the paper's parameters on {box}")  # fmt: skip
    panels = ["Reg / sqrt(T)", "Reg / T"]
    return _outcome(exp, summary, curves, panels, literal, box, x=np.asarray(hs), xlabel="T", logy=panels)


def _window(exp, ctx) -> Outcome:
    o, T, seeds = ctx.options, ctx.T, ctx.seeds
    windows, problem = o["windows"], make_problem(o["box"])
    box, curves, summary = f"X = [-{o['box']:g}, {o['box']:g}]", {}, {}
    for law in LAWS:
        for est in POINTS:
            if law not in o["laws"] or est not in o["points"]:
                continue
            name, S = label(law, est), num_seeds(law, seeds, o["truncated_share"])
            learners = {W: _algorithm1(law, est, W, o) for W in windows}
            configs = {W: {"learner": learners[W], "problem": problem, "seeds": S, "T": T, "W": W} for W in windows}
            compute = lambda ws, ls=learners, S=S: {W: _regrets(ls[W], problem, T, range(S)) for W in ws}  # noqa: E731
            records = list(ctx.cells(name, configs, compute).values())
            reg = np.stack([c["regret"] for c, _ in records], axis=1)  # (S, len(windows))
            log_reg = np.log(np.where(reg > 0, reg, np.nan))
            curves.setdefault(LAWS[law], {})[f"log(Reg), {POINTS[est]}"] = log_reg
            med = np.nanmedian(log_reg, axis=0)
            slope, _, r2 = metrics.linear_fit(windows, med) if len(windows) >= 2 else (math.nan,) * 3
            summary[name] = {
                "log_regret_first_W": metrics.quartiles(log_reg[:, 0]),
                "log_regret_last_W": metrics.quartiles(log_reg[:, -1]),
                "by_W": {"W": windows, "median_log_regret": med.tolist(),
                         "mean_regret": np.nanmean(reg, axis=0).tolist(), "iqr_log_regret": iqr(log_reg)},
                "slope_per_W": slope, "r2": r2, "seeds": S, "diverged": int((~np.isfinite(reg)).sum()),
                "wall_seconds_per_round": float(np.mean([m["wall_seconds_per_round"] for _, m in records])),
                "note": f"delta' = {_algorithm1(law, est, 1, o).delta_prime:g}, {box}",
            }  # fmt: skip
    literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained, delta' = 1e-4)"
    lit_ws = sorted({windows[0], windows[len(windows) // 2], windows[-1]})
    learners = {W: _algorithm1("truncated_gaussian", "one_point", W, o, PAPER["delta_prime"]) for W in lit_ws}
    plotted = f"the paper's parameters on {box}, delta' = {o['one_point_delta_prime']:g}"
    summary[literal] = _literal(ctx, literal, learners, min(seeds, o["literal_seeds"]), plotted)
    panels = [f"log(Reg), {POINTS[e]}" for e in POINTS]
    return _outcome(exp, summary, curves, panels, literal, f"T = {T}, {box}", x=np.asarray(windows, float), xlabel="W")


def literal_finite(summary) -> tuple[str, bool]:
    """The claim that the paper's literal single-point setting (on R) gives finite regret."""
    s = summary[next(k for k in summary if "literal" in k)]  # StopIteration if absent: not measured
    text = f"{s['diverged']}/{s['runs']} runs diverged (|Reg| > {DIVERGED:g} or non-finite; median Reg "
    text += f"{s['median_regret']:.3g}); the one-point curves shown use {s['plotted_setting']}"
    return text, s["diverged"] == 0


def _two_vs_one(what: str, laws: tuple[str, ...], stat: Callable[[dict], float]) -> Callable:
    """Claim check: under each of ``laws``, two-point feedback has a lower ``stat`` (``what``) than one-point."""

    def check(summary) -> tuple[str, bool]:
        pairs = {law: (stat(summary[label(law, "two_point")]), stat(summary[label(law, "one_point")])) for law in laws}
        text = "; ".join(f"{LAWS[k]}: {a:.3g} vs {b:.3g}" for k, (a, b) in pairs.items())
        return f"{what}, two- vs one-point: {text}", all(a < b for a, b in pairs.values())

    return check


def _horizon_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    parts, holds = [], True
    for est in ("two_point", "one_point"):
        tg, g = summary[label("truncated_gaussian", est)], summary[label("gaussian", est)]
        iqr_tg, iqr_g = (float(np.mean(s["by_T"]["iqr_reg_over_sqrt_T"])) for s in (tg, g))
        parts.append(f"{POINTS[est]}{' (on the box)' if est == 'one_point' else ''}: mean Reg "
                     f"{tg['regret']['mean']:.3g} vs {g['regret']['mean']:.3g}, "
                     f"IQR of Reg/sqrt(T) {iqr_tg:.3g} vs {iqr_g:.3g}")  # fmt: skip
        holds &= tg["regret"]["mean"] < g["regret"]["mean"] and iqr_tg < iqr_g
    return "truncated vs Gaussian: " + "; ".join(parts), holds


def _horizon_sublinear(summary) -> tuple[str, bool]:
    s = summary[label("truncated_gaussian", "two_point")]["by_T"]
    Ts, reg = np.asarray(s["T"], float), np.asarray(s["mean_regret"], float)
    if Ts.size < 3:
        return f"not measured (needs >= 3 horizons, got {Ts.size})", False
    (slope, se), ratio = metrics.growth_exponent(Ts, reg), (reg[-1] / Ts[-1]) / (reg[0] / Ts[0])
    text = f"truncated two-point: Reg ~ T^{slope:.2f} (se {se:.2f}); Reg/T at T={Ts[-1]:g} is {ratio:.2f}x "
    text += f"that at T={Ts[0]:g}"
    return text, slope < 1.0 and ratio < 1.0


def _log_reg(entry) -> float:
    """A configuration's median log(Reg), averaged over W."""
    return float(np.mean(entry["by_W"]["median_log_regret"]))


def _window_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    tg, g = summary[label("truncated_gaussian", "two_point")], summary[label("gaussian", "two_point")]
    a, b = _log_reg(tg), _log_reg(g)
    iqr_tg, iqr_g = (float(np.mean(s["by_W"]["iqr_log_regret"])) for s in (tg, g))
    return (f"two-point, averaged over W: median log(Reg) {a:.3g} vs {b:.3g}; IQR of log(Reg) {iqr_tg:.3g} vs "
            f"{iqr_g:.3g}; decay per unit W {tg['slope_per_W']:.3g} vs {g['slope_per_W']:.3g}",
            a < b and iqr_tg < iqr_g)  # fmt: skip


def _window_linear_decay(summary) -> tuple[str, bool]:
    s = summary[label("truncated_gaussian", "two_point")]
    if len(s["by_W"]["W"]) < 3:
        return f"not measured (needs >= 3 windows, got {len(s['by_W']['W'])})", False
    text = f"truncated two-point: median log(Reg) = c {s['slope_per_W']:+.3f} W, R^2 = {s['r2']:.2f}"
    return text, s["slope_per_W"] < 0 and s["r2"] >= 0.9


def _window_bernoulli(summary) -> tuple[str, bool]:
    bernoulli, truncated = (_log_reg(summary[label(law, "two_point")]) for law in ("rademacher", "truncated_gaussian"))
    diff = bernoulli - truncated
    better = "Bernoulli lower" if diff < 0 else "truncated Gaussian lower"
    return (f"two-point: median Reg ratio Bernoulli / truncated = {math.exp(diff):.3g} (geometric mean over W; "
            f"{better}); comparable = within a factor 10", abs(diff) < math.log(10.0))  # fmt: skip


MEMORY_PREDICTIONS_HORIZON = register(Experiment(
    name="memory-predictions-horizon", paper="002 Fig. 1", default_T=20, default_seeds=200, options=OPTIONS,
    title="OCO with memory: initialisation-phase regret against T", study=_horizon,
    algorithms=tuple(Algorithm(label(*c), lambda info, c=c: _bandit(*c)) for c in HORIZON_CONFIGS),
    claims=(
        Claim("two-point feedback gives lower initialisation-phase regret than single-point", _two_vs_one(
            "mean Reg at the largest T", ("gaussian", "truncated_gaussian"), lambda s: s["regret"]["mean"])),
        Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _horizon_truncated_vs_gaussian),
        Claim("the initialisation phase has sublinear regret: Reg/T declines in T (Theorem 1)", _horizon_sublinear),
        Claim(_LITERAL_CLAIM, literal_finite),
    ),
))  # fmt: skip
MEMORY_PREDICTIONS_WINDOW = register(Experiment(
    name="memory-predictions-window", paper="002 Fig. 2", default_T=20, default_seeds=200, options=OPTIONS,
    title="OCO with memory and limited predictions: log(Reg) against the window W", study=_window,
    algorithms=tuple(Algorithm(label(law, est), lambda info, law=law, est=est: OCOMemoryLimitedPredictions(
        window=1, **PAPER, half_width=HALF_WIDTH, law=law, estimator=est), "Algorithm 1, K = W layers (h = 2)")
        for law in LAWS for est in POINTS),
    claims=(
        Claim("two-point feedback gives lower regret than single-point",
              _two_vs_one("median log(Reg) averaged over W", tuple(LAWS), _log_reg)),
        Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _window_truncated_vs_gaussian),
        Claim("log(Reg) falls about linearly in W for the truncated Gaussian (Theorem 2)", _window_linear_decay),
        Claim("Bernoulli smoothing is comparable to the truncated Gaussian", _window_bernoulli),
        Claim(_LITERAL_CLAIM, literal_finite),
    ),
))  # fmt: skip

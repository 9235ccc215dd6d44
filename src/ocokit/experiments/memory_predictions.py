"""Ye et al., "OCO with Memory and Limited Predictions" (arXiv 2024), Sec. 5, Figs. 1-2.

Both reproduce the paper's scalar example: ``x_t`` in R (d = 1), memory h = 2, quadratic costs from a random
generator (the paper prints none; [`QuadraticWithMemory`][ocokit.problems.QuadraticWithMemory] documents ours), ``x0 =
0.5``,
``eta_t = 0.2 / t``, ``alpha = 0.05``, ``delta = 0.2``, ``delta' = 1e-4``, no model error, and dynamic regret
against the offline optimum of the whole horizon (eq. 3).
Smoothing laws: Gaussian N(0, 1), truncated Gaussian on [-2, 2] and Bernoulli +-1; the truncated Gaussian uses
a quarter of the runs (the paper's 50 against 200). Bands are quartiles, centre lines medians.

* ``memory-predictions-horizon`` (Fig. 1): regret of the initialisation phase alone (subroutine (a),
  [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory], Algorithm 1's ``x^0``) for T = 5..20, as ``Reg / sqrt(T)`` and
  ``Reg / T``; each run is played once at the largest T and horizon T reads its first T rounds; every
  (T, seed) pair is a fresh instance.
* ``memory-predictions-window`` (Fig. 2): overall regret of Algorithm 1
  ([`OCOMemoryLimitedPredictions`][ocokit.algorithms.OCOMemoryLimitedPredictions], K = W layers) at T = 20, ``log(Reg)``
  against W.

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
from ocokit.harness import Algorithm, Claim, Experiment, Option, register
from ocokit.problems import QuadraticWithMemory
from ocokit.problems._base import all_rounds
from ocokit.sets import Box
from ocokit.studies import Cell, Fit, Plot, Sweep, per_run, play

PAPER = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-4, "x0": 0.5}
HALF_WIDTH = 2.0  # the experiments' truncation [-2, 2] ("slightly modify Definition 1")
LAWS = {"gaussian": "Gaussian", "truncated_gaussian": "truncated Gaussian", "rademacher": "Bernoulli"}
POINTS = {"two_point": "two-point", "one_point": "one-point"}
DIVERGED = 1e6  # |Reg| above this (or non-finite) counts as a diverged run of the literal setting
HORIZON_CONFIGS = tuple((law, est) for law in ("gaussian", "truncated_gaussian") for est in ("two_point", "one_point"))
CONFIGS = {f"{LAWS[law]}, {POINTS[est]}": (law, est) for law in LAWS for est in POINTS}
"""Label -> (smoothing law, estimator) of every configuration."""
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
    traj, timing = play(learner, problem, T, seed_ids, chunk_size=256, throw=False)
    regret, bad = metrics.dynamic_regret(traj)[:, -1], np.asarray(traj.first_bad_round)
    cols = {"seed": np.asarray(list(seed_ids)), "regret": np.where(bad >= 0, np.nan, regret), "first_bad_round": bad}
    return cols, timing


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


def _config(algo, ctx) -> tuple[str, str] | None:
    """The (law, estimator) of ``algo``'s label, ``None`` when the options leave it out."""
    law, est = CONFIGS[algo.label]
    return (law, est) if law in ctx.options["laws"] and est in ctx.options["points"] else None


def _seeds(algo, cell, ctx) -> range:
    return range(num_seeds(CONFIGS[algo.label][0], ctx.seeds, ctx.options["truncated_share"]))


def _horizon_measure(runs) -> dict[str, np.ndarray]:
    """Dynamic regret of the first T rounds against the offline optimum of those rounds (eq. 3)."""
    cost, T = runs.loss.sum(axis=1), runs.cell.T
    regret = cost - per_run(_optimal_cost, runs.cell.problem, T, runs.seeds)
    return {"regret": regret, "regret_over_sqrt_T": regret / math.sqrt(T), "regret_over_T": regret / T}


def _window_measure(runs) -> dict[str, np.ndarray]:
    """Dynamic regret (nan where the run turned non-finite) and its log (nan where not positive)."""
    regret = np.where(runs.first_bad_round >= 0, np.nan, np.sum(runs.loss - runs.optimum_loss, axis=1))
    return {"regret": regret, "log_regret": np.log(np.where(regret > 0, regret, np.nan))}


def _literal_horizon(exp, ctx) -> dict[str, Any]:
    literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained)"
    box = f"X = [-{ctx.options['box']:g}, {ctx.options['box']:g}]"
    learners = {None: _bandit("truncated_gaussian", "one_point")}
    return {literal: _literal(ctx, literal, learners, min(ctx.seeds, ctx.options["literal_seeds"]),
                              f"the paper's parameters on {box}")}  # fmt: skip


def _literal_window(exp, ctx) -> dict[str, Any]:
    o, windows = ctx.options, ctx.options["windows"]
    literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained, delta' = 1e-4)"
    lit_ws = sorted({windows[0], windows[len(windows) // 2], windows[-1]})
    learners = {W: _algorithm1("truncated_gaussian", "one_point", W, o, PAPER["delta_prime"]) for W in lit_ws}
    plotted = f"the paper's parameters on X = [-{o['box']:g}, {o['box']:g}], delta' = {o['one_point_delta_prime']:g}"
    return {literal: _literal(ctx, literal, learners, min(ctx.seeds, o["literal_seeds"]), plotted)}


def _horizon_grid(ctx) -> list[Cell]:
    if ctx.seeds > 1000:
        raise ValueError(f"seeds must be <= 1000 (run ids are 1000 T + seed), got {ctx.seeds}")
    problem = make_problem(ctx.options["box"])
    return [Cell("T", h, problem, h) for h in range(min(5, ctx.T), ctx.T + 1)]


_BOX = "X = [-{o[box]:g}, {o[box]:g}]; the paper's literal one-point setting on R: see the claims"
HORIZON = Sweep(
    grid=_horizon_grid, measure=_horizon_measure, prefix=True, comparators=False, throw=False, chunk_size=256,
    learner=lambda algo, cell, ctx: algo.make(None) if _config(algo, ctx) else None,
    seeds=lambda algo, cell, ctx: [1000 * cell.T + s for s in _seeds(algo, cell, ctx)],  # a fresh instance each
    fits=(Fit("regret", "T"),), extra=_literal_horizon,
    plots=(Plot("", "{exp.title} ({paper})\n" + _BOX, (("Reg / sqrt(T)", "regret_over_sqrt_T", "T"),
                ("Reg / T", "regret_over_T", "T")), xlabel="T", x=np.asarray,
                kwargs={"band": "quartiles", "logy": ["Reg / sqrt(T)", "Reg / T"]}),),
)  # fmt: skip
WINDOW = Sweep(
    grid=lambda ctx: [Cell("W", W, make_problem(ctx.options["box"]), ctx.T) for W in ctx.options["windows"]],
    learner=lambda algo, cell, ctx: _algorithm1(*c, int(cell.x), ctx.options) if (c := _config(algo, ctx)) else None,
    measure=_window_measure, seeds=_seeds, throw=False, chunk_size=256, extra=_literal_window,
    fits=(Fit("log_regret", "W", stat="median", log=False),),
    plots=(Plot("", "{exp.title} ({paper})\nT = {T}, " + _BOX, tuple(
        (f"log(Reg), {POINTS[e]}", "log_regret", "W", tuple(label(law, e) for law in LAWS)) for e in POINTS),
        xlabel="W", x=np.asarray, kwargs={"band": "quartiles"}),),
)  # fmt: skip


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
        iqr_tg, iqr_g = (_iqr(s["regret_over_sqrt_T"]["T"]) for s in (tg, g))
        reg_tg, reg_g = (_last(s) for s in (tg, g))
        parts.append(f"{POINTS[est]}{' (on the box)' if est == 'one_point' else ''}: mean Reg "
                     f"{reg_tg:.3g} vs {reg_g:.3g}, IQR of Reg/sqrt(T) {iqr_tg:.3g} vs {iqr_g:.3g}")  # fmt: skip
        holds &= reg_tg < reg_g and iqr_tg < iqr_g
    return "truncated vs Gaussian: " + "; ".join(parts), holds


def _horizon_sublinear(summary) -> tuple[str, bool]:
    entry = summary[label("truncated_gaussian", "two_point")]
    Ts, reg = (np.asarray(entry["regret"]["T"][k], float) for k in ("x", "mean"))
    if Ts.size < 3:
        return f"not measured (needs >= 3 horizons, got {Ts.size})", False
    fit, ratio = entry["regret_exponent_T"], (reg[-1] / Ts[-1]) / (reg[0] / Ts[0])
    slope, se = fit["mean"], fit["se"]
    text = f"truncated two-point: Reg ~ T^{slope:.2f} (se {se:.2f}); Reg/T at T={Ts[-1]:g} is {ratio:.2f}x "
    text += f"that at T={Ts[0]:g}"
    return text, slope < 1.0 and ratio < 1.0


def _last(entry) -> float:
    """A configuration's mean regret at the largest T."""
    return entry["regret"]["T"]["mean"][-1]


def _iqr(stats) -> float:
    """The interquartile range over seeds, averaged over the cells."""
    return float(np.mean(np.subtract(stats["q75"], stats["q25"])))


def _log_reg(entry) -> float:
    """A configuration's median log(Reg), averaged over W."""
    return float(np.mean(entry["log_regret"]["W"]["median"]))


def _slope(entry) -> dict[str, float]:
    """The linear fit of the median log(Reg) against W (nan: fewer than three windows)."""
    return entry.get("log_regret_slope_W", {"mean": math.nan, "r2": math.nan})


def _window_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    tg, g = summary[label("truncated_gaussian", "two_point")], summary[label("gaussian", "two_point")]
    a, b = _log_reg(tg), _log_reg(g)
    iqr_tg, iqr_g = (_iqr(s["log_regret"]["W"]) for s in (tg, g))
    return (f"two-point, averaged over W: median log(Reg) {a:.3g} vs {b:.3g}; IQR of log(Reg) {iqr_tg:.3g} vs "
            f"{iqr_g:.3g}; decay per unit W {_slope(tg)['mean']:.3g} vs {_slope(g)['mean']:.3g}",
            a < b and iqr_tg < iqr_g)  # fmt: skip


def _window_linear_decay(summary) -> tuple[str, bool]:
    s = summary[label("truncated_gaussian", "two_point")]
    if len(s["log_regret"]["W"]["x"]) < 3:
        return f"not measured (needs >= 3 windows, got {len(s['log_regret']['W']['x'])})", False
    fit = _slope(s)
    text = f"truncated two-point: median log(Reg) = c {fit['mean']:+.3f} W, R^2 = {fit['r2']:.2f}"
    return text, fit["mean"] < 0 and fit["r2"] >= 0.9


def _window_bernoulli(summary) -> tuple[str, bool]:
    bernoulli, truncated = (_log_reg(summary[label(law, "two_point")]) for law in ("rademacher", "truncated_gaussian"))
    diff = bernoulli - truncated
    better = "Bernoulli lower" if diff < 0 else "truncated Gaussian lower"
    return (f"two-point: median Reg ratio Bernoulli / truncated = {math.exp(diff):.3g} (geometric mean over W; "
            f"{better}); comparable = within a factor 10", abs(diff) < math.log(10.0))  # fmt: skip


MEMORY_PREDICTIONS_HORIZON = register(Experiment(
    name="memory-predictions-horizon", paper="002 Fig. 1", default_T=20, default_seeds=200, options=OPTIONS,
    title="OCO with memory: initialisation-phase regret against T", study=HORIZON,
    algorithms=tuple(Algorithm(label(*c), lambda info, c=c: _bandit(*c)) for c in HORIZON_CONFIGS),
    claims=(
        Claim("two-point feedback gives lower initialisation-phase regret than single-point", _two_vs_one(
            "mean Reg at the largest T", ("gaussian", "truncated_gaussian"), _last)),
        Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _horizon_truncated_vs_gaussian),
        Claim("the initialisation phase has sublinear regret: Reg/T declines in T (Theorem 1)", _horizon_sublinear),
        Claim(_LITERAL_CLAIM, literal_finite),
    ),
))  # fmt: skip
MEMORY_PREDICTIONS_WINDOW = register(Experiment(
    name="memory-predictions-window", paper="002 Fig. 2", default_T=20, default_seeds=200, options=OPTIONS,
    title="OCO with memory and limited predictions: log(Reg) against the window W", study=WINDOW,
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

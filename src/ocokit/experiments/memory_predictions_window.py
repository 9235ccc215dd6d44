"""Ye et al., "OCO with Memory and Limited Predictions" (arXiv 2024), Sec. 5, Fig. 2: ``memory-predictions-window``.

Overall regret of Algorithm 1 ([`OCOMemoryLimitedPredictions`][ocokit.algorithms.OCOMemoryLimitedPredictions], K = W
layers) at T = 20, ``log(Reg)`` against the window W. The setup (the paper's parameters, the smoothing laws, the box,
the literal setting, the window reading) is shared with ``memory-predictions-horizon`` (below).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ocokit.algorithms import OCOMemoryLimitedPredictions
from ocokit.experiments.memory_predictions import (
    BOX,
    HALF_WIDTH,
    LAWS,
    LITERAL_CLAIM,
    OPTIONS,
    PAPER,
    POINTS,
    algorithm1,
    config,
    iqr,
    label,
    literal_finite,
    literal_runs,
    make_problem,
    seeds_of,
    two_vs_one,
)  # fmt: skip
from ocokit.harness import Algorithm, Claim, Experiment, register
from ocokit.studies import Cell, Fit, Plot, Sweep


def _window_measure(runs) -> dict[str, np.ndarray]:
    """Dynamic regret (nan where the run turned non-finite) and its log (nan where not positive)."""
    regret = np.where(runs.first_bad_round >= 0, np.nan, np.sum(runs.loss - runs.optimum_loss, axis=1))
    return {"regret": regret, "log_regret": np.log(np.where(regret > 0, regret, np.nan))}


def _literal_window(exp, ctx) -> dict[str, Any]:
    o, windows = ctx.options, ctx.options["windows"]
    literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained, delta' = 1e-4)"
    lit_ws = sorted({windows[0], windows[len(windows) // 2], windows[-1]})
    learners = {W: algorithm1("truncated_gaussian", "one_point", W, o, PAPER["delta_prime"]) for W in lit_ws}
    plotted = f"the paper's parameters on X = [-{o['box']:g}, {o['box']:g}], delta' = {o['one_point_delta_prime']:g}"
    return {literal: literal_runs(ctx, literal, learners, min(ctx.seeds, o["literal_seeds"]), plotted)}


WINDOW = Sweep(
    grid=lambda ctx: [Cell("W", W, make_problem(ctx.options["box"]), ctx.T) for W in ctx.options["windows"]],
    learner=lambda algo, cell, ctx: algorithm1(*c, int(cell.x), ctx.options) if (c := config(algo, ctx)) else None,
    measure=_window_measure, seeds=seeds_of, throw=False, chunk_size=256, extra=_literal_window,
    fits=(Fit("log_regret", "W", stat="median", log=False),),
    plots=(Plot("", "{exp.title} ({paper})\nT = {T}, " + BOX, tuple(
        (f"log(Reg), {POINTS[e]}", "log_regret", "W", tuple(label(law, e) for law in LAWS)) for e in POINTS),
        xlabel="W", x=np.asarray, kwargs={"band": "quartiles"}),),
)  # fmt: skip


def _log_reg(entry) -> float:
    """A configuration's median log(Reg), averaged over W."""
    return float(np.mean(entry["log_regret"]["W"]["median"]))


def _slope(entry) -> dict[str, float]:
    """The linear fit of the median log(Reg) against W (nan: fewer than three windows)."""
    return entry.get("log_regret_slope_W", {"mean": math.nan, "r2": math.nan})


def _window_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    tg, g = summary[label("truncated_gaussian", "two_point")], summary[label("gaussian", "two_point")]
    a, b = _log_reg(tg), _log_reg(g)
    iqr_tg, iqr_g = (iqr(s["log_regret"]["W"]) for s in (tg, g))
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


MEMORY_PREDICTIONS_WINDOW = register(Experiment(
    name="memory-predictions-window", paper="002 Fig. 2", default_T=20, default_seeds=200, options=OPTIONS,
    title="OCO with memory and limited predictions: log(Reg) against the window W", study=WINDOW,
    algorithms=tuple(Algorithm(label(law, est), lambda info, law=law, est=est: OCOMemoryLimitedPredictions(
        window=1, **PAPER, half_width=HALF_WIDTH, law=law, estimator=est), "Algorithm 1, K = W layers (h = 2)")
        for law in LAWS for est in POINTS),
    claims=(
        Claim("two-point feedback gives lower regret than single-point",
              two_vs_one("median log(Reg) averaged over W", tuple(LAWS), _log_reg)),
        Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _window_truncated_vs_gaussian),
        Claim("log(Reg) falls about linearly in W for the truncated Gaussian (Theorem 2)", _window_linear_decay),
        Claim("Bernoulli smoothing is comparable to the truncated Gaussian", _window_bernoulli),
        Claim(LITERAL_CLAIM, literal_finite),
    ),
))  # fmt: skip

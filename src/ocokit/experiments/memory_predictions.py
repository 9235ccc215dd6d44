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

from collections.abc import Callable
from typing import Any

import numpy as np

from ocokit import metrics
from ocokit.algorithms import BanditOCOMemory, OCOMemoryLimitedPredictions
from ocokit.harness import Option
from ocokit.problems import QuadraticWithMemory
from ocokit.sets import Box
from ocokit.studies import play

PAPER = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-4, "x0": 0.5}
HALF_WIDTH = 2.0  # the experiments' truncation [-2, 2] ("slightly modify Definition 1")
LAWS = {"gaussian": "Gaussian", "truncated_gaussian": "truncated Gaussian", "rademacher": "Bernoulli"}
POINTS = {"two_point": "two-point", "one_point": "one-point"}
DIVERGED = 1e6  # |Reg| above this (or non-finite) counts as a diverged run of the literal setting
HORIZON_CONFIGS = tuple((law, est) for law in ("gaussian", "truncated_gaussian") for est in ("two_point", "one_point"))
CONFIGS = {f"{LAWS[law]}, {POINTS[est]}": (law, est) for law in LAWS for est in POINTS}
"""Label -> (smoothing law, estimator) of every configuration."""
LITERAL_CLAIM = "single-point feedback with the paper's parameters on X = R stays finite (the paper plots it)"
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


def bandit(law: str, estimator: str) -> BanditOCOMemory:
    """Subroutine (a) with the paper's parameters (Algorithm 1's ``x^0``)."""
    return BanditOCOMemory(eta=PAPER["eta"], delta=PAPER["delta"], x0=PAPER["x0"], half_width=HALF_WIDTH, law=law,
                           estimator=estimator)  # fmt: skip


def algorithm1(law, est, W, opts, delta_prime=None) -> OCOMemoryLimitedPredictions:
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


def literal_runs(ctx, name, learners, seeds, plotted_setting) -> dict[str, Any]:
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


def config(algo, ctx) -> tuple[str, str] | None:
    """The (law, estimator) of ``algo``'s label, ``None`` when the options leave it out."""
    law, est = CONFIGS[algo.label]
    return (law, est) if law in ctx.options["laws"] and est in ctx.options["points"] else None


def seeds_of(algo, cell, ctx) -> range:
    return range(num_seeds(CONFIGS[algo.label][0], ctx.seeds, ctx.options["truncated_share"]))


def literal_finite(summary) -> tuple[str, bool]:
    """The claim that the paper's literal single-point setting (on R) gives finite regret."""
    s = summary[next(k for k in summary if "literal" in k)]  # StopIteration if absent: not measured
    text = f"{s['diverged']}/{s['runs']} runs diverged (|Reg| > {DIVERGED:g} or non-finite; median Reg "
    text += f"{s['median_regret']:.3g}); the one-point curves shown use {s['plotted_setting']}"
    return text, s["diverged"] == 0


def two_vs_one(what: str, laws: tuple[str, ...], stat: Callable[[dict], float]) -> Callable:
    """Claim check: under each of ``laws``, two-point feedback has a lower ``stat`` (``what``) than one-point."""

    def check(summary) -> tuple[str, bool]:
        pairs = {law: (stat(summary[label(law, "two_point")]), stat(summary[label(law, "one_point")])) for law in laws}
        text = "; ".join(f"{LAWS[k]}: {a:.3g} vs {b:.3g}" for k, (a, b) in pairs.items())
        return f"{what}, two- vs one-point: {text}", all(a < b for a, b in pairs.values())

    return check


def iqr(stats) -> float:
    """The interquartile range over seeds, averaged over the cells."""
    return float(np.mean(np.subtract(stats["q75"], stats["q25"])))


BOX = "X = [-{o[box]:g}, {o[box]:g}]; the paper's literal one-point setting on R: see the claims"

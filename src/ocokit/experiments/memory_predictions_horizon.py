"""Ye et al., "OCO with Memory and Limited Predictions" (arXiv 2024), Sec. 5, Fig. 1: ``memory-predictions-horizon``.

Regret of the initialisation phase alone (subroutine (a), [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory],
Algorithm 1's ``x^0``) for T = 5..20, as ``Reg / sqrt(T)`` and ``Reg / T``: each run is played once at the largest T
and horizon T reads its first T rounds; every (T, seed) pair is a fresh instance (seed ``1000 T + s``). The setup
(the paper's parameters, the smoothing laws, the box, the literal setting) is shared with
``memory-predictions-window`` (below).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from ocokit.experiments.memory_predictions import (
    BOX,
    HORIZON_CONFIGS,
    LAWS,
    LITERAL_CLAIM,
    OPTIONS,
    POINTS,
    bandit,
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
from ocokit.problems import QuadraticWithMemory
from ocokit.problems._base import all_rounds
from ocokit.studies import Cell, Fit, Plot, Sweep, per_run


def _optimal_cost(problem: QuadraticWithMemory, episode, env_key, T: int) -> jax.Array:
    """``C_T(x*)`` of one run's first T rounds (the engine's rounds, eq. 2 on horizon T)."""
    data = all_rounds(problem, episode, env_key, T)
    return problem.total_cost(data["A"], data["B"], episode["x_star"])


def _horizon_measure(runs) -> dict[str, np.ndarray]:
    """Dynamic regret of the first T rounds against the offline optimum of those rounds (eq. 3)."""
    cost, T = runs.loss.sum(axis=1), runs.cell.T
    regret = cost - per_run(_optimal_cost, runs.cell.problem, T, runs.seeds)
    return {"regret": regret, "regret_over_sqrt_T": regret / math.sqrt(T), "regret_over_T": regret / T}


def _literal_horizon(exp, ctx) -> dict[str, Any]:
    literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained)"
    box = f"X = [-{ctx.options['box']:g}, {ctx.options['box']:g}]"
    learners = {None: bandit("truncated_gaussian", "one_point")}
    return {literal: literal_runs(ctx, literal, learners, min(ctx.seeds, ctx.options["literal_seeds"]),
                              f"the paper's parameters on {box}")}  # fmt: skip


def _horizon_grid(ctx) -> list[Cell]:
    if ctx.seeds > 1000:
        raise ValueError(f"seeds must be <= 1000 (run ids are 1000 T + seed), got {ctx.seeds}")
    problem = make_problem(ctx.options["box"])
    return [Cell("T", h, problem, h) for h in range(min(5, ctx.T), ctx.T + 1)]


HORIZON = Sweep(
    grid=_horizon_grid, measure=_horizon_measure, prefix=True, comparators=False, throw=False, chunk_size=256,
    learner=lambda algo, cell, ctx: algo.make(None) if config(algo, ctx) else None,
    seeds=lambda algo, cell, ctx: [1000 * cell.T + s for s in seeds_of(algo, cell, ctx)],  # a fresh instance each
    fits=(Fit("regret", "T"),), extra=_literal_horizon,
    plots=(Plot("", "{exp.title} ({paper})\n" + BOX, (("Reg / sqrt(T)", "regret_over_sqrt_T", "T"),
                ("Reg / T", "regret_over_T", "T")), xlabel="T", x=np.asarray,
                kwargs={"band": "quartiles", "logy": ["Reg / sqrt(T)", "Reg / T"]}),),
)  # fmt: skip


def _horizon_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    parts, holds = [], True
    for est in ("two_point", "one_point"):
        tg, g = summary[label("truncated_gaussian", est)], summary[label("gaussian", est)]
        iqr_tg, iqr_g = (iqr(s["regret_over_sqrt_T"]["T"]) for s in (tg, g))
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


MEMORY_PREDICTIONS_HORIZON = register(Experiment(
    name="memory-predictions-horizon", paper="002 Fig. 1", default_T=20, default_seeds=200, options=OPTIONS,
    title="OCO with memory: initialisation-phase regret against T", study=HORIZON,
    algorithms=tuple(Algorithm(label(*c), lambda info, c=c: bandit(*c)) for c in HORIZON_CONFIGS),
    claims=(
        Claim("two-point feedback gives lower initialisation-phase regret than single-point", two_vs_one(
            "mean Reg at the largest T", ("gaussian", "truncated_gaussian"), _last)),
        Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _horizon_truncated_vs_gaussian),
        Claim("the initialisation phase has sublinear regret: Reg/T declines in T (Theorem 1)", _horizon_sublinear),
        Claim(LITERAL_CLAIM, literal_finite),
    ),
))  # fmt: skip

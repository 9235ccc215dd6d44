"""Qiu and Wei (arXiv 2020), Theorems 6.1-6.2 as a sweep: ``simplex-mirror-prox``.

SimplexMirrorProx (Algorithm 2) against the Euclidean mirror prox, Hedge, OGD, drift-plus-penalty and COLDQ on
[`DriftingAllocation`][ocokit.problems.DriftingAllocation]: regret and violation against T (static costs) and the
dimension d
(Theorems 6.1 and 6.2: log factors in T d). ``--T`` is the largest horizon (the grid of
`horizons`); the d-study uses the middle horizon.
"""

from __future__ import annotations

import math

import numpy as np

from ocokit.algorithms import COLDQ, OGD, Hedge, MirrorProx, SimplexMirrorProx, YuNeelyWei
from ocokit.experiments.mirror_prox import GRID, horizons, learner, lemma55, measure, theory
from ocokit.harness import ALGORITHMS, Algorithm, Claim, Experiment, Option, register
from ocokit.papers import cite
from ocokit.problems import DriftingAllocation
from ocokit.studies import Cell, Fit, Plot, Runs, Sweep, exponent_at_most

# label -> (make(problem, info, V), the norm of V it needs in advance (None: V is None), note)
METHODS = {
    "SimplexMirrorProx": (theory(SimplexMirrorProx), "linf", "Alg. 2 (entropic, nu = 1/T), V_inf known"),
    "MirrorProx": (theory(MirrorProx), "l2", "Alg. 1, Euclidean geometry on the simplex, V_2 known"),
    "Hedge": (lambda p, info, V: Hedge.from_theory(info, grad_bound=1.0), None, "entropic, no constraints"),
    "OGD": (lambda p, info, V: OGD.from_theory(info), None, "Euclidean, no constraints"),
    "YuNeelyWei": (lambda p, info, V: YuNeelyWei.from_theory(info), None, "drift-plus-penalty OGD"),
    "COLDQ": (lambda p, info, V: COLDQ.from_theory(info, solver="affine"), None,
              f"{cite('003')} (Cor. 1 parameters), exact hinge prox of the affine budget"),
}  # fmt: skip


def _grid(ctx) -> list[Cell]:
    grid, dim, dims = horizons(ctx.T, ctx.options), ctx.options["dim"], sorted(set(ctx.options["dims"]))
    if len(dims) < 3:
        raise ValueError(f"option dims needs at least three dimensions >= 2, got {dims}")
    T_d = grid[len(grid) // 2]
    return [Cell("T", h, DriftingAllocation(dim, 0.0), h) for h in grid] + [
        Cell("d", d, DriftingAllocation(d, 0.0), T_d) for d in dims
    ]


def _measure(runs: Runs) -> dict[str, np.ndarray]:
    """`measure` and the violation over ``log(T d)`` (Theorem 6.2)."""
    out = measure(runs)
    return out | {"violation_over_log_Td": out["violation"] / math.log(runs.cell.T * runs.cell.problem.dim)}


def _violation_log(summary):
    v = summary["SimplexMirrorProx"]["violation_over_log_Td"]["T"]["mean"]
    return f"max_k sum_t g_k / log(T d): {v[0]:.3g} (smallest T) -> {v[-1]:.3g} (largest T)", v[-1] <= v[0] + 0.05


def _dimension(summary):
    a, b = (summary[k]["regret_exponent_d"]["mean"] for k in ("SimplexMirrorProx", "MirrorProx"))
    text = f"fitted exponent of regret vs d: SimplexMirrorProx {a:.3f}, Euclidean MirrorProx {b:.3f}"
    return text, a <= 0.5 and a < b


_RV = ("regret", "violation")
SIMPLEX_MIRROR_PROX = register(Experiment(
    name="simplex-mirror-prox", paper="004 Thms 6.1-6.2", title="Simplex mirror prox: log factors in T and d",
    default_T=32000, default_seeds=5, algorithms=tuple(Algorithm(k, None, v[2]) for k, v in METHODS.items()),
    options=(ALGORITHMS, *GRID, Option("dim", int, 16, "the T-study's dimension", low=2),
             Option("dims", list, [4, 16, 64, 256], "the d grid", low=2, item=int)),
    study=Sweep(grid=_grid, learner=learner(METHODS), measure=_measure, fits=(Fit("regret", "T"), Fit("regret", "d")),
                plots=(Plot("", "{exp.title} ({paper}; static costs, {seeds} seeds)",
                            tuple((f"{w} (d = {{o[dim]}})", w, "T") for w in _RV), hide=("Hedge", "OGD")),
                       Plot("-d", "Regret and violation against the dimension (T = {T}, static costs, {seeds} seeds)",
                            tuple((f"{w} at T = {{T}}", w, "d") for w in _RV), xlabel="log2 d", x=np.log2,
                            hide=("Hedge", "OGD")))),
    claims=(
        Claim("Thm 6.1: with V_inf = O(1), Alg. 2's regret grows only polylogarithmically in T",
              exponent_at_most("SimplexMirrorProx", 0.25, "regret_exponent_T")),
        Claim("Thm 6.2: Alg. 2's violation is O(log(T d)): violation / log(T d) does not grow", _violation_log),
        Claim("Thm 6.1: d enters Alg. 2 through log d, the Euclidean mirror prox polynomially", _dimension),
        Claim("Lemma 5.5 holds exactly on every mirror-prox run", lemma55(("SimplexMirrorProx", "MirrorProx"))),
    ),
))  # fmt: skip

"""Qiu and Wei (arXiv 2020; online primal-dual mirror prox): its theorems checked numerically, as sweeps.

The paper has no experiments. V is known in advance, as Theorems 4.1 and 6.1 assume (the largest realized
gradual variation over the seeds). ``gradual-variation``: MirrorProx (Algorithm 1, Euclidean ball) against
YuNeelyWei and OGD on [`DriftingQuadratic`][ocokit.problems.DriftingQuadratic]: regret and signed violation
``max_k sum_t g_k(x_t)`` against T for static losses (``V_* = O(1)``) and i.i.d. losses (``V_*`` linear in T), and
against ``V_*`` at the middle horizon, with fitted exponents (Theorems 4.1 and 4.2). ``--T`` is the largest
horizon; the grid is ``T / ratio^k``, ``k = horizons - 1, ..., 0``. Algorithm 2: `simplex_mirror_prox`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np

from ocokit.algorithms import OGD, MirrorProx, ProblemInfo, SimplexMirrorProx, YuNeelyWei
from ocokit.harness import ALGORITHMS, Algorithm, Claim, Experiment, Option, register
from ocokit.papers import cite
from ocokit.problems import DriftingQuadratic
from ocokit.studies import Cell, Fit, Plot, Runs, Sweep, exponent_at_most, per_run, regret_and_violation


def theory(cls):
    """``(problem, info, V) -> cls.from_theory(info, variation=V)``: the problem's constants and constraints."""
    return lambda p, info, V: cls.from_theory(info, variation=V)


# label -> (make(problem, info, V), the norm of V it needs in advance (None: V is None), note)
METHODS = {
    "MirrorProx": (theory(MirrorProx), "l2", "Alg. 1, V known (max realized V_* over seeds)"),
    "MirrorProx V=4F2T": (theory(MirrorProx), None, "Alg. 1, worst-case V = 4 F^2 T (V unknown)"),
    "YuNeelyWei": (lambda p, info, V: YuNeelyWei.from_theory(info), None, "drift-plus-penalty OGD"),
    "OGD": (lambda p, info, V: OGD.from_theory(info), None, "ignores the constraints"),
}  # fmt: skip
_COLDQ_ON_BALL = ("not run: COLDQ's exact per-round hinge prox handles a quadratic constraint only over a Box "
                  f"({cite('003')} solver), and this problem has a Euclidean ball")  # fmt: skip
GRID = (Option("horizons", int, 4, "horizons in the T grid", low=3), Option("ratio", int, 4, "grid ratio", low=2))


def horizons(T: int, options) -> list[int]:
    """The T grid ``T // ratio^k``, ``k = horizons - 1, ..., 0`` (the smallest must be >= 3)."""
    n, ratio = options["horizons"], options["ratio"]
    grid = [T // ratio**k for k in range(n - 1, -1, -1)]
    if grid[0] < 3:
        raise ValueError(f"T = {T} is too small for {n} horizons of ratio {ratio} (the smallest must be >= 3)")
    return grid


def variation(problem, T: int, seeds, norm: str) -> np.ndarray:
    """The realized gradual variation of each seed's first T rounds, in ``norm``."""
    args = () if isinstance(problem, DriftingQuadratic) else (norm,)  # DriftingQuadratic: l2 only
    return per_run(lambda p, episode, key, T, *a: p.gradient_variation(episode, key, T, *a), problem, T, seeds, *args)


def learner(methods):
    """The Sweep's learner: ``methods[label]`` built for the cell, V the largest realized one over the seeds."""

    def make(algo, cell, ctx):
        if algo.label not in methods:
            return None
        build, norm, _ = methods[algo.label]
        V = None if norm is None else float(np.max(variation(cell.problem, cell.T, range(ctx.seeds), norm)))
        return build(cell.problem, ProblemInfo.of(cell.problem, cell.T), V)

    return make


def measure(runs: Runs) -> dict[str, np.ndarray]:
    """Regret, signed violation and Lemma 5.5's gap ``max_k sum_t g_k(x_t) - (Q_k(T+1) - Q_k(1)) / gamma`` (<= 0;
    nan for other learners)."""
    gap = np.full(runs.loss.shape[0], np.nan)
    if isinstance(runs.learner, MirrorProx | SimplexMirrorProx) and runs.constraints.shape[-1]:
        info = ProblemInfo.of(runs.cell.problem, runs.cell.T)
        q1 = np.asarray(_initial_queue(runs.learner, info))
        drift = (runs.diagnostics["queue"][:, -1] - q1) / float(runs.learner.gamma)
        gap = np.max(runs.constraints.sum(axis=1) - drift, axis=-1)
    return regret_and_violation(runs) | {"lemma55_gap": gap}


@eqx.filter_jit
def _initial_queue(learner, info):
    return learner.init(info, jax.random.PRNGKey(0)).queue


def lemma55(labels):
    """Claim check: Lemma 5.5's gap is <= 0 (1e-8) on every run of ``labels``."""

    def check(summary):
        gaps = [g for k in labels if k in summary for a in summary[k]["lemma55_gap"].values() for g in a["max"]]
        if not gaps:
            raise KeyError(labels[0])
        gap = float(np.nanmax(gaps))
        return f"max over runs of sum_t g_k - (Q_k(T+1) - Q_k(1)) / gamma: {gap:.2e}", gap <= 1e-8

    return check


def _grid(ctx) -> list[Cell]:
    grid, drifts = horizons(ctx.T, ctx.options), ctx.options["drifts"]
    cells = [Cell(r, h, DriftingQuadratic(5, drift), h) for r, drift in (("static", 0.0), ("iid", 1.0)) for h in grid]
    T_v = grid[len(grid) // 2]
    for d in drifts:  # x: the mean realized V_* over the seeds
        problem = DriftingQuadratic(5, d)
        cells.append(Cell("V", float(np.mean(variation(problem, T_v, range(ctx.seeds), "l2"))), problem, T_v))
    return cells


def _bounded(summary):
    v = {r: summary["MirrorProx"]["violation"][r]["mean"] for r in ("static", "iid")}
    text = ", ".join(f"{r} {m[0]:.3g} -> {m[-1]:.3g}" for r, m in v.items())
    return "max_k sum_t g_k, smallest -> largest T: " + text, all(m[-1] <= max(m[0], 0.0) + 1.0 for m in v.values())


def _versus_dpp(summary):
    ours, theirs = ([summary[k]["violation"][r]["mean"][-1] for r in ("static", "iid")] for k in
                    ("MirrorProx", "YuNeelyWei"))  # fmt: skip
    text = f"largest T, static / i.i.d.: MirrorProx {ours[0]:.3g} / {ours[1]:.3g}, YuNeelyWei {theirs[0]:.3g} / {theirs[1]:.3g}"  # noqa: E501
    return text, all(a < b for a, b in zip(ours, theirs, strict=True))


_PANELS = tuple((f"{w}, {n}", w, r) for w in ("regret", "violation")
                for r, n in (("static", "static (V* = O(1))"), ("iid", "i.i.d. (V* ~ T)")))  # fmt: skip
GRADUAL_VARIATION = register(Experiment(
    name="gradual-variation", paper="004 Thms 4.1-4.2", default_T=32000, default_seeds=5,
    title="Mirror prox under gradual variation: regret vs T and V*, O(1) violation",
    algorithms=(*(Algorithm(k, None, v[2]) for k, v in METHODS.items()), Algorithm("COLDQ", None, _COLDQ_ON_BALL)),
    options=(ALGORITHMS, *GRID, Option("drifts", list, [0.0, 1e-3, 1e-2, 1e-1, 1.0], "the V-study's drift grid",
                                       low=0.0, high=1.0, item=float)),
    study=Sweep(grid=_grid, learner=learner(METHODS), measure=measure,
                fits=(Fit("regret", "static"), Fit("regret", "iid"), Fit("regret", "V", above=1.0)),  # V_* > L_f^2
                plots=(Plot("", "{exp.title} ({paper}; d = 5, {seeds} seeds)", _PANELS,
                            hide=("OGD", "MirrorProx V=4F2T")),
                       Plot("-V", "Regret and violation against the gradual variation V* (T = {T}, {seeds} seeds)",
                            tuple((f"{w} at T = {{T}}", w, "V") for w in ("regret", "violation")),
                            xlabel="log10 V* (mean realized)", hide=("OGD", "MirrorProx V=4F2T")))),
    claims=(
        Claim("Thm 4.1: regret O(max{sqrt(V_*), L_f}) is flat in T when V_* = O(1) (exponent <= 0.2)",
              exponent_at_most("MirrorProx", 0.2, "regret_exponent_static")),
        Claim("Thm 4.1: with V_* linear in T, regret grows about like sqrt(T) or slower (exponent <= 0.6)",
              exponent_at_most("MirrorProx", 0.6, "regret_exponent_iid")),
        Claim("Thm 4.1: at a fixed T, regret grows like sqrt(V_*) or slower (exponent <= 0.6)",
              exponent_at_most("MirrorProx", 0.6, "regret_exponent_V")),
        Claim("Thm 4.2: the signed violation max_k sum_t g_k(x_t) is O(1): it does not grow with T", _bounded),
        Claim("Lemma 5.5: sum_t g_k(x_t) <= (Q_k(T+1) - Q_k(1)) / gamma exactly, on every run",
              lemma55(("MirrorProx",))),
        Claim("Table 1: O(1) violation, below drift-plus-penalty's O(sqrt(T)) at the largest T", _versus_dpp),
    ),
))  # fmt: skip

"""Paper 004 (Qiu and Wei 2020, online primal-dual mirror prox): its theorems checked numerically.

The paper has no experiments. V is known in advance, as Theorems 4.1 and 6.1 assume (the largest realized
gradual variation over the seeds, an upper bound for every run):

* ``gradual-variation``: MirrorProx (Algorithm 1, Euclidean ball) against drift-plus-penalty OGD (YuNeelyWei)
  and OGD on :class:`~ocokit.problems.DriftingQuadratic`: regret and signed violation ``max_k sum_t g_k(x_t)``
  against T for static losses (``V_* = O(1)``) and i.i.d. losses (``V_*`` linear in T), and against ``V_*``
  at a fixed T, with fitted exponents (Theorems 4.1 and 4.2).
* ``simplex-mirror-prox``: SimplexMirrorProx (Algorithm 2) against the Euclidean mirror prox, Hedge, OGD,
  drift-plus-penalty and COLDQ on :class:`~ocokit.problems.DriftingAllocation`: regret and violation against
  T (static costs) and the dimension d (Theorems 6.1 and 6.2: log factors in T d).

``--T`` is the largest horizon; the T grid is ``T / ratio^k`` for ``k = horizons - 1, ..., 0``; the V- and
d-studies use the middle horizon.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import numpy as np

from ocokit.algorithms import COLDQ, OGD, Hedge, MirrorProx, ProblemInfo, SimplexMirrorProx, YuNeelyWei
from ocokit.harness import (
    ALGORITHMS,
    Algorithm,
    Claim,
    Experiment,
    Figure,
    Option,
    Outcome,
    exponent,
    per_run,
    play,
    register,
    round_columns,
    select,
)
from ocokit.metrics import mean_std
from ocokit.problems import DriftingAllocation, DriftingQuadratic


def _mp(cls, norm):
    return lambda p, info, V: cls.from_theory(info, variation=V, **p.theory_constants(*norm),
                                              known_constraints=p.fixed_constraints)  # fmt: skip


# label -> (make(problem, info, V), the norm of V it needs in advance (None: V is None), note)
GRADUAL = {
    "MirrorProx": (_mp(MirrorProx, ()), "l2", "Alg. 1, V known (max realized V_* over seeds)"),
    "MirrorProx V=4F2T": (_mp(MirrorProx, ()), None, "Alg. 1, worst-case V = 4 F^2 T (V unknown)"),
    "YuNeelyWei": (lambda p, info, V: YuNeelyWei.from_theory(info), None, "drift-plus-penalty OGD"),
    "OGD": (lambda p, info, V: OGD.from_theory(info), None, "ignores the constraints"),
}  # fmt: skip
SIMPLEX = {
    "SimplexMirrorProx": (_mp(SimplexMirrorProx, ("linf",)), "linf", "Alg. 2 (entropic, nu = 1/T), V_inf known"),
    "MirrorProx": (_mp(MirrorProx, ("l2",)), "l2", "Alg. 1, Euclidean geometry on the simplex, V_2 known"),
    "Hedge": (lambda p, info, V: Hedge.from_theory(info, grad_bound=1.0), None, "entropic, no constraints"),
    "OGD": (lambda p, info, V: OGD.from_theory(info), None, "Euclidean, no constraints"),
    "YuNeelyWei": (lambda p, info, V: YuNeelyWei.from_theory(info), None, "drift-plus-penalty OGD"),
    "COLDQ": (lambda p, info, V: COLDQ.from_theory(info, solver="affine"), None,
              "paper 003 (Cor. 1 parameters), exact hinge prox of the affine budget"),
}  # fmt: skip
_COLDQ_ON_BALL = ("not run: COLDQ's exact per-round hinge prox handles a quadratic constraint only over a Box "
                  "(paper 003 solver), and this problem has a Euclidean ball")  # fmt: skip


def _variation(problem, episode, env_key, T: int, norm: str):
    """The realized gradual variation of one run, in ``norm``."""
    if isinstance(problem, DriftingQuadratic):  # l2 only
        return problem.gradient_variation(episode, env_key, T)
    return problem.gradient_variation(episode, env_key, T, norm)


def _known_variation(problem, T: int, seeds: int, norm: str) -> tuple[float, list[float]]:
    """The largest realized gradual variation over seeds ``0..seeds-1`` (an upper bound for each run)."""
    values = [float(v) for v in per_run(_variation, problem, T, range(seeds), norm)]
    return max(values), values


@eqx.filter_jit
def _initial_queue(learner, info):
    return learner.init(info, jax.random.PRNGKey(0)).queue


def _lemma55_gap(learner, info, traj, i) -> float | None:
    """``max_k sum_t g_k(x_t) - (Q_k(T+1) - Q_k(1)) / gamma`` (<= 0 by Lemma 5.5), for mirror-prox runs."""
    if not isinstance(learner, MirrorProx | SimplexMirrorProx) or info.num_constraints == 0:
        return None
    q1, qT = np.asarray(_initial_queue(learner, info)), np.asarray(traj.diagnostics["queue"][i, -1])
    return float(np.max(np.asarray(traj.constraints[i]).sum(axis=0) - (qT - q1) / float(learner.gamma)))


def _cell(ctx, label, method, problem, T) -> dict[str, np.ndarray]:
    """Per-seed final regret, signed violation, wall time and Lemma 5.5 gap of one (method, problem, T)."""
    make, norm, _ = method
    info, V, realized = ProblemInfo.of(problem, T), None, []
    if norm is not None:
        V, realized = _known_variation(problem, T, ctx.seeds, norm)
    learner = make(problem, info, V)
    config = {"learner": learner, "problem": problem, "T": T}

    def compute(missing):
        traj, seconds = play(learner, problem, T, missing, chunk_size=max(len(missing), 1))
        return {s: (round_columns(traj, i) | {"comparator_loss": np.asarray(traj.comparator_loss[i])},
                    {"seed": s, "wall_seconds": seconds * T, "V_realized": realized[s] if realized else None,
                     "lemma55_gap": _lemma55_gap(learner, info, traj, i)}) for i, s in enumerate(missing)}  # fmt: skip

    runs = ctx.cells(label, {s: {**config, "seed": s} for s in range(ctx.seeds)}, compute).values()
    g = [np.stack([v for k, v in c.items() if k.startswith("g") and k[1:].isdigit()], axis=1) for c, _ in runs]
    return {
        "regret": np.asarray([float(np.sum(c["loss"] - c["comparator_loss"])) for c, _ in runs]),
        "violation": np.asarray([float(np.max(gs.sum(axis=0))) for gs in g]),
        "seconds": np.asarray([m["wall_seconds"] for _, m in runs]),
        "lemma55_gap": np.asarray([m["lemma55_gap"] for _, m in runs if m.get("lemma55_gap") is not None]),
    }


def _horizons(T: int, options) -> list[int]:
    n, ratio = options["horizons"], options["ratio"]
    grid = [T // ratio**k for k in range(n - 1, -1, -1)]
    if grid[0] < 3:
        raise ValueError(f"T = {T} is too small for {n} horizons of ratio {ratio} (the smallest must be >= 3)")
    return grid


def _fit(st, key, xs, values) -> None:
    """``st[key]``: the growth exponent of positive ``values`` against ``xs`` (left out when not fittable)."""
    fit = exponent(xs, values)
    st.update({} if fit is None else {key: {"mean": fit[0], "std": fit[1]}})


def _rv(st, cells, names) -> list[float]:
    """``st``'s regret and violation of each cell of ``names`` (key -> suffix); the mean regrets, in order."""
    for k, n in names.items():
        st[f"regret_{n}"], st[f"violation_{n}"] = mean_std(cells[k]["regret"]), mean_std(cells[k]["violation"])
    return [st[f"regret_{n}"]["mean"] for n in names.values()]


def _run_all(ctx, methods, spec, stats, hidden, figures):
    """Every selected method on every cell of ``spec`` (key -> (problem, T)); ``stats(cells)`` is
    its summary entry; ``figures`` are ``(suffix, [(panel, keys, metric)], kwargs)``; ``hidden`` not drawn."""
    summary, curves = {}, [{} for _ in figures]
    for algo in select([Algorithm(k, None, v[2]) for k, v in methods.items()], ctx.options["algorithms"]):
        cells = {key: _cell(ctx, algo.label, methods[algo.label], *cell) for key, cell in spec.items()}
        gaps, entry = np.concatenate([c["lemma55_gap"] for c in cells.values()]), stats(cells)
        entry.update({"lemma55_max_gap": {"mean": float(np.max(gaps)), "std": 0.0}} if gaps.size else {})
        entry["wall_seconds_per_run"] = float(np.mean(np.concatenate([c["seconds"] for c in cells.values()])))
        summary[algo.label] = {**entry, "note": algo.note}
        if algo.label not in hidden:
            for c, (_, panels, _) in zip(curves, figures, strict=True):
                c[algo.label] = {p: np.stack([cells[k][m] for k in keys], axis=1) for p, keys, m in panels}
    return Outcome(summary, [Figure(c, f[0], kwargs=f[2]) for c, f in zip(curves, figures, strict=True)])


def _gradual(exp, ctx) -> Outcome:
    horizons, o, seeds = _horizons(ctx.T, ctx.options), ctx.options, ctx.seeds
    T_v, drifts, regimes = horizons[len(horizons) // 2], o["drifts"], (("static", 0.0), ("iid", 1.0))
    mean_V = {d: float(np.mean(_known_variation(DriftingQuadratic(5, d), T_v, seeds, "l2")[1])) for d in drifts}
    spec = {(r, h): (DriftingQuadratic(5, drift), h) for r, drift in regimes for h in horizons}
    spec.update({("V", d): (DriftingQuadratic(5, d), T_v) for d in drifts})

    def stats(cells):
        st = {f"V_drift{d:g}_T{T_v}": {"mean": mean_V[d], "std": 0.0} for d in drifts}
        for r, _ in regimes:
            regrets = _rv(st, cells, {(r, h): f"{r}_T{h}" for h in horizons})
            st[f"violation_{r}_first"] = st[f"violation_{r}_T{horizons[0]}"]
            st[f"violation_{r}_last"] = st[f"violation_{r}_T{horizons[-1]}"]
            _fit(st, f"regret_exponent_T_{r}", horizons, regrets)
        regrets = dict(zip(drifts, _rv(st, cells, {("V", d): f"drift{d:g}_T{T_v}" for d in drifts}), strict=True))
        above = [d for d in drifts if mean_V[d] > 1.0]  # V_* > L_f^2 = 1: the sqrt(V_*) regime
        _fit(st, "regret_exponent_V", [mean_V[d] for d in above], [regrets[d] for d in above])
        return st

    names = (("static", "static (V* = O(1))"), ("iid", "i.i.d. (V* ~ T)"))
    panels_T = [(f"{w}, {n}", [(r, h) for h in horizons], w) for w in ("regret", "violation") for r, n in names]
    panels_V = [(f"{w} at T = {T_v}", [("V", d) for d in drifts], w) for w in ("regret", "violation")]
    title_T = f"{exp.title} (paper {exp.paper}; d = 5, {seeds} seeds)"
    title_V = f"Regret and violation against the gradual variation V* (T = {T_v}, {seeds} seeds)"
    return _run_all(ctx, GRADUAL, spec, stats, ("OGD", "MirrorProx V=4F2T"), [
        ("", panels_T, {"title": title_T, "x": np.log10(horizons), "xlabel": "log10 T"}),
        ("-V", panels_V, {"title": title_V, "x": np.log10([mean_V[d] for d in drifts]),
                          "xlabel": "log10 V* (mean realized)"}),
    ])  # fmt: skip


def _simplex(exp, ctx) -> Outcome:
    horizons, o = _horizons(ctx.T, ctx.options), ctx.options
    T_d, dim, dims = horizons[len(horizons) // 2], o["dim"], sorted(set(o["dims"]))
    if len(dims) < 3:
        raise ValueError(f"option dims needs at least three dimensions >= 2, got {dims}")
    spec = {("T", h): (DriftingAllocation(dim, 0.0), h) for h in horizons}
    spec.update({("d", d): (DriftingAllocation(d, 0.0), T_d) for d in dims})

    def stats(cells):
        st = {}
        regrets = _rv(st, cells, {("T", h): f"T{h}" for h in horizons})
        for end, h in (("first", horizons[0]), ("last", horizons[-1])):
            st[f"violation_over_log_Td_{end}"] = {"mean": st[f"violation_T{h}"]["mean"] / math.log(h * dim), "std": 0.0}
        _fit(st, "regret_exponent_T", horizons, regrets)
        _fit(st, "regret_exponent_d", dims, _rv(st, cells, {("d", d): f"d{d}_T{T_d}" for d in dims}))
        return st

    panels_T = [(f"{w} (d = {dim})", [("T", h) for h in horizons], w) for w in ("regret", "violation")]
    panels_d = [(f"{w} at T = {T_d}", [("d", d) for d in dims], w) for w in ("regret", "violation")]
    title_T = f"{exp.title} (paper {exp.paper}; static costs, {ctx.seeds} seeds)"
    title_d = f"Regret and violation against the dimension (T = {T_d}, static costs, {ctx.seeds} seeds)"
    return _run_all(ctx, SIMPLEX, spec, stats, ("Hedge", "OGD"), [
        ("", panels_T, {"title": title_T, "x": np.log10(horizons), "xlabel": "log10 T"}),
        ("-d", panels_d, {"title": title_d, "x": np.log2(dims), "xlabel": "log2 d"}),
    ])  # fmt: skip


def _slope(label: str, key: str, bound: float, what: str):
    """Claim check: ``label``'s fitted exponent ``key`` of the regret against ``what`` is at most ``bound``."""

    def check(summary):
        e = summary[label][key]["mean"]
        return f"fitted exponent of regret vs {what}: {e:.3f}", e <= bound

    return check


def _claims_gradual() -> tuple[Claim, ...]:
    mp, dpp = "MirrorProx", "YuNeelyWei"

    def bounded(summary):
        parts, holds = [], True
        for regime in ("static", "iid"):
            first, last = (summary[mp][f"violation_{regime}_{e}"]["mean"] for e in ("first", "last"))
            parts.append(f"{regime} {first:.3g} -> {last:.3g}")
            holds = holds and last <= max(first, 0.0) + 1.0
        return "max_k sum_t g_k, smallest -> largest T: " + ", ".join(parts), holds

    def versus_dpp(summary):
        ours, theirs = ([summary[k][f"violation_{r}_last"]["mean"] for r in ("static", "iid")] for k in (mp, dpp))
        text = f"largest T, static / i.i.d.: MirrorProx {ours[0]:.3g} / {ours[1]:.3g}, "
        text += f"YuNeelyWei {theirs[0]:.3g} / {theirs[1]:.3g}"
        return text, all(a < b for a, b in zip(ours, theirs, strict=True))

    return (
        Claim("Thm 4.1: regret O(max{sqrt(V_*), L_f}) is flat in T when V_* = O(1) (exponent <= 0.2)",
              _slope(mp, "regret_exponent_T_static", 0.2, "T (static losses)")),
        Claim("Thm 4.1: with V_* linear in T, regret grows about like sqrt(T) or slower (exponent <= 0.6)",
              _slope(mp, "regret_exponent_T_iid", 0.6, "T (i.i.d. losses)")),
        Claim("Thm 4.1: at a fixed T, regret grows like sqrt(V_*) or slower (exponent <= 0.6)",
              _slope(mp, "regret_exponent_V", 0.6, "V_* at fixed T")),
        Claim("Thm 4.2: the signed violation max_k sum_t g_k(x_t) is O(1): it does not grow with T", bounded),
        Claim("Lemma 5.5: sum_t g_k(x_t) <= (Q_k(T+1) - Q_k(1)) / gamma exactly, on every run", _lemma55((mp,))),
        Claim("Table 1: O(1) violation, below drift-plus-penalty's O(sqrt(T)) at the largest T", versus_dpp),
    )  # fmt: skip


def _lemma55(labels):
    def check(summary):
        gap = max(summary[k]["lemma55_max_gap"]["mean"] for k in labels if k in summary)
        return f"max over runs of sum_t g_k - (Q_k(T+1) - Q_k(1)) / gamma: {gap:.2e}", gap <= 1e-8

    return check


def _claims_simplex() -> tuple[Claim, ...]:
    smp, emp = "SimplexMirrorProx", "MirrorProx"

    def violation_log(summary):
        first, last = (summary[smp][f"violation_over_log_Td_{e}"]["mean"] for e in ("first", "last"))
        return f"max_k sum_t g_k / log(T d): {first:.3g} (smallest T) -> {last:.3g} (largest T)", last <= first + 0.05

    def dimension(summary):
        a, b = summary[smp]["regret_exponent_d"]["mean"], summary[emp]["regret_exponent_d"]["mean"]
        text = f"fitted exponent of regret vs d: SimplexMirrorProx {a:.3f}, Euclidean MirrorProx {b:.3f}"
        return text, a <= 0.5 and a < b

    return (
        Claim("Thm 6.1: with V_inf = O(1), Alg. 2's regret grows only polylogarithmically in T",
              _slope(smp, "regret_exponent_T", 0.25, "T (static costs, V_inf = O(1))")),
        Claim("Thm 6.2: Alg. 2's violation is O(log(T d)): violation / log(T d) does not grow", violation_log),
        Claim("Thm 6.1: d enters Alg. 2 through log d, the Euclidean mirror prox polynomially", dimension),
        Claim("Lemma 5.5 holds exactly on every mirror-prox run", _lemma55((smp, emp))),
    )  # fmt: skip


_GRID = (
    Option("horizons", int, 4, "horizons in the T grid", low=3),
    Option("ratio", int, 4, "ratio of the grid", low=2),
)
GRADUAL_VARIATION = register(Experiment(
    name="gradual-variation", paper="004 Thms 4.1-4.2", study=_gradual, claims=_claims_gradual(),
    title="Mirror prox under gradual variation: regret vs T and V*, O(1) violation", default_T=32000, default_seeds=5,
    algorithms=(*(Algorithm(k, None, v[2]) for k, v in GRADUAL.items()), Algorithm("COLDQ", None, _COLDQ_ON_BALL)),
    options=(ALGORITHMS, *_GRID, Option("drifts", list, [0.0, 1e-3, 1e-2, 1e-1, 1.0], "the V-study's drift grid",
                                        low=0.0, high=1.0, item=float)),
))  # fmt: skip
SIMPLEX_MIRROR_PROX = register(Experiment(
    name="simplex-mirror-prox", paper="004 Thms 6.1-6.2", title="Simplex mirror prox: log factors in T and d",
    study=_simplex, claims=_claims_simplex(), default_T=32000, default_seeds=5,
    algorithms=tuple(Algorithm(k, None, v[2]) for k, v in SIMPLEX.items()),
    options=(ALGORITHMS, *_GRID, Option("dim", int, 16, "the T-study's dimension", low=2),
             Option("dims", list, [4, 16, 64, 256], "the d grid", low=2, item=int)),
))  # fmt: skip

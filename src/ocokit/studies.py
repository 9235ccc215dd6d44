"""The two studies an experiment declares: [`Comparison`][ocokit.experiments.Comparison] (algorithms x seeds on one
problem) and
[`Sweep`][ocokit.experiments.Sweep] (algorithms x seeds over a grid of cells: a horizon, a variation, a dimension, a
window).

A study is ``study(experiment, ctx) -> Outcome``: it asks the store
([`ocokit.store.Context.cells`][ocokit.experiments.Context.cells]) for the
runs it needs, which computes the missing ones on the executor, and turns the stored records into the summary
and the figures. Every seed ``s`` plays the same rounds whatever the algorithm (common random numbers).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ocokit import _checks, metrics
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine import Trajectory, comparators, split_key, stack, sweep, with_comparators
from ocokit.harness import Algorithm, Experiment, Figure, Outcome, Summary, select
from ocokit.papers import cite
from ocokit.problems._base import round_at
from ocokit.store import Context

Timing = dict[str, float]
"""What `play` measured, stored beside every run: ``wall_seconds_per_round`` (of one run,
compiling excluded) and ``compile_seconds`` (tracing and compiling the run's programs; 0 when all were compiled)."""


COMPILE_EVENTS = ("/jax/core/compile/",)
"""JAX's duration events of tracing, lowering and compiling a program (public ``jax.monitoring`` names)."""


def play(learner: AbstractLearner, problem: Any, T: int, seeds: Sequence[int], **kwargs) -> tuple[Trajectory, Timing]:
    """``sweep(learner, problem, T, seeds, **kwargs)`` and its `Timing`: the wall
    time per round of one run with the time spent compiling taken out, and that compile time apart."""
    compiling: list[float] = []

    def listen(event: str, seconds: float, **_: Any) -> None:
        if event.startswith(COMPILE_EVENTS):
            compiling.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        tic = time.perf_counter()
        traj = sweep(learner, problem, T, list(seeds), **kwargs)
        traj.loss.block_until_ready()
        wall = time.perf_counter() - tic
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    compile_seconds = min(sum(compiling), wall)
    return traj, {"wall_seconds_per_round": (wall - compile_seconds) / (T * len(seeds)),
                  "compile_seconds": compile_seconds}  # fmt: skip


def timing(metas: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """An algorithm's timing in a summary, from its stored runs' `Timing`s: the mean
    ``wall_seconds_per_round`` (compiling excluded) and the longest ``compile_seconds`` of a unit (runs stored by
    an earlier version have none)."""
    out = {"wall_seconds_per_round": float(np.mean([m["wall_seconds_per_round"] for m in metas]))}
    compiled = [m["compile_seconds"] for m in metas if "compile_seconds" in m]
    return out | ({"compile_seconds": float(max(compiled))} if compiled else {})


def round_columns(traj: Trajectory, i: int) -> dict[str, np.ndarray]:
    """Run ``i``'s per-round columns: ``t``, ``loss``, each constraint ``g1..gN`` and the scalar diagnostics."""
    # indexed on the host: indexing a device array would compile one small program per shape
    T, cons = traj.loss.shape[-1], np.asarray(traj.constraints)[i]
    cols = {"t": np.arange(1, T + 1), "loss": np.asarray(traj.loss)[i]}
    cols.update({f"g{n + 1}": cons[:, n] for n in range(cons.shape[1])})
    diag = {f"diag_{k}": np.asarray(v)[i] for k, v in traj.diagnostics.items()}
    return cols | {k: v for k, v in diag.items() if v.ndim == 1}


def per_run(fn: Callable[..., Any], problem: Any, T: int, seeds: Sequence[int], *args: Any) -> np.ndarray:
    """``fn(problem, episode, env_key, T, *args)`` on the environment of each of ``seeds`` (its first T rounds).

    Seed ``s``'s environment is the one a run of seed ``s`` plays, learner aside (an offline quantity: an optimum,
    a variation); one compiled computation vmapped over the seeds, ``args`` other than arrays static.
    """
    keys = jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])
    return np.asarray(_per_run(fn, problem, T, keys, *args))


@eqx.filter_jit
def _per_run(fn, problem, T, keys, *args):
    def one(key):
        env_key = split_key(key)[0]
        return fn(problem, problem.episode(env_key, T), env_key, T, *args)

    return jax.vmap(one)(keys)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Comparison:
    """The algorithms x seeds study: every algorithm on ``make_problem(T, data_dir, options)``, S seeds.

    Each seed's comparators are computed once, for all the algorithms ([`ocokit.comparators`][ocokit.comparators]), when
    the first
    unit that lacks them asks; a unit computed in another process (Ray) computes its own seeds'.

    Args:
        make_problem: the problem, from the horizon, the data folder and the parsed options.
        panels: metrics of `ROUND_METRICS` drawn, one panel each; ``logy``: log axes.
        make_algorithms: ``(ctx, problem) -> algorithms`` when they depend on options (default: the
            experiment's, filtered by the option ``algorithms`` if declared).
        describe: ``problem -> dict`` written to ``summary.json`` under ``"problem"``.
        chunk_size: seeds vmapped at once (a unit of work), for the learners and the comparators.
    """

    make_problem: Callable[[int, Any, Mapping[str, Any]], Any]
    panels: tuple[str, ...] = ("cumulative_loss", "hard_violation")
    logy: tuple[str, ...] = ()
    make_algorithms: Callable[[Context, Any], Sequence[Algorithm]] | None = None
    describe: Callable[[Any], dict[str, Any]] = lambda problem: {"class": type(problem).__name__}
    chunk_size: int = 10

    def __post_init__(self):
        unknown = set(self.panels) - set(metrics.ROUND_METRICS)
        if unknown:
            raise ValueError(f"panels {sorted(unknown)} are not metrics; choose from {sorted(metrics.ROUND_METRICS)}")
        _checks.positive_int("chunk_size", self.chunk_size)

    def __call__(self, exp: Experiment, ctx: Context) -> Outcome:
        T, problem = ctx.T, self.make_problem(ctx.T, ctx.data_dir, ctx.options)
        info = ProblemInfo.of(problem, T)
        algos = self.make_algorithms(ctx, problem) if self.make_algorithms else exp.algorithms
        plan = [(algo, algo.make(info)) for algo in select(algos, ctx.options.get("algorithms")) if algo.make]
        configs = {algo.label: {s: {"algorithm": algo.label, "learner": learner, "problem": problem,
                                    "options": ctx.raw, "T": T, "seed": s} for s in range(ctx.seeds)}
                   for algo, learner in plan}  # fmt: skip
        env = SeedComparators(problem, T, self.chunk_size)  # for every algorithm
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: Summary = {}
        for algo, learner in plan:

            def compute(missing, learner=learner):
                traj, meta = play(learner, problem, T, missing, chunk_size=self.chunk_size, comparators=False)
                traj = with_comparators(traj, env(missing))
                per_round = metrics.available_metrics(traj)
                return {s: (round_columns(traj, i) | {k: v[i] for k, v in per_round.items()}, meta)
                        for i, s in enumerate(missing)}  # fmt: skip

            cells = ctx.cells(algo.label, configs[algo.label], compute, self.chunk_size)
            records = list(cells.values())
            names = [k for k in metrics.ROUND_METRICS if all(k in r[0] for r in records)]  # runs of any version
            curves[algo.label] = {k: np.stack([r[0][k] for r in records]) for k in names}
            summary[algo.label] = {k: metrics.mean_std(v[:, -1]) for k, v in curves[algo.label].items()}
            summary[algo.label].update(timing([meta for _, meta in records]), seeds=len(records), note=algo.note)
        title = f"{exp.title} ({cite(exp.paper)}, T = {T})"
        figure = Figure(curves, panels=self.panels, kwargs={"title": title, "logy": self.logy})
        return Outcome(summary, [figure], {"problem": self.describe(problem)})


class SeedComparators:
    """Each seed's comparator losses ([`ocokit.comparators`][ocokit.comparators]), computed once for all the algorithms
    of a
    [`Comparison`][ocokit.experiments.Comparison], in chunks of ``chunk_size`` seeds, and kept on the host."""

    def __init__(self, problem: Any, T: int, chunk_size: int):
        self.problem, self.T, self.chunk_size = problem, T, chunk_size
        self.values: dict[int, dict[str, np.ndarray]] = {}

    def __call__(self, seeds: Sequence[int]) -> dict[str, np.ndarray]:
        """``{name: (len(seeds), T)}``: the comparators of ``seeds``, stacked in their order."""
        todo = [s for s in seeds if s not in self.values]
        if todo:
            fresh = comparators(self.problem, self.T, todo, chunk_size=self.chunk_size)
            fresh = {k: np.asarray(v) for k, v in fresh.items()}
            self.values.update({s: {k: v[i] for k, v in fresh.items()} for i, s in enumerate(todo)})
        return {k: np.stack([self.values[s][k] for s in seeds]) for k in self.values[seeds[0]]}


@dataclasses.dataclass(frozen=True)
class Cell:
    """One point of a grid: ``problem`` played for ``T`` rounds, at ``x`` on the axis named ``axis``."""

    axis: str
    x: float
    problem: Any
    T: int


@dataclasses.dataclass(frozen=True)
class Runs:
    """One algorithm's runs of one cell, on the host, one row per seed: what a [`Sweep`][ocokit.experiments.Sweep]'s
    ``measure`` reads.

    ``loss`` ``(S, T)``, ``constraints`` ``(S, T, N)``, ``diagnostics`` ``{name: (S, T, ...)}``,
    ``comparator_loss`` ``(S, T)`` (the loss of the best fixed point of these T rounds) and ``optimum_loss``
    ``(S, T)`` (of each round's optimum; ``None`` when the sweep computes no comparators, or the problem defines no
    such comparator, or for ``optimum_loss`` on a ``prefix`` sweep), ``first_bad_round`` ``(S,)`` (-1: every
    quantity finite).
    """

    label: str
    learner: AbstractLearner
    cell: Cell
    seeds: np.ndarray
    loss: np.ndarray
    constraints: np.ndarray
    diagnostics: dict[str, np.ndarray]
    comparator_loss: np.ndarray | None
    optimum_loss: np.ndarray | None
    first_bad_round: np.ndarray

    def regret(self) -> np.ndarray:
        """Static regret at the horizon, ``sum_t f_t(x_t) - f_t(x*)``, per seed."""
        return np.sum(self.loss - self.comparator_loss, axis=-1)

    def violation(self) -> np.ndarray:
        """The signed cumulative violation ``max_k sum_t g_k(x_t)``, per seed."""
        return np.max(np.sum(self.constraints, axis=1), axis=-1)


def regret_and_violation(runs: Runs) -> dict[str, np.ndarray]:
    """The default measure: static regret and (with constraints) signed cumulative violation at the horizon."""
    return {"regret": runs.regret()} | ({"violation": runs.violation()} if runs.constraints.shape[-1] else {})


def exponent_at_most(label: str, bound: float, *fits: str, tolerance: float = 0.0) -> Callable[[Summary], Any]:
    """Claim check: each fit ``fits`` (summary keys, e.g. ``"regret_exponent_T"``) of ``label`` is at most ``bound``
    (plus ``tolerance``: a theorem's exponent is an upper bound, the fit a rough slope). A fit left out of the
    summary (too few cells) raises ``KeyError``: the claim is "not measured"."""

    def check(summary: Summary) -> tuple[str, bool]:
        values = [summary[label][fit] for fit in fits]
        text = "; ".join(f"fitted exponent {v['mean']:.3f} (se {v['se']:.3f}) vs {bound:.3f}" for v in values)
        return text, all(v["mean"] <= bound + tolerance for v in values)

    return check


def exponent_below(smaller: str, larger: str, *fits: str) -> Callable[[Summary], Any]:
    """Claim check: on each fit ``fits``, ``smaller``'s fitted exponent is below ``larger``'s."""

    def check(summary: Summary) -> tuple[str, bool]:
        pairs = [(summary[smaller][fit]["mean"], summary[larger][fit]["mean"]) for fit in fits]
        return "; ".join(f"{a:.3f} vs {b:.3f}" for a, b in pairs), all(a < b for a, b in pairs)

    return check


@dataclasses.dataclass(frozen=True)
class Fit:
    """The growth exponent of a measure's ``stat`` (over seeds) against the cells' ``x`` on ``axis``.

    Log-log ([`ocokit.metrics.growth_exponent`][ocokit.metrics.growth_exponent]) or, ``log=False``, linear
    ([`ocokit.metrics.linear_fit`][ocokit.metrics.linear_fit]),
    over the cells with ``x > above``; ``entry[f"{measure}_exponent_{axis}"]`` (``_slope_`` when linear) is
    ``{"mean": slope, "se": its standard error, "r2": R^2}``, left out when fewer than three cells qualify or a
    log-log fit meets a value <= 0 (a claim reading it then reports "not measured").
    """

    measure: str
    axis: str
    stat: str = "mean"
    log: bool = True
    above: float = -math.inf

    @property
    def key(self) -> str:
        """The summary key of the fit."""
        return f"{self.measure}_{'exponent' if self.log else 'slope'}_{self.axis}"

    def __call__(self, entry: Mapping[str, Any]) -> dict[str, dict[str, float]]:
        stats = entry.get(self.measure, {}).get(self.axis)
        if stats is None:
            return {}
        xs, ys = np.asarray(stats["x"], float), np.asarray(stats[self.stat], float)
        xs, ys = xs[xs > self.above], ys[xs > self.above]
        if xs.size < 3 or not np.all(np.isfinite(ys)) or (self.log and np.any(ys <= 0)):
            return {}
        slope, se, r2 = metrics.linear_fit(np.log(xs), np.log(ys)) if self.log else metrics.linear_fit(xs, ys)
        return {self.key: {"mean": slope, "se": se, "r2": r2}}


@dataclasses.dataclass(frozen=True)
class Plot:
    """A figure ``NAME{suffix}.png``: each panel ``(title, measure, axis)`` draws the measure's value per seed (a
    band over seeds) against ``x(cells' x)`` on that axis, one curve per algorithm not in ``hide`` (a fourth entry,
    a tuple of labels, draws only those).

    ``title`` and the panel titles are formatted with ``exp``, ``paper`` (its paper by name,
    [`cite`][ocokit.papers.cite]), ``seeds``, ``T`` (the axis's first cell's horizon) and ``o`` (the parsed
    options); ``kwargs`` go to `band_figure`.
    """

    suffix: str
    title: str
    panels: tuple[tuple, ...]
    xlabel: str = "log10 T"
    x: Callable[[np.ndarray], np.ndarray] = np.log10
    hide: tuple[str, ...] = ()
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sweep:
    """The study over a grid: every algorithm plays every cell of ``grid(ctx)`` on its seeds, declared as data.

    Each (algorithm, cell) is one stored run (a row per seed) holding the columns of ``measure(runs)`` (default
    `regret_and_violation`), computed where the run is played. The summary entry of an algorithm holds, per
    measure and axis, the cells' ``x`` and the per-cell statistics over seeds of the finite values
    ([`ocokit.metrics.quartiles`][ocokit.metrics.quartiles]: mean, std, median, quartiles; ``max``; the counts
    ``runs`` and ``finite``), each [`Fit`][ocokit.experiments.Fit], the number of seeds and the wall time per
    round. Claims read that entry; each [`Plot`][ocokit.experiments.Plot] draws panels from it.

    Args:
        grid: the cells, from the run's context (sizes and options).
        measure: ``runs -> {name: (S,) values}`` ([`Runs`][ocokit.experiments.Runs]).
        learner: ``(algorithm, cell, ctx) -> learner``, ``None`` to leave the cell out for that algorithm
            (default: ``algorithm.make(ProblemInfo.of(cell.problem, cell.T))``).
        seeds: ``(algorithm, cell, ctx) -> seed ids`` (default ``range(ctx.seeds)``).
        fits, plots: the exponent fits of each entry, and the figures.
        prefix: the cells of an axis share one run of its largest horizon: their learners stacked (or one learner
            when they are equal) play it on every cell's seeds, and cell T_b reads its seeds' first T_b rounds,
            exactly a run of T_b rounds (learners never look ahead; round t's data depends only on (seed, t)).
            One compilation per axis instead of one per cell.
        comparators: compute each cell's best fixed point in hindsight (``Runs.comparator_loss``).
        extra: ``(exp, ctx) -> summary entries`` the experiment adds (runs outside the grid).
        chunk_size, throw: as in [`ocokit.sweep`][ocokit.sweep] (``throw=False``: non-finite runs are kept, marked by
            ``Runs.first_bad_round``).
    """

    grid: Callable[[Context], Sequence[Cell]]
    measure: Callable[[Runs], Mapping[str, np.ndarray]] = regret_and_violation
    learner: Callable[[Algorithm, Cell, Context], AbstractLearner | None] | None = None
    seeds: Callable[[Algorithm, Cell, Context], Sequence[int]] | None = None
    fits: tuple[Fit, ...] = ()
    plots: tuple[Plot, ...] = ()
    prefix: bool = False
    comparators: bool = True
    extra: Callable[[Experiment, Context], Summary] | None = None
    chunk_size: int = 64
    throw: bool = True

    def __call__(self, exp: Experiment, ctx: Context) -> Outcome:
        cells, summary, values = list(self.grid(ctx)), {}, {}
        axes = list(dict.fromkeys(c.axis for c in cells))
        for algo in select(exp.algorithms, ctx.options.get("algorithms")):
            entry, metas, seeds = {}, [], 0
            for axis in axes:
                plan = [(c, self._learner(algo, c, ctx)) for c in cells if c.axis == axis]
                plan = [(c, learner) for c, learner in plan if learner is not None]
                if not plan:
                    continue
                stored = self._play(ctx, algo, axis, plan)
                metas += [meta for _, meta in stored]
                seeds = max(seeds, *(len(c["seed"]) for c, _ in stored))
                for m in (k for k in stored[0][0] if k != "seed"):
                    per_cell = [metrics.quartiles(c[m]) | _counts(c[m]) for c, _ in stored]
                    entry.setdefault(m, {})[axis] = {"x": [c.x for c, _ in plan]} | {
                        k: [v[k] for v in per_cell] for k in per_cell[0]
                    }
                    values[algo.label, axis, m] = np.stack([c[m] for c, _ in stored], axis=1)  # (S, cells)
            if entry:
                for fit in self.fits:
                    entry.update(fit(entry))
                summary[algo.label] = entry | timing(metas) | {"seeds": seeds, "note": algo.note}
        figures = [self._figure(exp, ctx, cells, plot, values) for plot in self.plots]
        return Outcome(summary | (self.extra(exp, ctx) if self.extra else {}), figures)

    def _learner(self, algo: Algorithm, cell: Cell, ctx: Context) -> AbstractLearner | None:
        if self.learner is not None:
            return self.learner(algo, cell, ctx)
        return None if algo.make is None else algo.make(ProblemInfo.of(cell.problem, cell.T))

    def _play(self, ctx: Context, algo: Algorithm, axis: str, plan) -> list[tuple[dict, dict]]:
        """The stored run of each (cell, learner) of ``plan``, computing the missing ones (one unit per cell, or
        with ``prefix`` one unit per axis)."""
        ids = [[int(s) for s in (self.seeds(algo, c, ctx) if self.seeds else range(ctx.seeds))] for c, _ in plan]
        configs = {i: {"axis": axis, "x": cell.x, "learner": learner, "problem": cell.problem, "T": cell.T,
                       "seeds": ids[i]} for i, (cell, learner) in enumerate(plan)}  # fmt: skip

        def compute(missing):
            if self.prefix:
                return {i: r for i, r in self._prefix(algo.label, plan, ids).items() if i in missing}
            return {i: self._cell(algo.label, *plan[i], ids[i]) for i in missing}

        stored = ctx.cells(algo.label, configs, compute, None if self.prefix else 1)
        return [stored[i] for i in range(len(plan))]

    def _cell(self, label: str, cell: Cell, learner, seeds: list[int]) -> tuple[dict, dict]:
        traj, measured = play(learner, cell.problem, cell.T, seeds, chunk_size=self.chunk_size,
                             comparators=self.comparators, throw=self.throw)  # fmt: skip
        traj = jax.tree.map(np.asarray, traj)
        return self._record(Runs(label, learner, cell, np.asarray(seeds), traj.loss, traj.constraints,
                                 traj.diagnostics, traj.comparator_loss, traj.optimum_loss, traj.first_bad_round),
                            measured)  # fmt: skip

    def _prefix(self, label: str, plan, ids) -> dict[int, tuple[dict, dict]]:
        """Every cell of one axis from one run of its largest horizon (``prefix`` above)."""
        learners, problem = [learner for _, learner in plan], plan[0][0].problem
        T, seeds = max(c.T for c, _ in plan), sorted({s for seeds in ids for s in seeds})
        one = all(eqx.tree_equal(learner, learners[0]) is True for learner in learners)
        traj, measured = play(learners[0] if one else stack(learners), problem, T, seeds, chunk_size=self.chunk_size,
                             comparators=False, throw=self.throw, batched_learner=not one)  # fmt: skip
        traj = jax.tree.map(lambda a: np.asarray(a)[None] if one else np.asarray(a), traj)  # (B or 1, S, ...)
        best = None
        if self.comparators:  # (S, B, T): each prefix's best fixed point, every horizon in one computation
            best = per_run(_prefix_comparator_losses, problem, T, seeds, jnp.asarray([c.T for c, _ in plan]))
        done = {}
        for i, (cell, learner) in enumerate(plan):
            rows, b, Tb = np.searchsorted(seeds, ids[i]), 0 if one else i, cell.T
            cut = jax.tree.map(lambda a, rows=rows, b=b: a[b][rows], traj)
            runs = Runs(label, learner, cell, np.asarray(ids[i]), cut.loss[:, :Tb], cut.constraints[:, :Tb],
                        {k: v[:, :Tb] for k, v in cut.diagnostics.items()},
                        None if best is None else best[rows, i, :Tb], None, cut.first_bad_round)  # fmt: skip
            done[i] = self._record(runs, measured)
        return done

    def _record(self, runs: Runs, measured: Timing) -> tuple[dict, dict]:
        columns = {k: np.asarray(v, float) for k, v in self.measure(runs).items()}
        return {"seed": runs.seeds} | columns, measured

    def _figure(self, exp: Experiment, ctx: Context, cells: Sequence[Cell], plot: Plot, values) -> Figure:
        curves, drawn = {}, [[c for c in cells if c.axis == axis] for _, _, axis, *_ in plot.panels]
        first = next((on for on in drawn if on), [])
        for (title, measure, axis, *only), on in zip(plot.panels, drawn, strict=True):
            if not on:  # an axis not in this run's grid
                continue
            panel = title.format(exp=exp, paper=cite(exp.paper), seeds=ctx.seeds, T=on[0].T, o=ctx.options)
            for (label, a, m), v in values.items():
                if (a, m) == (axis, measure) and label not in plot.hide and (not only or label in only[0]):
                    curves.setdefault(label, {})[panel] = v
        title = plot.title.format(
            exp=exp, paper=cite(exp.paper), seeds=ctx.seeds, T=first[0].T if first else ctx.T, o=ctx.options
        )
        x = plot.x(np.asarray([c.x for c in first], float))
        return Figure(curves, plot.suffix, kwargs={"title": title, "xlabel": plot.xlabel, "x": x, **plot.kwargs})


def _counts(values: np.ndarray) -> dict[str, float | int]:
    """The largest finite value (nan if none), and the numbers of runs and of finite values."""
    finite = values[np.isfinite(values)]
    return {
        "max": float(finite.max()) if finite.size else math.nan,
        "runs": int(values.size),
        "finite": int(finite.size),
    }


def _prefix_comparator_losses(problem: Any, episode, env_key, T: int, Ts: jax.Array) -> jax.Array:
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

"""The experiment harness: an experiment is data; running, storing, resuming, plotting and claims live here.

An :class:`Experiment` declares its name, paper, typed :class:`Option` s, algorithms, claims and a study
``study(experiment, ctx) -> Outcome``: a :class:`Comparison` (algorithms x seeds, common random numbers, each
seed's comparators computed once for all algorithms) or a sweep over T, a problem parameter or a window (a
function of the paper module that asks ``ctx.cells`` for stored runs and fits :func:`exponent`). The harness
parses the options once, computes the missing runs in units on an executor (:mod:`ocokit.executors`: in
process, or on a Ray cluster), stores one Parquet file per run keyed by the content of its configuration
(:mod:`ocokit.results`) and skips stored ones, draws the figures, checks the claims and writes
``summary.json`` (with T, seeds, options, the data folder and the provenance: ``plot`` redraws from disk,
computing nothing). The paper modules of :mod:`ocokit.experiments` declare their experiments with it.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ocokit import _checks, metrics
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine import Trajectory, comparators, split_key, sweep, with_comparators
from ocokit.executors import AbstractExecutor, Local
from ocokit.fingerprints import describe_each, provenance
from ocokit.plotting import band_figure
from ocokit.results import (
    CorruptRunError,
    atomic_write_json,
    check_writable_folder,
    load_records,
    run_path,
    save_records,
)

Summary = dict[str, dict[str, Any]]
"""Per algorithm label: ``{metric: {"mean": float, "std": float}, "note": str, ...}``."""
Records = tuple[dict[str, np.ndarray], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Option:
    """A typed experiment option (``--option name=value``), checked once by the harness.

    ``kind`` is int, float, bool, str or list (of ``item``: int, float or str; ints also as ``a-b``);
    ``choices`` or the range ``[low, high]`` (``(low, high]`` with ``above=True``) restrict the values.
    """

    name: str
    kind: type
    default: Any
    help: str = ""
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    above: bool = False
    item: type = str

    def describe(self) -> str:
        """What a value must be, e.g. ``an integer in [0, 8759]``."""
        kind = self.item if self.kind is list else self.kind
        many = self.kind is list
        noun = {int: "integer", float: "number", bool: "true or false", str: "string"}[kind]
        noun = f"{noun}s" if many else f"{'an' if kind is int else 'a'} {noun}" if kind is not bool else noun
        if self.choices:
            noun = f"{'values from' if many else 'one of'} {list(self.choices)}"
        elif self.low is not None and self.high is not None:
            noun += f" in {'(' if self.above else '['}{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            noun += f" {'>' if self.above else '>='} {self.low:g}"
        return f"a comma-separated list of {noun}" if many else noun

    def parse(self, text: str) -> Any:
        """The value of ``text``; ``ValueError`` naming the option, what it accepts and what it got."""
        if self.kind is not list:
            return self._one(text, self.kind, text)
        if self.choices and text.strip() == "all":
            return list(self.choices)
        values = []
        for part in (p.strip() for p in text.split(",") if p.strip()):
            if self.item is int and "-" in part[1:]:
                lo, hi = (self._one(v, int, text) for v in part.split("-", 1))
                values.extend(range(lo, hi + 1))
            else:
                values.append(self._one(part, self.item, text))
        if not values:
            raise ValueError(f"option {self.name} must be {self.describe()}, got {text!r}")
        return values

    def _one(self, part: str, kind: type, text: str) -> Any:
        value = _convert(kind, part)
        lo, hi = self.low, self.high
        ok = value is not None and (not self.choices or value in self.choices)
        ok = ok and (lo is None or (value > lo if self.above else value >= lo)) and (hi is None or value <= hi)
        if not ok:
            raise ValueError(f"option {self.name} must be {self.describe()}, got {text!r}")
        return value


def _convert(kind: type, text: str) -> Any:
    if kind is bool:
        return {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(text.lower())
    try:
        return kind(text)
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A compared algorithm: legend label, factory from the problem's info (``None``: not run) and a note."""

    label: str
    make: Callable[[ProblemInfo], AbstractLearner] | None
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Claim:
    """A paper's claim as a checkable statement: ``check(summary) -> (measured text, holds)``."""

    statement: str
    check: Callable[[Summary], tuple[str, bool]]


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """The outcome of one claim on one run of an experiment."""

    statement: str
    measured: str
    holds: bool


@dataclasses.dataclass
class Report:
    """What running an experiment produced: the summary, the claims' outcomes and the figure."""

    experiment: str
    summary: Summary
    claims: list[ClaimResult]
    figure: Path | None
    skipped_runs: int = 0
    new_runs: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON written to ``summary.json``."""
        claims, figure = [dataclasses.asdict(c) for c in self.claims], self.figure and self.figure.name
        return {"experiment": self.experiment, "algorithms": self.summary, "claims": claims, "figure": figure}


class Progress:
    """Progress hooks (the CLI passes a rich progress bar; this default is silent)."""

    def start(self, label: str, total: int) -> None:
        """A task of ``total`` steps begins."""

    def advance(self, label: str, steps: int = 1) -> None:
        """``steps`` more steps of the task are done."""


@dataclasses.dataclass(frozen=True)
class Figure:
    """A figure to draw: ``curves[label][panel]`` of shape (runs, points), saved as ``NAME{suffix}.png``."""

    curves: Mapping[str, Mapping[str, np.ndarray]]
    suffix: str = ""
    panels: Sequence[str] | None = None
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Outcome:
    """What a study returns: the summary, the figures (the first drawn is the report's) and extra JSON."""

    summary: Summary
    figures: Sequence[Figure] = ()
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Context:
    """One run of a study: sizes, parsed options, and the store of runs (``compute=False``: read only)."""

    experiment: Experiment
    T: int
    seeds: int
    out: Path
    data_dir: Path | None
    options: dict[str, Any]
    raw: dict[str, str]
    progress: Progress
    compute: bool = True
    executor: AbstractExecutor = dataclasses.field(default_factory=Local)
    reuse_across_versions: bool = False
    new: int = 0
    skipped: int = 0

    def path(self, label: str, config: Mapping[str, Any]) -> Path:
        """Where the run of ``config`` under ``label`` is stored, or will be (:func:`ocokit.results.run_path`)."""
        return run_path(self.out, self.experiment.name, label, config, reuse_across_versions=self.reuse_across_versions)

    def cells(
        self,
        label: str,
        configs: Mapping[Any, dict],
        compute: Callable[[list], Mapping[Any, Records]],
        unit: int | None = None,
        paths: Mapping[Any, Path] | None = None,
    ) -> dict[Any, Records]:
        """The stored runs of ``configs`` (key -> configuration), running the missing ones with ``compute``.

        The missing keys are split into units of ``unit`` keys (``None``: one unit), each computed by
        ``compute(keys) -> {key: (columns, metadata)}`` on the executor; each unit's runs are stored as it
        completes, so an interrupted command keeps every finished unit. A stored run is read back and validated
        before it counts as done: a file that cannot be read whole (truncated, damaged, short of rows), or that holds
        another run than its name promises (its stored key, T, seed or algorithm: a warning naming it), counts as
        missing and is recomputed, its file replaced atomically (read only, ``compute=False``: an error naming it).
        A run computed now is returned as its file reads back (what :func:`save_records` returns), without
        reading the file. ``paths`` (key -> :meth:`path`) spares computing the paths again when the caller has.
        """
        name = self.experiment.name
        paths = {k: self.path(label, c) for k, c in configs.items()} if paths is None else dict(paths)
        stored: dict[Any, Records] = {}
        missing, corrupt = [], {}
        for k, p in paths.items():
            expect = {"algorithm": label, **configs[k], "experiment": name}  # as save_records below stores it
            try:  # checked by content: another run's file under this name is recomputed, with a warning naming it
                stored[k] = load_records(p, expect=expect, recompute=self.compute)
            except FileNotFoundError:
                missing.append(k)
            except CorruptRunError as err:
                if not self.compute:
                    raise ValueError(f"{err}; run the experiment again to recompute it") from None
                missing.append(k)
                corrupt[k] = p
        if missing and not self.compute:
            raise ValueError(
                f"{len(missing)} of {len(paths)} runs of {name!r} ({label}) are not stored under {self.out} "
                f"(the first: {paths[missing[0]]}); run it first"
            )
        for k in corrupt:  # recomputed now, so stored under this version's key
            paths[k] = run_path(self.out, name, label, configs[k])
        self.progress.start(label, len(paths))
        self.progress.advance(label, len(paths) - len(missing))
        units = _units(missing, unit or max(len(missing), 1))
        shown = describe_each(configs)
        for _, done in self.executor.map(compute, units):
            for k, (columns, meta) in done.items():  # kept as the file reads back (save_records returns it)
                stored[k] = save_records(
                    paths[k], columns, {"algorithm": label, **shown[k], "experiment": name, **meta}
                )
                if k in corrupt and corrupt[k] != paths[k]:  # a damaged run of another version: superseded
                    corrupt[k].unlink(missing_ok=True)
            self.progress.advance(label, len(done))
        self.new, self.skipped = self.new + len(missing), self.skipped + len(paths) - len(missing)
        return {k: stored[k] for k in paths}


def _units(keys: list, size: int) -> list[list]:
    """``keys`` cut into units of ``size`` consecutive keys (the last may be shorter)."""
    return [keys[i : i + size] for i in range(0, len(keys), size)]


def play(learner: AbstractLearner, problem: Any, T: int, seeds: Sequence[int], **kwargs) -> tuple[Trajectory, float]:
    """``sweep(learner, problem, T, seeds, **kwargs)`` and its wall time per round of one run."""
    tic = time.perf_counter()
    traj = sweep(learner, problem, T, list(seeds), **kwargs)
    traj.loss.block_until_ready()
    return traj, (time.perf_counter() - tic) / (T * len(seeds))


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


@dataclasses.dataclass(kw_only=True)
class Experiment:
    """A named experiment, declared as data (module doc). ``paper`` names the paper and figure."""

    name: str
    paper: str
    title: str
    study: Callable[[Experiment, Context], Outcome]
    algorithms: tuple[Algorithm, ...] = ()
    options: tuple[Option, ...] = ()
    claims: tuple[Claim, ...] = ()
    default_T: int = 1000
    default_seeds: int = 20
    needs_data: bool = False
    tuning: Any = None
    """Its grid search (an :class:`ocokit.tuning.Tuning`; ``ocokit tune`` records it), or ``None``."""

    def __post_init__(self):
        self.algorithms, self.options, self.claims = tuple(self.algorithms), tuple(self.options), tuple(self.claims)
        if self.tuning is not None:
            missing = set(self.tuning.option_names) - {o.name for o in self.options}
            if missing:
                raise ValueError(f"experiment {self.name!r} has a tuning but not its options {sorted(missing)}")

    def parse_options(self, raw: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The typed options of ``raw`` (``--option`` strings), defaults filled in; unknown keys raise."""
        raw, valid = dict(raw or {}), sorted(o.name for o in self.options)
        if set(raw) - set(valid):
            raise ValueError(f"unknown options {sorted(set(raw) - set(valid))} for {self.name}; valid: {valid}")
        return {o.name: o.parse(str(raw[o.name])) if o.name in raw else o.default for o in self.options}

    def run(
        self,
        *,
        T: int,
        seeds: int,
        out: Path | str,
        data_dir: Path | None = None,
        options: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        compute: bool = True,
        executor: AbstractExecutor | None = None,
        reuse_across_versions: bool = False,
    ) -> Report:
        """Run (skipping runs stored in ``out``), write ``out/summary.json`` and the figures.

        ``executor`` (default :class:`ocokit.executors.Local`) computes the missing runs, e.g.
        ``ocokit.executors.Ray(address="auto")`` on a cluster; the driver stores every run. A stored run is
        reused only if made by the same ocokit, jax and equinox versions, unless ``reuse_across_versions``.
        ``out`` must be a folder this process can write in (or one it can create): checked before computing.
        """
        T = _checks.horizon(T)
        _checks.positive_int("seeds", seeds)
        raw, out, progress, executor = dict(options or {}), Path(out), progress or Progress(), executor or Local()
        opts, reuse = self.parse_options(raw), reuse_across_versions
        check_writable_folder(out, "out")
        try:  # one experiment per folder: its summary.json and figures would replace another's
            owner = json.loads((out / "summary.json").read_bytes()).get("experiment")
        except (OSError, ValueError, AttributeError):  # none yet, or unreadable: this run writes a new one
            owner = None
        if isinstance(owner, str) and owner != self.name:
            raise ValueError(
                f"{out} holds the results of experiment {owner!r} ({out / 'summary.json'}); give {self.name!r} "
                "another output folder (--out)"
            )
        ctx = Context(self, T, seeds, out, data_dir, opts, raw, progress, compute, executor, reuse)
        outcome = self.study(self, ctx)
        figure = self._draw_all(outcome, out)
        report = Report(self.name, outcome.summary, self.check_claims(outcome.summary), figure, ctx.skipped, ctx.new)
        data = None if data_dir is None else str(Path(data_dir).resolve())
        stored = {**report.to_json(), "T": T, "seeds": seeds, "options": raw, "data_dir": data, **outcome.extra}
        stored["provenance"] = provenance()
        atomic_write_json(out / "summary.json", stored)
        return report

    def plot(self, out: Path) -> Path:
        """Redraw the figures from the runs stored under ``out``; returns the first figure's path.

        Read only: the sizes, options and data folder come from ``out/summary.json``, every run from the store
        (of any library version), and nothing but the figures is written (``summary.json`` and the runs are
        left byte for byte). A run that is not stored, or cannot be read back, is an error naming it.
        """
        out = Path(out)
        stored = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        T, seeds, raw, data = stored["T"], stored["seeds"], dict(stored["options"]), stored.get("data_dir")
        ctx = Context(self, T, seeds, out, data, self.parse_options(raw), raw, Progress(), compute=False,
                      reuse_across_versions=True)  # fmt: skip
        figure = self._draw_all(self.study(self, ctx), out)
        if figure is None:
            raise ValueError(f"no figure for the runs stored under {out}")
        return figure

    def _draw_all(self, outcome: Outcome, out: Path) -> Path | None:
        """Draw every figure of ``outcome`` into ``out``; the first drawn (``None``: none)."""
        drawn = [_draw(f, out / f"{self.name}{f.suffix}.png") for f in outcome.figures]
        return next((p for p in drawn if p is not None), None)

    def check_claims(self, summary: Summary) -> list[ClaimResult]:
        """Evaluate every claim; a claim whose inputs are missing reports that instead of failing."""
        results = []
        for claim in self.claims:
            try:
                measured, holds = claim.check(summary)
            except (KeyError, StopIteration) as err:
                measured, holds = f"not measured (missing {err})", False
            results.append(ClaimResult(claim.statement, measured, bool(holds)))
        return results


def _draw(figure: Figure, path: Path) -> Path | None:
    if not figure.curves:
        return None
    panels = figure.panels if figure.panels is not None else list(next(iter(figure.curves.values())))
    return band_figure(figure.curves, panels, path, **figure.kwargs)


def final(summary: Summary, algorithm: str, metric: str) -> float:
    """The mean final value of ``metric`` for ``algorithm`` (KeyError if absent: the claim is unmeasured)."""
    return summary[algorithm][metric]["mean"]


def exponent(xs, values) -> tuple[float, float] | None:
    """Log-log slope and its standard error (:func:`ocokit.metrics.growth_exponent`); None if unfittable."""
    if len(xs) < 3 or min(values) <= 0:
        return None
    return metrics.growth_exponent(np.asarray(xs, float), np.asarray(values, float))


def select(algorithms: Sequence[Algorithm], chosen: Sequence[str] | None) -> list[Algorithm]:
    """The algorithms named by the option ``algorithms`` (all when ``None``), in their order."""
    valid = [a.label for a in algorithms]
    unknown = [c for c in chosen or () if c not in valid]
    if unknown:
        raise ValueError(f"option algorithms must list labels among {valid}, got {unknown} (unknown algorithms)")
    return [a for a in algorithms if chosen is None or a.label in chosen]


ALGORITHMS = Option("algorithms", list, None, "comma-separated labels to run (default: all)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Comparison:
    """The algorithms x seeds study: every algorithm on ``make_problem(T, data_dir, options)``, S seeds.

    Each seed's comparators are computed once, for all the algorithms (:func:`ocokit.comparators`), when the first
    unit that lacks them asks; a unit computed in another process (Ray) computes its own seeds'.

    Args:
        make_problem: the problem, from the horizon, the data folder and the parsed options.
        panels: metrics of :data:`ocokit.metrics.ROUND_METRICS` drawn, one panel each; ``logy``: log axes.
        make_algorithms: ``(ctx, problem) -> algorithms`` when they depend on options (default: the
            experiment's, filtered by the option ``algorithms`` if declared).
        describe: ``problem -> dict`` written to ``summary.json`` under ``"problem"``.
        chunk_size: seeds vmapped at once (a unit of work), for the learners and the comparators.
    """

    make_problem: Callable[[int, Path | None, Mapping[str, Any]], Any]
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
        env = _SeedComparators(problem, T, self.chunk_size)  # for every algorithm
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: Summary = {}
        for algo, learner in plan:

            def compute(missing, learner=learner):
                traj, seconds = play(learner, problem, T, missing, chunk_size=self.chunk_size, comparators=False)
                traj = with_comparators(traj, env(missing))
                per_round, meta = metrics.available_metrics(traj), {"wall_seconds_per_round": seconds}
                return {s: (round_columns(traj, i) | {k: v[i] for k, v in per_round.items()}, meta)
                        for i, s in enumerate(missing)}  # fmt: skip

            cells = ctx.cells(algo.label, configs[algo.label], compute, self.chunk_size)
            records = list(cells.values())
            names = [k for k in metrics.ROUND_METRICS if k in records[0][0]]
            curves[algo.label] = {k: np.stack([r[0][k] for r in records]) for k in names}
            summary[algo.label] = {k: metrics.mean_std(v[:, -1]) for k, v in curves[algo.label].items()}
            seconds = float(np.mean([r[1]["wall_seconds_per_round"] for r in records]))
            summary[algo.label].update(wall_seconds_per_round=seconds, seeds=len(records), note=algo.note)
        title = f"{exp.title} ({exp.paper}, T = {T})"
        figure = Figure(curves, panels=self.panels, kwargs={"title": title, "logy": self.logy})
        return Outcome(summary, [figure], {"problem": self.describe(problem)})


class _SeedComparators:
    """Each seed's comparator losses (:func:`ocokit.comparators`), computed once for all the algorithms of a
    :class:`Comparison`, in chunks of ``chunk_size`` seeds, and kept on the host."""

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


_REGISTRY: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to the registry under its name (names are unique)."""
    if experiment.name in _REGISTRY:
        raise ValueError(f"an experiment named {experiment.name!r} is already registered")
    _REGISTRY[experiment.name] = experiment
    return experiment


def get(name: str) -> Experiment:
    """The registered experiment ``name``; ``ValueError`` listing the valid names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def names() -> list[str]:
    """All registered experiment names, sorted."""
    return sorted(_REGISTRY)

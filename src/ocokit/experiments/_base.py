"""Named, registered experiments: a problem, the algorithms a paper compares, what to plot, and claims.

Two kinds:

* :class:`StandardExperiment`: one problem, several algorithms, S seeds with common random numbers; the
  harness runs each algorithm as one vmapped sweep, stores one Parquet file per run, draws the paper's
  panels (mean with a band) and checks the claims on the summary. Most experiments are this.
* A subclass of :class:`AbstractExperiment` with its own ``run`` for studies that vary T or a problem
  parameter (fitted exponents, regret against a window length); it reuses :mod:`ocokit.results` and
  :func:`ocokit.plotting.band_figure` and returns the same :class:`Report`.
"""

from __future__ import annotations

import abc
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ocokit import _checks, metrics
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine import comparators, sweep, with_comparators
from ocokit.plotting import band_figure
from ocokit.problems._base import AbstractProblem
from ocokit.results import atomic_write_json, load_records, run_path, save_records

Summary = dict[str, dict[str, Any]]
"""Per algorithm label: ``{metric: {"mean": float, "std": float}, "seconds_per_round": float, ...}``."""


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """One compared algorithm: a legend label and a factory from the problem's info to a learner.

    ``make = None`` marks an algorithm the paper compares that ocokit does not implement yet; ``note``
    says so (or says "reconstructed" for baselines rebuilt from a published description).
    """

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
        return {
            "experiment": self.experiment,
            "algorithms": self.summary,
            "claims": [dataclasses.asdict(c) for c in self.claims],
            "figure": None if self.figure is None else self.figure.name,
        }


class Progress:
    """Progress reporting hooks (the CLI passes a rich progress bar; the default is silent)."""

    def start(self, label: str, total: int) -> None:
        """A task of ``total`` steps begins."""

    def advance(self, label: str, steps: int = 1) -> None:
        """``steps`` more steps of the task are done."""


class SilentProgress(Progress):
    """Reports nothing."""


class AbstractExperiment(abc.ABC):
    """A named experiment. Subclasses set the attributes below and implement :meth:`run`.

    Attributes:
        name: registry name (``ocokit run NAME``).
        paper: the paper's file stem (``"003"``) and figure, e.g. ``"003 Fig. 1"``.
        title: one line for ``ocokit list``.
        algorithms: the algorithms the paper compares (``make=None`` if not implemented).
        default_T: the horizon used when ``--T`` is not given.
        default_seeds: repetitions when ``--seeds`` is not given.
        claims: the paper's claims, checked on every run.
        needs_data: whether real data is needed (then ``data_dir`` or ``OCOKIT_DATA`` is read).
    """

    name: str
    paper: str
    title: str
    algorithms: tuple[Algorithm, ...] = ()
    default_T: int = 1000
    default_seeds: int = 20
    claims: tuple[Claim, ...] = ()
    needs_data: bool = False

    @abc.abstractmethod
    def run(
        self,
        *,
        T: int,
        seeds: int,
        out: Path,
        data_dir: Path | None = None,
        options: Mapping[str, str] | None = None,
        progress: Progress | None = None,
    ) -> Report:
        """Run (skipping finished runs found in ``out``), write ``out/summary.json`` and the figure."""

    def plot(self, out: Path) -> Path:
        """Redraw the figure from the runs stored in ``out`` (``ocokit plot``); returns the PNG's path.

        The default reads the stored ``summary.json`` and raises if the experiment wrote no figure;
        experiments override it to redraw from their stored runs.
        """
        raise ValueError(f"experiment {self.name!r} cannot redraw its figure from stored runs; run it again")

    def check_claims(self, summary: Summary) -> list[ClaimResult]:
        """Evaluate every claim; a claim whose inputs are missing reports that instead of failing."""
        results = []
        for claim in self.claims:
            try:
                measured, holds = claim.check(summary)
            except KeyError as err:
                measured, holds = f"not measured (missing {err})", False
            results.append(ClaimResult(claim.statement, measured, bool(holds)))
        return results


def summarise(finals: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Mean and standard deviation over seeds of each final metric."""
    return {k: {"mean": float(np.mean(v)), "std": float(np.std(v))} for k, v in finals.items()}


def final(summary: Summary, algorithm: str, metric: str) -> float:
    """The mean final value of ``metric`` for ``algorithm`` (KeyError if absent: the claim is unmeasured)."""
    return summary[algorithm][metric]["mean"]


class StandardExperiment(AbstractExperiment):
    """One problem, several algorithms, seeds as a vmapped sweep; panels of per-round metrics.

    Args:
        name, paper, title, algorithms, default_T, default_seeds, claims, needs_data: see
            :class:`AbstractExperiment`.
        make_problem: ``make_problem(T, data_dir, options) -> AbstractProblem``.
        panels: the metrics of :data:`ocokit.metrics.ROUND_METRICS` drawn, one panel each.
        logy: panels with a log vertical axis.
        chunk_size: seeds vmapped at once (memory bound; the progress bar advances per chunk).
    """

    def __init__(
        self,
        *,
        name: str,
        paper: str,
        title: str,
        make_problem: Callable[[int, Path | None, Mapping[str, str]], AbstractProblem],
        algorithms: Sequence[Algorithm],
        panels: Sequence[str] = ("cumulative_loss", "hard_violation"),
        default_T: int = 1000,
        default_seeds: int = 20,
        claims: Sequence[Claim] = (),
        needs_data: bool = False,
        logy: Sequence[str] = (),
        chunk_size: int = 10,
    ):
        self.name, self.paper, self.title = name, paper, title
        self.make_problem = make_problem
        self.algorithms = tuple(algorithms)
        self.panels = tuple(panels)
        self.default_T, self.default_seeds = default_T, default_seeds
        self.claims, self.needs_data = tuple(claims), needs_data
        self.logy, self.chunk_size = tuple(logy), chunk_size
        unknown = set(self.panels) - set(metrics.ROUND_METRICS)
        if unknown:
            raise ValueError(f"panels {sorted(unknown)} are not metrics; choose from {sorted(metrics.ROUND_METRICS)}")

    def run(self, *, T, seeds, out, data_dir=None, options=None, progress=None) -> Report:
        _checks.positive_int("T", T)
        _checks.positive_int("seeds", seeds)
        options = dict(options or {})
        progress = progress or SilentProgress()
        out = Path(out)
        problem = self.make_problem(T, data_dir, options)
        info = ProblemInfo.of(problem, T)
        runs: dict[str, list[Path]] = {}
        skipped = new = 0
        env: dict[int, dict[str, Any]] = {}  # each seed's comparators, shared by the algorithms
        for algo in self.algorithms:
            if algo.make is None:
                continue
            learner = algo.make(info)
            base = {
                "algorithm": algo.label,
                "learner": eqx.tree_pformat(learner, short_arrays=False),
                "problem": eqx.tree_pformat(problem),
                "options": options,
                "T": T,
            }
            paths = {s: run_path(out, self.name, algo.label, {**base, "seed": s}) for s in range(seeds)}
            missing = [s for s, p in paths.items() if not p.exists()]
            skipped += seeds - len(missing)
            progress.start(algo.label, seeds)
            progress.advance(algo.label, seeds - len(missing))
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]
                tic = time.perf_counter()
                traj = sweep(learner, problem, T, chunk, chunk_size=self.chunk_size, comparators=False)
                traj.loss.block_until_ready()
                seconds = (time.perf_counter() - tic) / (T * len(chunk))
                traj = with_comparators(traj, self._comparators(problem, T, chunk, env))
                per_round = metrics.available_metrics(traj)
                for i, s in enumerate(chunk):
                    columns = {"t": np.arange(1, T + 1), "loss": np.asarray(traj.loss[i])}
                    cons = np.asarray(traj.constraints[i])
                    columns.update({f"g{n + 1}": cons[:, n] for n in range(cons.shape[1])})
                    for k, v in traj.diagnostics.items():
                        v = np.asarray(v[i])
                        if v.ndim == 1:
                            columns[f"diag_{k}"] = v
                    columns.update({k: v[i] for k, v in per_round.items()})
                    meta = {**base, "seed": s, "experiment": self.name, "wall_seconds_per_round": seconds}
                    save_records(paths[s], columns, meta)
                new += len(chunk)
                progress.advance(algo.label, len(chunk))
            runs[algo.label] = [paths[s] for s in range(seeds)]
        return self._finish(out, runs, T, skipped, new)

    def _comparators(self, problem, T: int, seeds: list[int], cache: dict[int, dict[str, Any]]):
        """The comparator losses of ``seeds``' games, computed once per seed for all algorithms."""
        todo = [s for s in seeds if s not in cache]
        if todo:
            fresh = comparators(problem, T, todo, chunk_size=self.chunk_size)
            for i, s in enumerate(todo):
                cache[s] = {k: v[i] for k, v in fresh.items()}
        return {k: jnp.stack([cache[s][k] for s in seeds]) for k in cache[seeds[0]]}

    def _finish(self, out: Path, runs: Mapping[str, Sequence[Path]], T: int, skipped: int = 0, new: int = 0) -> Report:
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: Summary = {}
        notes = {a.label: a.note for a in self.algorithms}
        for label, files in runs.items():
            records = [load_records(p) for p in files]
            names = [k for k in metrics.ROUND_METRICS if k in records[0][0]]
            curves[label] = {k: np.stack([r[0][k] for r in records]) for k in names}
            summary[label] = summarise({k: v[:, -1] for k, v in curves[label].items()})
            summary[label]["wall_seconds_per_round"] = float(
                np.mean([r[1]["wall_seconds_per_round"] for r in records])
            )
            summary[label]["seeds"] = len(records)
            summary[label]["note"] = notes.get(label, "")
        figure = band_figure(
            curves, self.panels, out / f"{self.name}.png", title=f"{self.title} ({self.paper}, T = {T})", logy=self.logy
        )
        report = Report(self.name, summary, self.check_claims(summary), figure, skipped, new)
        atomic_write_json(out / "summary.json", {**report.to_json(), "T": T})
        return report

    def plot(self, out: Path) -> Path:
        """Redraw the figure (and summary) from the runs stored under ``out``."""
        import json

        out = Path(out)
        T = json.loads((out / "summary.json").read_text())["T"]
        runs: dict[str, list[Path]] = {}
        for path in sorted((out / "runs").glob("*.parquet")):
            _, meta = load_records(path)
            if meta.get("experiment") == self.name and meta.get("T") == T:
                runs.setdefault(meta["algorithm"], []).append(path)
        if not runs:
            raise ValueError(f"no stored runs of {self.name!r} with T = {T} under {out}/runs")
        return self._finish(out, runs, T).figure


_REGISTRY: dict[str, AbstractExperiment] = {}


def register(experiment: AbstractExperiment) -> AbstractExperiment:
    """Add ``experiment`` to the registry under its name (names are unique)."""
    if experiment.name in _REGISTRY:
        raise ValueError(f"an experiment named {experiment.name!r} is already registered")
    _REGISTRY[experiment.name] = experiment
    return experiment


def get(name: str) -> AbstractExperiment:
    """The registered experiment ``name``; ``ValueError`` listing the valid names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def names() -> list[str]:
    """All registered experiment names, sorted."""
    return sorted(_REGISTRY)

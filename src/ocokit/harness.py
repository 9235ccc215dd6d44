"""Experiments declared as data, and their registry.

An [`Experiment`][ocokit.experiments.Experiment] declares its name, paper, typed [`Option`][ocokit.experiments.Option]
s, algorithms, claims and a study
``study(experiment, ctx) -> Outcome`` (`studies`: a [`Comparison`][ocokit.experiments.Comparison] of algorithms
x seeds, or a [`Sweep`][ocokit.experiments.Sweep] over a grid). [`Experiment.run`][ocokit.experiments.Experiment.run]
parses the options once, lets
the study compute its missing runs through the store (`store`: resumed, units on an executor), draws
the figures, checks the claims and writes ``summary.json`` (with T, seeds, options, the data folder and the
provenance: [`Experiment.plot`][ocokit.experiments.Experiment.plot] redraws from disk, computing nothing). The paper
modules of
[`ocokit.experiments`][ocokit.experiments] declare their experiments with it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.executors import AbstractExecutor, Local
from ocokit.fingerprints import provenance
from ocokit.plotting import band_figure
from ocokit.results import atomic_write_json, check_writable_folder
from ocokit.store import Context

Summary = dict[str, dict[str, Any]]
"""Per algorithm label: ``{metric: {"mean": float, "std": float}, "note": str, ...}``."""


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
    """Its grid search (an [`ocokit.tuning.Tuning`][ocokit.experiments.Tuning]; ``ocokit tune`` records it), or
    ``None``."""

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

        ``executor`` (default [`ocokit.executors.Local`][ocokit.executors.Local]) computes the missing runs, e.g.
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
        try:
            outcome = self.study(self, ctx)
        except FileNotFoundError as err:
            if not self.needs_data:
                raise
            raise FileNotFoundError(f"experiment {self.name!r} needs its data: {err}") from err
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


def select(algorithms: Sequence[Algorithm], chosen: Sequence[str] | None) -> list[Algorithm]:
    """The algorithms named by the option ``algorithms`` (all when ``None``), in their order."""
    valid = [a.label for a in algorithms]
    unknown = [c for c in chosen or () if c not in valid]
    if unknown:
        raise ValueError(f"option algorithms must list labels among {valid}, got {unknown} (unknown algorithms)")
    return [a for a in algorithms if chosen is None or a.label in chosen]


ALGORITHMS = Option("algorithms", list, None, "comma-separated labels to run (default: all)")


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

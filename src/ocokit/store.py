"""The store of an experiment's runs: [`Context`][ocokit.experiments.Context], one run of a study, asks it for runs by
configuration.

Each run is one Parquet file keyed by the content of its configuration (`results`); the missing ones
are computed in units on an executor ([`ocokit.executors`][ocokit.executors]: in process, or on a Ray cluster) and
stored as
each unit completes, so an interrupted command keeps every finished unit and a re-run resumes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ocokit.executors import AbstractExecutor, Local
from ocokit.fingerprints import describe_each
from ocokit.results import CorruptRunError, load_records, run_path, save_records

if TYPE_CHECKING:
    from ocokit.harness import Experiment, Progress

Records = tuple[dict[str, np.ndarray], dict[str, Any]]
"""One stored run: its columns and its metadata."""


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
        """Where the run of ``config`` under ``label`` is stored, or will be (`run_path`)."""
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
        A run computed now is returned as its file reads back (what `save_records` returns), without
        reading the file. ``paths`` (key -> [`path`][ocokit.experiments.Context.path]) spares computing the paths again
        when the caller has.
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

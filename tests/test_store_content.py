"""Stored runs are checked by content, not trusted by their file name.

Another run's file copied over a stored run (another seed's, another algorithm's, or a run of another T) is
recomputed and its file replaced, with one warning naming the file, and the summary is a clean run's; read only
(``plot``), it is an error naming the file.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest

from ocokit import experiments, results

from .golden.generate import numbers
from .helpers import register_two_ogd

register_two_ogd("content-smoke")
T, SEEDS = 20, 2


def _summary(out: Path) -> dict:
    return numbers(json.loads((out / "summary.json").read_text())["algorithms"])


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> dict:
    """The summary numbers of an untouched run."""
    out = tmp_path_factory.mktemp("clean")
    experiments.get("content-smoke").run(T=T, seeds=SEEDS, out=out)
    return _summary(out)


def _file(out: Path, algorithm: str, seed: int) -> Path:
    (path,) = [p for p in results.run_files(out) if f"algorithm={algorithm}/seed={seed}/" in p.as_posix()]
    return path


def _small(tmp_path: Path) -> Path:
    """A run of T / 2 rounds, its files under ``tmp_path / "small"``."""
    experiments.get("content-smoke").run(T=T // 2, seeds=SEEDS, out=tmp_path / "small")
    return tmp_path / "small"


@pytest.mark.parametrize(
    ("source", "differs"),
    [
        (lambda out, tmp: _file(out, "OGD", 1), r"seed 1 instead of 0, key \S+ instead of \S+"),
        pytest.param(
            lambda out, tmp: _file(out, "OGD-slow", 0),
            r"algorithm 'OGD-slow' instead of 'OGD', key \S+ instead of \S+",
            marks=pytest.mark.integration,
        ),
        pytest.param(
            lambda out, tmp: _file(_small(tmp), "OGD", 0),
            rf"T {T // 2} instead of {T}, key \S+ instead of \S+",
            marks=pytest.mark.integration,
        ),
    ],
    ids=["swapped-seeds", "swapped-algorithms", "other-T"],
)
def test_another_runs_file_under_a_runs_name_is_recomputed_with_a_warning_naming_it(tmp_path, clean, source, differs):
    exp, out = experiments.get("content-smoke"), tmp_path / "out"
    exp.run(T=T, seeds=SEEDS, out=out)
    victim = _file(out, "OGD", 0)
    shutil.copyfile(source(out, tmp_path), victim)  # another run's file under this run's name
    names = sorted(results.run_files(out))
    message = rf"stored run {re.escape(str(victim))} holds another run \({differs}"
    with pytest.raises(ValueError, match=rf"^{message}\); run the experiment again to recompute it$"):
        exp.plot(out)  # read only: an error naming the file
    recomputing = rf"^{message}\); recomputing it and replacing the file$"
    with pytest.warns(results.MismatchedRunWarning, match=recomputing) as w:
        report = exp.run(T=T, seeds=SEEDS, out=out)
    assert len(w) == 1 and "\n" not in str(w[0].message)
    assert (report.new_runs, report.skipped_runs) == (1, 2 * SEEDS - 1)
    assert _summary(out) == clean
    assert sorted(results.run_files(out)) == names  # replaced in place
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = exp.run(T=T, seeds=SEEDS, out=out)  # the replaced file is the run's own: found, no warning
    assert (again.new_runs, again.skipped_runs) == (0, 2 * SEEDS)
    exp.plot(out)


def test_load_records_checks_a_run_against_what_its_name_promises(tmp_path):
    config = {"algorithm": "A", "T": 3, "seed": 1}
    path = results.run_path(tmp_path, "exp", "A", config)
    results.save_records(path, {"loss": [1.0, 2.0, 3.0]}, {**config, "experiment": "exp"})
    columns, meta = results.load_records(path, expect={**config, "experiment": "exp"})
    assert meta["seed"] == 1 and columns["loss"].tolist() == [1.0, 2.0, 3.0]
    results.load_records(path, expect={"experiment": "exp"})  # only what both hold is compared
    with pytest.raises(results.MismatchedRunError, match=r"holds another run \(seed 1 instead of 2\)$"):
        results.load_records(path, expect={**config, "seed": 2})
    moved = path.with_name("part-0123456789abcdef0123-any.parquet")
    path.rename(moved)
    with pytest.raises(results.CorruptRunError, match=rf"{re.escape(str(moved))} .*\(key \S+ instead of 0123"):
        results.load_records(moved, expect={})
    assert results.load_records(moved)[1]["seed"] == 1  # without expect: read as it is, as before

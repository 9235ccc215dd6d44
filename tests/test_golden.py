"""Golden values: refactors keep every learner's decisions and every experiment's numbers; and one numerical regime:
``ocokit run`` (a real subprocess) stores every record and summary number of each experiment bit for bit as the
Python API does.

``tests/golden/learners.json`` and ``experiments.json`` are written by ``python -m tests.golden.generate`` under the
library's own compile options; a change that is *meant* to move numbers regenerates them and says why in its
commit. Compared at each learner's and experiment's tolerance (``generate.TOLERANCES``: 1e-12 of each array's scale
unless justified there). The learners' trajectories are checked by the learner suite on the run it already compiles
(``tests/algorithms/test_learner_suite.py::test_trajectory_matches_golden``); the experiments here.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ocokit import experiments
from ocokit.results import load_records

from .golden import generate
from .learner_cases import cases


def test_every_suite_case_has_a_golden_trajectory():
    assert sorted(case_id for case_id, _, _ in cases()) == sorted(generate.golden("learners"))


THROUGH_THE_CLI = ("time-varying-regression", "job-scheduling", "matrix-completion-movielens", "gradual-variation",
                   "memory-predictions-horizon", "strongly-convex-sets")  # fmt: skip
"""The experiments also run through ``ocokit run`` in a subprocess (bit for bit the API's): both studies over a
grid and a comparison, with and without data, prefix runs, an option-dependent problem (a cold process compiles
every program: the other experiments' API runs are checked against their goldens only, to keep CI short)."""

_VOLATILE = (
    "wall_seconds_per_round",
    "compile_seconds",
    "wall_seconds",
    "provenance",
    "created",
    "wall_time",
)  # when, how fast


@pytest.mark.parametrize("spec", generate.EXPERIMENTS, ids=[e[0] for e in generate.EXPERIMENTS])
@pytest.mark.integration
def test_experiment_matches_golden_plot_recomputes_nothing_and_the_cli_stores_the_same_bits(spec, tmp_path):
    name, *rest = spec
    summary = generate.experiment_summary(name, *rest, folder=tmp_path)
    generate.compare(summary, generate.golden("experiments")[name], name, generate.tolerance(name))
    out = tmp_path / "out"
    before = _files(out)
    figure = experiments.get(name).plot(out)  # redraws from the stored runs: no new run, nothing rewritten
    assert figure.is_file() and figure.parent == out
    after = _files(out)
    assert sorted(after) == sorted(before), "plot added or removed files"
    changed = [p for p in before if p.suffix != ".png" and after[p] != before[p]]
    assert not changed, f"plot rewrote {changed}"  # summary.json and every run, byte for byte and untouched
    generate.compare(generate.numbers(json.loads((out / "summary.json").read_text())["algorithms"]), summary, name)
    if name in THROUGH_THE_CLI:
        _the_cli_stores_the_same_bits(name, *rest, tmp_path)


def _the_cli_stores_the_same_bits(name, T, seeds, options, data, tmp_path):
    """``ocokit run`` in a subprocess, on the API's data, stores the runs and summary of the API's run under
    ``tmp_path / "out"``, bit for bit (timings and provenance aside)."""
    api, cli = tmp_path / "out", tmp_path / "cli"
    command = [sys.executable, "-m", "ocokit.cli", "run", name, "--T", str(T), "--seeds", str(seeds), "--out", str(cli)]
    command += [f"--option={k}={v}" for k, v in options.items()]
    command += ["--data", str(tmp_path / "data")] if data == "small" else []
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ours, theirs = _stored(api), _stored(cli)
    assert sorted(ours) == sorted(theirs) and ours, "the two stored other runs"
    for path, (columns, meta) in ours.items():
        other_columns, other_meta = theirs[path]
        assert meta == other_meta, path
        assert sorted(columns) == sorted(other_columns), path
        for column, values in columns.items():
            np.testing.assert_array_equal(values, other_columns[column], err_msg=f"{path}: {column}")
    summaries = [json.loads((out / "summary.json").read_text()) for out in (api, cli)]
    summaries = [generate.numbers({k: v for k, v in s.items() if k not in _VOLATILE}) for s in summaries]
    assert json.dumps(summaries[0], sort_keys=True) == json.dumps(summaries[1], sort_keys=True)


def _stored(out):
    """Every stored run under ``out``: its columns and its metadata without timings and provenance, by path."""
    runs = {}
    for path in sorted((out / "runs").rglob("*.parquet")):
        columns, meta = load_records(path)
        runs[path.relative_to(out).as_posix()] = (columns, {k: v for k, v in meta.items() if k not in _VOLATILE})
    return runs


def _files(out):
    """Every file under ``out``: its bytes and modification time."""
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}

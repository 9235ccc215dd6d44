"""One numerical regime: ``ocokit run`` (a real subprocess) and the Python API compute every stored record and every
summary number of each experiment bit for bit alike."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ocokit import experiments
from ocokit.results import load_records

from .golden import generate

pytestmark = pytest.mark.integration

_VOLATILE = ("wall_seconds_per_round", "wall_seconds", "provenance", "created", "wall_time")  # when and how fast, not what


def _stored(out):
    """Every stored run under ``out``: its columns and its metadata without timings and provenance, by path."""
    runs = {}
    for path in sorted((out / "runs").rglob("*.parquet")):
        columns, meta = load_records(path)
        runs[path.relative_to(out).as_posix()] = (columns, {k: v for k, v in meta.items() if k not in _VOLATILE})
    return runs


@pytest.mark.parametrize("spec", generate.EXPERIMENTS, ids=[e[0] for e in generate.EXPERIMENTS])
def test_the_command_line_and_the_python_api_store_the_same_numbers_bit_for_bit(spec, tmp_path):
    name, T, seeds, options, data = spec
    data_dir = generate.small_data(tmp_path / "data") if data == "small" else None
    api, cli = tmp_path / "api", tmp_path / "cli"
    experiments.get(name).run(T=T, seeds=seeds, out=api, data_dir=data_dir, options=options)
    command = [sys.executable, "-m", "ocokit.cli", "run", name, "--T", str(T), "--seeds", str(seeds), "--out", str(cli)]
    command += [f"--option={k}={v}" for k, v in options.items()]
    command += ["--data", str(data_dir)] if data_dir is not None else []
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

"""Executors on a real local Ray cluster (two CPUs, started once for the module): ``ocokit run --executor ray``
stores the files of a local run, value for value, and either resumes the other; units are yielded in
completion order; a killed worker is retried and its unit yielded once; a deterministic error is named by its
unit after the finished units; without Ray, one line says how to install it."""

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from typer.testing import CliRunner

from ocokit import cli, executors, experiments
from ocokit.algorithms import OGD
from ocokit.problems import CustomProblem
from ocokit.results import load_records
from ocokit.sets import Box

from .helpers import register_test_experiment, register_two_ogd

pytestmark = [pytest.mark.ray, pytest.mark.integration]

# Tiny experiments of the test's own: two algorithms x two seeds, one seed per unit (four units); and one
# whose loss is infinite from round 3 (x_1 = 0 and c_3 = (0, 1): a division by zero).
register_test_experiment(
    "executors-nonfinite",
    "a unit that fails deterministically",
    experiments.Comparison(
        make_problem=lambda T, data_dir, options: CustomProblem(
            domain=Box(-1.0, 1.0, dim=2),
            loss=lambda c, x: jnp.sum((x - c) ** 2) / c[0],
            data=jnp.ones((4, 2)).at[2, 0].set(0.0),
        ),
        chunk_size=1,
    ),
    algorithms=[experiments.Algorithm("OGD", lambda info: OGD(eta=0.05))],
)
register_two_ogd("executors-smoke", chunk_size=1)


def _wait_for(path: Path, unit, timeout: float = 60.0):
    """Unit 0 waits until the driver has received another unit (then yields itself); the rest return at once."""
    deadline = time.monotonic() + timeout
    while unit == 0 and not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return unit


def _die_once(folder: Path, unit):
    """Unit 1's first attempt SIGKILLs its own worker (recording its PID); every attempt of the others returns."""
    marker = folder / f"killed-{unit}"
    if unit == 1 and not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return unit, os.getpid()


def _fail_on_one(folder: Path, unit):
    """Unit 1 raises (deterministically); every attempt is logged, so a retry would show."""
    with open(folder / f"attempts-{unit}", "a") as fh:
        fh.write("attempt\n")
    if unit == 1:
        raise ValueError("eta must be > 0, got -1\n(a second line that the error must not show)")
    return unit


def test_yields_in_completion_order(cluster, tmp_path):
    go = tmp_path / "go"
    seen = []
    for unit, result in executors.Ray().map(functools.partial(_wait_for, go), [0, 1]):
        seen.append((unit, result))
        go.touch()  # unit 0 may finish only now: had the map waited for it first, it would hang 60 s and fail
    assert seen == [(1, 1), (0, 0)]


def _x64_and_flags(unit):
    import os

    import jax

    return bool(jax.config.jax_enable_x64), os.environ.get("XLA_FLAGS", "")


def test_workers_copy_the_drivers_jax_options_and_add_no_xla_flags(cluster):
    """One numerical regime: a worker computes with the driver's JAX options and no XLA flag of ocokit's own."""
    got = dict(executors.Ray(num_cpus_per_task=1).map(_x64_and_flags, [0, 1]))
    assert got[0] == got[1] == (bool(jax.config.jax_enable_x64), os.environ.get("XLA_FLAGS", ""))


def test_killed_worker_is_retried_and_its_unit_yielded_once(cluster, tmp_path):
    pairs = list(executors.Ray(max_retries=2).map(functools.partial(_die_once, tmp_path), [0, 1, 2]))
    assert sorted(unit for unit, _ in pairs) == [0, 1, 2]
    killed_pid = int((tmp_path / "killed-1").read_text())
    (retry_pid,) = [pid for unit, (_, pid) in pairs if unit == 1]
    assert retry_pid != killed_pid  # the unit really ran again, in another worker


def test_deterministic_error_names_its_unit_after_the_finished_ones(cluster, tmp_path):
    finished = []
    with pytest.raises(executors.UnitError) as info:
        for unit, _ in executors.Ray(max_retries=3).map(functools.partial(_fail_on_one, tmp_path), [0, 1, 2]):
            finished.append(unit)
    assert str(info.value) == "unit 1 failed: ValueError: eta must be > 0, got -1"
    assert info.value.unit == 1 and isinstance(info.value.cause, ValueError)
    assert sorted(finished) == [0, 2]
    assert (tmp_path / "attempts-1").read_text().count("attempt") == 1  # exceptions are not retried


def test_local_propagates_errors_unchanged_after_earlier_units(tmp_path):
    finished = []
    with pytest.raises(ValueError, match="eta must be > 0"):
        for unit, _ in executors.Local().map(functools.partial(_fail_on_one, tmp_path), [0, 1, 2]):
            finished.append(unit)
    assert finished == [0]


def _stored(out: Path) -> dict[str, tuple[dict, dict]]:
    """Every run file under ``out``: name -> (columns, metadata without the wall time and the provenance)."""
    runs = {str(p.relative_to(out)): load_records(p) for p in sorted(out.rglob("*.parquet"))}
    volatile = ("wall_seconds_per_round", "compile_seconds", "provenance")
    return {name: (cols, {k: v for k, v in meta.items() if k not in volatile}) for name, (cols, meta) in runs.items()}


def _summary(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    summary.pop("provenance", None)  # when and where: differs by design
    for stats in summary["algorithms"].values():
        stats.pop("wall_seconds_per_round")
        stats.pop("compile_seconds", None)
    return summary


def test_cli_on_ray_stores_the_local_files_and_resumes_from_either(cluster, tmp_path):
    runner = CliRunner()
    args = ["run", "executors-smoke", "--T", "12", "--seeds", "2"]
    local = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    remote = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "ray"), "--executor", "ray"])
    assert remote.exit_code == 0, remote.output
    assert "executor: ray (2 workers)" in remote.output and "(4 new runs, 0 found on disk)" in remote.output
    want, got = _stored(tmp_path / "local"), _stored(tmp_path / "ray")
    assert sorted(got) == sorted(want) and len(got) == 4
    for name, (cols, meta) in want.items():
        assert got[name][1] == meta
        assert sorted(got[name][0]) == sorted(cols) and got[name][0]["loss"].dtype == np.float64  # x64 reached
        for column, values in cols.items():
            np.testing.assert_array_equal(got[name][0][column], values, err_msg=f"{name}: {column}")
    assert _summary(tmp_path / "ray") == _summary(tmp_path / "local")
    again = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "ray"), "--executor", "ray"])
    assert again.exit_code == 0 and "(0 new runs, 4 found on disk)" in again.output, again.output
    next(iter((tmp_path / "ray").rglob("*.parquet"))).unlink()  # a local run completes a Ray store
    mixed = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "ray")])
    assert mixed.exit_code == 0 and "(1 new runs, 3 found on disk)" in mixed.output, mixed.output
    assert sorted(_stored(tmp_path / "ray")) == sorted(want)


def test_cli_on_ray_fails_in_one_line_naming_the_unit(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(cli.console, "width", 400)
    args = ["run", "executors-nonfinite", "--T", "4", "--seeds", "2", "--out", str(tmp_path), "--executor", "ray"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if "error" in line]
    assert re.fullmatch(r"error: unit \[[01]\] failed: NonFiniteError: non-finite loss at round \d+.*", line), line


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "dask"}, "--executor must be one of ['local', 'ray'], got 'dask'"),
        ({"name": "ray", "max_workers": 0}, "--max-workers must be an integer >= 1, got 0"),
        ({"name": "local", "address": "auto"}, "--address and --max-workers need --executor ray"),
    ],
)
def test_get_rejects_bad_arguments_in_one_line(kwargs, message):
    with pytest.raises(ValueError) as info:
        executors.get(**kwargs)
    assert str(info.value) == message


def test_without_ray_the_executor_and_the_cli_say_how_to_install_it():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from ocokit import cli, executors\n"
        "try:\n    executors.Ray()\nexcept ImportError as err:\n    print('python:', err)\n"
        "sys.argv = ['ocokit', 'run', 'time-varying-regression', '--T', '5', '--executor', 'ray']\n"
        "cli.main()\n"
    )
    env = {**os.environ, "COLUMNS": "400"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert lines[0] == f"python: {executors.RAY_MISSING}"
    assert lines[-1] == f"error: {executors.RAY_MISSING}" and len(lines) == 2

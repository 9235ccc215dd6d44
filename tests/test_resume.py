"""The store under real processes: two drivers on one folder at once, and a driver killed with SIGKILL.

Each test runs ``ocokit run`` as real subprocesses (``python -m ocokit.cli``) on a small real experiment, with
the local executor and with drivers joining a real local Ray cluster (``--executor ray --address``), and compares
with an uninterrupted local run: every run present exactly once, every file
readable whole, the same summary numbers (wall times and provenance aside). The subprocesses share one JAX
compilation cache, so all but the first load their programs instead of compiling them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from ocokit import results

from .golden.generate import compare, numbers

pytestmark = pytest.mark.integration

ARGS = ["time-varying-regression", "--T", "30", "--seeds", "4", "--json",
        "--option", "extras=false", "--option", "algorithms=COLDQ,RECOO"]  # fmt: skip
RUNS = 2 * 4  # algorithms x seeds


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """The subprocesses' environment: one compilation cache for all of them (every program cached, however
    quick to compile), no user cache folder touched."""
    cache = str(tmp_path_factory.mktemp("jax-cache"))
    return {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": cache,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        "OCOKIT_CACHE_DIR": cache,
    }


@pytest.fixture(scope="module", params=["local", pytest.param("ray", marks=pytest.mark.ray)])
def executor(request, env):
    """The drivers' executor flags: local, or a real Ray cluster started here that every driver joins (a test
    cluster on this machine: Ray's token authentication off for it and its drivers)."""
    if request.param == "local":
        yield ["--executor", "local"]
        return
    ray = pytest.importorskip("ray")
    auth = {"RAY_AUTH_MODE": "disabled"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in auth.items():
            patch.setenv(name, value)
        env.update(auth)
        with warnings.catch_warnings():  # fork+exec of Ray's processes, after JAX started its threads: harmless
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False)
        try:
            yield ["--executor", "ray", "--address", ray.get_runtime_context().gcs_address]
        finally:
            ray.shutdown()
            for name in auth:
                env.pop(name)


def _command(out: Path, executor: list[str] = ("--executor", "local")) -> list[str]:
    return [sys.executable, "-m", "ocokit.cli", "run", *ARGS, *executor, "--out", str(out)]


def _run(out: Path, env: dict[str, str], executor: list[str] = ("--executor", "local")) -> dict:
    done = subprocess.run(_command(out, executor), capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # --json: stdout is the summary alone


@pytest.fixture(scope="module")
def reference(tmp_path_factory, env) -> tuple[Path, dict]:
    """An uninterrupted run, alone in its folder (it also fills the compilation cache)."""
    out = tmp_path_factory.mktemp("reference") / "out"
    return out, _run(out, env)


def _numbers(summary: dict) -> dict:
    """What must not move between a run and its resumed or concurrent twin: all but provenance and wall times."""
    return numbers({k: v for k, v in summary.items() if k not in ("provenance", "data_dir")})


def _check_store(out: Path, reference: Path) -> None:
    """Every run present exactly once under the reference's names, readable whole; no temporary left."""
    files = results.run_files(out)
    assert len(files) == RUNS
    assert [p.relative_to(out) for p in files] == [p.relative_to(reference) for p in results.run_files(reference)]
    for path in files:
        columns, meta = results.load_records(path)
        assert {len(c) for c in columns.values()} == {30}, path
        assert meta["experiment"] == "time-varying-regression"
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_two_drivers_on_one_folder_at_once(tmp_path, env, reference, executor):
    ref_out, ref = reference
    out = tmp_path / "out"
    command, pipe = _command(out, executor), subprocess.PIPE
    drivers = [subprocess.Popen(command, stdout=pipe, stderr=pipe, text=True, env=env) for _ in range(2)]
    outputs = [d.communicate(timeout=300) for d in drivers]
    for d, (stdout, stderr) in zip(drivers, outputs, strict=True):
        assert d.returncode == 0, stdout + stderr
        compare(_numbers(json.loads(stdout)), _numbers(ref), "a concurrent driver's summary")
    _check_store(out, ref_out)
    compare(_numbers(json.loads((out / "summary.json").read_text())), _numbers(ref), "summary.json")


def test_a_driver_killed_after_its_first_stored_run_resumes_to_the_same_summary(tmp_path, env, reference, executor):
    ref_out, ref = reference
    out = tmp_path / "out"
    driver = subprocess.Popen(_command(out, executor), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 240
        while not list((out / "runs").rglob("part-*.parquet")) and driver.poll() is None:
            assert time.monotonic() < deadline, "no run was stored"
            time.sleep(0.02)
        if driver.poll() is None:
            os.kill(driver.pid, signal.SIGKILL)
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait(timeout=60)
    assert driver.returncode == -signal.SIGKILL, f"the driver ended by itself (exit {driver.returncode})"
    stored = results.run_files(out)
    assert 1 <= len(stored) < RUNS and not (out / "summary.json").exists()  # killed part-way
    resumed = _run(out, env, executor)  # the same command again
    compare(_numbers(resumed), _numbers(ref), "the resumed summary")
    _check_store(out, ref_out)
    assert all(p in results.run_files(out) for p in stored)

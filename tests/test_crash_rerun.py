"""The crash-rerun plugin (``tests/crash_rerun.py``) in a real xdist session: a test whose worker dies once
runs again and passes; one that kills its worker every time fails, once; a failing assertion is never rerun;
a crash on the last test of a file, while the other worker is busy, does not hang the session."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_TESTS = """
import ctypes
import pathlib

def test_ok():
    pass

def test_crashes_once():
    flag = pathlib.Path("crashed-once")
    if not flag.exists():
        flag.write_text("")
        ctypes.string_at(0)  # SIGSEGV, as a native crash would

def test_crashes_always():
    ctypes.string_at(0)

def test_fails():
    assert 1 == 2
"""


_BUSY = """
import time

def test_busy_1():
    time.sleep(0.5)

def test_busy_2():
    time.sleep(0.5)

def test_busy_3():
    time.sleep(0.5)

def test_busy_4():
    time.sleep(0.5)
"""

_AFTER = """
def test_after_1():
    pass

def test_after_2():
    pass
"""


def _session(tmp_path: Path, *select: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_native.py").write_text(_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "tests.crash_rerun", "-p", "no:cacheprovider", "-q"]
    command += ["-n", "2", "--dist", "loadfile", "--max-worker-restart=2", "-p", "no:faulthandler", *select]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def test_a_test_that_crashed_its_worker_once_runs_again_and_passes(tmp_path):
    done = _session(tmp_path, "-k", "ok or crashes_once")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed, 1 rerun" in done.stdout
    assert "crashed while running 'test_native.py::test_crashes_once'" in done.stdout


def test_a_test_that_always_crashes_fails_once_and_an_assertion_is_never_rerun(tmp_path):
    done = _session(tmp_path, "-k", "ok or crashes_always or fails")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed, 1 passed, 1 rerun" in done.stdout
    assert done.stdout.count("FAILED test_native.py::test_crashes_always") == 1
    assert done.stdout.count("FAILED test_native.py::test_fails") == 1


def test_a_crash_on_the_last_test_of_a_file_does_not_hang_the_session(tmp_path):
    """The replacement worker gets that one test back: xdist 3.8 left it waiting for a second one forever."""
    (tmp_path / "test_a_busy.py").write_text(_BUSY)  # the other worker is busy with this file meanwhile
    (tmp_path / "test_z_after.py").write_text(_AFTER)
    done = _session(tmp_path, "-k", "busy or after or ok or crashes_once")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "8 passed, 1 rerun" in done.stdout


def test_the_suite_registers_every_hook_of_the_plugin():
    """``tests/conftest.py`` imports the plugin's hooks by name: one left out would be silently off."""
    from tests import conftest, crash_rerun

    hooks = {name for name in vars(crash_rerun) if name.startswith("pytest_")}
    assert hooks and hooks <= set(vars(conftest)), sorted(hooks - set(vars(conftest)))

"""Test configuration: float64, strict rank promotion and, where listed, strict dtype promotion (the library itself
never flips these)."""

import os
from pathlib import Path

from tests import xla_flags

os.environ.setdefault("XLA_FLAGS", xla_flags.FLAGS)  # before JAX is imported

import jax
import pytest

from tests.crash_rerun import (  # noqa: F401  (hooks: a crashed xdist worker's test runs once more)
    pytest_handlecrashitem,
    pytest_report_teststatus,
    pytest_terminal_summary,
    pytest_xdist_make_scheduler,
)

# No persistent compilation cache in the test processes (a user's own JAX_COMPILATION_CACHE_DIR still turns
# one on): XLA's CPU client has segfaulted in the unwinder (libgcc_s) late in long worker processes, in CI and
# locally, most often while the cache serialised or loaded an executable (put_executable_and_time,
# get_executable_and_time), and while compiling, also with no cache (a crashed worker's test then runs once
# more: tests/crash_rerun.py). Without the cache those two steps never run. The CLI's own
# cache is off in the CLI subprocesses the tests start (an empty OCOKIT_CACHE_DIR), so the user's cache
# folder is never touched.
if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
os.environ.setdefault("OCOKIT_CACHE_DIR", "")
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# Strict dtype promotion (no implicit int32/int64, float32/float64 or bool/float mixing: every cast is written
# out) for the test modules that exercise the library's numerics end to end; the others keep JAX's default.
STRICT_PROMOTION = ("tests/sets/", "tests/algorithms/test_learner_suite.py")


@pytest.fixture(autouse=True)
def _strict_dtype_promotion(request):
    path = request.path.as_posix()
    if any(f"/{part}" in path or path.endswith(part) for part in STRICT_PROMOTION):
        with jax.numpy_dtype_promotion("strict"):
            yield
    else:
        yield


@pytest.fixture(autouse=True)
def _library_compile_options():
    """A CLI command run in this process (``CliRunner``), or a test, may turn on cheap compiles of short sweeps for
    the process (``ocokit.engine.compile_short_sweeps``); the next test gets the library's default back."""
    yield
    from ocokit import engine

    if engine.short_sweeps():
        engine.compile_short_sweeps(0)


@pytest.fixture
def data_dir() -> Path:
    """The real datasets: ``$OCOKIT_DATA`` or ``../shared/data`` beside the checkout; skip if absent."""
    path = Path(os.environ.get("OCOKIT_DATA", SHARED_DATA))
    if not path.is_dir():
        pytest.skip(f"real data not available at {path} (set OCOKIT_DATA)")
    return path

"""Test configuration: float64, strict rank promotion and, where listed, strict dtype promotion (the library itself
never flips these)."""

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import jax
import pytest

# The tests compile with the library's own options (XLA's defaults), as users do. The CLI's persistent cache is off
# in the CLI commands the tests run (an empty OCOKIT_CACHE_DIR, inherited by their subprocesses), so the user's cache
# folder is never touched; JAX's own cache is the test run's (pytest_configure) or the user's
# JAX_COMPILATION_CACHE_DIR.
if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
os.environ.setdefault("OCOKIT_CACHE_DIR", "")
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# Strict dtype promotion (no implicit int32/int64, float32/float64 or bool/float mixing: every cast is written
# out) for the test modules that exercise the library's numerics end to end; the others keep JAX's default.
STRICT_PROMOTION = ("tests/sets/", "tests/algorithms/test_learner_suite.py")


_CACHE_OPTIONS = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def pytest_configure(config):
    """One JAX compilation cache for the whole test run, shared by its xdist workers and removed at its end.

    The test modules free their compiled programs (below), and many compile the same ones: with the cache, a program
    is compiled once per run and loaded by the other modules and workers (the same compiled program, with the same
    options). The workers inherit the folder through the environment; a user's own ``JAX_COMPILATION_CACHE_DIR`` is
    used instead, and kept.
    """
    if hasattr(config, "workerinput") or os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    config.ocokit_jax_cache = tempfile.mkdtemp(prefix="ocokit-tests-jax-cache-")
    os.environ.update({"JAX_COMPILATION_CACHE_DIR": config.ocokit_jax_cache, **_CACHE_OPTIONS})
    jax.config.update("jax_compilation_cache_dir", config.ocokit_jax_cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    folder = getattr(config, "ocokit_jax_cache", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


SLOW_INSTANCES = (
    "tests/test_resume.py::test_two_drivers_on_one_folder_at_once[ray]",
    "tests/test_resume.py::test_a_driver_killed_after_its_first_stored_run_resumes_to_the_same_summary[ray]",
)
"""Parametrized instances that are slow where their siblings are not (a fixture's parameter cannot carry the mark):
the Ray variants of the resume tests (a minute together; their local variants run in the integration tier, and
`tests/test_executors.py` resumes a run on a Ray cluster there)."""


def pytest_collection_modifyitems(config, items):
    """A test that starts a Ray cluster belongs to the integration tier; a slow one (a full-size reproduction) runs
    only when the marker expression names ``slow`` (``-m slow``), whatever its tier."""
    for item in items:
        if item.get_closest_marker("ray") is not None:
            item.add_marker(pytest.mark.integration)
        if item.nodeid in SLOW_INSTANCES:
            item.add_marker(pytest.mark.slow)
    if "slow" not in (config.option.markexpr or ""):
        slow = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray of two CPUs for the whole module (no dashboard, a small object store)."""
    ray = pytest.importorskip("ray")
    with warnings.catch_warnings():  # fork+exec of Ray's processes, after JAX started its threads: harmless
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs():
    """Free every compiled program after each test module (``jax.clear_caches``).

    Each program XLA's CPU backend compiles maps its code into memory in about 54 regions, unmapped only when the
    program is freed, and Linux caps a process's mappings (``vm.max_map_count``, 65530 by default). A test worker
    that keeps every program it compiled reaches the cap after about 1,200 programs, and XLA's next compile
    segfaults when it cannot map its code. Freeing them between modules keeps a worker far below the cap.
    """
    yield
    jax.clear_caches()


@pytest.fixture(autouse=True)
def _strict_dtype_promotion(request):
    path = request.path.as_posix()
    if any(f"/{part}" in path or path.endswith(part) for part in STRICT_PROMOTION):
        with jax.numpy_dtype_promotion("strict"):
            yield
    else:
        yield


@pytest.fixture
def data_dir() -> Path:
    """The real datasets: ``$OCOKIT_DATA`` or ``../shared/data`` beside the checkout; skip if absent."""
    path = Path(os.environ.get("OCOKIT_DATA", SHARED_DATA))
    if not path.is_dir():
        pytest.skip(f"real data not available at {path} (set OCOKIT_DATA)")
    return path

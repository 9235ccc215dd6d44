"""Test configuration: float64 and strict rank promotion (the library itself never flips these)."""

import os
from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def data_dir() -> Path:
    """The real datasets: ``$OCOKIT_DATA`` or ``../shared/data`` beside the checkout; skip if absent."""
    path = Path(os.environ.get("OCOKIT_DATA", SHARED_DATA))
    if not path.is_dir():
        pytest.skip(f"real data not available at {path} (set OCOKIT_DATA)")
    return path


# Test modules of families whose verification did not finish in the session that wrote them: they
# run with `pytest -m unverified` and are excluded from the default run until they are checked.
UNVERIFIED_FILES = {
    "tests/algorithms/test_primal_dual.py",
    "tests/algorithms/test_tvc.py",
    "tests/algorithms/test_memory_predictions.py",
    "tests/problems/test_paper003_problems.py",
    "tests/problems/test_matrix_completion.py",
    "tests/problems/test_memory.py",
    "tests/test_smoothing.py",
    "tests/experiments/test_paper000.py",
    "tests/experiments/test_paper002.py",
    "tests/experiments/test_paper003.py",
}
UNVERIFIED_MODULES = ("_primal_dual", "_tvc", "_memory_predictions",
                      "_qp", "_job_scheduling", "_matrix_completion", "_memory",
                      "paper000", "paper002", "paper003")


def _unverified_param(item) -> bool:
    params = getattr(item, "callspec", None)
    if params is None:
        return False
    for value in params.params.values():
        module = getattr(value, "__module__", "") or getattr(type(value), "__module__", "")
        name = value if isinstance(value, str) else module
        if any(name.endswith(m) or f"{m}." in name for m in UNVERIFIED_MODULES):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parents[1]
    for item in items:
        rel = Path(item.fspath).resolve().relative_to(root).as_posix()
        if rel in UNVERIFIED_FILES or _unverified_param(item):
            item.add_marker(pytest.mark.unverified)

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

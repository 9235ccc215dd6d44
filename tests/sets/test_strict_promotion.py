"""The set tests run under strict dtype promotion (``tests/conftest.py``): an implicit mix of dtypes raises."""

import jax
import jax.numpy as jnp
import pytest


def test_implicit_promotion_raises_in_the_set_tests():
    with pytest.raises(jax.dtypes.TypePromotionError):
        jnp.ones(2, jnp.int32) + jnp.ones(2, jnp.int64)
    with pytest.raises(jax.dtypes.TypePromotionError):
        jnp.ones(2, jnp.float32) * jnp.ones(2, jnp.float64)

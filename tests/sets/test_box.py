"""Box: linprog reference, exact vertices, dtype handling, parameter checks."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

from ocokit.sets import Box

from .suite import Case


def _box_min(K, d):
    return float(np.sum(np.minimum(d * np.asarray(K.lower), d * np.asarray(K.upper))))


SUITE_CASES = [
    Case("box", lambda: Box(jnp.array([-1.0, 0.0, 2.0, -3.0]), jnp.array([1.0, 0.5, 4.0, 3.0])), _box_min),
    Case("box_scaled", lambda: Box(-1.0, 2.0, dim=4).scaled(0.5), _box_min),
]

_lmo = eqx.filter_jit(lambda K, d: K.lmo(d))

LOWER, UPPER = np.array([-1.0, 0.0, 2.0, -3.0]), np.array([1.0, 0.5, 4.0, 3.0])


def test_lmo_matches_linprog():
    K = Box(jnp.asarray(LOWER), jnp.asarray(UPPER))
    rng = np.random.default_rng(0)
    for _ in range(5):
        d = rng.standard_normal(4)
        res = linprog(d, bounds=list(zip(LOWER, UPPER, strict=True)), method="highs")
        np.testing.assert_allclose(_lmo(K, jnp.asarray(d)), res.x, atol=1e-12)


def test_lmo_of_minus_e_i_is_exactly_the_upper_corner():
    K = Box(jnp.asarray(LOWER), jnp.asarray(UPPER))
    for i in range(4):
        e = np.eye(4)[i]
        np.testing.assert_array_equal(_lmo(K, jnp.asarray(-e)), UPPER)  # zero entries take upper too
        np.testing.assert_array_equal(_lmo(K, jnp.asarray(e)), np.where(e > 0, LOWER, UPPER))


def test_integer_bounds_become_floats_and_scaled_shrinks_about_the_centre():
    K = Box(0, 4, dim=3)
    assert jnp.issubdtype(K.lower.dtype, jnp.floating)
    half = K.scaled(0.5)
    np.testing.assert_allclose(half.lower, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(half.upper, [3.0, 3.0, 3.0])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Box(1.0, 1.0, dim=3), "upper - lower"),
        (lambda: Box(jnp.zeros(3), jnp.ones(2)), "one shape"),
        (lambda: Box(0.0, 1.0, dim=0), "dim"),
    ],
)
def test_bad_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()

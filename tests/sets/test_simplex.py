"""Simplex (probability and capped, scaled and shifted): linprog, exact vertices, projections, geometry."""

from __future__ import annotations

import cvxpy as cp
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

from ocokit.sets import Simplex

from .suite import Case


def _simplex_min(K, d):
    best = min(d.min(), 0.0) if K.capped else d.min()
    return float(K.offset) * float(d.sum()) + float(K.radius) * float(best)


SUITE_CASES = [
    Case("simplex", lambda: Simplex(4), _simplex_min, zero_sum_hull=True),
    Case("simplex_r2_scaled", lambda: Simplex(4, radius=2.0).scaled(0.6), _simplex_min, zero_sum_hull=True),
    Case("capped", lambda: Simplex(4, radius=2.0, capped=True), _simplex_min),
    Case("capped_scaled", lambda: Simplex(4, capped=True).scaled(0.5), _simplex_min),
]

_lmo = eqx.filter_jit(lambda K, d: K.lmo(d))
_project = eqx.filter_jit(lambda K, x: K.project(x))
_contains = eqx.filter_jit(lambda K, x, atol: K.contains(x, atol))

SETS = {
    "probability": lambda: Simplex(5),
    "mass_3": lambda: Simplex(5, radius=3.0),
    "shrunk": lambda: Simplex(5, radius=2.0).scaled(0.4),
    "capped": lambda: Simplex(5, radius=2.0, capped=True),
    "capped_shrunk": lambda: Simplex(5, capped=True).scaled(0.3),
}


def _as_lp(K: Simplex):
    """K as ``{x : x >= o, sum(x - o) (= or <=) r}`` for scipy's linprog and CVXPY."""
    o, r, d = float(K.offset), float(K.radius), K.dim
    row, rhs = np.ones((1, d)), np.array([r + d * o])
    return o, r, row, rhs


@pytest.mark.parametrize("name", SETS)
def test_lmo_matches_linprog(name):
    K = SETS[name]()
    o, _, row, rhs = _as_lp(K)
    rng = np.random.default_rng(0)
    for _ in range(5):
        d = rng.standard_normal(5) + (1.0 if name.startswith("capped") and rng.uniform() < 0.4 else 0.0)
        kw = {"A_ub": row, "b_ub": rhs} if K.capped else {"A_eq": row, "b_eq": rhs}
        res = linprog(d, bounds=[(o, None)] * 5, method="highs", **kw)
        v = np.asarray(_lmo(K, jnp.asarray(d)))
        assert d @ v == pytest.approx(res.fun, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(v, res.x, atol=1e-12)  # the optimum is unique for generic d


def test_lmo_of_minus_e_i_is_exactly_the_vertex():
    for K in (Simplex(4, radius=2.0), Simplex(4, radius=2.0, capped=True)):
        for i in range(4):
            e = np.zeros(4)
            e[i] = 1.0
            np.testing.assert_array_equal(_lmo(K, jnp.asarray(-e)), 2.0 * e)
    capped = Simplex(4, radius=2.0, capped=True)
    np.testing.assert_array_equal(_lmo(capped, jnp.asarray(np.eye(4)[2])), np.zeros(4))  # the corner


def test_ties_and_zero_direction():
    np.testing.assert_array_equal(_lmo(Simplex(3), jnp.array([1.0, -2.0, -2.0])), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(_lmo(Simplex(3), jnp.zeros(3)), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(_lmo(Simplex(3, capped=True), jnp.zeros(3)), [0.0, 0.0, 0.0])


def _duchi(y, r):
    """Sort-based projection onto {x >= 0, sum x = r} (Duchi et al. 2008, Fig. 1), in NumPy."""
    u = np.sort(y)[::-1]
    css = np.cumsum(u)
    rho = np.nonzero(u * np.arange(1, len(y) + 1) > css - r)[0][-1]
    return np.maximum(y - (css[rho] - r) / (rho + 1), 0)


@pytest.mark.parametrize("name", SETS)
def test_projection_matches_references(name):
    K = SETS[name]()
    o, r, _, _ = _as_lp(K)
    rng = np.random.default_rng(1)
    for k in range(6):
        y = rng.standard_normal(5) * (0.1 if k % 2 else 3.0) + o
        p = np.asarray(_project(K, jnp.asarray(y)))
        if not K.capped:
            np.testing.assert_allclose(p, _duchi(y - o, r) + o, atol=1e-13)
        x = cp.Variable(5)
        total = cp.sum(x - o) <= r if K.capped else cp.sum(x - o) == r
        problem = cp.Problem(cp.Minimize(cp.sum_squares(x - y)), [x >= o, total])
        problem.solve(solver="CLARABEL")
        np.testing.assert_allclose(p, x.value, atol=1e-6)
        assert np.sum((p - y) ** 2) <= problem.value + 1e-8


def test_capped_projection_keeps_interior_mass():
    K = Simplex(3, radius=2.0, capped=True)
    np.testing.assert_allclose(_project(K, jnp.array([0.5, -1.0, 0.2])), [0.5, 0.0, 0.2])


def test_scaled_simplex_is_the_shifted_smaller_simplex():
    K = Simplex(4).scaled(0.5)  # {x >= (1 - s) / d, sum x = 1}
    assert float(K.offset) == pytest.approx(0.125) and float(K.radius) == pytest.approx(0.5)
    assert bool(_contains(K, jnp.array([0.125, 0.125, 0.125, 0.625]), 1e-12))
    assert not bool(_contains(K, jnp.array([0.1, 0.15, 0.125, 0.625]), 1e-12))
    assert not bool(_contains(K, jnp.array([0.125, 0.125, 0.125, 0.7]), 1e-12))  # off the hyperplane


def test_inner_radius_is_tight():
    for K in (Simplex(5, radius=2.0), Simplex(5, radius=2.0).scaled(0.5)):  # relative to the affine hull
        c, rho = np.asarray(K.center()), float(K.inner_radius)
        u = -(np.eye(5)[0] - 1 / 5)
        u /= np.linalg.norm(u)  # towards the facet x_0 = offset, inside the hyperplane
        assert bool(_contains(K, jnp.asarray(c + rho * u), 1e-12))
        assert not bool(_contains(K, jnp.asarray(c + rho * (1 + 1e-6) * u), 1e-12))
    K = Simplex(5, radius=2.0, capped=True)
    c, rho = np.asarray(K.center()), float(K.inner_radius)
    for u in (-np.eye(5)[1], np.ones(5) / np.sqrt(5)):  # the facet x_1 = 0 and the facet sum x = r
        assert bool(_contains(K, jnp.asarray(c + rho * u), 1e-12))
        assert not bool(_contains(K, jnp.asarray(c + rho * (1 + 1e-6) * u), 1e-12))


def test_diameter():
    assert float(Simplex(5, radius=2.0).diameter) == pytest.approx(2 * np.sqrt(2))
    assert float(Simplex(5, radius=2.0, capped=True).diameter) == pytest.approx(2 * np.sqrt(2))
    assert float(Simplex(1, radius=2.0, capped=True).diameter) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Simplex(1), "dim must be >= 2"),
        (lambda: Simplex(0, capped=True), "dim"),
        (lambda: Simplex(3, radius=0.0), "radius"),
        (lambda: Simplex(3, offset=float("nan")), "offset"),
        (lambda: Simplex(3, capped="yes"), "capped"),
    ],
)
def test_bad_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()

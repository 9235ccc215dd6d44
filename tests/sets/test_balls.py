"""L2Ball, L1Ball and LpBall: exact vertices, closed forms, CVXPY references, paper 001's constants."""

from __future__ import annotations

import cvxpy as cp
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocokit.sets import L1Ball, L2Ball, LpBall

from .suite import Case, lp_norm


def _l2_min(K, d):
    return -float(K.radius) * float(np.linalg.norm(d))


def _l1_min(K, d):
    return -float(K.radius) * float(np.max(np.abs(d)))


def _lp_min(K, d):
    p = float(K.p)
    return -float(K.radius) * lp_norm(d, p / (p - 1))


def _l2(x):
    return float(np.linalg.norm(x))


def _l1(x):
    return float(np.abs(x).sum())


def _lp_case(name, radius, p):
    return Case(name, lambda: LpBall(5, radius=radius, p=p), _lp_min, lambda x: lp_norm(x, p), proj_tol=1e-9)


SUITE_CASES = [
    Case("l2", lambda: L2Ball(5, radius=1.5), _l2_min, _l2),
    Case("l2_scaled", lambda: L2Ball(5).scaled(0.25), _l2_min, _l2),
    Case("l1", lambda: L1Ball(5, radius=2.0), _l1_min, _l1),
    _lp_case("lp_1.5", 1.0, 1.5),
    _lp_case("lp_1.1", 2.0, 1.1),
    _lp_case("lp_3", 0.5, 3.0),
]

_lmo = eqx.filter_jit(lambda K, d: K.lmo(d))
_project = eqx.filter_jit(lambda K, x: K.project(x))
_contains = eqx.filter_jit(lambda K, x, atol: K.contains(x, atol))
_CLARABEL = {"solver": "CLARABEL"}


def _lp(x, p):
    return float(np.sum(np.abs(x) ** p) ** (1 / p))


@pytest.mark.parametrize("make", [lambda: L2Ball(4, 1.5), lambda: L1Ball(4, 1.5), lambda: LpBall(4, 1.5, 1.7)])
def test_lmo_of_minus_e_i_is_exactly_radius_e_i(make):
    K = make()
    for i in range(4):
        e = np.zeros(4)
        e[i] = 1.0
        np.testing.assert_array_equal(_lmo(K, jnp.asarray(-e)), 1.5 * e)
        np.testing.assert_array_equal(_lmo(K, jnp.asarray(2 * e)), -1.5 * e)


def test_zero_direction_gives_radius_e0():
    for K in (L2Ball(3, 2.0), L1Ball(3, 2.0), LpBall(3, 2.0, 1.3)):
        np.testing.assert_array_equal(_lmo(K, jnp.zeros(3)), [2.0, 0.0, 0.0])


def test_l1_ties_take_the_lowest_index():
    K = L1Ball(4, 1.0)
    np.testing.assert_array_equal(_lmo(K, jnp.array([0.5, -2.0, 2.0, 1.0])), [0.0, 1.0, 0.0, 0.0])


def test_l2_lmo_closed_form_and_extreme_scales():
    K = L2Ball(3, 2.0)
    for scale in (1e-300, 1.0, 1e300):  # normalising by max|d| first: no underflow or overflow
        d = np.array([3.0, -4.0, 0.0]) * scale
        np.testing.assert_allclose(_lmo(K, jnp.asarray(d)), [-1.2, 1.6, 0.0], rtol=1e-15)


def test_l1_projection_matches_the_sort_reference():
    def reference(y, r):  # Duchi et al. 2008, Fig. 1, on |y|
        if np.abs(y).sum() <= r:
            return y
        u = np.sort(np.abs(y))[::-1]
        css = np.cumsum(u)
        rho = np.nonzero(u * np.arange(1, len(u) + 1) > css - r)[0][-1]
        theta = (css[rho] - r) / (rho + 1)
        return np.sign(y) * np.maximum(np.abs(y) - theta, 0)

    K = L1Ball(6, 1.3)
    rng = np.random.default_rng(0)
    for _ in range(10):
        y = rng.standard_normal(6) * rng.uniform(0.1, 5)
        np.testing.assert_allclose(_project(K, jnp.asarray(y)), reference(y, 1.3), atol=1e-13)


@pytest.mark.parametrize("p", [1.1, 1.5, 3.0])
def test_lp_lmo_matches_cvxpy(p):
    K = LpBall(4, 1.7, p)
    rng = np.random.default_rng(1)
    for _ in range(2):
        d = rng.standard_normal(4)
        x = cp.Variable(4)
        cp.Problem(cp.Minimize(d @ x), [cp.pnorm(x, p) <= 1.7]).solve(**_CLARABEL)
        v = np.asarray(_lmo(K, jnp.asarray(d)))
        q = p / (p - 1)
        assert d @ v == pytest.approx(-1.7 * _lp(d, q), rel=1e-12)
        assert d @ v <= d @ x.value + 1e-7  # at least as good as the conic solver's point
        np.testing.assert_allclose(v, x.value, atol=1e-4)  # the solver's point is only accurate to ~1e-5
        assert _lp(v, p) == pytest.approx(1.7, rel=1e-12)


def test_lp_lmo_is_finite_for_p_near_one_and_large_p():
    for p in (1.001, 1.01, 50.0):
        K = LpBall(4, 1.0, p)
        d = np.array([1.0, -0.5, 0.9, 1e-3])
        v = np.asarray(_lmo(K, jnp.asarray(d)))
        q = p / (p - 1)
        assert np.all(np.isfinite(v))
        assert _lp(v, p) == pytest.approx(1.0, rel=1e-9)
        assert d @ v == pytest.approx(-_lp(d, q), rel=1e-9)


def _kkt_residual(y, z, p):
    """On the sphere, ``y - z = mu sign(z) |z|^(p-1)`` for one ``mu >= 0``: (fitted mu, residual norm)."""
    g = np.sign(z) * np.abs(z) ** (p - 1)
    mu = (y - z) @ g / (g @ g)
    return mu, float(np.linalg.norm(y - z - mu * g))


@pytest.mark.parametrize("p", [1.01, 1.3, 1.5, 2.0, 3.0, 20.0])
def test_lp_projection_satisfies_the_kkt_conditions(p):
    K = LpBall(6, 0.8, p)
    rng = np.random.default_rng(2)
    for scale in (1 + 1e-6, 1.5, 1e3, 1e8):
        y = rng.standard_normal(6)
        y[3] = 0.0
        y = y / _lp(y, p) * 0.8 * scale
        z = np.asarray(_project(K, jnp.asarray(y)))
        assert _lp(z, p) == pytest.approx(0.8, rel=1e-12) and _lp(z, p) <= 0.8 * (1 + 1e-14)
        assert z[3] == 0.0 and np.all(np.sign(z) * np.sign(y) >= 0)
        mu, residual = _kkt_residual(y, z, p)
        assert mu >= 0 and residual <= 1e-12 * np.linalg.norm(y)


@pytest.mark.parametrize("p", [1.2, 1.5, 2.5])
def test_lp_projection_matches_cvxpy(p):
    K = LpBall(4, 1.0, p)
    rng = np.random.default_rng(3)
    for _ in range(2):
        y = rng.standard_normal(4) * 2
        x = cp.Variable(4)
        problem = cp.Problem(cp.Minimize(cp.sum_squares(x - y)), [cp.pnorm(x, p) <= 1.0])
        problem.solve(**_CLARABEL)
        z = np.asarray(_project(K, jnp.asarray(y)))
        assert np.sum((y - z) ** 2) <= problem.value + 1e-7  # at least as close as the conic solver's
        np.testing.assert_allclose(z, x.value, atol=1e-4)  # whose point is only accurate to ~1e-5


def test_lp_with_p_two_is_the_l2_ball():
    lp, l2 = LpBall(5, 1.3, 2.0), L2Ball(5, 1.3)
    rng = np.random.default_rng(4)
    for _ in range(5):
        d = jnp.asarray(rng.standard_normal(5) * 3)
        np.testing.assert_allclose(_lmo(lp, d), _lmo(l2, d), rtol=1e-13)
        np.testing.assert_allclose(_project(lp, d), _project(l2, d), rtol=1e-12, atol=1e-14)
    assert float(lp.strong_convexity) == pytest.approx(1 / 1.3)


def test_lp_strong_convexity_constant_matches_the_spec_examples():
    # spec paper001.md §4.1: r = 1; (d, p) = (100, 1.5), (1000, 1.5), (100, 1.1)
    assert float(LpBall(100, 1.0, 1.5).strong_convexity) == pytest.approx(0.232, abs=5e-4)
    assert float(LpBall(1000, 1.0, 1.5).strong_convexity) == pytest.approx(0.158, abs=5e-4)
    assert float(LpBall(100, 1.0, 1.1).strong_convexity) == pytest.approx(0.0152, abs=5e-5)
    assert float(LpBall(10, 1.0, 3.0).strong_convexity) == 0.0


_def3 = eqx.filter_jit(
    lambda K, x, y, z, g: K.contains(
        g * x + (1 - g) * y + g * (1 - g) * K.strong_convexity / 2 * jnp.sum((x - y) ** 2) * z, 1e-12
    )
)


@settings(max_examples=40, deadline=None)
@given(
    p=st.sampled_from([1.2, 1.5, 2.0]),
    seed=st.integers(0, 2**31 - 1),
    gamma=st.floats(0.05, 0.95),
)
def test_lp_ball_is_alpha_strongly_convex_as_in_def_3(p, seed, gamma):
    """Paper 001, Def. 3: gamma x + (1 - gamma) y + gamma (1 - gamma) (alpha / 2) ||x - y||^2 z in K."""
    K = LpBall(3, 1.0, p)
    rng = np.random.default_rng(seed)
    x, y = (_lmo(K, jnp.asarray(rng.standard_normal(3))) for _ in range(2))  # points on the sphere
    z = rng.standard_normal(3)
    assert bool(_def3(K, x, y, jnp.asarray(z / np.linalg.norm(z)), jnp.asarray(gamma)))


def test_lp_geometry_is_tight():
    for p in (1.5, 3.0):
        K = LpBall(4, 2.0, p)
        ones = np.ones(4) / 2.0  # a unit vector along the diagonal
        rho = float(K.inner_radius)
        assert bool(_contains(K, jnp.asarray(rho * ones), 1e-12))
        if p < 2:  # the inner ball touches the sphere along the diagonal
            assert not bool(_contains(K, jnp.asarray(rho * (1 + 1e-6) * ones), 1e-12))
        else:  # the diameter is attained on the diagonal
            corner = 2.0 * 4 ** (-1 / p) * np.ones(4)
            assert float(K.diameter) == pytest.approx(2 * np.linalg.norm(corner), rel=1e-12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: L2Ball(0), "dim"),
        (lambda: L2Ball(3, 0.0), "radius"),
        (lambda: L2Ball(3, float("nan")), "radius"),
        (lambda: L1Ball(3, -1.0), "radius"),
        (lambda: L1Ball(2.0, 1.0), "dim"),
        (lambda: LpBall(3, 1.0, 1.0), "p must be in"),
        (lambda: LpBall(3, 1.0, float("inf")), "p must be in"),
        (lambda: LpBall(3, 1.0, 0.5), "p must be in"),
        (lambda: LpBall(3, -2.0, 1.5), "radius"),
    ],
)
def test_bad_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()

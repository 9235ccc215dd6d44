"""KSparsePolytope: enumerated vertices, CVXPY and bisection references, geometry, and the set suite's checks."""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import linprog

from ocokit.sets import KSparsePolytope

from .suite import Case

_lmo = eqx.filter_jit(lambda P, d: P.lmo(d))
_project = eqx.filter_jit(lambda P, x: P.project(x))
_contains = eqx.filter_jit(lambda P, x, atol: P.contains(x, atol))
_CLARABEL = {"solver": "CLARABEL"}

# (dim, K): K = 1 (the l1 ball), 1 < K < d, K = d and K > d (the box).
SHAPES = [(4, 1), (4, 2), (5, 3), (3, 3), (3, 5)]


def _vertices(dim: int, K: int, tau: float) -> np.ndarray:
    """Every point with exactly ``min(K, dim)`` nonzero entries, each ``± tau``: the polytope's vertices."""
    k = min(K, dim)
    out = []
    for support in itertools.combinations(range(dim), k):
        for signs in itertools.product((-1.0, 1.0), repeat=k):
            v = np.zeros(dim)
            v[list(support)] = tau * np.asarray(signs)
            out.append(v)
    return np.stack(out)


def _rule(d: np.ndarray, K: int, tau: float) -> np.ndarray:
    """The documented lmo, in NumPy: ``-tau sign`` on the top-K ``|d_i|`` (lowest index on ties), ``+tau`` at 0."""
    top = np.argsort(-np.abs(d), kind="stable")[: min(K, d.size)]
    v = np.zeros(d.size)
    v[top] = np.where(d[top] > 0, -tau, tau)
    return v


def _reference_projection(x: np.ndarray, K: int, tau: float) -> np.ndarray:
    """Bisection on theta (200 halvings, float64): ``sum_i min(max(|x_i| - theta, 0), tau) = K tau``."""
    a = np.abs(x)
    mass = lambda theta: np.minimum(np.maximum(a - theta, 0), tau).sum()  # noqa: E731
    if mass(0.0) <= K * tau:
        return np.clip(x, -tau, tau)
    lo, hi = 0.0, float(a.max())
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mass(mid) > K * tau else (lo, mid)
    return np.sign(x) * np.minimum(np.maximum(a - hi, 0), tau)


def _cvxpy_projection(x: np.ndarray, K: int, tau: float) -> tuple[np.ndarray, float]:
    y = cp.Variable(x.size)
    constraints = [cp.norm_inf(y) <= tau, cp.norm1(y) <= K * tau]
    problem = cp.Problem(cp.Minimize(cp.sum_squares(y - x)), constraints)
    problem.solve(**_CLARABEL)
    return np.asarray(y.value), float(problem.value)


_ties = st.sampled_from([-2.0, -1.0, -0.0, 0.0, 1.0, 2.0])
_entries = st.one_of(_ties, st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False))


# --------------------------------------------------------------------------------------------------- lmo


@pytest.mark.parametrize(("dim", "K"), SHAPES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_lmo_is_optimal_over_all_vertices(dim, K, data):
    tau = 1.5
    P = KSparsePolytope(dim, K, tau)
    d = data.draw(hnp.arrays(np.float64, (dim,), elements=_entries))
    v = np.asarray(_lmo(P, jnp.asarray(d)))
    vertices = _vertices(dim, K, tau)
    best = float(np.min(vertices @ d))
    assert d @ v == pytest.approx(best, rel=1e-14, abs=1e-12)
    assert np.any(np.all(vertices == v, axis=1)), "lmo must return a vertex"
    np.testing.assert_array_equal(v, _rule(d, K, tau))  # ties: lowest index; zero entries: +tau


def test_vertex_enumeration_is_the_inequality_description():
    """The vertices' LP value equals linprog over ``{||x||_inf <= tau, ||x||_1 <= K tau}`` (x = p - n)."""
    rng = np.random.default_rng(0)
    for dim, K in SHAPES:
        tau = 0.7
        for _ in range(3):
            d = rng.standard_normal(dim)
            c = np.concatenate([d, -d])  # x = p - n, p, n >= 0
            a_ub = np.vstack([np.ones(2 * dim), np.hstack([np.eye(dim), np.eye(dim)])])
            b_ub = np.concatenate([[K * tau], np.full(dim, tau)])
            res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=[(0, None)] * (2 * dim), method="highs")
            assert float(np.min(_vertices(dim, K, tau) @ d)) == pytest.approx(res.fun, rel=1e-10, abs=1e-12)


def test_lmo_of_minus_e_i_and_ties():
    P = KSparsePolytope(4, K=2, tau=2.0)
    for i in range(4):
        e = np.eye(4)[i]
        v = np.asarray(_lmo(P, jnp.asarray(-e)))
        assert v[i] == 2.0 and np.abs(v).sum() == 4.0  # e_i's coordinate, then the lowest free index
    np.testing.assert_array_equal(_lmo(P, jnp.array([1.0, -1.0, 1.0, -1.0])), [-2.0, 2.0, 0.0, 0.0])
    np.testing.assert_array_equal(_lmo(P, jnp.array([0.0, 3.0, -3.0, 3.0])), [0.0, -2.0, 2.0, 0.0])


def test_zero_direction_gives_a_deterministic_vertex():
    for dim, K in SHAPES:
        P = KSparsePolytope(dim, K, 1.5)
        v = np.asarray(_lmo(P, jnp.zeros(dim)))
        assert np.all(np.isfinite(v))
        expected = np.zeros(dim)
        expected[: min(K, dim)] = 1.5
        np.testing.assert_array_equal(v, expected)
        np.testing.assert_array_equal(_lmo(P, -jnp.zeros(dim)), expected)
        assert bool(_contains(P, jnp.asarray(v), 1e-12))


# ---------------------------------------------------------------------------------------------- project


@pytest.mark.parametrize(("dim", "K"), [(4, 1), (6, 2), (6, 4), (3, 5)])
def test_projection_matches_cvxpy(dim, K):
    tau = 0.8
    P = KSparsePolytope(dim, K, tau)
    rng = np.random.default_rng(dim * 10 + K)
    for scale in (0.1, 0.5, 2.0, 20.0):  # inside, clipped only, and on the l1 face
        x = rng.standard_normal(dim) * scale
        z = np.asarray(_project(P, jnp.asarray(x)))
        y, value = _cvxpy_projection(x, K, tau)
        np.testing.assert_allclose(z, y, atol=1e-6)
        assert np.sum((x - z) ** 2) <= value * (1 + 1e-8) + 1e-8  # as close as the (slightly infeasible) solver's


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from([(5, 1), (5, 2), (6, 3), (4, 4), (3, 7)]),
    tau=st.sampled_from([0.3, 1.0, 2.5]),
    data=st.data(),
)
def test_projection_matches_bisection_lands_in_K_and_is_idempotent(shape, tau, data):
    dim, K = shape
    P = KSparsePolytope(dim, K, tau)
    x = data.draw(hnp.arrays(np.float64, (dim,), elements=_entries))
    z = np.asarray(_project(P, jnp.asarray(x)))
    scale = 1 + np.abs(x).max()
    np.testing.assert_allclose(z, _reference_projection(x, K, tau), atol=1e-12 * scale)
    assert np.all(np.isfinite(z))
    assert bool(_contains(P, jnp.asarray(z), 1e-12 * scale))
    np.testing.assert_allclose(_project(P, jnp.asarray(z)), z, atol=1e-12 * scale)
    assert np.all(np.sign(z) * np.sign(x) >= 0)


def test_projection_fixes_points_of_K_and_breakpoint_ties():
    P = KSparsePolytope(4, K=2, tau=1.0)
    for u in ([1.0, -1.0, 0.0, 0.0], [0.5, 0.5, -0.5, 0.5], [0.0, 0.0, 0.0, 0.0], [1.0, 0.25, -0.75, 0.0]):
        np.testing.assert_array_equal(_project(P, jnp.asarray(u)), u)
    # theta lands exactly on a breakpoint: |x| = (3, 2, 1, 1) gives theta = 1, so (1, 1, 0, 0)
    np.testing.assert_allclose(_project(P, jnp.array([3.0, -2.0, 1.0, -1.0])), [1.0, -1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(_project(P, jnp.array([3.0, 1.5, 1.0, 0.0])), [1.0, 0.75, 0.25, 0.0], atol=1e-15)


# ----------------------------------------------------------------------------------- jit, vmap, dtype


def test_jit_and_vmap_over_inputs_and_over_tau():
    P = KSparsePolytope(5, K=2, tau=1.0)
    rng = np.random.default_rng(1)
    ds, xs = (jnp.asarray(rng.standard_normal((6, 5)) * 3) for _ in range(2))
    vs, ps = jax.jit(jax.vmap(lambda d, x: (P.lmo(d), P.project(x))))(ds, xs)
    for i in range(6):
        np.testing.assert_array_equal(vs[i], _lmo(P, ds[i]))
        np.testing.assert_allclose(ps[i], _reference_projection(np.asarray(xs[i]), 2, 1.0), atol=1e-12)
    taus = jnp.array([0.5, 1.0, 2.0])
    batched = eqx.filter_vmap(lambda t: KSparsePolytope(5, K=2, tau=t).project(xs[0]))(taus)
    for t, p in zip(taus, batched, strict=True):
        np.testing.assert_allclose(p, _reference_projection(np.asarray(xs[0]), 2, float(t)), atol=1e-12)


def test_float32_in_float32_out():
    P = KSparsePolytope(5, K=2, tau=1.0)
    x = jnp.asarray([3.0, -1.5, 0.2, 0.0, 2.0], jnp.float32)
    assert _lmo(P, x).dtype == jnp.float32
    z = _project(P, x)
    assert z.dtype == jnp.float32
    np.testing.assert_allclose(z, _reference_projection(np.asarray(x, np.float64), 2, 1.0), atol=1e-6)


# --------------------------------------------------------------------------------------------- geometry


@pytest.mark.parametrize(
    ("dim", "K", "tau", "diameter", "inner_radius"),
    [
        (4, 2, 1.0, 2 * math.sqrt(2), 1.0),
        (9, 1, 2.0, 4.0, 2 / 3),
        (16, 2, 1.0, 2 * math.sqrt(2), 0.5),
        (3, 5, 1.0, 2 * math.sqrt(3), 1.0),
    ],
)
def test_diameter_and_inner_radius(dim, K, tau, diameter, inner_radius):
    P = KSparsePolytope(dim, K, tau)
    assert float(P.diameter) == pytest.approx(diameter, rel=1e-15)
    assert float(P.inner_radius) == pytest.approx(inner_radius, rel=1e-15)
    if dim <= 9:  # the diameter is attained by two opposite vertices and by no farther pair
        vertices = _vertices(dim, K, tau)
        farthest = max(np.linalg.norm(vertices - v, axis=1).max() for v in vertices)
        assert farthest == pytest.approx(diameter, rel=1e-15)
    # the inner ball is tight: it touches the box face along e_0 or the l1 face along the diagonal
    r = float(P.inner_radius)
    e0, diagonal = np.eye(dim)[0], np.ones(dim) / math.sqrt(dim)
    for u in (e0, diagonal, -diagonal):
        assert bool(_contains(P, jnp.asarray(r * u), 1e-12))
    assert not all(bool(_contains(P, jnp.asarray(r * (1 + 1e-6) * u), 1e-12)) for u in (e0, diagonal))


def test_center_and_scaled():
    P = KSparsePolytope(5, K=2, tau=2.0)
    np.testing.assert_array_equal(P.center(), np.zeros(5))
    Q = P.scaled(0.25)
    assert type(Q) is KSparsePolytope and (Q.dim, Q.K) == (5, 2) and float(Q.tau) == 0.5


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: KSparsePolytope(4, 0), "K must be"),
        (lambda: KSparsePolytope(4, -1), "K must be"),
        (lambda: KSparsePolytope(4, 2.5), "K must be"),
        (lambda: KSparsePolytope(4, 2.0), "K must be"),
        (lambda: KSparsePolytope(4, True), "K must be"),
        (lambda: KSparsePolytope(4, 2, 0.0), "tau must be"),
        (lambda: KSparsePolytope(4, 2, -1.0), "tau must be"),
        (lambda: KSparsePolytope(4, 2, float("nan")), "tau must be"),
        (lambda: KSparsePolytope(0, 2), "dim must be"),
        (lambda: KSparsePolytope(4.0, 2), "dim must be"),
        (lambda: KSparsePolytope(4, 2).scaled(1.5), "s must be"),
        (lambda: KSparsePolytope(4, 2).scaled(0.0), "s must be"),
    ],
)
def test_bad_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------------------- the set suite, on this set
# tests/sets/test_set_suite.py collects these and runs every check on them, with the closed-form reference
# ``min_{v in P} <d, v> = -tau * (sum of the min(K, d) largest |d_i|)``.


def _ksparse_min(P, d):
    top = np.sort(np.abs(np.ravel(d)))[::-1][: min(P.K, P.dim)]
    return -float(P.tau) * float(top.sum())


SUITE_CASES = [
    Case("ksparse", lambda: KSparsePolytope(6, K=2, tau=1.5), _ksparse_min),
    Case("ksparse_scaled", lambda: KSparsePolytope(6, K=2, tau=2.0).scaled(0.4), _ksparse_min),
    Case("ksparse_l1", lambda: KSparsePolytope(6, K=1, tau=1.0), _ksparse_min),
    Case("ksparse_box", lambda: KSparsePolytope(6, K=8, tau=0.5), _ksparse_min),
]

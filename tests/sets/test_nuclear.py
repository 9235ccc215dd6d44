"""NuclearNormBall: the Lanczos LMO against a full SVD, warm starts, tolerance semantics, projection."""

from __future__ import annotations

import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocokit.sets import NuclearNormBall

from .suite import Case


def _nuclear_min(K, d):
    return -float(K.radius) * float(np.linalg.svd(d, compute_uv=False)[0])


def _nuclear_norm(x):
    return float(np.linalg.svd(x, compute_uv=False).sum())


SUITE_CASES = [
    Case("nuclear", lambda: NuclearNormBall((3, 5), radius=2.0), _nuclear_min, _nuclear_norm, lmo_rtol=1e-6),
]

_warm = eqx.filter_jit(lambda K, G, state: K.warm_lmo(G, state))
_project = eqx.filter_jit(lambda K, x: K.project(x))
_contains = eqx.filter_jit(lambda K, x, atol: K.contains(x, atol))


def _lmo(K, G):
    return _warm(K, jnp.asarray(G), K.lmo_init())


def _low_rank_plus_noise(rng, m, n, rank=3, noise=0.05):
    return rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n)) + noise * rng.standard_normal((m, n))


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (1, 5)])
def test_lmo_matches_the_full_svd(shape):
    K = NuclearNormBall(shape, radius=1.5)
    rng = np.random.default_rng(sum(shape))
    for _ in range(3):
        G = rng.standard_normal(shape)
        V, state = _lmo(K, G)
        U, s, Vt = np.linalg.svd(G)
        assert np.vdot(G, V) == pytest.approx(-1.5 * s[0], rel=1e-10)
        np.testing.assert_allclose(V, -1.5 * np.outer(U[:, 0], Vt[0]), atol=1e-5)  # generic: a unique vertex
        assert np.linalg.svd(np.asarray(V), compute_uv=False).sum() == pytest.approx(1.5, rel=1e-12)
        assert 1 <= int(K.lmo_calls(state)) <= K.max_iter


def test_warm_start_needs_fewer_iterations_on_a_slowly_changing_sequence():
    shape = (40, 60)
    K = NuclearNormBall(shape, radius=1.0)
    rng = np.random.default_rng(0)
    G = _low_rank_plus_noise(rng, *shape, noise=0.5)
    state = K.lmo_init()
    warm_total = cold_total = 0
    for _ in range(8):
        G = G + 0.02 * rng.standard_normal(shape)
        V_warm, state = _warm(K, jnp.asarray(G), state)
        V_cold, cold = _lmo(K, G)
        sigma1 = np.linalg.svd(G, compute_uv=False)[0]
        assert np.vdot(G, V_warm) == pytest.approx(-sigma1, rel=1e-6)
        assert np.vdot(G, V_warm) == pytest.approx(np.vdot(G, V_cold), rel=1e-6)
        warm_total += int(K.lmo_calls(state))
        cold_total += int(K.lmo_calls(cold))
    assert warm_total < cold_total


def test_warm_start_orthogonal_to_the_gradient_restarts_cold():
    """A warm start e_1 against a one-entry gradient in column 3 (online matrix completion): G v = 0."""
    K = NuclearNormBall((6, 4), radius=2.0)
    state = type(K.lmo_init())(jnp.zeros(4).at[1].set(1.0), jnp.asarray(0, jnp.int32))
    G = jnp.zeros((6, 4)).at[2, 3].set(-1.5)
    V, state = _warm(K, G, state)
    expected = np.zeros((6, 4))
    expected[2, 3] = 2.0  # -r u v^T with G = -1.5 e_2 e_3^T
    np.testing.assert_allclose(V, expected, atol=1e-12)
    assert int(K.lmo_calls(state)) >= 2  # the failed warm attempt plus the cold restart


def _state(K, v):
    return eqx.tree_at(lambda s: s.v, K.lmo_init(), jnp.asarray(v, float))


def test_warm_start_on_a_smaller_entry_of_a_sparse_gradient_restarts_cold():
    """e_0 is an exact right singular vector of G (residual 0), but of the smaller value: the row norms catch it."""
    K = NuclearNormBall((6, 4), radius=2.0)
    G = jnp.zeros((6, 4)).at[0, 0].set(0.5).at[2, 3].set(-1.5)
    V, state = _warm(K, G, _state(K, np.eye(4)[0]))
    expected = np.zeros((6, 4))
    expected[2, 3] = 2.0
    np.testing.assert_allclose(V, expected, atol=1e-12)
    assert int(K.lmo_calls(state)) >= 2


def test_a_warm_start_within_the_tolerance_costs_one_step():
    """The power step from a converged warm vector is the whole call (two products with G, no Lanczos)."""
    K = NuclearNormBall((30, 20), radius=1.0)
    G = _low_rank_plus_noise(np.random.default_rng(4), 30, 20)
    _, s, Vt = np.linalg.svd(G)
    V, state = _warm(K, jnp.asarray(G), _state(K, Vt[0]))
    assert int(K.lmo_calls(state)) == 1
    assert np.vdot(G, V) == pytest.approx(-s[0], rel=1e-12)


def test_a_dominant_direction_stops_on_the_kato_temple_bound_within_the_tolerance():
    """G = 10 u v^T + a small remainder: tr(G^T G) < 2 sigma_1^2, so a warm vector whose residual is far above tol
    already gives <G, V> within tol (error <= residual^2 / (2 theta - tr)), certified, in one step."""
    rng = np.random.default_rng(6)
    u, v = (x / np.linalg.norm(x) for x in (rng.standard_normal(30), rng.standard_normal(20)))
    G = 10 * np.outer(u, v) + 0.05 * rng.standard_normal((30, 20))
    _, s, Vt = np.linalg.svd(G)
    for tol, off in ((1e-4, 1e-3), (1e-6, 1e-5)):
        warm = Vt[0] + off * rng.standard_normal(20)
        warm = warm / np.linalg.norm(warm)
        y = G @ warm
        assert np.linalg.norm(y @ G - (y @ y) * warm) > 10 * tol * (y @ y)  # the residual rule alone would go on
        K = NuclearNormBall((30, 20), radius=1.0, tol=tol)
        V, state = _warm(K, jnp.asarray(G), _state(K, warm))
        assert int(K.lmo_calls(state)) == 1
        assert -s[0] * (1 + 1e-12) <= np.vdot(G, V) <= -s[0] * (1 - tol)


def test_a_non_finite_entry_where_the_warm_vector_is_zero_gives_a_nan_vertex():
    K = NuclearNormBall((5, 4), radius=1.0)
    G = jnp.asarray(np.random.default_rng(7).standard_normal((5, 4))).at[1, 2].set(jnp.inf)
    V, _ = _warm(K, G, _state(K, np.eye(4)[0]))  # the warm vector is zero on column 2
    assert np.isnan(V).all()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    tol=st.sampled_from([1e-2, 1e-4, 1e-6, 1e-9]),
    rank=st.integers(1, 6),
    noise=st.sampled_from([0.0, 0.01, 0.3, 1.0]),
    drift=st.sampled_from([0.0, 1e-4, 1e-2, 1.0]),
)
def test_warm_lmo_is_within_its_tolerance_of_the_svd(seed, tol, rank, noise, drift):
    """<G, V> lies in [-r sigma_1, -r sigma_1 (1 - tol)] against numpy's SVD, whatever the warm start left: G low
    rank plus noise, the warm vector the top vector of a previous direction (G drifted by ``drift``)."""
    rng = np.random.default_rng(seed)
    shape = (12, 9)
    K = NuclearNormBall(shape, radius=1.5, tol=tol)
    G = _low_rank_plus_noise(rng, *shape, rank=rank, noise=noise)
    previous = G + drift * rng.standard_normal(shape)
    warm = np.linalg.svd(previous)[2][0]
    V, _ = _warm(K, jnp.asarray(G), _state(K, warm))
    s1 = np.linalg.svd(G, compute_uv=False)[0]
    assert -1.5 * s1 * (1 + 1e-12) <= np.vdot(G, V) <= -1.5 * s1 * (1 - tol)
    assert np.linalg.svd(np.asarray(V), compute_uv=False).sum() == pytest.approx(1.5, rel=1e-12)


def test_tolerance_semantics_and_iteration_cap():
    rng = np.random.default_rng(1)
    G = rng.standard_normal((40, 60))  # a small relative gap: Lanczos needs many steps
    s1 = np.linalg.svd(G, compute_uv=False)[0]
    for tol in (1e-2, 1e-4, 1e-8):  # tol and max_iter are leaves: one compilation for all of these
        K = NuclearNormBall((40, 60), radius=1.0, tol=tol)
        V, state = _lmo(K, G)
        value = np.vdot(G, V)
        assert -s1 * (1 + 1e-12) <= value <= -s1 * (1 - tol)  # never below the optimum, within tol of it
    capped = NuclearNormBall((40, 60), radius=1.0, tol=1e-12, max_iter=3)
    V, state = _lmo(capped, G)
    assert int(capped.lmo_calls(state)) == 3
    assert bool(_contains(capped, V, 1e-12)) and np.vdot(G, V) < 0


def test_batched_warm_states_vmap_like_a_loop():
    K = NuclearNormBall((6, 4), radius=1.0)
    rng = np.random.default_rng(2)
    Gs = jnp.asarray(rng.standard_normal((3, 6, 4)))
    states = jax.vmap(lambda _: K.lmo_init())(jnp.arange(3))
    Vs, new = eqx.filter_jit(lambda K, Gs, states: jax.vmap(K.warm_lmo)(Gs, states))(K, Gs, states)
    for i in range(3):
        V, s = _lmo(K, Gs[i])
        np.testing.assert_allclose(Vs[i], V, atol=1e-12)
        assert int(new.iterations[i]) == int(s.iterations)


def test_projection_matches_cvxpy_and_fixes_interior_points():
    K = NuclearNormBall((3, 4), radius=1.0)
    rng = np.random.default_rng(3)
    for _ in range(2):
        Y = rng.standard_normal((3, 4))
        X = cp.Variable((3, 4))
        problem = cp.Problem(cp.Minimize(cp.sum_squares(X - Y)), [cp.normNuc(X) <= 1.0])
        problem.solve(solver="CLARABEL")
        P = np.asarray(_project(K, jnp.asarray(Y)))
        np.testing.assert_allclose(P, X.value, atol=1e-5)
        assert np.sum((P - Y) ** 2) <= problem.value + 1e-7
        assert np.linalg.svd(P, compute_uv=False).sum() == pytest.approx(1.0, rel=1e-12)
    inside = 0.2 * rng.standard_normal((3, 4)) / 3
    np.testing.assert_array_equal(_project(K, jnp.asarray(inside)), inside)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": (0, 3)}, "shape"),
        ({"shape": (3,)}, "shape"),
        ({"shape": (3, 4), "radius": 0.0}, "radius"),
        ({"shape": (3, 4), "tol": 0.0}, "tol"),
        ({"shape": (3, 4), "tol": 1.0}, "tol"),
        ({"shape": (3, 4), "max_iter": 0}, "max_iter"),
        ({"shape": (3, 4), "krylov_dim": 1}, "krylov_dim"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NuclearNormBall(**kwargs)


@pytest.mark.slow
def test_movielens_size_lmo_matches_the_svd_and_warm_starts_pay_off():
    shape = (943, 1682)
    K = NuclearNormBall(shape, radius=1.0)
    rng = np.random.default_rng(5)
    G = _low_rank_plus_noise(rng, *shape, rank=5, noise=0.3)
    V, state = _lmo(K, G)
    s1 = np.linalg.svd(G, compute_uv=False)[0]
    assert np.vdot(G, V) == pytest.approx(-s1, rel=1e-9)
    G2 = G + 0.01 * rng.standard_normal(shape)
    _, warm = _warm(K, jnp.asarray(G2), state)
    _, cold = _lmo(K, G2)
    assert int(warm.iterations) < int(cold.iterations)

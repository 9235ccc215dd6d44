"""The gradual-variation problems of paper 004's experiments: comparators, V_*, constants, drift."""

from __future__ import annotations

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import OGD, Hedge
from ocokit.engine import split_key
from ocokit.problems import DriftingAllocation, DriftingQuadratic
from ocokit.problems._gradual_variation import dykstra_projection

from ..helpers import assumption


def _episode(problem, seed, T):
    env_key = split_key(jax.random.PRNGKey(seed))[0]
    return problem.episode(env_key, T), env_key


@pytest.mark.parametrize(("drift", "seed"), [(0.0, 0), (0.3, 1), (1.0, 2)])
def test_quadratic_comparator_is_the_constrained_projection_of_the_mean(drift, seed):
    T = 30
    problem = DriftingQuadratic(dim=4, drift=drift)
    episode, env_key = _episode(problem, seed, T)
    b = np.asarray(problem.targets(episode, env_key, T))
    x_star = np.asarray(problem.best_fixed(episode, env_key, T))
    x = cp.Variable(4)
    p, q = np.asarray(problem.center2), float(problem.radius2)
    cons = [cp.norm(x) <= 1.0, x[0] <= 0.3, cp.sum_squares(x - p) <= q**2]
    cp.Problem(cp.Minimize(cp.sum_squares(x - b.mean(axis=0))), cons).solve(solver="CLARABEL")

    def total(z):
        return 0.5 * np.sum((z - b) ** 2)

    assert total(x_star) <= total(x.value) + 1e-7  # at least as good as CLARABEL ...
    assert np.all(np.asarray(problem.fixed_constraints(jnp.asarray(x_star))) <= 1e-9)  # ... and feasible
    assert np.linalg.norm(x_star) <= 1 + 1e-9
    np.testing.assert_allclose(x_star, x.value, atol=1e-5)


def test_dykstra_projects_onto_an_intersection_exactly():
    # the intersection of the half-planes x_1 <= 0 and x_2 <= 0: the projection clips both coordinates
    projections = (lambda x: x.at[0].min(0.0), lambda x: x.at[1].min(0.0))
    np.testing.assert_allclose(dykstra_projection(jnp.array([2.0, 3.0, -1.0]), projections, 50), [0, 0, -1])


@pytest.mark.parametrize(("drift", "seed"), [(0.0, 0), (0.5, 3)])
def test_allocation_comparator_solves_the_linear_program(drift, seed):
    T, d = 25, 7
    problem = DriftingAllocation(dim=d, drift=drift)
    episode, env_key = _episode(problem, seed, T)
    L = np.asarray(problem.costs(episode, env_key, T)).sum(axis=0)
    x_star = np.asarray(problem.best_fixed(episode, env_key, T))
    x = cp.Variable(d)
    cons = [x >= 0, cp.sum(x) == 1, np.asarray(problem.price) @ x <= problem.budget]
    lp = cp.Problem(cp.Minimize(L @ x), cons)
    lp.solve(solver="HIGHS")
    assert L @ x_star == pytest.approx(lp.value, abs=1e-9)
    assert np.all(x_star >= 0) and x_star.sum() == pytest.approx(1.0)
    assert float(problem.fixed_constraints(jnp.asarray(x_star))[0]) <= 1e-12


def test_gradual_variation_is_computed_exactly():
    T = 20
    problem = DriftingQuadratic(dim=3, drift=0.4)
    episode, env_key = _episode(problem, 4, T)
    b = np.asarray(problem.targets(episode, env_key, T))
    # t = 1 term: max over the unit ball of ||x - b_1||^2, attained at x = -b_1 / ||b_1||
    x_far = -b[0] / np.linalg.norm(b[0])
    expected = np.sum((x_far - b[0]) ** 2) + np.sum(np.diff(b, axis=0) ** 2)
    assert float(problem.gradient_variation(episode, env_key, T)) == pytest.approx(expected, rel=1e-12)
    alloc = DriftingAllocation(dim=5, drift=0.4)
    episode, env_key = _episode(alloc, 4, T)
    ell = np.asarray(alloc.costs(episode, env_key, T))
    diffs = np.vstack([ell[:1], np.diff(ell, axis=0)])
    linf = float(alloc.gradient_variation(episode, env_key, T, "linf"))
    assert linf == pytest.approx(np.sum(np.max(np.abs(diffs), axis=1) ** 2), rel=1e-12)
    assert float(alloc.gradient_variation(episode, env_key, T, "l2")) == pytest.approx(np.sum(diffs**2), rel=1e-12)


def test_drift_sets_the_variation_from_static_to_iid():
    T, dim, scale = 400, 5, 0.3
    variation = {}
    for drift in (0.0, 0.1, 1.0):
        problem = DriftingQuadratic(dim=dim, drift=drift, scale=scale)
        episode, env_key = _episode(problem, 0, T)
        b = np.asarray(problem.targets(episode, env_key, T))
        variation[drift] = np.sum(np.diff(b, axis=0) ** 2)
        if drift == 0.0:
            np.testing.assert_allclose(b, np.broadcast_to(b[0], b.shape))  # static losses
    assert variation[0.0] == 0.0
    for drift in (0.1, 1.0):  # E sum_{t>=2} ||b_t - b_{t-1}||^2 = 2 drift scale^2 d (T - 1)
        assert variation[drift] == pytest.approx(2 * drift * scale**2 * dim * (T - 1), rel=0.15)


def test_the_engine_plays_the_rounds_that_targets_and_comparator_use():
    T, seed = 15, 2
    problem = DriftingQuadratic(dim=3, drift=0.5)
    traj = ocokit.run(OGD(eta=0.2), problem, T, seed, record_decisions=True)
    episode, env_key = _episode(problem, seed, T)
    b = np.asarray(problem.targets(episode, env_key, T))
    x = np.asarray(traj.decisions)
    np.testing.assert_allclose(traj.loss, 0.5 * np.sum((x - b) ** 2, axis=1), rtol=1e-12)
    x_star = np.asarray(problem.best_fixed(episode, env_key, T))
    np.testing.assert_allclose(traj.comparator_loss, 0.5 * np.sum((x_star - b) ** 2, axis=1), rtol=1e-10)
    alloc = DriftingAllocation(dim=4, drift=0.5)
    traj = ocokit.run(Hedge(eta=0.3), alloc, T, seed, record_decisions=True)
    episode, env_key = _episode(alloc, seed, T)
    ell = np.asarray(alloc.costs(episode, env_key, T))
    np.testing.assert_allclose(traj.loss, np.sum(ell * np.asarray(traj.decisions), axis=1), rtol=1e-12)


def test_round_data_is_a_function_of_the_round_key():
    problem = DriftingAllocation(dim=4, drift=0.7)
    episode, env_key = _episode(problem, 0, 5)
    k = jax.random.fold_in(env_key, 3)
    np.testing.assert_array_equal(problem.round_data(episode, k, 3), problem.round_data(episode, k, 3))
    other = problem.round_data(episode, jax.random.fold_in(env_key, 4), 4)
    assert not np.allclose(problem.round_data(episode, k, 3), other)


@pytest.mark.parametrize("which", ["quadratic", "allocation"])
def test_declared_constants_bound_the_constraints_on_sampled_points(which):
    rng = np.random.default_rng(0)
    if which == "quadratic":
        problem = DriftingQuadratic(dim=3)
        consts = assumption(problem)
        pts = rng.normal(size=(400, 3))
        pts = pts / np.maximum(1.0, np.linalg.norm(pts, axis=1, keepdims=True))  # in the unit ball
        pts[:50] = pts[:50] / np.linalg.norm(pts[:50], axis=1, keepdims=True)  # and on its sphere
        dual = np.linalg.norm
    else:
        problem = DriftingAllocation(dim=6)
        consts = assumption(problem, "linf")
        pts = rng.dirichlet(np.ones(6) * 0.3, size=400)

        def dual(v, axis=None):
            return np.max(np.abs(v), axis=axis)

    g = jax.vmap(problem.fixed_constraints)(jnp.asarray(pts))
    J = jax.vmap(jax.jacrev(problem.fixed_constraints))(jnp.asarray(pts))
    assert float(jnp.max(jnp.sum(jnp.abs(g), axis=1))) <= consts["G"] + 1e-12  # sum_k |g_k| <= G
    assert float(np.max(np.sum(dual(np.asarray(J), axis=2), axis=1))) <= consts["H"] + 1e-12  # sum_k H_k <= H
    x0, slack = problem.slater()
    assert np.all(np.asarray(problem.fixed_constraints(x0)) <= -slack + 1e-12)  # Slater


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="drift"):
        DriftingQuadratic(drift=1.5)
    with pytest.raises(ValueError, match="dim"):
        DriftingQuadratic(dim=1)
    with pytest.raises(ValueError, match="budget"):
        DriftingAllocation(budget=1.0)
    with pytest.raises(ValueError, match="norm"):
        DriftingAllocation().constants_in("l1")

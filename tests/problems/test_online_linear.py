"""OnlineLinear and OnlineQuadratic: comparators against CVXPY, constants, common random numbers."""

from __future__ import annotations

import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ocokit.problems import OnlineLinear, OnlineQuadratic
from ocokit.sets import L1Ball, L2Ball

T = 25
DIM = 4
CONSTRAINTS = {
    "l2": lambda x: [cp.norm(x, 2) <= 1.5],
    "l1": lambda x: [cp.norm(x, 1) <= 1.0],
}
SETS = {"l2": L2Ball(DIM, radius=1.5), "l1": L1Ball(DIM, radius=1.0)}
# One instance per configuration, shared by the tests so each compiles once.
LINEAR = {name: OnlineLinear(K, drift=0.6, noise=0.9) for name, K in SETS.items()}
QUADRATIC = {name: OnlineQuadratic(SETS[name], lam=0.8, offset=3.0, noise=1.0) for name in ("l1", "l2")}


@eqx.filter_jit
def _rounds(problem, key):
    """Round data of t = 1..T as the engine draws it (fold_in(env_key, t)), x* and sum_t f_t(x*)."""
    env_key = jax.random.fold_in(key, 0)
    episode = problem.episode(env_key, T)
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    data = jax.vmap(lambda t: problem.round_data(episode, jax.random.fold_in(env_key, t), t))(ts)
    x_star = problem.best_fixed(episode, env_key, T)
    return data, x_star, jnp.sum(jax.vmap(lambda d: problem.loss(d, x_star))(data))


def rounds(problem, seed, field):
    data, x_star, total = _rounds(problem, jax.random.PRNGKey(seed))
    return np.asarray(data[field]), np.asarray(x_star), float(total)


@pytest.mark.parametrize("name", sorted(SETS))
def test_linear_best_fixed_is_the_cvxpy_minimiser(name):
    problem = LINEAR[name]
    theta, x_star, total = rounds(problem, 3, "theta")
    x = cp.Variable(DIM)
    value = cp.Problem(cp.Minimize(theta.sum(axis=0) @ x), CONSTRAINTS[name](x)).solve()
    assert total == pytest.approx(value, abs=1e-6)
    assert bool(problem.domain.contains(jnp.asarray(x_star), atol=1e-9))


@pytest.mark.parametrize("name", sorted(QUADRATIC))
def test_quadratic_best_fixed_is_the_cvxpy_minimiser(name):
    z, x_star, total = rounds(QUADRATIC[name], 4, "z")
    x = cp.Variable(DIM)
    value = cp.Problem(cp.Minimize(0.4 * cp.sum_squares(x[None, :] - z)), CONSTRAINTS[name](x)).solve()
    np.testing.assert_allclose(x_star, x.value, atol=1e-5)
    assert total == pytest.approx(value, rel=1e-6)  # f_t(x) = (lam / 2) ||x - z_t||^2 with lam = 0.8


def test_best_fixed_accepts_a_traced_horizon():
    problem = QUADRATIC["l2"]
    key = jax.random.PRNGKey(0)
    episode = problem.episode(key, T)
    both = jax.jit(lambda n: (problem.best_fixed(episode, key, n), problem.best_fixed(episode, key, 17)))
    traced, static = both(jnp.asarray(17))
    np.testing.assert_allclose(np.asarray(traced), np.asarray(static), atol=1e-12)


@eqx.filter_jit
def _round_checks(problem, key, directions):
    """Rounds 1..5: f_t(round_optimum) - min over points of K, and max ||grad f_t|| over those points."""
    episode = problem.episode(key, T)
    points = jnp.concatenate([jax.vmap(problem.domain.project)(directions), jax.vmap(problem.domain.lmo)(directions)])

    def one(t):
        data = problem.round_data(episode, jax.random.fold_in(key, t), t)

        def loss(x):
            return problem.loss(data, x)

        gap = loss(problem.round_optimum(data)) - jnp.min(jax.vmap(loss)(points))
        return gap, jnp.max(jnp.linalg.norm(jax.vmap(jax.grad(loss))(points), axis=1))

    return jax.vmap(one)(jnp.arange(1, 6))


def test_round_optimum_and_gradient_bound():
    problem = QUADRATIC["l1"]  # linear losses: grad f_t = theta_t, bounded in the test below
    directions = 3 * np.random.default_rng(0).standard_normal((200, DIM))
    gaps, grad_norms = _round_checks(problem, jax.random.PRNGKey(2), jnp.asarray(directions))
    assert float(gaps.max()) <= 1e-9  # round_optimum minimises each round
    assert float(grad_norms.max()) <= problem.constants().grad_bound + 1e-9


def test_declared_constants_and_common_random_numbers():
    problem = LINEAR["l2"]
    a, _, _ = rounds(problem, 7, "theta")
    b, _, _ = rounds(problem, 7, "theta")
    c, _, _ = rounds(problem, 8, "theta")
    np.testing.assert_array_equal(a, b)  # round data depends only on (key, t)
    assert not np.allclose(a, c)
    norms = np.linalg.norm(a, axis=1)
    assert norms.max() <= problem.constants().grad_bound + 1e-12 == 1.5 + 1e-12
    assert norms.min() >= 0.3 - 1e-12  # drift - noise: the mean direction persists
    quad = QUADRATIC["l2"].constants()
    assert (quad.strong_convexity, quad.smoothness) == (0.8, 0.8)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: OnlineLinear(L2Ball(2), drift=-1.0), "drift"),
        (lambda: OnlineLinear(L2Ball(2), noise=-0.1), "noise"),
        (lambda: OnlineLinear(L2Ball(2), drift=0.0, noise=0.0), "drift \\+ noise"),
        (lambda: OnlineLinear("ball"), "domain"),
        (lambda: OnlineQuadratic(L2Ball(2), lam=0.0), "lam"),
        (lambda: OnlineQuadratic(L2Ball(2), offset=-1.0), "offset"),
    ],
)
def test_bad_parameters_raise_value_error(make, name):
    with pytest.raises(ValueError, match=name):
        make()

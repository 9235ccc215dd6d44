"""QuadraticWithMemory (paper 002's problem) and the PREDICTIONS oracle built on it."""

import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import BanditOCOMemory, ProblemInfo
from ocokit.engine import split_key
from ocokit.feedback import PREDICTIONS, Predictions, make_feedback, problem_lookahead
from ocokit.problems import QuadraticWithMemory
from ocokit.sets import Box


@eqx.filter_jit
def episode_and_data(problem, env_key, T):
    """The run's episode and stacked round data (A_t, B_t), t = 1..T, as the engine makes them (jitted)."""
    episode = problem.episode(env_key, T)
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    data = jax.vmap(lambda t: problem.round_data(episode, jax.random.fold_in(env_key, t), t))(ts)
    return episode, data["A"], data["B"]


def data_of(problem, env_key, T):
    episode, A, B = episode_and_data(problem, env_key, T)
    return np.asarray(A), np.asarray(B), np.asarray(episode["x_star"])


def cost_np(A, B, xs, x0, h):
    """C_T(x) of eq. (1) with x_t = x0 for t <= 0, in NumPy."""
    T, d = xs.shape
    padded = np.concatenate([np.broadcast_to(x0, (h - 1, d)), xs])
    total = 0.0
    for t in range(T):
        w = padded[t : t + h].reshape(-1)
        total += 0.5 * w @ A[t] @ w + B[t] @ w
    return total


T = 8  # one horizon: each problem's episode compiles once


def paper():
    return QuadraticWithMemory(Box(-5.0, 5.0, dim=1), memory=2, x0=0.5)


def wide():
    """d = 2, h = 3, a box wide enough never to bind: the unconstrained optimum."""
    return QuadraticWithMemory(Box(-50.0, 50.0, dim=2), memory=3, x0=0.3)


def tight():
    """d = 2, h = 3, a box that binds."""
    return QuadraticWithMemory(Box(-0.2, 0.3, dim=2), memory=3, x0=0.1, b_scale=4.0)


def test_generator_gives_smooth_strongly_convex_rounds():
    problem = tight()
    A, B, _ = data_of(problem, jax.random.PRNGKey(4), T)
    assert A.shape == (T, 6, 6) and B.shape == (T, 6)
    np.testing.assert_allclose(A, np.swapaxes(A, 1, 2), atol=1e-12)
    eig = np.linalg.eigvalsh(A)
    assert eig.min() >= 5.0 - 1e-9 and eig.max() <= 10.0 + 1e-9
    assert np.abs(B).max() <= 4.0
    c = problem.constants()
    assert (c.strong_convexity, c.smoothness) == (5.0, 10.0)


_RUN = {}


def wide_run():
    """One engine run of BanditOCOMemory on ``wide()`` (seed 2) and its round data, computed once."""
    if not _RUN:
        problem = wide()
        traj = ocokit.run(BanditOCOMemory(eta=0.2, delta=0.2, x0=0.3), problem, T, 2, record_decisions=True)
        env_key, _ = split_key(jax.random.PRNGKey(2))
        _RUN["run"] = (problem, traj, *data_of(problem, env_key, T))
    return _RUN["run"]


def test_loss_is_the_quadratic_of_the_window_and_the_engine_starts_from_x0():
    _, traj, A, B, _ = wide_run()
    xs = np.asarray(traj.decisions)
    assert xs.shape == (T, 2) and not np.allclose(xs, 0.3)
    padded = np.concatenate([np.full((2, 2), 0.3), xs])  # x_{-1} = x_0 = x0 = 0.3, then x_1..x_T
    windows = [padded[t : t + 3].reshape(-1) for t in range(T)]  # f_t sees (x_{t-2}, x_{t-1}, x_t)
    expected = [0.5 * w @ A[t] @ w + B[t] @ w for t, w in enumerate(windows)]
    np.testing.assert_allclose(traj.loss, expected, rtol=1e-12)
    np.testing.assert_allclose(xs[0], 0.3)  # x_1 = x0, the initial condition


def test_the_papers_instance_has_an_interior_optimum():
    A, B, x_star = data_of(paper(), jax.random.PRNGKey(0), T)
    assert A.shape == (T, 2, 2) and B.shape == (T, 2)
    assert np.all(np.abs(x_star) < 5.0)  # interior of [-5, 5]: the paper's unconstrained optimum
    grad = jax.grad(lambda xs: paper().total_cost(jnp.asarray(A), jnp.asarray(B), xs))(jnp.asarray(x_star))
    assert np.abs(np.asarray(grad)).max() < 1e-10


def test_dynamic_regret_is_exactly_eq_3_and_the_unconstrained_optimum_solves_the_normal_equations():
    problem, traj, A, B, x_star = wide_run()
    grad = jax.grad(lambda xs: problem.total_cost(jnp.asarray(A), jnp.asarray(B), xs))(jnp.asarray(x_star))
    assert np.abs(np.asarray(grad)).max() < 1e-10
    best = cost_np(A, B, x_star, 0.3, 3)
    assert float(problem.total_cost(A, B, x_star)) == pytest.approx(best, rel=1e-12)
    expected = cost_np(A, B, np.asarray(traj.decisions), 0.3, 3) - best
    regret = ocokit.metrics.dynamic_regret(traj)[-1]
    assert regret == pytest.approx(expected, rel=1e-10)
    assert regret > 0
    assert float(jnp.sum(traj.optimum_loss)) == pytest.approx(best, rel=1e-10)


def test_box_constrained_offline_optimum_matches_cvxpy():
    problem, h, d = tight(), 3, 2
    A, B, x_star = data_of(problem, jax.random.PRNGKey(4), T)
    x = cp.Variable((T, d))
    hist = np.full((h - 1, d), 0.1)
    cost = 0
    for t in range(T):
        rows = [hist[t + m] if t + m < h - 1 else x[t + m - (h - 1)] for m in range(h)]
        w = cp.hstack([r if isinstance(r, cp.Expression) else cp.Constant(r) for r in rows])
        L = np.linalg.cholesky(A[t])
        cost += 0.5 * cp.sum_squares(L.T @ w) + B[t] @ w
    prob = cp.Problem(cp.Minimize(cost), [x >= -0.2, x <= 0.3])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    active = np.isclose(x_star, -0.2) | np.isclose(x_star, 0.3)
    assert active.any()  # the constraint matters
    np.testing.assert_allclose(x_star, x.value, atol=1e-6)
    assert cost_np(A, B, x_star, 0.1, h) <= prob.value + 1e-9


def test_custom_sampler_and_validation():
    sampler = lambda k, t: (jnp.eye(4) * 2.0, jnp.ones(4) * t)  # noqa: E731
    problem = QuadraticWithMemory(Box(-1.0, 1.0, dim=2), memory=2, sampler=sampler)
    data = problem.round_data(None, jax.random.PRNGKey(0), 3)
    np.testing.assert_array_equal(data["B"], np.full(4, 3.0))
    assert np.isnan(problem.constants().strong_convexity) or problem.constants().strong_convexity == 0.0
    with pytest.raises(ValueError, match="sampler must return"):
        QuadraticWithMemory(Box(-1.0, 1.0, dim=2), memory=3, sampler=sampler)
    with pytest.raises(ValueError, match="beta"):
        QuadraticWithMemory(Box(-1.0, 1.0, dim=1), mu=3.0, beta=2.0)
    with pytest.raises(ValueError, match="x0"):
        QuadraticWithMemory(Box(-1.0, 1.0, dim=1), x0=2.0)
    with pytest.raises(ValueError, match="memory"):
        QuadraticWithMemory(Box(-1.0, 1.0, dim=1), memory=0)
    with pytest.raises(ValueError, match="prediction_window"):
        QuadraticWithMemory(Box(-1.0, 1.0, dim=1), prediction_window=0)


# ------------------------------------------------------------------ the prediction oracle


def oracle(problem, env_key, t):
    return make_feedback(PREDICTIONS, problem, None, None, None, episode=None, env_key=env_key, t=t)


@eqx.filter_jit
def answers(problem, env_key, t, w, ks):
    """What the oracle built after round t answers for rounds ks, and the true costs of those rounds."""
    orc = oracle(problem, env_key, t)
    pred = jax.vmap(lambda k: orc.predict(k, w))(ks)
    grads = jax.vmap(lambda k: orc.value_and_grad(k, w)[1])(ks)
    truth = jax.vmap(lambda k: problem.loss(problem.round_data(None, jax.random.fold_in(env_key, k), k), w))(ks)
    true_grads = jax.vmap(
        lambda k: jax.grad(lambda v: problem.loss(problem.round_data(None, jax.random.fold_in(env_key, k), k), v))(w)
    )(ks)
    batch = orc.predict(ks[2], jnp.stack([w, 2 * w, -w]))
    singles = jnp.stack([orc.predict(ks[2], v) for v in (w, 2 * w, -w)])
    return pred, truth, grads, true_grads, jax.vmap(orc.available)(ks), batch, singles


def test_predictions_are_the_engines_round_data_within_the_window():
    problem = QuadraticWithMemory(Box(-1.0, 1.0, dim=2), memory=2, prediction_window=3)
    env_key = jax.random.PRNGKey(5)
    orc = oracle(problem, env_key, 4)  # built after round 4: serves round 5
    assert isinstance(orc, Predictions) and int(orc.now) == 5 and orc.lookahead == 3
    w = jnp.array([[0.1, -0.2], [0.3, 0.4]])
    ks = jnp.arange(3, 11)
    pred, truth, grads, true_grads, avail, batch, singles = answers(problem, env_key, 4, w, ks)
    inside = (ks >= 5) & (ks <= 8)
    np.testing.assert_array_equal(avail, inside)
    np.testing.assert_allclose(pred[inside], truth[inside], rtol=1e-14)
    np.testing.assert_allclose(grads[inside], true_grads[inside], rtol=1e-12)
    assert np.all(np.isnan(pred[~inside])) and np.all(np.isnan(grads[~inside]))  # the past, and beyond now + W
    np.testing.assert_allclose(batch, singles, rtol=1e-14)


def test_strict_window_and_restrict_never_widen():
    strict = QuadraticWithMemory(Box(-1.0, 1.0, dim=1), prediction_window=3, strict_window=True)
    assert problem_lookahead(strict) == 2
    assert problem_lookahead(QuadraticWithMemory(Box(-1.0, 1.0, dim=1))) is None
    orc = oracle(strict, jax.random.PRNGKey(0), 0)
    ks = jnp.arange(0, 5)
    np.testing.assert_array_equal(orc.available(ks), [False, True, True, True, False])
    assert orc.restrict(10).lookahead == 2 and orc.restrict(1).lookahead == 1
    np.testing.assert_array_equal(orc.restrict(1).available(ks), [False, True, True, False, False])
    with pytest.raises(ValueError, match="lookahead"):
        orc.restrict(-1)


@pytest.mark.parametrize("kind", ["oscillating", "constant"])
def test_model_error_is_bounded_by_phi(kind):
    problem = QuadraticWithMemory(Box(-1.0, 1.0, dim=1), memory=2, phi=0.3, model_error=kind)
    ws = jax.random.uniform(jax.random.PRNGKey(9), (500, 2, 1), minval=-1.0, maxval=1.0)

    @jax.jit
    def errors(env_key):
        orc = oracle(problem, env_key, 0)
        data = problem.round_data(None, jax.random.fold_in(env_key, 2), 2)
        return orc.predict(2, ws) - jax.vmap(lambda w: problem.loss(data, w))(ws)

    err = np.asarray(errors(jax.random.PRNGKey(5)))
    assert np.abs(err).max() <= 0.3 + 1e-12
    if kind == "constant":  # one offset per round: cancels in two-point differences
        assert np.ptp(err) < 1e-12
    else:
        assert np.ptp(err) > 0.3


def test_predictions_need_the_round_context():
    problem = QuadraticWithMemory(Box(-1.0, 1.0, dim=1))
    with pytest.raises(ValueError, match="round context"):
        make_feedback(PREDICTIONS, problem, None, None, None)


def test_problem_info_memory_and_history():
    problem = QuadraticWithMemory(Box(-1.0, 1.0, dim=3), memory=4, x0=jnp.array([0.1, 0.2, 0.3]))
    assert ProblemInfo.of(problem, 5).memory == 4
    np.testing.assert_array_equal(problem.initial_history(), np.tile([0.1, 0.2, 0.3], (3, 1)))

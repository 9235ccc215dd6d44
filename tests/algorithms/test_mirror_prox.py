"""Online primal-dual mirror prox (paper 004, Algorithms 1 and 2) against the spec's reference and traces."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import MirrorProx, ProblemInfo, SimplexMirrorProx
from ocokit.engine import split_key
from ocokit.feedback import FULL_INFORMATION, FullInformation, make_feedback
from ocokit.problems import CustomProblem, DriftingAllocation, DriftingQuadratic
from ocokit.sets import Box, L2Ball, Simplex

from ..helpers import assumption

# ------------------------------------------------------------------------------------------------
# The spec's reference pseudo-code (paper004.md §2.4), in NumPy.


def np_project(domain, y):
    if isinstance(domain, L2Ball):
        r, n = float(domain.radius), np.linalg.norm(y)
        return y if n <= r else y * (r / n)
    if isinstance(domain, Box):
        return np.clip(y, np.asarray(domain.lower), np.asarray(domain.upper))
    raise NotImplementedError(type(domain))


def reference(T, domain, grad_f, g, jac_g, Lf, Lg, G, H, V, alg=1, x0=None, rho=1.0):
    """Spec §2.4 verbatim: returns per round (Q(t), alpha_t, x_t, x~_{t+1}, centre) and Q(T+1)."""
    M = max(V, Lf**2)
    eta, gamma = M**-0.5, M**0.25
    d = domain.shape[0]
    nu = 1.0 / T if alg == 2 else 0.0
    if alg == 2:
        x_prev = np.full(d, 1.0 / d)
    else:
        x_prev = np.asarray(domain.center(), float) if x0 is None else np.asarray(x0, float)
    x_tilde = x_prev.copy()
    grad_prev = np.zeros(d)
    Q, alpha = np.zeros(len(g(x_prev))), 0.0
    rows = []
    for t in range(1, T + 1):
        center = (1 - nu) * x_tilde + nu / d if alg == 2 else x_tilde
        gv, J = g(x_prev), jac_g(x_prev)
        Q = np.maximum(-gamma * gv, Q + gamma * gv)
        w = Q + gamma * gv
        xi = gamma * Lg * Q.sum() + gamma**2 * (Lg * G + H**2)
        if alg == 1:
            alpha = max((2 / rho) * (gamma**2 * Lg * G + eta * Lf**2 + 1 / eta + xi), alpha)
        else:
            alpha = max(3 * (eta * Lf**2 + gamma**2 * Lg * G) + 2 / eta + 3 * xi, alpha)
        c = gamma * (J.T @ w)
        if alg == 1:
            x = np_project(domain, center - (grad_prev + c) / alpha)
        else:
            z = np.log(center) - (grad_prev + c) / alpha
            x = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        gt = grad_f(t, x)
        if alg == 1:
            x_tilde = np_project(domain, center - (gt + c) / alpha)
        else:
            z = np.log(center) - (gt + c) / alpha
            x_tilde = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        rows.append((Q.copy(), alpha, x.copy(), x_tilde.copy(), np.asarray(center).copy()))
        grad_prev, x_prev = gt, x
    Q_final = np.maximum(-gamma * g(x_prev), Q + gamma * g(x_prev))
    return rows, Q_final


def np_constraints_quadratic(problem):
    a, level = np.asarray(problem.normal), float(problem.level)
    p, q = np.asarray(problem.center2), float(problem.radius2)

    def g(x):
        return np.array([a @ x - level, np.sum((x - p) ** 2) - q**2])

    def jac(x):
        return np.stack([a, 2 * (x - p)])

    return g, jac


@eqx.filter_jit
def _init(learner, info, key):
    return learner.init(info, key)


@eqx.filter_jit
def _step(learner, problem, state, episode, env_key, t):
    """One round in the engine's order: decide, then absorb round t's full-information feedback."""
    x = learner.decide(state)
    data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
    return x, learner.update(state, x, make_feedback(FULL_INFORMATION, problem, data, None, None))


def python_loop(learner, problem, T, key=0):
    """Step the learner from Python (compiled once per round function), returning states and decisions."""
    env_key, learner_key = split_key(jax.random.PRNGKey(key))
    info = ProblemInfo.of(problem, T)
    episode = problem.episode(env_key, T)
    state = _init(learner, info, learner_key)
    states, xs = [state], []
    for t in range(1, T + 1):
        x, state = _step(learner, problem, state, episode, env_key, jnp.asarray(t, jnp.int32))
        states.append(state)
        xs.append(np.asarray(x))
    return states, np.array(xs)


# ------------------------------------------------------------------------------------------------
# Golden traces (spec §2.5).

TRACE_A = [  # Q(t), alpha_t, x_t, x~_{t+1}
    (0.15556349, 33.88000000, (0.58441558, 0.0), (0.59668195, 0.01475797)),
    (0.28502283, 34.61233260, (0.58889441, 0.02920369), (0.58298672, 0.03124909)),
    (0.42312004, 35.39352841, (0.56253996, 0.04606648), (0.56893532, 0.03993929)),
    (0.52009737, 35.94211499, (0.55378959, 0.04754962), (0.55125080, 0.05029061)),
]
TRACE_B = [
    ((0.2, 0.16666667), 48.6, (0.33196254, 0.33470601, 0.33333145), (0.33517425, 0.33240817, 0.33241757)),
    (
        (0.39862826, 0.16666290),
        49.79174699,
        (0.33585133, 0.33239512, 0.33175355),
        (0.33515326, 0.33308075, 0.33176599),
    ),
    (
        (0.60035637, 0.16665695),
        51.00207991,
        (0.33445477, 0.33424583, 0.33129940),
        (0.33512085, 0.33292609, 0.33195306),
    ),
    (
        (0.80046084, 0.16666044),
        52.20272767,
        (0.33445143, 0.33344954, 0.33209903),
        (0.33338406, 0.33494712, 0.33166882),
    ),
]


def _check_trace(states, xs, trace, final_queue):
    for t, (Q, alpha, x, x_tilde) in enumerate(trace):
        np.testing.assert_allclose(states[t].queue, np.atleast_1d(Q), atol=1e-8)
        np.testing.assert_allclose(states[t].alpha, alpha, atol=1e-8)
        np.testing.assert_allclose(xs[t], x, atol=1e-8)
        np.testing.assert_allclose(states[t + 1].x_tilde, x_tilde, atol=1e-8)
    np.testing.assert_allclose(states[-1].queue, final_queue, atol=1e-8)


def test_golden_trace_a_algorithm_1_on_the_unit_ball():
    b = jnp.array([[1, 0.5], [0.8, 0.6], [1, 0.4], [0.9, 0.5]])

    def g(x):
        return jnp.array([x @ x - 0.25])

    problem = CustomProblem(
        domain=L2Ball(2), loss=lambda c, x: 0.5 * jnp.sum((x - c) ** 2), constraints=lambda c, x: g(x), data=b
    )
    learner = MirrorProx(
        gamma=2**0.5, eta=0.5, L_f=1.0, L_g=2.0, G=0.75, H=2.0, x0=jnp.array([0.6, 0.0]), known_constraints=g
    )
    states, xs = python_loop(learner, problem, 4)
    _check_trace(states, xs, TRACE_A, [0.60345660])


def test_golden_trace_b_algorithm_2_on_the_simplex():
    b = jnp.array([[0.9, 0.1, 0.3], [0.8, 0.2, 0.3], [0.9, 0.0, 0.4], [0.7, 0.2, 0.3]])

    def g(x):
        return jnp.array([jnp.array([1.0, 0.0, 0.5]) @ x - 0.3, x @ x - 0.5])

    problem = CustomProblem(
        domain=Simplex(3),
        loss=lambda c, x: 0.5 * jnp.sum((x - c) ** 2),
        constraints=lambda c, x: g(x),
        data=b,
    )
    learner = SimplexMirrorProx(gamma=1.0, eta=1.0, nu=0.25, L_f=1.0, L_g=2.0, G=1.2, H=3.0, known_constraints=g)
    states, xs = python_loop(learner, problem, 4)
    _check_trace(states, xs, TRACE_B, [1.00096178, 0.16666388])


# ------------------------------------------------------------------------------------------------
# Iterate-by-iterate agreement with the reference, through the compiled engine.

T_REF = 40


@pytest.mark.parametrize("drift", [0.0, 0.7])
def test_algorithm_1_matches_the_reference_on_a_ball(drift):
    problem = DriftingQuadratic(dim=3, drift=drift)
    env_key = split_key(jax.random.PRNGKey(5))[0]
    b = np.asarray(problem.targets(problem.episode(env_key, T_REF), env_key, T_REF))
    g, jac = np_constraints_quadratic(problem)
    V, consts = 3.0, assumption(problem)
    learner = MirrorProx.from_theory(
        ProblemInfo.of(problem, T_REF), variation=V, **consts, known_constraints=problem.fixed_constraints
    )
    traj = ocokit.run(learner, problem, T_REF, 5, record_decisions=True)
    rows, _ = reference(T_REF, problem.domain, lambda t, x: x - b[t - 1], g, jac, V=V, **_np_consts(consts))
    np.testing.assert_allclose(traj.decisions, np.array([r[2] for r in rows]), atol=1e-12)
    np.testing.assert_allclose(traj.diagnostics["queue"][:-1], np.array([r[0] for r in rows])[1:], atol=1e-12)
    np.testing.assert_allclose(traj.diagnostics["alpha"][:-1], np.array([r[1] for r in rows])[1:], rtol=1e-12)


def _np_consts(consts):
    return {"Lf": consts["L_f"], "Lg": consts["L_g"], "G": consts["G"], "H": consts["H"]}


def test_algorithm_1_matches_the_reference_on_a_box_from_a_given_start():
    rng = np.random.default_rng(2)
    d, T = 3, 30
    targets, A = rng.uniform(-1, 1, size=(T, d)), rng.uniform(0, 1, size=(2, d))

    def g(x):
        return jnp.asarray(A) @ x - 0.2

    problem = CustomProblem(
        domain=Box(-1.0, 1.0, dim=d),
        loss=lambda c, x: 0.5 * jnp.sum((x - c) ** 2),
        constraints=lambda c, x: g(x),
        data=jnp.asarray(targets),
    )
    x0 = np.array([0.5, -0.5, 0.25])
    learner = MirrorProx(gamma=1.3, eta=0.4, L_f=1.0, L_g=0.0, G=3.0, H=2.0, x0=x0, known_constraints=g)
    traj = ocokit.run(learner, problem, T, record_decisions=True)
    rows = _reference_with(learner, problem.domain, lambda t, x: x - targets[t - 1], lambda x: A @ x - 0.2, A, T, x0)
    np.testing.assert_allclose(traj.decisions, np.array([r[2] for r in rows]), atol=1e-12)


def _reference_with(learner, domain, grad_f, g, A, T, x0):
    """The reference loop with the learner's own (gamma, eta), for parameters not of the M-form."""
    gamma, eta = float(learner.gamma), float(learner.eta)
    k = learner.constants
    Lf, Lg, G, H = (float(v) for v in (k.L_f, k.L_g, k.G, k.H))
    x_prev, x_tilde, grad_prev = x0.copy(), x0.copy(), np.zeros_like(x0)
    Q, alpha, rows = np.zeros(A.shape[0]), 0.0, []
    for t in range(1, T + 1):
        gv = g(x_prev)
        Q = np.maximum(-gamma * gv, Q + gamma * gv)
        xi = gamma * Lg * Q.sum() + gamma**2 * (Lg * G + H**2)
        alpha = max(2 * (gamma**2 * Lg * G + eta * Lf**2 + 1 / eta + xi), alpha)
        c = gamma * A.T @ (Q + gamma * gv)
        x = np_project(domain, x_tilde - (grad_prev + c) / alpha)
        gt = grad_f(t, x)
        x_tilde = np_project(domain, x_tilde - (gt + c) / alpha)
        rows.append((Q.copy(), alpha, x))
        grad_prev, x_prev = gt, x
    return rows


@pytest.mark.parametrize("drift", [0.0, 0.5])
def test_algorithm_2_matches_the_reference_on_the_simplex(drift):
    problem = DriftingAllocation(dim=5, drift=drift)
    env_key = split_key(jax.random.PRNGKey(3))[0]
    ell = np.asarray(problem.costs(problem.episode(env_key, T_REF), env_key, T_REF))
    c, B = np.asarray(problem.price), problem.budget
    consts = assumption(problem, "linf")
    learner = SimplexMirrorProx.from_theory(
        ProblemInfo.of(problem, T_REF), variation=2.0, **consts, known_constraints=problem.fixed_constraints
    )
    traj = ocokit.run(learner, problem, T_REF, 3, record_decisions=True)
    rows, _ = reference(
        T_REF,
        problem.domain,
        lambda t, x: ell[t - 1],
        lambda x: np.array([c @ x - B]),
        lambda x: c[None, :],
        V=2.0,
        alg=2,
        **_np_consts(consts),
    )
    np.testing.assert_allclose(traj.decisions, np.array([r[2] for r in rows]), atol=1e-12)


# ------------------------------------------------------------------------------------------------
# Deterministic properties of every run (spec §3.5), over random parameters.


def _invariants(learner, problem, T, seed, *, alg):
    states, xs = python_loop(learner, problem, T, seed)
    gamma = float(learner.gamma)
    Q = np.array([np.asarray(s.queue) for s in states])  # Q(1) .. Q(T+1)
    alpha = np.array([float(s.alpha) for s in states])
    gvals = np.array([np.asarray(problem.fixed_constraints(jnp.asarray(x))) for x in xs])  # g(x_1..x_T)
    assert np.all(Q >= 0)
    np.testing.assert_array_less(gamma * np.abs(gvals) - 1e-12, Q[1:])  # Q_k(t+1) >= gamma |g_k(x_t)|
    w = Q[1:] + gamma * gvals  # w(t+1) = Q(t+1) + gamma g(x_t) >= 0, = max{0, Q(t) + 2 gamma g(x_t)}
    assert np.all(w >= -1e-12)
    np.testing.assert_allclose(w, np.maximum(0, Q[:-1] + 2 * gamma * gvals), atol=1e-10)
    assert np.all(np.diff(alpha) >= 0)  # alpha_t non-decreasing
    # Lemma A.1: (c) ||Q(t+1)||_2 <= ||Q(t)||_2 + gamma ||g||_2, (d) |diff of ||Q||_1| <= gamma ||g||_1
    assert np.all(
        np.linalg.norm(Q[1:], axis=1) <= np.linalg.norm(Q[:-1], axis=1) + gamma * np.linalg.norm(gvals, axis=1) + 1e-10
    )
    assert np.all(np.abs(Q[1:].sum(1) - Q[:-1].sum(1)) <= gamma * np.abs(gvals).sum(1) + 1e-10)
    # Lemma 5.5, exactly: sum_t g_k(x_t) <= (Q_k(T+1) - Q_k(1)) / gamma
    assert np.all(gvals.sum(axis=0) <= (Q[-1] - Q[0]) / gamma + 1e-10)
    domain = problem.domain
    for s, x in zip(states[1:], xs, strict=True):
        assert bool(domain.contains(jnp.asarray(x), atol=1e-10)) and bool(domain.contains(s.x_tilde, atol=1e-10))
    if alg == 2:
        nu, d = float(learner.nu), domain.shape[0]
        assert np.all(xs >= 0) and np.allclose(xs.sum(axis=1), 1.0, atol=1e-12)
        centers = np.array([np.asarray(s.center) for s in states])
        assert np.all(centers >= nu / d * (1 - 1e-12))


@given(gamma=st.floats(0.05, 20.0), eta=st.floats(0.01, 10.0), drift=st.floats(0.0, 1.0), seed=st.integers(0, 99))
@settings(max_examples=6, deadline=None)
def test_algorithm_1_invariants_hold_on_every_run(gamma, eta, drift, seed):
    problem = DriftingQuadratic(dim=3, drift=drift)
    learner = MirrorProx(gamma=gamma, eta=eta, **assumption(problem), known_constraints=problem.fixed_constraints)
    _invariants(learner, problem, 25, seed, alg=1)


@given(gamma=st.floats(0.05, 20.0), eta=st.floats(0.01, 10.0), nu=st.floats(1e-3, 1.0), seed=st.integers(0, 99))
@settings(max_examples=6, deadline=None)
def test_algorithm_2_invariants_hold_on_every_run(gamma, eta, nu, seed):
    problem = DriftingAllocation(dim=4, drift=0.5)
    learner = SimplexMirrorProx(gamma=gamma, eta=eta, nu=nu, **assumption(problem, "linf"))
    _invariants(learner, problem, 25, seed, alg=2)


def test_a_posteriori_regret_bound_of_lemma_5_4():
    """Regret <= (eta/2) sum_t ||grad f^{t-1}(x_t) - grad f^t(x_t)||^2 + (2R^2/rho) L_f^2 eta
    + [2 (2 L_g G + H^2) R^2 / rho + 3 G^2 / 2] gamma^2 + alpha_{T+1} R^2, for any gamma, eta (spec §3.5)."""
    T, seed = T_REF, 4
    problem = DriftingQuadratic(dim=3, drift=0.5)
    consts = assumption(problem)
    R2 = 2.0  # ball of radius 1
    for gamma, eta in [(1.0, 1.0), (3.0, 0.2), (0.3, 5.0)]:
        learner = MirrorProx(gamma=gamma, eta=eta, **consts, known_constraints=problem.fixed_constraints)
        traj = ocokit.run(learner, problem, T, seed, record_decisions=True)
        env_key = split_key(jax.random.PRNGKey(seed))[0]
        b = np.asarray(problem.targets(problem.episode(env_key, T), env_key, T))
        x = np.asarray(traj.decisions)
        prev = np.vstack([np.zeros((1, 3)), x[1:] - b[:-1]])  # grad f^{t-1}(x_t) (grad f^0 = 0)
        realized = np.sum((prev - (x - b)) ** 2)
        regret = float(np.sum(traj.loss - traj.comparator_loss))
        alpha_T1 = float(traj.diagnostics["alpha"][-1])
        Lf, Lg, G, H = consts["L_f"], consts["L_g"], consts["G"], consts["H"]
        bound = eta / 2 * realized + 2 * R2 * Lf**2 * eta + (2 * (2 * Lg * G + H**2) * R2 + 1.5 * G**2) * gamma**2
        bound += alpha_T1 * R2
        assert regret <= bound


def test_lemma_b5_regret_bound_for_algorithm_2():
    """Regret <= (eta/2) V_inf + 6 L_f^2 eta + (12 L_g G + 6 H^2 + 1.5 G^2) gamma^2 + 3 log(Td) alpha_T+1."""
    T, seed = T_REF, 1
    problem = DriftingAllocation(dim=5, drift=0.5)
    consts = assumption(problem, "linf")
    env_key = split_key(jax.random.PRNGKey(seed))[0]
    V = float(problem.gradient_variation(problem.episode(env_key, T), env_key, T, "linf"))
    learner = SimplexMirrorProx.from_theory(
        ProblemInfo.of(problem, T), variation=V, **consts, known_constraints=problem.fixed_constraints
    )
    traj = ocokit.run(learner, problem, T, seed, record_decisions=True)
    regret = float(np.sum(traj.loss - traj.comparator_loss))
    gamma, eta, (Lf, Lg, G, H) = float(learner.gamma), float(learner.eta), consts.values()
    bound = eta / 2 * V + 6 * Lf**2 * eta + (12 * Lg * G + 6 * H**2 + 1.5 * G**2) * gamma**2
    assert regret <= bound + 3 * math.log(T * 5) * float(traj.diagnostics["alpha"][-1])


# ------------------------------------------------------------------------------------------------
# Reduction, optimism, parameters.


def test_without_constraints_it_is_optimistic_projected_gradient():
    """K = 0, Euclidean: x_t = Pi(x~_t - grad f^{t-1}(x_{t-1}) / alpha), x~_{t+1} = Pi(x~_t - grad f^t(x_t) /
    alpha) with alpha = (2 / rho)(eta L_f^2 + 1 / eta) constant (spec §3.5; Chiang et al. 2012)."""
    rng = np.random.default_rng(7)
    T, d = 30, 3
    targets = np.cumsum(rng.normal(scale=0.3, size=(T, d)), axis=0)
    problem = CustomProblem(
        domain=Box(-1.0, 1.0, dim=d), loss=lambda c, x: 0.5 * jnp.sum((x - c) ** 2), data=jnp.asarray(targets)
    )
    learner = MirrorProx.from_theory(ProblemInfo.of(problem, T), variation=9.0, L_f=1.0)
    traj = ocokit.run(learner, problem, T, record_decisions=True)
    eta = 9.0**-0.5
    alpha = 2 * (eta + 1 / eta)
    x_tilde, grad_prev, expected = np.zeros(d), np.zeros(d), []
    for t in range(T):
        x = np.clip(x_tilde - grad_prev / alpha, -1, 1)
        grad_prev = x - targets[t]
        x_tilde = np.clip(x_tilde - grad_prev / alpha, -1, 1)
        expected.append(x)
    np.testing.assert_allclose(traj.decisions, np.array(expected), atol=1e-13)
    np.testing.assert_allclose(traj.diagnostics["alpha"], alpha, rtol=1e-13)


class _Oracle:
    """Round t's first-order oracle; raises if queried before x_t is played, or anywhere but at x_t."""

    def __init__(self, problem, data, log):
        self.problem, self.inner, self.log, self.played = problem, FullInformation(problem, data), log, None

    def play(self, x):
        self.played = np.asarray(x)

    def _check(self, what, x):
        if self.played is None:
            raise AssertionError(f"{what} of the current round queried before the decision was played")
        if not np.array_equal(np.asarray(x), self.played):
            raise AssertionError(f"{what} queried at {np.asarray(x)}, not at the played point {self.played}")
        self.log.append(what)

    def grad(self, x):
        self._check("grad", x)
        return self.inner.grad(x)

    def constraints(self, x):
        self._check("constraints", x)
        return self.inner.constraints(x)

    def constraints_jacobian(self, x):
        self._check("jacobian", x)
        return self.inner.constraints_jacobian(x)

    def loss(self, x):
        raise AssertionError("the learner never needs loss values")


@pytest.mark.parametrize("which", ["ball", "simplex"])
def test_the_current_loss_is_never_queried_before_the_decision_is_played(which):
    if which == "ball":
        problem = DriftingQuadratic(dim=3, drift=0.5)
        learner = MirrorProx(gamma=1.0, eta=0.5, **assumption(problem))
    else:
        problem = DriftingAllocation(dim=4, drift=0.5)
        learner = SimplexMirrorProx(gamma=1.0, eta=0.5, nu=0.1, **assumption(problem, "linf"))
    env_key, key = split_key(jax.random.PRNGKey(0))
    info = ProblemInfo.of(problem, 4)
    state = learner.init(info, key)  # init gets no oracle at all
    episode, log = problem.episode(env_key, 4), []
    for t in range(1, 5):
        oracle = _Oracle(problem, problem.round_data(episode, jax.random.fold_in(env_key, t), t), log)
        x = learner.decide(state)  # decide gets only the state: it cannot see round t
        np.testing.assert_array_equal(x, learner.decide(state))
        oracle.play(x)
        state = learner.update(state, x, oracle)
        # the gradient of f^t is stored for round t + 1 and x_{t+1} is fixed before f^{t+1} exists
        np.testing.assert_allclose(state.grad_prev, oracle.inner.grad(x))
    assert log == ["grad", "constraints", "jacobian"] * 4  # one gradient of f^t per round, at x_t


def test_from_theory_parameters_and_defaults():
    problem = DriftingQuadratic(dim=3)
    info = ProblemInfo.of(problem, 100)
    consts = assumption(problem)
    learner = MirrorProx.from_theory(info, variation=16.0, **consts)
    assert float(learner.eta) == pytest.approx(16.0**-0.5) and float(learner.gamma) == pytest.approx(16.0**0.25)
    small = MirrorProx.from_theory(info, variation=0.0, **consts)  # M = max{V, L_f^2} = 1
    assert float(small.eta) == pytest.approx(1.0) and float(small.gamma) == pytest.approx(1.0)
    F = problem.constants().grad_bound
    default = MirrorProx.from_theory(info, **consts)  # V = 4 F^2 T (spec P9)
    assert float(default.eta) == pytest.approx((4 * F**2 * 100) ** -0.5)
    assert float(MirrorProx.from_theory(info, variation=16.0, gamma=3.0, **consts).gamma) == 3.0
    read = MirrorProx.from_theory(info, variation=16.0)  # the problem's declared constants and constraints
    assert [float(getattr(read.constants, k)) for k in consts] == list(consts.values())
    assert read.known_constraints is not None and float(read.eta) == float(learner.eta)
    constrained = CustomProblem(domain=Box(0.0, 1.0, dim=2), loss=lambda c, x: c @ x, data=jnp.ones((3, 2)),
                                constraints=lambda c, x: jnp.sum(x, keepdims=True) - 1.0)  # fmt: skip
    with pytest.raises(ValueError, match="L_g"):  # no constraint_smoothness declared
        MirrorProx.from_theory(ProblemInfo.of(constrained, 3), variation=1.0, L_f=1.0)
    unconstrained = CustomProblem(domain=Box(0.0, 1.0, dim=2), loss=lambda c, x: c @ x, data=jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="must be > 0: give a positive L_f or variation"):
        MirrorProx.from_theory(ProblemInfo.of(unconstrained, 3), variation=0.0, L_f=0.0)
    alloc = DriftingAllocation(dim=4)
    simplex = SimplexMirrorProx.from_theory(ProblemInfo.of(alloc, 50), variation=4.0, **assumption(alloc, "linf"))
    assert float(simplex.nu) == pytest.approx(1 / 50) and float(simplex.gamma) == pytest.approx(4.0**0.25)
    with pytest.raises(ValueError, match="T > 2"):
        SimplexMirrorProx.from_theory(ProblemInfo.of(alloc, 2), variation=4.0, **assumption(alloc, "linf"))


def test_bad_hyperparameters_raise_value_error():
    consts = {"L_f": 1.0, "L_g": 0.0, "G": 1.0, "H": 1.0}
    with pytest.raises(ValueError, match="gamma"):
        MirrorProx(gamma=0.0, eta=1.0, **consts)
    with pytest.raises(ValueError, match="eta"):
        MirrorProx(gamma=1.0, eta=-1.0, **consts)
    with pytest.raises(ValueError, match="H"):
        MirrorProx(gamma=1.0, eta=1.0, **{**consts, "H": -1.0})
    with pytest.raises(ValueError, match="nu"):
        SimplexMirrorProx(gamma=1.0, eta=1.0, nu=0.0, **consts)
    with pytest.raises(ValueError, match="known_constraints"):
        MirrorProx(gamma=1.0, eta=1.0, **consts, known_constraints=3.0)
    problem = DriftingQuadratic(dim=3)
    wrong = MirrorProx(gamma=1.0, eta=1.0, **consts, known_constraints=lambda x: x[:1])
    with pytest.raises(ValueError, match="known_constraints"):
        wrong.init(ProblemInfo.of(problem, 5), None)
    with pytest.raises(ValueError, match="simplex"):
        SimplexMirrorProx(gamma=1.0, eta=1.0, nu=0.5, **consts).init(ProblemInfo.of(problem, 5), None)


def test_without_known_constraints_round_one_uses_g_of_x0_equal_zero():
    problem = DriftingQuadratic(dim=3)
    consts = assumption(problem)
    blind = MirrorProx(gamma=1.0, eta=1.0, **consts).init(ProblemInfo.of(problem, 5), None)
    informed = MirrorProx(gamma=1.0, eta=1.0, **consts, known_constraints=problem.fixed_constraints)
    informed = informed.init(ProblemInfo.of(problem, 5), None)
    np.testing.assert_array_equal(blind.queue, 0.0)
    np.testing.assert_allclose(informed.queue, np.abs(problem.fixed_constraints(jnp.zeros(3))))  # gamma |g(x_0)|

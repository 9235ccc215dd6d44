"""COLDQ and COLDQ-Expert (paper 003, Alg. 1-2): NumPy/CVXPY reference traces and the paper's invariants."""

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import COLDQ, OGD, COLDQExpert, ProblemInfo
from ocokit.algorithms._hinge_prox import DeclaredSolver, LogCapacitySolver
from ocokit.engine import split_key
from ocokit.problems import CustomProblem, TimeVaryingRegression
from ocokit.sets import Box

from ..helpers import host_rounds
from ..learner_cases import regression_rounds
from .test_hinge_prox import _clarabel

T = 40
_REGRESSION = TimeVaryingRegression(dim=4, rows=3)  # K = [0, 5]^4, N = 2, fresh A_t, b_t each round
PROBLEM = regression_rounds()  # the same rounds without the regression's comparators (a light compile)
AFFINE = {"solver": "affine"}


def _grad(d, x):
    return d["H"].T @ (d["H"] @ x - d["y"])


def _p_t(grad, alpha, center, Q, d):
    """``P_t`` of spec §2.2 for ``g = A x - b`` over ``[0, 5]^p``, solved by Clarabel."""
    A, b = d["A"], d["b"]
    return _clarabel(grad, alpha, center, lambda x: Q @ cp.pos(A @ x - b), lambda x: [x >= 0, x <= 5])


def _reference_coldq(T, seed, eta, gamma, alpha0, power):
    """Algorithm 1 written from the spec: x_1 = 0, Q_1 = gamma; for t = 2..T solve P_t, then queue (8)."""
    data = host_rounds(PROBLEM, T, seed)
    xs, Qs = [np.zeros(4)], [np.full(2, gamma)]
    for t in range(2, T + 1):
        prev = data[t - 2]  # round t - 1
        x = _p_t(_grad(prev, xs[-1]), alpha0 * (t - 1) ** power, xs[-1], Qs[-1], prev)
        g = data[t - 1]["A"] @ x - data[t - 1]["b"]  # g_t(x_t): the new function at the new point
        xs.append(x)
        Qs.append(np.maximum((1 - eta) * Qs[-1] + np.maximum(g, 0), gamma))
    return np.array(xs), np.array(Qs)


def test_coldq_matches_the_numpy_cvxpy_reference_trace():
    eta, gamma = 1.0 / T, 0.05 * T  # a small floor, so that the queue moves
    learner = COLDQ(eta=eta, gamma=gamma, alpha0=1.5, alpha_power=0.5, **AFFINE)
    traj = ocokit.run(learner, PROBLEM, T, 7, record_decisions=True)
    xs, Qs = _reference_coldq(25, 7, eta, gamma, 1.5, 0.5)
    np.testing.assert_allclose(traj.decisions[:25], xs, atol=1e-6)
    np.testing.assert_allclose(traj.diagnostics["queue"][:25], Qs, rtol=1e-7)
    assert np.ptp(Qs) > 0.1  # the queue really moved (the comparison tests the update, not the floor)
    assert bool(traj.diagnostics["solver_converged"].all())


@settings(max_examples=8, deadline=None)
@given(log_eps=st.floats(-3.0, 1.0), eta_T=st.floats(0.2, 5.0), seed=st.integers(0, 1000))
def test_queue_follows_update_8_and_stays_within_lemma_1(log_eps, eta_T, seed):
    eta = min(eta_T / T, 0.9)
    gamma = 10.0**log_eps / eta  # eps = eta * gamma
    traj = ocokit.run(COLDQ(eta=eta, gamma=gamma, alpha0=1.5, **AFFINE), PROBLEM, T, seed, record_decisions=True)
    Q = np.asarray(traj.diagnostics["queue"])  # Q_t after round t
    violation = np.maximum(np.asarray(traj.constraints), 0)  # [g_t(x_t)]_+
    expected = [np.full(2, gamma)]  # Q_1 = gamma, not updated with g_1(x_1)
    for t in range(2, T + 1):
        expected.append(np.maximum((1 - eta) * expected[-1] + violation[t - 1], gamma))
    np.testing.assert_allclose(Q, np.array(expected), rtol=1e-12)
    G = violation.max()  # Lemma 1's induction only uses the observed violations
    assert np.all(Q >= gamma) and np.all(Q <= max(gamma, G / eta) * (1 + 1e-12))
    assert np.all(jax.vmap(lambda x: PROBLEM.domain.contains(x, atol=1e-12))(traj.decisions))


def test_queue_is_frozen_at_gamma_when_eps_is_at_least_G():
    info = ProblemInfo.of(PROBLEM, T)
    G = info.constants.constraint_bound
    with pytest.warns(UserWarning, match="queue stays frozen"):
        learner = COLDQ.from_theory(info, eps=G, **AFFINE)
    traj = ocokit.run(learner, PROBLEM, T, 3, record_decisions=True)
    assert np.max(np.maximum(traj.constraints, 0)) > 0  # there were violations ...
    np.testing.assert_array_equal(traj.diagnostics["queue"], learner.gamma)  # ... and the queue never moved


def _fixed_constraint_qp(T):
    """Online QP of spec §6.2 (one draw of A, b; theta_t as there) as a CustomProblem."""
    rng = np.random.default_rng(0)
    A, b = rng.uniform(0.1, 0.5, (3, 2)), rng.uniform(0.0, 0.3, 3)
    t = np.arange(1, T + 1)
    theta = rng.uniform(-1, 1, (T, 2)) * t[:, None] ** 0.1 + rng.uniform(-1, 0, (T, 2))
    theta += np.where(rng.permutation(T) % 2 == 0, 1.0, -1.0)[:, None]
    return CustomProblem(
        domain=Box(0.0, 1.0, dim=2),
        loss=lambda th, x: jnp.sum((x - th) ** 2) + 20 * th @ x,
        constraints=lambda th, x: jnp.asarray(A) @ x - jnp.asarray(b),
        data=theta,
    )


def test_fixed_constraints_give_no_violation_after_a_feasible_start():
    # Corollary 1 with V_g = 0: O(1) hard violation; x_1 = 0 is feasible and gamma = eps T exceeds the
    # multiplier of the projected step, so the hinge is an exact penalty and every x_t satisfies g.
    T_qp = 1000
    problem = _fixed_constraint_qp(T_qp)
    learner = COLDQ.from_paper(ProblemInfo.of(problem, T_qp), table=4, solver="affine")
    traj = ocokit.run(learner, problem, T_qp, 0)
    assert np.sum(np.maximum(traj.constraints, 0)) < 1e-8
    assert np.mean(traj.diagnostics["oracle_calls"] > 0) > 0.05  # the constraint binds in many rounds


def test_without_constraints_coldq_is_projected_ogd_with_step_one_over_two_alpha():
    centers = jax.random.uniform(jax.random.PRNGKey(0), (30, 3), minval=-2.0, maxval=2.0)
    problem = CustomProblem(domain=Box(-1.0, 1.0, dim=3), loss=lambda c, x: jnp.sum((x - c) ** 2), data=centers)
    coldq = COLDQ(eta=0.5, gamma=1.0, alpha0=2.0, alpha_power=0.5, start="center")
    ogd = OGD(eta=1.0 / (2 * 2.0), decay="inverse_sqrt")
    a = ocokit.run(coldq, problem, 30, record_decisions=True)
    b = ocokit.run(ogd, problem, 30, record_decisions=True)
    np.testing.assert_allclose(a.decisions, b.decisions, atol=1e-6)  # OGD takes sqrt(t) in float32


def test_theory_and_paper_parameters():
    info = ProblemInfo.of(_REGRESSION, 1000)
    convex = COLDQ.from_theory(info, V_x=0.5)
    assert (float(convex.eta), float(convex.gamma), float(convex.alpha_power)) == (1e-3, 500.0, 0.25)
    for table in (3, 4, 5, 6):
        paper = COLDQ.from_paper(info, table=table)
        assert (float(paper.eta), float(paper.gamma), float(paper.alpha0), float(paper.alpha_power)) == (
            1e-3,
            500.0,
            1.0,
            0.5,
        )
    with pytest.raises(ValueError, match="table"):
        COLDQ.from_paper(info, table=7)
    strong = ProblemInfo(info.domain, 2, 1000, ocokit.problems.ProblemConstants(strong_convexity=2.0))
    sc = COLDQ.from_theory(strong, strongly_convex=True)
    assert (float(sc.alpha0), float(sc.alpha_power)) == (1.0, 1.0)  # A4's mu = m / 2, alpha_t = mu t
    with pytest.raises(ValueError, match="strong_convexity"):
        COLDQ.from_theory(info, strongly_convex=True)
    for horizon, M in ((1000, 5), (2880, 6), (5000, 7)):
        expert = COLDQExpert.from_theory(ProblemInfo.of(_REGRESSION, horizon))
        assert expert.num_experts == M
        assert float(expert.expert.eta) == pytest.approx(horizon**-1.5)
        assert float(expert.expert.gamma) == pytest.approx(0.5 * horizon**1.5)
        assert float(expert.kappa) == pytest.approx(horizon**-0.5)
        assert float(expert.prior().sum()) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eta": 1.0, "gamma": 1.0}, "eta"),
        ({"eta": 0.1, "gamma": 0.0}, "gamma"),
        ({"eta": 0.1, "gamma": 1.0, "alpha0": -1.0}, "alpha0"),
        ({"eta": 0.1, "gamma": 1.0, "alpha_power": 1.5}, "alpha_power"),
        ({"eta": 0.1, "gamma": 1.0, "solver": "cvxpy"}, "solver"),
        ({"eta": 0.1, "gamma": 1.0, "start": "random"}, "start"),
    ],
)
def test_bad_hyperparameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        COLDQ(**kwargs)
    with pytest.raises(ValueError, match=match):
        COLDQExpert(num_experts=2, kappa=0.1, **kwargs)


def _reference_expert(T, seed, M, kappa, eta, gamma):
    """Algorithm 2 written from the spec (w_2 from l_1; queues on each expert's own decision)."""
    data = host_rounds(PROBLEM, T, seed)
    m = np.arange(1, M + 1)
    w = (M + 1) / (m * (m + 1) * M)
    xs, Q = np.zeros((M, 4)), np.full((M, 2), gamma)
    x = w @ xs
    played, weights, queues = [x], [], []
    for t in range(1, T + 1):
        d = data[t - 1]
        if t >= 2:
            Q = np.maximum((1 - eta) * Q + np.maximum(xs @ d["A"].T - d["b"], 0), gamma)
        surrogate = (xs - x) @ _grad(d, x)  # l_t(x_t[m]) = <grad f_t(x_t), x_t[m] - x_t>
        w = w * np.exp(-kappa * surrogate)
        w /= w.sum()
        weights.append(w)
        queues.append(Q)
        if t < T:
            xs = np.array([_p_t(_grad(d, xs[k]), t**0.5 / 2**k, xs[k], Q[k], d) for k in range(M)])
            x = w @ xs
            played.append(x)
    return np.array(played), np.array(weights), np.array(queues)


def test_coldq_expert_matches_the_numpy_cvxpy_reference_trace():
    M, kappa, eta, gamma = 3, 0.5, 1.0 / T, 0.05 * T
    learner = COLDQExpert(num_experts=M, kappa=kappa, eta=eta, gamma=gamma, **AFFINE)
    traj = ocokit.run(learner, PROBLEM, T, 11, record_decisions=True)
    played, weights, queues = _reference_expert(12, 11, M, kappa, eta, gamma)
    np.testing.assert_allclose(traj.decisions[:12], played, atol=1e-6)
    np.testing.assert_allclose(traj.diagnostics["weights"][:12], weights, atol=1e-6)
    np.testing.assert_allclose(traj.diagnostics["queue"][:12], queues, rtol=1e-6)
    np.testing.assert_allclose(traj.diagnostics["weights"].sum(axis=-1), 1.0, atol=1e-12)
    assert np.ptp(weights[:, 0]) > 1e-3  # the weights really moved


def test_coldq_expert_with_one_expert_is_coldq():
    kw = {"eta": 1.0 / T, "gamma": 0.05 * T, "alpha0": 1.5, **AFFINE}
    a = ocokit.run(COLDQExpert(num_experts=1, kappa=0.3, **kw), PROBLEM, T, 5, record_decisions=True)
    b = ocokit.run(COLDQ(**kw), PROBLEM, T, 5, record_decisions=True)
    np.testing.assert_allclose(a.decisions, b.decisions, atol=1e-13)
    np.testing.assert_allclose(a.diagnostics["queue"][:, 0], b.diagnostics["queue"], rtol=1e-13)


def test_coldq_on_job_scheduling_uses_the_log_capacity_solver():
    problem = ocokit.problems.JobScheduling.synthetic(num_slots=288)
    assert DeclaredSolver().resolve(problem.constraint_structure, problem.domain) == LogCapacitySolver()
    learner = COLDQ.from_paper(ProblemInfo.of(problem, 60), table=6)
    session = ocokit.Session(learner, problem, horizon=60, key=0)  # steps without the comparators' compile
    env_key = split_key(session.key)[0]
    for t in range(1, 21):
        x = session.decide()
        assert np.all((x >= 0) & (x <= 1000))
        session.observe(problem.round_data(None, jax.random.fold_in(env_key, t), t))
        assert bool(learner.diagnostics(session.state)["solver_converged"])
    assert float(session.state.queue[0]) >= float(learner.gamma)

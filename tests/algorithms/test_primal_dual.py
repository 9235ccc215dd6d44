"""RECOO, Yi et al. 2021 and Yi et al. 2023 against NumPy loops written from spec baselines.md §4-§6.

Each reference reads the same round data as the engine (``fold_in(env_key, t)``) and follows the spec's
pseudo-code line by line, solving RECOO's / Yi 2021's per-round subproblem with CVXPY (tests only). The
runs skip the problems' comparators (``comparators=False``: compile time; they are tested in tests/problems).
"""

from __future__ import annotations

import cvxpy as cp
import jax
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import RECOO, ProblemInfo, Yi2021, Yi2023
from ocokit.engine import split_key
from ocokit.problems import JobScheduling, OnlineLinearProgram, OnlineQuadraticProgram, TimeVaryingRegression
from ocokit.problems._base import all_rounds

T = 8
SEED = 3
TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def play(learner, problem, steps=T):
    """One run of ``steps`` rounds (seed ``SEED``, no comparators); every decision lies in the box ``K``."""
    traj = ocokit.run(learner, problem, steps, SEED, record_decisions=True, comparators=False)
    xs = np.asarray(traj.decisions)
    lo, hi = np.asarray(problem.domain.lower), np.asarray(problem.domain.upper)
    assert xs.shape == (steps, lo.shape[0]) and np.all(xs >= lo) and np.all(xs <= hi)
    return traj


def rounds(problem, T=T, seed=SEED):
    """The round data the engine generates for ``seed``, as NumPy arrays (leading axis: rounds)."""
    env_key = split_key(jax.random.PRNGKey(seed))[0]
    episode = problem.episode(env_key, T)
    return jax.tree.map(np.asarray, all_rounds(problem, episode, env_key, T))


def hinge_step(c, z, alpha, weights, A, b, lower, upper):
    """``argmin_{l<=x<=u} <c, x - z> + alpha ||x - z||^2 + sum_n w_n [a_n x - b_n]_+`` by CVXPY."""
    x = cp.Variable(z.shape[0])
    objective = c @ (x - z) + alpha * cp.sum_squares(x - z) + weights @ cp.pos(A @ x - b)
    cp.Problem(cp.Minimize(objective), [x >= lower, x <= upper]).solve(solver="CLARABEL", **TIGHT)
    return np.clip(x.value, lower, upper)


def regression_grad(d, t, x):
    return d["H"][t].T @ (d["H"][t] @ x - d["y"][t])


# --------------------------------------------------------------------------------------------------
# RECOO (spec baselines.md §4.2, [C] form; paper003.md §5.1)


def reference_recoo(d, grad, lower, upper, alpha, gamma, eta, eps, queue_uses="current", steps=T):
    A, b = d["A"], d["b"]
    x, Q = np.zeros(lower.shape[0]), np.zeros(b.shape[1])
    xs, Qs = [x], []
    for t in range(1, steps):  # round t (1-based) just played at x = x_t; compute x_{t+1}
        i = t - 1
        a_t, g_t, e_t = alpha * t**0.5, gamma * t ** (0.5 + eps), eta * t**0.5
        if queue_uses == "current" and t >= 2:
            Q = np.maximum(e_t, Q + g_t * np.maximum(A[i] @ x - b[i], 0.0))
        x_new = hinge_step(grad(d, i, x), x, a_t, g_t * Q, A[i], b[i], lower, upper)
        if queue_uses == "previous":
            Q = np.maximum(Q + g_t * np.maximum(A[i] @ x_new - b[i], 0.0), e_t)
        Qs.append(Q.copy())
        x = x_new
        xs.append(x)
    return np.array(xs), np.array(Qs)


@pytest.mark.parametrize("queue_uses", ["current", "previous"])
def test_recoo_matches_the_spec_trace(queue_uses):
    problem = TimeVaryingRegression(dim=3, rows=2)
    learner = RECOO(alpha=0.5, gamma=1.0, eta=1.0, epsilon=0.01, queue_uses=queue_uses, solver="affine")
    traj = play(learner, problem)
    d = rounds(problem)
    lo, hi = np.asarray(problem.domain.lower), np.asarray(problem.domain.upper)
    xs, Qs = reference_recoo(d, regression_grad, lo, hi, 0.5, 1.0, 1.0, 0.01, queue_uses)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, atol=1e-6)
    Q = np.asarray(traj.diagnostics["queue"])
    np.testing.assert_allclose(Q[:-1], Qs, rtol=1e-6, atol=1e-6)
    # x_2 is a projected gradient step with step 1 / (2 alpha_1), as Q_1 = 0
    x2 = np.clip(-regression_grad(d, 0, np.zeros(3)) / (2 * 0.5), lo, hi)
    np.testing.assert_allclose(np.asarray(traj.decisions[1]), x2, atol=1e-10)
    t = np.arange(1, T + 1)[:, None]
    if queue_uses == "current":  # Q_1 = 0 (not updated with g_1(x_1)); then Q_t >= eta_t = sqrt(t)
        assert np.all(Q[0] == 0.0) and np.all(Q[1:] >= np.sqrt(t[1:]) - 1e-12)
    else:  # Q_{t+1} >= eta_t, computed in round t's update
        assert np.all(Q >= np.sqrt(t) - 1e-12)


def test_recoo_log_capacity_step_matches_cvxpy():
    """RECOO on job scheduling: the exact log-capacity step against CVXPY's exponential cone."""
    problem = JobScheduling.synthetic(num_slots=10, regions=2, centres_per_region=3, arrival_rate=40.0, upper=50.0)
    learner = RECOO.from_paper(ProblemInfo.of(problem, 5), table=6, solver="log_capacity")
    traj = play(learner, problem, 5)
    d = rounds(problem, 5)
    xs = np.asarray(traj.decisions)
    Q = np.asarray(traj.diagnostics["queue"])[:, 0]
    for t in range(2, 5):  # x_{t+1} from round t's data, with weight gamma_t Q_t
        i = t - 1
        x0 = xs[i]
        z = cp.Variable(6)
        g = d["lam"][i] - 4 * cp.sum(cp.log(1 + 4 * z))
        obj = d["c"][i] @ (z - x0) + 0.7 * t**0.5 * cp.sum_squares(z - x0) + t**0.51 * Q[i] * cp.pos(g)
        cp.Problem(cp.Minimize(obj), [z >= 0, z <= 50]).solve(solver="CLARABEL")
        np.testing.assert_allclose(xs[t], z.value, atol=1e-4)


# --------------------------------------------------------------------------------------------------
# Yi et al. 2021 (spec baselines.md §5.2 and paper003.md §5.2)


def reference_yi2021(d, grad, lower, upper, alpha, gamma, steps=T):
    A, b = d["A"][0], d["b"][0]
    x, q = np.zeros(2), np.zeros(3)
    xs, qs = [x], []
    for t in range(1, steps):
        i = t - 1
        inc = gamma * np.maximum(A @ x - b, 0.0)
        q = q + inc
        q_hat = q + inc
        # argmin alpha <grad, x> + alpha gamma sum q_hat [g]_+ + ||x - x_t||^2 (divide by alpha)
        x = hinge_step(grad(d, i, x), x, 1.0 / alpha, gamma * q_hat, A, b, lower, upper)
        xs.append(x)
        qs.append(q.copy())
    return np.array(xs), np.array(qs)


def qp_grad(d, i, x):
    th = d["theta"][i]
    return 2 * (x - th) + 20 * th


def lp_grad(d, i, x):
    return d["theta"][i]


@pytest.mark.parametrize(
    ("problem", "grad", "table", "rule"),
    [
        (OnlineQuadraticProgram(), qp_grad, 4, "printed"),
        (OnlineLinearProgram(), lp_grad, 5, "code"),
    ],
    ids=["qp-printed", "lp-code"],
)
def test_yi2021_matches_the_spec_trace(problem, grad, table, rule):
    learner = Yi2021.from_paper(ProblemInfo.of(problem, T), table=table, gamma_rule=rule, solver="affine")
    traj = play(learner, problem)
    alpha0, gamma0 = {4: (100.0, 2.5), 5: (2.0, 1.0)}[table]
    alpha = alpha0 / T**0.5
    gamma = gamma0 / T**0.25 if rule == "printed" else gamma0 * T**0.25
    xs, qs = reference_yi2021(rounds(problem), grad, np.zeros(2), np.ones(2), alpha, gamma)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, atol=1e-6)
    q = np.asarray(traj.diagnostics["queue"])
    np.testing.assert_allclose(q[:-1], qs, rtol=1e-6, atol=1e-9)
    assert np.all(np.diff(q, axis=0) >= 0)  # q only accumulates violations


def test_yi2021_steps_follow_the_tables():
    alpha, gamma = Yi2021.from_paper(ProblemInfo.of(OnlineLinearProgram(), 5000), table=4).steps(5000)
    np.testing.assert_allclose([float(alpha), float(gamma)], [100 / 5000**0.5, 2.5 / 5000**0.25])
    alpha, gamma = Yi2021(alpha0=4.0, gamma0=0.5, gamma_rule="code").steps(5000)
    np.testing.assert_allclose([float(alpha), float(gamma)], [4 / 5000**0.5, 0.5 * 5000**0.25])


# --------------------------------------------------------------------------------------------------
# Yi et al. 2023 (spec baselines.md §6.2 and paper003.md §5.3)


def reference_yi2023(d, lower, upper, alpha, gamma, beta, dual_step="gamma", steps=T):
    A, b = d["A"], d["b"]
    x, q = np.zeros(lower.shape[0]), np.zeros(b.shape[1])
    xs, qs = [x], []
    for s in range(2, steps + 1):  # [C] indices: x_s from round s-1's data
        i = s - 2
        a_s, g_s, b_s = alpha / s**0.5, gamma / s**0.5, beta / s**0.5
        step, reg = (g_s, b_s) if dual_step == "gamma" else (b_s, g_s)
        g = A[i] @ x - b[i]
        S = np.where((g > 0)[:, None], A[i], 0.0)
        omega = regression_grad(d, i, x) + S.T @ q
        x_new = np.clip(x - a_s * omega, lower, upper)
        q = np.maximum(0.0, (1 - reg * step) * q + step * (np.maximum(g, 0.0) + S @ (x_new - x)))
        xs.append(x_new)
        qs.append(q.copy())
        x = x_new
    return np.array(xs[:steps]), np.array(qs)


@pytest.mark.parametrize("dual_step", ["gamma", "beta"])
def test_yi2023_matches_the_spec_trace(dual_step):
    problem = TimeVaryingRegression(dim=3, rows=2)
    steps = 20
    learner = Yi2023.from_paper(ProblemInfo.of(problem, steps), table=3, dual_step=dual_step)
    traj = play(learner, problem, steps)
    lo, hi = np.asarray(problem.domain.lower), np.asarray(problem.domain.upper)
    xs, qs = reference_yi2023(rounds(problem, steps), lo, hi, 3.0, 0.1, 5.0, dual_step, steps)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(traj.diagnostics["queue"])[:-1], qs, rtol=1e-12, atol=1e-12)
    assert np.all(np.asarray(traj.diagnostics["queue"]) >= 0)
    if dual_step == "gamma":  # pinned iterates x_2..x_4 (change only with a reason)
        np.testing.assert_allclose(np.asarray(traj.decisions)[1:4], PINNED_YI2023, rtol=1e-12, atol=1e-12)


PINNED_YI2023 = [
    [5.0, 2.555403379474327, 4.197167686715598],
    [2.0472954100439726, 3.611973260518647, 2.384528003547065],
    [3.8153227741142186, 2.9696104000688286, 1.0199165530244987],
]


# --------------------------------------------------------------------------------------------------
# Parameters and validation


def test_from_paper_tables_and_errors():
    info = ProblemInfo.of(TimeVaryingRegression(), 100)
    r = RECOO.from_paper(info, table=4)
    assert (float(r.alpha), float(r.gamma), float(r.eta), float(r.epsilon)) == (1.0, 7.0, 1.0, 0.01)
    y = Yi2023.from_paper(info, table=6)
    assert (float(y.alpha), float(y.gamma), float(y.beta)) == (100.0, 1.0, 1.0)
    for cls, table in ((RECOO, 7), (Yi2021, 3), (Yi2023, 4)):
        with pytest.raises(ValueError, match="table"):
            cls.from_paper(info, table=table)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        RECOO(alpha=-1.0)
    with pytest.raises(ValueError, match="queue_uses"):
        RECOO(queue_uses="old")
    with pytest.raises(ValueError, match="c must be in"):
        Yi2021(c=1.5)
    with pytest.raises(ValueError, match="dual_step"):
        Yi2023(dual_step="delta")

"""LOO-BOGD, LOO-BBGD (G&K 2022) and the reconstructed LPM, LBPM (G&K 2024): spec baselines.md §1-§2, §10.

* SH-FW and the close infeasible projection against Lemmas 6 and 7 (checked exactly over K through its LMO),
  and against a NumPy loop written from the spec's pseudo-code;
* every learner iterate by iterate against a NumPy reference on a tiny problem (the pipelined references
  follow the paper's own block indices, not the implementation's state layout);
* Theorem 9's LOO budget, the reconstructions' label, bad hyperparameters;
* LPM's fitted growth exponents (published: regret T^{3/4}, CCV T^{7/8}).
"""

from __future__ import annotations

import math

import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit import metrics
from ocokit.algorithms import LBPM, LOOBBGD, LOOBOGD, LPM, ProblemInfo
from ocokit.algorithms._loo_chain import close_infeasible_projection, separating_hyperplane_fw
from ocokit.engine import split_key
from ocokit.feedback import sample_unit_sphere
from ocokit.problems import AbstractProblem, CustomProblem, ProblemConstants
from ocokit.sets import Box, L2Ball, NuclearNormBall, Simplex

# --------------------------------------------------------------------------------------------------
# NumPy references, written from the spec's pseudo-code (baselines.md §1.3-§1.6, §2.2-§2.3).


def np_box_lmo(lo, hi):
    return lambda d: np.where(d > 0, lo, hi)


def np_shfw(lmo, y, x, eps):
    """Algorithm 2 (SH-FW)."""
    calls = 0
    while True:
        v = lmo(x - y)
        calls += 1
        if (x - y) @ (x - v) <= eps or (x - y) @ (x - y) <= 3 * eps:
            return x, calls
        d = v - x
        sigma = np.clip((y - x) @ d / (d @ d), 0.0, 1.0)
        x = x + sigma * d


def np_alg3(lmo, center, R, x0, y0, eps):
    """Algorithm 3 (close infeasible projection); the ball of its first line is centred at K's centre."""
    y = center + (y0 - center) / max(1.0, np.linalg.norm(y0 - center) / R)
    d0 = (x0 - y0) @ (x0 - y0)
    if d0 <= 3 * eps:
        return x0, y, 0
    gamma = 2 * eps / d0
    x, calls = x0, 0
    while True:
        x, k = np_shfw(lmo, y, x, eps)
        calls += k
        if (x - y) @ (x - y) > 3 * eps:
            y = y - gamma * (y - x)
        else:
            return x, y, calls


def np_blocked(T, K, center, lmo, R, eta, eps, grad, pipelined, block_end=None):
    """Algorithms 4 / 9 with the paper's indices: x[m] is played in block m + 1; Alg3 at block starts.

    ``grad(t, x)`` is round t's (estimated) gradient at the played point; ``block_end(m, x)`` is called after
    block m (dual updates). Returns the played points and the LOO calls charged to each block's last round.
    """
    M = T // K
    x = {0: center, 1: center}
    ytil = {0: center, 1: center}
    played, calls = [], np.zeros(T, int)
    y = ytil[0]
    for m in range(1, M + 1):
        xm = x[m - 1]
        if pipelined and m >= 2:  # (x_m, y~_m) = Alg3(K, x_{m-2}, y_{(m-1)K+1}); y_{(m-1)K+1} = y~_{m-1}
            x[m], ytil[m], calls[(m - 1) * K - 1] = np_alg3(lmo, center, R, x[m - 2], y, eps)
            y = ytil[m - 1]
        for s in range(1, K + 1):
            t = (m - 1) * K + s
            played.append(xm)
            y = y - eta * grad(t, xm)
        if block_end is not None:
            block_end(m, xm)
        if not pipelined:  # the projection of block m is played in block m + 1
            x[m], y, calls[m * K - 1] = np_alg3(lmo, center, R, xm, y, eps)
    return np.array(played), calls


# --------------------------------------------------------------------------------------------------
# A tiny deterministic problem (data mode) with a linear-plus-quadratic loss and one linear constraint.

D3, T_SMALL, K_SMALL = 3, 24, 4
_rng = np.random.default_rng(7)
C = _rng.normal(size=(T_SMALL, D3)) + np.array([1.0, -0.6, 0.3])
S = _rng.uniform(0.5, 1.5, size=T_SMALL)
A = np.array([1.0, -1.0, 0.5])
B0, Q = -0.2, 0.5


def tiny_problem(constants=None):
    return CustomProblem(
        domain=Box(-1.0, 1.0, dim=D3),
        constants=constants,
        loss=lambda d, x: jnp.dot(d["c"], x) + 0.5 * Q * jnp.sum(x**2),
        constraints=lambda d, x: d["s"] * jnp.array([jnp.dot(jnp.asarray(A), x) - B0]),
        data={"c": jnp.asarray(C), "s": jnp.asarray(S)},
    )


def f_np(t, x):
    return C[t - 1] @ x + 0.5 * Q * x @ x


def grad_f_np(t, x):
    return C[t - 1] + Q * x


def g_np(t, x):
    return S[t - 1] * (A @ x - B0)


BOX_LMO = np_box_lmo(-np.ones(D3), np.ones(D3))
ZERO = np.zeros(D3)


def learner_us(seed, T, shape=(D3,)):
    """u_1..u_T of a bandit learner run with ``key=seed`` (init draws u_1, each update the next one)."""
    key = split_key(jax.random.PRNGKey(seed))[1]
    us = []
    for _ in range(T):
        key, sub = jax.random.split(key)
        us.append(np.asarray(sample_unit_sphere(sub, shape, jnp.float64)))
    return np.array(us)


# --------------------------------------------------------------------------------------------------
# SH-FW and Algorithm 3: Lemmas 6 and 7, exactly over K via its LMO.


def _sq(a):
    return float(jnp.vdot(a, a))


@eqx.filter_jit
def _shfw_jit(K, y, x1, eps):
    return separating_hyperplane_fw(K, y, x1, K.lmo_init(), eps=eps, max_iter=10**5)


@eqx.filter_jit
def _alg3_jit(K, x0, y0, eps, R):
    return close_infeasible_projection(K, x0, y0, K.lmo_init(), eps=eps, radius=R, max_outer=10**5, max_fw=10**5)


points = st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3).map(lambda v: jnp.asarray(v))


@settings(max_examples=15, deadline=None)
@given(y=points, start=st.integers(0, 7), eps=st.floats(1e-3, 0.3), ball=st.booleans())
def test_sh_fw_satisfies_lemma_6(y, start, eps, ball):
    K = L2Ball(3, radius=1.0) if ball else Box(-1.0, 1.0, dim=3)
    x1 = K.lmo(jnp.asarray([(start >> i & 1) - 0.5 for i in range(3)]))  # a vertex or boundary point
    x, _, calls = _shfw_jit(K, y, x1, jnp.asarray(eps))
    R = 1.0 if ball else math.sqrt(3.0)
    assert bool(K.contains(x, atol=1e-9))
    assert _sq(x - y) <= _sq(x1 - y) + 1e-12  # property 1
    assert int(calls) <= math.ceil(27 * R**2 / eps - 2)  # iteration bound
    if _sq(x - y) > 3 * eps:  # property 2: y - x separates y from K with margin 2 eps
        worst = float(jnp.dot(y, y - x) + jnp.dot(K.lmo(x - y), x - y))  # min_{z in K} (y - z).(y - x)
        assert worst > 2 * eps - 1e-12
    dist2 = _sq(y - K.project(y))
    if dist2 < eps:  # property 3
        assert _sq(x - y) <= 3 * eps + 1e-12


@settings(max_examples=15, deadline=None)
@given(y0=points, eps=st.floats(1e-3, 0.3), ball=st.booleans())
def test_close_infeasible_projection_satisfies_lemma_7(y0, eps, ball):
    K = L2Ball(3, radius=1.0) if ball else Box(-1.0, 1.0, dim=3)
    R = 1.0 if ball else math.sqrt(3.0)
    x0 = K.center()
    x, y, _, calls = _alg3_jit(K, x0, y0, jnp.asarray(eps), jnp.asarray(R))
    assert bool(K.contains(x, atol=1e-9))
    assert _sq(x - y) <= 3 * eps + 1e-12
    assert float(jnp.linalg.norm(y)) <= R + 1e-9  # y in R B
    # infeasible projection: max_{z in K} ||y - z||^2 - ||y0 - z||^2 <= 0, attained at lmo(y - y0)
    z = K.lmo(y - y0)
    assert _sq(y - z) - _sq(y0 - z) <= 1e-9
    for z in jax.random.uniform(jax.random.PRNGKey(0), (20, 3), minval=-1, maxval=1):
        z = K.project(z)
        assert _sq(y - z) <= _sq(y0 - z) + 1e-9
    if _sq(x0 - y0) <= 3 * eps:
        assert int(calls) == 0


def test_close_infeasible_projection_matches_the_numpy_loop_and_is_a_no_op_when_inactive():
    K = Box(-1.0, 1.0, dim=3)
    rng = np.random.default_rng(0)
    for _ in range(10):
        y0 = rng.uniform(-3, 3, 3)
        x0 = np.asarray(K.project(jnp.asarray(rng.uniform(-1, 1, 3))))
        eps = rng.uniform(0.005, 0.1)
        x, y, _, calls = close_infeasible_projection(
            K,
            jnp.asarray(x0),
            jnp.asarray(y0),
            None,
            eps=eps,
            radius=math.sqrt(3),
            max_outer=10**5,
            max_fw=10**5,
        )
        xr, yr, cr = np_alg3(BOX_LMO, ZERO, math.sqrt(3), x0, y0, eps)
        np.testing.assert_allclose(x, xr, atol=1e-12)
        np.testing.assert_allclose(y, yr, atol=1e-12)
        assert int(calls) == cr
    x, y, _, calls = close_infeasible_projection(
        K, jnp.zeros(3), jnp.full(3, 5.0), None, eps=0.01, radius=1.0, max_outer=10, max_fw=10, active=False
    )
    assert int(calls) == 0
    np.testing.assert_array_equal(x, 0.0)
    np.testing.assert_array_equal(y, 5.0)


def test_a_vmapped_projection_equals_the_separate_ones_on_the_nuclear_ball():
    # Under vmap the members that stop first keep running the loop body with a zero LMO direction (so the
    # LMO costs them one step); their results must not change, nor the others'. eps = 0.1 keeps the runs short (35
    # and 219 calls): the LMO stops at its tolerance, so its vertex depends on its warm start, and over hundreds of
    # SH-FW calls a batched product's last-bit difference would grow (eps = 0.01: 1e-3 after 400 calls).
    K = NuclearNormBall((5, 7), radius=2.0)
    y0s = jax.random.normal(jax.random.PRNGKey(3), (3, 5, 7)) * jnp.asarray([0.5, 2.0, 3.0])[:, None, None]
    active = jnp.asarray([True, True, False])

    def project(y0, on):
        return close_infeasible_projection(
            K, K.center(), y0, K.lmo_init(), eps=0.1, radius=2.0, max_outer=200, max_fw=200, active=on
        )

    xs, ys, _, calls = jax.jit(jax.vmap(project))(y0s, active)
    assert int(calls[0]) < int(calls[1]) and int(calls[2]) == 0  # member 0 stops long before member 1
    for i in range(3):
        x, y, _, c = jax.jit(project)(y0s[i], active[i])
        np.testing.assert_allclose(xs[i], x, atol=1e-12)
        np.testing.assert_allclose(ys[i], y, atol=1e-12)
        assert int(calls[i]) == int(c)


# --------------------------------------------------------------------------------------------------
# The learners against the references, iterate by iterate.


@pytest.mark.parametrize("pipelined", [True, False])
def test_loo_bogd_matches_the_numpy_reference(pipelined):
    eta, eps, R = 0.15, 0.01, math.sqrt(3)
    learner = LOOBOGD(eta=eta, eps=eps, block_size=K_SMALL, radius=R, pipelined=pipelined)
    traj = ocokit.run(learner, tiny_problem(), T_SMALL, 0, record_decisions=True)
    played, calls = np_blocked(T_SMALL, K_SMALL, ZERO, BOX_LMO, R, eta, eps, grad_f_np, pipelined)
    np.testing.assert_allclose(traj.decisions, played, atol=1e-10)
    got = np.asarray(traj.diagnostics["oracle_calls"])
    np.testing.assert_array_equal(got[:-1], calls[:-1])  # the last round's projection is never played
    assert len({tuple(np.round(p, 9)) for p in played}) >= 4  # the test instance really moves
    assert calls.sum() > 0


@pytest.mark.parametrize("pipelined", [True, False])
def test_loo_bbgd_matches_the_numpy_reference(pipelined):
    eta, delta, R, seed = 0.06, 0.3, math.sqrt(3), 5
    s = 1 - delta / 1.0  # K_{delta/r} with r = 1 for [-1, 1]^3
    learner = LOOBBGD(eta=eta, delta=delta, block_size=K_SMALL, radius=R, pipelined=pipelined)
    traj = ocokit.run(learner, tiny_problem(), T_SMALL, seed, record_decisions=True)
    us = learner_us(seed, T_SMALL)

    def grad(t, x):
        z = x + delta * us[t - 1]
        return (D3 / delta) * f_np(t, z) * us[t - 1]

    lmo = np_box_lmo(-s * np.ones(D3), s * np.ones(D3))
    played, calls = np_blocked(T_SMALL, K_SMALL, ZERO, lmo, R, eta, delta**2 / 3, grad, pipelined)
    np.testing.assert_allclose(traj.decisions, played + delta * us, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(traj.diagnostics["oracle_calls"])[:-1], calls[:-1])
    assert calls.sum() > 0


def _lpm_reference(T, K, eta, eps, R, mu, dual_reg, V, rule, hinge, pipelined, bandit=None):
    """LPM (spec §2.2) / LBPM (§2.3) as written there, with the dual updated after each block."""
    lam = {"value": 0.0, "sum": 0.0}

    def pieces(t, x):
        g = g_np(t, x)
        dg = S[t - 1] * A
        if hinge:
            dg = dg if g > 0 else 0 * dg
            g = max(g, 0.0)
        return g, dg

    def grad(t, x):
        if bandit is not None:  # one-point estimates at the played z_t = x + delta u_t
            delta, us = bandit
            z = x + delta * us[t - 1]
            g = g_np(t, z)
            h = max(g, 0.0) if hinge else g
            lam["sum"] += h
            scale = 1.0 if rule == "lagrangian" else V
            return (D3 / delta) * (scale * f_np(t, z) + lam["value"] * h) * us[t - 1]
        g, dg = pieces(t, x)
        lam["sum"] += g
        if rule == "lagrangian":
            return grad_f_np(t, x) + lam["value"] * dg
        return V * grad_f_np(t, x) + lam["value"] * dg

    def block_end(m, x):
        if rule == "lagrangian":
            lam["value"] = max(0.0, lam["value"] + mu * (lam["sum"] - K * dual_reg * mu * lam["value"]))
        else:
            lam["value"] = max(0.0, lam["value"] + lam["sum"])
        lam["sum"] = 0.0
        duals.append(lam["value"])

    duals = []
    if bandit is None:
        played, calls = np_blocked(T, K, ZERO, BOX_LMO, R, eta, eps, grad, pipelined, block_end)
    else:
        s = 1 - bandit[0]
        lmo = np_box_lmo(-s * np.ones(D3), s * np.ones(D3))
        played, calls = np_blocked(T, K, ZERO, lmo, R, eta, eps, grad, pipelined, block_end)
    return played, calls, np.array(duals)


def _case_id(c):
    return f"{c['dual_rule']}-hinge{c['hinge']}-pipe{c['pipelined']}"


LPM_CASES = [
    dict(mu=0.3, dual_reg=0.5, V=1.0, dual_rule="lagrangian", hinge=True, pipelined=False),
    dict(mu=0.3, dual_reg=0.5, V=1.0, dual_rule="lagrangian", hinge=False, pipelined=True),
    dict(mu=1.0, dual_reg=0.0, V=3.0, dual_rule="dpp_queue", hinge=True, pipelined=True),
    dict(mu=1.0, dual_reg=0.0, V=3.0, dual_rule="dpp_queue", hinge=False, pipelined=False),
]


@pytest.mark.parametrize("case", LPM_CASES, ids=_case_id)
def test_lpm_matches_the_numpy_reference(case):
    eta, eps, R = 0.1, 0.01, math.sqrt(3)
    eta = eta / case["V"]
    learner = LPM(eta=eta, eps=eps, block_size=K_SMALL, radius=R, **case)
    traj = ocokit.run(learner, tiny_problem(), T_SMALL, 0, record_decisions=True)
    played, calls, duals = _lpm_reference(
        T_SMALL,
        K_SMALL,
        eta,
        eps,
        R,
        case["mu"],
        case["dual_reg"],
        case["V"],
        case["dual_rule"],
        case["hinge"],
        case["pipelined"],
    )
    np.testing.assert_allclose(traj.decisions, played, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(traj.diagnostics["oracle_calls"])[:-1], calls[:-1])
    recorded = np.asarray(traj.diagnostics["dual"])[K_SMALL - 1 :: K_SMALL, 0]
    np.testing.assert_allclose(recorded, duals, atol=1e-10)
    assert duals.max() > 0  # the constraint binds on this instance


@pytest.mark.parametrize("case", LPM_CASES[1:3], ids=_case_id)
def test_lbpm_matches_the_numpy_reference(case):
    eta, delta, R, seed = 0.02 / case["V"], 0.3, math.sqrt(3), 2
    learner = LBPM(eta=eta, delta=delta, block_size=K_SMALL, radius=R, **case)
    traj = ocokit.run(learner, tiny_problem(), T_SMALL, seed, record_decisions=True)
    us = learner_us(seed, T_SMALL)
    played, calls, duals = _lpm_reference(
        T_SMALL,
        K_SMALL,
        eta,
        delta**2 / 3,
        R,
        case["mu"],
        case["dual_reg"],
        case["V"],
        case["dual_rule"],
        case["hinge"],
        case["pipelined"],
        bandit=(delta, us),
    )
    np.testing.assert_allclose(traj.decisions, played + delta * us, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(traj.diagnostics["oracle_calls"])[:-1], calls[:-1])
    np.testing.assert_allclose(np.asarray(traj.diagnostics["dual"])[K_SMALL - 1 :: K_SMALL, 0], duals, atol=1e-10)


def test_lpm_without_constraints_is_loo_bogd():
    problem = CustomProblem(
        domain=Box(-1.0, 1.0, dim=D3),
        loss=lambda c, x: jnp.dot(c, x) + 0.25 * jnp.sum(x**2),
        data=jnp.asarray(C),
    )
    kw = dict(eta=0.15, eps=0.01, block_size=K_SMALL)
    a = ocokit.run(LPM(**kw, mu=0.5, dual_reg=1.0), problem, T_SMALL, record_decisions=True)
    b = ocokit.run(LOOBOGD(**kw, pipelined=False), problem, T_SMALL, record_decisions=True)
    np.testing.assert_allclose(a.decisions, b.decisions, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# Theory parameters, feasibility on other sets, labels and validation.


def test_from_theory_follows_theorems_9_and_11():
    info = ProblemInfo.of(tiny_problem(ProblemConstants(2.0, 3.0, 4.0, 5.0)), 10_000)
    lrn = LOOBOGD.from_theory(info, radius=2.0)
    assert np.isclose(lrn.chain.eta, 2.0 / 2.0 * 10_000**-0.75)
    assert np.isclose(lrn.eps, 60 * 4 / 100) and int(lrn.chain.block_size) == 500 and lrn.chain.pipelined
    bb = LOOBBGD.from_theory(info, radius=2.0, c=0.5)
    assert np.isclose(bb.chain.eta, 2.0 / math.sqrt(9.0) * 10_000**-0.75)
    assert np.isclose(bb.delta, 0.05) and int(bb.chain.block_size) == min(10_000, 6 * 9 * 100)
    assert LOOBBGD.from_theory(info).delta == pytest.approx(0.5)  # capped at r / 2
    lpm = LPM.from_theory(info, radius=2.0)
    assert np.isclose(lpm.dual.mu, lpm.chain.eta) and np.isclose(lpm.dual.dual_reg, 4 * 5.0**2)
    q = LPM.from_theory(info, radius=2.0, dual_rule="dpp_queue")
    assert np.isclose(q.dual.V, 1 / lpm.chain.eta) and np.isclose(q.chain.eta, lpm.chain.eta**2)
    with pytest.raises(ValueError, match="grad_bound"):
        LOOBOGD.from_theory(ProblemInfo.of(tiny_problem(), 100))


def test_theorem_9_constants_freeze_the_centre_below_t_32400_and_decisions_stay_in_k():
    K, c = L2Ball(4, radius=2.0), jnp.array([1.0, -1.0, 0.5, 0.0])
    problem = CustomProblem(
        domain=K,
        loss=lambda d, x: jnp.dot(d, x),
        sampler=lambda key, t: c * jax.random.uniform(key, (), minval=0.5, maxval=1.0),
        constants=ProblemConstants(grad_bound=1.5),
    )
    T = 12_000
    info = ProblemInfo.of(problem, T)
    # Theorem 9: 3 eps = 180 R^2 / sqrt(T) >= R^2 while T <= 180^2, so every point of R B is "close" to the
    # centre and Algorithm 3 returns its start: LOO-BOGD plays x_0 throughout (one LOO call per projection).
    traj = ocokit.run(LOOBOGD.from_theory(info, radius=2.0), problem, T, record_decisions=True)
    assert 0 < int(traj.diagnostics["oracle_calls"].sum()) <= T
    np.testing.assert_array_equal(traj.decisions, 0.0)
    # with eps = R^2 / sqrt(T) it moves to the minimiser lmo(c) and stays in K
    traj = ocokit.run(LOOBOGD.from_theory(info, radius=2.0, eps_constant=1.0), problem, T, record_decisions=True)
    assert bool(jnp.all(jax.vmap(lambda x: K.contains(x, atol=1e-9))(traj.decisions)))
    assert float(jnp.dot(c, traj.decisions[-1])) < -0.9 * float(jnp.linalg.norm(c)) * 2.0


@pytest.mark.slow
def test_theorem_9_regret_bound_for_a_fixed_linear_loss_over_a_simplex():
    K, c = Simplex(3), jnp.array([0.3, -0.5, 0.1])
    problem = CustomProblem(
        domain=K, loss=lambda d, x: jnp.dot(d, x), data=c[None], constants=ProblemConstants(grad_bound=0.6)
    )
    T = 120_000  # the bound 20 G R (T^{1/2} + T^{3/4}) is below the trivial G D T only from T ~ 6e4
    traj = ocokit.run(LOOBOGD.from_theory(ProblemInfo.of(problem, T), radius=1.0), problem, T)
    regret = float(traj.loss.sum()) - T * float(c.min())
    assert regret <= 20 * 0.6 * 1.0 * (T**0.5 + T**0.75) < 0.6 * math.sqrt(2) * T
    assert int(traj.diagnostics["oracle_calls"].sum()) <= T


def test_reconstructions_are_labelled():
    for cls in (LPM, LBPM):
        assert cls.reconstructed is True
        assert "reconstructed" in cls.__doc__.splitlines()[0].lower()
        assert "not** checked" in cls.__doc__
    for cls in (LOOBOGD, LOOBBGD):
        assert not getattr(cls, "reconstructed", False)


@pytest.mark.parametrize(
    ("cls", "kwargs", "name"),
    [
        (LOOBOGD, dict(eta=-1.0, eps=0.1, block_size=2), "eta"),
        (LOOBOGD, dict(eta=1.0, eps=0.0, block_size=2), "eps"),
        (LOOBOGD, dict(eta=1.0, eps=0.1, block_size=0), "block_size"),
        (LOOBOGD, dict(eta=1.0, eps=0.1, block_size=2.5), "block_size"),
        (LOOBOGD, dict(eta=1.0, eps=0.1, block_size=2, radius=-1.0), "radius"),
        (LOOBOGD, dict(eta=1.0, eps=0.1, block_size=2, max_fw_iter=0), "max_fw_iter"),
        (LOOBBGD, dict(eta=1.0, delta=0.0, block_size=2), "delta"),
        (LOOBBGD, dict(eta=1.0, delta=0.1, block_size=2, eps=-1.0), "eps"),
        (LPM, dict(eta=1.0, eps=0.1, block_size=2, mu=0.0), "mu"),
        (LPM, dict(eta=1.0, eps=0.1, block_size=2, dual_reg=-1.0), "dual_reg"),
        (LPM, dict(eta=1.0, eps=0.1, block_size=2, dual_rule="queue"), "dual_rule"),
        (LBPM, dict(eta=1.0, delta=0.1, block_size=2, V=0.0), "V"),
    ],
)
def test_bad_hyperparameters_raise(cls, kwargs, name):
    with pytest.raises(ValueError, match=name):
        cls(**kwargs)


def test_from_theory_rejects_bad_constants():
    info = ProblemInfo.of(tiny_problem(), 100)
    with pytest.raises(ValueError, match="dual_rule"):
        LPM.from_theory(info, dual_rule="nope")
    info = ProblemInfo(Box(-1.0, 1.0, dim=3), 1, 100, ProblemConstants(1.0, 1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="eps_constant"):
        LOOBOGD.from_theory(info, eps_constant=0.0)


# --------------------------------------------------------------------------------------------------
# Fitted growth exponents (published for LPM: regret ~T^{3/4}, CCV ~T^{7/8}).


class BallProblem(AbstractProblem):
    """``f_t(x) = <z_t, x>`` over the unit ball, ``g_t(x) = s_t (<a, x> - b)``, ``s_t ~ U(0.5, 1.5)`` i.i.d.

    ``z_t = zbar + noise w_t`` (w_t uniform on the sphere). The constraint is stochastic and binds at the
    comparator ``x* = argmin <zbar, x>`` s.t. ``<a, x> <= b`` (CVXPY; feasible for every round since
    ``s_t > 0``); the centre 0 violates it (``b < 0``).
    """

    domain: L2Ball
    zbar: jax.Array
    a: jax.Array
    x_star: jax.Array
    b: float = eqx.field(static=True)
    noise: float = eqx.field(static=True)
    consts: tuple = eqx.field(static=True)

    def __init__(self, zbar=(-0.3, -1.0, 0.0), a=(1.0, 0.0, 0.0), b=-0.3, noise=0.3):
        zbar, a = np.asarray(zbar, float), np.asarray(a, float)
        self.domain = L2Ball(len(zbar), radius=1.0)
        self.zbar, self.a, self.b, self.noise = jnp.asarray(zbar), jnp.asarray(a), float(b), float(noise)
        x = cp.Variable(len(zbar))
        cp.Problem(cp.Minimize(zbar @ x), [cp.norm(x) <= 1, a @ x <= b]).solve(solver="CLARABEL")
        self.x_star = jnp.asarray(x.value)
        G = float(np.linalg.norm(zbar)) + noise
        self.consts = (G, G, 1.5 * (float(np.linalg.norm(a)) + abs(b)), 1.5 * float(np.linalg.norm(a)))

    @property
    def num_constraints(self):
        return 1

    def round_data(self, episode, key, t):
        k1, k2 = jax.random.split(key)
        w = sample_unit_sphere(k1, self.zbar.shape, self.zbar.dtype)
        return {"z": self.zbar + self.noise * w, "s": jax.random.uniform(k2, (), minval=0.5, maxval=1.5)}

    def loss(self, data, x):
        return jnp.dot(data["z"], x)

    def constraints(self, data, x):
        return data["s"] * jnp.array([jnp.dot(self.a, x) - self.b])

    def best_fixed(self, episode, env_key, T):
        return self.x_star

    def constants(self):
        G, M, B, Gg = self.consts
        return ProblemConstants(grad_bound=G, loss_bound=M, constraint_bound=B, constraint_grad_bound=Gg)


def fitted_exponents(make, problem, horizons=(250, 500, 1000, 2000, 4000), seeds=8):
    """Regret and CCV exponents over ``horizons``: one sweep of the grid of theory learners x seeds.

    The learner tuned for horizon T plays the first T rounds of a ``max(horizons)``-round run; the comparator
    is fixed, so its regret and CCV at T are the prefix sums. Returns ``{metric: (slope, se, finals)}``.
    """
    grid = ocokit.stack([make(ProblemInfo.of(problem, T)) for T in horizons])
    traj = ocokit.sweep(grid, problem, max(horizons), seeds, batched_learner=True)
    out = {}
    for name, series in (("regret", metrics.static_regret(traj)), ("ccv", metrics.hard_violation(traj))):
        finals = np.array([series[i, :, T - 1].mean() for i, T in enumerate(horizons)])
        out[name] = (*metrics.growth_exponent(horizons, finals), finals)
    return out


def test_lpm_fitted_exponents_match_the_published_rates():
    # Theorem 9's constants (eta: 1, eps: 60 R^2, K_b: 5 sqrt(T)) keep 3 eps above the reach of y for T < 5e3
    # (see the budget test), so the played point never leaves the centre at these T (regret and CCV ~T^1.0).
    # We keep every exponent in T and use eta: 4 R/G, eps: 0.5 R^2, K_b: sqrt(T), with R = 1 the ball's
    # radius, so the T^{3/4} transit to x* ends inside the smallest horizon. Measured (8 seeds): regret
    # ~T^0.77 (se 0.11), CCV ~T^0.69 (se 0.04).
    fits = fitted_exponents(
        lambda info: LPM.from_theory(info, radius=1.0, eta_constant=4.0, eps_constant=0.5, block_constant=1.0),
        BallProblem(),
    )
    slope, se, finals = fits["regret"]
    assert abs(slope - 0.75) <= 0.15, (slope, se, finals)
    slope, se, finals = fits["ccv"]
    assert 0.5 <= slope <= 0.875 + 0.1, (slope, se, finals)

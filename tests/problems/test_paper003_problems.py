"""Paper 003 problems (spec paper003.md §6): data distributions, and comparators against CVXPY."""

from __future__ import annotations

import math

import cvxpy as cp
import equinox as eqx
import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

from ocokit.algorithms import ProblemInfo
from ocokit.engine import split_key
from ocokit.problems import JobScheduling, OnlineLinearProgram, OnlineQuadraticProgram, TimeVaryingRegression
from ocokit.problems._base import all_rounds
from ocokit.problems._qp import solve_qp

from ..helpers import binary_fractions

TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def env(seed=0):
    return split_key(jax.random.PRNGKey(seed))[0]


def stacked(problem, T, seed=0):
    """The episode and every round's data, as the engine generates them for ``seed``."""
    key = env(seed)
    episode, data = _episode_and_rounds(problem, key, T)
    return episode, jax.tree.map(np.asarray, data)


@eqx.filter_jit
def _episode_and_rounds(problem, key, T):
    episode = problem.episode(key, T)
    return episode, all_rounds(problem, episode, key, T)


def round_of(data, t):
    return jax.tree.map(lambda a: jnp.asarray(a[t]), data)


# --------------------------------------------------------------------------------------------------
# The small QP solver behind the comparators


@settings(max_examples=15, deadline=None)
@given(
    hnp.arrays(np.float64, (3, 3), elements=binary_fractions(-16, 16)),
    hnp.arrays(np.float64, (3,), elements=binary_fractions(-40, 40)),
    hnp.arrays(np.float64, (2, 3), elements=binary_fractions(-8, 8)),
    hnp.arrays(np.float64, (2,), elements=binary_fractions(1, 8)),
)
def test_solve_qp_matches_cvxpy(M, q, A, b):
    P = M @ M.T  # PSD, possibly singular
    lo, hi = -np.ones(3), 2 * np.ones(3)
    G = np.concatenate([A, np.eye(3), -np.eye(3)])
    h = np.concatenate([b, hi, -lo])
    x, iterations = _solve(P, q, G, h)
    z = cp.Variable(3)
    ref = cp.Problem(cp.Minimize(0.5 * cp.quad_form(z, cp.psd_wrap(P)) + q @ z), [G @ z <= h])
    ref.solve(solver="CLARABEL", **TIGHT)
    x = np.asarray(x)
    assert np.all(G @ x <= h + 1e-9)
    assert 0.5 * x @ P @ x + q @ x <= ref.value + 1e-7 * (1 + abs(ref.value))
    assert int(iterations) < 100


_solve = jax.jit(solve_qp)


# --------------------------------------------------------------------------------------------------
# TimeVaryingRegression (spec §6.1)


def test_regression_data_follow_the_spec():
    problem = TimeVaryingRegression()
    _, d = stacked(problem, 100)
    assert d["H"].shape == (100, 4, 10) and d["A"].shape == (100, 2, 10) and d["b"].shape == (100, 2)
    assert d["H"].min() >= -1 and d["H"].max() <= 1 and abs(d["H"].mean()) < 0.04
    assert d["A"].min() >= 0 and d["A"].max() <= 1 and d["b"].min() >= 0 and d["b"].max() <= 1
    noise = d["y"] - d["H"].sum(axis=2)  # y_t = H_t 1 + eps_t, eps ~ N(0, I), fresh every slot
    assert abs(noise.mean()) < 0.2 and abs(noise.std() - 1) < 0.15
    assert not np.allclose(d["A"][0], d["A"][1])  # constraints fresh every slot


def _regression_value(H, y, x):
    return 0.5 * np.sum((H @ x - y) ** 2)


def test_regression_round_optimum_matches_cvxpy():
    problem = TimeVaryingRegression()
    _, d = stacked(problem, 100)
    solve = eqx.filter_jit(lambda p, data: p.round_optimum(data))
    for t in range(4):
        x = np.asarray(solve(problem, round_of(d, t)))
        z = cp.Variable(10)
        ref = cp.Problem(
            cp.Minimize(0.5 * cp.sum_squares(d["H"][t] @ z - d["y"][t])),
            [d["A"][t] @ z <= d["b"][t], z >= 0, z <= 5],
        )
        ref.solve(solver="CLARABEL", **TIGHT)
        assert problem.domain.contains(x) and np.all(d["A"][t] @ x - d["b"][t] <= 1e-9)
        assert abs(_regression_value(d["H"][t], d["y"][t], x) - ref.value) <= 1e-6


def test_regression_best_fixed_matches_cvxpy_and_is_feasible_for_every_round():
    problem, T = TimeVaryingRegression(), 100
    episode, d = stacked(problem, T)
    x = np.asarray(eqx.filter_jit(lambda p, e, k: p.best_fixed(e, k, T))(problem, episode, env()))
    z = cp.Variable(10)
    objective = sum(0.5 * cp.sum_squares(d["H"][t] @ z - d["y"][t]) for t in range(T))
    cons = [d["A"][t] @ z <= d["b"][t] for t in range(T)] + [z >= 0, z <= 5]
    ref = cp.Problem(cp.Minimize(objective), cons)
    ref.solve(solver="CLARABEL", **TIGHT)
    assert np.all(np.einsum("tnp,p->tn", d["A"], x) - d["b"] <= 1e-9)
    value = sum(_regression_value(d["H"][t], d["y"][t], x) for t in range(T))
    assert abs(value - ref.value) <= 1e-6 * max(1.0, abs(ref.value))
    np.testing.assert_allclose(x, z.value, atol=1e-5)


# --------------------------------------------------------------------------------------------------
# OnlineQuadraticProgram / OnlineLinearProgram (spec §6.2-§6.3)


def test_theta_schedule_and_permutation_follow_the_spec():
    problem, T = OnlineQuadraticProgram(), 5000
    key = env(1)
    episode = problem.episode(key, T)
    ts = jnp.arange(1, T + 1)
    components = jax.jit(jax.vmap(lambda e, t: problem.theta_components(e, jax.random.fold_in(key, t), t), (None, 0)))
    t1, t2, t3 = (np.asarray(p) for p in components(episode, ts))
    t = np.arange(1, T + 1)
    assert np.all(np.abs(t1) <= (t**0.1)[:, None]) and np.all(np.abs(t1[-500:]) > 0.0)
    assert np.abs(t1[-1000:]).max() > 0.9 * 5000**0.1  # the range grows like t^(1/10)
    positive = ((t >= 1501) & (t <= 1999)) | ((t >= 3501) & (t <= 3999))
    assert np.all((t2[positive] >= 0) & (t2[positive] <= 1))
    assert np.all((t2[~positive] >= -1) & (t2[~positive] <= 0))
    assert np.all(np.abs(t3) == 1) and np.all(t3[:, 0] == t3[:, 1])
    assert int((t3[:, 0] > 0).sum()) == T // 2  # a permutation of 1..T: exactly half even
    mu = np.asarray(episode["mu"])
    assert sorted(mu.tolist()) == list(range(1, T + 1))
    other = problem.episode(env(2), T)["mu"]
    assert not np.array_equal(mu, np.asarray(other))  # drawn per episode


def test_fixed_constraints_follow_the_spec():
    problem = OnlineLinearProgram()
    episode, d = stacked(problem, 30, seed=4)
    A, b = np.asarray(episode["A"]), np.asarray(episode["b"])
    assert A.shape == (3, 2) and b.shape == (3,)
    assert A.min() >= 0.1 and A.max() <= 0.5 and b.min() >= 0 and b.max() <= 0.3
    np.testing.assert_array_equal(d["A"], np.broadcast_to(A, (30, 3, 2)))  # drawn once per episode
    np.testing.assert_array_equal(d["b"], np.broadcast_to(b, (30, 3)))
    assert problem.num_constraints == 3 and problem.domain.shape == (2,)
    x = jnp.array([0.3, 0.7])
    np.testing.assert_allclose(problem.constraints(round_of(d, 0), x), A @ np.asarray(x) - b)
    th = d["theta"][0]
    qp = OnlineQuadraticProgram()
    assert float(qp.loss(round_of(d, 0), x)) == pytest.approx(np.sum((x - th) ** 2) + 20 * th @ x)
    assert float(problem.loss(round_of(d, 0), x)) == pytest.approx(th @ x)


def _qp_value(th, z, quadratic):
    return (np.sum((z - th) ** 2) + 20 * th @ z) if quadratic else th @ z


@pytest.mark.parametrize("quadratic", [True, False], ids=["qp", "lp"])
def test_program_comparators_match_cvxpy(quadratic):
    problem = OnlineQuadraticProgram() if quadratic else OnlineLinearProgram()
    T = 30
    episode, d = stacked(problem, T, seed=4)
    A, b = np.asarray(episode["A"]), np.asarray(episode["b"])
    opt = eqx.filter_jit(lambda p, data: p.round_optimum(data))
    for t in range(3):
        th, z = d["theta"][t], cp.Variable(2)
        obj = cp.sum_squares(z - th) + 20 * th @ z if quadratic else th @ z
        ref = cp.Problem(cp.Minimize(obj), [A @ z <= b, z >= 0, z <= 1])
        ref.solve(solver="CLARABEL", **TIGHT)
        x = np.asarray(opt(problem, round_of(d, t)))
        assert np.all(A @ x - b <= 1e-9) and problem.domain.contains(x)
        assert abs(_qp_value(th, x, quadratic) - ref.value) <= 1e-6
    x = np.asarray(eqx.filter_jit(lambda p, e, k: p.best_fixed(e, k, T))(problem, episode, env(4)))
    z = cp.Variable(2)
    obj = (
        sum(cp.sum_squares(z - d["theta"][t]) + 20 * d["theta"][t] @ z for t in range(T))
        if quadratic
        else (d["theta"].sum(axis=0) @ z)
    )
    ref = cp.Problem(cp.Minimize(obj), [A @ z <= b, z >= 0, z <= 1])
    ref.solve(solver="CLARABEL", **TIGHT)
    value = sum(_qp_value(d["theta"][t], x, quadratic) for t in range(T))
    assert np.all(A @ x - b <= 1e-9)
    assert abs(value - ref.value) <= 1e-6 * max(1.0, abs(ref.value))


def test_best_fixed_is_vmap_safe():
    problem, T = OnlineQuadraticProgram(), 40
    keys = jnp.stack([env(s) for s in range(3)])

    def one(key):
        return problem.best_fixed(problem.episode(key, T), key, T)

    batched = np.asarray(jax.jit(jax.vmap(one))(keys))
    for i in range(3):
        np.testing.assert_allclose(batched[i], np.asarray(jax.jit(one)(keys[i])), atol=1e-10)


def test_constants_are_static_and_sane():
    qp = OnlineQuadraticProgram()
    c = jax.jit(lambda p: ProblemInfo.of(p, 10).constants.constraint_bound)(qp)
    assert float(c) == 1.0  # max |a^T x - b| over [0,1]^2 <= max(0.3, 2 * 0.5)
    assert qp.constants().grad_bound == pytest.approx(2 * 2**0.5 + 18 * 2**0.5 * (5000**0.1 + 2))
    r = TimeVaryingRegression().constants()
    assert r.constraint_bound == 50.0  # |A x - b| <= p * upper


# --------------------------------------------------------------------------------------------------
# JobScheduling (spec §6.4, baselines.md §7.3)


def test_job_scheduling_from_real_prices(data_dir):
    problem = JobScheduling.from_electricity_prices(data_dir, num_slots=48)
    assert problem.domain.shape == (100,) and problem.num_constraints == 1
    assert "hourly" in problem.price_source
    prices = np.asarray(problem.prices)
    assert prices.shape == (48, 10)
    np.testing.assert_array_equal(prices[:12], np.broadcast_to(prices[0], (12, 10)))  # an hour = 12 slots
    assert not np.array_equal(prices[11], prices[12])
    from ocokit.datasets import load_electricity_prices

    hourly = load_electricity_prices(path=data_dir)
    np.testing.assert_allclose(prices[0], hourly[2880])  # 2023-05-01 00:00 UTC
    _, d = stacked(problem, 24)
    np.testing.assert_allclose(d["c"][0], np.repeat(prices[0], 10))  # each centre takes its region's price


def test_job_scheduling_arrivals_and_capacity():
    problem = JobScheduling.synthetic(num_slots=288)
    assert "synthetic" in problem.price_source
    _, d = stacked(problem, 400)
    lam = d["lam"]
    assert np.all(lam == np.round(lam)) and abs(lam.mean() - 2500) < 3 * math.sqrt(2500 / 400)  # Poisson(2500)
    assert abs(lam.var() / 2500 - 1) < 0.3
    x = jnp.full(100, 1000.0)
    assert float(problem.capacity(x)) == pytest.approx(100 * 4 * math.log(4001))  # natural log
    assert float(problem.capacity(x)) > 2500 > 100 * 4 * math.log10(4001)
    g = problem.constraints(round_of(d, 0), jnp.zeros(100))
    assert float(g[0]) == pytest.approx(float(lam[0]))
    assert problem.log_capacity_constraint(round_of(d, 0))[1:] == (4.0, 4.0)


def test_job_scheduling_from_nyiso(tmp_path):
    lines = ["Time Stamp,Name,PTID,LBMP ($/MWHr),Marginal Cost Losses ($/MWHr),Marginal Cost Congestion ($/MWHr)"]
    for k in range(3):
        for z, zone in enumerate(("CAPITL", "N.Y.C.")):
            lines.append(f"05/01/2017 00:{5 * k:02d}:00,{zone},6175{z},{10.0 * k + z},0,0")
    path = tmp_path / "nyiso.csv"
    path.write_text("\n".join(lines) + "\n")
    problem = JobScheduling.from_nyiso(path, centres_per_region=2)
    assert problem.domain.shape == (4,) and "NYISO" in problem.price_source
    np.testing.assert_allclose(np.asarray(problem.prices), [[0, 1], [10, 11], [20, 21]])
    with pytest.raises(ValueError, match="prices"):
        JobScheduling(np.ones(5))


def test_job_scheduling_comparators_match_cvxpy():
    problem = JobScheduling.synthetic(num_slots=20, seed=1)
    episode, d = stacked(problem, 6)
    opt = eqx.filter_jit(lambda p, data: p.round_optimum(data))
    for t in range(2):
        x = np.asarray(opt(problem, round_of(d, t)))
        z = cp.Variable(100)
        ref = cp.Problem(cp.Minimize(d["c"][t] @ z), [4 * cp.sum(cp.log(1 + 4 * z)) >= d["lam"][t], z >= 0, z <= 1000])
        ref.solve(solver="CLARABEL")
        assert float(problem.constraints(round_of(d, t), jnp.asarray(x))[0]) <= 1e-9  # feasible side
        assert d["c"][t] @ x <= ref.value * (1 + 1e-6)
    x = np.asarray(eqx.filter_jit(lambda p, e, k: p.best_fixed(e, k, 6))(problem, episode, env()))
    z = cp.Variable(100)
    cons = [4 * cp.sum(cp.log(1 + 4 * z)) >= d["lam"][t] for t in range(6)] + [z >= 0, z <= 1000]
    ref = cp.Problem(cp.Minimize(d["c"].sum(axis=0) @ z), cons)
    ref.solve(solver="CLARABEL")
    assert np.all(d["lam"] - 4 * np.sum(np.log1p(4 * x)) <= 1e-9)
    assert d["c"].sum(axis=0) @ x <= ref.value * (1 + 1e-6)

"""The structured comparators: the active-set QP solver, and every suite problem's comparators against CVXPY.

Each problem of the bench suite that defines comparators (``round_optimum``, ``best_fixed``) is checked on a few
rounds and seeds: the value of its comparator equals CVXPY's (Clarabel, tight tolerances) to 1e-8 relative, and the
point is feasible.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import equinox as eqx
import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

from ocokit.bench import SUITE
from ocokit.engine import split_key
from ocokit.problems._active_set import solve_box_affine_qp
from ocokit.problems._base import all_rounds

from ..helpers import binary_fractions

TIGHT = (1e-12, 1e-10)  # Clarabel's gap and feasibility tolerances: the second where it calls the first inaccurate
REL = 1e-8
T = 24
SEEDS = (3,)
ROUNDS = (0, 7, 23)


def _close(value: float, ref: float) -> None:
    assert abs(value - ref) <= REL * max(1.0, abs(ref)), (value, ref)


def _solve(objective, constraints) -> float:
    problem = cp.Problem(cp.Minimize(objective), constraints)
    for tol in TIGHT:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Solution may be inaccurate": the status says it
            problem.solve(solver="CLARABEL", tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
        if problem.status == "optimal":
            return float(problem.value)
    raise AssertionError(f"CVXPY: {problem.status}")


# --------------------------------------------------------------------------------------------------
# The active-set solver


_active_set = jax.jit(solve_box_affine_qp)


@settings(max_examples=25, deadline=None)
@given(
    hnp.arrays(np.float64, (2, 5), elements=binary_fractions(-16, 16)),
    hnp.arrays(np.float64, (5,), elements=binary_fractions(-40, 40)),
    hnp.arrays(np.float64, (3, 5), elements=binary_fractions(-8, 8)),
    hnp.arrays(np.float64, (3,), elements=binary_fractions(1, 8)),
)
def test_active_set_matches_cvxpy_on_singular_qps(M, q, A, b):
    P = M.T @ M  # rank <= 2 in 5 variables: flat directions everywhere
    lower, upper = -np.ones(5), 2 * np.ones(5)
    sol = _active_set(P, q, A, b, lower, upper, np.zeros(5))
    x = np.asarray(sol.x)
    z = cp.Variable(5)
    ref = _solve(0.5 * cp.sum_squares(M @ z) + q @ z, [A @ z <= b, z >= lower, z <= upper])
    assert bool(sol.converged)  # solved by the active set, not by the general fallback
    assert np.all(A @ x <= b + 1e-9) and np.all((x >= lower) & (x <= upper))
    _close(0.5 * x @ P @ x + q @ x, ref)


def test_active_set_with_more_rows_than_variables_and_an_infeasible_start():
    rng = np.random.default_rng(0)
    M, q = rng.normal(size=(3, 6)), rng.normal(size=6) * 4
    A, b = rng.uniform(-1, 1, size=(40, 6)), rng.uniform(0.2, 1.0, size=40)  # 0 is feasible
    lower, upper = -np.ones(6), np.ones(6)
    z = cp.Variable(6)
    ref = _solve(0.5 * cp.sum_squares(M @ z) + q @ z, [A @ z <= b, z >= lower, z <= upper])
    for start, structured in ((np.zeros(6), True), (np.ones(6), False)):  # 1 breaks some rows: the fallback
        sol = _active_set(M.T @ M, q, A, b, lower, upper, start)
        x = np.asarray(sol.x)
        assert bool(sol.converged) is structured
        assert np.all(A @ x <= b + 1e-9)
        _close(0.5 * np.sum((M @ x) ** 2) + q @ x, ref)


def test_active_set_under_vmap_solves_each_problem():
    rng = np.random.default_rng(1)
    Ms, qs = rng.normal(size=(8, 2, 4)), rng.normal(size=(8, 4)) * 3
    A, b = rng.uniform(0, 1, size=(8, 2, 4)), rng.uniform(0, 1, size=(8, 2))
    lo, hi = np.zeros(4), np.full(4, 5.0)
    batched = jax.jit(jax.vmap(solve_box_affine_qp, in_axes=(0, 0, 0, 0, None, None, None)))
    sol = batched(np.einsum("sri,srj->sij", Ms, Ms), qs, A, b, lo, hi, np.zeros(4))
    for s in range(8):
        one = _active_set(Ms[s].T @ Ms[s], qs[s], A[s], b[s], lo, hi, np.zeros(4))
        np.testing.assert_allclose(sol.x[s], one.x, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# Every suite problem's comparators against CVXPY


def _stacked(problem, seed):
    key = split_key(jax.random.PRNGKey(seed))[0]
    episode, data = _episode_and_rounds(problem, key)
    return key, episode, jax.tree.map(np.asarray, data)


@eqx.filter_jit
def _episode_and_rounds(problem, key):
    episode = problem.episode(key, T)
    return episode, all_rounds(problem, episode, key, T)


@eqx.filter_jit
def _comparators(problem, episode, key, data):
    return problem.best_fixed(episode, key, T), jax.vmap(problem.round_optimum)(data)


def _reference(name, problem, episode, data, t):
    """CVXPY's optimal value of round t's problem (``t = None``: the best fixed point's, summed over rounds)."""
    rounds = range(T) if t is None else (t,)
    if name == "regression":
        z = cp.Variable(10)
        objective = sum(0.5 * cp.sum_squares(data["H"][s] @ z - data["y"][s]) for s in rounds)
        cons = [data["A"][s] @ z <= data["b"][s] for s in rounds]
        return _solve(objective, [*cons, z >= 0, z <= 5])
    if name in ("online-qp", "online-lp"):
        z, th = cp.Variable(2), data["theta"]
        quad = name == "online-qp"
        objective = sum((cp.sum_squares(z - th[s]) + 20 * th[s] @ z) if quad else th[s] @ z for s in rounds)
        return _solve(objective, [np.asarray(episode["A"]) @ z <= np.asarray(episode["b"]), z >= 0, z <= 1])
    if name == "job-scheduling":
        z = cp.Variable(data["c"].shape[1])
        a, r = problem.capacity_scale, problem.capacity_rate
        capacity = a * cp.sum(cp.log(1 + r * z))
        cons = [capacity >= data["lam"][s] for s in rounds]
        return _solve(sum(data["c"][s] @ z for s in rounds), [*cons, z >= 0, z <= problem.upper])
    if name == "gradual-variation":
        z = cp.Variable(problem.dim)
        cons = [
            cp.norm(z) <= problem.radius,
            np.asarray(problem.normal) @ z <= float(problem.level),
            cp.sum_squares(z - np.asarray(problem.center2)) <= float(problem.radius2) ** 2,
        ]
        return _solve(sum(0.5 * cp.sum_squares(z - data[s]) for s in rounds), cons)
    if name == "simplex-budget":
        z = cp.Variable(problem.dim)
        cons = [z >= 0, cp.sum(z) == 1, np.asarray(problem.price) @ z <= problem.budget]
        return _solve(sum(data[s] @ z for s in rounds), cons)
    if name in ("experts", "sc-set-linear"):
        z = cp.Variable(problem.domain.shape[0])
        cons = [z >= 0, cp.sum(z) == 1] if name == "experts" else [cp.norm(z) <= 1.0]
        return _solve(sum(data["theta"][s] @ z for s in rounds), cons)
    if name == "sc-set-quadratic":
        z = cp.Variable(problem.domain.shape[0])
        return _solve(sum(0.5 * problem.lam * cp.sum_squares(z - data["z"][s]) for s in rounds), [cp.norm(z) <= 1])
    raise AssertionError(f"no reference for {name}")


def _memory_reference(problem, data):
    """CVXPY's value of the offline optimum (eq. 2) of a problem with memory: one QP over all T decisions."""
    h, d = problem.memory(), problem.dim
    lower, upper = problem.domain.box_bounds()
    xs = cp.Variable((T, d))
    past = np.asarray(problem.initial_history())
    total = 0
    for s in range(T):
        window = [past[s + k] if s + k < h - 1 else xs[s + k - (h - 1)] for k in range(h)]
        w = cp.hstack([cp.reshape(v, (d,), order="C") if isinstance(v, cp.Expression) else v for v in window])
        A = data["A"][s]
        total += 0.5 * cp.quad_form(w, cp.psd_wrap(0.5 * (A + A.T))) + data["B"][s] @ w
    return _solve(total, [xs >= np.asarray(lower), xs <= np.asarray(upper)])


SUITE_WITH_COMPARATORS = [p for p in SUITE if p.data is None and p.name != "matrix-completion"]


def test_every_suite_problem_with_comparators_is_covered():
    missing = []
    for entry in SUITE:
        if entry.data is not None or entry in SUITE_WITH_COMPARATORS:
            continue
        problem = entry.make(T, None)
        key = split_key(jax.random.PRNGKey(0))[0]
        episode = problem.episode(key, T)
        data = jax.tree.map(lambda a: a[0], all_rounds(problem, episode, key, 1))
        if problem.best_fixed(episode, key, T) is not None or problem.round_optimum(data) is not None:
            missing.append(entry.name)
    assert not missing


@pytest.mark.parametrize("entry", SUITE_WITH_COMPARATORS, ids=lambda e: e.name)
@pytest.mark.parametrize("seed", SEEDS)
def test_suite_comparators_match_cvxpy(entry, seed):
    problem = entry.make(T, None)
    key, episode, data = _stacked(problem, seed)
    best, optima = _comparators(problem, episode, key, jax.tree.map(jnp.asarray, data))
    loss = jax.jit(jax.vmap(problem.loss, in_axes=(0, None)))
    if entry.name == "memory-predictions":  # the per-round optimum is the window of the offline optimum
        x_star = jnp.asarray(episode["x_star"])
        _close(float(problem.total_cost(jnp.asarray(data["A"]), jnp.asarray(data["B"]), x_star)),
               _memory_reference(problem, data))  # fmt: skip
        assert best is None
        return
    assert best is not None or optima is not None
    stacked = jax.tree.map(jnp.asarray, data)
    if best is not None:
        _close(float(jnp.sum(loss(stacked, best))), _reference(entry.name, problem, episode, data, None))
        every_round = jax.vmap(problem.constraints, in_axes=(0, None))(stacked, best)
        assert np.all(np.asarray(every_round) <= 1e-9)
    if optima is not None:
        for t in ROUNDS:
            round_t = jax.tree.map(lambda a, t=t: a[t], stacked)
            x = jax.tree.map(lambda a, t=t: a[t], optima)
            _close(float(problem.loss(round_t, x)), _reference(entry.name, problem, episode, data, t))
            assert np.all(np.asarray(problem.constraints(round_t, x)) <= 1e-9)

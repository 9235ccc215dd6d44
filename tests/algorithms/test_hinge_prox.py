"""The hinge-penalised proximal step (COLDQ's P_t) against CVXPY/Clarabel, fast path, structures, errors."""

import warnings
from typing import ClassVar

import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms._dual_newton import UNROLL
from ocokit.algorithms._hinge_prox import (
    SOLVERS,
    AffineSolver,
    DeclaredSolver,
    LogCapacitySolver,
    SmoothSolver,
    as_solver,
    hinge_prox_step,
    solve_affine,
    solve_log_capacity,
    solve_smooth,
)
from ocokit.feedback import FullInformation
from ocokit.problems import AbstractProblem
from ocokit.sets import Box, L2Ball

from ..helpers import BoxLike

TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10}
LOOSER = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "tol_ktratio": 1e-8}


def _clarabel(c, alpha, z, hinge_terms, constraints):
    """``argmin <c, x - z> + alpha ||x - z||^2 + hinge_terms(x)`` s.t. ``constraints(x)``, by Clarabel."""
    for settings_ in (TIGHT, LOOSER, {}):  # Clarabel may call very tight tolerances inaccurate
        x = cp.Variable(len(z))
        obj = c @ (x - z) + alpha * cp.sum_squares(x - z) + hinge_terms(x)
        problem = cp.Problem(cp.Minimize(obj), constraints(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate": the status decides
            problem.solve(solver="CLARABEL", **settings_)
        if problem.status == "optimal":
            return x.value
    raise AssertionError(f"Clarabel did not solve the reference problem: {problem.status}")


def _affine_instance(rng, p=10, N=2):
    z = rng.uniform(0, 5, p)
    c = rng.normal(size=p) * rng.choice([0.1, 1.0, 10.0, 100.0])
    alpha = float(rng.choice([0.5, 1.0, 10.0, 30.0]))
    w = rng.choice([0.5, 5.0, 2500.0]) * rng.uniform(0.5, 1.0, N)
    A, b = rng.uniform(0, 1, (N, p)), rng.uniform(0, 1, N)
    return c, alpha, z, w, A, b


_affine_box = jax.jit(lambda c, a, z, w, A, b: solve_affine(c, a, z, w, A, b, Box(0.0, 5.0, dim=10)))


@pytest.mark.parametrize("N", [2, UNROLL + 3])  # sums written out term by term, and as products
def test_affine_over_a_box_matches_clarabel(N):
    rng = np.random.default_rng(0)
    for _ in range(25):
        c, alpha, z, w, A, b = _affine_instance(rng, N=N)
        sol = _affine_box(c, alpha, z, w, A, b)
        ref = _clarabel(c, alpha, z, lambda x: w @ cp.pos(A @ x - b), lambda x: [x >= 0, x <= 5])  # noqa: B023
        assert bool(sol.converged)
        np.testing.assert_allclose(np.asarray(sol.x), ref, atol=1e-6)
        assert np.all((0 <= np.asarray(sol.x)) & (np.asarray(sol.x) <= 5))


def test_a_multiplier_stepping_onto_zero_lands_exactly_there():
    # A round of the online QP (spec §6.2) whose exact dual step drives lam_1 to its lower bound: without
    # snapping, rounding left lam_1 ~ 1e-302 > 0 "free" with no room to move, and Newton stalled until
    # max_iter at an infeasible x (seen with XLA's CPU backend at optimisation level 0).
    rng = np.random.default_rng(0)
    A, b = rng.uniform(0.1, 0.5, (3, 2)), rng.uniform(0.0, 0.3, 3)
    z, c, alpha, w = (
        np.array([0.3834573079988852, 0.0]),
        np.array([-52.83654048860501, -52.91958948928929]),
        107**0.5,
        np.full(3, 500.0),
    )
    box = Box(0.0, 1.0, dim=2)
    sol = jax.jit(lambda c, alpha, z, w: solve_affine(c, alpha, z, w, jnp.asarray(A), jnp.asarray(b), box))(
        c, alpha, z, w
    )
    ref = _clarabel(c, alpha, z, lambda x: w @ cp.pos(A @ x - b), lambda x: [x >= 0, x <= 1])
    assert bool(sol.converged) and int(sol.iterations) < 10
    np.testing.assert_allclose(np.asarray(sol.x), ref, atol=1e-6)
    assert np.all(np.asarray(sol.multipliers)[:2] == 0.0)


def test_affine_over_an_l2_ball_is_optimal_against_clarabel():
    # Clarabel's SOC answers are only ~1e-9 optimal in objective, i.e. ~1e-5 in x, so compare objectives:
    # by 2 alpha-strong convexity, F(ours) <= F(ref) + s implies alpha ||ours - x*||^2 <= F(ref) - F* + s.
    rng = np.random.default_rng(1)
    ball = L2Ball(6, radius=2.0)
    solve = jax.jit(lambda c, a, z, w, A, b: solve_affine(c, a, z, w, A, b, ball))
    for _ in range(10):
        z = np.asarray(ball.project(jnp.asarray(rng.normal(size=6))))
        c, alpha = rng.normal(size=6) * 5, float(rng.choice([0.5, 2.0]))
        A, b, w = rng.normal(size=(3, 6)), rng.uniform(-0.5, 0.5, 3), rng.uniform(1, 50, 3)
        sol = solve(c, alpha, z, w, A, b)
        ref = _clarabel(c, alpha, z, lambda x: w @ cp.pos(A @ x - b), lambda x: [cp.sum_squares(x) <= 4])  # noqa: B023

        def objective(x, c=c, alpha=alpha, z=z, w=w, A=A, b=b):
            return c @ (x - z) + alpha * np.sum((x - z) ** 2) + w @ np.maximum(A @ x - b, 0)

        x = np.asarray(sol.x)
        assert bool(sol.converged) and np.linalg.norm(x) <= 2 + 1e-12
        assert objective(x) <= objective(ref) + 1e-12 * (1 + abs(objective(ref)))
        np.testing.assert_allclose(x, ref, atol=1e-4)


def test_fast_path_returns_the_projected_gradient_step_without_newton_steps():
    rng = np.random.default_rng(2)
    for _ in range(10):
        c, alpha, z, w, _, _ = _affine_instance(rng)
        step = np.clip(z - c / (2 * alpha), 0, 5)
        A = rng.uniform(0, 1, (2, 10))
        b = A @ step + rng.uniform(0.0, 1.0, 2)  # the projected step is feasible for g
        sol = _affine_box(c, alpha, z, w, A, b)
        assert int(sol.iterations) == 0
        np.testing.assert_allclose(np.asarray(sol.x), step, atol=1e-14)
        np.testing.assert_array_equal(np.asarray(sol.multipliers), 0.0)


def test_zero_weights_and_no_constraints_give_the_projected_gradient_step():
    rng = np.random.default_rng(3)
    c, alpha, z, _, A, b = _affine_instance(rng)
    b = b - 100.0  # every hinge active at the unconstrained step, but weightless
    sol = _affine_box(c, alpha, z, np.zeros(2), A, b)
    np.testing.assert_allclose(np.asarray(sol.x), np.clip(z - c / (2 * alpha), 0, 5), atol=1e-14)
    none = solve_affine(c, alpha, z, np.zeros(0), np.zeros((0, 10)), np.zeros(0), Box(0.0, 5.0, dim=10))
    np.testing.assert_allclose(np.asarray(none.x), np.clip(z - c / (2 * alpha), 0, 5))


def _jobs_instance(rng, p=100):
    z = rng.uniform(0, 1, p) * rng.choice([1.0, 10.0, 100.0])
    c = rng.uniform(10, 60, p)
    alpha = float(rng.choice([1.0, 10.0, 30.0]))
    w = np.array([rng.choice([1.0, 100.0, 1440.0, 1e5])])
    return c, alpha, z, w, float(rng.poisson(2500))


_JOBS_BOX = Box(0.0, 1000.0, dim=100)
_log_capacity = jax.jit(lambda c, a, z, w, d: solve_log_capacity(c, a, z, w, d, 4.0, 4.0, _JOBS_BOX))
_jobs_smooth = jax.jit(
    lambda c, a, z, w, d: solve_smooth(c, a, z, w, lambda x: jnp.array([d - jnp.sum(4 * jnp.log1p(4 * x))]), _JOBS_BOX)
)


def test_job_scheduling_constraint_matches_clarabel_and_the_generic_solver():
    rng = np.random.default_rng(4)
    for _ in range(6):
        c, alpha, z, w, d = _jobs_instance(rng)
        sol = _log_capacity(c, alpha, z, w, d)
        generic = _jobs_smooth(c, alpha, z, w, d)
        ref = _clarabel(
            c,
            alpha,
            z,
            lambda x, w=w, d=d: w[0] * cp.pos(d - cp.sum(4 * cp.log(1 + 4 * x))),
            lambda x: [x >= 0, x <= 1000],
        )
        assert bool(sol.converged) and bool(generic.converged)
        np.testing.assert_allclose(np.asarray(sol.x), ref, atol=1e-6)
        np.testing.assert_allclose(np.asarray(generic.x), np.asarray(sol.x), atol=1e-8)


def test_job_scheduling_step_meets_the_capacity_when_the_queue_is_large():
    rng = np.random.default_rng(5)
    c, alpha, z, _, d = _jobs_instance(rng)
    sol = _log_capacity(c, alpha, z, np.array([1e6]), d)
    g = d - np.sum(4 * np.log1p(4 * np.asarray(sol.x)))
    assert 0 < float(sol.multipliers[0]) < 1e6
    assert abs(g) <= 1e-9 * d  # the exact penalty puts x on the capacity boundary


def test_smooth_solver_is_optimal_against_clarabel_on_quadratic_constraints():
    # Clarabel treats the quadratic hinge as a second-order cone: compare objectives as for the l2 ball.
    rng = np.random.default_rng(6)
    for _ in range(6):
        z, c = rng.uniform(-1, 1, 5), rng.normal(size=5) * rng.choice([0.1, 1.0, 10.0])
        alpha, w = float(rng.choice([0.5, 1.0, 10.0])), rng.choice([0.5, 5.0, 500.0], size=2)
        ctr, rad, a, b0 = (
            rng.uniform(-0.5, 0.5, 5),
            rng.uniform(0.3, 1.0),
            rng.normal(size=5),
            rng.uniform(-0.2, 0.5),
        )
        sol = _quadratic_smooth(c, alpha, z, w, ctr, rad, a, b0)
        ref = _clarabel(
            c,
            alpha,
            z,
            lambda x: w[0] * cp.pos(cp.sum_squares(x - ctr) - rad**2) + w[1] * cp.pos(a @ x - b0),  # noqa: B023
            lambda x: [x >= -1, x <= 1],
        )

        def objective(x, c=c, alpha=alpha, z=z, w=w, ctr=ctr, rad=rad, a=a, b0=b0):
            g = np.array([np.sum((x - ctr) ** 2) - rad**2, a @ x - b0])
            return c @ (x - z) + alpha * np.sum((x - z) ** 2) + w @ np.maximum(g, 0)

        x = np.asarray(sol.x)
        assert bool(sol.converged) and np.all(np.abs(x) <= 1)
        assert objective(x) <= objective(ref) + 1e-12 * (1 + abs(objective(ref)))
        np.testing.assert_allclose(x, ref, atol=1e-4)


@jax.jit
def _quadratic_smooth(c, alpha, z, w, ctr, rad, a, b0):
    def g(x):
        return jnp.array([jnp.sum((x - ctr) ** 2) - rad**2, a @ x - b0])

    return solve_smooth(c, alpha, z, w, g, Box(-1.0, 1.0, dim=5))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), log_w=st.floats(-2.0, 4.0), log_alpha=st.floats(-1.0, 1.5))
def test_affine_solution_beats_every_sampled_point_of_the_box(seed, log_w, log_alpha):
    rng = np.random.default_rng(seed)
    c, _, z, _, A, b = _affine_instance(rng)
    alpha, w = 10.0**log_alpha, 10.0**log_w * rng.uniform(0.5, 1.0, 2)
    sol = _affine_box(c, alpha, z, w, A, b)

    def objective(x):
        return (x - z) @ c + alpha * np.sum((x - z) ** 2, axis=-1) + np.maximum(x @ A.T - b, 0) @ w

    x = np.asarray(sol.x)
    candidates = np.clip(x + rng.normal(size=(200, 10)) * rng.choice([1e-3, 1e-1, 1.0], size=(200, 1)), 0, 5)
    assert np.all(objective(candidates) >= objective(x) - 1e-9 * (1 + abs(objective(x))))
    assert bool(sol.converged)


class _DeclaredAffine(AbstractProblem):
    """Linear constraints with their structure declared through ``affine_constraints``."""

    domain: Box

    @property
    def num_constraints(self) -> int:
        return 2

    def round_data(self, episode, key, t):
        ka, kb = jax.random.split(key)
        return {"A": jax.random.uniform(ka, (2, 4)), "b": jax.random.uniform(kb, (2,))}

    def loss(self, data, x):
        return jnp.sum((x - 1.0) ** 2)

    def constraints(self, data, x):
        return data["A"] @ x - data["b"]

    constraint_structure: ClassVar[str] = "affine"

    def affine_constraints(self, data):
        return data["A"], data["b"]


def test_auto_dispatch_uses_declared_structure_and_agrees_with_the_jacobian_reading():
    problem = _DeclaredAffine(Box(0.0, 5.0, dim=4))
    data = problem.round_data(None, jax.random.PRNGKey(0), 1)
    assert DeclaredSolver().resolve(problem.constraint_structure, problem.domain) == AffineSolver()
    undeclared = ocokit.problems.CustomProblem(
        domain=Box(0.0, 5.0, dim=4),
        loss=lambda d, x: jnp.sum(x**2),
        constraints=lambda d, x: d["A"] @ x - d["b"],
        data=jax.tree.map(lambda a: a[None], data),
        constraint_structure="general",
    )
    assert DeclaredSolver().resolve(undeclared.constraint_structure, undeclared.domain) == SmoothSolver()
    args = (jnp.full(4, -3.0), 1.0, jnp.full(4, 2.0), jnp.array([50.0, 50.0]))
    step = eqx.filter_jit(hinge_prox_step)
    declared = step(FullInformation(problem, data), problem.domain, *args, solver=DeclaredSolver()).x
    # A, b read off the Jacobian of g
    by_jacobian = step(FullInformation(undeclared, data), undeclared.domain, *args, solver=AffineSolver()).x
    np.testing.assert_allclose(declared, by_jacobian, atol=1e-14)
    assert not np.allclose(declared, np.clip(2.0 + 3.0 / 2.0, 0, 5))  # the hinges are active


def test_solver_names_map_to_one_type_per_kind():
    assert {name: type(as_solver(name)) for name in SOLVERS} == {
        "auto": DeclaredSolver,
        "affine": AffineSolver,
        "log_capacity": LogCapacitySolver,
        "smooth": SmoothSolver,
    }
    assert as_solver(SmoothSolver()) == SmoothSolver()
    by_name, by_type = (ocokit.algorithms.COLDQ(0.1, 1.0, solver=s).prox.solver for s in ("smooth", SmoothSolver()))
    assert by_name == by_type == SmoothSolver()


def test_solver_choice_errors_are_clear():
    regression = ocokit.problems.TimeVaryingRegression()
    with pytest.raises(ValueError, match="solver must be one of"):
        as_solver("cvxpy")
    with pytest.raises(ValueError, match="log_capacity_constraint"):
        LogCapacitySolver().resolve(regression.constraint_structure, regression.domain)
    ball = eqx.tree_at(lambda p: p.domain, _DeclaredAffine(Box(0.0, 1.0, dim=4)), L2Ball(4))
    with pytest.raises(ValueError, match="needs a box domain"):
        SmoothSolver().resolve(ball.constraint_structure, ball.domain)
    assert DeclaredSolver().resolve(ball.constraint_structure, ball.domain) == AffineSolver()
    with pytest.raises(ValueError, match="needs a box domain"):
        solve_smooth(jnp.zeros(4), 1.0, jnp.zeros(4), jnp.ones(1), lambda x: x[:1], L2Ball(4))
    with pytest.raises(ValueError, match="needs a box domain"):
        solve_log_capacity(jnp.zeros(4), 1.0, jnp.zeros(4), jnp.ones(1), 1.0, 4.0, 4.0, L2Ball(4))


class _DeclaredBox(BoxLike):
    """A box that is not a :class:`Box`: a set of another class declaring ``box_bounds()`` (delegates to one)."""

    def box_bounds(self):
        return self.box.box_bounds()


def test_solvers_ask_the_set_for_its_box_not_its_class():
    # A set of another class that declares box_bounds() takes the box paths (clipping and the exact line search
    # of the affine solver, the smooth and log-capacity solvers) and gives the Box's numbers bit for bit.
    box = Box(jnp.array([0.0, 0.0, 0.5, 0.0]), jnp.array([5.0, 2.0, 3.0, 1.0]))  # lower > -1/r for log_capacity
    declared = _DeclaredBox(box)
    problem = _DeclaredAffine(box)
    assert SmoothSolver().resolve(problem.constraint_structure, declared) == SmoothSolver()
    rng = np.random.default_rng(11)
    c, z = jnp.asarray(rng.normal(size=4) * 10), jnp.asarray(rng.uniform(0, 1, 4))
    A, b, w = jnp.asarray(rng.uniform(0, 1, (2, 4))), jnp.asarray(rng.uniform(0, 0.5, 2)), jnp.array([50.0, 80.0])

    def g(x):
        return jnp.array([jnp.sum(x**2) - 0.5, jnp.sum(x) - 0.3])

    solves = {
        "affine": lambda K: solve_affine(c, 0.7, z, w, A, b, K),
        "smooth": lambda K: solve_smooth(c, 0.7, z, w, g, K),
        "log_capacity": lambda K: solve_log_capacity(c, 0.7, z, w[:1], 20.0, 4.0, 4.0, K),
    }
    for name, solve in solves.items():
        on_box, on_declared = solve(box), solve(declared)
        assert int(on_box.iterations) > 0, name  # the hinges are active: Newton steps on the dual
        for a, d in zip(jax.tree.leaves(on_box), jax.tree.leaves(on_declared), strict=True):
            np.testing.assert_array_equal(a, d, err_msg=name)


@pytest.mark.parametrize(("p", "N"), [(2, 3), (10, 2), (3, 1)])
def test_affine_solver_converges_on_a_batch_of_hard_random_instances(p, N):
    # Mixed-sign rows, p < N (a singular dual Hessian), weights from 0.5 to 2500: every solve must meet
    # the tolerance and beat sampled points of the box.
    rng = np.random.default_rng(p * 10 + N)
    n, box = 300, Box(0.0, 1.0, dim=p)
    Z, C = rng.uniform(0, 1, (n, p)), rng.normal(size=(n, p)) * rng.choice([0.1, 1, 10, 100], size=(n, 1))
    al = rng.choice([0.3, 1.0, 7.0, 30.0], size=n)
    W = rng.choice([0.5, 5.0, 500.0, 2500.0], size=(n, 1)) * rng.uniform(0.5, 1, (n, N))
    A = rng.uniform(0.0, 1.0, (n, N, p)) * rng.choice([1, -1], size=(n, N, p), p=[0.8, 0.2])
    B = rng.uniform(-0.2, 0.5, (n, N))
    sol = jax.jit(jax.vmap(lambda c, a, z, w, A, b: solve_affine(c, a, z, w, A, b, box)))(C, al, Z, W, A, B)
    assert bool(jnp.all(sol.converged)) and int(sol.iterations.max()) < 50
    X = np.asarray(sol.x)

    def objective(x, i):
        return (x - Z[i]) @ C[i] + al[i] * np.sum((x - Z[i]) ** 2, axis=-1) + np.maximum(x @ A[i].T - B[i], 0) @ W[i]

    for i in range(0, n, 10):
        candidates = np.clip(X[i] + rng.normal(size=(100, p)) * rng.choice([1e-4, 1e-2, 1.0], size=(100, 1)), 0, 1)
        assert np.all(objective(candidates, i) >= objective(X[i], i) - 1e-9 * (1 + abs(objective(X[i], i))))

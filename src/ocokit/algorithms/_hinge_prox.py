"""Exact solvers of the hinge-penalised proximal step of queue-based learners (COLDQ, RECOO, Yi 2021).

The per-round problem, for a centre ``z`` (COLDQ: ``x_{t-1}``), a gradient ``c`` taken there, a proximal
weight ``alpha > 0`` and hinge weights ``w_n >= 0`` (COLDQ: the queues ``Q_{t-1}^n``)::

    P:  min_{x in X}  <c, x - z> + alpha ||x - z||^2 + sum_n w_n [g_n(x)]_+        (g_n convex)

Method (ocokit's; paper 003 only says ``P_t`` is a convex program "solved in polynomial time" and uses CVXPY,
Section 4.4 and Appendix L): projected Newton on the dual over the multipliers ``lam in [0, w]``
(`maximise_dual`, which documents the method, the fast path and the
tolerance), with the minimiser ``x(lam)`` of the Lagrangian given by the structure of ``g``:

* ``affine`` (``g(x) = A x - b``; `solve_affine`): ``x(lam) = Pi_X(z - (c + A^T lam) / (2 alpha))``
  in closed form, for any X with an exact projection (Hessian through the projection's Jacobian).
* ``log_capacity`` (``g(x) = d - sum_i s_i ln(1 + r_i x_i)``, N = 1, X a box; `solve_log_capacity`;
  the job-scheduling constraint of paper 003, Section 6.3): the stationarity equation of each coordinate is a
  quadratic, solved in closed form (stable root) and clipped.
* ``smooth`` (any smooth convex ``g``, X a box; `solve_smooth`): ``x(lam)`` by projected Newton on
  the box with the exact Hessian of ``<lam, g>`` (``jax.hessian``), warm-started.

`hinge_prox_step` solves with a solver of one of these kinds, each a type (`AffineSolver`,
`LogCapacitySolver`, `SmoothSolver`, or `DeclaredSolver`, which picks one by the problem's
declared structure). COLDQ, COLDQ-Expert, RECOO and Yi et al. 2021 hold it through their part
`HingeProx`, which carries the options once (and maps the constructors'
``solver="auto"`` and the like to these types, `SOLVERS`).

References:
    J. Wang, B. Yan and Y. Liu. Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
    Dynamics of Both Loss and Constraint. AAAI 2025 (paper 003), Section 4.3 and Appendix (solver).
"""

import abc
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.algorithms._dual_newton import (
    ARMIJO,
    MAX_BACKTRACKS,
    DualPoint,
    HingeProxSolution,
    combine,
    machine_eps,
    masked_solve,
    maximise_dual,
)
from ocokit.sets import AbstractSet


def _objective(c, alpha, z, x):
    dx = x - z
    return jnp.dot(c, dx) + alpha * jnp.dot(dx, dx)


def _box_bounds(domain: AbstractSet, solver: str) -> tuple[Array, Array]:
    """``(lower, upper)`` of a box domain (its declared ``box_bounds()``); ``ValueError`` for any other set."""
    bounds = domain.box_bounds()
    if bounds is None:
        raise ValueError(
            f"solver={solver!r} needs a box domain (a set declaring box_bounds(), such as Box), got "
            f"{type(domain).__name__}; for affine constraints over other sets use solver='affine' (declare "
            "constraint_structure='affine' or make g affine)"
        )
    return bounds


def _unconstrained(c, alpha, z, domain, dtype) -> HingeProxSolution:
    x = domain.project(z - c / (2.0 * alpha))
    zero = jnp.asarray(0, jnp.int32)
    return HingeProxSolution(x, jnp.zeros((0,), dtype), zero, jnp.asarray(0.0, dtype), jnp.asarray(True))


def solve_affine(
    c: Float[Array, " p"],
    alpha: Any,
    z: Float[Array, " p"],
    weights: Float[Array, " N"],
    A: Float[Array, "N p"],
    b: Float[Array, " N"],
    domain: AbstractSet,
    *,
    tol: Any = 1e-11,
    max_iter: int = 50,
) -> HingeProxSolution:
    """``argmin_{x in X} <c, x - z> + alpha ||x - z||^2 + sum_n w_n [a_n^T x - b_n]_+``.

    ``x(lam) = Pi_X(z - (c + A^T lam) / (2 alpha))`` for any X with an exact projection. The dual Hessian
    is ``A J A^T / (2 alpha)`` with ``J`` the Jacobian of ``Pi_X`` at the unprojected point (N forward-mode
    products ``J a_n``): on a box (a set declaring ``box_bounds()``, [`Box`][ocokit.sets.Box]) ``J`` is the
    0/1 mask of unclipped coordinates and the Hessian is exact on each piece of the piecewise-quadratic dual,
    so projected Newton terminates, with an exact line search; on curved sets (balls) it is a semismooth
    Newton step.

    Args:
        c: the gradient at ``z``; alpha: proximal weight > 0; z: the centre; weights: ``w >= 0``;
        A, b: the affine constraint ``g(x) = A x - b``; domain: X (an exact ``project``).
        tol: relative dual KKT tolerance (see the module docstring); max_iter: cap on Newton steps.
    """
    dtype = jnp.result_type(c, z, A)
    if A.shape[0] == 0:
        return _unconstrained(c, alpha, z, domain, dtype)
    two_alpha = 2.0 * alpha
    v0 = z - c / two_alpha

    bounds = domain.box_bounds()

    def unclipped(lam):
        return v0 - combine(lam, A) / two_alpha

    def oracle(lam, x_warm):
        del x_warm
        v = unclipped(lam)
        if bounds is not None:
            lower, upper = bounds
            x = jnp.clip(v, lower, upper)
            free = ((v > lower) & (v < upper)).astype(A.dtype)
            # g and the Hessian A J A^T in one reduction: the rows of A against x and against J a_m
            products = jnp.sum(A[:, None, :] * jnp.concatenate([x[None], A * free[None, :]])[None], axis=-1)
            g, hess = products[:, 0] - b, products[:, 1:] / two_alpha
        else:
            x, JA = jax.vmap(lambda a: jax.jvp(domain.project, (v,), (a,)))(A)  # J_Pi(v) a_n, row by row
            x = x[0]
            g, hess = A @ x - b, A @ JA.T / two_alpha
        return DualPoint(lam, x, g, _objective(c, alpha, z, x) + combine(lam, g), hess)

    def exact_step(lam, d, s_max):
        # On a box phi'(s) = <d, A x(s) - b> with x(s) = clip(v - s u) is non-increasing and piecewise
        # linear, with breakpoints where a coordinate of v - s u meets a bound: evaluate it there and
        # interpolate its zero linearly between the two neighbouring breakpoints.
        lower, upper = bounds  # used only when the domain declares them
        v = unclipped(lam)
        Ad = combine(d, A)
        u = Ad / two_alpha
        nonzero = u != 0
        safe = jnp.where(nonzero, u, 1.0)
        cuts = jnp.concatenate([(v - lower) / safe, (v - upper) / safe])
        cuts = jnp.where(jnp.concatenate([nonzero, nonzero]), cuts, 0.0)
        S = jnp.clip(jnp.concatenate([jnp.zeros(1, dtype), cuts, s_max[None]]), 0.0, s_max)
        X = jnp.clip(v[None, :] - S[:, None] * u[None, :], lower[None, :], upper[None, :])
        D = jnp.sum(X * Ad[None, :], axis=-1) - combine(d, b)
        up = D >= 0
        # the last breakpoint with phi' >= 0 and the first with phi' < 0 (inf: none), then phi' there;
        # each pair in one reduction
        s_lo, neg_s_hi = jnp.max(jnp.stack([jnp.where(up, S, 0.0), jnp.where(up, -jnp.inf, -S)]), axis=1)
        s_hi = -neg_s_hi
        D_lo, neg_D_hi = jnp.max(
            jnp.stack([jnp.where(up & (S == s_lo), D, 0.0), jnp.where(~up & (S == s_hi), -D, -jnp.inf)]), axis=1
        )
        D_hi = -neg_D_hi
        s_root = s_lo + D_lo * (s_hi - s_lo) / jnp.where(D_lo > D_hi, D_lo - D_hi, 1.0)
        return jnp.where(s_hi == jnp.inf, s_max, jnp.clip(s_root, s_lo, s_hi))

    def scale():
        return jnp.trace(A @ A.T) / (two_alpha * A.shape[0])

    w = jnp.asarray(weights, dtype)
    exact = None if bounds is None else exact_step
    g_scale = jnp.max(jnp.abs(b))
    return maximise_dual(oracle, w, z, scale, tol, max_iter, exact, g_scale)


def _stable_positive_root(a, q):
    """The root ``u > 0`` of ``u^2 - a u - q = 0`` for ``q >= 0`` (0 when ``q = 0`` and ``a <= 0``)."""
    sq = jnp.sqrt(a * a + 4.0 * q)
    return jnp.where(a >= 0, 0.5 * (a + sq), 2.0 * q / jnp.where(sq - a > 0, sq - a, 1.0))


def solve_log_capacity(
    c: Float[Array, " p"],
    alpha: Any,
    z: Float[Array, " p"],
    weight: Float[Array, " 1"],
    demand: Float[Array, ""],
    scale: Any,
    rate: Any,
    domain: AbstractSet,
    *,
    tol: Any = 1e-11,
    max_iter: int = 50,
) -> HingeProxSolution:
    """The step for ``g(x) = d - sum_i s_i ln(1 + r_i x_i)`` (N = 1) over a box with ``lower > -1/r``.

    For a multiplier ``mu``, coordinate i solves ``c_i + 2 alpha (x - z_i) - mu s_i r_i / (1 + r_i x) = 0``;
    with ``u = 1 + r_i x`` and ``v = z_i - c_i / (2 alpha)`` this is ``u^2 - (1 + r_i v) u - r_i k = 0``,
    ``k = mu s_i r_i / (2 alpha)``, whose positive root (computed without cancellation) is the unique
    stationary point on ``x > -1/r_i``; clipping it to ``[lower_i, upper_i]`` gives ``x_i(mu)`` (a 1-D
    strictly convex problem). ``mu`` solves ``g(x(mu)) = 0`` in ``[0, w]`` by safeguarded Newton.

    Args:
        demand, scale, rate: ``d``, ``s > 0`` and ``r > 0`` (scalars or per coordinate); paper 003,
            Section 6.3, uses ``d = lambda_t``, ``s = r = 4``. Others as in `solve_affine`.
    """
    lower, upper = _box_bounds(domain, "log_capacity")
    dtype = jnp.result_type(c, z)
    two_alpha = 2.0 * alpha
    v0 = z - c / two_alpha
    s = jnp.broadcast_to(jnp.asarray(scale, dtype), z.shape)
    r = jnp.broadcast_to(jnp.asarray(rate, dtype), z.shape)
    a = 1.0 + r * v0

    def oracle(lam, x_warm):
        del x_warm
        mu = lam[0]
        u = _stable_positive_root(a, r * mu * s * r / two_alpha)
        xr = (u - 1.0) / r
        x = jnp.clip(xr, lower, upper)
        g = jnp.reshape(demand - jnp.sum(s * jnp.log1p(r * x)), (1,))
        free = (xr > lower) & (xr < upper)
        one_plus = 1.0 + r * x
        dg = -s * r / one_plus
        curvature = two_alpha + mu * s * r * r / (one_plus * one_plus)
        hess = jnp.reshape(jnp.sum(jnp.where(free, dg * dg / curvature, 0.0)), (1, 1))
        return DualPoint(lam, x, g, _objective(c, alpha, z, x) + mu * g[0], hess)

    def scale():
        return jnp.sum((s * r) ** 2) / (two_alpha * z.shape[0])

    w = jnp.reshape(jnp.asarray(weight, dtype), (1,))
    return maximise_dual(oracle, w, z, scale, tol, max_iter, g_scale=jnp.abs(demand))


def _box_newton(q, x0, bounds: tuple[Array, Array], tol_x, max_iter: int):
    """Projected Newton (exact Hessian, Armijo on the projected arc) for a smooth strongly convex q on the box
    ``bounds = (lower, upper)``.

    Returns ``(x, free coordinates, Hessian at x, iterations)``.
    """
    lo, hi = bounds
    grad_q, hess_q = jax.grad(q), jax.hessian(q)

    def pg(x, gr):
        return x - jnp.clip(x - gr, lo, hi)

    def cond(c):
        x, gr, k = c
        return (jnp.max(jnp.abs(pg(x, gr))) > tol_x) & (k < max_iter)

    def body(c):
        x, gr, k = c
        fixed = ((x <= lo) & (gr > 0)) | ((x >= hi) & (gr < 0))
        d = -masked_solve(hess_q(x), gr, ~fixed, 0.0)
        qx = q(x)
        slack = 50 * machine_eps(x.dtype) * (1.0 + jnp.abs(qx))

        def ls_cond(s_c):
            s, j = s_c
            xs = jnp.clip(x + s * d, lo, hi)
            ok = q(xs) <= qx + ARMIJO * jnp.dot(gr, xs - x) + slack
            return (~ok) & (j < MAX_BACKTRACKS)

        s, _ = jax.lax.while_loop(ls_cond, lambda s_c: (0.5 * s_c[0], s_c[1] + 1), (jnp.asarray(1.0, x.dtype), 0))
        x_new = jnp.clip(x + s * d, lo, hi)
        return x_new, grad_q(x_new), k + 1

    x0 = jnp.clip(x0, lo, hi)
    x, gr, k = jax.lax.while_loop(cond, body, (x0, grad_q(x0), jnp.asarray(0, jnp.int32)))
    fixed = ((x <= lo) & (gr > 0)) | ((x >= hi) & (gr < 0))
    return x, ~fixed, hess_q(x), k


def solve_smooth(
    c: Float[Array, " p"],
    alpha: Any,
    z: Float[Array, " p"],
    weights: Float[Array, " N"],
    g: Callable[[Array], Array],
    domain: AbstractSet,
    *,
    tol: Any = 1e-11,
    max_iter: int = 50,
    inner_max_iter: int = 50,
) -> HingeProxSolution:
    """The step for any smooth convex ``g`` over a box (the generic fallback).

    ``x(lam)`` minimises the smooth strongly convex Lagrangian by projected Newton on the box with the
    exact Hessian ``2 alpha I + grad^2 <lam, g>`` (``jax.hessian``; O(p^3) per inner step), warm-started
    at the previous ``x``, until the projected step ``||x - clip(x - grad L)||_inf`` is below
    ``0.01 tol (1 + ||z||_inf + ||c||_inf / (2 alpha))`` (100 times tighter than the dual tolerance).
    The dual step is as in `solve_affine`.
    ``iterations`` counts dual Newton steps; inner steps are not included.
    """
    bounds = _box_bounds(domain, "smooth")
    dtype = jnp.result_type(c, z)
    w = jnp.asarray(weights, dtype)
    if w.shape[0] == 0:
        return _unconstrained(c, alpha, z, domain, dtype)
    # the inner solve is 100x tighter, so that g(x(lam)) is exact to well below the dual tolerance
    tol_x = jnp.maximum(0.01 * tol, 10 * machine_eps(dtype)) * (
        1.0 + jnp.max(jnp.abs(z)) + jnp.max(jnp.abs(c)) / (2.0 * alpha)
    )
    jac = jax.jacfwd(g)

    def oracle(lam, x_warm):
        def lagrangian(x):
            return _objective(c, alpha, z, x) + jnp.dot(lam, g(x))

        x, free, K, _ = _box_newton(lagrangian, x_warm, bounds, tol_x, inner_max_iter)
        J = jac(x) * free.astype(x.dtype)[None, :]
        Km = jnp.where(free[:, None] & free[None, :], K, 0.0) + jnp.diag(jnp.where(free, 0.0, 1.0))
        hess = J @ jnp.linalg.solve(Km, J.T)
        gx = g(x)
        return DualPoint(lam, x, gx, _objective(c, alpha, z, x) + jnp.dot(lam, gx), hess)

    def scale():
        J0 = jac(z)
        return jnp.sum(J0 * J0) / (2.0 * alpha * w.shape[0])

    return maximise_dual(oracle, w, z, scale, tol, max_iter)


class AbstractHingeSolver(eqx.Module):
    """How `hinge_prox_step` solves the step: the structure of ``g`` it exploits (one type per kind).

    ``resolve(structure, domain)`` is the solver used on a problem of the declared ``constraint_structure``
    over ``domain`` (``ValueError`` if unusable there); ``solve(round_, domain, c, alpha, z, weights, tol,
    max_iter)`` solves the step for the round's ``g`` (the arguments of `hinge_prox_step`).
    """

    name: eqx.AbstractClassVar[str]

    @abc.abstractmethod
    def resolve(self, structure: str, domain: AbstractSet) -> "AbstractHingeSolver":
        """The solver used for a problem of declared ``structure`` over ``domain``; ``ValueError`` if unusable."""

    @abc.abstractmethod
    def solve(self, round_: Any, domain: AbstractSet, c, alpha, z, weights, tol, max_iter) -> HingeProxSolution:
        """The step for ``g = g_t`` of ``round_``, with ``N >= 1`` constraints."""


class AffineSolver(AbstractHingeSolver):
    """Affine ``g = A x - b`` (`solve_affine`), over any set with an exact projection.

    ``A, b`` come from ``affine_constraints`` when the problem declares the ``"affine"`` structure, else from the
    Jacobian of ``g`` at the centre (exact only when ``g`` is affine in ``x``: choosing this solver asserts it).
    """

    name: ClassVar[str] = "affine"

    def resolve(self, structure, domain):
        del structure, domain
        return self

    def solve(self, round_, domain, c, alpha, z, weights, tol, max_iter):
        if round_.constraint_structure == "affine":
            A, b = round_.affine_constraints()
        else:
            A = jax.jacfwd(round_.constraints)(z)
            b = A @ z - round_.constraints(z)
        return solve_affine(c, alpha, z, weights, A, b, domain, tol=tol, max_iter=max_iter)


class LogCapacitySolver(AbstractHingeSolver):
    """``g = d - sum_i s_i ln(1 + r_i x_i)`` over a box (`solve_log_capacity`): needs the declared
    ``"log_capacity"`` structure (``log_capacity_constraint(data) -> (d, s, r)``)."""

    name: ClassVar[str] = "log_capacity"

    def resolve(self, structure, domain):
        if structure != "log_capacity":
            raise ValueError(
                f"solver='log_capacity' needs a problem with constraint_structure='log_capacity' (and "
                f"log_capacity_constraint(data) -> (d, s, r) describing g(x) = d - sum_i s_i ln(1 + r_i x_i)), "
                f"got {structure!r}"
            )
        _box_bounds(domain, self.name)
        return self

    def solve(self, round_, domain, c, alpha, z, weights, tol, max_iter):
        d, s, r = round_.log_capacity_constraint()
        return solve_log_capacity(c, alpha, z, weights, d, s, r, domain, tol=tol, max_iter=max_iter)


class SmoothSolver(AbstractHingeSolver):
    """Any smooth convex ``g`` over a box (`solve_smooth`, the generic fallback)."""

    name: ClassVar[str] = "smooth"

    def resolve(self, structure, domain):
        del structure
        _box_bounds(domain, self.name)
        return self

    def solve(self, round_, domain, c, alpha, z, weights, tol, max_iter):
        return solve_smooth(c, alpha, z, weights, round_.constraints, domain, tol=tol, max_iter=max_iter)


class DeclaredSolver(AbstractHingeSolver):
    """The solver of the problem's declared ``constraint_structure``: `AffineSolver` for ``"affine"``
    (``affine_constraints(data) -> (A, b)``), `LogCapacitySolver` for ``"log_capacity"``,
    `SmoothSolver` otherwise (``solver="auto"`` of the learners)."""

    name: ClassVar[str] = "auto"

    def resolve(self, structure, domain):
        by_structure = {"affine": AffineSolver(), "log_capacity": LogCapacitySolver()}
        return by_structure.get(structure, SmoothSolver()).resolve(structure, domain)

    def solve(self, round_, domain, c, alpha, z, weights, tol, max_iter):
        solver = self.resolve(round_.constraint_structure, domain)
        return solver.solve(round_, domain, c, alpha, z, weights, tol, max_iter)


SOLVERS: dict[str, AbstractHingeSolver] = {
    solver.name: solver for solver in (DeclaredSolver(), AffineSolver(), LogCapacitySolver(), SmoothSolver())
}
"""The solver of each name a learner's constructor accepts (``solver="auto"`` is `DeclaredSolver`)."""


def as_solver(solver: str | AbstractHingeSolver) -> AbstractHingeSolver:
    """``solver`` itself, or the solver of that name in `SOLVERS` (``ValueError`` for another name)."""
    if isinstance(solver, AbstractHingeSolver):
        return solver
    _checks.one_of("solver", solver, tuple(SOLVERS))
    return SOLVERS[solver]


def hinge_prox_step(
    round_: Any,
    domain: AbstractSet,
    c: Float[Array, " p"],
    alpha: Any,
    z: Float[Array, " p"],
    weights: Float[Array, " N"],
    *,
    solver: AbstractHingeSolver = DeclaredSolver(),
    tol: Any = 1e-11,
    max_iter: int = 50,
) -> HingeProxSolution:
    """``argmin_{x in K} <c, x - z> + alpha ||x - z||^2 + sum_n w_n [g_n(x)]_+`` for ``g = g_t`` of ``round_``.

    ``round_`` is the round's feedback ([`FullInformation`][ocokit.feedback.FullInformation]: ``constraints(x)``,
    ``num_constraints``, ``constraint_structure`` and the declared ``affine_constraints()`` /
    ``log_capacity_constraint()``). The structure of ``g`` is exploited by ``solver`` (an
    `AbstractHingeSolver`; by default `DeclaredSolver`), resolved for the problem first
    (``ValueError`` if unusable). Pure and jit/vmap-safe.
    """
    solver = solver.resolve(round_.constraint_structure, domain)
    if domain.shape is not None and len(domain.shape) != 1:
        raise ValueError(f"hinge-prox solvers need vector decisions, got shape {domain.shape}")
    if round_.num_constraints == 0:
        return _unconstrained(c, alpha, z, domain, jnp.result_type(c, z))
    return solver.solve(round_, domain, c, alpha, z, weights, tol, max_iter)

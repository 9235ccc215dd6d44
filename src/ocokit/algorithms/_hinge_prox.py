"""Exact solvers of the hinge-penalised proximal step of queue-based learners (COLDQ, RECOO, Yi 2021).

The per-round problem, for a centre ``z`` (COLDQ: ``x_{t-1}``), a gradient ``c`` taken there, a proximal
weight ``alpha > 0`` and hinge weights ``w_n >= 0`` (COLDQ: the queues ``Q_{t-1}^n``)::

    P:  min_{x in X}  <c, x - z> + alpha ||x - z||^2 + sum_n w_n [g_n(x)]_+        (g_n convex)

Method (ocokit's; paper 003 only says ``P_t`` is a convex program "solved in polynomial time" and uses CVXPY,
Section 4.4 and Appendix L). Each hinge is a
maximum over a bounded multiplier, ``w [g]_+ = max_{lam in [0, w]} lam g``, so ``P`` equals the concave
dual ``max_{lam in [0, w]} phi(lam)``, ``phi(lam) = min_{x in X} L(x, lam)`` with the Lagrangian
``L = <c, x - z> + alpha ||x - z||^2 + <lam, g(x)>``. ``L`` is ``2 alpha``-strongly convex in ``x``, so
``x(lam) = argmin_X L`` is unique, ``phi`` is differentiable with ``grad phi(lam) = g(x(lam))`` (Danskin)
and the primal solution is ``x(lam*)``. The dual has only N variables (2 or 3 in paper 003): it is
maximised by projected Newton over the box ``[0, w]`` (Bertsekas 1982), using the generalised Hessian
``-J_F (grad^2_xx L)_FF^{-1} J_F^T`` on the free coordinates F of ``x(lam)``. Multipliers at a bound
whose gradient points outwards are held there; the first trial is the Newton point or, if nearer, the
first bound on the way to it (a locally linear piece gives a huge Newton step); an Armijo search
backtracks by safeguarded quadratic interpolation. On a piecewise-quadratic dual (affine ``g``) Newton
is exact once it has found the right piece, so it stops after a few steps at machine precision.

The first check, at ``lam = 0``, is the fast path of paper 003's Section 4.3, tested on the projected point
(the paper states it for the unprojected step): when the projected gradient step ``Pi_X(z - c / (2 alpha))``
satisfies ``g <= 0`` it is the solution (the penalty is 0 there) and no Newton step is taken. The Newton loop,
and the curvature scale only it needs, sit in a ``lax.cond`` branch that such a round skips.

Three structures of ``g``, each with its own ``x(lam)``:

* ``affine`` (``g(x) = A x - b``; :func:`solve_affine`): ``x(lam) = Pi_X(z - (c + A^T lam) / (2 alpha))``
  in closed form, for any X with an exact projection (Hessian through the projection's Jacobian).
* ``log_capacity`` (``g(x) = d - sum_i s_i ln(1 + r_i x_i)``, N = 1, X a box; :func:`solve_log_capacity`;
  the job-scheduling constraint of paper 003, Section 6.3): the stationarity equation of each coordinate is a quadratic,
  solved in closed form (stable root) and clipped.
* ``smooth`` (any smooth convex ``g``, X a box; :func:`solve_smooth`): ``x(lam)`` by projected Newton on
  the box with the exact Hessian of ``<lam, g>`` (``jax.hessian``), warm-started.

Tolerance: iterations stop when the dual KKT residual (the projected dual gradient, in the units of
``g``: ``|g_n|`` for an interior multiplier, ``[g_n]_+`` at 0, ``[-g_n]_+`` at ``w_n``) is at most
``tol * (1 + max_n |g_n(x(0))| + s_g)``, ``s_g`` the size of the constant terms of ``g`` (``max |b|``,
``|d|``; 0 for ``smooth``) (``tol`` floored at ``100 eps`` of the dtype, so float32 runs stop
near ``1e-5``), or after ``max_iter`` Newton steps; the solution reports the
iterations, the residual and whether it converged. ``x`` always lies in X (it is ``x(lam)`` for the
final ``lam``).

:func:`hinge_prox_step` picks the structure from the problem (see :data:`SOLVERS`). COLDQ, COLDQ-Expert,
RECOO and Yi et al. 2021 hold it through their part
:class:`~ocokit.algorithms._queue_common.HingeProx`, which carries the options once.

References:
    J. Wang, B. Yan and Y. Liu. Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
    Dynamics of Both Loss and Constraint. AAAI 2025 (paper 003), Section 4.3 and Appendix (solver).
    D. P. Bertsekas. Projected Newton methods for optimization problems with simple constraints. SIAM J.
    Control and Optimization 20(2), 1982.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ocokit.sets import AbstractSet

SOLVERS = ("auto", "affine", "log_capacity", "smooth")
"""Solver choices of :func:`hinge_prox_step`:

* ``"auto"``: by the problem's declared ``constraint_structure``: ``affine`` for ``"affine"``
  (``affine_constraints(data) -> (A, b)``, ``g = A x - b``), ``log_capacity`` for ``"log_capacity"``
  (``log_capacity_constraint(data) -> (d, s, r)``, ``g = d - sum_i s_i ln(1 + r_i x_i)``), ``smooth``
  otherwise.
* ``"affine"``: ``A, b`` from ``affine_constraints`` when the structure is declared affine, else from the
  Jacobian of ``g`` at the centre (exact only when ``g`` is affine in ``x``: the caller asserts it).
* ``"log_capacity"``: needs the declared ``"log_capacity"`` structure.
* ``"smooth"``: any smooth convex ``g`` over a box.
"""

_SIGMA = 1e-4  # Armijo constant
_MAX_BACKTRACKS = 60
_UNROLL = 8
"""Sums over at most this many constraints are written out term by term (:func:`_combine`): XLA fuses the terms
with the arithmetic around them, where a ``dot`` or a reduction is a kernel of its own. A round's solve is a
few dozen tiny kernels (paper 003 has N = 2 or 3), so their number, not the arithmetic, sets its time."""


class HingeProxSolution(eqx.Module):
    """Solution of the hinge-penalised proximal step.

    Attributes:
        x: the minimiser (in X).
        multipliers: the dual solution ``lam`` in ``[0, w]`` (``lam_n = w_n`` means the hinge is crossed).
        iterations: Newton steps on the dual (0 on the fast path).
        residual: the final dual KKT residual, in the units of ``g``.
        converged: whether the residual met the tolerance.
    """

    x: Float[Array, " p"]
    multipliers: Float[Array, " N"]
    iterations: Int[Array, ""]
    residual: Float[Array, ""]
    converged: Bool[Array, ""]


class _DualPoint(eqx.Module):
    lam: Float[Array, " N"]
    x: Float[Array, " p"]
    g: Float[Array, " N"]  # g(x(lam)) = grad phi(lam)
    value: Float[Array, ""]  # phi(lam)
    hess: Float[Array, "N N"]  # -Hessian of phi (PSD), generalised


def _eps(dtype) -> float:
    """Machine epsilon of ``dtype``: tolerances and regularisations never go below a few of these."""
    return float(jnp.finfo(dtype).eps)


def _regularisation(scale, dtype):
    """``1e-10`` of the curvature scale (at least ``10 eps`` of it), plus the smallest normal number."""
    return max(1e-10, 10 * _eps(dtype)) * scale + jnp.finfo(dtype).tiny


def _combine(weights: Array, rows: Array) -> Array:
    """``sum_n weights[n] rows[n]`` (``rows^T weights`` for a matrix, ``<weights, rows>`` for a vector),
    written out term by term for at most :data:`_UNROLL` terms."""
    n = weights.shape[0]
    if n == 0 or n > _UNROLL:
        return jnp.tensordot(weights, rows, axes=1)
    return functools.reduce(operator.add, [weights[i] * rows[i] for i in range(n)])


def _smallest(values: Array) -> Array:
    """``min(values)``, written out for at most :data:`_UNROLL` values."""
    n = values.shape[0]
    if n == 0 or n > _UNROLL:
        return jnp.min(values, initial=jnp.inf)
    return functools.reduce(jnp.minimum, [values[i] for i in range(n)])


def _kkt_residual(lam, g, w):
    at_lo, at_hi = lam <= 0, lam >= w
    p = jnp.where(at_lo & at_hi, 0.0, jnp.where(at_lo, jnp.maximum(g, 0.0), jnp.where(at_hi, jnp.minimum(g, 0.0), g)))
    return jnp.max(jnp.abs(p))


def _small_solve(M, r):
    """``M^{-1} r`` without a LAPACK call for N <= 2 (a division; Cramer's rule, which is forward stable
    for 2 x 2 systems, Higham 2002 §1.10), LU with pivoting otherwise (larger Cramer formulas are not
    stable on the nearly singular Hessians of locally linear dual pieces)."""
    n = r.shape[0]
    if n == 1:
        return r / M[0, 0]
    if n == 2:
        det = M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]
        return jnp.stack([M[1, 1] * r[0] - M[0, 1] * r[1], M[0, 0] * r[1] - M[1, 0] * r[0]]) / det
    return jnp.linalg.solve(M, r)


def _masked_solve(H, rhs, free, reg):
    """Solve ``(H_FF + reg I) d_F = rhs_F`` with ``d = 0`` off the free set F."""
    mask = free[:, None] & free[None, :]
    M = jnp.where(mask, H, 0.0) + jnp.diag(jnp.where(free, reg, 1.0))
    return jnp.where(free, _small_solve(M, jnp.where(free, rhs, 0.0)), 0.0)


def _maximise_dual(
    oracle: Callable[[Array, Array], _DualPoint],
    w: Float[Array, " N"],
    x_warm: Float[Array, " p"],
    scale: Callable[[], Array],
    tol: Any,
    max_iter: int,
    exact_step: Callable[[Array, Array, Array], Array] | None = None,
    g_scale: Any = 0.0,
) -> HingeProxSolution:
    """Projected Newton for ``max_{lam in [0, w]} phi(lam)``; ``oracle(lam, x_warm)`` gives ``x(lam)`` etc.

    ``exact_step(lam, d, s_max)``, when given, is the exact maximiser of ``phi(lam + s d)`` over
    ``s in [0, s_max]`` (no backtracking); otherwise an Armijo search is used. ``scale()`` returns a curvature
    scale of ``-phi`` (that of ``x`` unclipped), computed only in the branch that takes Newton steps: it sets the
    Newton regularisation and the gradient step;
    ``g_scale``, the size of the terms that make up ``g`` (its round-off), enters the tolerance.
    """
    start = oracle(jnp.zeros_like(w), x_warm)
    eps = _eps(w.dtype)
    tol_abs = jnp.maximum(tol, 100 * eps) * (1.0 + jnp.max(jnp.abs(start.g)) + g_scale)

    def cond(carry):
        point, k = carry
        return (_kkt_residual(point.lam, point.g, w) > tol_abs) & (k < max_iter)

    init = (start, jnp.asarray(0, jnp.int32))
    # Most rounds stop at the start (the fast path): the Newton loop and what only it needs (the curvature
    # scale, the regularisation) sit in a branch taken when a step is needed, so those rounds skip them.
    point, k = jax.lax.cond(
        cond(init), lambda c: _newton(oracle, w, scale(), tol_abs, cond, c, exact_step), lambda c: c, init
    )
    res = _kkt_residual(point.lam, point.g, w)
    return HingeProxSolution(point.x, point.lam, k, res, res <= tol_abs)


def _newton(
    oracle: Callable[[Array, Array], _DualPoint],
    w: Float[Array, " N"],
    scale: Float[Array, ""],
    tol_abs: Float[Array, ""],
    cond: Callable[[tuple[_DualPoint, Array]], Array],
    init: tuple[_DualPoint, Int[Array, ""]],
    exact_step: Callable[[Array, Array, Array], Array] | None,
) -> tuple[_DualPoint, Int[Array, ""]]:
    """The projected Newton loop of :func:`_maximise_dual` from ``init = (point, 0)`` while ``cond`` holds:
    the last point and the number of steps taken (arguments as there; ``scale`` evaluated)."""
    reg = _regularisation(scale, w.dtype)
    eps = _eps(w.dtype)

    def to_box(lam):
        # Clip to [0, w] and snap to a bound within a few eps of it: a step meant to reach a bound can stop
        # a rounding error short (a subnormal lam_n > 0), leaving lam_n "free" with room ~1e-300 to move,
        # and Newton stalls there until max_iter.
        lam = jnp.clip(lam, 0.0, w)
        return jnp.where(lam <= 10 * eps * w, 0.0, jnp.where(lam >= (1 - 10 * eps) * w, w, lam))

    def body(carry):
        cur, k = carry
        fixed = ((cur.lam <= 0) & (cur.g <= 0)) | ((cur.lam >= w) & (cur.g >= 0)) | (w <= 0)
        d = _masked_solve(cur.hess, cur.g, ~fixed, reg)
        # Coordinates already at a bound that d pushes out of the box stay there (the projected arc).
        stuck = ((cur.lam <= 0) & (d < 0)) | ((cur.lam >= w) & (d > 0))
        d = jnp.where(stuck, 0.0, d)
        slope = _combine(cur.g, d)  # > 0 for a Newton direction; else fall back to the scaled gradient
        d = jnp.where(slope > 0, d, jnp.where(fixed | stuck, 0.0, cur.g) / scale)
        slope = _combine(cur.g, d)
        # The segment up to the first bound; the first Armijo trial is the Newton point or, if nearer,
        # that bound (a locally linear piece makes d huge).
        room = jnp.where(d > 0, w - cur.lam, cur.lam)
        s_max = _smallest(jnp.where(d != 0, room / jnp.abs(d), jnp.inf))
        if exact_step is not None:
            s_best = exact_step(cur.lam, d, jnp.minimum(s_max, jnp.sqrt(jnp.finfo(w.dtype).max)))
            return oracle(to_box(cur.lam + s_best * d), cur.x), k + 1
        s0 = jnp.minimum(1.0, s_max)
        slack = 500 * eps * (1.0 + jnp.abs(cur.value))

        def trial(s):
            pt = oracle(to_box(cur.lam + s * d), cur.x)
            ok = (pt.value - cur.value >= _SIGMA * s * slope - slack) | (_kkt_residual(pt.lam, pt.g, w) <= tol_abs)
            return pt, ok

        pt0, ok0 = trial(s0)

        def ls_cond(c):
            _, _, ok, j = c
            return (~ok) & (j < _MAX_BACKTRACKS)

        def ls_body(c):
            s, pt, _, j = c
            # maximiser of the concave quadratic through phi(0), phi'(0) = slope and phi(s), safeguarded
            curvature = 2.0 * (cur.value + slope * s - pt.value) / (s * s)
            s_new = jnp.clip(slope / jnp.maximum(curvature, jnp.finfo(w.dtype).tiny), 0.1 * s, 0.5 * s)
            pt_new, ok = trial(s_new)
            return s_new, pt_new, ok, j + 1

        _, new, _, _ = jax.lax.while_loop(ls_cond, ls_body, (s0, pt0, ok0, 0))
        return new, k + 1

    return jax.lax.while_loop(cond, body, init)


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
    products ``J a_n``): on a box (a set declaring ``box_bounds()``, :class:`~ocokit.sets.Box`) ``J`` is the
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
        return v0 - _combine(lam, A) / two_alpha

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
        return _DualPoint(lam, x, g, _objective(c, alpha, z, x) + _combine(lam, g), hess)

    def exact_step(lam, d, s_max):
        # On a box phi'(s) = <d, A x(s) - b> with x(s) = clip(v - s u) is non-increasing and piecewise
        # linear, with breakpoints where a coordinate of v - s u meets a bound: evaluate it there and
        # interpolate its zero linearly between the two neighbouring breakpoints.
        lower, upper = bounds  # used only when the domain declares them
        v = unclipped(lam)
        Ad = _combine(d, A)
        u = Ad / two_alpha
        nonzero = u != 0
        safe = jnp.where(nonzero, u, 1.0)
        cuts = jnp.concatenate([(v - lower) / safe, (v - upper) / safe])
        cuts = jnp.where(jnp.concatenate([nonzero, nonzero]), cuts, 0.0)
        S = jnp.clip(jnp.concatenate([jnp.zeros(1, dtype), cuts, s_max[None]]), 0.0, s_max)
        X = jnp.clip(v[None, :] - S[:, None] * u[None, :], lower[None, :], upper[None, :])
        D = jnp.sum(X * Ad[None, :], axis=-1) - _combine(d, b)
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
    return _maximise_dual(oracle, w, z, scale, tol, max_iter, exact, g_scale)


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
            Section 6.3, uses ``d = lambda_t``, ``s = r = 4``. Others as in :func:`solve_affine`.
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
        return _DualPoint(lam, x, g, _objective(c, alpha, z, x) + mu * g[0], hess)

    def scale():
        return jnp.sum((s * r) ** 2) / (two_alpha * z.shape[0])

    w = jnp.reshape(jnp.asarray(weight, dtype), (1,))
    return _maximise_dual(oracle, w, z, scale, tol, max_iter, g_scale=jnp.abs(demand))


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
        d = -_masked_solve(hess_q(x), gr, ~fixed, 0.0)
        qx = q(x)
        slack = 50 * _eps(x.dtype) * (1.0 + jnp.abs(qx))

        def ls_cond(s_c):
            s, j = s_c
            xs = jnp.clip(x + s * d, lo, hi)
            ok = q(xs) <= qx + _SIGMA * jnp.dot(gr, xs - x) + slack
            return (~ok) & (j < _MAX_BACKTRACKS)

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
    The dual step is as in :func:`solve_affine`.
    ``iterations`` counts dual Newton steps; inner steps are not included.
    """
    bounds = _box_bounds(domain, "smooth")
    dtype = jnp.result_type(c, z)
    w = jnp.asarray(weights, dtype)
    if w.shape[0] == 0:
        return _unconstrained(c, alpha, z, domain, dtype)
    # the inner solve is 100x tighter, so that g(x(lam)) is exact to well below the dual tolerance
    tol_x = jnp.maximum(0.01 * tol, 10 * _eps(dtype)) * (
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
        return _DualPoint(lam, x, gx, _objective(c, alpha, z, x) + jnp.dot(lam, gx), hess)

    def scale():
        J0 = jac(z)
        return jnp.sum(J0 * J0) / (2.0 * alpha * w.shape[0])

    return _maximise_dual(oracle, w, z, scale, tol, max_iter)


def resolve_solver(structure: str, domain: AbstractSet, solver: str) -> str:
    """The structure :func:`hinge_prox_step` uses (static); ``ValueError`` if unusable.

    ``structure`` is the problem's declared ``constraint_structure`` (``"affine"``, ``"log_capacity"`` or
    ``"general"``) and ``domain`` the decision set.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {list(SOLVERS)}, got {solver!r}")
    if solver == "auto":
        solver = {"affine": "affine", "log_capacity": "log_capacity"}.get(structure, "smooth")
    if solver == "log_capacity" and structure != "log_capacity":
        raise ValueError(
            f"solver='log_capacity' needs a problem with constraint_structure='log_capacity' (and "
            f"log_capacity_constraint(data) -> (d, s, r) describing g(x) = d - sum_i s_i ln(1 + r_i x_i)), "
            f"got {structure!r}"
        )
    if solver in ("log_capacity", "smooth"):
        _box_bounds(domain, solver)
    if domain.shape is not None and len(domain.shape) != 1:
        raise ValueError(f"hinge-prox solvers need vector decisions, got shape {domain.shape}")
    return solver


def hinge_prox_step(
    round_: Any,
    domain: AbstractSet,
    c: Float[Array, " p"],
    alpha: Any,
    z: Float[Array, " p"],
    weights: Float[Array, " N"],
    *,
    solver: str = "auto",
    tol: Any = 1e-11,
    max_iter: int = 50,
) -> HingeProxSolution:
    """``argmin_{x in K} <c, x - z> + alpha ||x - z||^2 + sum_n w_n [g_n(x)]_+`` for ``g = g_t`` of ``round_``.

    ``round_`` is the round's feedback (:class:`~ocokit.feedback.FullInformation`: ``constraints(x)``,
    ``num_constraints``, ``constraint_structure`` and the declared ``affine_constraints()`` /
    ``log_capacity_constraint()``). The structure of ``g`` is chosen by ``solver`` (static; see
    :data:`SOLVERS`). Pure and jit/vmap-safe.
    """
    kind = resolve_solver(round_.constraint_structure, domain, solver)
    if round_.num_constraints == 0:
        return _unconstrained(c, alpha, z, domain, jnp.result_type(c, z))
    if kind == "affine":
        if round_.constraint_structure == "affine":
            A, b = round_.affine_constraints()
        else:
            A = jax.jacfwd(round_.constraints)(z)
            b = A @ z - round_.constraints(z)
        return solve_affine(c, alpha, z, weights, A, b, domain, tol=tol, max_iter=max_iter)
    if kind == "log_capacity":
        d, s, r = round_.log_capacity_constraint()
        return solve_log_capacity(c, alpha, z, weights, d, s, r, domain, tol=tol, max_iter=max_iter)
    return solve_smooth(c, alpha, z, weights, round_.constraints, domain, tol=tol, max_iter=max_iter)

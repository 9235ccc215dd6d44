"""Projected Newton on the bounded dual of a hinge-penalised proximal step (written once, for every structure).

For the step ``min_{x in X} <c, x - z> + alpha ||x - z||^2 + sum_n w_n [g_n(x)]_+`` of
`_hinge_prox`, each hinge is a maximum over a bounded multiplier,
``w [g]_+ = max_{lam in [0, w]} lam g``, so the step equals the concave dual ``max_{lam in [0, w]} phi(lam)``,
``phi(lam) = min_{x in X} L(x, lam)`` with the Lagrangian ``L = <c, x - z> + alpha ||x - z||^2 + <lam, g(x)>``.
``L`` is ``2 alpha``-strongly convex in ``x``, so ``x(lam) = argmin_X L`` is unique, ``phi`` is differentiable
with ``grad phi(lam) = g(x(lam))`` (Danskin) and the primal solution is ``x(lam*)``. The dual has only N
variables (2 or 3 in paper 003): `maximise_dual` maximises it by projected Newton over the box ``[0, w]``
(Bertsekas 1982), using the generalised Hessian ``-J_F (grad^2_xx L)_FF^{-1} J_F^T`` on the free coordinates F of
``x(lam)``, given by the structure's oracle (a `DualPoint`). Multipliers at a bound whose gradient points
outwards are held there; the first trial is the Newton point or, if nearer, the first bound on the way to it (a
locally linear piece gives a huge Newton step); an Armijo search backtracks by safeguarded quadratic
interpolation. On a piecewise-quadratic dual (affine ``g``) Newton is exact once it has found the right piece, so
it stops after a few steps at machine precision.

The first check, at ``lam = 0``, is the fast path of paper 003's Section 4.3, tested on the projected point
(the paper states it for the unprojected step): when the projected gradient step ``Pi_X(z - c / (2 alpha))``
satisfies ``g <= 0`` it is the solution (the penalty is 0 there) and no Newton step is taken. The Newton loop,
and the curvature scale only it needs, sit in a ``lax.cond`` branch that such a round skips.

Tolerance: iterations stop when the dual KKT residual (the projected dual gradient, in the units of
``g``: ``|g_n|`` for an interior multiplier, ``[g_n]_+`` at 0, ``[-g_n]_+`` at ``w_n``) is at most
``tol * (1 + max_n |g_n(x(0))| + s_g)``, ``s_g`` the size of the constant terms of ``g`` (``max |b|``,
``|d|``; 0 for ``smooth``) (``tol`` floored at ``100 eps`` of the dtype, so float32 runs stop
near ``1e-5``), or after ``max_iter`` Newton steps; the solution reports the
iterations, the residual and whether it converged. ``x`` always lies in X (it is ``x(lam)`` for the
final ``lam``).

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

ARMIJO = 1e-4  # Armijo constant
MAX_BACKTRACKS = 60
UNROLL = 8
"""Sums over at most this many constraints are written out term by term (`combine`): XLA fuses the terms
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


class DualPoint(eqx.Module):
    """What a structure's oracle gives at the multipliers ``lam``: ``x(lam)``, ``g``, ``phi`` and the Hessian."""

    lam: Float[Array, " N"]
    x: Float[Array, " p"]
    g: Float[Array, " N"]  # g(x(lam)) = grad phi(lam)
    value: Float[Array, ""]  # phi(lam)
    hess: Float[Array, "N N"]  # -Hessian of phi (PSD), generalised


def machine_eps(dtype) -> float:
    """Machine epsilon of ``dtype``: tolerances and regularisations never go below a few of these."""
    return float(jnp.finfo(dtype).eps)


def _regularisation(scale, dtype):
    """``1e-10`` of the curvature scale (at least ``10 eps`` of it), plus the smallest normal number."""
    return max(1e-10, 10 * machine_eps(dtype)) * scale + jnp.finfo(dtype).tiny


def combine(weights: Array, rows: Array) -> Array:
    """``sum_n weights[n] rows[n]`` (``rows^T weights`` for a matrix, ``<weights, rows>`` for a vector),
    written out term by term for at most `UNROLL` terms."""
    n = weights.shape[0]
    if n == 0 or n > UNROLL:
        return jnp.tensordot(weights, rows, axes=1)
    return functools.reduce(operator.add, [weights[i] * rows[i] for i in range(n)])


def _smallest(values: Array) -> Array:
    """``min(values)``, written out for at most `UNROLL` values."""
    n = values.shape[0]
    if n == 0 or n > UNROLL:
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


def masked_solve(H, rhs, free, reg):
    """Solve ``(H_FF + reg I) d_F = rhs_F`` with ``d = 0`` off the free set F."""
    mask = free[:, None] & free[None, :]
    M = jnp.where(mask, H, 0.0) + jnp.diag(jnp.where(free, reg, 1.0))
    return jnp.where(free, _small_solve(M, jnp.where(free, rhs, 0.0)), 0.0)


def maximise_dual(
    oracle: Callable[[Array, Array], DualPoint],
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
    eps = machine_eps(w.dtype)
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
    oracle: Callable[[Array, Array], DualPoint],
    w: Float[Array, " N"],
    scale: Float[Array, ""],
    tol_abs: Float[Array, ""],
    cond: Callable[[tuple[DualPoint, Array]], Array],
    init: tuple[DualPoint, Int[Array, ""]],
    exact_step: Callable[[Array, Array, Array], Array] | None,
) -> tuple[DualPoint, Int[Array, ""]]:
    """The projected Newton loop of `maximise_dual` from ``init = (point, 0)`` while ``cond`` holds:
    the last point and the number of steps taken (arguments as there; ``scale`` evaluated)."""
    reg = _regularisation(scale, w.dtype)
    eps = machine_eps(w.dtype)

    def to_box(lam):
        # Clip to [0, w] and snap to a bound within a few eps of it: a step meant to reach a bound can stop
        # a rounding error short (a subnormal lam_n > 0), leaving lam_n "free" with room ~1e-300 to move,
        # and Newton stalls there until max_iter.
        lam = jnp.clip(lam, 0.0, w)
        return jnp.where(lam <= 10 * eps * w, 0.0, jnp.where(lam >= (1 - 10 * eps) * w, w, lam))

    def body(carry):
        cur, k = carry
        fixed = ((cur.lam <= 0) & (cur.g <= 0)) | ((cur.lam >= w) & (cur.g >= 0)) | (w <= 0)
        d = masked_solve(cur.hess, cur.g, ~fixed, reg)
        # Coordinates already at a bound that d pushes out of the box stay there (the projected arc).
        stuck = ((cur.lam <= 0) & (d < 0)) | ((cur.lam >= w) & (d > 0))
        d = jnp.where(stuck, 0.0, d)
        slope = combine(cur.g, d)  # > 0 for a Newton direction; else fall back to the scaled gradient
        d = jnp.where(slope > 0, d, jnp.where(fixed | stuck, 0.0, cur.g) / scale)
        slope = combine(cur.g, d)
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
            ok = (pt.value - cur.value >= ARMIJO * s * slope - slack) | (_kkt_residual(pt.lam, pt.g, w) <= tol_abs)
            return pt, ok

        pt0, ok0 = trial(s0)

        def ls_cond(c):
            _, _, ok, j = c
            return (~ok) & (j < MAX_BACKTRACKS)

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

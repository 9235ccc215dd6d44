"""A primal active-set solver for small convex QPs over a box with affine rows (the structured comparators).

``min_x 1/2 x'Px + q'x`` s.t. ``lower <= x <= upper`` and ``A x <= b``, ``P`` positive semidefinite (singular
allowed: time-varying regression's ``H_t'H_t`` has rank 4 in 10 variables), from a feasible point. The method is
the textbook one (Nocedal and Wright, *Numerical Optimization*, 2nd ed., Algorithm 16.3): the working set holds
the bounds at which a coordinate is fixed and at most ``n`` rows (slots); each iteration solves the equality
QP of the working set (one KKT system, ``n + slots`` unknowns, whatever the number of rows of ``A``), steps
towards its minimiser as far as feasibility allows, adds the blocking constraint if one stops the step, and
otherwise releases the working constraint of most negative multiplier, or stops when none is negative. A
direction of zero curvature (``P`` singular on the free subspace) is handled by a tiny ridge ``rho`` on the
free block: the step then runs to the first blocking constraint (the box is bounded), and a step whose
predicted decrease is at rounding level is not taken (no moves along flat directions on round-off).

Rows enter the working set only as blocking constraints, so the working set stays linearly independent. The
iteration count is capped; a problem that has not converged by then, or whose start is infeasible, is
solved by the general interior-point solver (`solve_qp`) in a loop taken at most
once, so that under ``vmap`` (a block of rounds) the general solver runs only when some problem of the block
needs it.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ocokit.problems._qp import solve_qp

RIDGE = 1e-9
"""The ridge on the free block of the KKT matrix, relative to ``1 + max |P|``."""


class ActiveSetSolution(eqx.Module):
    """Result of `solve_box_affine_qp`.

    Attributes:
        x: the minimiser.
        iterations: active-set iterations taken.
        converged: whether the active-set method stopped at a KKT point (else the general solver was used).
    """

    x: Float[Array, " n"]
    iterations: Int[Array, ""]
    converged: Bool[Array, ""]


class _State(eqx.Module):
    x: Array
    at_lower: Array  # bool (n,): coordinate fixed at its lower bound
    at_upper: Array  # bool (n,)
    slots: Array  # int (k,): row of A in each slot
    used: Array  # bool (k,): slot holds a working row
    k: Array
    done: Array


def solve_box_affine_qp(
    P: Float[Array, "n n"],
    q: Float[Array, " n"],
    A: Float[Array, "m n"],
    b: Float[Array, " m"],
    lower: Float[Array, " n"],
    upper: Float[Array, " n"],
    x0: Float[Array, " n"],
    *,
    max_iter: int | None = None,
) -> ActiveSetSolution:
    """``argmin 1/2 x'Px + q'x`` s.t. ``lower <= x <= upper``, ``A x <= b``, by a primal active-set method.

    Args:
        P: the quadratic term, ``(n, n)``, positive semidefinite.
        q: the linear term, ``(n,)``.
        A: the rows, ``(m, n)`` (any m; at most ``min(m, n)`` are ever in the working set).
        b: the right-hand side, ``(m,)``.
        lower: the lower bounds (finite).
        upper: the upper bounds (finite).
        x0: a feasible starting point (an infeasible one sends the problem to the general solver).
        max_iter: the cap on active-set iterations (default ``4 (n + min(m, n)) + 10``).

    Returns:
        An `ActiveSetSolution`.

    Example:
        >>> import jax.numpy as jnp
        >>> from ocokit.problems._active_set import solve_box_affine_qp
        >>> sol = solve_box_affine_qp(jnp.eye(2), -jnp.ones(2), jnp.ones((1, 2)), jnp.array([1.5]),
        ...                           jnp.zeros(2), jnp.ones(2), jnp.zeros(2))
        >>> [round(float(v), 6) for v in sol.x]
        [0.75, 0.75]
    """
    dtype = jnp.result_type(P, q, A, b, lower, upper, x0, float)
    P, q, A, b, lower, upper, x0 = (jnp.asarray(a, dtype) for a in (P, q, A, b, lower, upper, x0))
    n, m = q.shape[0], b.shape[0]
    k = min(m, n)
    max_iter = 4 * (n + k) + 10 if max_iter is None else max_iter
    eps = jnp.finfo(dtype).eps
    scale = 1.0 + jnp.max(jnp.abs(P))
    rho = RIDGE * scale
    row_norm = jnp.maximum(jnp.max(jnp.abs(A), axis=1), jnp.finfo(dtype).tiny)
    feas_tol = 1e3 * eps * (1.0 + jnp.abs(b))  # on A x <= b
    width = upper - lower

    direct = m <= n  # each row has its own slot (slot i holds row i): no gathers

    def working_rows(s: _State) -> Array:
        return A if direct else A[s.slots]

    def kkt(s: _State):
        """The equality QP of the working set at ``s.x``: step ``p``, row multipliers ``mu``, gradient ``g``.

        One LU solve of the KKT matrix (with identity rows for the fixed coordinates and the empty slots)."""
        g = P @ s.x + q
        free = ~(s.at_lower | s.at_upper)
        C = jnp.where(s.used[:, None] & free[None, :], working_rows(s), 0.0)  # (k, n), on the free coordinates
        top = jnp.where(free[:, None] & free[None, :], P, 0.0) + jnp.diag(jnp.where(free, rho, 1.0))
        K = jnp.block([[top, C.T], [C, jnp.diag(jnp.where(s.used, 0.0, 1.0))]])
        sol = jnp.linalg.solve(K, jnp.concatenate([-jnp.where(free, g, 0.0), jnp.zeros((k,), dtype)]))
        p, mu = jnp.where(free, sol[:n], 0.0), jnp.where(s.used, sol[n:], 0.0)
        return g, free, p, mu

    def body(s: _State) -> _State:
        g, free, p, mu = kkt(s)
        decrease = -(g @ p + 0.5 * p @ (P @ p))
        moving = decrease > 1e3 * eps * (1.0 + jnp.abs(0.5 * s.x @ (P @ s.x) + q @ s.x) + jnp.abs(g @ s.x))
        p = jnp.where(moving, p, 0.0)
        # the longest feasible step along p (bounds of free coordinates, rows outside the working set)
        big = jnp.asarray(jnp.inf, dtype)
        to_bound = jnp.where(
            free & (p < 0),
            (s.x - lower) / jnp.where(p < 0, -p, 1.0),
            jnp.where(free & (p > 0), (upper - s.x) / jnp.where(p > 0, p, 1.0), big),
        )
        in_set = s.used if direct else jnp.zeros((m,), jnp.int32).at[s.slots].max(s.used.astype(jnp.int32)) > 0
        Ap = A @ p
        rising = ~in_set & (Ap > 1e-12 * row_norm * jnp.max(jnp.abs(p)))
        to_row = jnp.where(rising, jnp.maximum(b - A @ s.x, 0.0) / jnp.where(rising, Ap, 1.0), big)
        j, i = jnp.argmin(to_bound), jnp.argmin(to_row)
        alpha_bound, alpha_row = to_bound[j], to_row[i]
        alpha = jnp.minimum(1.0, jnp.minimum(alpha_bound, alpha_row))
        blocked = alpha < 1.0
        x = jnp.clip(s.x + alpha * p, lower, upper)
        # a blocking bound or row joins the working set
        by_bound = blocked & (alpha_bound <= alpha_row)
        by_row = blocked & ~by_bound
        onehot = jnp.arange(n) == j
        at_lower = s.at_lower | (by_bound & onehot & (p < 0))
        at_upper = s.at_upper | (by_bound & onehot & (p > 0))
        x = jnp.where(by_bound & onehot, jnp.where(p < 0, lower, upper), x)
        # a free slot (one exists: the working rows are independent)
        empty = i if direct else jnp.argmin(s.used.astype(jnp.int32))
        slot_hot = (jnp.arange(k) == empty) & by_row
        slots, used = jnp.where(slot_hot, i.astype(jnp.int32), s.slots), s.used | slot_hot
        # unblocked: x is the working set's minimiser; release the constraint of most negative multiplier
        g_new = g + P @ p
        reduced = g_new + working_rows(s).T @ mu  # zero on free coordinates (up to the ridge)
        bound_mult = jnp.where(s.at_lower, reduced, jnp.where(s.at_upper, -reduced, jnp.inf))
        bound_mult = jnp.where(width > 0, bound_mult, jnp.inf)  # a pinned coordinate (lower = upper) stays
        row_mult = jnp.where(
            s.used, mu * (row_norm if direct else row_norm[s.slots]), jnp.inf
        )  # the multiplier of the row scaled to 1
        mult_tol = 1e-10 * (1.0 + jnp.max(jnp.abs(g_new)))
        jb, ir = jnp.argmin(bound_mult), jnp.argmin(row_mult)
        worst = jnp.minimum(bound_mult[jb], row_mult[ir])
        release = ~blocked & (worst < -mult_tol)
        done = ~blocked & ~release
        drop_bound = release & (bound_mult[jb] <= row_mult[ir])
        drop_row = release & ~drop_bound
        # the first iteration releases every bound of negative multiplier (from a vertex such as 0, all at once)
        dropped = drop_bound & (jnp.arange(n) == jb)
        at_lower, at_upper = at_lower & ~dropped, at_upper & ~dropped
        used = used & ~(drop_row & (jnp.arange(k) == ir))
        return _State(x, at_lower, at_upper, slots, used, s.k + 1, done)

    feasible = jnp.all((x0 >= lower) & (x0 <= upper)) & jnp.all(A @ x0 - b <= feas_tol)
    at_lower, at_upper = x0 <= lower, (x0 >= upper) & (x0 > lower)
    # At a vertex of the box (every coordinate at a bound, as from 0) the working set's equality QP is trivial:
    # no step, the multipliers are the signed gradient. Release the most negative there without a solve.
    g0 = P @ x0 + q
    mult0 = jnp.where(width > 0, jnp.where(at_lower, g0, -g0), jnp.inf)
    vertex = jnp.all(at_lower | at_upper)
    j0 = jnp.argmin(mult0)
    release0 = vertex & (mult0[j0] < -1e-10 * (1.0 + jnp.max(jnp.abs(g0))))
    freed = release0 & (jnp.arange(n) == j0)
    start = _State(
        x=x0,
        at_lower=at_lower & ~freed,
        at_upper=at_upper & ~freed,
        slots=jnp.arange(k, dtype=jnp.int32),
        used=jnp.zeros((k,), bool),
        k=jnp.asarray(0, jnp.int32),
        done=~feasible | (vertex & ~release0),
    )
    s = jax.lax.while_loop(lambda s: ~s.done & (s.k < max_iter), body, start)
    converged = s.done & feasible

    def general(carry):
        # the barrier ties the data to the carried x, so the compiler cannot hoist the solve out of the loop (it
        # would then run every time)
        _, Pc, qc, Ac, bc = jax.lax.optimization_barrier((carry[0], P, q, A, b))
        G = jnp.concatenate([Ac, jnp.eye(n, dtype=dtype), -jnp.eye(n, dtype=dtype)])
        h = jnp.concatenate([bc, upper, -lower])
        x = jnp.clip(solve_qp(Pc, qc, G, h)[0], lower, upper)
        return x, jnp.asarray(True)

    # at most one pass: under vmap, taken only when some problem of the batch did not converge
    x = jax.lax.while_loop(lambda c: ~c[1], general, (s.x, converged))[0]
    return ActiveSetSolution(x, s.k, converged)

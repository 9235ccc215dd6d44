"""Frank-Wolfe steps shared by every projection-free learner (written once, here).

* `line_search_step`: the exact minimiser over ``sigma in [0, 1]`` of a beta-smooth quadratic along
  the segment ``[x, v]`` (Wan and Zhang, AAAI 2021, Lemma 4's x_in -> x_out; exact for quadratic surrogates).
* `fw_step`: one FW step on a surrogate with gradient ``c`` at ``x``, with line search or a given
  step size.
* `inner_frank_wolfe`: FW iterations on a smooth function, stopped when the FW gap falls below a
  tolerance or after a safety cap, counting LMO calls (BFW-TVC's inner loop, LOO-BOGD's SH-FW).

All take the set's warm-start LMO state and return the new one, so nuclear-norm balls stay fast.

Reference: Y. Wan and L. Zhang, "Projection-free Online Learning over Strongly Convex Sets", AAAI 2021
(arXiv:2010.08177), Lemma 4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit.sets import AbstractSet


def _vdot(a: Array, b: Array) -> Array:
    return jnp.vdot(a.ravel(), b.ravel())


def line_search_step(c: Array, d: Array, beta: Any) -> Float[Array, ""]:
    """``argmin_{sigma in [0,1]} sigma <c, d> + sigma^2 (beta / 2) ||d||^2`` (0 when ``d = 0``)."""
    dd = _vdot(d, d)
    gap = -_vdot(c, d)
    safe = jnp.where(dd > 0, beta * dd, 1.0)
    return jnp.where(dd > 0, jnp.clip(gap / safe, 0.0, 1.0), 0.0)


def fw_step(
    domain: AbstractSet,
    c: Array,
    x: Array,
    lmo_state: Any,
    *,
    beta: Any = None,
    sigma: Any = None,
) -> tuple[Array, Any, Float[Array, ""], Float[Array, ""]]:
    """One Frank-Wolfe step from ``x`` for a surrogate whose gradient at ``x`` is ``c``.

    ``v = lmo(c)``, ``d = v - x``; with ``beta`` the step is the exact line search of a beta-smooth
    quadratic (`line_search_step`); with ``sigma`` it is that fixed step (Hazan and Kale's OFW).

    Returns:
        ``(x_new, lmo_state, gap, sigma)`` with the FW gap ``<c, x - v> >= 0``.
    """
    if (beta is None) == (sigma is None):
        raise ValueError("fw_step needs exactly one of beta (line search) or sigma (fixed step)")
    v, lmo_state = domain.warm_lmo(c, lmo_state)
    d = v - x
    gap = -_vdot(c, d)
    step = line_search_step(c, d, beta) if sigma is None else jnp.asarray(sigma, dtype=x.dtype)
    return x + step * d, lmo_state, gap, step


def inner_frank_wolfe(
    domain: AbstractSet,
    grad: Callable[[Array], Array],
    x0: Array,
    lmo_state: Any,
    *,
    beta: Any,
    gap_tol: Any,
    max_iter: int,
    stop: Callable[[Array], Array] | None = None,
    step_on_exit: bool = False,
    active: Any = True,
) -> tuple[Array, Any, Int[Array, ""], Float[Array, ""]]:
    """Frank-Wolfe with line search on a beta-smooth function until ``gap <= gap_tol`` or ``max_iter`` steps.

    Runs as a ``lax.while_loop`` (jit/vmap safe). The gap is checked before each step, so an ``x0`` that
    already satisfies the tolerance costs one LMO call and is returned unchanged.

    Args:
        domain: the set K.
        grad: gradient of the smooth function.
        x0: the starting point in K.
        lmo_state: the set's warm-start state.
        beta: smoothness constant used by the line search (exact for quadratics).
        gap_tol: stop once the FW gap ``max_v <grad(x), x - v>`` is at most this.
        max_iter: safety cap on the number of LMO calls (static).
        stop: optional extra stopping rule ``stop(x) -> bool`` on the current iterate, checked with the
            gap after that iteration's LMO call (G&K 2022's SH-FW also stops once ``||x - y||^2 <= 3 eps``).
        step_on_exit: return the point after the step whose gap met the stopping rule instead of the point
            before it (BFW-TVC, Alg. 3 Step 19 of paper 000: ``hat y_{m+1} = y~_{tau+1}``); static.
        active: when false the call returns ``x0`` with no LMO call. Under ``vmap`` a batched while loop
            runs its body for every member until the last one stops; a member that has stopped (or is
            inactive) hands the LMO a zero direction, so an iterative LMO (the nuclear-norm ball's
            Lanczos) costs it one step instead of a full solve on a direction nobody uses.

    Returns:
        ``(x, lmo_state, lmo_calls, final_gap)``.
    """

    def cond(carry):
        _, _, calls, _, done = carry
        return (~done) & (calls < max_iter)

    def body(carry):
        x, state, calls, _, stopped = carry
        c = grad(x)
        c = jnp.where(stopped | (calls >= max_iter), jnp.zeros_like(c), c)  # only reached under vmap
        x_new, state, gap, _ = fw_step(domain, c, x, state, beta=beta)
        done = gap <= gap_tol
        if stop is not None:
            done = done | stop(x)
        return (x_new if step_on_exit else jnp.where(done, x, x_new)), state, calls + 1, gap, done

    zero = jnp.asarray(0, jnp.int32)
    inf = jnp.asarray(jnp.inf, dtype=x0.dtype)
    init = (x0, lmo_state, zero, inf, ~jnp.asarray(active))
    x, lmo_state, calls, gap, _ = jax.lax.while_loop(cond, body, init)
    return x, lmo_state, calls, gap

"""The blocked LOO chain of Garber and Kretzu 2022 (the part shared by LOO-BOGD, LOO-BBGD, LPM and LBPM).

* `separating_hyperplane_fw` (SH-FW, Algorithm 2): Frank-Wolfe on ``1/2 ||x - y||^2`` from a
  feasible start, stopped by the gap ``<x - y, x - v> <= eps`` or by ``||x - y||^2 <= 3 eps``; it runs
  through the shared `inner_frank_wolfe` with the set's warm-started LMO.
* `close_infeasible_projection` (Algorithm 3): SH-FW calls and pull steps ``y <- y - gamma (y - x)``
  until ``||x - y||^2 <= 3 eps``; returns ``(x, y)`` with ``x`` in K and ``y`` an infeasible projection.
* `LOOChain`: the blocked chain of Algorithms 4 and 9: gradients are summed over a block of ``K_b``
  rounds, one close infeasible projection per block; the paper pipelines it (the projection of block m's point
  is played in block m + 2); ``pipelined=False`` plays it in block m + 1.
* The parameters of Theorems 9 and 11 (`full_information_theory`, `bandit_theory`), from the
  choices the learners' ``from_theory`` take as keywords.
* `AbstractLOOChainLearner`: a learner holding the chain as its part ``chain``.
* `AbstractLOOBandit`: a chain learner wrapped in the one-point bandit adapter (Algorithm 9).

Reference: D. Garber and B. Kretzu, "New Projection-free Algorithms for Online Convex Optimization with Adaptive
Regret Guarantees", COLT 2022 (PMLR 178).
"""

import dataclasses
import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._bandit import AbstractOnePointBanditLearner
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.algorithms._fw import inner_frank_wolfe
from ocokit.sets import AbstractSet

MAX_ITER = 1000
"""The default safety cap on Algorithm 3's loop and on each SH-FW run (``max_outer_iter``, ``max_fw_iter``)."""


def _sq(a: Array) -> Array:
    return jnp.vdot(a.ravel(), a.ravel()).real


def _optional_leaf() -> Any:
    """A numeric field that may be ``None`` (a default computed from other parameters or from K), else ``> 0``."""
    return _checks.checked_field(
        _checks.optional(_checks.positive), default=None, converter=lambda v: v if v is None else jnp.asarray(v)
    )


def _int_leaf(value: Any) -> Array:
    """An integer hyperparameter (the block size) as an int32 leaf; a non-integer raises ``ValueError``."""
    arr = jnp.asarray(value)
    if not isinstance(value, jax.core.Tracer) and not jnp.issubdtype(arr.dtype, jnp.integer):
        if not bool(jnp.all(arr == jnp.round(arr))):
            raise ValueError(f"block_size must be an integer >= 1, got {value}")
    return arr.astype(jnp.int32)


# --------------------------------------------------------------------------------------------------
# Algorithms 2 and 3 of G&K 2022.


def separating_hyperplane_fw(
    domain: AbstractSet, y: Array, x1: Array, lmo_state: Any, *, eps: Any, max_iter: int, active: Any = True
) -> tuple[Array, Any, Int[Array, ""]]:
    """SH-FW (G&K 2022, Algorithm 2 and Lemma 6): FW on ``1/2 ||x - y||^2`` from ``x1 in K``.

    Iteration i: ``v_i = LOO(x_i - y)``; stop with ``x_i`` if ``<x_i - y, x_i - v_i> <= eps`` or
    ``||x_i - y||^2 <= 3 eps``; else ``x_{i+1} = x_i + sigma_i (v_i - x_i)`` with the exact line search
    ``sigma_i = clip(<y - x_i, v_i - x_i> / ||v_i - x_i||^2, 0, 1)``. Lemma 6: at most
    ``ceil(27 R^2/eps - 2)`` iterations; the output satisfies ``||x - y||^2 <= ||x1 - y||^2`` and either
    ``||x - y||^2 <= 3 eps`` or ``(y - z)^T (y - x) > 2 eps`` for all z in K. ``active=False``: returns
    ``x1`` with no call (see `inner_frank_wolfe`).

    Returns:
        ``(x, lmo_state, loo_calls)``.
    """
    thr = 3.0 * eps
    x, lmo_state, calls, _ = inner_frank_wolfe(
        domain,
        lambda x: x - y,
        x1,
        lmo_state,
        beta=1.0,
        gap_tol=eps,
        max_iter=max_iter,
        stop=lambda x: _sq(x - y) <= thr,
        active=active,
    )
    return x, lmo_state, calls


def close_infeasible_projection(
    domain: AbstractSet,
    x0: Array,
    y0: Array,
    lmo_state: Any,
    *,
    eps: Any,
    radius: Any,
    max_outer: int,
    max_fw: int,
    active: Any = True,
) -> tuple[Array, Array, Any, Int[Array, ""]]:
    """Close infeasible projection via a LOO (G&K 2022, Algorithm 3 and Lemma 7).

    ``y_1 = c + (y0 - c) / max(1, ||y0 - c|| / R)`` (projection onto the ball ``B(c, R)`` that contains
    K, with ``c = K.center()``); return ``(x0, y_1)`` if ``||x0 - y0||^2 <= 3 eps``; else repeat
    ``x_i = SH-FW(K, eps, x_{i-1}, y_i)`` and, while ``||x_i - y_i||^2 > 3 eps``, pull
    ``y_{i+1} = y_i - gamma (y_i - x_i)`` with ``gamma = 2 eps / ||x0 - y0||^2`` (Lemma 7). Lemma 7: the
    output has ``x in K``, ``||x - y||^2 <= 3 eps`` and ``||y - z||^2 <= ||y0 - z||^2`` for every z in K.

    Args:
        domain: the set K.
        x0: a feasible warm start.
        y0: the point to project.
        lmo_state: the set's warm-start LMO state.
        eps: the tolerance epsilon > 0.
        radius: R with K inside ``B(K.center(), R)``.
        max_outer, max_fw: safety caps on the outer loop and on each SH-FW run (static).
        active: when false the call is a no-op returning ``(x0, y0)`` with zero LOO calls (lets a blocked
            learner call it every round under ``vmap`` without ``lax.cond`` running both branches).

    Returns:
        ``(x, y, lmo_state, loo_calls)``.
    """
    c = domain.center().astype(y0.dtype)
    dist = jnp.sqrt(_sq(y0 - c))
    y1 = c + (y0 - c) / jnp.maximum(1.0, dist / radius)
    d0 = _sq(x0 - y0)
    thr = 3.0 * eps
    gamma = 2.0 * eps / jnp.where(d0 > 0, d0, 1.0)
    active = jnp.asarray(active)
    done0 = (d0 <= thr) | ~active

    def cond(carry):
        _, _, _, _, iters, done = carry
        return (~done) & (iters < max_outer)

    def body(carry):
        x, y, state, calls, iters, done = carry
        live = ~done & (iters < max_outer)  # false only under vmap, for a member that has stopped
        x_new, state, k = separating_hyperplane_fw(domain, y, x, state, eps=eps, max_iter=max_fw, active=live)
        far = _sq(x_new - y) > thr
        y_new = jnp.where(far, y - gamma * (y - x_new), y)
        return x_new, y_new, state, calls + k, iters + 1, ~far

    zero = jnp.asarray(0, jnp.int32)
    x, y, lmo_state, calls, _, _ = jax.lax.while_loop(cond, body, (x0, y1, lmo_state, zero, zero, done0))
    y = jnp.where(active, y, y0)
    return x, y, lmo_state, calls


# --------------------------------------------------------------------------------------------------
# The blocked chain (Algorithms 4 and 9 of G&K 2022, and of the reconstructions).


class _LOOChainState(eqx.Module):
    """The blocked OGD-without-feasibility chain's state."""

    x: Float[Array, "..."]  # x_{m-1}: the feasible point played in the current block m
    x_next: Float[Array, "..."]  # x_m, already projected, played in block m + 1 (pipelined only)
    y: Float[Array, "..."]  # y_t: the running infeasible iterate of the current chain
    y_next: Float[Array, "..."]  # y~_m: the start of the next block's chain (pipelined only)
    t: Int[Array, ""]  # rounds absorbed so far
    lmo_state: Any  # the set's warm-start LMO state
    oracle_calls: Int[Array, ""]  # LOO calls made by the last update (0 inside a block)


class LOOChain(_checks.Checked):
    """Blocked online gradient descent without feasibility, one close infeasible projection per block.

    ``step(state, grad, domain, eps)``: ``y_{t+1} = y_t - eta grad_t``; at the end of block m,
    ``(x_{m+1}, y~_{m+1}) = Alg3(K, x_{m-1}, y_{mK_b+1}, eps)``. Starts at ``x_0 = x_1 = y~_0 = K.center()``.

    Args:
        eta: step size > 0.
        block_size: ``K_b``, an integer >= 1 (an int32 leaf).
        radius: R > 0 with K inside ``B(K.center(), R)``; ``None`` uses ``K.diameter``.
        pipelined: play the projection of block m in block m + 2 (Algorithm 4) or m + 1 (static).
        max_outer_iter, max_fw_iter: safety caps on Algorithm 3's loop and on each SH-FW run (static).
    """

    eta: Float[Array, ""] = hyperparameter(_checks.positive)
    block_size: Int[Array, ""] = _checks.checked_field(_checks.positive, converter=_int_leaf)
    radius: Float[Array, ""] | None = _optional_leaf()
    pipelined: bool = eqx.field(static=True, default=True)
    max_outer_iter: int = _checks.checked_field(_checks.positive_int, static=True, default=MAX_ITER)
    max_fw_iter: int = _checks.checked_field(_checks.positive_int, static=True, default=MAX_ITER)

    def options(self) -> dict[str, Any]:
        """Its constructor arguments (a learner that wraps another passes them on)."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def init(self, domain: AbstractSet) -> _LOOChainState:
        """``x_0 = x_1 = y~_0 = y~_1 = K.center()``, the set's LMO state."""
        x0 = domain.center()
        zero = jnp.asarray(0, jnp.int32)
        return _LOOChainState(x=x0, x_next=x0, y=x0, y_next=x0, t=zero, lmo_state=domain.lmo_init(), oracle_calls=zero)

    def step(self, state: _LOOChainState, grad: Array, domain: AbstractSet, eps: Any) -> tuple[_LOOChainState, Array]:
        """One round: the gradient step and, at a block's end, the projection (``eps``: Algorithm 3's).

        Returns:
            ``(state, end)`` with ``end`` true when round t closed a block.
        """
        radius = domain.diameter if self.radius is None else self.radius
        dtype = state.x.dtype
        y = (state.y - self.eta * grad).astype(dtype)
        t = state.t + 1
        end = (t % self.block_size) == 0
        xp, yp, lmo_state, calls = close_infeasible_projection(
            domain,
            state.x,
            y,
            state.lmo_state,
            eps=eps,
            radius=radius,
            max_outer=self.max_outer_iter,
            max_fw=self.max_fw_iter,
            active=end,
        )
        xp, yp = xp.astype(dtype), yp.astype(dtype)
        if self.pipelined:  # Alg. 4: x_{m+1} (from block m) is played in block m + 2; block m + 1 plays x_m
            new = _LOOChainState(
                x=jnp.where(end, state.x_next, state.x),
                x_next=jnp.where(end, xp, state.x_next),
                y=jnp.where(end, state.y_next, y),
                y_next=jnp.where(end, yp, state.y_next),
                t=t,
                lmo_state=lmo_state,
                oracle_calls=calls,
            )
        else:  # the projection of block m is played in block m + 1
            x = jnp.where(end, xp, state.x)
            y = jnp.where(end, yp, y)
            new = _LOOChainState(x=x, x_next=x, y=y, y_next=y, t=t, lmo_state=lmo_state, oracle_calls=calls)
        return new, end


# --------------------------------------------------------------------------------------------------
# Theory parameters (Theorems 9 and 11 of G&K 2022).


def _blocks_theory(T: int, factor: float) -> int:
    return int(min(T, max(1, math.floor(factor * math.sqrt(T)))))


def _chain_radius(info: ProblemInfo, who: str, radius: float | None) -> float:
    """R: the given one, else the diameter of K (valid since the centre is in K)."""
    return info.require("diameter", who) if radius is None else float(radius)


def full_information_theory(
    info: ProblemInfo, who: str, radius: float | None, eta_constant: float, eps_constant: float, block_constant: float
) -> dict[str, Any]:
    """Theorem 9 of G&K 2022 (LOO-BOGD): ``eta = c_eta (R/G_f) T^{-3/4}``, ``eps = c_eps R^2 T^{-1/2}``,
    ``K_b = floor(c_K T^{1/2})`` and ``R`` (``radius``: K inside ``B(K.center(), R)``; ``None`` uses ``K.diameter``,
    always valid). The theorem's constants ``c_eta, c_eps, c_K`` are 1, 60 and 5 (the exponents in T stay)."""
    for name, value in (
        ("eta_constant", eta_constant),
        ("eps_constant", eps_constant),
        ("block_constant", block_constant),
    ):
        _checks.positive(name, value)
    T, G, R = info.horizon, info.require("grad_bound", who), _chain_radius(info, who, radius)
    return {
        "eta": eta_constant * R / G * T**-0.75,
        "eps": eps_constant * R**2 / math.sqrt(T),
        "block_size": _blocks_theory(T, block_constant),
        "radius": R,
    }


def bandit_theory(
    info: ProblemInfo, who: str, M: float, c: float | None, radius: float | None, eta_constant: float, block_constant
) -> dict[str, Any]:
    """Theorem 11 of G&K 2022 (LOO-BBGD): ``eta = c_eta (R/sqrt(nM)) T^{-3/4}``, ``delta = min(c T^{-1/4}, r/2)``,
    ``K_b = c_K T^{1/2}`` and ``R`` (as in `full_information_theory`); ``c`` defaults to the theorem's
    ``20 R sqrt(nM)``, ``c_K`` to its ``6 n M`` and ``c_eta`` is 1 in the theorem."""
    _checks.positive("eta_constant", eta_constant)
    T, n = info.horizon, math.prod(info.domain.shape)
    R = _chain_radius(info, who, radius)
    r = info.require("inner_radius", who)
    c = 20.0 * R * math.sqrt(n * M) if c is None else c
    block_c = 6.0 * n * M if block_constant is None else block_constant
    for name, v in (("c", c), ("block_constant", block_c)):
        _checks.positive(name, v)
    return {
        "eta": eta_constant * R / math.sqrt(n * M) * T**-0.75,
        "delta": min(c * T**-0.25, r / 2),
        "block_size": _blocks_theory(T, block_c),
        "radius": R,
    }


# --------------------------------------------------------------------------------------------------
# The learners that run the chain.


class AbstractLOOChainLearner(AbstractLearner):
    """A learner that runs the blocked chain, held as its part ``chain`` (`LOOChain`; ``learner.chain.eta``).

    Its ``from_theory`` sets the chain's parameters by Theorem 9 of G&K 2022 (`full_information_theory`), or
    Theorem 11 (`bandit_theory`) for a bandit learner, whose choices it takes as keywords.
    """

    chain: eqx.AbstractVar[LOOChain]


class AbstractLOOBandit(AbstractOnePointBanditLearner, AbstractLOOChainLearner):
    """A bandit chain learner (LOO-BBGD, LBPM): a full-information chain learner wrapped in the one-point adapter.

    Its parts are those of the learner it wraps, plus the smoothing radius ``delta``, and ``eps`` may be
    ``None``: Algorithm 9 of G&K 2022 then uses the tolerance ``eps = delta^2 / 3`` (`inner_eps`). Its
    ``from_theory`` follows Theorem 11 (`bandit_theory`).
    """

    eps: eqx.AbstractVar[Float[Array, ""] | None]

    def inner_eps(self) -> Any:
        """The tolerance of the wrapped learner: ``eps``, or ``delta^2 / 3`` unless given."""
        return self.delta**2 / 3.0 if self.eps is None else self.eps

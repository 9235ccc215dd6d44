"""The online Frank-Wolfe player: the surrogate's running sums and one FW step per round (written once).

Every OFW-type learner (:class:`~ocokit.algorithms.OFW`, :class:`~ocokit.algorithms.OFWLineSearch`,
:class:`~ocokit.algorithms.SCOFW`, :class:`~ocokit.algorithms.OPDP`, :class:`~ocokit.algorithms.OFWTVC`,
:class:`~ocokit.algorithms.SCOFWTVC`) holds an :class:`OFWPlayer` and feeds it one linear loss ``c_t`` per
round; the player keeps the sums of its surrogate ``F_t`` and plays one warm-started LMO call on
``grad F_t(x_t)`` (:func:`ocokit.algorithms._fw.fw_step`). The step rules (:data:`RULES`):

* ``"decaying"``: ``F_t(x) = eta <S_t, x> + ||x - x_a||^2``, ``sigma_n = min(1, sigma0 / sqrt(n))`` (Hazan and
  Kale 2012), with ``S_t`` the sum of the linear losses since the anchor ``x_a`` and n the rounds since it;
* ``"line_search"``: the same surrogate, ``sigma`` the exact line search (Hessian ``2 I``; paper 001, Alg. 1);
* ``"strongly_convex"``: ``F_t(x) = sum_tau <c_tau, x> + lam/2 ||x - x_tau||^2`` with the exact line search
  (paper 001, Alg. 2; paper 000, Alg. 2 with ``lam = 2 C_1``), kept as running means ``S_t / t``, ``P_t / t``
  of the linear losses and the iterates: ``F_t / t`` has the same ``v_t`` and ``sigma_t`` and avoids the
  cancellation in ``t x_t - P_t`` (both terms grow linearly in t).

References: E. Hazan and S. Kale, "Projection-free Online Learning", ICML 2012. Y. Wan and L. Zhang,
"Projection-free Online Learning over Strongly Convex Sets", AAAI 2021 (paper 001). Y. Wang, Y. Wan and L. Zhang,
"Revisiting Projection-Free Online Learning with Time-Varying Constraints", AAAI 2025 (paper 000).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._fw import fw_step
from ocokit.sets import AbstractSet

RULES = ("decaying", "line_search", "strongly_convex")
"""The step rules of :class:`OFWPlayer`."""


class _OFWPlayerState(eqx.Module):
    """The player's sums, its iterate and the diagnostics of its last step (arrays only, fixed shapes)."""

    x: Float[Array, "..."]  # x_t, the decision to play
    anchor: Float[Array, "..."]  # x_a, the centre of the regulariser ||x - x_a||^2 (x_1 until a restart)
    linear: Float[Array, "..."]  # S_t, the sum (for "strongly_convex" the mean S_t / t) of the linear losses
    points: Float[Array, "..."] | None  # P_t / t, the mean of the iterates ("strongly_convex" only)
    rounds: Int[Array, ""]  # n: rounds absorbed since the anchor
    lmo_state: Any  # the set's warm-start LMO state
    gap: Float[Array, ""]  # FW gap <grad F_t(x_t), x_t - v_t> of the last step
    sigma: Float[Array, ""]  # step sigma of the last step
    lmo_iterations: Int[Array, ""]  # inner iterations of the last LMO call
    domain: AbstractSet  # K


class OFWPlayer(eqx.Module):
    """One online Frank-Wolfe step per round on the surrogate of the rule ``rule`` (one of :data:`RULES`).

    ``init(domain)`` starts at ``x_1 = K.center()``; ``step(state, c, x, ...)`` absorbs the linear loss ``c``
    of the round in which ``x`` was played and returns the state whose ``x`` is ``x_{t+1}``::

        v_t = argmin_{v in K} <grad F_t(x_t), v>,   x_{t+1} = x_t + sigma_t (v_t - x_t)

    Args:
        rule: the surrogate and step rule (static), see the module docstring.
    """

    rule: str = eqx.field(static=True, default="line_search")

    def __check_init__(self):
        _checks.one_of("rule", self.rule, RULES)

    def init(self, domain: AbstractSet) -> _OFWPlayerState:
        """The state before round 1: ``x_1 = K.center()``, empty sums, the set's LMO state."""
        x1 = domain.center()
        zero = jnp.zeros((), dtype=x1.dtype)
        return _OFWPlayerState(
            x=x1,
            anchor=x1,
            linear=jnp.zeros_like(x1),
            points=jnp.zeros_like(x1) if self.rule == "strongly_convex" else None,
            rounds=jnp.asarray(0, jnp.int32),
            lmo_state=domain.lmo_init(),
            gap=zero,
            sigma=zero,
            lmo_iterations=jnp.asarray(0, jnp.int32),
            domain=domain,
        )

    def step(
        self,
        state: _OFWPlayerState,
        c: Array,
        x: Array,
        *,
        eta: Any = 1.0,
        sigma0: Any = 2.0,
        lam: Any = 1.0,
        lagged: bool = False,
        restart: Any = None,
    ) -> _OFWPlayerState:
        """Absorb the linear loss ``c`` of the round that played ``x``, then one FW step.

        Args:
            state: the player's state.
            c: the round's linear loss (a gradient or a surrogate's gradient at ``x``).
            x: the point played this round (``state.x``, possibly cast by the engine).
            eta: the scale of the linear part (``"decaying"``, ``"line_search"``).
            sigma0: the step scale of ``"decaying"``.
            lam: the strong-convexity modulus of ``"strongly_convex"``.
            lagged: sum the linear losses before this round only (``"decaying"``, ``"line_search"``; static).
            restart: when true (traced), a new epoch starts at this round: the sum restarts with ``c``, the
                regulariser is re-centred at ``x`` and the step counter restarts at 1 (``"decaying"``,
                ``"line_search"``; OFW-TVC's doubling).
        """
        dtype = x.dtype
        rounds, anchor, previous = state.rounds, state.anchor, state.linear
        if restart is not None:
            rounds = jnp.where(restart, 0, rounds)
            anchor = jnp.where(restart, x, anchor)
            previous = jnp.where(restart, jnp.zeros_like(c), previous)
        rounds = rounds + 1
        points = state.points
        if self.rule == "strongly_convex":  # running means S_t / t, P_t / t
            w = 1.0 / rounds.astype(dtype)
            linear = previous + w * (c - previous)
            points = points + w * (x - points)
            direction, beta, sigma = linear + lam * (x - points), lam, None  # grad F_t(x_t) / t, Hessian lam I
        else:
            linear = previous + c
            summed = previous if lagged else linear
            direction = eta * summed + 2.0 * (x - anchor)  # grad F_t(x_t), eq. (3) of 001
            if self.rule == "line_search":
                beta, sigma = 2.0, None
            else:
                beta, sigma = None, jnp.minimum(1.0, sigma0 / jnp.sqrt(rounds.astype(dtype)))
        x_new, lmo_state, gap, step = fw_step(state.domain, direction, x, state.lmo_state, beta=beta, sigma=sigma)
        return _OFWPlayerState(
            x=x_new.astype(dtype),
            anchor=anchor,
            linear=linear.astype(dtype),
            points=None if points is None else points.astype(dtype),
            rounds=rounds,
            lmo_state=lmo_state,
            gap=jnp.asarray(gap, dtype),
            sigma=jnp.asarray(step, dtype),
            lmo_iterations=jnp.asarray(state.domain.lmo_calls(lmo_state), jnp.int32),
            domain=state.domain,
        )

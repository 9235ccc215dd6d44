"""The online Frank-Wolfe player: the surrogate's running sums and one FW step per round, under a typed step rule.

Every OFW-type learner ([`OFW`][ocokit.algorithms.OFW], [`OFWLineSearch`][ocokit.algorithms.OFWLineSearch],
[`SCOFW`][ocokit.algorithms.SCOFW], [`OPDP`][ocokit.algorithms.OPDP], [`OFWTVC`][ocokit.algorithms.OFWTVC],
[`SCOFWTVC`][ocokit.algorithms.SCOFWTVC]) holds a step rule (an `AbstractOFWStep`) and feeds it one linear
loss ``c_t`` per round; the rule keeps the sums of its surrogate ``F_t`` and plays one warm-started LMO call on
``grad F_t(x_t)`` (`fw_step`). The rules, each with only its own arguments:

* `DecayingStep`: ``F_t(x) = eta <S_t, x> + ||x - x_a||^2``, ``sigma_n = min(1, sigma0 / sqrt(n))`` (Hazan
  and Kale 2012), with ``S_t`` the sum of the linear losses since the anchor ``x_a`` and n the rounds since it;
* `LineSearchStep`: the same surrogate, ``sigma`` the exact line search (Hessian ``2 I``; paper 001,
  Alg. 1);
* `StronglyConvexStep`: ``F_t(x) = sum_tau <c_tau, x> + lam/2 ||x - x_tau||^2`` with the exact line search
  (paper 001, Alg. 2; paper 000, Alg. 2 with ``lam = 2 C_1``), kept as running means ``S_t / t``, ``P_t / t`` of
  the linear losses and the iterates: ``F_t / t`` has the same ``v_t`` and ``sigma_t`` and avoids the
  cancellation in ``t x_t - P_t`` (both terms grow linearly in t).

References: E. Hazan and S. Kale, "Projection-free Online Learning", ICML 2012. Y. Wan and L. Zhang,
"Projection-free Online Learning over Strongly Convex Sets", AAAI 2021 (paper 001). Y. Wang, Y. Wan and L. Zhang,
"Revisiting Projection-Free Online Learning with Time-Varying Constraints", AAAI 2025 (paper 000).
"""

import abc
import dataclasses
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit.algorithms._fw import fw_step
from ocokit.sets import AbstractSet


class _OFWPlayerState(eqx.Module):
    """The player's sums, its iterate and the diagnostics of its last step (arrays only, fixed shapes)."""

    x: Float[Array, "..."]  # x_t, the decision to play
    anchor: Float[Array, "..."]  # x_a, the centre of the regulariser ||x - x_a||^2 (x_1 until a restart)
    linear: Float[Array, "..."]  # S_t, the sum (StronglyConvexStep: the mean S_t / t) of the linear losses
    points: Float[Array, "..."] | None  # P_t / t, the mean of the iterates (StronglyConvexStep only)
    rounds: Int[Array, ""]  # n: rounds absorbed since the anchor
    lmo_state: Any  # the set's warm-start LMO state
    gap: Float[Array, ""]  # FW gap <grad F_t(x_t), x_t - v_t> of the last step
    sigma: Float[Array, ""]  # step sigma of the last step
    lmo_iterations: Int[Array, ""]  # inner iterations of the last LMO call
    domain: AbstractSet  # K


class AbstractOFWStep(eqx.Module):
    """The online Frank-Wolfe player under one step rule: the rule's type fixes the surrogate and the step.

    ``init(domain)`` starts at ``x_1 = K.center()``; ``step(state, c, x)`` absorbs the linear loss ``c`` of the
    round in which ``x`` was played and returns the state whose ``x`` is ``x_{t+1}``::

        v_t = argmin_{v in K} <grad F_t(x_t), v>,   x_{t+1} = x_t + sigma_t (v_t - x_t)

    Both are written here once. A final rule says how ``F_t`` absorbs the round (`absorb`, which gives
    ``grad F_t(x_t)``), how ``sigma_t`` is chosen (`step_size`) and whether ``F_t`` keeps the mean of the
    iterates (``keeps_points``). A learner whose parameters vary by round builds its rule each round.
    """

    keeps_points: eqx.AbstractClassVar[bool]

    @abc.abstractmethod
    def absorb(self, state: _OFWPlayerState, c: Array, x: Array, rounds: Array) -> tuple[Array, Any, Array]:
        """``(linear, points, grad F_t(x_t))``: the sums of ``F_t`` after the round that played ``x`` with linear
        loss ``c``, and the surrogate's gradient there (``rounds``: n, this round included)."""

    @abc.abstractmethod
    def step_size(self, rounds: Array, dtype: Any) -> tuple[Any, Any]:
        """``(beta, sigma)`` of `fw_step`: the Hessian scale of ``F_t`` for the
        exact line search, or a fixed step (the other ``None``)."""

    def init(self, domain: AbstractSet) -> _OFWPlayerState:
        """The state before round 1: ``x_1 = K.center()``, empty sums, the set's LMO state."""
        x1 = domain.center()
        zero = jnp.zeros((), dtype=x1.dtype)
        return _OFWPlayerState(
            x=x1,
            anchor=x1,
            linear=jnp.zeros_like(x1),
            points=jnp.zeros_like(x1) if self.keeps_points else None,
            rounds=jnp.asarray(0, jnp.int32),
            lmo_state=domain.lmo_init(),
            gap=zero,
            sigma=zero,
            lmo_iterations=jnp.asarray(0, jnp.int32),
            domain=domain,
        )

    def step(self, state: _OFWPlayerState, c: Array, x: Array) -> _OFWPlayerState:
        """Absorb the linear loss ``c`` (a gradient, or a surrogate's gradient, at ``x``) of the round that played
        ``x`` (``state.x``, possibly cast by the engine), then one FW step."""
        dtype = x.dtype
        rounds = state.rounds + 1
        linear, points, direction = self.absorb(state, c, x, rounds)
        beta, sigma = self.step_size(rounds, dtype)
        x_new, lmo_state, gap, step = fw_step(state.domain, direction, x, state.lmo_state, beta=beta, sigma=sigma)
        return _OFWPlayerState(
            x=x_new.astype(dtype),
            anchor=state.anchor,
            linear=linear.astype(dtype),
            points=None if points is None else points.astype(dtype),
            rounds=rounds,
            lmo_state=lmo_state,
            gap=jnp.asarray(gap, dtype),
            sigma=jnp.asarray(step, dtype),
            lmo_iterations=jnp.asarray(state.domain.lmo_calls(lmo_state), jnp.int32),
            domain=state.domain,
        )


class AbstractAnchoredStep(AbstractOFWStep):
    """A rule on ``F_t(x) = eta <S_t, x> + ||x - x_a||^2`` (eq. 3 of 001), ``grad F_t(x_t) = eta S_t + 2 (x_t - x_a)``.

    ``S_t`` sums the linear losses since the anchor ``x_a`` (before this round only if ``lagged``);
    `restarted` starts a new epoch.
    """

    eta: eqx.AbstractVar[Any]
    lagged: eqx.AbstractVar[bool]
    keeps_points: ClassVar[bool] = False

    def absorb(self, state, c, x, rounds):
        del rounds
        linear = state.linear + c
        summed = state.linear if self.lagged else linear
        return linear, None, self.eta * summed + 2.0 * (x - state.anchor)

    def restarted(self, state: _OFWPlayerState, restart: Array, x: Array) -> _OFWPlayerState:
        """The state where, when ``restart`` (traced) is true, a new epoch starts at this round: the sum restarts
        with this round's loss, the regulariser is re-centred at ``x`` and the step counter restarts at 1 (OFW-TVC's
        doubling)."""
        return dataclasses.replace(
            state,
            rounds=jnp.where(restart, 0, state.rounds),
            anchor=jnp.where(restart, x, state.anchor),
            linear=jnp.where(restart, jnp.zeros_like(state.linear), state.linear),
        )


class DecayingStep(AbstractAnchoredStep):
    """Hazan and Kale's OFW step: ``sigma_n = min(1, sigma0 / sqrt(n))``, n the rounds since the anchor.

    Args:
        eta: the scale of the linear part of ``F_t``.
        sigma0: the step scale.
        lagged: sum the linear losses before this round only (static).
    """

    eta: Any
    sigma0: Any
    lagged: bool = eqx.field(static=True, default=False)

    def step_size(self, rounds, dtype):
        return None, jnp.minimum(1.0, self.sigma0 / jnp.sqrt(rounds.astype(dtype)))


class LineSearchStep(AbstractAnchoredStep):
    """The exact line search of ``F_t`` (Hessian ``2 I``; paper 001, Algorithm 1, line 6).

    Args:
        eta: the scale of the linear part of ``F_t``.
    """

    eta: Any
    lagged: ClassVar[bool] = False

    def step_size(self, rounds, dtype):
        del rounds, dtype
        return 2.0, None


class StronglyConvexStep(AbstractOFWStep):
    """SC-OFW's step: ``F_t(x) = sum_tau <c_tau, x> + lam/2 ||x - x_tau||^2`` with the exact line search.

    Kept as the running means ``S_t / t`` and ``P_t / t`` (``grad F_t(x_t) / t = S_t / t + lam (x_t - P_t / t)``,
    Hessian ``lam I``).

    Args:
        lam: the strong-convexity modulus of ``F_t`` per round.
    """

    lam: Any
    keeps_points: ClassVar[bool] = True

    def absorb(self, state, c, x, rounds):
        w = 1.0 / rounds.astype(x.dtype)
        linear = state.linear + w * (c - state.linear)
        points = state.points + w * (x - state.points)
        return linear, points, linear + self.lam * (x - points)

    def step_size(self, rounds, dtype):
        del rounds, dtype
        return self.lam, None

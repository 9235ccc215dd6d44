"""The problem (environment) contract: round data, loss, constraints, constants and comparators."""

from __future__ import annotations

import abc
import math
from typing import Any

import equinox as eqx
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit.sets import AbstractSet


class ProblemConstants(eqx.Module):
    """Known constants of a problem, used by learners' theory-driven defaults (``from_theory``).

    Unknown constants are ``nan``; a learner whose defaults need one raises ``ValueError`` naming it.
    Papers use clashing letters for these (G is a gradient bound in 000/001 and a constraint bound in
    003), so the fields are named by meaning.

    Args:
        grad_bound: bound on ``||grad f_t(x)||`` over K.
        loss_bound: bound on ``|f_t(x)|`` over K.
        constraint_bound: bound on ``|g_t^n(x)|`` over K (G of paper 003).
        constraint_grad_bound: bound on ``||grad g_t^n(x)||`` over K.
        strong_convexity: modulus ``alpha`` with ``f(y) >= f(x) + <grad f(x), y - x> + alpha/2 ||y - x||^2``
            (0 when the losses are merely convex).
        smoothness: Lipschitz constant of ``grad f_t`` (``nan`` when unknown).
    """

    grad_bound: float = math.nan
    loss_bound: float = math.nan
    constraint_bound: float = math.nan
    constraint_grad_bound: float = math.nan
    strong_convexity: float = 0.0
    smoothness: float = math.nan


class AbstractProblem(eqx.Module):
    """An online constrained problem: the environment side of the game.

    Round ``t`` (1-based) is generated from ``episode(env_key, T)`` (per-run constants drawn once, such
    as a fixed constraint matrix or a permutation) and ``round_data(episode, key_t, t)`` with
    ``key_t = fold_in(env_key, t)``. Nothing depends on the learner, so every learner in a comparison
    faces the identical rounds (common random numbers). ``loss(data, x)`` and ``constraints(data, x)``
    (shape ``(N,)``; ``g <= 0`` is wanted) are pure functions; gradients come from ``jax.grad``.

    With memory (``memory() = h > 1``) the loss takes the last ``h`` decisions, stacked oldest first with
    shape ``(h, *domain.shape)``; constraints still take the current decision.

    Optional comparators: ``best_fixed`` (the best fixed point feasible for every round, for static
    regret) and ``round_optimum`` (the per-round constrained optimum, for dynamic regret). The default
    returns ``None``, and the matching regret is then not reported.
    """

    domain: eqx.AbstractVar[AbstractSet]

    @property
    @abc.abstractmethod
    def num_constraints(self) -> int:
        """Number N of constraint functions (0 for an unconstrained problem)."""

    @abc.abstractmethod
    def round_data(self, episode: Any, key: PRNGKeyArray, t: Int[Array, ""]) -> Any:
        """Data of round ``t`` (1-based), a pytree of arrays with fixed shapes."""

    @abc.abstractmethod
    def loss(self, data: Any, x: Float[Array, "..."]) -> Float[Array, ""]:
        """``f_t(x)``."""

    @abc.abstractmethod
    def constraints(self, data: Any, x: Float[Array, "..."]) -> Float[Array, " N"]:
        """``g_t(x)``, shape ``(N,)``."""

    def episode(self, key: PRNGKeyArray, T: int) -> Any:
        """Per-run constants drawn once before round 1 (none by default)."""
        del key, T
        return None

    def constants(self) -> ProblemConstants:
        """Known constants for theory-driven learner defaults (all unknown by default)."""
        return ProblemConstants()

    def memory(self) -> int:
        """Number h of past decisions the loss depends on (1: no memory)."""
        return 1

    def best_fixed(self, episode: Any, env_key: PRNGKeyArray, T: int) -> Float[Array, "..."] | None:
        """``argmin_{x in K} sum_t f_t(x)`` s.t. ``g_t(x) <= 0`` for all t, or ``None`` if not provided."""
        del episode, env_key, T
        return None

    def round_optimum(self, data: Any) -> Float[Array, "..."] | None:
        """``argmin_{x in K} f_t(x)`` s.t. ``g_t(x) <= 0``, or ``None`` if not provided."""
        del data
        return None

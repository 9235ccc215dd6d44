"""The problem (environment) contract: round data, loss, constraints, constants and comparators."""

import abc
import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit.sets import AbstractSet


class ProblemConstants(eqx.Module):
    """Known constants of a problem, used by learners' theory-driven defaults (``from_theory``).

    Unknown constants are ``nan``; a learner whose defaults need one raises ``ValueError`` naming it.
    Papers use clashing letters for these (G is a gradient bound in Wang, Wan and Zhang and in Wan and Zhang, and a
    constraint bound in Wang, Yan and Liu), so the fields are named by meaning.

    Args:
        grad_bound: bound on ``||grad f_t(x)||`` over K.
        loss_bound: bound on ``|f_t(x)|`` over K.
        constraint_bound: bound on ``|g_t^n(x)|`` over K (G of Wang, Yan and Liu).
        constraint_grad_bound: bound on ``||grad g_t^n(x)||`` over K.
        strong_convexity: modulus ``alpha`` with ``f(y) >= f(x) + <grad f(x), y - x> + alpha/2 ||y - x||^2``
            (0 when the losses are merely convex).
        smoothness: Lipschitz constant of ``grad f_t`` (``nan`` when unknown).
        constraint_smoothness: Lipschitz constant of every ``grad g_t^n`` (``L_g`` of Qiu and Wei 2020).
        constraint_sum_bound: bound on ``sum_n |g_t^n(x)|`` over K (their ``G``; at most N ``constraint_bound``).
        constraint_grad_sum_bound: bound on ``sum_n ||grad g_t^n(x)||`` over K (their ``H``; at most
            N ``constraint_grad_bound``).

    Gradient bounds are in the Euclidean norm; a problem that also knows them in another dual norm declares it
    ([`constants_in`][ocokit.problems.AbstractProblem.constants_in]).
    """

    grad_bound: float = math.nan
    loss_bound: float = math.nan
    constraint_bound: float = math.nan
    constraint_grad_bound: float = math.nan
    strong_convexity: float = 0.0
    smoothness: float = math.nan
    constraint_smoothness: float = math.nan
    constraint_sum_bound: float = math.nan
    constraint_grad_sum_bound: float = math.nan


class AbstractProblem(eqx.Module):
    """An online constrained problem: the environment side of the game.

    Round ``t`` (1-based) is generated from ``episode(env_key, T)`` (per-run constants drawn once, such
    as a fixed constraint matrix or a permutation) and ``round_data(episode, key_t, t)`` with
    ``key_t = fold_in(env_key, t)``. Nothing depends on the learner, so every learner in a comparison
    faces the identical rounds (common random numbers). ``loss(data, x)`` and ``constraints(data, x)``
    (shape ``(N,)``; ``g <= 0`` is wanted) are pure functions; gradients come from ``jax.grad``.

    With memory (``memory() = h > 1``) the loss takes the last ``h`` decisions, stacked oldest first with
    shape ``(h, *domain.shape)``; constraints still take the current decision.

    Everything a learner, the feedback or the engine may ask of a problem is declared here, each with a
    documented default (never found by attribute sniffing):

    * ``constraint_structure`` (``"general"``, ``"affine"`` or ``"log_capacity"``) with
      [`affine_constraints`][ocokit.problems.AbstractProblem.affine_constraints] /
      [`log_capacity_constraint`][ocokit.problems.AbstractProblem.log_capacity_constraint]: the structure of ``g_t``
      that per-round
      solvers exploit (COLDQ's hinge-proximal step).
    * [`memory`][ocokit.problems.AbstractProblem.memory],
      [`initial_history`][ocokit.problems.AbstractProblem.initial_history]: costs with memory of the last ``h``
      decisions.
    * [`prediction`][ocokit.problems.AbstractProblem.prediction],
      [`prediction_lookahead`][ocokit.problems.AbstractProblem.prediction_lookahead]: the model ``l_k`` of round k's
      cost a simulator
      predicts and how far ahead it answers (Ye et al., arXiv 2024).
    * [`constants`][ocokit.problems.AbstractProblem.constants]: known constants for theory-driven learner defaults.
    * Comparators: [`best_fixed`][ocokit.problems.AbstractProblem.best_fixed] (the best fixed point feasible for every
      round, for static regret)
      and [`round_optimum`][ocokit.problems.AbstractProblem.round_optimum] (the per-round constrained optimum, for
      dynamic regret). The default
      returns ``None``, and the matching regret is then not reported.
    """

    domain: eqx.AbstractVar[AbstractSet]

    constraint_structure: ClassVar[str] = "general"
    """The declared structure of ``g_t``: ``"affine"`` (``g_t(x) = A_t x - b_t``, see
    [`affine_constraints`][ocokit.problems.AbstractProblem.affine_constraints]), ``"log_capacity"`` (see
    [`log_capacity_constraint`][ocokit.problems.AbstractProblem.log_capacity_constraint]) or ``"general"``
    (smooth convex, nothing more known; the default)."""

    @property
    @abc.abstractmethod
    def num_constraints(self) -> int:
        """Number N of constraint functions (0 for an unconstrained problem).

        A problem whose N is fixed declares it as a class attribute, ``num_constraints: ClassVar[int] = N``.
        """

    @abc.abstractmethod
    def round_data(self, episode: Any, key: PRNGKeyArray, t: Int[Array, ""]) -> Any:
        """Data of round ``t`` (1-based), a pytree of arrays with fixed shapes."""

    @abc.abstractmethod
    def loss(self, data: Any, x: Float[Array, "..."]) -> Float[Array, ""]:
        """``f_t(x)``."""

    @abc.abstractmethod
    def constraints(self, data: Any, x: Float[Array, "..."]) -> Float[Array, " N"]:
        """``g_t(x)``, shape ``(N,)``."""

    def affine_constraints(self, data: Any) -> tuple[Float[Array, "N d"], Float[Array, " N"]]:
        """``(A_t, b_t)`` with ``g_t(x) = A_t x - b_t``, for ``constraint_structure == "affine"``.

        The default linearises ``g_t`` at the origin (exact for affine constraints): ``A_t = J g_t(0)``,
        ``b_t = -g_t(0)``. Problems that know their matrices override it.
        """
        zero = jnp.zeros(self.domain.shape, dtype=jnp.result_type(float))
        A = jax.jacfwd(lambda x: self.constraints(data, x))(zero)
        return A, -self.constraints(data, zero)

    def log_capacity_constraint(self, data: Any) -> tuple[Array, Array, Array]:
        """``(d, s, r)`` describing ``g_t(x) = d - sum_i s_i ln(1 + r_i x_i)``, for
        ``constraint_structure == "log_capacity"`` (the job scheduling of Wang, Yan and Liu); no default."""
        raise NotImplementedError(
            f"{type(self).__name__} declares constraint_structure={self.constraint_structure!r}, "
            "not 'log_capacity', and defines no log_capacity_constraint(data) -> (d, s, r)"
        )

    def episode(self, key: PRNGKeyArray, T: int) -> Any:
        """Per-run constants drawn once before round 1 (none by default)."""
        del key, T
        return None

    def constants(self) -> ProblemConstants:
        """Known constants for theory-driven learner defaults (all unknown by default)."""
        return ProblemConstants()

    constant_norms: ClassVar[tuple[str, ...]] = ()
    """Dual norms besides l2 (``"linf"``, say) in which the problem also declares its constants
    ([`constants_in`][ocokit.problems.AbstractProblem.constants_in]); none by default."""

    def constants_in(self, norm: str) -> ProblemConstants:
        """The constants with every gradient bound in the dual norm ``norm``, one of
        [`constant_norms`][ocokit.problems.AbstractProblem.constant_norms]; a learner whose geometry is not
        Euclidean reads them (the entropic mirror prox: ``"linf"``)."""
        raise ValueError(f"{type(self).__name__} declares its constants in l2 only, not in {norm!r}")

    constraints_fixed: ClassVar[bool] = False
    """Whether ``g_t`` is the same known function every round
    ([`fixed_constraints`][ocokit.problems.AbstractProblem.fixed_constraints]); ``False`` by default."""

    def fixed_constraints(self, x: Float[Array, "..."]) -> Float[Array, " N"]:
        """``g(x)``, the constraints of every round, for a problem that declares ``constraints_fixed``."""
        raise NotImplementedError(f"{type(self).__name__} does not declare fixed constraints (constraints_fixed)")

    def memory(self) -> int:
        """Number h of past decisions the loss depends on (1: no memory)."""
        return 1

    def initial_history(self) -> Array | None:
        """The fixed decisions ``x_{2-h}, ..., x_0`` before round 1 (shape ``(h - 1, *domain.shape)``, oldest
        first) of a problem with memory whose costs start from a given initial condition (Ye et al.:
        ``x_t = x_0`` for ``t <= 0``); ``None`` (default): the engine repeats ``x_1``."""
        return None

    def prediction(self, data: Any, x: Array) -> Array:
        """The model ``l_k(x)`` of round k's cost (``data`` is round k's data) that a prediction oracle
        returns (Ye et al., Assumption 3: ``|l_k - f_k| <= phi_k``); the default is exact: ``f_k``."""
        return self.loss(data, x)

    def prediction_lookahead(self) -> int | None:
        """How many rounds past the coming one a prediction oracle answers (``None``, the default: no
        limit). The oracle built before round ``now`` answers rounds ``now .. now + lookahead``."""
        return None

    def best_fixed(self, episode: Any, env_key: PRNGKeyArray, T: int) -> Float[Array, "..."] | None:
        """``argmin_{x in K} sum_t f_t(x)`` s.t. ``g_t(x) <= 0`` for all t, or ``None`` if not provided."""
        del episode, env_key, T
        return None

    def round_optimum(self, data: Any) -> Float[Array, "..."] | None:
        """``argmin_{x in K} f_t(x)`` s.t. ``g_t(x) <= 0``, or ``None`` if not provided."""
        del data
        return None


def round_at(problem: AbstractProblem, episode: Any, env_key: PRNGKeyArray, t: Int[Array, ""]) -> Any:
    """Round ``t``'s data as every run draws it:
    [`AbstractProblem.round_data`][ocokit.problems.AbstractProblem.round_data] with the key
    ``fold_in(env_key, t)``, a pure function of the environment key and t (common random numbers)."""
    return problem.round_data(episode, jax.random.fold_in(env_key, t), t)


def rounds_at(problem: AbstractProblem, episode: Any, env_key: PRNGKeyArray, ts: Int[Array, " B"]) -> Any:
    """`round_at` of the rounds ``ts``, stacked on a leading axis: one vectorised draw, the same numbers."""
    return jax.vmap(lambda t: round_at(problem, episode, env_key, t))(ts)


def all_rounds(problem: AbstractProblem, episode: Any, env_key: PRNGKeyArray, T: int) -> Any:
    """Round data of every round ``1..T`` stacked on a leading axis (for offline comparators): `rounds_at`."""
    return rounds_at(problem, episode, env_key, jnp.arange(1, T + 1, dtype=jnp.int32))

"""The learner contract: ``init / decide / update`` over an explicit state, with a declared feedback kind."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit.feedback import FeedbackKind
from ocokit.problems._base import AbstractProblem, ProblemConstants
from ocokit.sets import AbstractSet


class ProblemInfo(eqx.Module):
    """What a learner may know before round 1: the set, N, the horizon, the memory and the constants."""

    domain: AbstractSet
    num_constraints: int = eqx.field(static=True)
    horizon: int = eqx.field(static=True)
    constants: ProblemConstants = ProblemConstants()
    memory: int = eqx.field(static=True, default=1)

    @classmethod
    def of(cls, problem: AbstractProblem, T: int) -> ProblemInfo:
        """The information a learner gets about ``problem`` over ``T`` rounds."""
        return cls(problem.domain, problem.num_constraints, T, problem.constants(), problem.memory())


def hyperparameter(**kwargs: Any) -> Any:
    """A numeric hyperparameter field: stored as an array leaf, so grids of it vmap and never recompile."""
    return eqx.field(converter=jnp.asarray, **kwargs)


class AbstractLearner(eqx.Module):
    """An online learner as three pure functions over an explicit state (optax/blackjax style).

    * ``init(info, key) -> state``: the state before round 1 (fixed shapes and dtypes thereafter).
    * ``decide(state) -> x``: the point played this round; must lie in ``info.domain``. It never sees the
      current round's loss: the engine calls it before generating the round.
    * ``update(state, x, feedback) -> state``: absorb round t's feedback (of the declared kind
      ``feedback``, see :mod:`ocokit.feedback`) after playing ``x``.
    * ``diagnostics(state) -> dict``: scalars or small arrays the engine records every round (queue
      lengths, oracle calls). By convention ``"oracle_calls"`` counts LMO / projection / inner-solver
      iterations of the last update.

    Numeric hyperparameters are array leaves (:func:`hyperparameter`), structural choices are static
    fields. ``from_theory(info)`` builds the learner with a paper's theory-driven parameters.
    """

    feedback: ClassVar[FeedbackKind]

    @abc.abstractmethod
    def init(self, info: ProblemInfo, key: PRNGKeyArray) -> Any:
        """The state before round 1."""

    @abc.abstractmethod
    def decide(self, state: Any) -> Float[Array, "..."]:
        """The decision x_t to play."""

    @abc.abstractmethod
    def update(self, state: Any, x: Float[Array, "..."], feedback: Any) -> Any:
        """The state after observing round t's feedback."""

    def prepare(self, state: Any, feedback: Any) -> Any:
        """Absorb feedback available before round 1; the identity by default.

        The engine calls it once, after ``init``, for a learner whose feedback kind looks ahead
        (``PREDICTIONS``: the prediction oracle of the first window).
        """
        del feedback
        return state

    def diagnostics(self, state: Any) -> dict[str, Array]:
        """Per-round quantities to record (none by default)."""
        del state
        return {}

"""The learner that never moves: the reference that shows whether a method learns at all."""

from __future__ import annotations

from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.feedback import FULL_INFORMATION, FeedbackKind


class _ConstantState(eqx.Module):
    x: Float[Array, "..."]


class Constant(AbstractLearner):
    """Plays the centre of K every round and ignores all feedback (``K.center()``: 0 for a ball centred at 0).

    Not an algorithm of a paper but the baseline every comparison needs: a method whose cumulative loss is
    not clearly below this learner's has not learned anything. On the matrix completion of Wang, Wan and Zhang
    it is the ``X = 0`` line (Wang, Wan and Zhang, "Revisiting Projection-Free Online Learning with Time-Varying
    Constraints", AAAI 2025, section "Experiments"), where it also has zero constraint violation.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> traj = ocokit.run(ocokit.algorithms.Constant(), problem, T=20, record_decisions=True)
        >>> bool((traj.decisions == problem.domain.center()[None]).all())
        True
    """

    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> Constant:
        """The learner itself (it has no parameters)."""
        del info
        return cls.build({}, overrides)

    def init(self, info, key):
        del key
        return _ConstantState(x=info.domain.center())

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        del x, feedback
        return state

    def diagnostics(self, state):
        del state
        return {"oracle_calls": jnp.asarray(0, jnp.int32)}

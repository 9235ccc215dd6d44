"""Learners of a user's own, for ``ocokit bench --learner tests.bench.user_learners:NAME`` (the CLI tests)."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ocokit.algorithms import OGD, AbstractLearner, ProblemInfo
from ocokit.feedback import FULL_INFORMATION, FeedbackKind


def make(info: ProblemInfo) -> OGD:
    """A factory: OGD with a step of the user's choosing."""
    return OGD(eta=0.05 * float(info.domain.diameter) / info.horizon**0.5)


def broken(info: ProblemInfo) -> OGD:
    """A factory that fails on every problem."""
    raise RuntimeError("the user's factory is broken")


class _NaNState(eqx.Module):
    x: jnp.ndarray
    t: jnp.ndarray


class NaNAfterThree(AbstractLearner):
    """Plays the domain's centre, then NaN from round 4 on (its row must say round 4)."""

    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    @classmethod
    def from_theory(cls, info: ProblemInfo) -> NaNAfterThree:
        return cls()

    def init(self, info, key):
        del key
        return _NaNState(info.domain.center(), jnp.asarray(1, jnp.int32))

    def decide(self, state):
        return jnp.where(state.t > 3, jnp.nan, state.x)

    def update(self, state, x, feedback):
        return _NaNState(state.x, state.t + 1)

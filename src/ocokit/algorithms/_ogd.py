"""Projected online gradient descent (Zinkevich 2003): the unconstrained reference learner."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.feedback import FULL_INFORMATION, FeedbackKind
from ocokit.sets import AbstractSet

_DECAYS = ("constant", "inverse_sqrt")


class _OGDState(eqx.Module):
    x: Float[Array, "..."]
    t: Int[Array, ""]
    domain: AbstractSet  # K, from the learner's info


class OGD(AbstractLearner):
    """Projected online gradient descent; ignores the long-term constraints g_t.

    Update: ``x_{t+1} = Pi_K(x_t - eta_t grad f_t(x_t))`` with ``eta_t = eta`` (``decay="constant"``) or
    ``eta_t = eta / sqrt(t)`` (``decay="inverse_sqrt"``). Starts at ``K.center()``.

    Source: M. Zinkevich, "Online convex programming and generalized infinitesimal gradient ascent",
    ICML 2003, Theorem 1: with ``eta = D / (G sqrt(T))``, regret <= ``D G sqrt(T)`` (up to 3/2).

    Args:
        eta: step size, > 0.
        decay: ``"constant"`` or ``"inverse_sqrt"`` (static).

    Example:
        >>> import ocokit
        >>> traj = ocokit.run(ocokit.algorithms.OGD(eta=0.01), ocokit.problems.TimeVaryingRegression(), T=20)
        >>> traj.loss.shape
        (20,)
    """

    eta: Float[Array, ""] = hyperparameter()
    decay: str = eqx.field(static=True, default="constant")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    needs: ClassVar[Needs] = Needs(constants=("grad_bound", "diameter"))

    def __check_init__(self):
        _checks.positive("eta", self.eta)
        _checks.one_of("decay", self.decay, _DECAYS)

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> OGD:
        """Zinkevich's constant step ``eta = D / (G sqrt(T))`` (needs ``constants.grad_bound``; ``overrides`` give
        ``grad_bound`` or ``diameter`` by name, or constructor arguments)."""
        info = info.giving(overrides)
        G = info.require("grad_bound", "OGD.from_theory")
        D = info.require("diameter", "OGD.from_theory")
        return cls.build({"eta": D / (G * math.sqrt(info.horizon))}, overrides)

    def init(self, info, key):
        del key
        return _OGDState(x=info.domain.center(), t=jnp.asarray(1, jnp.int32), domain=info.domain)

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        domain = state.domain
        step = self.eta if self.decay == "constant" else self.eta / jnp.sqrt(state.t.astype(x.dtype))
        return _OGDState(x=domain.project(x - step * feedback.grad(x)), t=state.t + 1, domain=domain)

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(1, jnp.int32)}

"""The one-point bandit adapter (Flaxman, Kalai and McMahan, SODA 2005), written once.

`OnePointBandit` turns a full-information learner whose update is one step on a gradient
(`AbstractGradientLearner`) into a bandit learner: it runs the inner learner over the shrunk set
``K_delta = c + (1 - delta/r)(K - c)`` (``c = K.center()``, ``r = K.inner_radius``), plays ``y_t + delta u_t``
with ``y_t`` the inner decision and ``u_t`` uniform on the unit sphere, and feeds the inner step the one-point
estimate ``(n/delta) f_t(y_t + delta u_t) u_t`` of the gradient of the ball-smoothed loss. A learner that is
such a wrapping ([`LOOBBGD`][ocokit.algorithms.LOOBBGD], [`LBPM`][ocokit.algorithms.LBPM]) subclasses
`AbstractOnePointBanditLearner` and declares its ``bandit``.
"""

import abc
import dataclasses
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, hyperparameter
from ocokit.feedback import BANDIT, FeedbackKind, one_point_sphere_estimate, sample_unit_sphere


class AbstractGradientLearner(AbstractLearner):
    """A full-information learner whose round is one ``step`` on a gradient (``update`` is written here once).

    * ``first_order(state, x, feedback) -> (grad, aux)``: the gradient its step takes, from first-order
      feedback at the played ``x``, and what else the step needs (``aux``: constraint values, or ``None``).
    * ``zeroth_order(state, feedback) -> (value, aux)``: the scalar whose gradient the step takes, from the
      values observed at a played point (bandit feedback), and the same ``aux``.
    * ``step(state, grad, aux) -> state``.
    """

    @abc.abstractmethod
    def first_order(self, state: Any, x: Array, feedback: Any) -> tuple[Array, Any]:
        """``(grad, aux)`` from first-order feedback at ``x``."""

    @abc.abstractmethod
    def zeroth_order(self, state: Any, feedback: Any) -> tuple[Array, Any]:
        """``(value, aux)`` from the values observed at the played point."""

    @abc.abstractmethod
    def step(self, state: Any, grad: Array, aux: Any) -> Any:
        """The state after one step on ``grad``."""

    def update(self, state, x, feedback):
        return self.step(state, *self.first_order(state, x, feedback))


class _OnePointBanditState(eqx.Module):
    inner: Any  # the inner learner's state, over K_delta
    delta: Float[Array, ""]  # the smoothing radius, in the decision's dtype
    key: PRNGKeyArray
    u: Float[Array, "..."]  # u_t, uniform on the unit sphere, drawn before round t


class OnePointBandit(AbstractLearner):
    """A full-information gradient learner run on one-point gradient estimates (Flaxman et al. 2005).

    Round t, with ``y_t = inner.decide(state)`` in ``K_delta = c + (1 - delta/r)(K - c)``::

        play x_t = y_t + delta u_t   (u_t uniform on the unit sphere S^{n-1}; x_t in K since y_t in K_delta)
        g_t = (n / delta) v_t u_t,   v_t the inner learner's scalar of the observed values at x_t
        inner step on g_t; draw u_{t+1}

    Args:
        inner: the full-information learner (an `AbstractGradientLearner`).
        delta: the smoothing radius, ``0 < delta < r`` (``r = K.inner_radius``).

    References:
        A. Flaxman, A. Kalai and H. B. McMahan. Online convex optimization in the bandit setting: gradient
        descent without a gradient. SODA 2005.
    """

    inner: AbstractGradientLearner
    delta: Float[Array, ""] = hyperparameter()
    feedback: ClassVar[FeedbackKind] = BANDIT

    def __check_init__(self):
        _checks.positive("delta", self.delta)

    def init(self, info, key):
        domain = info.domain
        dtype = domain.center().dtype
        shrunk = domain.scaled(1.0 - self.delta / domain.inner_radius)
        inner = self.inner.init(dataclasses.replace(info, domain=shrunk), jax.random.fold_in(key, 1))
        key, sub = jax.random.split(key)
        u = sample_unit_sphere(sub, domain.shape, dtype)
        return _OnePointBanditState(inner=inner, delta=jnp.asarray(self.delta, dtype), key=key, u=u)

    def decide(self, state):
        return self.inner.decide(state.inner) + state.delta * state.u

    def update(self, state, x, feedback):
        del x
        value, aux = self.inner.zeroth_order(state.inner, feedback)
        grad = one_point_sphere_estimate(value, state.u, state.delta)
        inner = self.inner.step(state.inner, grad, aux)
        key, sub = jax.random.split(state.key)
        u = sample_unit_sphere(sub, state.u.shape, state.u.dtype)
        return _OnePointBanditState(inner=inner, delta=state.delta, key=key, u=u)

    def diagnostics(self, state):
        return self.inner.diagnostics(state.inner)


class AbstractOnePointBanditLearner(AbstractLearner):
    """A bandit learner that is a full-information learner wrapped in `OnePointBandit`.

    A final subclass declares the smoothing radius ``delta``, the class ``inner_learner`` it wraps and
    ``inner_arguments()``, that learner's constructor arguments from its own fields; ``bandit`` is built from
    them here (which checks them), and init/decide/update/diagnostics are its.
    """

    delta: eqx.AbstractVar[Float[Array, ""]]
    inner_learner: ClassVar[type[AbstractGradientLearner]]
    feedback: ClassVar[FeedbackKind] = BANDIT

    def __check_init__(self):
        _checks.positive("delta", self.delta)  # first: the inner learner's defaults may derive from it
        _ = self.bandit  # building the inner learner and the adapter checks every other parameter

    @abc.abstractmethod
    def inner_arguments(self) -> dict[str, Any]:
        """The constructor arguments of ``inner_learner``, from this learner's fields."""

    @property
    def bandit(self) -> OnePointBandit:
        """``inner_learner(**inner_arguments())`` over the shrunk set, on one-point estimates with ``delta``."""
        return OnePointBandit(self.inner_learner(**self.inner_arguments()), self.delta)

    def init(self, info, key):
        return self.bandit.init(info, key)

    def decide(self, state):
        return self.bandit.decide(state)

    def update(self, state, x, feedback):
        return self.bandit.update(state, x, feedback)

    def diagnostics(self, state):
        return self.bandit.diagnostics(state)

"""What a learner sees after playing, and the gradient estimators built on it (written once, here).

Feedback kinds (a learner declares one as its class attribute ``feedback``):

* ``FULL_INFORMATION``: ``f_t`` and ``g_t`` as functions: values, gradients and Jacobians anywhere
  (:class:`FullInformation`).
* ``BANDIT``: the values ``f_t(x_t)`` and ``g_t(x_t)`` at the played point only (:class:`Bandit`).
* ``ZEROTH_ORDER``: values of ``f_t`` and ``g_t`` at points the learner picks, no gradients (two-point
  feedback; :class:`ZerothOrder`). A learner counts its own queries in its state.

Gradient estimators (one-point sphere, two-point, smoothing laws) take a loss-value function and a key,
so every zeroth-order or bandit learner reuses the same code.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit.problems._base import AbstractProblem


class FeedbackKind(enum.Enum):
    """The information a learner receives after each round."""

    FULL_INFORMATION = "full-information"
    BANDIT = "bandit"
    ZEROTH_ORDER = "zeroth-order"


FULL_INFORMATION = FeedbackKind.FULL_INFORMATION
BANDIT = FeedbackKind.BANDIT
ZEROTH_ORDER = FeedbackKind.ZEROTH_ORDER


class ZerothOrder(eqx.Module):
    """Values of round t's loss and constraints at any query point (no gradients).

    For a problem with memory, ``loss`` takes the stacked window of the last h decisions.
    """

    problem: AbstractProblem
    data: Any

    def loss(self, x: Float[Array, "..."]) -> Float[Array, ""]:
        """``f_t(x)``."""
        return self.problem.loss(self.data, x)

    def constraints(self, x: Float[Array, "..."]) -> Float[Array, " N"]:
        """``g_t(x)``."""
        return self.problem.constraints(self.data, x)


class FullInformation(eqx.Module):
    """Round t's loss and constraints as functions: values, gradients and Jacobians anywhere."""

    problem: AbstractProblem
    data: Any

    def loss(self, x: Float[Array, "..."]) -> Float[Array, ""]:
        """``f_t(x)``."""
        return self.problem.loss(self.data, x)

    def constraints(self, x: Float[Array, "..."]) -> Float[Array, " N"]:
        """``g_t(x)``."""
        return self.problem.constraints(self.data, x)

    def grad(self, x: Float[Array, "..."]) -> Float[Array, "..."]:
        """``grad f_t(x)``."""
        return jax.grad(self.loss)(x)

    def value_and_grad(self, x: Float[Array, "..."]) -> tuple[Float[Array, ""], Float[Array, "..."]]:
        """``(f_t(x), grad f_t(x))``."""
        return jax.value_and_grad(self.loss)(x)

    def constraints_jacobian(self, x: Float[Array, "..."]) -> Float[Array, "N ..."]:
        """``J g_t(x)``, shape ``(N, *x.shape)``."""
        return jax.jacrev(self.constraints)(x)


class Bandit(eqx.Module):
    """The values ``f_t(x_t)`` and ``g_t(x_t)`` at the played point only."""

    loss: Float[Array, ""]
    constraints: Float[Array, " N"]


def make_feedback(
    kind: FeedbackKind,
    problem: AbstractProblem,
    data: Any,
    loss: Any,
    constraints: Any,
    *,
    episode: Any = None,
    env_key: Any = None,
    t: Any = None,
):
    """The feedback object of ``kind`` for one round (used by the engine and by ``Session``).

    ``episode``, ``env_key`` and the 1-based round ``t`` are the round's context, for feedback kinds
    that look beyond the current round (predictions of upcoming rounds); ``Session`` passes ``None``.
    """
    del episode, env_key, t
    if kind is FULL_INFORMATION:
        return FullInformation(problem, data)
    if kind is ZEROTH_ORDER:
        return ZerothOrder(problem, data)
    if kind is BANDIT:
        return Bandit(loss, constraints)
    raise ValueError(f"unknown feedback kind {kind!r}; expected one of {[k.value for k in FeedbackKind]}")


# --------------------------------------------------------------------------------------------------
# Sampling laws and gradient estimators.


def sample_unit_sphere(key: PRNGKeyArray, shape: tuple[int, ...], dtype=None) -> Float[Array, "..."]:
    """A point drawn uniformly from the unit sphere ``{u : ||u||_F = 1}`` of arrays of ``shape``."""
    g = jax.random.normal(key, shape, dtype=dtype or jnp.result_type(float))
    return g / jnp.linalg.norm(g.ravel())


def one_point_sphere_estimate(
    value: Float[Array, ""], u: Float[Array, "..."], delta: Float[Array, ""]
) -> Float[Array, "..."]:
    """Flaxman et al.'s one-point estimator ``(n / delta) f(x + delta u) u`` of ``grad f_hat_delta(x)``.

    ``value`` is the loss observed at the played point ``x + delta u``, ``u`` uniform on the unit sphere
    and ``n`` the dimension; unbiased for the gradient of the ball-smoothed loss (Flaxman, Kalai,
    McMahan, SODA 2005, Lemma 1).
    """
    return (u.size / delta) * value * u


def two_point_estimate(
    loss: Callable[[Array], Array], x: Float[Array, "..."], u: Float[Array, "..."], delta: Float[Array, ""],
    scale: Float[Array, ""] | float = 1.0,
) -> Float[Array, "..."]:
    """Symmetric two-point estimator ``scale (f(x + delta u) - f(x - delta u)) / (2 delta) u``.

    With ``u`` uniform on the sphere use ``scale = n``; with Gaussian-type smoothing directions
    (``sample_direction``) use ``scale = 1`` (Nesterov and Spokoiny 2017).
    """
    return scale * (loss(x + delta * u) - loss(x - delta * u)) / (2.0 * delta) * u

"""The smoothing step of paper 002: subroutine (a)'s randomised gradient step, a part of both memory learners.

`SmoothingStep` holds the parameters of Algorithm 1's initialisation phase (subroutine (a)): the step
``eta_r``, the radius ``delta``, the initial condition, the smoothing law and how the window is perturbed. It
resolves what depends on the problem (`resolve`), forms the estimate ``g_r``
(`estimate`), sizes and takes the projected step (`step_size`,
`step`), and lends its law and estimator to subroutine (b)
(`directions`, `difference`). [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory] and
[`OCOMemoryLimitedPredictions`][ocokit.algorithms.OCOMemoryLimitedPredictions] (`_memory_predictions`) hold one as
``smoothing``.

Every random direction is a pure function of the learner key and an absolute index (`_stream`,
`_direction`), so a direction is drawn "once per (layer, index)" without being stored.

Reference (paper 002): L. Ye, Z. Wang, Z.-W. Liu, M. Chi, X. Wang, H. Su, "Online Convex Optimization with Memory
and Limited Predictions", arXiv:2410.23574 (v1), 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import ProblemInfo, hyperparameter
from ocokit.feedback import (
    direction_variance,
    one_point_estimate,
    sample_direction,
    smoothing_law,
    truncated_gaussian_half_width,
    two_point_quotient,
)
from ocokit.sets import AbstractSet

ESTIMATORS = ("two_point", "one_point", "exact")
"""How a gradient is formed: two values, one value (Sec. 5), or the gradient itself (first-order predictions)."""
VALUE_ESTIMATORS = ESTIMATORS[:2]
"""The estimators that need values only (``ZEROTH_ORDER`` feedback)."""
INIT_PERTURB = ("unary", "last", "fixed_trajectory")
ETA_DECAYS = ("inverse_t", "constant")

Values = Callable[[Array], Array]
"""The round's cost at a stack of windows ``(p, h, *shape) -> (p,)`` (one batched query)."""
Gradient = Callable[[Array], Array]
"""The gradient of the round's cost at one window ``(h, *shape) -> (h, *shape)``."""


def _stream(key: PRNGKeyArray, name: int) -> PRNGKeyArray:
    """Independent key streams of a learner: 0 = initialisation draws, 1 = fixed u^0, 2 = layers (then j)."""
    return jax.random.fold_in(key, name)


def _direction(key: PRNGKeyArray, index: Array, shape: tuple[int, ...], law: str, half_width: Array) -> Array:
    """The direction of absolute index ``index`` in the stream ``key`` (same index, same direction)."""
    return sample_direction(jax.random.fold_in(key, index), shape, law, half_width=half_width)


def _slots(last: Array, h: int) -> Array:
    """Absolute indices ``last - h + 1, ..., last`` of a window ending at ``last``."""
    return last - (h - 1) + jnp.arange(h, dtype=jnp.asarray(last).dtype)


def _bcast(mask: Array, shape: tuple[int, ...]) -> Array:
    """A mask over the slots of a window, broadcastable against the window ``(h, *shape)``."""
    return mask.reshape(mask.shape + (1,) * len(shape))


def _half_width(name: str, value: Any) -> None:
    """``half_width > 0`` where given (``nan`` stands for Definition 1's value)."""
    arr = _checks._concrete(value)
    if arr is not None:
        _checks.positive(name, arr[~np.isnan(arr)])


def _law(name: str, value: Any) -> None:
    """A smoothing law of `SMOOTHING_LAWS` (or an alias); its error names ``law``."""
    del name
    smoothing_law(value)


class SmoothingStep(_checks.Checked):
    """Subroutine (a) of paper 002's Algorithm 1: a projected step along a smoothed gradient estimate.

    At absolute index ``r`` (round r for [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory]; ``r = t + W - 1`` in
    Algorithm 1), with
    ``w = x_{r-h+1:r}`` the window of the last h iterates and ``u_r`` a direction of the law ``law``::

        g_r = [l_r(w + P) - l_r(w - P)] / (2 delta) u_r     (two-point; lines 4-6, typos fixed)
        g_r = l_r(w + P) / delta u_r                          (one-point, Sec. 5)
        x_{r+1} = Pi_X(x_r - eta_r g_r),   eta_r = eta / r    (line 7 and the update after Theorem 1)

    where ``P`` shifts the perturbed slots of the window by ``delta u_r`` (``init_perturb``). With
    ``estimator="exact"``, ``g_r`` is the gradient of ``l_r`` summed over the perturbed slots (first-order
    predictions, outside the paper's setting; Algorithm 1 only).

    Args:
        eta: step scale eta > 0 (``eta_r = eta / r``; theory ``1 / mu``, Theorem 1; experiments 0.2).
        delta: perturbation radius delta > 0 (theory ``1 / sqrt(T)``; experiments 0.2).
        x0: the initial condition x0bar (history and x_1); ``nan`` = ``domain.center()``.
        half_width: truncation a of the truncated Gaussian, > 0; ``nan`` = Definition 1's
            ``(2 d^2 (2h - 1))^(-1/4)``; the experiments use 2.
        law: smoothing law, one of `SMOOTHING_LAWS` (static; default
            ``"truncated_gaussian"``, Definition 1).
        estimator: ``"two_point"`` (default), ``"one_point"`` (Sec. 5) or ``"exact"`` (static).
        init_perturb: ``"unary"`` (default: every slot of index >= 1 shifted by ``delta u_r``, fresh ``u_r``;
            the reading of Thm. 1's proof), ``"last"`` (only slot r; the "Two-Point Prediction" paragraph)
            or ``"fixed_trajectory"`` (every slot by ``delta u^0``, one ``u^0`` for the whole run; literal
            line 1) (static).
        eta_decay: ``"inverse_t"`` (default) or ``"constant"`` (``eta_r = eta``) (static).
        normalize_by_variance: divide every estimate by ``E[u_i^2]`` (unbiased for quadratics; not in the
            paper, whose Lemma 2 calls the truncated-Gaussian estimate unbiased although it is about
            ``E[u_i^2]`` times the gradient). Default False (static).

    References:
        L. Ye, Z. Wang, Z.-W. Liu, M. Chi, X. Wang, H. Su, "Online Convex Optimization with Memory and
        Limited Predictions", arXiv:2410.23574 (v1), 2024.
    """

    eta: Array = hyperparameter(_checks.positive)
    delta: Array = hyperparameter(_checks.positive)
    x0: Array = hyperparameter(default=math.nan)
    half_width: Array = hyperparameter(_half_width, default=math.nan)
    law: str = _checks.checked_field(_law, static=True, default="truncated_gaussian")
    estimator: str = _checks.checked_field(_checks.among(ESTIMATORS), static=True, default="two_point")
    init_perturb: str = _checks.checked_field(_checks.among(INIT_PERTURB), static=True, default="unary")
    eta_decay: str = _checks.checked_field(_checks.among(ETA_DECAYS), static=True, default="inverse_t")
    normalize_by_variance: bool = eqx.field(static=True, default=False)

    @property
    def queries(self) -> int:
        """Values (or gradients, ``"exact"``) of one round's cost that one estimate queries: 2 or 1."""
        return 2 if self.estimator == "two_point" else 1

    def resolve(self, info: ProblemInfo) -> tuple[Array, Array]:
        """``(x0bar, a)`` for the problem: ``nan`` means ``domain.center()`` and Definition 1's
        ``a = (2 d^2 (2h - 1))^(-1/4)``; x0bar is projected onto X."""
        domain, shape = info.domain, info.domain.shape
        center = domain.center()
        x0 = jnp.broadcast_to(jnp.asarray(self.x0, center.dtype), shape)
        x0 = domain.project(jnp.where(jnp.isnan(x0), center, x0))
        theory = truncated_gaussian_half_width(math.prod(shape), info.memory)
        half_width = jnp.where(jnp.isnan(self.half_width), theory, self.half_width).astype(center.dtype)
        return x0, half_width

    def directions(self, key: PRNGKeyArray, indices: Array, shape: tuple[int, ...], half_width: Array) -> Array:
        """The directions of absolute indices ``indices`` in the stream ``key``, stacked."""
        return jax.vmap(lambda i: _direction(key, i, shape, self.law, half_width))(indices)

    def perturbed(self, slots: Array, r: Array) -> Array:
        """Which slots of the window ``slots`` the step at ``r`` perturbs (``init_perturb``; never history)."""
        return (slots == r) if self.init_perturb == "last" else (slots >= 1)

    def variance(self, shape: tuple[int, ...], half_width: Array) -> Array:
        """``E[u_i^2]`` of the law (what ``normalize_by_variance`` divides by)."""
        return direction_variance(self.law, shape, half_width=half_width)

    def difference(self, values: Values, w: Array, P: Array, radius: Array, u: Array, variance: Array) -> Array:
        """The zeroth-order estimate at ``w`` along the perturbation ``P``: ``[l(w + P) - l(w - P)] / (2 radius) u``
        (two-point, one batched query) or ``l(w + P) / radius u`` (one-point), divided by ``variance``
        (`variance`) if ``normalize_by_variance``. Subroutine (a) uses it with ``radius = delta``, (b) with
        ``delta'``."""
        if self.estimator == "two_point":
            plus, minus = values(jnp.stack([w + P, w - P]))
            g = two_point_quotient(plus, minus, radius) * u
        else:
            g = one_point_estimate(values((w + P)[None])[0], u, radius)
        return g / variance if self.normalize_by_variance else g

    def estimate(
        self,
        w: Array,
        slots: Array,
        r: Array,
        key: PRNGKeyArray,
        half_width: Array,
        values: Values,
        gradient: Gradient | None = None,
    ) -> Array:
        """Subroutine (a)'s ``g_r`` at the window ``w = x_{r-h+1:r}`` (absolute indices ``slots``).

        ``u_r`` is the direction of index r in the initialisation stream (``"fixed_trajectory"``: ``u^0``,
        index 0 of its own stream); ``P = delta u_r`` on the `perturbed` slots. ``"exact"`` sums
        ``gradient(w)`` over those slots instead (it needs ``gradient``).
        """
        shape = w.shape[1:]
        mask = self.perturbed(slots, r)
        if self.estimator == "exact":
            if gradient is None:
                raise ValueError('estimator="exact" needs first-order feedback (a gradient of the round\'s cost)')
            return jnp.sum(jnp.where(_bcast(mask, shape), gradient(w), 0.0), axis=0)
        if self.init_perturb == "fixed_trajectory":
            u = _direction(_stream(key, 1), jnp.asarray(0, jnp.int32), shape, self.law, half_width)
        else:
            u = _direction(_stream(key, 0), r, shape, self.law, half_width)
        P = self.delta * _bcast(mask, shape).astype(u.dtype) * u[None]
        return self.difference(values, w, P, self.delta, u, self.variance(shape, half_width))

    def step_size(self, r: Array) -> Array:
        """``eta_r = eta / r`` (``"inverse_t"``; absolute index ``r >= 1``, clamped at 1) or ``eta``."""
        if self.eta_decay == "constant":
            return self.eta
        return self.eta / jnp.maximum(r, 1).astype(float)

    def step(self, domain: AbstractSet, x: Array, g: Array, r: Array) -> Array:
        """``x_{r+1} = Pi_X(x_r - eta_r g_r)``."""
        return domain.project(x - self.step_size(r) * g)

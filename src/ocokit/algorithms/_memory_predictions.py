"""OCO with memory and limited predictions (paper 002, Algorithm 1) and its bandit-OCO-with-memory subroutine.

Two learners share the pieces written here once:

* :class:`BanditOCOMemory`, subroutine (a) on its own: projected online gradient descent over the played
  decisions, driven by one- or two-point values of the round's cost at perturbed windows
  (``ZEROTH_ORDER`` feedback);
* :class:`OCOMemoryLimitedPredictions`, Algorithm 1: the same subroutine run W rounds ahead on a prediction
  oracle (``PREDICTIONS`` feedback) to produce ``x^0``, then K = floor(W / (h - 1)) pipelined layers of a
  zeroth-order projected gradient method on the whole-horizon cost ``C_T`` (subroutine (b)).

Every random direction is a pure function of the learner key and an absolute index (``u^0_r`` for the
initialisation step of round r, ``u^j_i`` for block i at layer j), so directions are drawn "once per
(layer, index)" without being stored, and the two learners' ``x^0`` coincide. (Algorithm 1's indices disagree:
line 12 draws ``u_s^j`` for block ``s + h - 1``, while lines 17 and 19 name the direction of block s at layer j
``u_s^j``; the consistent reading is one direction per block and layer, shared by every window containing it.)

Reference (paper 002): L. Ye, Z. Wang, Z.-W. Liu, M. Chi, X. Wang, H. Su, "Online Convex Optimization with Memory
and Limited Predictions", arXiv:2410.23574 (v1), 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.feedback import (
    PREDICTIONS,
    ZEROTH_ORDER,
    FeedbackKind,
    direction_variance,
    one_point_estimate,
    sample_direction,
    smoothing_law,
    truncated_gaussian_half_width,
    two_point_quotient,
)

_ESTIMATORS = ("two_point", "one_point")
_ALG1_ESTIMATORS = ("two_point", "one_point", "exact")
_INIT_PERTURB = ("unary", "last", "fixed_trajectory")
_ETA_DECAYS = ("inverse_t", "constant")


# --------------------------------------------------------------------------------------------------
# Shared pieces.


def _stream(key: PRNGKeyArray, name: int) -> PRNGKeyArray:
    """Independent key streams of a learner: 0 = initialisation draws, 1 = fixed u^0, 2 + j = layer j."""
    return jax.random.fold_in(key, name)


def _direction(key: PRNGKeyArray, index: Array, shape: tuple[int, ...], law: str, half_width: Array) -> Array:
    """The direction of absolute index ``index`` in the stream ``key`` (same index, same direction)."""
    return sample_direction(jax.random.fold_in(key, index), shape, law, half_width=half_width)


def _slots(last: Array, h: int) -> Array:
    """Absolute indices ``last - h + 1, ..., last`` of a window ending at ``last``."""
    return last - (h - 1) + jnp.arange(h, dtype=jnp.asarray(last).dtype)


def _bcast(mask: Array, shape: tuple[int, ...]) -> Array:
    return mask.reshape(mask.shape + (1,) * len(shape))


def _resolve(config: Any, info: ProblemInfo) -> tuple[Array, Array]:
    """``(x0bar, half_width)``; nan means ``domain.center()`` and Definition 1's ``(2 d^2 (2h-1))^(-1/4)``."""
    domain, shape = info.domain, info.domain.shape
    center = domain.center()
    x0 = jnp.broadcast_to(jnp.asarray(config.x0, center.dtype), shape)
    x0 = domain.project(jnp.where(jnp.isnan(x0), center, x0))
    theory = truncated_gaussian_half_width(math.prod(shape), info.memory)
    half_width = jnp.where(jnp.isnan(config.half_width), theory, config.half_width).astype(center.dtype)
    return x0, half_width


def _init_gradient(
    config: Any,
    value: Callable[[Array], Array],
    w: Array,
    slots: Array,
    r: Array,
    key: PRNGKeyArray,
    half_width: Array,
) -> tuple[Array, int]:
    """Subroutine (a)'s gradient estimate ``g_r`` at the window ``w = x^0_{r-h+1:r}`` and its query count.

    Perturbation ``P`` (the paper admits three readings): ``"unary"`` shifts every slot of index >= 1 by
    ``delta u_r`` (fresh ``u_r``; the reading of Thm. 1's proof), ``"last"`` only slot r (the paper's
    "Two-Point Prediction" paragraph), ``"fixed_trajectory"`` every slot by ``delta u^0`` with one ``u^0`` for
    the whole run (the literal line 1). Two-point: ``[l_r(w + P) - l_r(w - P)] / (2 delta) u``; one-point:
    ``l_r(w + P) / delta u``.
    """
    shape = w.shape[1:]
    if config.init_perturb == "fixed_trajectory":
        u = _direction(_stream(key, 1), jnp.asarray(0, jnp.int32), shape, config.law, half_width)
    else:
        u = _direction(_stream(key, 0), r, shape, config.law, half_width)
    mask = (slots == r) if config.init_perturb == "last" else (slots >= 1)
    P = config.delta * _bcast(mask, shape).astype(u.dtype) * u[None]
    if config.estimator == "two_point":
        plus, minus = value(jnp.stack([w + P, w - P]))  # one batched query of round r's model
        g, calls = two_point_quotient(plus, minus, config.delta) * u, 2
    else:
        g, calls = one_point_estimate(value((w + P)[None])[0], u, config.delta), 1
    if config.normalize_by_variance:
        g = g / direction_variance(config.law, shape, half_width=half_width)
    return g, calls


def _eta(config: Any, r: Array) -> Array:
    """``eta_r = eta / r`` (``"inverse_t"``; absolute index ``r = t + W - 1 >= 1``, not t) or ``eta``."""
    if config.eta_decay == "constant":
        return config.eta
    return config.eta / jnp.maximum(r, 1).astype(float)


def _check_half_width(half_width: Any) -> None:
    """``half_width > 0`` where given (``nan`` stands for Definition 1's value)."""
    arr = _checks._concrete(half_width)
    if arr is not None:
        _checks.positive("half_width", arr[~np.isnan(arr)])


# --------------------------------------------------------------------------------------------------
# Subroutine (a) on its own.


class _BanditOCOMemoryState(eqx.Module):
    window: Array  # (h, *shape): x_{t-h+1}, ..., x_t (x0bar before round 1)
    t: Array
    half_width: Array
    key: PRNGKeyArray
    oracle_calls: Array
    domain: Any  # X, from the learner's info


class BanditOCOMemory(AbstractLearner):
    """Bandit OCO with memory (paper 002, Algorithm 1's initialisation phase, subroutine (a), on its own).

    Update, with ``w_t = (x_{t-h+1}, ..., x_t)`` the window of played decisions and ``u_t`` a fresh
    smoothing direction::

        g_t = [f_t(w_t + P_t) - f_t(w_t - P_t)] / (2 delta) u_t     (two-point)
        g_t = f_t(w_t + P_t) / delta u_t                              (one-point)
        x_{t+1} = Pi_X(x_t - eta_t g_t),   eta_t = eta / t

    where ``P_t`` shifts the window by ``delta u_t`` (see ``init_perturb``). The values come from
    ``ZEROTH_ORDER`` feedback (the round's cost at two query windows the learner picks).

    Source: Ye et al., Algorithm 1 lines 1-7 and the update after Theorem 1; the single-point variant of
    Sec. 5. The step uses the absolute index r (the loop counter t starts at ``2 - W``). Guarantee (Theorem 1, eq. 11):
    with ``eta_t = 1/(t mu)``, ``delta = 1/sqrt(T)`` and truncated Gaussian directions, dynamic regret
    ``O~((1 + V_T) sqrt(T))`` against the offline optimum of eq. (2). Algorithm 1's ``x^0`` is exactly this
    learner's decision sequence (same key, same directions).

    Args:
        eta: step scale eta > 0 (``eta_t = eta / t``; theory ``1 / mu``, experiments 0.2).
        delta: perturbation radius delta > 0 (theory ``1 / sqrt(T)``, experiments 0.2).
        x0: the initial condition x0bar (history and x_1); ``nan`` = ``domain.center()``.
        half_width: truncation a of the truncated Gaussian, > 0; ``nan`` = Definition 1's
            ``(2 d^2 (2h - 1))^(-1/4)``; the experiments use 2.
        law: smoothing law, one of :data:`ocokit.feedback.SMOOTHING_LAWS` (static; default
            ``"truncated_gaussian"``, Definition 1; with ``"sphere"`` set ``normalize_by_variance`` for the
            usual ``n / delta`` scaling).
        estimator: ``"two_point"`` (default, Algorithm 1) or ``"one_point"`` (Sec. 5).
        init_perturb: ``"unary"`` (default: every slot of the window shifted by ``delta u_t``, fresh
            ``u_t``; the only reading consistent with Thm. 1's proof), ``"last"`` (only ``x_t`` shifted; the
            paper's "Two-Point Prediction" paragraph) or ``"fixed_trajectory"`` (one ``u^0`` for the whole
            run; literal line 1).
        eta_decay: ``"inverse_t"`` (default) or ``"constant"``.
        normalize_by_variance: divide the estimate by ``E[u_i^2]`` (unbiased for quadratics; not in the
            paper, whose Lemma 2 calls the truncated-Gaussian estimate unbiased although it is about
            ``E[u_i^2]`` times the gradient). Default False.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.QuadraticWithMemory(ocokit.sets.Box(-5.0, 5.0, dim=1), memory=2, x0=0.5)
        >>> learner = BanditOCOMemory(eta=0.2, delta=0.2, x0=0.5, half_width=2.0)
        >>> traj = ocokit.run(learner, problem, T=20, key=0)
        >>> bool(ocokit.metrics.dynamic_regret(traj)[-1] > 0)
        True

    References:
        L. Ye, Z. Wang, Z.-W. Liu, M. Chi, X. Wang, H. Su, "Online Convex Optimization with Memory and
        Limited Predictions", arXiv:2410.23574 (v1), 2024.
    """

    eta: Array = hyperparameter()
    delta: Array = hyperparameter()
    x0: Array = hyperparameter(default=math.nan)
    half_width: Array = hyperparameter(default=math.nan)
    law: str = eqx.field(static=True, default="truncated_gaussian")
    estimator: str = eqx.field(static=True, default="two_point")
    init_perturb: str = eqx.field(static=True, default="unary")
    eta_decay: str = eqx.field(static=True, default="inverse_t")
    normalize_by_variance: bool = eqx.field(static=True, default=False)
    feedback: ClassVar[FeedbackKind] = ZEROTH_ORDER

    def __check_init__(self):
        _checks.positive("eta", self.eta)
        _checks.positive("delta", self.delta)
        _check_half_width(self.half_width)
        smoothing_law(self.law)
        _checks.one_of("estimator", self.estimator, _ESTIMATORS)
        _checks.one_of("init_perturb", self.init_perturb, _INIT_PERTURB)
        _checks.one_of("eta_decay", self.eta_decay, _ETA_DECAYS)

    @classmethod
    def from_theory(cls, info: ProblemInfo, **options: Any) -> BanditOCOMemory:
        """Theorem 1's parameters: ``eta_t = 1/(t mu)``, ``delta = 1/sqrt(T)``, Definition 1's truncation.

        Needs ``constants.strong_convexity = mu > 0``; ``options`` are passed on (``law``, ``x0``, ...).
        """
        mu = info.require("strong_convexity", "BanditOCOMemory.from_theory")
        return cls(eta=1.0 / mu, delta=1.0 / math.sqrt(info.horizon), **options)

    def init(self, info, key):
        x0, half_width = _resolve(self, info)
        return _BanditOCOMemoryState(
            window=jnp.broadcast_to(x0, (info.memory, *x0.shape)),
            t=jnp.asarray(1, jnp.int32),
            half_width=half_width,
            key=key,
            oracle_calls=jnp.asarray(0, jnp.int32),
            domain=info.domain,
        )

    def decide(self, state):
        return state.window[-1]

    def update(self, state, x, feedback):
        del x  # the played point is the window's last entry
        h = state.window.shape[0]
        r = state.t
        slots = _slots(r, h)

        def value(ws):  # values at a stack of windows
            return jax.vmap(lambda w: feedback.loss(w if h > 1 else w[0]))(ws)

        g, calls = _init_gradient(self, value, state.window, slots, r, state.key, state.half_width)
        x_next = state.domain.project(state.window[-1] - _eta(self, r) * g)
        return _BanditOCOMemoryState(
            window=jnp.concatenate([state.window[1:], x_next[None]], axis=0),
            t=r + 1,
            half_width=state.half_width,
            key=state.key,
            oracle_calls=jnp.asarray(calls, jnp.int32),
            domain=state.domain,
        )

    def diagnostics(self, state):
        return {"oracle_calls": state.oracle_calls}


# --------------------------------------------------------------------------------------------------
# Algorithm 1.


class _OCOMLPState(eqx.Module):
    xs: Array  # (K + 1, M, *shape): ring buffer, xs[j, i % M] = x^j_i
    grads: Array  # (K, M, h, *shape): ring buffer of window-gradient estimates G^j_k (computed once)
    it: Array  # the next iteration t' of Algorithm 1's loop (x^K_{it - 1} is the decision)
    x0bar: Array
    half_width: Array
    horizon: Array
    key: PRNGKeyArray
    oracle_calls: Array  # prediction values queried by the last update
    lookahead: Array  # max k - now over the last update's queries (-1 if none)
    flagged: Array  # queries of the last update outside the oracle's window (answered nan)
    domain: Any  # X, from the learner's info


class OCOMemoryLimitedPredictions(AbstractLearner):
    """Algorithm 1 of paper 002, "OCO with Memory and Limited Predictions" (bandit OCO + pipelined ZO-PGD).

    At iteration t (Algorithm 1's loop, t = 2 - W, ..., T; iteration t + 1 runs after round t is played):

    (a) initialisation, W rounds ahead (r = t + W - 1, as :class:`BanditOCOMemory` but on predictions)::

            x^0_{r+1} = Pi_X(x^0_r - eta_r g^0_r),
            g^0_r = [l_r(x^0_{r-h+1:r} + P) - l_r(x^0_{r-h+1:r} - P)] / (2 delta) u_r

    (b) K = floor(W / (h - 1)) pipelined layers of zeroth-order projected gradient descent on
        ``C_T(x) = sum_t f_t(x_{t-h+1:t})``; layer j = 0..K-1 updates block ``s = t + (K - j - 1)(h - 1)``::

            x^{j+1}_s = Pi_X(x^j_s - alpha u^j_s sum_{k=s}^{s+h-1} D^j_k),
            D^j_k = [l_k(xbar^j_{k-h+1:k}) - l_k(xtilde^j_{k-h+1:k})] / (2 delta'),
            xbar^j_i = x^j_i + delta' u^j_i,   xtilde^j_i = x^j_i - delta' u^j_i

        with one direction ``u^j_i`` per (layer, block), every block of a window perturbed, and each ``D^j_k``
        queried once and reused for the h blocks it serves; the learner plays ``x_t = x^K_t``.

    With exact gradients in place of the estimates, the layers are exactly K steps of projected gradient
    descent on ``C_T`` from ``x^0`` (tested to 1e-10).

    Source: Ye et al., Algorithm 1 (lines 1-23), the vector view of Sec. 3 and the single-point variants of
    Sec. 5, with the paper's typos fixed: lines 4, 13 and 20 set both query points to ``x + delta u`` (read
    the second as ``x - delta u``, as Lemma 2(b) uses; "+" twice gives a zero estimate), line 6's ``l_s`` is
    ``l_r``, and line 12's ``u_s^j`` is read as the direction of block ``s + h - 1``. Guarantees: Theorem 1
    (eq. 11) for ``x^0`` and Theorem 2 (eq. 12):
    ``E[C_T(x^K) - C_T(x*)] <= (1 - mu/(beta h))^K (C_T(x^0) - C_T(x*)) + eps/gamma`` with
    ``alpha = 1/(beta h)`` and Definition 1's truncated Gaussian: dynamic regret decays exponentially in the window W.

    Args:
        window: the prediction window W >= 1 (static).
        eta: step scale of (a), > 0 (``eta_r = eta / r``; theory ``1 / mu``; experiments 0.2).
        alpha: step of (b), > 0 (theory ``1 / (beta h)``; experiments 0.05).
        delta: radius of (a), > 0 (theory ``1 / sqrt(T)``; experiments 0.2).
        delta_prime: radius delta' of (b), > 0 (experiments 1e-4; differences at that radius need float64).
        x0: the initial condition x0bar (history, ``x^0_1``); ``nan`` = ``domain.center()``.
        half_width: truncation a of the truncated Gaussian, > 0; ``nan`` = Definition 1's value.
        law: smoothing law of every draw (static; default ``"truncated_gaussian"``).
        estimator: ``"two_point"`` (default), ``"one_point"`` (Sec. 5; ``D^j_k = l_k(xbar) / delta'``,
            inferred analogue) or ``"exact"`` (first-order predictions: gradients of ``l`` in place of the
            estimates, outside the paper's setting; a reference for tests and reductions).
        init_perturb: ``"unary"`` (default), ``"last"`` or ``"fixed_trajectory"``, as in
            :class:`BanditOCOMemory`.
        strict_window: False (default) follows the pseudo-code, whose layer 0 queries round ``t + K(h - 1)``,
            i.e. ``t + W`` when ``(h - 1) | W``; True keeps every query in ``{t, ..., t + W - 1}`` (the window
            the paper states) with ``K = floor((W - 1) / (h - 1))`` (ocokit's choice, not in the paper).
        eta_decay: ``"inverse_t"`` (default) or ``"constant"``.
        normalize_by_variance: divide estimates by ``E[u_i^2]`` (not in the paper; see :class:`BanditOCOMemory`).

    Readings: history slots (index <= 0) are fixed at x0bar, never perturbed or updated (the text says
    ``x_t = x0bar`` for t <= 1, the appendix for t <= 0); queries
    for rounds k < 1 or k > T count as zero and are not made (the paper's ``l_k = 0`` there); memory h = 1
    uses K = W layers on the current block (the paper's ``K = floor(W / (h - 1))`` divides by zero; ocokit's
    choice). Queries go through the oracle narrowed to
    this learner's window (:meth:`ocokit.feedback.Predictions.restrict`): a query beyond it is answered
    ``nan`` and counted in the ``"flagged_queries"`` diagnostic (never happens by construction).

    Example:
        >>> import jax, ocokit
        >>> jax.config.update("jax_enable_x64", True)  # delta' = 1e-4 differences need float64
        >>> problem = ocokit.problems.QuadraticWithMemory(ocokit.sets.Box(-5.0, 5.0, dim=1), memory=2, x0=0.5)
        >>> learner = OCOMemoryLimitedPredictions(window=4, eta=0.2, alpha=0.05, delta=0.2, delta_prime=1e-4,
        ...                                       x0=0.5, half_width=2.0)
        >>> traj = ocokit.run(learner, problem, T=20, key=0)
        >>> int(traj.diagnostics["oracle_calls"][0]), int(traj.diagnostics["lookahead"].max())
        (10, 4)

    References:
        L. Ye, Z. Wang, Z.-W. Liu, M. Chi, X. Wang, H. Su, "Online Convex Optimization with Memory and
        Limited Predictions", arXiv:2410.23574 (v1), 2024. Y. Li, G. Qu, N. Li, "Online optimization with
        predictions and switching costs: fast algorithms and the fundamental limit", IEEE TAC, 2021.
    """

    window: int = eqx.field(static=True)
    eta: Array = hyperparameter()
    alpha: Array = hyperparameter()
    delta: Array = hyperparameter()
    delta_prime: Array = hyperparameter()
    x0: Array = hyperparameter(default=math.nan)
    half_width: Array = hyperparameter(default=math.nan)
    law: str = eqx.field(static=True, default="truncated_gaussian")
    estimator: str = eqx.field(static=True, default="two_point")
    init_perturb: str = eqx.field(static=True, default="unary")
    strict_window: bool = eqx.field(static=True, default=False)
    eta_decay: str = eqx.field(static=True, default="inverse_t")
    normalize_by_variance: bool = eqx.field(static=True, default=False)
    feedback: ClassVar[FeedbackKind] = PREDICTIONS

    def __check_init__(self):
        _checks.positive_int("window", self.window)
        _checks.positive("eta", self.eta)
        _checks.positive("delta", self.delta)
        _check_half_width(self.half_width)
        smoothing_law(self.law)
        _checks.one_of("estimator", self.estimator, _ALG1_ESTIMATORS)
        _checks.one_of("init_perturb", self.init_perturb, _INIT_PERTURB)
        _checks.one_of("eta_decay", self.eta_decay, _ETA_DECAYS)
        _checks.positive("alpha", self.alpha)
        _checks.positive("delta_prime", self.delta_prime)

    @classmethod
    def from_theory(cls, info: ProblemInfo, window: int, *, delta_prime: float = 1e-4, **options: Any):
        """Theorems 1-2: ``eta_r = 1/(r mu)``, ``delta = 1/sqrt(T)``, ``alpha = 1/(beta h)``, Definition 1.

        Needs ``constants.strong_convexity = mu > 0`` and ``constants.smoothness = beta`` (of each f_t on
        ``R^{dh}``, Assumption 1); ``delta_prime`` is "small" in Theorem 2 (its floor vanishes as
        ``delta' -> 0``); ``options`` are passed on.
        """
        mu = info.require("strong_convexity", "OCOMemoryLimitedPredictions.from_theory")
        beta = info.require("smoothness", "OCOMemoryLimitedPredictions.from_theory")
        return cls(
            window=window,
            eta=1.0 / mu,
            alpha=1.0 / (beta * info.memory),
            delta=1.0 / math.sqrt(info.horizon),
            delta_prime=delta_prime,
            **options,
        )

    # ------------------------------------------------------------------ schedule
    @property
    def lookahead(self) -> int:
        """The largest ``k - t`` this learner queries before playing round t: W, or W - 1 if strict."""
        return self.window - 1 if self.strict_window else self.window

    def layers(self, memory: int) -> int:
        """K = floor(W / (h - 1)) (strict: floor((W - 1) / (h - 1))); K = W for h = 1 (ocokit's choice)."""
        if memory == 1:
            return self.window
        return self.lookahead // (memory - 1)

    def init(self, info, key):
        x0, half_width = _resolve(self, info)
        h, K = info.memory, self.layers(info.memory)
        M = self.window + 2 * h + 2  # ring length: every live index fits (Algorithm 1: s_j = t + (K-j-1)(h-1))
        return _OCOMLPState(
            xs=jnp.broadcast_to(x0, (K + 1, M, *x0.shape)),
            grads=jnp.zeros((K, M, h, *x0.shape), x0.dtype),
            it=jnp.asarray(1 - self.window, jnp.int32),
            x0bar=x0,
            half_width=half_width,
            horizon=jnp.asarray(info.horizon, jnp.int32),
            key=key,
            oracle_calls=jnp.asarray(0, jnp.int32),
            lookahead=jnp.asarray(-1, jnp.int32),
            flagged=jnp.asarray(0, jnp.int32),
            domain=info.domain,
        )

    def decide(self, state):
        K, M = state.xs.shape[0] - 1, state.xs.shape[1]
        return state.xs[K, (state.it - 1) % M]

    def prepare(self, state, feedback):
        """Iterations ``1 - W, ..., 1`` on the oracle of round 1 (produces ``x^K_1``)."""
        oracle = feedback.restrict(self.lookahead)
        state = self._reset(state)
        return jax.lax.fori_loop(0, self.window + 1, lambda _, s: self._iteration(s, oracle), state)

    def update(self, state, x, feedback):
        del x
        return self._iteration(self._reset(state), feedback.restrict(self.lookahead))

    def diagnostics(self, state):
        return {
            "oracle_calls": state.oracle_calls,
            "lookahead": state.lookahead,
            "flagged_queries": state.flagged,
        }

    @staticmethod
    def _reset(state: _OCOMLPState) -> _OCOMLPState:
        zero = jnp.zeros_like(state.oracle_calls)
        return eqx.tree_at(lambda s: (s.oracle_calls, s.lookahead, s.flagged), state, (zero, zero - 1, zero))

    def _iteration(self, state: _OCOMLPState, oracle: Any) -> _OCOMLPState:
        """One pass of Algorithm 1's loop body (lines 3-23, typos fixed as in the class) at ``t = state.it``."""
        xs, grads = state.xs, state.grads
        K, M = xs.shape[0] - 1, xs.shape[1]
        h, shape = grads.shape[2], xs.shape[2:]
        t, T, x0bar = state.it, state.horizon, state.x0bar
        project = state.domain.project
        points = 1 if self.estimator in ("one_point", "exact") else 2

        def read(xs, j, slots):
            vals = xs[j, slots % M]
            return jnp.where(_bcast(slots >= 1, shape), vals, x0bar)

        def account(stats, k):
            calls, look, flagged = stats
            used = (k >= 1) & (k <= T)  # l_k = 0 outside the horizon: not queried
            return (
                calls + jnp.where(used, points, 0),
                jnp.maximum(look, jnp.where(used, k - oracle.now, -1)),
                flagged + (used & ~oracle.available(k)).astype(flagged.dtype),
            )

        stats = (state.oracle_calls, state.lookahead, state.flagged)

        # (a) initialisation phase: x^0_{r+1} from l_r, r = t + W - 1.
        r = t + self.window - 1
        slots = _slots(r, h)
        w = read(xs, 0, slots)
        if self.estimator == "exact":
            grad_w = oracle.value_and_grad(r, w)[1]
            mask = (slots == r) if self.init_perturb == "last" else (slots >= 1)
            g = jnp.sum(jnp.where(_bcast(mask, shape), grad_w, 0.0), axis=0)
        else:
            g, _ = _init_gradient(self, lambda v: oracle.predict(r, v), w, slots, r, state.key, state.half_width)
        g = jnp.where((r >= 1) & (r <= T), g, 0.0)
        xs = xs.at[0, (r + 1) % M].set(project(w[-1] - _eta(self, r) * g))
        stats = account(stats, r)

        # (b) layers j = 0..K-1: D^j_k for the new k = s + h - 1, then the update of block s.
        variance = direction_variance(self.law, shape, half_width=state.half_width)

        def layer(j, carry):
            xs, grads, stats = carry
            s = t + (K - j - 1) * (h - 1)
            k = s + h - 1
            slots = _slots(k, h)
            w = read(xs, j, slots)
            if self.estimator == "exact":
                G = oracle.value_and_grad(k, w)[1]
            else:
                stream = jax.random.fold_in(_stream(state.key, 2), j)
                U = jax.vmap(lambda i: _direction(stream, i, shape, self.law, state.half_width))(slots)
                U = jnp.where(_bcast(slots >= 1, shape), U, 0.0)  # the fixed history is not perturbed
                dp = self.delta_prime
                if self.estimator == "two_point":
                    plus, minus = oracle.predict(k, jnp.stack([w + dp * U, w - dp * U]))
                    G = two_point_quotient(plus, minus, dp) * U  # D^j_k u^j_i for every block i of the window
                else:
                    G = one_point_estimate(oracle.predict(k, (w + dp * U)[None])[0], U, dp)
                if self.normalize_by_variance:
                    G = G / variance
            G = jnp.where((k >= 1) & (k <= T), G, 0.0)
            grads = grads.at[j, k % M].set(G)
            ks = s + jnp.arange(h)  # block s sits in slot h - 1 - m of window k = s + m
            acc = jnp.sum(grads[j, ks % M, h - 1 - jnp.arange(h)], axis=0)
            x_s = jnp.where(s >= 1, xs[j, s % M], x0bar)
            old = xs[j + 1, s % M]
            new = jnp.where((s >= 1) & (s <= T), project(x_s - self.alpha * acc), old)
            return xs.at[j + 1, s % M].set(new), grads, account(stats, k)

        if K > 0:  # K = 0 (strict one-round window): x^0 is played
            xs, grads, stats = jax.lax.fori_loop(0, K, layer, (xs, grads, stats))
        calls, look, flagged = stats
        return _OCOMLPState(
            xs=xs,
            grads=grads,
            it=t + 1,
            x0bar=x0bar,
            half_width=state.half_width,
            horizon=T,
            key=state.key,
            oracle_calls=calls,
            lookahead=look,
            flagged=flagged,
            domain=state.domain,
        )

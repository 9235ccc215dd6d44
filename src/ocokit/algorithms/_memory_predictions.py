"""OCO with memory and limited predictions (paper 002, Algorithm 1) and its bandit-OCO-with-memory subroutine.

Two learners hold the part `SmoothingStep` (subroutine (a): its
parameters, the estimate ``g_r``, the step ``eta_r``) as their field ``smoothing``:

* [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory], subroutine (a) on its own: projected online gradient descent
  over the played
  decisions, driven by one- or two-point values of the round's cost at perturbed windows
  (``ZEROTH_ORDER`` feedback);
* [`OCOMemoryLimitedPredictions`][ocokit.algorithms.OCOMemoryLimitedPredictions], Algorithm 1: the same subroutine run W
  rounds ahead on a prediction
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

import functools
import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._smoothing_step import VALUE_ESTIMATORS, SmoothingStep, _bcast, _slots, _stream
from ocokit.feedback import PREDICTIONS, ZEROTH_ORDER, FeedbackKind, Predictions, ZerothOrder
from ocokit.sets import AbstractSet


class AbstractMemoryLearner(AbstractLearner):
    """A learner of paper 002's family: it holds subroutine (a), the part ``smoothing``
    (`SmoothingStep`: ``eta``, ``delta``, ``x0``, ``half_width``,
    ``law``, ``estimator``, ``init_perturb``, ``eta_decay``, ``normalize_by_variance``, with their checks)."""

    smoothing: eqx.AbstractVar[SmoothingStep]


def _window_values(feedback: ZerothOrder, ws: Array) -> Array:
    """``f_t`` at a stack of windows ``ws`` of shape ``(p, h, *shape)``; with h = 1 the loss takes ``x`` itself."""
    return jax.vmap(feedback.loss)(ws if ws.shape[1] > 1 else ws[:, 0])


def _gradient(oracle: Predictions, k: Array, w: Array) -> Array:
    """``grad l_k(w)`` (first-order predictions; ``nan`` outside the oracle's window)."""
    return oracle.value_and_grad(k, w)[1]


# --------------------------------------------------------------------------------------------------
# Subroutine (a) on its own.


class _BanditOCOMemoryState(eqx.Module):
    window: Array  # (h, *shape): x_{t-h+1}, ..., x_t (x0bar before round 1)
    t: Array
    half_width: Array
    key: PRNGKeyArray
    oracle_calls: Array
    domain: AbstractSet  # X, from the learner's info


class BanditOCOMemory(AbstractMemoryLearner):
    r"""Bandit OCO with memory (Ye et al., arXiv 2024: Algorithm 1's initialisation phase, subroutine (a), on its own).

    Update, with ``w_t = (x_{t-h+1}, ..., x_t)`` the window of played decisions and ``u_t`` a fresh
    smoothing direction:

    \[
    \begin{aligned}
    g_t &= \frac{f_t(w_t + P_t) - f_t(w_t - P_t)}{2 \delta}\, u_t && \text{(two-point)} \\
    g_t &= \frac{f_t(w_t + P_t)}{\delta}\, u_t && \text{(one-point)} \\
    x_{t+1} &= \Pi_{\mathcal{X}}(x_t - \eta_t g_t), \quad \eta_t = \eta / t
    \end{aligned}
    \]

    where ``P_t`` shifts the window by ``delta u_t`` (see ``init_perturb``). The values come from
    ``ZEROTH_ORDER`` feedback (the round's cost at two query windows the learner picks). The step is the part
    ``smoothing`` (`SmoothingStep`), built from the arguments below
    except ``estimator="exact"``, which needs gradients.

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
        law: smoothing law, one of `SMOOTHING_LAWS` (static; default
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

    smoothing: SmoothingStep
    feedback: ClassVar[FeedbackKind] = ZEROTH_ORDER
    needs: ClassVar[Needs] = Needs(constants=("strong_convexity",), memory=True)

    def __init__(self, eta: Any, delta: Any, **smoothing: Any):
        self.smoothing = SmoothingStep(eta=eta, delta=delta, **smoothing)  # x0, half_width, law, estimator, ...

    def __check_init__(self):
        _checks.one_of("estimator", self.smoothing.estimator, VALUE_ESTIMATORS)  # values only: no "exact"

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> "BanditOCOMemory":
        """Theorem 1's parameters: ``eta_t = 1/(t mu)``, ``delta = 1/sqrt(T)``, Definition 1's truncation.

        Needs ``constants.strong_convexity = mu > 0``; ``overrides`` give it by name, or constructor arguments
        (``law``, ``x0``, ...).
        """
        mu = info.giving(overrides).require("strong_convexity", "BanditOCOMemory.from_theory")
        return cls.build({"eta": 1.0 / mu, "delta": 1.0 / math.sqrt(info.horizon)}, overrides)

    def init(self, info, key):
        x0, half_width = self.smoothing.resolve(info)
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
        r, values = state.t, functools.partial(_window_values, feedback)
        slots = _slots(r, state.window.shape[0])
        g = self.smoothing.estimate(state.window, slots, r, state.key, state.half_width, values)
        x_next = self.smoothing.step(state.domain, state.window[-1], g, r)
        return _BanditOCOMemoryState(
            window=jnp.concatenate([state.window[1:], x_next[None]], axis=0),
            t=r + 1,
            half_width=state.half_width,
            key=state.key,
            oracle_calls=jnp.asarray(self.smoothing.queries, jnp.int32),
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
    domain: AbstractSet  # X, from the learner's info

    def iterates(self, j: int | Array, slots: Array) -> Array:
        """``x^j`` at the absolute indices ``slots``; history slots (index <= 0) are x0bar."""
        M, shape = self.xs.shape[1], self.xs.shape[2:]
        return jnp.where(_bcast(slots >= 1, shape), self.xs[j, slots % M], self.x0bar)

    def within(self, k: Array) -> Array:
        """Whether index k is in ``1..T`` (``l_k = 0`` outside: not queried; block k outside: not updated)."""
        return (k >= 1) & (k <= self.horizon)

    def reset(self) -> "_OCOMLPState":
        """The state with the per-update counters cleared."""
        zero = jnp.zeros_like(self.oracle_calls)
        return eqx.tree_at(lambda s: (s.oracle_calls, s.lookahead, s.flagged), self, (zero, zero - 1, zero))

    def account(self, k: Array, oracle: Predictions, points: int) -> "_OCOMLPState":
        """The counters after ``points`` queries of round k (none outside ``1..T``)."""
        used = self.within(k)
        counters = (
            self.oracle_calls + jnp.where(used, points, 0),
            jnp.maximum(self.lookahead, jnp.where(used, k - oracle.now, -1)),
            self.flagged + (used & ~oracle.available(k)).astype(self.flagged.dtype),
        )
        return eqx.tree_at(lambda s: (s.oracle_calls, s.lookahead, s.flagged), self, counters)


class OCOMemoryLimitedPredictions(AbstractMemoryLearner):
    r"""Algorithm 1 of Ye et al., "OCO with Memory and Limited Predictions" (bandit OCO + pipelined ZO-PGD).

    At iteration t (Algorithm 1's loop, t = 2 - W, ..., T; iteration t + 1 runs after round t is played):

    (a) initialisation, W rounds ahead (r = t + W - 1, as [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory] but on
    predictions):

    \[
    \begin{aligned}
    x^0_{r+1} &= \Pi_{\mathcal{X}}\big(x^0_r - \eta_r g^0_r\big), \\
    g^0_r &= \frac{l_r(x^0_{r-h+1:r} + P) - l_r(x^0_{r-h+1:r} - P)}{2 \delta}\, u_r
    \end{aligned}
    \]

    (b) K = floor(W / (h - 1)) pipelined layers of zeroth-order projected gradient descent on
    ``C_T(x) = sum_t f_t(x_{t-h+1:t})``; layer j = 0..K-1 updates block ``s = t + (K - j - 1)(h - 1)``:

    \[
    \begin{aligned}
    x^{j+1}_s &= \Pi_{\mathcal{X}}\Big(x^j_s - \alpha\, u^j_s \sum_{k=s}^{s+h-1} D^j_k\Big), \\
    D^j_k &= \frac{l_k(\bar x^j_{k-h+1:k}) - l_k(\tilde x^j_{k-h+1:k})}{2 \delta'}, \\
    \bar x^j_i &= x^j_i + \delta' u^j_i, \quad \tilde x^j_i = x^j_i - \delta' u^j_i
    \end{aligned}
    \]

    with one direction ``u^j_i`` per (layer, block), every block of a window perturbed, and each ``D^j_k``
    queried once and reused for the h blocks it serves; the learner plays ``x_t = x^K_t``.

    With exact gradients in place of the estimates, the layers are exactly K steps of projected gradient
    descent on ``C_T`` from ``x^0`` (tested to 1e-10). Step (a) and the law and estimator of (b) are the part
    ``smoothing`` (`SmoothingStep`), built from the arguments below.

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
            [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory].
        strict_window: False (default) follows the pseudo-code, whose layer 0 queries round ``t + K(h - 1)``,
            i.e. ``t + W`` when ``(h - 1) | W``; True keeps every query in ``{t, ..., t + W - 1}`` (the window
            the paper states) with ``K = floor((W - 1) / (h - 1))`` (ocokit's choice, not in the paper).
        eta_decay: ``"inverse_t"`` (default) or ``"constant"``.
        normalize_by_variance: divide estimates by ``E[u_i^2]`` (not in the paper; see
            [`BanditOCOMemory`][ocokit.algorithms.BanditOCOMemory]).

    Readings: history slots (index <= 0) are fixed at x0bar, never perturbed or updated (the text says
    ``x_t = x0bar`` for t <= 1, the appendix for t <= 0); queries
    for rounds k < 1 or k > T count as zero and are not made (the paper's ``l_k = 0`` there); memory h = 1
    uses K = W layers on the current block (the paper's ``K = floor(W / (h - 1))`` divides by zero; ocokit's
    choice). Queries go through the oracle narrowed to
    this learner's window ([`ocokit.feedback.Predictions.restrict`][ocokit.feedback.Predictions.restrict]): a query
    beyond it is answered
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

    window: int = _checks.checked_field(_checks.positive_int, static=True)
    alpha: Array = hyperparameter(_checks.positive)
    delta_prime: Array = hyperparameter(_checks.positive)
    smoothing: SmoothingStep
    strict_window: bool = eqx.field(static=True, default=False)
    feedback: ClassVar[FeedbackKind] = PREDICTIONS
    needs: ClassVar[Needs] = Needs(constants=("strong_convexity", "smoothness"), memory=True, memoryless=False)

    def __init__(
        self,
        window: int,
        eta: Any,
        alpha: Any,
        delta: Any,
        delta_prime: Any,
        *,
        strict_window: bool = False,
        **smoothing: Any,
    ):
        self.window, self.alpha, self.delta_prime, self.strict_window = window, alpha, delta_prime, strict_window
        self.smoothing = SmoothingStep(eta=eta, delta=delta, **smoothing)  # x0, half_width, law, estimator, ...

    @classmethod
    def from_theory(cls, info: ProblemInfo, window: int, *, delta_prime: float = 1e-4, **overrides: Any):
        """Theorems 1-2: ``eta_r = 1/(r mu)``, ``delta = 1/sqrt(T)``, ``alpha = 1/(beta h)``, Definition 1.

        Needs ``constants.strong_convexity = mu > 0`` and ``constants.smoothness = beta`` (of each f_t on
        ``R^{dh}``, Assumption 1); ``delta_prime`` is "small" in Theorem 2 (its floor vanishes as
        ``delta' -> 0``); ``overrides`` give either constant by name, or constructor arguments.
        """
        info, who = info.giving(overrides), "OCOMemoryLimitedPredictions.from_theory"
        mu, beta = info.require("strong_convexity", who), info.require("smoothness", who)
        theory = {"window": window, "eta": 1.0 / mu, "alpha": 1.0 / (beta * info.memory)}
        return cls.build({**theory, "delta": 1.0 / math.sqrt(info.horizon), "delta_prime": delta_prime}, overrides)

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
        x0, half_width = self.smoothing.resolve(info)
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
        return jax.lax.fori_loop(0, self.window + 1, lambda _, s: self._iteration(s, oracle), state.reset())

    def update(self, state, x, feedback):
        del x
        return self._iteration(state.reset(), feedback.restrict(self.lookahead))

    def diagnostics(self, state):
        return {
            "oracle_calls": state.oracle_calls,
            "lookahead": state.lookahead,
            "flagged_queries": state.flagged,
        }

    # ------------------------------------------------------------------ the loop body
    def _iteration(self, state: _OCOMLPState, oracle: Predictions) -> _OCOMLPState:
        """One pass of Algorithm 1's loop body (lines 3-23, typos fixed as in the class) at ``t = state.it``."""
        state = self._initialisation(state, oracle)
        layers = state.grads.shape[0]
        if layers > 0:  # K = 0 (strict one-round window): x^0 is played
            variance = self.smoothing.variance(state.xs.shape[2:], state.half_width)  # once, outside the layers
            layer = functools.partial(self._layer, oracle=oracle, variance=variance)
            state = jax.lax.fori_loop(0, layers, layer, state)
        return eqx.tree_at(lambda s: s.it, state, state.it + 1)

    def _initialisation(self, state: _OCOMLPState, oracle: Predictions) -> _OCOMLPState:
        """(a), lines 3-7: ``x^0_{r+1} = Pi_X(x^0_r - eta_r g^0_r)`` from ``l_r``, r = t + W - 1 (g = 0 if r > T)."""
        r = state.it + self.window - 1
        slots = _slots(r, state.grads.shape[2])
        w = state.iterates(0, slots)
        values, gradient = functools.partial(oracle.predict, r), functools.partial(_gradient, oracle, r)
        g = self.smoothing.estimate(w, slots, r, state.key, state.half_width, values, gradient)
        g = jnp.where(state.within(r), g, 0.0)
        x0_next = self.smoothing.step(state.domain, w[-1], g, r)
        xs = state.xs.at[0, (r + 1) % state.xs.shape[1]].set(x0_next)
        return eqx.tree_at(lambda s: s.xs, state, xs).account(r, oracle, self.smoothing.queries)

    def _layer(self, j: Array, state: _OCOMLPState, oracle: Predictions, variance: Array) -> _OCOMLPState:
        """(b) at layer j, lines 9-22: ``G^j_k`` for the new ``k = s + h - 1``, then block
        ``s = t + (K - j - 1)(h - 1)``: ``x^{j+1}_s = Pi_X(x^j_s - alpha sum_{k=s}^{s+h-1} D^j_k u^j_s)``."""
        K, M, h = state.grads.shape[:3]
        s = state.it + (K - j - 1) * (h - 1)
        k = s + h - 1
        G = jnp.where(state.within(k), self._window_gradient(state, oracle, j, k, variance), 0.0)
        grads = state.grads.at[j, k % M].set(G)
        ks = s + jnp.arange(h)  # block s sits in slot h - 1 - m of window k = s + m
        acc = jnp.sum(grads[j, ks % M, h - 1 - jnp.arange(h)], axis=0)
        x_s = jnp.where(s >= 1, state.xs[j, s % M], state.x0bar)
        stepped = state.domain.project(x_s - self.alpha * acc)
        new = jnp.where(state.within(s), stepped, state.xs[j + 1, s % M])
        xs = state.xs.at[j + 1, s % M].set(new)
        return eqx.tree_at(lambda st: (st.xs, st.grads), state, (xs, grads)).account(k, oracle, self.smoothing.queries)

    def _window_gradient(self, state: _OCOMLPState, oracle: Predictions, j: Array, k: Array, variance: Array) -> Array:
        """``G^j_k = D^j_k u^j_{k-h+1:k}`` (lines 12-14): layer j's window of round k with every block of index
        >= 1 perturbed by ``delta' u^j_i`` (the fixed history is not); ``grad l_k`` there if ``"exact"``."""
        h, shape = state.grads.shape[2], state.xs.shape[2:]
        slots = _slots(k, h)
        w = state.iterates(j, slots)
        if self.smoothing.estimator == "exact":
            return _gradient(oracle, k, w)
        stream = jax.random.fold_in(_stream(state.key, 2), j)
        U = self.smoothing.directions(stream, slots, shape, state.half_width)
        U = jnp.where(_bcast(slots >= 1, shape), U, 0.0)
        values = functools.partial(oracle.predict, k)
        return self.smoothing.difference(values, w, self.delta_prime * U, self.delta_prime, U, variance)

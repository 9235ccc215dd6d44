"""Yuan and Lamperski's projected gradient step on a squared-hinge penalty (NeurIPS 2018).

The penalised gradient is `penalised_gradient` (hinge subgradient, 0 at the
kink) and ``x_1`` is `start_point`, both shared with the queue learners.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.algorithms._queue_common import STARTS, start_point
from ocokit.algorithms._queues import penalised_gradient
from ocokit.feedback import FULL_INFORMATION, FeedbackKind

FIRST_UPDATES = ("gradient", "penalised")
"""The first update: a plain gradient step on ``f_1`` (the code's ``q = 0`` at t = 2), or already penalised."""


class _YuanLamperskiState(eqx.Module):
    x: Float[Array, "..."]  # x_t, the decision to play
    multiplier: Float[Array, " N"]  # q^n of the last update, [g^n(x_{t-1})]_+ / eta_p (0 before any)
    t: Int[Array, ""]  # rounds absorbed so far
    domain: Any  # X, from the learner's info


class YuanLamperski(AbstractLearner):
    """Yuan and Lamperski's algorithm for cumulative constraints: projected gradient on a squared-hinge penalty.

    Update, after playing ``x_t`` and seeing ``f_t`` and ``g_t = (g_t^1, ..., g_t^N)``::

        q^n     = [g_t^n(x_t)]_+ / eta_p                  (q = 0 in the first update: first_update="gradient")
        x_{t+1} = Pi_X( x_t - beta ( grad f_t(x_t) + sum_n q^n grad g_t^n(x_t) 1[g_t^n(x_t) > 0] ) )

    that is, a projected gradient step of size ``beta`` on ``f_t + (1 / (2 eta_p)) sum_n [g_t^n]_+^2``, from
    ``x_1 = Pi_X(0)``. One projection onto X per round; the penalised gradient is
    `penalised_gradient`.

    Source (verification tags of spec baselines.md §9): update rule and parameters **[C]**, the COLDQ authors'
    single-agent ``Yuan[53].py`` (their code, not Yuan and Lamperski's; the paper's text was not read):
    ``x_1 = 0``, ``q = 0`` for ``x_2``, then ``q^n = [g^n(x_{t-1})]_+ / eta_p``, with ``beta = 1 / sqrt T`` and
    ``eta_p = 1 / (a p G^2 sqrt T)``, ``a = 5``, ``p`` the number of constraints and ``G = 1``. Guarantees
    **[A]** (NeurIPS 2018 text, a fixed constraint ``g``): cumulative squared violation
    ``sum_t [g(x_t)]_+^2 = O(T^{1 - b})`` for ``b in (0, 1)`` (the squared violation,
    [`ocokit.metrics.squared_violation`][ocokit.metrics.squared_violation]), with regret bounds that generalise the
    existing ones and improve
    for strongly convex losses.

    Args:
        beta: step size, > 0 (``from_theory``: ``1 / sqrt T``).
        eta_p: penalty parameter (the penalty is ``1 / (2 eta_p)`` times the squared hinge), > 0
            (``from_theory``: ``1 / (a p G^2 sqrt T)``).
        first_update: ``"gradient"`` (default, **[C]**): ``x_2`` is a plain gradient step on ``f_1`` (the code
            sets ``q = 0`` at t = 2); ``"penalised"``: every update, the first too, is the penalised step (static).
        start: ``"origin"`` (default) plays ``x_1 = Pi_X(0)`` (the code's ``x_1 = 0``); ``"center"`` plays
            ``X.center()`` (static).

    Readings: the paper's constraint is fixed; with time-varying constraints round t's ``g_t`` is used at
    ``x_t``. The hinge's subgradient is 0 at the kink, as in every code of spec §0.2.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.OnlineQuadraticProgram()
        >>> learner = YuanLamperski.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 50))
        >>> ocokit.run(learner, problem, T=50).constraints.shape
        (50, 3)

    References:
        J. Yuan and A. Lamperski. Online convex optimization for cumulative constraints. NeurIPS 2018.
    """

    beta: Float[Array, ""] = hyperparameter()
    eta_p: Float[Array, ""] = hyperparameter()
    first_update: str = eqx.field(static=True, default="gradient")
    start: str = eqx.field(static=True, default="origin")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _checks.positive("beta", self.beta)
        _checks.positive("eta_p", self.eta_p)
        _checks.one_of("first_update", self.first_update, FIRST_UPDATES)
        _checks.one_of("start", self.start, STARTS)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, a: float = 5.0, G: float = 1.0, **overrides: Any) -> YuanLamperski:
        """``beta = 1 / sqrt T`` and ``eta_p = 1 / (a p G^2 sqrt T)`` with ``p = max(N, 1)`` constraints **[C]**.

        ``a = 5`` and ``G = 1`` are the values of the COLDQ authors' code (spec baselines.md §9); the paper's
        ``G`` (a gradient bound) was not read, so no problem constant is used. ``overrides`` replace
        constructor arguments (``beta``, ``eta_p``, ``first_update``, ``start``).
        """
        _checks.positive("a", a)
        _checks.positive("G", G)
        root, p = math.sqrt(info.horizon), max(info.num_constraints, 1)
        return cls.build({"beta": 1.0 / root, "eta_p": 1.0 / (a * p * G**2 * root)}, overrides)

    def init(self, info, key):
        del key
        x = start_point(info.domain, self.start)
        multiplier = jnp.zeros((info.num_constraints,), x.dtype)
        return _YuanLamperskiState(x, multiplier, jnp.asarray(0, jnp.int32), info.domain)

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        q = jnp.maximum(feedback.constraints(x), 0.0) / self.eta_p
        if self.first_update == "gradient":
            q = jnp.where(state.t == 0, jnp.zeros_like(q), q)  # the code's q = 0 at t = 2
        d, _ = penalised_gradient(feedback, x, 1.0, q, hinge=True)
        x_next = state.domain.project(x - self.beta * d).astype(x.dtype)
        return _YuanLamperskiState(x_next, q.astype(x.dtype), state.t + 1, state.domain)

    def diagnostics(self, state):
        """``oracle_calls`` (one projection) and ``multiplier``, the ``q`` of the last update."""
        return {"oracle_calls": jnp.asarray(1, jnp.int32), "multiplier": state.multiplier}

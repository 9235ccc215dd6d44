"""Drift-plus-penalty with virtual queues: the algorithm of Yu, Neely and Wei (NeurIPS 2017).

The queue update is `drift_plus_penalty` and ``x(1)`` is
`start_point`, both shared with the other queue learners.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.algorithms._queue_common import STARTS, start_point
from ocokit.algorithms._queues import drift_plus_penalty
from ocokit.feedback import FULL_INFORMATION, FeedbackKind


class _YuNeelyWeiState(eqx.Module):
    x: Array  # x(t), the decision to play
    queue: Array  # Q_k(t), one virtual queue per constraint
    t: Array  # rounds absorbed so far
    domain: Any  # K, from the learner's info


class YuNeelyWei(AbstractLearner):
    r"""Yu-Neely-Wei drift-plus-penalty (DPP): projected primal step plus linearised virtual queues.

    Update (after playing ``x(t)`` and seeing ``f^t`` and ``g^t = (g_1^t, ..., g_N^t)``):

    \[
    \begin{aligned}
    d(t) &= V \nabla f^t(x(t)) + \sum_k Q_k(t)\, \nabla g_k^t(x(t)) \\
    x(t+1) &= \Pi_{\mathcal{X}_0}\big( x(t) - d(t) / (2\alpha) \big)
        = \operatorname*{arg\,min}_{x \in \mathcal{X}_0} \langle d(t), x - x(t) \rangle + \alpha \|x - x(t)\|^2 \\
    Q_k(t+1) &= \max\big\{ Q_k(t) + g_k^t(x(t)) + \langle \nabla g_k^t(x(t)), x(t+1) - x(t) \rangle,\ 0 \big\}
    \end{aligned}
    \]

    with ``Q_k(1) = 0``. The queue is updated with the old constraint linearised at the new point
    (`drift_plus_penalty`). One projection
    onto ``X_0 = K`` per round.

    Source: Yu, Neely and Wei's Algorithm 1, reconstructed (the paper's text was not readable) from two
    independent public implementations that agree (``zv3zdochka/oco_pfs_project``, ``dpp.py``, and
    ``INFORMSJoC/2021.0248``, ``YNW_x.m``). Guarantees (the NeurIPS 2017 abstract): with ``V = sqrt(T)`` and
    ``alpha = T``, O(sqrt(T)) expected regret and expected soft constraint violation
    ``sum_t g_k^t(x(t))`` for i.i.d. stochastic constraints under Slater's condition; O(sqrt(T) log T)
    with high probability.

    Args:
        V: penalty weight on the loss gradient, > 0 (``from_theory``: ``sqrt(T)``).
        alpha: proximal weight (the primal step is ``1 / (2 alpha)``), > 0 (``from_theory``: ``T``).
        start: ``"origin"`` (default) plays ``x(1) = Pi_K(0)``, as both reference implementations do
            (``0`` itself when ``0 in K``); ``"center"`` plays ``K.center()`` (static).

    Readings: the hinge-free queue of both implementations (``max{., 0}`` of the linearised sum), proximal
    weight without 1/2 (``d / (2 alpha)``, RECOO's and COLDQ's convention too). With no constraints (N = 0)
    this is projected OGD with step ``V / (2 alpha)``.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = YuNeelyWei.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 50))
        >>> ocokit.run(learner, problem, T=50).constraints.shape
        (50, 2)

    References:
        H. Yu, M. J. Neely and X. Wei. Online convex optimization with stochastic constraints. NeurIPS 2017.
    """

    V: Array = hyperparameter()
    alpha: Array = hyperparameter()
    start: str = eqx.field(static=True, default="origin")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _checks.positive("V", self.V)
        _checks.positive("alpha", self.alpha)
        _checks.one_of("start", self.start, STARTS)

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> YuNeelyWei:
        """``V = sqrt(T)``, ``alpha = T`` (both reference implementations; Yu, Neely and Wei's theory as recalled).

        ``overrides`` replace constructor arguments (``V``, ``alpha``, ``start``).
        """
        T = info.horizon
        return cls.build({"V": math.sqrt(T), "alpha": float(T), "start": "origin"}, overrides)

    def init(self, info, key):
        del key
        domain = info.domain
        x = start_point(domain, self.start)
        return _YuNeelyWeiState(
            x=x,
            queue=jnp.zeros((info.num_constraints,), dtype=x.dtype),
            t=jnp.asarray(0, jnp.int32),
            domain=domain,
        )

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        domain = state.domain
        dtype = x.dtype
        g = feedback.constraints(x)  # (N,)
        J = feedback.constraints_jacobian(x)  # (N, *shape)
        n = g.shape[0]
        J2 = J.reshape(n, x.size)
        d = self.V * feedback.grad(x) + (state.queue @ J2).reshape(x.shape)
        x_new = domain.project(x - d / (2.0 * self.alpha)).astype(dtype)
        linearised = g + J2 @ (x_new - x).ravel()
        queue = drift_plus_penalty(state.queue, linearised).astype(dtype)  # eq. (3)
        return _YuNeelyWeiState(x=x_new, queue=queue, t=state.t + 1, domain=domain)

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(1, jnp.int32), "queue": state.queue}

"""Sinha and Vaze's Lyapunov reduction (NeurIPS 2024): AdaGrad on a drift-plus-penalty surrogate of the CCV.

The surrogate ``V beta f_t + Phi'(Q) beta [g_t]_+`` and its queue are the part
`LyapunovSurrogate` (the same surrogate as the TVC family of paper 000,
which cites Sinha and Vaze for it), ``x_1`` is `start_point` and the
Lipschitz bound of ``from_theory`` is `lipschitz_bound`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._queue_common import STARTS, start_point
from ocokit.algorithms._tvc_common import LyapunovSurrogate, lipschitz_bound
from ocokit.feedback import FULL_INFORMATION, FeedbackKind

VARIANTS = ("convex", "strongly_convex")
"""The paper's two settings: convex losses (the default, verified) and strongly convex losses (unverified)."""
MULTI = ("per_constraint", "max")
"""Several constraints: one queue per constraint (the COLDQ authors' code) or one queue of ``max_n g^n``."""
_PHI = {"convex": "exp", "strongly_convex": "square"}  # Phi(Q) = exp(lam Q) - 1, or Q^2


class _SinhaVazeState(eqx.Module):
    x: Float[Array, "..."]  # x_t, the decision to play
    ccv: Float[Array, "..."]  # sum_{s<t} [g_s(x_s)]_+, per constraint (N,) or of the maximum (); Q = beta ccv
    sumsq: Float[Array, ""]  # sum_{s<t} ||nabla_s||^2, the AdaGrad-norm accumulator
    t: Int[Array, ""]  # rounds absorbed so far
    domain: Any  # X, from the learner's info


class SinhaVaze(AbstractLearner):
    """Sinha and Vaze's algorithm: adaptive OGD (AdaGrad-norm) on a Lyapunov surrogate of loss and CCV.

    Update (convex variant), after playing ``x_t`` and seeing ``f_t`` and ``g_t = (g_t^1, ..., g_t^N)``::

        Q^n     <- Q^n + beta [g_t^n(x_t)]_+                       (the queue first, Q^n = 0 before round 1)
        nabla_t  = V beta grad f_t(x_t) + sum_n Phi'(Q^n) beta s^n,  s^n = grad g_t^n(x_t) 1[g_t^n(x_t) > 0]
        eta_t    = sqrt(2) D / (2 sqrt(sum_{tau <= t} ||nabla_tau||^2))     (includes the current gradient)
        x_{t+1}  = Pi_X(x_t - eta_t nabla_t)

    with ``Phi(Q) = exp(lam Q) - 1``, so ``Phi'(Q) = lam exp(lam Q)``, and ``x_1 = Pi_X(0)``. The queue
    ``Q^n = beta sum_{s <= t} [g_s^n(x_s)]_+`` is the CCV of the scaled constraint ``beta [g^n]_+``: the queue is
    updated with round t's violation *before* the step of round t (spec baselines.md §10.1). One projection
    onto X per round. With ``multi="max"`` the N constraints are first reduced to ``g_t = max_n g_t^n`` (one
    queue). The surrogate's gradient and queue are the part
    `LyapunovSurrogate` with ``gamma = V``
    (`per_constraint` or ``full_information``).

    Strongly convex variant (``variant="strongly_convex"``, **unverified**: recalled, not read in the paper):
    ``Phi(Q) = Q^2`` (``Phi'(Q) = 2Q``), ``beta = 1``, ``V = G^2 ln(T e) / alpha`` and OGD steps
    ``eta_t = 1 / sum_{s <= t} H_s`` with ``H_s = V alpha`` (the surrogate's strong convexity), i.e.
    ``eta_t = 1 / (V alpha t)``.

    Source (verification tags of spec baselines.md §8): update rule **[C]**, the COLDQ authors' single-agent
    ``Sinha[28].py`` (their code, not Sinha and Vaze's), which agrees with the authors' own restatement of their
    Algorithm 1 (Vaze and Sinha, "O(sqrt T) Static Regret and Instance Dependent Constraint Violation for
    Constrained Online Convex Optimization", Section 3: one constraint, the queue before the gradient, the
    AdaGrad-norm step, ``x_1 = 0``); convex parameters ``beta = 1/(2GD)``, ``V = 1``, ``lam = 1/(2 sqrt T)``
    verified through that restatement (the code tunes ``V``); strongly convex parameters **(unverified)**; one
    queue per constraint **[C]**, the reduction by the maximum **(unverified)**, recalled from the paper.
    Guarantees **[A]** (NeurIPS 2024 abstract; adversarial losses and constraints, adaptive adversary):
    ``O(sqrt T)`` regret and ``O~(sqrt T)`` CCV for convex losses; ``O(log T)`` regret and the same CCV for
    strongly convex losses.

    Args:
        V: weight of the loss in the surrogate, > 0 (``from_theory``: 1 convex, ``G^2 ln(T e) / alpha``
            strongly convex).
        beta: scale of loss and constraints, > 0 (``from_theory``: ``1 / (2 G D)`` convex, 1 strongly convex).
        lam: scale of ``Phi(Q) = exp(lam Q) - 1``, > 0 for ``variant="convex"`` (``from_theory``:
            ``1 / (2 sqrt T)``; unused otherwise).
        D: the diameter in the AdaGrad-norm step, > 0 for ``variant="convex"`` (``from_theory``: X's diameter;
            unused otherwise).
        alpha: strong convexity modulus of the losses, > 0 for ``variant="strongly_convex"`` (unused otherwise).
        variant: ``"convex"`` (default) or ``"strongly_convex"`` (**unverified**) (static).
        multi: ``"per_constraint"`` (default, **[C]**: one queue per constraint) or ``"max"`` (one queue of
            ``max_n g^n``, the paper's reduction as recalled) (static).
        start: ``"origin"`` (default) plays ``x_1 = Pi_X(0)`` (the paper's and the code's ``x_1 = 0``);
            ``"center"`` plays ``X.center()`` (static).

    Readings: ``Phi'`` caps its exponent at 600 (``exp(600) ~ 1e260``: finite for any queue; the reference
    code has no cap, and ``lam Q`` stays far below it at the theory's ``lam``). Where every gradient so far is 0
    (``sum ||nabla||^2 = 0``) the step is 0 and ``x`` stays (the code's formula gives ``inf * 0 = nan``). Several
    constraints: the restatement has one ``g_t``, so both readings are offered (``multi``).

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = SinhaVaze.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 50))
        >>> bool(ocokit.run(learner, problem, T=50).diagnostics["queue"].min() >= 0)
        True

    References:
        A. Sinha and R. Vaze. Optimal Algorithms for Online Convex Optimization with Adversarial Constraints.
        NeurIPS 2024 (arXiv:2310.18955), Algorithm 1.
    """

    V: Float[Array, ""] = hyperparameter()
    beta: Float[Array, ""] = hyperparameter()
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    D: Float[Array, ""] = hyperparameter(default=math.nan)
    alpha: Float[Array, ""] = hyperparameter(default=math.nan)
    variant: str = eqx.field(static=True, default="convex")
    multi: str = eqx.field(static=True, default="per_constraint")
    start: str = eqx.field(static=True, default="origin")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    needs: ClassVar[Needs] = Needs(
        constants=("grad_bound", "diameter"),
        constrained_constants=("constraint_grad_bound",),
        optional=("strong_convexity",),
    )

    def __check_init__(self):
        _checks.positive("V", self.V)
        _checks.positive("beta", self.beta)
        _checks.one_of("variant", self.variant, VARIANTS)
        _checks.one_of("multi", self.multi, MULTI)
        _checks.one_of("start", self.start, STARTS)
        if self.variant == "convex":
            _checks.positive("lam", self.lam)
            _checks.positive("D", self.D)
        else:
            _checks.positive("alpha", self.alpha)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, variant: str = "convex", **overrides: Any) -> SinhaVaze:
        """The paper's parameters, with ``G = max(grad_bound, constraint_grad_bound)`` and ``D`` X's diameter.

        ``variant="convex"``: ``V = 1``, ``beta = 1 / (2 G D)``, ``lam = 1 / (2 sqrt T)`` (verified through the
        authors' restatement, spec baselines.md §8.2). ``variant="strongly_convex"`` **(unverified)**: ``beta = 1``,
        ``alpha`` the problem's ``strong_convexity`` (> 0) and ``V = G^2 ln(T e) / alpha`` (the paper's
        ``V ~ G^2 ln(Te) / alpha`` with constant 1). ``overrides`` give the constants by name (``grad_bound``,
        ``constraint_grad_bound``, ``diameter``, ``strong_convexity``) or replace constructor arguments
        (``V``, ``multi``, ...).
        """
        _checks.one_of("variant", variant, VARIANTS)
        info, who = info.giving(overrides), f"{cls.__name__}.from_theory"
        G, T = lipschitz_bound(info, who), info.horizon
        if variant == "convex":
            D = info.require("diameter", who)
            arguments = {"V": 1.0, "beta": 1.0 / (2.0 * G * D), "lam": 1.0 / (2.0 * math.sqrt(T)), "D": D}
        else:
            alpha = info.require("strong_convexity", who)
            arguments = {"V": G**2 * math.log(T * math.e) / alpha, "beta": 1.0, "alpha": alpha}
        return cls.build({**arguments, "variant": variant}, overrides)

    @property
    def lyapunov(self) -> LyapunovSurrogate:
        """The surrogate ``V beta f_t + Phi'(beta ccv) beta [g_t]_+`` with its queue (``gamma = V``)."""
        return LyapunovSurrogate(self.beta, self.V, self.lam, _PHI[self.variant])

    def init(self, info, key):
        del key
        x = start_point(info.domain, self.start)
        shape = () if self.multi == "max" else (info.num_constraints,)
        zero = jnp.zeros((), x.dtype)
        return _SinhaVazeState(x, jnp.zeros(shape, x.dtype), zero, jnp.asarray(0, jnp.int32), info.domain)

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        surrogate = self.lyapunov
        if self.multi == "max":
            nabla, ccv, _ = surrogate.full_information(feedback, x, state.ccv)
        else:
            nabla, ccv, _ = surrogate.per_constraint(feedback, x, state.ccv)
        sumsq = state.sumsq + jnp.sum(nabla * nabla)
        t = state.t + 1
        if self.variant == "convex":  # AdaGrad-norm, the current gradient included; no step while all are 0
            positive = sumsq > 0
            eta = jnp.where(positive, math.sqrt(2.0) * self.D / (2.0 * jnp.sqrt(jnp.where(positive, sumsq, 1.0))), 0)
        else:
            eta = 1.0 / (self.V * self.alpha * t.astype(x.dtype))
        x_next = state.domain.project(x - eta * nabla).astype(x.dtype)
        return _SinhaVazeState(x_next, ccv.astype(x.dtype), sumsq.astype(x.dtype), t, state.domain)

    def diagnostics(self, state):
        """``oracle_calls`` (one projection) and ``queue``, the paper's ``Q = beta ccv``."""
        return {"oracle_calls": jnp.asarray(1, jnp.int32), "queue": self.beta * state.ccv}

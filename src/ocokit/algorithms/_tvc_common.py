"""The queue and the Lyapunov surrogate shared by the TVC family of paper 000 (Wang, Wan and Zhang, eqs. 4-6).

All four learners (`_tvc`, `_bandit_tvc`) run a Frank-Wolfe
method on the Lyapunov drift-plus-penalty surrogate (eq. 6 of 000)

    tilde f_t(x) = gamma beta f_t(x) + Phi'(beta Q_t) beta g_t^+(x),    Q_t = Q_{t-1} + g_t^+(x_t)   (eq. 4),

written once here (`lyapunov_prime`, `queue_step`, the part `LyapunovSurrogate`), with the
doubling of the surrogate-gradient bound (`double_until`) and the theory constants. Several
constraint functions are reduced to ``g_t = max_n g_t^n`` (the paper treats one scalar ``g_t``; the maximum
is convex and as Lipschitz as its parts), so ``Q_t`` is the CCV of that maximum. The surrogate is Sinha and
Vaze's (NeurIPS 2024), whose learner [`SinhaVaze`][ocokit.algorithms.SinhaVaze] uses the same part, with one queue
per constraint by default (`per_constraint`).

Reference: Y. Wang, Y. Wan and L. Zhang, "Revisiting Projection-Free Online Learning with Time-Varying
Constraints", AAAI 2025 (arXiv:2501.16919).
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.algorithms._queues import penalised_gradient

PHIS = ("exp", "square_plus_linear", "square", "linear")
"""Lyapunov functions: ``exp(lam x) - 1`` (Thms 1, 3), ``x^2 + x`` (Thm 2), ``x^2`` (Thm 4), ``x`` (G&K)."""

_EXP_CAP = 600.0  # exp(600) ~ 1e260: Phi' stays finite for any queue (exp(lam beta Q) can overflow for large beta)
_BOUND_CAP = 1e300


def lyapunov_prime(phi: str, x: Any, lam: Any = 1.0) -> Array:
    """``Phi'(x)`` for the Lyapunov function ``phi`` (one of `PHIS`; ``lam`` scales ``"exp"``).

    ``exp``: ``lam exp(lam x)`` with the exponent capped at 600 (finite for any queue);
    ``square_plus_linear``: ``2x + 1``; ``square``: ``2x``; ``linear``: ``1``.
    """
    x = jnp.asarray(x)
    if phi == "exp":
        return lam * jnp.exp(jnp.minimum(lam * x, _EXP_CAP))
    if phi == "square_plus_linear":
        return 2.0 * x + 1.0
    if phi == "square":
        return 2.0 * x
    if phi == "linear":
        return jnp.ones_like(x)
    raise ValueError(f"phi must be one of {sorted(PHIS)}, got {phi!r}")


def lyapunov(phi: str, x: Any, lam: Any = 1.0) -> Array:
    """``Phi(x)``: ``exp(lam x) - 1``, ``x^2 + x``, ``x^2`` or ``x`` (Definition 1 of 000)."""
    x = jnp.asarray(x)
    if phi == "exp":
        return jnp.expm1(jnp.minimum(lam * x, _EXP_CAP))
    if phi == "square_plus_linear":
        return x * x + x
    if phi == "square":
        return x * x
    if phi == "linear":
        return x
    raise ValueError(f"phi must be one of {sorted(PHIS)}, got {phi!r}")


def queue_step(Q: Array, g: Array, beta: Any, phi: str, lam: Any) -> tuple[Array, Array]:
    """Eq. (4) then the weight of eq. (6): ``Q_t = Q_{t-1} + g_t^+`` and ``w_t = Phi'(beta Q_t)``.

    The queue is updated first, so round t's surrogate uses ``Q_t`` (Step 4 of Algorithms 1-2, Step 5 of 3-4).
    """
    Q = Q + jnp.maximum(g, 0.0)
    return Q, lyapunov_prime(phi, beta * Q, lam)


def _max_constraint(values: Array) -> Array:
    return jnp.max(values) if values.shape[0] else jnp.zeros((), values.dtype)


class LyapunovSurrogate(eqx.Module):
    """The surrogate of eq. (6), ``tilde f_t = gamma beta f_t + Phi'(beta Q_t) beta g_t^+``, and its queue (eq. 4).

    A part every TVC learner builds from its own ``beta``, ``gamma``, ``lam`` and ``phi`` (its ``lyapunov``).

    Args:
        beta: queue scale ``> 0``.
        gamma: loss weight ``> 0``.
        lam: scale of ``Phi = exp(lam x) - 1`` (``> 0`` when ``phi="exp"``, unused otherwise).
        phi: the Lyapunov function, one of `PHIS` (static).
    """

    beta: Any
    gamma: Any
    lam: Any
    phi: str = eqx.field(static=True)

    def __check_init__(self):
        _checks.positive("beta", self.beta)
        _checks.positive("gamma", self.gamma)
        _checks.one_of("phi", self.phi, PHIS)
        if self.phi == "exp":
            _checks.positive("lam", self.lam)

    def full_information(self, feedback: Any, x: Array, Q: Array) -> tuple[Array, Array, Array]:
        """``(grad tilde f_t(x_t), Q_t, w_t)`` from first-order feedback (eq. 6; ``grad g_t^+ = 0`` at 0)."""
        g, grad_g = jax.value_and_grad(lambda z: _max_constraint(feedback.constraints(z)))(x)
        Q, w = queue_step(Q, g, self.beta, self.phi, self.lam)
        active = (g > 0).astype(x.dtype)  # h_t = grad g_t 1[g_t(x_t) > 0]
        grad = self.gamma * self.beta * feedback.grad(x) + w * self.beta * active * grad_g
        return grad, Q, w

    def per_constraint(self, feedback: Any, x: Array, Q: Array) -> tuple[Array, Array, Array]:
        """``(grad tilde f_t(x_t), Q_t, w_t)`` with one queue per constraint, ``Q`` of shape ``(N,)``.

        ``Q_t^n = Q_{t-1}^n + [g_t^n(x_t)]_+`` and ``grad = gamma beta grad f_t + sum_n Phi'(beta Q_t^n) beta
        grad [g_t^n]_+`` (`penalised_gradient`): the surrogate of Sinha and Vaze
        as the COLDQ authors implement it for several constraints ([`SinhaVaze`][ocokit.algorithms.SinhaVaze]).
        """
        Q, w = queue_step(Q, feedback.constraints(x), self.beta, self.phi, self.lam)
        grad, _ = penalised_gradient(feedback, x, self.gamma * self.beta, w * self.beta, hinge=True)
        return grad, Q, w

    def bandit(self, feedback: Any, Q: Array) -> tuple[Array, Array, Array]:
        """``(tilde f_t(x_t), Q_t, w_t)`` from the two observed values (eq. 6 at the played point)."""
        g = _max_constraint(feedback.constraints)
        Q, w = queue_step(Q, g, self.beta, self.phi, self.lam)
        value = self.gamma * self.beta * feedback.loss + w * self.beta * jnp.maximum(g, 0.0)
        return value, Q, w


class AbstractLyapunovLearner(AbstractLearner):
    """A TVC learner of paper 000: it declares ``beta``, ``gamma``, ``lam`` and ``phi``, and its surrogate part
    ``lyapunov`` (`LyapunovSurrogate`, eq. 6) is built from them here, once (which checks them).

    ``from_theory`` reads ``G`` (`lipschitz_bound`) and ``D = diameter(K)``, and each constant of a
    subclass's ``needs.reads`` may be given to it by name ([`build`][ocokit.algorithms.AbstractLearner.build]).
    """

    beta: eqx.AbstractVar[Float[Array, ""]]
    gamma: eqx.AbstractVar[Float[Array, ""]]
    lam: eqx.AbstractVar[Float[Array, ""]]
    phi: eqx.AbstractVar[str]

    def __check_init__(self):
        _ = self.lyapunov  # building the surrogate checks beta, gamma, phi and lam

    @property
    def lyapunov(self) -> LyapunovSurrogate:
        """The surrogate of eq. (6) with this learner's ``beta``, ``gamma``, ``lam`` and ``phi``."""
        return LyapunovSurrogate(self.beta, self.gamma, self.lam, self.phi)


def double_until(G_tilde: Array, bound: Array) -> Array:
    """Steps 5-7 of Alg. 1: double ``G_tilde`` until ``G_tilde >= bound`` (closed form; never shrinks)."""
    bound = jnp.minimum(jnp.nan_to_num(bound, nan=0.0), _BOUND_CAP)
    ratio = bound / G_tilde
    k = jnp.where(ratio > 1.0, jnp.ceil(jnp.log2(jnp.maximum(ratio, 1.0))), 0.0).astype(jnp.int32)
    new = jnp.ldexp(G_tilde, k)
    new = jnp.where(new < bound, 2.0 * new, new)  # rounding of log2 in either direction
    return jnp.where((k > 0) & (new / 2.0 >= bound) & (new / 2.0 >= G_tilde), new / 2.0, new)


def restart_if_doubled(G_tilde: Array, bound: Array) -> tuple[Array, Array]:
    """``(G~_new, restart)``: `double_until` and whether it doubled (a new epoch starts now)."""
    new = double_until(G_tilde, bound)
    return new, new > G_tilde


# --------------------------------------------------------------------------------------------------
# Theory constants.


THEORIES = ("proof", "statement")
"""The readings of Thms 2 and 4, whose statements and proofs set beta and gamma differently."""


def lipschitz_bound(info: ProblemInfo, who: str) -> float:
    """``G``: the common Lipschitz bound of f_t and g_t (Assumption 2), ``max(grad_bound, constraint_grad_bound)``.

    Each constant is read through [`ProblemInfo.require`][ocokit.algorithms.ProblemInfo.require];
    ``constraint_grad_bound`` only when there are
    constraints.
    """
    G = info.require("grad_bound", who)
    if info.num_constraints:
        G = max(G, info.require("constraint_grad_bound", who))
    return G

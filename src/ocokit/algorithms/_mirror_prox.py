"""Online primal-dual mirror prox (Qiu and Wei 2020, paper 004): Algorithm 1 and its simplex version.

Both learners share one round, written once on their abstract class `AbstractMirrorProx`: a
virtual-queue update (`mirror_prox_queue`), then two Bregman prox steps
from the same prox centre with the same ``alpha_t`` and the same linearised constraints, the first with
the previous round's gradient (optimistic, played), the second with the fresh one (the next centre). The
prox steps are the geometries of `_mirror`; each learner gives only its bound on
``alpha_t`` (Theorem 4.1 or 6.1) and its prox centre.
"""

import abc
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._mirror import (
    AbstractMirrorGeometry,
    EntropicGeometry,
    EuclideanGeometry,
    mix_uniform,
)
from ocokit.algorithms._queues import mirror_prox_queue
from ocokit.feedback import FULL_INFORMATION, FeedbackKind
from ocokit.sets import AbstractSet, Simplex


def _optional_array(value: Any) -> Array | None:
    return None if value is None else jnp.asarray(value)


class _MirrorProxState(eqx.Module):
    x: Float[Array, "*shape"]  # x_t, the decision to play (computed before round t's loss exists)
    x_tilde: Float[Array, "*shape"]  # x~_t, the intermediate iterate
    center: Float[Array, "*shape"]  # prox centre of round t: x~_t (Alg. 1) or y~_t (Alg. 2)
    grad_prev: Float[Array, "*shape"]  # grad f^{t-1}(x_{t-1}) (the round-0 hint grad f^0(x_0) at t = 1)
    g_prev: Float[Array, " K"]  # g(x_{t-1})
    queue: Float[Array, " K"]  # Q(t)
    alpha: Float[Array, ""]  # alpha_t
    c: Float[Array, "*shape"]  # c_t = gamma sum_k (Q_k(t) + gamma g_k(x_{t-1})) grad g_k(x_{t-1})
    t: Int[Array, ""]  # rounds absorbed so far
    domain: Any  # X_0, from the learner's info


def _constraints_at(fn, x, K: int):
    """``g(x)`` and its Jacobian (``(K,)``, ``(K, *x.shape)``) from a known constraint function, or zeros."""
    if fn is None:
        return jnp.zeros((K,), x.dtype), jnp.zeros((K, *x.shape), x.dtype)
    g = jnp.reshape(fn(x), (K,)).astype(x.dtype)
    return g, jnp.reshape(jax.jacrev(fn)(x), (K, *x.shape)).astype(x.dtype)


class MirrorProxConstants(_checks.Checked):
    """The constants of Assumption 2.1 (Qiu and Wei 2020) that set ``alpha_t``, each ``>= 0``.

    Args:
        L_f: Lipschitz constant of ``grad f^t`` in the geometry's norms.
        L_g: Lipschitz constant of every ``grad g_k`` (0 for linear constraints).
        G: bound on ``sum_k |g_k(x)|`` over X_0 (an l1 bound, not per constraint).
        H: ``sum_k H_k`` of the Lipschitz constants of the ``g_k`` (a sum, not a max).
    """

    L_f: Float[Array, ""] = hyperparameter(_checks.nonnegative)
    L_g: Float[Array, ""] = hyperparameter(_checks.nonnegative)
    G: Float[Array, ""] = hyperparameter(_checks.nonnegative)
    H: Float[Array, ""] = hyperparameter(_checks.nonnegative)

    def xi(self, gamma: Any, queue: Array) -> Array:
        """Eq. (6): ``xi_t = gamma L_g ||Q(t)||_1 + gamma^2 (L_g G + H^2)``."""
        return gamma * self.L_g * jnp.sum(jnp.abs(queue)) + gamma**2 * (self.L_g * self.G + self.H**2)


def _theory_parameters(info: ProblemInfo, variation, L_f, L_g, G, H, name: str, norm: str) -> dict[str, float]:
    """``eta``, ``gamma``, ``L_f``, ``L_g``, ``G``, ``H`` of Theorems 4.1 / 6.1, ``M = max{V, L_f^2}``, ``V >= V_*(T)``.

    The constructor arguments the two learners' ``from_theory`` share (``name`` is the class, for errors).
    Problem constants are read with [`ProblemInfo.require`][ocokit.algorithms.ProblemInfo.require], in the dual
    ``norm`` of the learner's geometry: ``L_f`` (``smoothness``), ``L_g`` (``constraint_smoothness``), ``G`` and
    ``H``, sums over the K constraints (``constraint_sum_bound`` and ``constraint_grad_sum_bound``, else bounded by
    ``K constraint_bound`` and ``K constraint_grad_bound``); the keywords win over the problem's.
    """
    K, T = info.num_constraints, info.horizon
    who = f"{name}.from_theory"

    def constant(given: float | None, label: str, name: str, what: str) -> float:
        return info.require(name, f"{who} ({label}, {what})", given, allow_zero=True, argument=label, norm=norm)

    L_f = constant(L_f, "L_f", "smoothness", "the Lipschitz constant of grad f^t")
    L_g = 0.0 if K == 0 and L_g is None else constant(L_g, "L_g", "constraint_smoothness", "that of every grad g_k")

    def summed(given: float | None, label: str, total: str, each: str) -> float:  # sum over K, or K x the bound
        if given is not None or K == 0:
            return 0.0 if given is None else given
        known = info.require(total, who, allow_zero=True, optional=True, norm=norm)
        return known if known is not None else K * constant(None, label, each, f"<= K {each}")

    G = summed(G, "G", "constraint_sum_bound", "constraint_bound")
    H = summed(H, "H", "constraint_grad_sum_bound", "constraint_grad_bound")
    for label, value in (("L_g", L_g), ("G", G), ("H", H)):
        _checks.nonnegative(label, value)
    if variation is None:
        F = info.require("grad_bound", f"{who} (variation = 4 F^2 T)", allow_zero=True, norm=norm)
        variation = 4.0 * F**2 * T
    _checks.nonnegative("variation", variation)
    M = max(float(variation), L_f**2)
    if M <= 0:
        raise ValueError("max{variation, L_f^2} must be > 0: give a positive L_f or variation")
    return {"gamma": M**0.25, "eta": M**-0.5, "L_f": L_f, "L_g": float(L_g), "G": float(G), "H": float(H)}


class AbstractMirrorProx(AbstractLearner):
    """Online primal-dual mirror prox (Qiu and Wei 2020, paper 004): the round of Algorithms 1 and 2.

    Round t (``Q(0) = 0``, ``alpha_0 = 0``), with the prox step ``P(y, h, alpha)`` of ``geometry`` and the
    prox centre ``y_t = center(x~_t)`` (``x~_t`` itself in Algorithm 1, the uniform mixing of Algorithm 2)::

        Q_k(t)   = max{ -gamma g_k(x_{t-1}),  Q_k(t-1) + gamma g_k(x_{t-1}) }            (Line 3)
        c_t      = gamma sum_k (Q_k(t) + gamma g_k(x_{t-1})) grad g_k(x_{t-1})             (eq. 13)
        xi_t     = gamma L_g ||Q(t)||_1 + gamma^2 (L_g G + H^2)                             (eq. 6)
        alpha_t  = max{ alpha_bound(xi_t), alpha_{t-1} }                                    (Thm 4.1 / 6.1)
        x_t      = P(y_t, grad f^{t-1}(x_{t-1}) + c_t, alpha_t)     -> played
        x~_{t+1} = P(y_t, grad f^t(x_t) + c_t, alpha_t)

    The queue is `mirror_prox_queue`. A concrete learner declares the
    fields below (Assumption 2.1's ``L_f, L_g, G, H >= 0`` as the part ``constants``,
    `MirrorProxConstants`: ``learner.constants.L_f``), its ``geometry``, ``alpha_bound`` (the
    theorem's lower bound on ``alpha_t``) and ``prox_center``; ``init`` computes ``x_0`` and calls
    `initial_state`. Validated here: ``gamma, eta > 0``, ``known_constraints`` a function or ``None``.

    References:
        S. Qiu and X. Wei. Beyond O(sqrt(T)) regret for constrained online optimization: gradual variations
        and mirror prox. Preprint, June 23, 2020.
    """

    gamma: eqx.AbstractVar[Float[Array, ""]]
    eta: eqx.AbstractVar[Float[Array, ""]]
    constants: eqx.AbstractVar[MirrorProxConstants]
    grad0: eqx.AbstractVar[Array | None]
    known_constraints: eqx.AbstractVar[Callable[[Array], Array] | None]
    geometry: eqx.AbstractVar[AbstractMirrorGeometry]
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _checks.positive("gamma", self.gamma)
        _checks.positive("eta", self.eta)
        if self.known_constraints is not None and not callable(self.known_constraints):
            raise ValueError("known_constraints must be a function x -> g(x) of shape (K,), or None")

    dual_norm: ClassVar[str] = "l2"
    """The dual norm of the geometry, in which ``from_theory`` reads the problem's gradient bounds."""
    needs: ClassVar[Needs] = Needs(
        constants=("grad_bound", "smoothness"),
        constrained_constants=("constraint_smoothness",),
        nonnegative=("smoothness", "constraint_smoothness"),
        optional=("constraint_bound", "constraint_grad_bound", "constraint_sum_bound", "constraint_grad_sum_bound"),
    )

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        variation: float | None = None,
        L_f: float | None = None,
        L_g: float | None = None,
        G: float | None = None,
        H: float | None = None,
        **overrides: Any,
    ) -> "AbstractMirrorProx":
        """``M = max{V, L_f^2}``, ``eta = M^{-1/2}``, ``gamma = M^{1/4}`` (Theorems 4.1/4.2 for Algorithm 1,
        6.1 for Algorithm 2), and the learner's own `theory_parameters` (``rho``; ``nu = 1/T``).

        Args:
            info: the problem's information (horizon T, constants, number K of constraints; for
                [`SimplexMirrorProx`][ocokit.algorithms.SimplexMirrorProx] the domain must be ``Simplex(capped=False)``
                and T > 2).
            variation: V, an upper bound on the gradual variation known in advance: ``V_*(T) = sum_t max_x
                ||grad f^t(x) - grad f^{t-1}(x)||_*^2`` (with ``grad f^0 = 0`` its t = 1 term is
                ``max_x ||grad f^1(x)||_*^2``), in (l1, l_inf) (``V_inf``) for Algorithm 2. Default
                ``4 F^2 T`` with ``F = grad_bound`` (the worst case: ``||grad f^t||_* <= F``).
            L_f, L_g, G, H: the constants of Assumption 2.1, read from the problem's constants in the dual norm
                `dual_norm` (``"linf"`` for Algorithm 2): ``smoothness`` for L_f, ``constraint_smoothness`` for
                L_g (needed when K > 0), ``constraint_sum_bound`` for G and ``constraint_grad_sum_bound`` for H
                (else ``K constraint_bound`` and ``K constraint_grad_bound``, safe upper bounds of the sums).
                With K = 0 they default to 0.
            **overrides: the constants by name (``grad_bound``, F for the default V, ``smoothness``, ...), or any
                other constructor argument (``gamma``, ``eta``, ``rho``, ``nu``, ``geometry``, ``x0``,
                ``grad0``, ``known_constraints``: default the problem's fixed constraints when it declares them,
                ``ProblemInfo.fixed_constraints``), which wins over the theory value.
        """
        info = info.giving(overrides)
        own = cls.theory_parameters(info, overrides) | {"known_constraints": info.fixed_constraints}
        theory = _theory_parameters(info, variation, L_f, L_g, G, H, cls.__name__, cls.dual_norm)
        return cls.build({**theory, **own}, overrides)

    @classmethod
    @abc.abstractmethod
    def theory_parameters(cls, info: ProblemInfo, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The learner's own theory parameters besides ``gamma``, ``eta``, ``L_f``, ``L_g``, ``G``, ``H``."""

    @abc.abstractmethod
    def alpha_bound(self, xi: Array) -> Array:
        """The theorem's lower bound on ``alpha_t`` given ``xi_t`` (before the running maximum)."""

    @abc.abstractmethod
    def prox_center(self, domain: AbstractSet, x_tilde: Array) -> Array:
        """The prox centre ``y_t`` of both steps of round t from ``x~_t``."""

    def _dual_update(self, queue, alpha_prev, g, J):
        """``Q(t)``, ``alpha_t`` and ``c_t`` from ``Q(t-1)``, ``alpha_{t-1}``, ``g(x_{t-1})`` and its Jacobian."""
        gamma = self.gamma
        Q = mirror_prox_queue(queue, g, gamma)  # Line 3: the Yu-Neely queue, not [Q + gamma g]_+
        w = Q + gamma * g  # w_k(t) >= 0 (eq. 13)
        xi = self.constants.xi(gamma, Q)  # eq. (6)
        alpha = jnp.maximum(self.alpha_bound(xi), alpha_prev)
        c = gamma * jnp.tensordot(w, J, axes=1)  # gamma J(x_{t-1})^T w(t): both gammas matter (Line 4)
        return Q, alpha, c

    def initial_state(self, info: ProblemInfo, x0: Array) -> _MirrorProxState:
        """The state before round 1 from ``x_0 = x~_1``: ``Q(1)``, ``alpha_1``, ``c_1`` and ``x_1`` (Line 4)."""
        domain, K = info.domain, info.num_constraints
        dtype = x0.dtype
        if self.known_constraints is not None:
            shape = jax.eval_shape(self.known_constraints, x0).shape
            if math.prod(shape) != K:
                raise ValueError(f"known_constraints must return the problem's {K} values, got shape {shape}")
        g0, J0 = _constraints_at(self.known_constraints, x0, K)
        grad0 = jnp.zeros_like(x0) if self.grad0 is None else jnp.broadcast_to(self.grad0, x0.shape)
        grad0 = grad0.astype(dtype)
        zero_queue, zero_alpha = jnp.zeros((K,), dtype), jnp.zeros((), dtype)
        return self._next_round(domain, x0, grad0, g0, J0, zero_queue, zero_alpha, jnp.asarray(0, jnp.int32), dtype)

    def _next_round(self, domain, x_tilde, grad, g, J, queue, alpha_prev, t, dtype) -> _MirrorProxState:
        """Lines 3-4 of the next round: ``Q``, ``alpha`` and ``c`` (`_dual_update`) from ``g(x_t)`` and its
        Jacobian, the prox centre of ``x~_{t+1}`` and the played ``x_{t+1} = P(y_{t+1}, grad f^t(x_t) + c, alpha)``.

        The state after ``t`` rounds; at ``t = 0`` (`initial_state`) from ``x_0``, ``grad f^0`` and ``g(x_0)``.
        """
        Q, alpha, c = self._dual_update(queue, alpha_prev, g, J)
        center = self.prox_center(domain, x_tilde)
        x_next = self.geometry.prox(domain, center, grad + c, alpha)  # Line 4
        return _MirrorProxState(
            x=x_next.astype(dtype),
            x_tilde=x_tilde.astype(dtype),
            center=center.astype(dtype),
            grad_prev=grad,
            g_prev=g,
            queue=Q.astype(dtype),
            alpha=alpha.astype(dtype),
            c=c.astype(dtype),
            t=t,
            domain=domain,
        )

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        """Lines 6-7 of round t (fresh gradient, x~_{t+1}), then Lines 3-4 of round t + 1 (Q, alpha, x_{t+1})."""
        domain = state.domain
        dtype = state.x.dtype
        K = state.queue.shape[0]
        grad = feedback.grad(x).astype(dtype)  # grad f^t(x_t): revealed after x_t is played, queried once
        x_tilde = self.geometry.prox(domain, state.center, grad + state.c, state.alpha)  # Line 7
        g = jnp.reshape(feedback.constraints(x), (K,)).astype(dtype)  # g(x_t), used in round t + 1
        J = jnp.reshape(feedback.constraints_jacobian(x), (K, *x.shape)).astype(dtype)
        return self._next_round(domain, x_tilde, grad, g, J, state.queue, state.alpha, state.t + 1, dtype)

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(2, jnp.int32), "queue": state.queue, "alpha": state.alpha}


class MirrorProx(AbstractMirrorProx):
    r"""Online Primal-Dual Mirror Prox (Qiu and Wei 2020, Algorithm 1) for fixed known constraints.

    Round t, with the prox step ``P(y, h, alpha) = argmin_{x in X_0} <h, x> + alpha D(x, y)`` of
    ``geometry`` and ``Q(0) = 0``, ``alpha_0 = 0``:

    \[
    \begin{aligned}
    Q_k(t) &= \max\big\{ -\gamma g_k(x_{t-1}),\ Q_k(t-1) + \gamma g_k(x_{t-1}) \big\} && \text{(Line 3)} \\
    c_t &= \gamma \sum_k \big(Q_k(t) + \gamma g_k(x_{t-1})\big) \nabla g_k(x_{t-1}) \\
    \xi_t &= \gamma L_g \|Q(t)\|_1 + \gamma^2 (L_g G + H^2) && \text{(eq. 6)} \\
    \alpha_t &= \max\Big\{ \tfrac{2}{\rho} \big(\gamma^2 L_g G + \eta L_f^2 + 1/\eta + \xi_t\big),\
        \alpha_{t-1} \Big\} && \text{(Thm 4.1)} \\
    x_t &= P\big(\tilde x_t,\ \nabla f^{t-1}(x_{t-1}) + c_t,\ \alpha_t\big) && \text{(Line 4; played)} \\
    \tilde x_{t+1} &= P\big(\tilde x_t,\ \nabla f^{t}(x_t) + c_t,\ \alpha_t\big) && \text{(Line 7)}
    \end{aligned}
    \]

    Both steps are centred at ``x~_t`` (not ``x_t``; the "y = x_t" in the proof of Lemma 5.1 is a typo of
    the paper) and reuse ``Q(t)``, ``alpha_t`` and the linearisation at ``x_{t-1}``. ``x_t`` never uses
    ``f^t``: `update` of round t computes ``x~_{t+1}`` and then ``x_{t+1}`` from ``grad f^t(x_t)``,
    the only gradient of ``f^t`` ever queried; `decide` returns the stored ``x_t``. Euclidean
    geometry: ``P(y, h, alpha) = Pi_{X_0}(y - h / alpha)``. Per round: two prox steps, one loss gradient,
    the constraint values and Jacobian at the played point.

    Source: Qiu and Wei, Algorithm 1, eqs. (6), (13), (21)/(44).
    Guarantees (Assumptions 2.1-2.3, Slater): with ``M = max{V_*(T), L_f^2}``, ``eta = M^{-1/2}``,
    ``gamma = M^{1/4}`` (`from_theory`), Regret(T) = O(max{sqrt(V_*(T)), L_f}) (Theorem 4.1) and the
    signed ``Violation(T, k) = sum_t g_k(x_t) = O(1)`` for every k (Theorem 4.2). For any parameters
    ``sum_{t<=T} g_k(x_t) <= (Q_k(T+1) - Q_k(1)) / gamma`` (Lemma 5.5); ``Q(T+1)`` is the queue of the
    state after round T.

    Args:
        gamma: queue / constraint-weight scale gamma > 0 (theory ``M^{1/4}``).
        eta: eta > 0, which enters only ``alpha_t`` (it is not a step size; theory ``M^{-1/2}``).
        L_f: Lipschitz constant of ``grad f^t`` in the geometry's norms, >= 0.
        L_g: Lipschitz constant of every ``grad g_k``, >= 0 (0 for linear constraints).
        G: bound on ``sum_k |g_k(x)|`` over X_0 (an l1 bound, not per constraint), >= 0.
        H: ``sum_k H_k`` of the Lipschitz constants of the ``g_k`` (a sum, not a max), >= 0.
        rho: modulus of the distance-generating function, > 0 (1 for the Euclidean geometry).
        geometry: the mirror geometry (static; default [`EuclideanGeometry`][ocokit.algorithms.EuclideanGeometry]). It
            must have a bounded
            divergence on the domain (Assumption 2.3); for KL on the simplex use
            [`SimplexMirrorProx`][ocokit.algorithms.SimplexMirrorProx].
        x0: ``x_0 = x~_1`` in X_0 (default ``domain.center()``; Algorithm 1 leaves it free). It is never
            played.
        grad0: the round-0 gradient ``grad f^0(x_0)`` (default 0; the paper never defines ``f^0``).
        known_constraints: the fixed constraints ``g(x) -> (K,)`` as a jax function, so that round 1 can
            use ``g(x_0)`` and ``Q(1) = gamma |g(x_0)|`` as in the paper. Without it ``g(x_0) = 0`` and
            ``grad g(x_0) = 0`` (``Q(1) = 0``, ``c_1 = 0``), the only change, at t = 1; later rounds use the
            constraint oracle of the feedback at the played point.

    Readings: round 1 uses ``grad f^0(x_0)`` and the t = 1 term of ``V_*`` uses ``f^0``, which the paper never
    defines: ocokit takes ``grad f^0 = 0``, which only changes constants (``grad0`` gives a hint instead);
    ``x_0`` the centre of X_0 (``x0``); the recursive max form of ``alpha_t`` (equal to the closed form (44)).
    The paper needs ``V_*(T)`` in advance and gives no adaptive scheme: `from_theory` takes an upper bound
    ``variation >= V_*(T)`` (guarantees then hold with ``V_*`` replaced by it) and defaults to the
    worst case ``4 F^2 T``, which recovers O(sqrt(T)) regret. Time-varying constraints are outside the
    paper (fixed, known constraints only); they run (the linearisation uses round t's ``g^t`` at ``x_t``)
    without guarantee.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.DriftingQuadratic(dim=3, drift=0.0)
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 200)
        >>> learner = MirrorProx.from_theory(info, variation=4.0)  # L_f, L_g, G, H and g: the problem's
        >>> traj = ocokit.run(learner, problem, T=200)
        >>> bool(traj.constraints.sum(axis=0).max() < 1.0)
        True

    References:
        S. Qiu and X. Wei. Beyond O(sqrt(T)) regret for constrained online optimization: gradual variations
        and mirror prox. Preprint, June 23, 2020.
    """

    gamma: Float[Array, ""] = hyperparameter()
    eta: Float[Array, ""] = hyperparameter()
    constants: MirrorProxConstants
    rho: Float[Array, ""] = hyperparameter(_checks.positive)
    geometry: AbstractMirrorGeometry = eqx.field(static=True)
    x0: Float[Array, "*shape"] | None = eqx.field(converter=_optional_array)
    grad0: Float[Array, "*shape"] | None = eqx.field(converter=_optional_array)
    known_constraints: Callable[[Array], Array] | None

    def __init__(
        self,
        gamma: Any,
        eta: Any,
        rho: Any = 1.0,
        geometry: AbstractMirrorGeometry = EuclideanGeometry(),
        x0: Any = None,
        grad0: Any = None,
        known_constraints: Callable[[Array], Array] | None = None,
        **constants: Any,
    ):
        """``constants``: ``L_f``, ``L_g``, ``G``, ``H`` (`MirrorProxConstants`), by name."""
        self.gamma, self.eta, self.constants = gamma, eta, MirrorProxConstants(**constants)
        self.rho, self.geometry, self.x0, self.grad0 = rho, geometry, x0, grad0
        self.known_constraints = known_constraints

    def __check_init__(self):
        if not isinstance(self.geometry, AbstractMirrorGeometry):
            raise ValueError(f"geometry must be a mirror geometry, got {type(self.geometry).__name__}")

    @classmethod
    def theory_parameters(cls, info: ProblemInfo, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Theorem 4.1's ``rho``: the modulus of the geometry (``overrides["geometry"]``, default Euclidean)."""
        return {"rho": overrides.get("geometry", EuclideanGeometry()).modulus(info.domain)}

    def init(self, info, key):
        del key
        domain = info.domain
        if not self.geometry.bounded:
            raise ValueError(
                f"MirrorProx needs a bounded Bregman divergence on the domain (Assumption 2.3); the "
                f"{self.geometry.name} geometry is unbounded there (KL on the simplex: SimplexMirrorProx)"
            )
        self.geometry.check_domain(domain)
        c = domain.center()
        x0 = c if self.x0 is None else jnp.broadcast_to(self.x0, c.shape).astype(c.dtype)
        return self.initial_state(info, x0)

    def alpha_bound(self, xi):
        """Theorem 4.1: ``(2 / rho)(gamma^2 L_g G + eta L_f^2 + 1 / eta + xi_t)``."""
        gamma, eta, k = self.gamma, self.eta, self.constants
        return (2.0 / self.rho) * (gamma**2 * k.L_g * k.G + eta * k.L_f**2 + 1.0 / eta + xi)

    def prox_center(self, domain, x_tilde):
        """Algorithm 1 centres both steps at ``x~_t`` itself."""
        del domain
        return x_tilde


class SimplexMirrorProx(AbstractMirrorProx):
    r"""Online Primal-Dual Mirror Prox on the probability simplex (Qiu and Wei 2020, Algorithm 2).

    Algorithm 1 with the KL divergence, plus a uniform mixing of the prox centre. Round t:

    \[
    \begin{aligned}
    \tilde y_t &= (1 - \nu)\, \tilde x_t + \nu / d && \text{(Line 3)} \\
    Q_k(t) &= \max\big\{ -\gamma g_k(x_{t-1}),\ Q_k(t-1) + \gamma g_k(x_{t-1}) \big\} && \text{(Line 4)} \\
    c_t &= \gamma \sum_k \big(Q_k(t) + \gamma g_k(x_{t-1})\big) \nabla g_k(x_{t-1}) \\
    \alpha_t &= \max\big\{ 3 (\eta L_f^2 + \gamma^2 L_g G) + 2/\eta + 3 \xi_t,\ \alpha_{t-1} \big\}
        && \text{(Thm 6.1)} \\
    x_t &\propto \tilde y_t \odot \exp\big(-(\nabla f^{t-1}(x_{t-1}) + c_t) / \alpha_t\big)
        && \text{(Line 5; played)} \\
    \tilde x_{t+1} &\propto \tilde y_t \odot \exp\big(-(\nabla f^{t}(x_t) + c_t) / \alpha_t\big) && \text{(Line 8)}
    \end{aligned}
    \]

    with ``xi_t`` of eq. (6), ``x_0 = x~_1 = 1/d`` and ``Q(0) = 0``. Both steps are centred at the mixed
    point ``y~_t`` (Algorithm 2, Lines 5 and 8), which keeps every centre ``>= nu / d`` so KL stays finite.
    The steps are the entropic prox step of [`EntropicGeometry`][ocokit.algorithms.EntropicGeometry], in log
    space. Constants are measured in
    (l1, l_inf): ``F = sup ||grad f^t||_inf``, ``L_f``, ``L_g`` with ``||grad phi(x) - grad phi(y)||_inf <=
    L ||x - y||_1``, ``H_k = sup ||grad g_k||_inf`` (Section 6; l2 constants are valid upper bounds). Any
    ``Simplex(capped=False)`` works (the step acts on ``(x - offset) / radius``); the theorem's constants
    are for the probability simplex (radius 1).

    Source: Qiu and Wei, Algorithm 2, eqs. (52)/(76), Lemma B.1. Guarantees (Assumptions 2.1-2.2, Slater;
    Theorems 6.1 and 6.2, whose "Algorithm 1" and "as Theorem 4.1" are typos for Algorithm 2 and Theorem
    6.1): with ``M = max{V_inf(T), L_f^2}``, ``eta = M^{-1/2}``, ``gamma = M^{1/4}``, ``nu = 1/T``
    and T > 2, Regret(T) = O(max{sqrt(V_inf(T)), L_f} log^2(T d)) and Violation(T, k) = O(log(T d)) (not
    O(1)). Lemma 5.5 holds as for Algorithm 1.

    Args:
        gamma: gamma > 0 (theory ``M^{1/4}``).
        eta: eta > 0, only inside ``alpha_t`` (theory ``M^{-1/2}``).
        nu: mixing weight in ``(0, 1]`` (theory ``1 / T``).
        L_f, L_g, G, H: as in [`MirrorProx`][ocokit.algorithms.MirrorProx], in (l1, l_inf).
        grad0: the round-0 gradient ``grad f^0(x_0)`` (default 0; the paper never defines ``f^0``).
        known_constraints: the fixed constraints ``g(x) -> (K,)``, for ``g(x_0)`` at round 1 (see
            [`MirrorProx`][ocokit.algorithms.MirrorProx]; without it ``g(x_0) = 0``).

    Readings: ``grad f^0 = 0`` (as in [`MirrorProx`][ocokit.algorithms.MirrorProx]; ``grad0``); the negative entropy
    ``omega = sum x log x`` (the paper writes ``-sum x log x``, a sign typo: that is the concave entropy);
    V known in advance as an upper bound, default ``4 F^2 T``.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.DriftingAllocation(dim=4, drift=0.0)
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 100)
        >>> learner = SimplexMirrorProx.from_theory(info, variation=1.0)  # the problem's constants in l_inf
        >>> traj = ocokit.run(learner, problem, T=100, record_decisions=True)
        >>> bool(abs(traj.decisions.sum(axis=1) - 1).max() < 1e-6)  # every x_t on the simplex
        True
        >>> round(float(learner.nu), 6)  # Theorem 6.1's mixing weight nu = 1/T
        0.01

    References:
        S. Qiu and X. Wei. Beyond O(sqrt(T)) regret for constrained online optimization: gradual variations
        and mirror prox. Preprint, June 23, 2020.
    """

    gamma: Float[Array, ""] = hyperparameter()
    eta: Float[Array, ""] = hyperparameter()
    nu: Float[Array, ""] = hyperparameter(_checks.positive)
    constants: MirrorProxConstants
    grad0: Float[Array, " d"] | None = eqx.field(converter=_optional_array)
    known_constraints: Callable[[Array], Array] | None
    geometry: ClassVar[AbstractMirrorGeometry] = EntropicGeometry()
    dual_norm: ClassVar[str] = "linf"
    needs: ClassVar[Needs] = dataclasses.replace(AbstractMirrorProx.needs, sets=(Simplex,))

    def __init__(
        self,
        gamma: Any,
        eta: Any,
        nu: Any,
        grad0: Any = None,
        known_constraints: Callable[[Array], Array] | None = None,
        **constants: Any,
    ):
        """``constants``: ``L_f``, ``L_g``, ``G``, ``H`` (`MirrorProxConstants`), by name."""
        self.gamma, self.eta, self.nu, self.constants = gamma, eta, nu, MirrorProxConstants(**constants)
        self.grad0, self.known_constraints = grad0, known_constraints

    def __check_init__(self):
        _checks.in_closed_interval("nu", self.nu, 0.0, 1.0)

    @classmethod
    def theory_parameters(cls, info: ProblemInfo, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Theorem 6.1's ``nu = 1/T`` (needs T > 2 and a ``Simplex(capped=False)`` domain)."""
        del overrides
        if info.horizon <= 2:
            raise ValueError(f"SimplexMirrorProx.from_theory needs T > 2 (Theorem 6.1), got {info.horizon}")
        EntropicGeometry().check_domain(info.domain)
        return {"nu": 1.0 / info.horizon}

    def init(self, info, key):
        del key
        self.geometry.check_domain(info.domain)
        return self.initial_state(info, info.domain.center())

    def alpha_bound(self, xi):
        """Theorem 6.1: ``3 (eta L_f^2 + gamma^2 L_g G) + 2 / eta + 3 xi_t`` (constants 3/3/2/3, no rho)."""
        gamma, eta, k = self.gamma, self.eta, self.constants
        return 3.0 * (eta * k.L_f**2 + gamma**2 * k.L_g * k.G) + 2.0 / eta + 3.0 * xi

    def prox_center(self, domain, x_tilde):
        """Algorithm 2, Line 3: ``y~_t = (1 - nu) x~_t + nu / d`` (`mix_uniform`)."""
        return mix_uniform(domain, x_tilde, self.nu)

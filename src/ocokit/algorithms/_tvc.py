"""The TVC family of paper 000 (Wang, Wan, Zhang, AAAI 2025): projection-free OCO, time-varying constraints.

All four learners run a Frank-Wolfe method on the Lyapunov drift-plus-penalty surrogate (eq. 6 of 000)

    tilde f_t(x) = gamma beta f_t(x) + Phi'(beta Q_t) beta g_t^+(x),    Q_t = Q_{t-1} + g_t^+(x_t)   (eq. 4),

written once below (:func:`lyapunov_prime`, :func:`queue_step`); they differ in the FW method: OFW-TVC
(parameter-free OFW with doubling), SCOFW-TVC (strongly convex OFW with line search), BFW-TVC (blocked bandit
FW, gap-terminated inner loop) and SCBFW-TVC (blocked bandit FW, L inner steps). Several constraint functions
are reduced to ``g_t = max_n g_t^n`` (spec paper000.md §1.1), so ``Q_t`` is the CCV of that maximum.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.algorithms._fw import fw_step, inner_frank_wolfe
from ocokit.feedback import BANDIT, FULL_INFORMATION, FeedbackKind, one_point_sphere_estimate
from ocokit.problems._base import AbstractProblem

PHIS = ("exp", "square_plus_linear", "square", "linear")
"""Lyapunov functions: ``exp(lam x) - 1`` (Thms 1, 3), ``x^2 + x`` (Thm 2), ``x^2`` (Thm 4), ``x`` (G&K)."""

_EXP_CAP = 600.0  # exp(600) ~ 1e260: Phi' stays finite for any queue (spec §7 item 17)
_BOUND_CAP = 1e300


# --------------------------------------------------------------------------------------------------
# The queue and the Lyapunov surrogate (spec §2.1-2.2), shared by the four learners.


def lyapunov_prime(phi: str, x: Any, lam: Any = 1.0) -> Array:
    """``Phi'(x)`` for the Lyapunov function ``phi`` (one of :data:`PHIS`; ``lam`` scales ``"exp"``).

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

    The queue is updated first, so round t's surrogate uses ``Q_t`` (spec §7 item 2).
    """
    Q = Q + jnp.maximum(g, 0.0)
    return Q, lyapunov_prime(phi, beta * Q, lam)


def _max_constraint(values: Array) -> Array:
    return jnp.max(values) if values.shape[0] else jnp.zeros((), values.dtype)


def _full_information_surrogate(learner, feedback, x, Q):
    """``(grad tilde f_t(x_t), Q_t, w_t)`` from first-order feedback (eq. 6 and spec §2.1)."""
    g, grad_g = jax.value_and_grad(lambda z: _max_constraint(feedback.constraints(z)))(x)
    Q, w = queue_step(Q, g, learner.beta, learner.phi, learner.lam)
    active = (g > 0).astype(x.dtype)  # h_t = grad g_t 1[g_t(x_t) > 0]
    grad = learner.gamma * learner.beta * feedback.grad(x) + w * learner.beta * active * grad_g
    return grad, Q, w


def _bandit_surrogate(learner, feedback, Q):
    """``(tilde f_t(x_t), Q_t, w_t)`` from the two observed values (eq. 6 at the played point)."""
    g = _max_constraint(feedback.constraints)
    Q, w = queue_step(Q, g, learner.beta, learner.phi, learner.lam)
    value = learner.gamma * learner.beta * feedback.loss + w * learner.beta * jnp.maximum(g, 0.0)
    return value, Q, w


def double_until(G_tilde: Array, bound: Array) -> Array:
    """Steps 5-7 of Alg. 1: double ``G_tilde`` until ``G_tilde >= bound`` (closed form; never shrinks)."""
    bound = jnp.minimum(jnp.nan_to_num(bound, nan=0.0), _BOUND_CAP)
    ratio = bound / G_tilde
    k = jnp.where(ratio > 1.0, jnp.ceil(jnp.log2(jnp.maximum(ratio, 1.0))), 0.0).astype(jnp.int32)
    new = jnp.ldexp(G_tilde, k)
    new = jnp.where(new < bound, 2.0 * new, new)  # rounding of log2 in either direction
    return jnp.where((k > 0) & (new / 2.0 >= bound) & (new / 2.0 >= G_tilde), new / 2.0, new)


def _constants(info: ProblemInfo, name: str) -> tuple[float, float]:
    """``(G, D)``: the common Lipschitz bound of f_t and g_t (Assumption 2) and the diameter."""
    c = info.constants
    needed = [c.grad_bound] + ([c.constraint_grad_bound] if info.num_constraints else [])
    if not all(math.isfinite(v) for v in needed):
        raise ValueError(
            f"{name}.from_theory needs the problem constants grad_bound and constraint_grad_bound"
        )
    return max(needed), float(info.domain.diameter)


def _alpha(info: ProblemInfo, alpha_f: float | None, name: str) -> float:
    alpha = info.constants.strong_convexity if alpha_f is None else alpha_f
    if not alpha > 0:
        raise ValueError(f"{name}.from_theory needs strongly convex losses: pass alpha_f > 0, got {alpha}")
    return float(alpha)


def _check_common(learner) -> None:
    _checks.positive("beta", learner.beta)
    _checks.positive("gamma", learner.gamma)
    _checks.one_of("phi", learner.phi, PHIS)
    if learner.phi == "exp":
        _checks.positive("lam", learner.lam)


def _override(learner, overrides: dict[str, Any]):
    """``learner`` with some fields replaced (``from_theory(info, beta=...)``); unknown names raise."""
    names = [f.name for f in dataclasses.fields(learner)]
    unknown = set(overrides) - set(names)
    if unknown:
        raise ValueError(f"unknown parameters {sorted(unknown)} for {type(learner).__name__}; valid: {names}")
    return type(learner)(**{**{n: getattr(learner, n) for n in names}, **overrides})


# --------------------------------------------------------------------------------------------------
# Algorithm 1: OFW-TVC.


class _OFWTVCState(eqx.Module):
    x: Float[Array, ...]
    anchor: Float[Array, ...]
    grad_sum: Float[Array, ...]
    queue: Float[Array, ""]
    G_tilde: Float[Array, ""]
    epoch_start: Int[Array, ""]
    t: Int[Array, ""]
    gap: Float[Array, ""]
    lmo_state: Any


class OFWTVC(AbstractLearner):
    """OFW-TVC: Online Frank-Wolfe with Time-Varying Constraints (paper 000, Algorithm 1).

    Round t (``x_t`` played, ``Q_t``, ``tilde f_t`` from eqs. 4 and 6):

        while G~_k < beta G (gamma + Phi'(beta Q_t)):  G~_{k+1} = 2 G~_k;  s_{k+1} = t;  k += 1
        eta_k = eta / G~_k                                             (eq. 9: eta = D / (2 T^{3/4}))
        F_{s_k:t}(x) = eta_k sum_{tau=s_k}^{t} <grad tilde f_tau(x_tau), x> + ||x - x_{s_k}||^2   (eq. 10)
        v_t = argmin_{x in K} <grad F_{s_k:t}(x_t), x>                 (eq. 11, one LMO call)
        x_{t+1} = x_t + min(1, 2 / sqrt(t - s_k + 1)) (v_t - x_t)      (eqs. 12-13)

    A restart (doubling) at round t starts the new epoch at t: the gradient sum restarts with round t's
    gradient, the regulariser is re-centred at ``x_t`` (which is kept) and the step counter restarts at 1.
    ``G~_1 = 1`` and ``x_1 = K.center()``.

    Source: 000 Alg. 1, eqs. (4), (6), (9)-(13); spec paper000.md §3.1, pitfalls §7.2-7.6. Guarantee
    (Thm 1, convex f_t and g_t, adversarial): Regret_T = O(T^{3/4}), CCV Q_T = O(T^{3/4} log T), one LMO call
    per round.

    Args:
        beta: queue scale ``beta > 0`` (Thm 1: ``1 / (64 G D)``).
        gamma: loss weight ``gamma > 0`` (Thm 1: 1).
        eta: base learning rate ``> 0``; epoch k uses ``eta / G~_k`` (Thm 1: ``D / (2 T^{3/4})``).
        G: Lipschitz bound of f_t and g_t used by the doubling test (``> 0``; unused with
            ``doubling="observed"``).
        lam: scale of ``Phi(x) = exp(lam x) - 1`` (``> 0``, Thm 1: ``1 / (2 T^{3/4})``; unused by other phi).
        phi: the Lyapunov function, one of :data:`PHIS` (default ``"exp"``, Thm 1).
        sum_index: ``"current"`` (default, main text eq. 10: the sum includes round t) or ``"lagged"``
            (the proof of Lemma 4 and classic OFW: gradients up to t-1).
        doubling: ``"analytic"`` (default, Step 5: test ``beta G (gamma + Phi'(beta Q_t))``) or
            ``"observed"`` (test the observed ``||grad tilde f_t(x_t)||``; no G needed, same analysis).

    Readings: the step ``2 / sqrt(t - s_k + 1)`` is clipped at 1 (it is 2, 1.41, 1.15 in the first rounds of
    each epoch and would leave K; spec §7.4). The sum index and doubling test are the options above.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = OFWTVC.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 50))
        >>> ocokit.run(learner, problem, T=50).loss.shape
        (50,)

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025 (arXiv:2501.16919).
    """

    beta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    eta: Float[Array, ""] = hyperparameter()
    G: Float[Array, ""] = hyperparameter(default=math.nan)
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    phi: str = eqx.field(static=True, default="exp")
    sum_index: str = eqx.field(static=True, default="current")
    doubling: str = eqx.field(static=True, default="analytic")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _check_common(self)
        _checks.positive("eta", self.eta)
        _checks.one_of("sum_index", self.sum_index, ("current", "lagged"))
        _checks.one_of("doubling", self.doubling, ("analytic", "observed"))
        if self.doubling == "analytic":
            _checks.positive("G", self.G)

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> OFWTVC:
        """Theorem 1 of 000: ``beta = 1/(2^6 G D)``, ``gamma = 1``, ``eta = lam^{-1} D/4 = D/(2 T^{3/4})``.

        ``lam = 1/(2 T^{3/4})``.

        ``G = max(grad_bound, constraint_grad_bound)`` and ``D = diameter(K)``; any field can be overridden.
        """
        G, D = _constants(info, cls.__name__)
        T = info.horizon
        theory = cls(beta=1.0 / (64.0 * G * D), gamma=1.0, eta=D / (2.0 * T**0.75), G=G, lam=0.5 * T**-0.75)
        return _override(theory, overrides)

    @classmethod
    def _test_cases(cls) -> list[tuple[AbstractLearner, AbstractProblem]]:
        from ocokit.problems import TimeVaryingRegression

        problem = TimeVaryingRegression(dim=4, rows=3, num_constraints=2)
        info = ProblemInfo.of(problem, 30)
        return [
            (cls.from_theory(info), problem),
            (
                cls.from_theory(info, beta=0.05, phi="linear", sum_index="lagged", doubling="observed"),
                problem,
            ),
        ]

    def init(self, info, key):
        del key
        x = info.domain.center()
        zero = jnp.zeros((), x.dtype)
        one = jnp.asarray(1, jnp.int32)
        return _OFWTVCState(
            x=x,
            anchor=x,
            grad_sum=jnp.zeros_like(x),
            queue=zero,
            G_tilde=jnp.ones((), x.dtype),
            epoch_start=one,
            t=jnp.asarray(0, jnp.int32),
            gap=zero,
            lmo_state=info.domain.lmo_init(),
        )

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        t = state.t + 1
        grad, Q, w = _full_information_surrogate(self, feedback, x, state.queue)
        if self.doubling == "analytic":
            bound = self.beta * self.G * (self.gamma + w)
        else:
            bound = jnp.linalg.norm(grad.ravel())
        G_tilde = double_until(state.G_tilde, bound)
        restart = G_tilde > state.G_tilde  # s_{k+1} = t: the new epoch starts at round t
        epoch_start = jnp.where(restart, t, state.epoch_start)
        anchor = jnp.where(restart, x, state.anchor)
        previous = jnp.where(restart, jnp.zeros_like(grad), state.grad_sum)
        grad_sum = previous + grad
        eta_k = self.eta / G_tilde
        summed = grad_sum if self.sum_index == "current" else previous
        direction = eta_k * summed + 2.0 * (x - anchor)
        sigma = jnp.minimum(1.0, 2.0 / jnp.sqrt((t - epoch_start + 1).astype(x.dtype)))
        x_new, lmo_state, gap, _ = fw_step(
            feedback.problem.domain, direction, x, state.lmo_state, sigma=sigma
        )
        return _OFWTVCState(x_new, anchor, grad_sum, Q, G_tilde, epoch_start, t, gap, lmo_state)

    def diagnostics(self, state):
        return {
            "oracle_calls": jnp.asarray(1, jnp.int32),
            "queue": state.queue,
            "G_tilde": state.G_tilde,
            "epoch_start": state.epoch_start,
            "fw_gap": state.gap,
        }


# --------------------------------------------------------------------------------------------------
# Algorithm 2: SCOFW-TVC.


class _SCOFWTVCState(eqx.Module):
    x: Float[Array, ...]
    grad_sum: Float[Array, ...]
    iterate_sum: Float[Array, ...]
    queue: Float[Array, ""]
    t: Int[Array, ""]
    step: Float[Array, ""]
    lmo_state: Any


class SCOFWTVC(AbstractLearner):
    """SCOFW-TVC: strongly convex Online Frank-Wolfe with Time-Varying Constraints (paper 000, Algorithm 2).

    Round t, with ``C_1 = gamma beta alpha_f / 2``, ``S_t = sum_{tau<=t} grad tilde f_tau(x_tau)`` and
    ``X_t = sum_{tau<=t} x_tau``:

        F_t^sc(x) = sum_{tau=1}^{t} [<grad tilde f_tau(x_tau), x> + C_1 ||x - x_tau||^2]      (eq. 14)
        v_t = argmin_{x in K} <S_t + 2 C_1 (t x_t - X_t), x>                              (eq. 15)
        sigma_t = argmin_{sigma in [0, 1]} F_t^sc(x_t + sigma (v_t - x_t))   (eq. 16; Hessian 2 C_1 t I)
        x_{t+1} = x_t + sigma_t (v_t - x_t)                                               (eq. 17)

    Source: 000 Alg. 2, eqs. (14)-(17) (eq. 17's ``sigma_{s_k,t}`` is a typo for ``sigma_t^sc``); spec
    §3.2. Guarantee (Thm 2, alpha_f-strongly convex f_t): Regret_T = O(T^{2/3}), CCV = O(T^{5/6}); one LMO
    call per round, no doubling.

    Args:
        beta: queue scale ``> 0`` (eq. 40 of the proof: ``alpha_f / (500 G T^{2/3} (G + alpha_f D))``).
        gamma: loss weight ``> 0`` (Thm 2: ``G / (G + alpha_f D)``).
        alpha_f: strong-convexity modulus of f_t, ``> 0``.
        lam: scale of ``Phi = exp(lam x) - 1`` when ``phi="exp"`` (unused otherwise).
        phi: Lyapunov function (default ``"square_plus_linear"``, ``Phi(x) = x^2 + x`` of Thm 2).

    Readings: Thm 2's statement sets ``beta = 1/(G D T^{2/3})``, which violates the proof's condition (39);
    ``from_theory(info, theory="proof")`` (default) uses eq. (40), ``theory="statement"`` the statement.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 50)
        >>> ocokit.run(SCOFWTVC.from_theory(info, alpha_f=1.0), problem, T=50).loss.shape
        (50,)

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025. Y. Wan, L. Zhang. Projection-free online learning over strongly convex sets. AAAI 2021.
    """

    beta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    alpha_f: Float[Array, ""] = hyperparameter()
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    phi: str = eqx.field(static=True, default="square_plus_linear")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _check_common(self)
        _checks.positive("alpha_f", self.alpha_f)

    @classmethod
    def from_theory(
        cls, info: ProblemInfo, *, alpha_f: float | None = None, theory: str = "proof", **overrides: Any
    ) -> SCOFWTVC:
        """Theorem 2 of 000: ``gamma = G/(G + alpha_f D)``, ``Phi = x^2 + x``, beta of eq. (40) or statement.

        ``alpha_f`` defaults to the problem's ``strong_convexity`` (ValueError if that is 0).
        """
        _checks.one_of("theory", theory, ("proof", "statement"))
        G, D = _constants(info, cls.__name__)
        a = _alpha(info, alpha_f, cls.__name__)
        T23 = info.horizon ** (2.0 / 3.0)
        beta = a / (500.0 * G * T23 * (G + a * D)) if theory == "proof" else 1.0 / (G * D * T23)
        return _override(cls(beta=beta, gamma=G / (G + a * D), alpha_f=a), overrides)

    @classmethod
    def _test_cases(cls) -> list[tuple[AbstractLearner, AbstractProblem]]:
        from ocokit.problems import TimeVaryingRegression

        problem = TimeVaryingRegression(dim=4, rows=3, num_constraints=2)
        info = ProblemInfo.of(problem, 30)
        return [
            (cls.from_theory(info, alpha_f=1.0), problem),
            (cls(beta=0.1, gamma=1.0, alpha_f=0.5), problem),
        ]

    def init(self, info, key):
        del key
        x = info.domain.center()
        zero = jnp.zeros((), x.dtype)
        return _SCOFWTVCState(
            x,
            jnp.zeros_like(x),
            jnp.zeros_like(x),
            zero,
            jnp.asarray(0, jnp.int32),
            zero,
            info.domain.lmo_init(),
        )

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        t = state.t + 1
        grad, Q, _ = _full_information_surrogate(self, feedback, x, state.queue)
        grad_sum, iterate_sum = state.grad_sum + grad, state.iterate_sum + x
        C1 = self.gamma * self.beta * self.alpha_f / 2.0
        tf = t.astype(x.dtype)
        direction = grad_sum + 2.0 * C1 * (tf * x - iterate_sum)
        x_new, lmo_state, _, step = fw_step(
            feedback.problem.domain, direction, x, state.lmo_state, beta=2.0 * C1 * tf
        )
        return _SCOFWTVCState(x_new, grad_sum, iterate_sum, Q, t, step, lmo_state)

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(1, jnp.int32), "queue": state.queue, "step": state.step}


# --------------------------------------------------------------------------------------------------
# Bandit ingredients (spec §3.3) and Algorithms 3-4.


class _BanditState(eqx.Module):
    y: Float[Array, ...]  # the auxiliary decision hat y_m in K_delta (frozen within a block)
    u: Float[Array, ...]  # this round's direction on the unit sphere
    key: PRNGKeyArray
    queue: Float[Array, ""]
    block_grad: Float[Array, ...]  # sum of this block's one-point estimates (hat nabla_m so far)
    linear: Float[Array, ...]  # BFW: sum_{tau=b_k}^{m} hat nabla_tau; SCBFW: the linear term of F_m^sc
    anchor: Float[Array, ...]  # BFW: y_{s_k} = hat y_{b_k}
    G_tilde: Float[Array, ""]
    epoch_start: Int[Array, ""]  # BFW: b_k, the first block using G_tilde
    t: Int[Array, ""]
    oracle_calls: Int[Array, ""]
    gap: Float[Array, ""]
    shrunk: Any  # K_delta = (1 - delta/r) K
    lmo_state: Any


def _direction(key: PRNGKeyArray, t: Any, like: Array) -> Array:
    """``u_t`` uniform on the unit sphere (eq. 20), as :func:`ocokit.feedback.sample_unit_sphere` but with the
    Gaussian drawn in float32 (half the cost at d = 3e6) and normalised in the working precision."""
    g = jax.random.normal(jax.random.fold_in(key, t), like.shape, jnp.float32).astype(like.dtype)
    return g / jnp.linalg.norm(g.ravel())


def _bandit_init(learner, info, key) -> _BanditState:
    domain = info.domain
    r = domain.inner_radius
    concrete = _checks._concrete(learner.delta), _checks._concrete(r)
    if all(v is not None for v in concrete) and not (concrete[0] < concrete[1]).all():
        raise ValueError(
            f"delta must be in (0, r) with r = {float(concrete[1])} (inner radius of K), got {learner.delta}"
        )
    shrunk = domain.scaled(1.0 - learner.delta / r)
    y = shrunk.center()
    zero = jnp.zeros((), y.dtype)
    return _BanditState(
        y=y,
        u=_direction(key, 1, y),
        key=key,
        queue=zero,
        block_grad=jnp.zeros_like(y),
        linear=jnp.zeros_like(y),
        anchor=y,
        G_tilde=jnp.ones((), y.dtype),
        epoch_start=jnp.asarray(1, jnp.int32),
        t=jnp.asarray(0, jnp.int32),
        oracle_calls=jnp.asarray(0, jnp.int32),
        gap=zero,
        shrunk=shrunk,
        lmo_state=shrunk.lmo_init(),
    )


def _bandit_round(learner, state, feedback, block_update) -> _BanditState:
    """Steps 3-7 of Algs. 3-4: queue, one-point estimate (eq. 21), block update when ``t mod K = 0``."""
    t = state.t + 1
    value, Q, w = _bandit_surrogate(learner, feedback, state.queue)
    block_grad = state.block_grad + one_point_sphere_estimate(value, state.u, learner.delta)
    state = eqx.tree_at(
        lambda s: (s.t, s.queue, s.block_grad, s.oracle_calls),
        state,
        (t, Q, block_grad, jnp.asarray(0, jnp.int32)),
    )
    # t is never batched (it counts rounds), so this is a real branch even under vmap.
    state = jax.lax.cond(t % learner.block == 0, lambda s: block_update(s, w), lambda s: s, state)
    u = _direction(state.key, t + 1, state.y)
    return eqx.tree_at(lambda s: s.u, state, u)


def _bandit_diagnostics(state):
    return {
        "oracle_calls": state.oracle_calls,
        "queue": state.queue,
        "G_tilde": state.G_tilde,
        "epoch_start": state.epoch_start,
        "fw_gap": state.gap,
    }


class BFWTVC(AbstractLearner):
    """BFW-TVC: Bandit Frank-Wolfe with Time-Varying Constraints (paper 000, Algorithm 3).

    Round t plays ``x_t = y_t + delta u_t`` (``u_t`` uniform on the unit sphere, ``y_t = hat y_m`` in
    ``K_delta = (1 - delta/r) K``, eq. 20) and forms ``tilde nabla_t = (d/delta) tilde f_t(x_t) u_t``
    (eq. 21).
    At the end of block m (``t mod K = 0``), with ``hat nabla_m`` the sum of the block's K estimates:

        while G~_k < beta G (gamma + Phi'(beta Q_t)):  G~_{k+1} = 2 G~_k;  b_k = m  (re-anchor at hat y_m)
        F_{b_k:m}(y) = eta_k sum_{tau=b_k}^{m} <hat nabla_tau, y> + ||y - hat y_{b_k}||^2   (eqs. 22-23)
        repeat FW with exact line search over K_delta from hat y_m until
            <grad F(y~_tau), y~_tau - v_tau> <= epsilon;   hat y_{m+1} = y~_{tau+1}              (eqs. 24-26)

    with ``eta_k = eta / G~_k`` (eq. 22: ``eta = c D / (d M T^{3/4})``).

    Source: 000 Alg. 3, eqs. (20)-(26); spec §3.3-3.4. Guarantee (Thm 3, convex, bandit): E[Regret_T] =
    O(T^{3/4}), CCV = O(T^{3/4} log T). LMO calls per block are data-dependent (at least one), capped by
    ``max_inner`` and recorded as ``oracle_calls``.

    Args:
        beta: queue scale ``> 0`` (Thm 3: ``1 / C_2``).
        gamma: loss weight ``> 0`` (Thm 3: 1).
        eta: base learning rate ``> 0`` (Thm 3: ``c D / (d M T^{3/4})``).
        G: Lipschitz bound in the doubling test, ``> 0``.
        delta: smoothing radius, ``0 < delta < r`` (Thm 3: ``c T^{-1/4}``).
        epsilon: FW-gap tolerance of the inner loop, ``> 0`` (Thm 3: ``4 D^2 T^{-1/2}``).
        lam: scale of ``Phi = exp(lam x) - 1`` (Thm 3: ``1/(2 T^{3/4})``).
        block: block size K (static; Thm 3: ``T^{1/2}`` rounded).
        max_inner: safety cap on LMO calls per block (static).
        phi: Lyapunov function (default ``"exp"``).

    Readings (spec §3.4, inferred): on a doubling at the end of block m the epoch restarts at block m (its
    estimate is the first of the new sum) and the regulariser is re-centred at ``hat y_m``; the doubling test
    uses ``Q_t`` of the block's last round (the queue is non-decreasing); the output of the inner loop is the
    point after the step that met the stop rule (Alg. 3, Step 19). A last partial block gets no update.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = BFWTVC.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 64))
        >>> ocokit.run(learner, problem, T=64).loss.shape
        (64,)

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025. A. Flaxman, A. Kalai, H. B. McMahan. Online convex optimization in the bandit setting.
        SODA 2005.
    """

    beta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    eta: Float[Array, ""] = hyperparameter()
    G: Float[Array, ""] = hyperparameter()
    delta: Float[Array, ""] = hyperparameter()
    epsilon: Float[Array, ""] = hyperparameter()
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    block: int = eqx.field(static=True, default=1)
    max_inner: int = eqx.field(static=True, default=1000)
    phi: str = eqx.field(static=True, default="exp")
    feedback: ClassVar[FeedbackKind] = BANDIT

    def __check_init__(self):
        _check_common(self)
        for name in ("eta", "G", "delta", "epsilon"):
            _checks.positive(name, getattr(self, name))
        _checks.positive_int("block", self.block)
        _checks.positive_int("max_inner", self.max_inner)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, c: float | None = None, **overrides: Any) -> BFWTVC:
        """Theorem 3 of 000 with ``delta = c T^{-1/4}``; ``c`` defaults to ``r/2`` (inferred): ``delta < r``.

        ``beta = 1/C_2``, ``C_2 = 2^4 G (cD/r + 3c + 1 + 2cD/(dM) + dMD/c)``, ``gamma = 1``, ``K = T^{1/2}``,
        ``epsilon = 4 D^2 T^{-1/2}``, ``eta = c D/(d M T^{3/4})``, ``lam = 1/(2 T^{3/4})``; M is the problem's
        ``loss_bound``.
        """
        G, D = _constants(info, cls.__name__)
        M = info.constants.loss_bound
        if not math.isfinite(M):
            raise ValueError(f"{cls.__name__}.from_theory needs the problem constant loss_bound (M)")
        T, r, d = info.horizon, float(info.domain.inner_radius), math.prod(info.domain.shape)
        c = r / 2.0 if c is None else c
        C2 = 16.0 * G * (c * D / r + 3 * c + 1 + 2 * c * D / (d * M) + d * M * D / c)
        theory = cls(
            beta=1.0 / C2,
            gamma=1.0,
            eta=c * D / (d * M * T**0.75),
            G=G,
            delta=c * T**-0.25,
            epsilon=4.0 * D**2 / math.sqrt(T),
            lam=0.5 * T**-0.75,
            block=max(1, round(math.sqrt(T))),
            max_inner=max(100, 4 * math.ceil(math.sqrt(T))),
        )
        return _override(theory, overrides)

    @classmethod
    def _test_cases(cls) -> list[tuple[AbstractLearner, AbstractProblem]]:
        from ocokit.problems import TimeVaryingRegression

        problem = TimeVaryingRegression(dim=4, rows=3, num_constraints=2)
        info = ProblemInfo.of(problem, 30)
        return [
            (cls.from_theory(info), problem),
            (cls.from_theory(info, block=3, beta=0.1, phi="linear"), problem),
        ]

    def init(self, info, key):
        return _bandit_init(self, info, key)

    def decide(self, state):
        return state.y + self.delta * state.u

    def update(self, state, x, feedback):
        del x
        return _bandit_round(self, state, feedback, self._block_update)

    def _block_update(self, state: _BanditState, w: Array) -> _BanditState:
        G_tilde = double_until(state.G_tilde, self.beta * self.G * (self.gamma + w))
        restart = G_tilde > state.G_tilde
        block_index = state.t // self.block
        linear = jnp.where(restart, 0.0, state.linear) + state.block_grad
        anchor = jnp.where(restart, state.y, state.anchor)
        eta_k = self.eta / G_tilde
        y, lmo_state, calls, gap = inner_frank_wolfe(
            state.shrunk,
            lambda z: eta_k * linear + 2.0 * (z - anchor),
            state.y,
            state.lmo_state,
            beta=2.0,
            gap_tol=self.epsilon,
            max_iter=self.max_inner,
            step_on_exit=True,
        )
        return eqx.tree_at(
            lambda s: (
                s.y,
                s.block_grad,
                s.linear,
                s.anchor,
                s.G_tilde,
                s.epoch_start,
                s.oracle_calls,
                s.gap,
                s.lmo_state,
            ),
            state,
            (
                y,
                jnp.zeros_like(y),
                linear,
                anchor,
                G_tilde,
                jnp.where(restart, block_index, state.epoch_start),
                calls,
                gap,
                lmo_state,
            ),
        )

    def diagnostics(self, state):
        return _bandit_diagnostics(state)


class SCBFWTVC(AbstractLearner):
    """SCBFW-TVC: strongly convex Bandit Frank-Wolfe with Time-Varying Constraints (paper 000, Algorithm 4).

    Plays and estimates as :class:`BFWTVC` (eqs. 20-21). At the end of block m (round ``t = mK``), with
    ``C_3 = gamma beta alpha_f t / 2``:

        F_m^sc(y) = sum_{tau=1}^{m} [<hat nabla_tau, y> + (gamma beta alpha_f K / 2) ||y - hat y_tau||^2]
                  = sum_{tau=1}^{m} <hat nabla_tau - gamma beta alpha_f K hat y_tau, y> + C_3 ||y||^2 + const
        L Frank-Wolfe steps over K_delta from hat y_m with exact line search (Hessian 2 C_3 I);
        hat y_{m+1} = y~_{L+1}                                                            (eqs. 27-30)

    Source: 000 Alg. 4, eqs. (27)-(30); spec §3.5. Guarantee (Thm 4, alpha_f-strongly convex, bandit):
    E[Regret_T] = O(T^{2/3} log T), CCV = O(T^{5/6} log T); exactly L LMO calls per block.

    Args:
        beta: queue scale ``> 0`` (proof of Thm 4: 1).
        gamma: loss weight ``> 0`` (proof: ``16 (8 log T^{1/3} + C_3') G^2 T^{2/3} / alpha_f``).
        alpha_f: strong-convexity modulus ``> 0``.
        delta: smoothing radius, ``0 < delta < r`` (Thm 4: ``c T^{-1/3}``).
        lam: scale of ``Phi = exp(lam x) - 1`` when ``phi="exp"``.
        block: block size K (static; Thm 4: ``T^{2/3}``).
        inner_steps: L, FW steps per block (static; Thm 4: ``T^{2/3}``).
        phi: Lyapunov function (default ``"square"``, ``Phi(x) = x^2`` of Thm 4).
        surrogate: ``"shifted"`` (default; the SC-FTRL surrogate of Alg. 2 and of blocked SCOFW, centred at
            each block's ``hat y_tau``) or ``"literal"`` (eq. 27 as printed, which drops the
            ``- gamma beta alpha_f K hat y_tau`` shift and pulls the iterates to the origin).

    Readings: printed eq. (27) omits the shift (spec §3.5, pitfall 9): default ``"shifted"``. Thm 4's
    statement and proof disagree on beta and gamma: ``from_theory(theory="proof")`` (default) or
    ``theory="statement"`` (``beta = 1/(G D T^{2/3})``, ``gamma = G/(G + alpha_f D)``).

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 64)
        >>> ocokit.run(SCBFWTVC.from_theory(info, alpha_f=1.0), problem, T=64).loss.shape
        (64,)

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025. Y. Wan, G. Wang, L. Zhang. Projection-free distributed online learning with sublinear
        communication complexity. JMLR 2022 (blocked SCOFW).
    """

    beta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    alpha_f: Float[Array, ""] = hyperparameter()
    delta: Float[Array, ""] = hyperparameter()
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    block: int = eqx.field(static=True, default=1)
    inner_steps: int = eqx.field(static=True, default=1)
    phi: str = eqx.field(static=True, default="square")
    surrogate: str = eqx.field(static=True, default="shifted")
    feedback: ClassVar[FeedbackKind] = BANDIT

    def __check_init__(self):
        _check_common(self)
        _checks.positive("alpha_f", self.alpha_f)
        _checks.positive("delta", self.delta)
        _checks.positive_int("block", self.block)
        _checks.positive_int("inner_steps", self.inner_steps)
        _checks.one_of("surrogate", self.surrogate, ("shifted", "literal"))

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        alpha_f: float | None = None,
        c: float | None = None,
        theory: str = "proof",
        **overrides: Any,
    ) -> SCBFWTVC:
        """Theorem 4 of 000: ``K = L = T^{2/3}``, ``delta = c T^{-1/3}`` (``c = r/2`` default), ``Phi = x^2``.

        ``theory="proof"``: ``beta = 1``, ``gamma = 16 (8 log T^{1/3} + C_3') G^2 T^{2/3} / alpha_f`` with
        ``C_3' = 8 + 3c + cD/r + 12D``; ``theory="statement"``: ``beta = 1/(G D T^{2/3})``,
        ``gamma = G/(G + alpha_f D)``.
        """
        _checks.one_of("theory", theory, ("proof", "statement"))
        G, D = _constants(info, cls.__name__)
        a = _alpha(info, alpha_f, cls.__name__)
        T, r = info.horizon, float(info.domain.inner_radius)
        c = r / 2.0 if c is None else c
        T23 = T ** (2.0 / 3.0)
        if theory == "proof":
            C3 = 8.0 + 3.0 * c + c * D / r + 12.0 * D
            beta, gamma = 1.0, 16.0 * (8.0 * math.log(T ** (1.0 / 3.0)) + C3) * G**2 * T23 / a
        else:
            beta, gamma = 1.0 / (G * D * T23), G / (G + a * D)
        K = max(1, round(T23))
        theory_ = cls(beta=beta, gamma=gamma, alpha_f=a, delta=c * T ** (-1.0 / 3.0), block=K, inner_steps=K)
        return _override(theory_, overrides)

    @classmethod
    def _test_cases(cls) -> list[tuple[AbstractLearner, AbstractProblem]]:
        from ocokit.problems import TimeVaryingRegression

        problem = TimeVaryingRegression(dim=4, rows=3, num_constraints=2)
        info = ProblemInfo.of(problem, 30)
        return [
            (cls.from_theory(info, alpha_f=1.0), problem),
            (
                cls.from_theory(
                    info, alpha_f=1.0, theory="statement", block=4, inner_steps=2, surrogate="literal"
                ),
                problem,
            ),
        ]

    def init(self, info, key):
        return _bandit_init(self, info, key)

    def decide(self, state):
        return state.y + self.delta * state.u

    def update(self, state, x, feedback):
        del x
        return _bandit_round(self, state, feedback, self._block_update)

    def _block_update(self, state: _BanditState, w: Array) -> _BanditState:
        del w
        y0 = state.y
        tf = state.t.astype(y0.dtype)
        curvature = self.gamma * self.beta * self.alpha_f
        shift = curvature * self.block * y0 if self.surrogate == "shifted" else jnp.zeros_like(y0)
        linear = state.linear + state.block_grad - shift
        C3 = curvature * tf / 2.0

        def step(_, carry):
            y, lmo_state, _ = carry
            y, lmo_state, gap, _ = fw_step(state.shrunk, linear + 2.0 * C3 * y, y, lmo_state, beta=2.0 * C3)
            return y, lmo_state, gap

        y, lmo_state, gap = jax.lax.fori_loop(0, self.inner_steps, step, (y0, state.lmo_state, state.gap))
        return eqx.tree_at(
            lambda s: (s.y, s.block_grad, s.linear, s.oracle_calls, s.gap, s.lmo_state),
            state,
            (y, jnp.zeros_like(y), linear, jnp.asarray(self.inner_steps, jnp.int32), gap, lmo_state),
        )

    def diagnostics(self, state):
        return {"oracle_calls": state.oracle_calls, "queue": state.queue, "fw_gap": state.gap}

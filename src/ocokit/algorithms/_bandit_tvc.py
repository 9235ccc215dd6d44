"""Bandit TVC learners of paper 000 (Wang, Wan, Zhang, AAAI 2025): BFW-TVC and SCBFW-TVC (Algorithms 3-4).

Both play ``x_t = y_t + delta u_t`` around a point ``y_t`` of the shrunk set ``K_delta = (1 - delta/r) K`` that
is frozen within a block of K rounds, observe only ``f_t(x_t)`` and ``g_t(x_t)``, sum the one-point estimates
``(d/delta) tilde f_t(x_t) u_t`` of the surrogate's gradient (eq. 21; the surrogate of
`_tvc_common`) over the block and update ``y`` at the block's end: BFW-TVC by a
gap-terminated FW loop with doubling, SCBFW-TVC by L FW steps on a strongly convex surrogate. The round
(`AbstractBanditTVC`) is written once; the two differ only in the block update.
"""

import abc
import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._fw import fw_step, inner_frank_wolfe
from ocokit.algorithms._tvc_common import THEORIES, AbstractLyapunovLearner, lipschitz_bound, restart_if_doubled
from ocokit.feedback import BANDIT, FeedbackKind, one_point_sphere_estimate

# --------------------------------------------------------------------------------------------------
# Bandit ingredients (Wang, Wan and Zhang, eqs. 18-21: smoothing, shrunk set, one-point estimate) and Algorithms 3-4.


class _BanditState(eqx.Module):
    y: Float[Array, "..."]  # the auxiliary decision hat y_m in K_delta (frozen within a block)
    u: Float[Array, "..."]  # this round's direction on the unit sphere
    key: PRNGKeyArray
    queue: Float[Array, ""]
    block_grad: Float[Array, "..."]  # sum of this block's one-point estimates (hat nabla_m so far)
    linear: Float[Array, "..."]  # BFW: sum_{tau=b_k}^{m} hat nabla_tau; SCBFW: the linear term of F_m^sc
    anchor: Float[Array, "..."]  # BFW: y_{s_k} = hat y_{b_k}
    G_tilde: Float[Array, ""]
    epoch_start: Int[Array, ""]  # BFW: b_k, the first block using G_tilde
    t: Int[Array, ""]
    oracle_calls: Int[Array, ""]
    gap: Float[Array, ""]
    shrunk: Any  # K_delta = (1 - delta/r) K
    lmo_state: Any


def _direction(key: PRNGKeyArray, t: Any, like: Array) -> Array:
    """``u_t`` uniform on the unit sphere (eq. 20), as
    [`ocokit.feedback.sample_unit_sphere`][ocokit.feedback.sample_unit_sphere] but with the
    Gaussian drawn in float32 (half the cost at d = 3e6) and normalised in the working precision."""
    g = jax.random.normal(jax.random.fold_in(key, t), like.shape, jnp.float32).astype(like.dtype)
    return g / jnp.linalg.norm(g.ravel())


def _smoothing_constant(r: float, c: float | None) -> float:
    """The ``c`` of ``delta = c T^(-.)``, by default ``r / 2`` (inferred; ``delta < r`` for every T)."""
    return r / 2.0 if c is None else c


class AbstractBanditTVC(AbstractLyapunovLearner):
    """The round of Algorithms 3-4 of 000, shared by [`BFWTVC`][ocokit.algorithms.BFWTVC] and
    [`SCBFWTVC`][ocokit.algorithms.SCBFWTVC].

    Round t plays ``x_t = y_t + delta u_t`` (eq. 20), updates the queue, adds the one-point estimate
    ``(d/delta) tilde f_t(x_t) u_t`` (eq. 21) to the block's sum and, when ``t mod K = 0``, calls the block
    update of the subclass with ``w_t = Phi'(beta Q_t)``. ``hat y_1 = K_delta.center()``; ``delta < r`` is
    checked by ``init`` (the inner radius of K is known only there). A final subclass declares the surrogate's
    ``beta``, ``gamma``, ``lam``, ``phi`` (`AbstractLyapunovLearner`), the
    smoothing radius ``delta`` and the block size ``block``, and writes ``_block_update``.
    """

    delta: eqx.AbstractVar[Float[Array, ""]]
    block: eqx.AbstractVar[int]
    feedback: ClassVar[FeedbackKind] = BANDIT

    def __check_init__(self):
        _checks.positive("delta", self.delta)
        _checks.positive_int("block", self.block)

    def init(self, info, key):
        domain = info.domain
        r = domain.inner_radius
        concrete = _checks._concrete(self.delta), _checks._concrete(r)
        if all(v is not None for v in concrete) and not (concrete[0] < concrete[1]).all():
            raise ValueError(
                f"delta must be in (0, r) with r = {float(concrete[1])} (inner radius of K), got {self.delta}"
            )
        shrunk = domain.scaled(1.0 - self.delta / r)
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

    def decide(self, state):
        return state.y + self.delta * state.u

    def update(self, state, x, feedback):
        """Steps 3-7 of Algs. 3-4: queue, one-point estimate (eq. 21), block update when ``t mod K = 0``."""
        del x
        t = state.t + 1
        value, Q, w = self.lyapunov.bandit(feedback, state.queue)
        block_grad = state.block_grad + one_point_sphere_estimate(value, state.u, self.delta)
        state = eqx.tree_at(
            lambda s: (s.t, s.queue, s.block_grad, s.oracle_calls),
            state,
            (t, Q, block_grad, jnp.asarray(0, jnp.int32)),
        )
        # t is never batched (it counts rounds), so this is a real branch even under vmap.
        state = jax.lax.cond(t % self.block == 0, lambda s: self._block_update(s, w), lambda s: s, state)
        u = _direction(state.key, t + 1, state.y)
        return eqx.tree_at(lambda s: s.u, state, u)

    @abc.abstractmethod
    def _block_update(self, state: _BanditState, w: Array) -> _BanditState:
        """The state after the update of ``hat y`` at the end of a block (``w = Phi'(beta Q_t)``)."""


class BFWTVC(AbstractBanditTVC):
    r"""BFW-TVC: Bandit Frank-Wolfe with Time-Varying Constraints (Wang, Wan and Zhang, AAAI 2025, Alg. 3).

    Round t plays ``x_t = y_t + delta u_t`` (``u_t`` uniform on the unit sphere, ``y_t = hat y_m`` in
    ``K_delta = (1 - delta/r) K``, eq. 20) and forms ``tilde nabla_t = (d/delta) tilde f_t(x_t) u_t``
    (eq. 21).
    At the end of block m (``t mod K = 0``), with ``hat nabla_m`` the sum of the block's K estimates:

    \[
    \begin{aligned}
    &\textbf{while } \tilde G_k < \beta G \big(\gamma + \Phi'(\beta Q_t)\big):\quad
        \tilde G_{k+1} = 2 \tilde G_k,\ b_k = m && \text{(re-anchor at } \hat y_m\text{)} \\
    &F_{b_k:m}(y) = \eta_k \sum_{\tau=b_k}^{m} \big\langle \hat\nabla_\tau, y \big\rangle + \|y - \hat y_{b_k}\|^2
        && \text{(eqs. 22-23)} \\
    &\textbf{repeat } \text{FW with exact line search over } \mathcal{K}_\delta \text{ from } \hat y_m
        \textbf{ until} \\
    &\qquad \big\langle \nabla F(\tilde y_\tau), \tilde y_\tau - v_\tau \big\rangle \le \epsilon;\quad
        \hat y_{m+1} = \tilde y_{\tau+1} && \text{(eqs. 24-26)}
    \end{aligned}
    \]

    with ``eta_k = eta / G~_k`` (eq. 22: ``eta = c D / (d M T^{3/4})``).

    Source: Wang, Wan and Zhang, Algorithm 3, eqs. (20)-(26). Guarantee (Thm 3, convex, bandit): E[Regret_T] =
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

    Readings (Algorithm 3 does not say what a doubling does to ``b_k``; ocokit follows Algorithm 1's
    ``s_{k+1} = t``): on a doubling at the end of block m the epoch restarts at block m (its
    estimate is the first of the new sum) and the regulariser is re-centred at ``hat y_m``; the doubling test
    uses ``Q_t`` of the block's last round (the queue is non-decreasing); the output of the inner loop is the
    point after the step that met the stop rule (Alg. 3, Step 19). A last partial block gets no update.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = BFWTVC.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 64))
        >>> learner.block  # K = T^{1/2}
        8
        >>> calls = ocokit.run(learner, problem, T=64).diagnostics["oracle_calls"]
        >>> bool((calls[:7] == 0).all() and calls[7] >= 1)  # LMO calls only at the end of a block
        True

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025. A. Flaxman, A. Kalai, H. B. McMahan. Online convex optimization in the bandit setting.
        SODA 2005.
    """

    beta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    eta: Float[Array, ""] = hyperparameter(_checks.positive)
    G: Float[Array, ""] = hyperparameter(_checks.positive)
    delta: Float[Array, ""] = hyperparameter()
    epsilon: Float[Array, ""] = hyperparameter(_checks.positive)
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    block: int = eqx.field(static=True, default=1)
    max_inner: int = _checks.checked_field(_checks.positive_int, static=True, default=1000)
    phi: str = eqx.field(static=True, default="exp")

    needs: ClassVar[Needs] = Needs(
        constants=("grad_bound", "diameter", "loss_bound", "inner_radius"),
        constrained_constants=("constraint_grad_bound",),
    )

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, c: float | None = None, **overrides: Any) -> "BFWTVC":
        """Theorem 3 of Wang, Wan and Zhang with ``delta = c T^{-1/4}``; ``c`` defaults to ``r/2`` (inferred):
        ``delta < r``.

        ``beta = 1/C_2``, ``C_2 = 2^4 G (cD/r + 3c + 1 + 2cD/(dM) + dMD/c)``, ``gamma = 1``, ``K = T^{1/2}``,
        ``epsilon = 4 D^2 T^{-1/2}``, ``eta = c D/(d M T^{3/4})``, ``lam = 1/(2 T^{3/4})``; M is the problem's
        ``loss_bound``. ``overrides`` give each constant by name, or override any field.
        """
        info, who, T = info.giving(overrides), f"{cls.__name__}.from_theory", info.horizon
        G, D = lipschitz_bound(info, who), info.require("diameter", who)
        M = info.require("loss_bound", who)
        d = math.prod(info.domain.shape)
        r = info.require("inner_radius", who)
        c = _smoothing_constant(r, c)
        C2 = 16.0 * G * (c * D / r + 3 * c + 1 + 2 * c * D / (d * M) + d * M * D / c)
        steps = {"eta": c * D / (d * M * T**0.75), "delta": c * T**-0.25, "epsilon": 4.0 * D**2 / math.sqrt(T)}
        blocks = {"block": max(1, round(math.sqrt(T))), "max_inner": max(100, 4 * math.ceil(math.sqrt(T)))}
        return cls.build({"beta": 1.0 / C2, "gamma": 1.0, "G": G, "lam": 0.5 * T**-0.75, **steps, **blocks}, overrides)

    def _block_update(self, state: _BanditState, w: Array) -> _BanditState:
        G_tilde, restart = restart_if_doubled(state.G_tilde, self.beta * self.G * (self.gamma + w))
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
        return {
            "oracle_calls": state.oracle_calls,
            "queue": state.queue,
            "G_tilde": state.G_tilde,
            "epoch_start": state.epoch_start,
            "fw_gap": state.gap,
        }


class SCBFWTVC(AbstractBanditTVC):
    r"""SCBFW-TVC: strongly convex Bandit Frank-Wolfe with Time-Varying Constraints (Wang, Wan and Zhang, Alg. 4).

    Plays and estimates as [`BFWTVC`][ocokit.algorithms.BFWTVC] (eqs. 20-21). At the end of block m (round ``t = mK``),
    with
    ``C_3 = gamma beta alpha_f t / 2``:

    \[
    \begin{aligned}
    F_m^{sc}(y) &= \sum_{\tau=1}^{m} \Big[ \big\langle \hat\nabla_\tau, y \big\rangle
        + \frac{\gamma \beta \alpha_f K}{2} \|y - \hat y_\tau\|^2 \Big] \\
    &= \sum_{\tau=1}^{m} \big\langle \hat\nabla_\tau - \gamma \beta \alpha_f K\, \hat y_\tau, y \big\rangle
        + C_3 \|y\|^2 + \text{const} \\
    &\text{$L$ Frank-Wolfe steps over } \mathcal{K}_\delta \text{ from } \hat y_m
        \text{ with exact line search (Hessian } 2 C_3 I\text{)}; \\
    \hat y_{m+1} &= \tilde y_{L+1} && \text{(eqs. 27-30)}
    \end{aligned}
    \]

    Source: Wang, Wan and Zhang, Algorithm 4, eqs. (27)-(30). Guarantee (Thm 4, alpha_f-strongly convex, bandit):
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

    Readings: printed eq. (27) has the quadratic coefficient ``C_3 = gamma beta alpha_f mK / 2`` of the
    strongly convex FTRL surrogate (Algorithm 2, blocked SCOFW) but omits its linear shift, so the iterates
    are pulled to the origin: default ``"shifted"``, ``"literal"`` selects the printed form. Thm 4's
    statement and proof disagree on beta and gamma: ``from_theory(theory="proof")`` (default) or
    ``theory="statement"`` (``beta = 1/(G D T^{2/3})``, ``gamma = G/(G + alpha_f D)``).

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = SCBFWTVC.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 64), alpha_f=1.0)
        >>> learner.block, learner.inner_steps  # K = L = T^{2/3}
        (16, 16)
        >>> int(ocokit.run(learner, problem, T=64).diagnostics["oracle_calls"].sum())  # L LMO calls per block
        64

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025. Y. Wan, G. Wang, L. Zhang. Projection-free distributed online learning with sublinear
        communication complexity. JMLR 2022 (blocked SCOFW).
    """

    beta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    alpha_f: Float[Array, ""] = hyperparameter(_checks.positive)
    delta: Float[Array, ""] = hyperparameter()
    lam: Float[Array, ""] = hyperparameter(default=math.nan)
    block: int = eqx.field(static=True, default=1)
    inner_steps: int = _checks.checked_field(_checks.positive_int, static=True, default=1)
    phi: str = eqx.field(static=True, default="square")
    surrogate: str = _checks.checked_field(_checks.among(("shifted", "literal")), static=True, default="shifted")

    needs: ClassVar[Needs] = Needs(
        constants=("grad_bound", "diameter", "strong_convexity", "inner_radius"),
        constrained_constants=("constraint_grad_bound",),
    )

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        alpha_f: float | None = None,
        c: float | None = None,
        theory: str = "proof",
        **overrides: Any,
    ) -> "SCBFWTVC":
        """Theorem 4 of Wang, Wan and Zhang: ``K = L = T^{2/3}``, ``delta = c T^{-1/3}`` (``c = r/2`` default),
        ``Phi = x^2``.

        ``theory="proof"``: ``beta = 1``, ``gamma = 16 (8 log T^{1/3} + C_3') G^2 T^{2/3} / alpha_f`` with
        ``C_3' = 8 + 3c + cD/r + 12D``; ``theory="statement"``: ``beta = 1/(G D T^{2/3})``,
        ``gamma = G/(G + alpha_f D)``. ``alpha_f`` overrides the problem constant ``strong_convexity``;
        ``overrides`` give each other constant by name, or override any field.
        """
        _checks.one_of("theory", theory, THEORIES)
        info, who, T = info.giving(overrides), f"{cls.__name__}.from_theory", info.horizon
        G, D = lipschitz_bound(info, who), info.require("diameter", who)
        a = info.require("strong_convexity", who, alpha_f)
        r = info.require("inner_radius", who)
        c = _smoothing_constant(r, c)
        T23 = T ** (2.0 / 3.0)
        if theory == "proof":
            C3 = 8.0 + 3.0 * c + c * D / r + 12.0 * D
            beta, gamma = 1.0, 16.0 * (8.0 * math.log(T ** (1.0 / 3.0)) + C3) * G**2 * T23 / a
        else:
            beta, gamma = 1.0 / (G * D * T23), G / (G + a * D)
        K = max(1, round(T23))
        return cls.build(
            {"beta": beta, "gamma": gamma, "alpha_f": a, "delta": c * T ** (-1.0 / 3.0), "block": K, "inner_steps": K},
            overrides,
        )

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

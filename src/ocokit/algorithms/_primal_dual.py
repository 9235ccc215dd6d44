"""Queue-based primal-dual baselines of paper 003: RECOO (Guo et al. 2022), Yi et al. 2021 and 2023.

The three are the comparators of COLDQ's experiments (J. Wang, B. Yan and Y. Liu, "Doubly-Bounded Queue for
Constrained Online Learning: Keeping Pace with Dynamics of Both Loss and Constraint", AAAI 2025; paper 003,
Tables 3-6). Paper 003 gives no update rules for them and the original papers' full texts were not read, so
each update was reconstructed from the COLDQ authors' own implementations of these baselines ([C]) with the
parameters of paper 003's tables ([S]). RECOO and Yi et al. 2021 solve a hinge-penalised proximal step
per round with the part they share with COLDQ (`HingeProx`);
Yi et al. 2023 takes one projected step. Their queue updates are the named rules of
`_queues` (`floored_rectified`, `cumulative_hinge`, `leaky_dual_ascent`).

Verification tags: **[A]** the paper's abstract (bounds only); **[C]** the COLDQ authors' public code
``yituo-liu/TON26-COLDQ`` (of their decentralised extension) reduced to one agent, not the baseline
authors' code; **[S]** what paper 003 reports (its parameter tables); **(unverified)** reconstructed, to be
checked against the original paper before claiming fidelity.
"""

from __future__ import annotations

from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._queue_common import (
    STARTS,
    AbstractQueueLearner,
    HingeProx,
    QueueState,
    paper_table,
    start_point,
)
from ocokit.algorithms._queues import cumulative_hinge, floored_rectified, leaky_dual_ascent
from ocokit.feedback import FULL_INFORMATION, FeedbackKind

# --------------------------------------------------------------------------------------------------
# RECOO

_RECOO_TABLES = {3: (0.5, 1.0), 4: (1.0, 7.0), 5: (1.0, 1.0), 6: (0.7, 1.0)}  # table -> (alpha, gamma)
_QUEUE_USES = ("current", "previous")


class RECOO(AbstractQueueLearner):
    r"""RECOO: RECtified Online Optimization with a floored virtual queue (Guo, Liu, Wei and Ying 2022).

    Update, for ``t >= 2``, from round ``t-1``'s gradient and its whole constraint function:

    \[
    \begin{aligned}
    x_t &= \operatorname*{arg\,min}_{x \in \mathcal{X}} \langle \nabla f_{t-1}(x_{t-1}), x - x_{t-1} \rangle
        + \alpha_{t-1} \|x - x_{t-1}\|^2 + \gamma_{t-1} \sum_n Q_{t-1}^n \big[g_{t-1}^n(x)\big]_+ \\
    Q_t^n &= \max\big\{ \eta_t,\ Q_{t-1}^n + \gamma_t [g_t^n(x_t)]_+ \big\} && \text{(queue\_uses="current")}
    \end{aligned}
    \]

    with ``Q_1 = 0`` (so ``x_2`` is a projected gradient step), ``alpha_t = alpha t^{1/2}``,
    ``gamma_t = gamma t^{1/2 + epsilon}`` (the rectifier: clipped constraint, scaled) and
    ``eta_t = eta t^{1/2}`` (the queue's time-varying floor; lower bound only). The proximal term has no
    1/2. The step is solved exactly by the part ``prox`` (`HingeProx`,
    as in COLDQ) inside the compiled run; the solve happens in ``update`` at the end of round ``t-1``. The
    queue is `floored_rectified`.

    Source: update rule **[C]** (the COLDQ authors' ``RECOO[27].py``, time-varying and fixed variants,
    reduced to one agent; Wang, Yan and Liu (AAAI 2025), footnote 1, describe the queue as "a lower bound
    only"); parameters of Wang, Yan and Liu's Tables 3-6 **[S]**
    ([`from_paper`][ocokit.algorithms.RECOO.from_paper]); the theory exponents ``alpha ~ sqrt(t)``, ``gamma ~
    t^{1/2+eps}``,
    ``eta ~ sqrt(t)`` are **(unverified)**. Guarantees **[A]** (NeurIPS 2022 abstract; hard violation
    ``sum_t sum_n [g]_+``): convex, fixed constraints ``O(sqrt T)`` regret and ``O(1)`` violation;
    adversarial constraints ``O(sqrt T)`` and ``O(T^{3/4})``; strongly convex ``O(log T)`` with ``O(1)``
    (fixed) or ``O(sqrt(T log T))`` (adversarial).

    Args:
        alpha: scale of the proximal weight ``alpha_t = alpha t^{1/2}``, > 0.
        gamma: scale of the rectifier ``gamma_t = gamma t^{1/2 + epsilon}``, > 0.
        eta: scale of the queue floor ``eta_t = eta t^{1/2}``, > 0.
        epsilon: RECOO's own exponent (not COLDQ's eps), in ``[0, 1/2]``; Wang, Yan and Liu use 0.01.
        tol: relative tolerance of the per-round solver, > 0.
        max_iter: cap on the solver's dual Newton steps (static).
        queue_uses: ``"current"`` (default, **[C]**): the queue absorbs the new ``g_t`` at the new
            ``x_t``; ``"previous"`` (the original paper's form as recalled, **(unverified)**):
            ``Q_{t+1} = max(Q_t + gamma_t [g_t(x_{t+1})]_+, eta_t)``, the old function at the new point,
            computed in round t's update right after ``x_{t+1}``. Identical for fixed constraints.
        solver: the per-round solver (static; `SOLVERS`).
        start: ``"origin"`` plays ``x_1 = Pi_X(0)`` (**[C]**: ``x_1 = 0``), ``"center"`` ``X.center()``.

    ``tol``, ``max_iter``, ``solver`` and ``start`` build the part ``prox``
    (`HingeProx`), which validates them.

    Readings: the [C] code's queue (``queue_uses="current"``) is the default; RECOO's own form as recalled
    (the old function at the new point) is the option above. Initial queue 0, so the floor ``eta_t`` applies
    from the first update.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 50)
        >>> learner = ocokit.algorithms.RECOO.from_paper(info, table=3)
        >>> traj = ocokit.run(learner, problem, T=50)
        >>> bool(traj.diagnostics["queue"][1:].min() >= 1.0)  # the floor eta_t = sqrt(t) from t = 2
        True

    References:
        H. Guo, X. Liu, H. Wei and L. Ying. Online Convex Optimization with Hard Constraints: Towards the
        Best of Two Worlds and Beyond. NeurIPS 2022.
    """

    alpha: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    eta: Float[Array, ""] = hyperparameter()
    epsilon: Float[Array, ""] = hyperparameter()
    queue_uses: str = eqx.field(static=True)
    prox: HingeProx

    def __init__(
        self,
        alpha: Any = 1.0,
        gamma: Any = 1.0,
        eta: Any = 1.0,
        epsilon: Any = 0.01,
        queue_uses: str = "current",
        **solver: Any,
    ):
        self.alpha, self.gamma, self.eta, self.epsilon = alpha, gamma, eta, epsilon
        self.queue_uses = queue_uses
        self.prox = HingeProx(**solver)  # tol, max_iter, solver, start

    def __check_init__(self):
        _checks.positive("alpha", self.alpha)
        _checks.positive("gamma", self.gamma)
        _checks.positive("eta", self.eta)
        _checks.in_closed_interval("epsilon", self.epsilon, 0.0, 0.5)
        _checks.one_of("queue_uses", self.queue_uses, _QUEUE_USES)

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> RECOO:
        """The convex schedule ``alpha_t = t^{1/2}``, ``gamma_t = t^{1/2 + 0.01}``, ``eta_t = t^{1/2}``.

        These exponents are RECOO's convex choice as Wang, Yan and Liu's tables use them; the theorem's own
        constants are **(unverified)** (not read in Guo et al.). ``overrides`` replace constructor arguments.
        """
        del info
        return cls.build({"alpha": 1.0, "gamma": 1.0, "eta": 1.0, "epsilon": 0.01}, overrides)

    @classmethod
    def from_paper(cls, info: ProblemInfo, *, table: int = 3, **overrides: Any) -> RECOO:
        """Wang, Yan and Liu's parameters **[S]**: Table 3 (time-varying, Fig. 1) ``alpha_t = 0.5 t^{1/2}``,
        ``gamma_t = t^{1/2+eps}``; Table 4 (QP) ``alpha_t = t^{1/2}``, ``gamma_t = 7 t^{1/2+eps}``; Table 5
        (LP) ``alpha_t = t^{1/2}``, ``gamma_t = t^{1/2+eps}``; Table 6 (jobs) ``alpha_t = 0.7 t^{1/2}``,
        ``gamma_t = t^{1/2+eps}``; always ``eta_t = t^{1/2}`` and ``eps = 0.01``."""
        del info
        alpha, gamma = paper_table(_RECOO_TABLES, table)
        return cls.build({"alpha": alpha, "gamma": gamma, "eta": 1.0, "epsilon": 0.01}, overrides)

    def init(self, info, key):
        del key
        x = self.prox.start_point(info.domain)
        return QueueState.initial(x, info.num_constraints, 0.0, info.domain)  # Q_1 = 0

    def _schedules(self, t, dtype):
        tf = t.astype(dtype)
        return self.alpha * jnp.sqrt(tf), self.gamma * tf ** (0.5 + self.epsilon), self.eta * jnp.sqrt(tf)

    def update(self, state, x, feedback):
        t = state.t + 1  # the round just played
        alpha_t, gamma_t, eta_t = self._schedules(t, x.dtype)
        queue = state.queue
        if self.queue_uses == "current":
            grown = floored_rectified(queue, feedback.constraints(x), gamma_t, eta_t)
            queue = jnp.where(t >= 2, grown, queue)
        sol = self.prox.step(feedback, state.domain, feedback.grad(x), alpha_t, x, gamma_t * queue)
        x_next = sol.x.astype(x.dtype)
        if self.queue_uses == "previous":
            queue = floored_rectified(queue, feedback.constraints(x_next), gamma_t, eta_t)
        return QueueState(x_next, queue.astype(state.queue.dtype), t, sol.iterations, sol.converged, state.domain)

    def diagnostics(self, state):
        return state.diagnostics()


# --------------------------------------------------------------------------------------------------
# Yi et al. 2021, Algorithm 1 (fixed constraints)

_YI2021_TABLES = {4: (100.0, 2.5), 5: (2.0, 1.0)}  # table -> (alpha, gamma), c = 0.5
_GAMMA_RULES = ("printed", "code")


class _Yi2021State(eqx.Module):
    """The queue learner's `QueueState` (its ``queue`` is ``q_t``; ``q_hat`` adds the latest increment
    again) and the constant steps ``alpha``, ``gamma`` set from the horizon."""

    core: QueueState
    alpha: Float[Array, ""]
    gamma: Float[Array, ""]

    @property
    def x(self) -> Float[Array, " p"]:
        """The decision to play next, ``x_{t+1}`` (the queue state's)."""
        return self.core.x


class Yi2021(AbstractQueueLearner):
    r"""Algorithm 1 of Yi, Li, Yang, Xie, Chai and Johansson (ICML 2021), long-term constraints.

    Update, for ``t >= 2`` (``q_0 = 0``), with constant ``alpha`` and ``gamma`` set from the horizon:

    \[
    \begin{aligned}
    q_{t-1} &= q_{t-2} + \gamma [g(x_{t-1})]_+, \qquad \hat q = q_{t-1} + \gamma [g(x_{t-1})]_+ \\
    x_t &= \operatorname*{arg\,min}_{x \in \mathcal{X}} \alpha \langle \nabla f_{t-1}(x_{t-1}), x \rangle
        + \alpha \gamma \sum_n \hat q^n [g^n(x)]_+ + \|x - x_{t-1}\|^2
    \end{aligned}
    \]

    (the latest violation counts twice in ``q_hat``; unit weight on the proximal term and ``alpha`` on
    the linear term). Dividing by ``alpha``, ``x_t`` is the hinge-penalised proximal step with proximal
    weight ``1 / alpha`` and hinge weights ``gamma q_hat``, solved exactly by the part ``prox``
    (`HingeProx`); ``q`` and ``q_hat`` are
    `cumulative_hinge` applied once and twice. The constraint is meant
    to be fixed; on a time-varying problem the latest ``g_{t-1}`` is used.

    Parameters: ``alpha = alpha0 / T^c`` and ``gamma = gamma0 / T^{c/2}`` as printed in Wang, Yan and Liu's
    Tables 4-5 (``gamma_rule="printed"``), or ``gamma = gamma0 T^{c/2}`` (``gamma_rule="code"``, the
    exponent sign of the [C] code and of Yi et al.'s ``gamma ~ alpha^{-1/2}`` scaling).

    Source: update rule **[C]** (the COLDQ authors' ``Yi 2021[26].py``, one agent); parameters **[S]**
    (Wang, Yan and Liu, Tables 4-5, [`from_paper`][ocokit.algorithms.Yi2021.from_paper]); the theoretical schedule is
    **(unverified)**. Guarantees
    **[A]** (ICML 2021 abstract; cumulative constraint violation ``sum_t [g(x_t)]_+``): convex
    ``O(T^{max(c, 1-c)})`` static regret and ``O(T^{(1-c)/2})`` violation for ``c in (0, 1)``; strongly
    convex ``O(log T)`` for both.

    Args:
        alpha0: scale of ``alpha = alpha0 / T^c``, > 0.
        gamma0: scale of ``gamma`` (see ``gamma_rule``), > 0.
        c: Yi et al.'s trade-off parameter in ``(0, 1)``; Wang, Yan and Liu use 0.5.
        tol, max_iter, solver, start: the part ``prox``, as in [`RECOO`][ocokit.algorithms.RECOO].
        gamma_rule: ``"printed"`` (default: Wang, Yan and Liu's tables as printed, ``gamma0 / T^{c/2}``) or
            ``"code"`` (``gamma0 T^{c/2}``; the [C] code uses ``alpha = 4 / sqrt(T)``,
            ``gamma = 0.5 T^{c/2}``) (static).

    Readings: Wang, Yan and Liu's Tables 4-5 print ``gamma = gamma0 / T^{c/2}`` (a negative exponent), while the [C]
    code uses ``gamma = 0.5 T^{+c/2}``, consistent with Yi et al.'s ``gamma ~ alpha^{-1/2}`` (recalled,
    unverified). The default follows the primary source for the experiments, Wang, Yan and Liu's printed tables;
    ``gamma_rule="code"`` selects the [C] exponent.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.OnlineQuadraticProgram()
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 100)
        >>> learner = ocokit.algorithms.Yi2021.from_paper(info, table=4)
        >>> ocokit.run(learner, problem, T=100).loss.shape
        (100,)

    References:
        X. Yi, X. Li, T. Yang, L. Xie, T. Chai and K. H. Johansson. Regret and Cumulative Constraint
        Violation Analysis for Online Convex Optimization with Long Term Constraints. ICML 2021.
    """

    alpha0: Float[Array, ""] = hyperparameter()
    gamma0: Float[Array, ""] = hyperparameter()
    c: Float[Array, ""] = hyperparameter()
    gamma_rule: str = eqx.field(static=True)
    prox: HingeProx

    def __init__(
        self,
        alpha0: Any = 1.0,
        gamma0: Any = 1.0,
        c: Any = 0.5,
        gamma_rule: str = "printed",
        **solver: Any,
    ):
        self.alpha0, self.gamma0, self.c = alpha0, gamma0, c
        self.gamma_rule = gamma_rule
        self.prox = HingeProx(**solver)  # tol, max_iter, solver, start

    def __check_init__(self):
        _checks.positive("alpha0", self.alpha0)
        _checks.positive("gamma0", self.gamma0)
        _checks.in_open_interval("c", self.c, 0.0, 1.0)
        _checks.one_of("gamma_rule", self.gamma_rule, _GAMMA_RULES)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, c: float = 0.5, **overrides: Any) -> Yi2021:
        """``alpha = 1 / T^c`` and ``gamma = T^{c/2}`` (``gamma ~ alpha^{-1/2}``; **(unverified)**)."""
        del info
        return cls.build({"alpha0": 1.0, "gamma0": 1.0, "c": c, "gamma_rule": "code"}, overrides)

    @classmethod
    def from_paper(cls, info: ProblemInfo, *, table: int = 4, **overrides: Any) -> Yi2021:
        """Wang, Yan and Liu **[S]**: Table 4 (QP) ``alpha = 100 / T^{1/2}``, ``gamma = 2.5 / T^{c/2}``; Table 5 (LP)
        ``alpha = 2 / T^{1/2}``, ``gamma = 1 / T^{c/2}``; ``c = 0.5`` (``gamma_rule`` may be overridden)."""
        del info
        alpha0, gamma0 = paper_table(_YI2021_TABLES, table)
        return cls.build({"alpha0": alpha0, "gamma0": gamma0, "c": 0.5}, overrides)

    def steps(self, T: int, dtype=None) -> tuple[Array, Array]:
        """``(alpha, gamma)`` for horizon ``T``."""
        Tf = jnp.asarray(T, dtype or jnp.result_type(float))
        alpha = self.alpha0 / Tf**self.c
        half = Tf ** (0.5 * self.c)
        return alpha, (self.gamma0 / half if self.gamma_rule == "printed" else self.gamma0 * half)

    def init(self, info, key):
        del key
        x = self.prox.start_point(info.domain)
        alpha, gamma = self.steps(info.horizon, x.dtype)
        core = QueueState.initial(x, info.num_constraints, 0.0, info.domain)  # q_0 = 0
        return _Yi2021State(core, alpha.astype(x.dtype), gamma.astype(x.dtype))

    def update(self, state, x, feedback):
        core = state.core
        g = feedback.constraints(x)
        queue = cumulative_hinge(core.queue, g, state.gamma)  # q_t
        q_hat = cumulative_hinge(queue, g, state.gamma)  # the latest increment counted twice
        sol = self.prox.step(feedback, core.domain, feedback.grad(x), 1.0 / state.alpha, x, state.gamma * q_hat)
        x_next, queue = sol.x.astype(x.dtype), queue.astype(core.queue.dtype)
        core = QueueState(x_next, queue, core.t + 1, sol.iterations, sol.converged, core.domain)
        return _Yi2021State(core, state.alpha, state.gamma)

    def diagnostics(self, state):
        return state.core.diagnostics()


# --------------------------------------------------------------------------------------------------
# Yi et al. 2023, Algorithm 1 (time-varying constraints; single agent)

_YI2023_TABLES = {3: (3.0, 0.1, 5.0), 6: (100.0, 1.0, 1.0)}  # table -> (alpha, gamma, beta)
_DUAL_STEPS = ("gamma", "beta")


class Yi2023(AbstractLearner):
    r"""Algorithm 1 of Yi, Li, Yang, Xie, Chai and Johansson (IEEE TAC 2023), with one agent.

    Update, for ``t >= 2`` (``q_1 = 0``), first-order feedback only:

    \[
    \begin{aligned}
    s^n &= \begin{cases} \nabla g_{t-1}^n(x_{t-1}) & g_{t-1}^n(x_{t-1}) > 0 \\ 0 & \text{otherwise} \end{cases}
        && \text{(subgradient of } [g]_+\text{)} \\
    \omega &= \nabla f_{t-1}(x_{t-1}) + \sum_n q^n s^n && \text{(the old } q\text{)} \\
    x_t &= \Pi_{\mathcal{X}}(x_{t-1} - \alpha_t\, \omega) \\
    q^n &\leftarrow \max\big\{ 0,\ (1 - \beta_t \gamma_t)\, q^n
        + \gamma_t \big( [g_{t-1}^n(x_{t-1})]_+ + \langle s^n, x_t - x_{t-1} \rangle \big) \big\}
    \end{aligned}
    \]

    with ``alpha_t = alpha / t^kappa``, ``beta_t = beta / t^kappa`` and ``gamma_t = gamma / t^{1-kappa}``
    (all ``~ 1/sqrt(t)`` at ``kappa = 1/2``). The distributed algorithm's consensus average is replaced by
    the agent's own previous point. One projection per round. The dual step is
    `leaky_dual_ascent`.

    Source: update rule **[C]** (the COLDQ authors' ``Yi 2023[54].py``, one agent); parameters **[S]**
    (Wang, Yan and Liu, Tables 3 and 6, [`from_paper`][ocokit.algorithms.Yi2023.from_paper]); the theoretical
    schedule (``alpha, beta ~ t^{-kappa}``,
    ``gamma ~ t^{-(1-kappa)}``) is **(unverified)**.
    Guarantees **[A]** (IEEE TAC 68(5) abstract, network form): ``O(T^{max(kappa, 1-kappa)})`` static
    regret and ``O(T^{1-kappa/2})`` cumulative constraint violation; ``O(T^kappa)`` regret for strongly
    convex losses.

    Args:
        alpha: scale of the primal step ``alpha_t``, > 0.
        gamma: scale of ``gamma_t``, > 0.
        beta: scale of ``beta_t``, > 0.
        kappa: the trade-off exponent in ``(0, 1)``; Wang, Yan and Liu's tables use ``1/2``.
        dual_step: which of ``gamma_t``, ``beta_t`` multiplies the bracket (the dual step; the other is
            the dual regulariser; their product ``beta_t gamma_t`` is the leak either way) (static).
        start: as in [`RECOO`][ocokit.algorithms.RECOO].

    Readings: Wang, Yan and Liu do not say which of ``gamma_t``, ``beta_t`` is the dual step. The default
    ``dual_step="gamma"`` follows Yi et al.'s naming (``gamma_t`` the dual step, ``beta_t`` the regulariser;
    with Table 3 the dual step is ``0.1 / sqrt(t)``); ``dual_step="beta"`` reads the
    table's names swapped, so that the dual step is ``5 / sqrt(t)`` as in the [C] code.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> info = ocokit.algorithms.ProblemInfo.of(problem, 50)
        >>> learner = ocokit.algorithms.Yi2023.from_paper(info, table=3)
        >>> bool(ocokit.run(learner, problem, T=50).diagnostics["queue"].min() >= 0)
        True

    References:
        X. Yi, X. Li, T. Yang, L. Xie, T. Chai and K. H. Johansson. Regret and Cumulative Constraint
        Violation Analysis for Distributed Online Constrained Convex Optimization. IEEE Transactions on
        Automatic Control 68(5), 2023.
    """

    alpha: Float[Array, ""] = hyperparameter(default=1.0)
    gamma: Float[Array, ""] = hyperparameter(default=1.0)
    beta: Float[Array, ""] = hyperparameter(default=1.0)
    kappa: Float[Array, ""] = hyperparameter(default=0.5)
    dual_step: str = eqx.field(static=True, default="gamma")
    start: str = eqx.field(static=True, default="origin")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    needs: ClassVar[Needs] = Needs(vector=True)

    def __check_init__(self):
        _checks.positive("alpha", self.alpha)
        _checks.positive("gamma", self.gamma)
        _checks.positive("beta", self.beta)
        _checks.in_open_interval("kappa", self.kappa, 0.0, 1.0)
        _checks.one_of("dual_step", self.dual_step, _DUAL_STEPS)
        _checks.one_of("start", self.start, STARTS)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, kappa: float = 0.5, **overrides: Any) -> Yi2023:
        """Unit scales, ``alpha_t, beta_t ~ t^{-kappa}`` and ``gamma_t ~ t^{-(1-kappa)}`` **(unverified)**."""
        del info
        return cls.build({"alpha": 1.0, "gamma": 1.0, "beta": 1.0, "kappa": kappa}, overrides)

    @classmethod
    def from_paper(cls, info: ProblemInfo, *, table: int = 3, **overrides: Any) -> Yi2023:
        """Wang, Yan and Liu **[S]**: Table 3 (time-varying) ``alpha_t = 3/sqrt(t)``, ``gamma_t = 0.1/sqrt(t)``,
        ``beta_t = 5/sqrt(t)``; Table 6 (jobs) ``alpha_t = 100/sqrt(t)``, ``gamma_t = beta_t = 1/sqrt(t)``."""
        del info
        alpha, gamma, beta = paper_table(_YI2023_TABLES, table)
        return cls.build({"alpha": alpha, "gamma": gamma, "beta": beta, "kappa": 0.5}, overrides)

    def init(self, info, key):
        del key
        x = start_point(info.domain, self.start)
        return QueueState.initial(x, info.num_constraints, 0.0, info.domain)  # q_1 = 0

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        t = state.t + 1  # the round just played; the step computes x_{t+1} with index s = t + 1
        s = (t + 1).astype(x.dtype)
        alpha_s = self.alpha / s**self.kappa
        beta_s = self.beta / s**self.kappa
        gamma_s = self.gamma / s ** (1.0 - self.kappa)
        step, reg = (gamma_s, beta_s) if self.dual_step == "gamma" else (beta_s, gamma_s)
        g = feedback.constraints(x)
        active = (g > 0)[:, None]
        S = jnp.where(active, jnp.reshape(feedback.constraints_jacobian(x), (g.shape[0], x.shape[0])), 0.0)
        omega = feedback.grad(x) + S.T @ state.queue
        x_next = state.domain.project(x - alpha_s * omega).astype(x.dtype)
        queue = leaky_dual_ascent(state.queue, jnp.maximum(g, 0.0) + S @ (x_next - x), step, reg)
        one = jnp.asarray(1, jnp.int32)
        return QueueState(x_next, queue.astype(state.queue.dtype), t, one, jnp.asarray(True), state.domain)

    def diagnostics(self, state):
        return {"oracle_calls": state.iterations, "queue": state.queue}

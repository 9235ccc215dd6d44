"""COLDQ and COLDQ-Expert: constrained online learning with a doubly-bounded virtual queue (paper 003).

COLDQ holds a `HingeProx` part (the exact per-round solver) and uses
the queue update `doubly_bounded` (paper 003, eq. (8)); COLDQ-Expert holds the
COLDQ that each of its experts runs (its part ``expert``: the parameters, the queue update, the solver).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._queue_common import AbstractQueueLearner, HingeProx, QueueState, paper_table
from ocokit.algorithms._queues import doubly_bounded

_PAPER_TABLES = dict.fromkeys((3, 4, 5, 6))  # COLDQ has the same parameters in Tables 3-6


def _theory_horizon_eps(info: ProblemInfo, eps: float | None, who: str) -> tuple[int, float]:
    """``(T, eps)`` for ``eta = T^(-.)``, ``gamma = eps T^(.)``: ``T > 1``; ``eps`` 0.5 (Tables 3-6) capped at
    ``G / 2`` (``G = constraint_bound``, when known); warns when ``eps >= G``."""
    T = info.horizon
    _checks.greater_than("T (horizon)", T, 1)
    G = info.require("constraint_bound", who, optional=True)
    if eps is None:
        return T, 0.5 if G is None else min(0.5, 0.5 * G)
    _checks.positive("eps", eps)
    if G is not None and eps >= G:
        warnings.warn(
            f"{who}: eps = {eps} >= G = {G} violates gamma < G / eta (Corollary 1): the queue stays frozen "
            "at gamma and the learner is a fixed exact penalty of weight gamma (the paper's Fig. 2 setup allows this)",
            stacklevel=3,
        )
    return T, float(eps)


class COLDQ(AbstractQueueLearner):
    r"""COLDQ: Constrained Online Learning with a Doubly-bounded Queue (Wang, Yan and Liu, AAAI 2025, Algorithm 1).

    Update, for ``t >= 2``, from round ``t-1``'s gradient ``grad f_{t-1}(x_{t-1})`` and its *whole*
    constraint function ``g_{t-1}`` (full-information feedback):

    \[
    \begin{aligned}
    x_t &= \operatorname*{arg\,min}_{x \in \mathcal{X}} \big\langle \nabla f_{t-1}(x_{t-1}), x - x_{t-1} \big\rangle
        + \alpha_{t-1} \|x - x_{t-1}\|^2 + \sum_{n} Q_{t-1}^n \big[g_{t-1}^n(x)\big]_+
        && (P_t) \\
    Q_t^n &= \max\big\{ (1 - \eta)\, Q_{t-1}^n + [g_t^n(x_t)]_+,\ \gamma \big\} && (8)
    \end{aligned}
    \]

    with ``Q_1^n = gamma`` (not updated with ``g_1(x_1)``) and ``alpha_t = alpha0 t^alpha_power``. The loss
    is linearised, the constraint is not (its hinge enters exactly), the proximal term has no 1/2. ``P_t``
    is solved exactly in the compiled run by the part ``prox``
    (`HingeProx`: dual projected Newton; fast path when the
    projected gradient step satisfies ``g_{t-1} <= 0``). The queue is
    `doubly_bounded`.
    The solve happens in ``update`` at the end of round ``t-1``, which has exactly the information above.

    Source: Wang, Yan and Liu, Algorithm 1, problem ``P_t`` (Section 4.3) and queue (8) (Section 4.1).
    Guarantees (A1-A3): Lemma 1 ``gamma <= Q_t^n <= G / eta``; Theorem 1 / (13)
    dynamic regret and Theorem 2 / (14) hard violation; Corollary 1 (``alpha_t = t^{(1-V_x)/2}``,
    ``eta = 1/T``, ``gamma = eps T``, ``eps in (0, G)``): ``O(T^{(1+V_x)/2})`` dynamic regret and
    ``O(T^{V_g})`` hard violation, O(1) for fixed constraints, no Slater condition. Corollary 2
    (``alpha_t = mu t``, A4's ``mu`` without 1/2): ``O(log T)`` static regret.

    Args:
        eta: queue leak ``eta in (0, 1)`` (theory: ``1/T``).
        gamma: queue floor ``gamma > 0``; theory wants ``gamma < G / eta`` (``eps T`` with ``eps < G``).
        alpha0: scale of ``alpha_t = alpha0 t^alpha_power``, > 0 (strongly convex: the paper's ``mu``).
        alpha_power: exponent in ``[0, 1]`` (non-decreasing ``alpha_t``): ``(1 - V_x)/2`` convex, 1 strongly
            convex, 1/2 in all the paper's experiments.
        tol: relative tolerance of the ``P_t`` solver (dual KKT residual in units of ``g``), > 0.
        max_iter: cap on dual Newton steps per round (static).
        solver: how ``P_t`` is solved (static; `SOLVERS`): ``"auto"``
            uses the problem's declared structure (``affine_constraints`` / ``log_capacity_constraint``)
            and the generic smooth solver otherwise; ``"affine"`` asserts ``g`` is affine.
        start: ``"origin"`` (default) plays ``x_1 = Pi_X(0)`` (``0`` in all four of the paper's setups, as
            in the authors' code); ``"center"`` plays ``X.center()`` (static).

    ``tol``, ``max_iter``, ``solver`` and ``start`` build the part ``prox``
    (`HingeProx`), which validates them.

    Readings: the queue (8) uses the new ``g_t`` at the new ``x_t``, not ``g_{t-1}(x_t)``; ``Q_1 = gamma`` and
    the loop starts at t = 2; ``P_t`` has the hinge of the exact previous constraint, not a linearisation;
    neither the proximal term nor A4's ``mu`` has a 1/2, so a user's standard modulus ``m`` gives
    ``alpha0 = m / 2`` (``from_theory`` does this). The paper states the fast path for the unprojected
    gradient step; it is tested here on the projected point, where it is exact. ``from_theory`` and
    ``from_paper`` warn, not fail, when ``eps >= G``: then ``(1 - eta) gamma + [g]_+ <= gamma``, so the queue
    stays at ``gamma``; the paper's Fig. 2 setup (``eps = 0.5``, random ``A, b``) can fall in this case.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = COLDQ.from_paper(ocokit.algorithms.ProblemInfo.of(problem, 100), table=3)
        >>> traj = ocokit.run(learner, problem, T=100)
        >>> bool(traj.diagnostics["queue"].min() >= 0.5 * 100)
        True

    References:
        J. Wang, B. Yan and Y. Liu. Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace
        with Dynamics of Both Loss and Constraint. AAAI 2025.
    """

    eta: Float[Array, ""] = hyperparameter()
    gamma: Float[Array, ""] = hyperparameter()
    alpha0: Float[Array, ""] = hyperparameter()
    alpha_power: Float[Array, ""] = hyperparameter()
    prox: HingeProx
    needs: ClassVar[Needs] = dataclasses.replace(
        AbstractQueueLearner.needs, optional=("constraint_bound", "strong_convexity")
    )

    def __init__(
        self,
        eta: Any,
        gamma: Any,
        alpha0: Any = 1.0,
        alpha_power: Any = 0.5,
        **solver: Any,
    ):
        self.eta, self.gamma, self.alpha0, self.alpha_power = eta, gamma, alpha0, alpha_power
        self.prox = HingeProx(**solver)  # tol, max_iter, solver, start

    def __check_init__(self):
        _checks.in_open_interval("eta", self.eta, 0.0, 1.0)
        _checks.positive("gamma", self.gamma)
        _checks.positive("alpha0", self.alpha0)
        _checks.in_closed_interval("alpha_power", self.alpha_power, 0.0, 1.0)

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        eps: float | None = None,
        V_x: float = 0.0,
        strongly_convex: bool = False,
        **overrides: Any,
    ) -> COLDQ:
        """Corollary 1 (convex): ``alpha_t = t^{(1-V_x)/2}``, ``eta = 1/T``, ``gamma = eps T``; Corollary 2
        (``strongly_convex=True``): ``alpha_t = mu t`` with A4's ``mu = m / 2`` for the problem's standard
        modulus ``m = constants.strong_convexity``.

        ``eps`` defaults to ``min(0.5, G / 2)`` (``G = constants.constraint_bound``; 0.5 if unknown), inside
        the theory's ``(0, G)``. ``overrides`` give ``constraint_bound`` or ``strong_convexity`` by name, or
        constructor arguments (``solver``, ``start``, ...).
        """
        info, who = info.giving(overrides), "COLDQ.from_theory"
        T, eps = _theory_horizon_eps(info, eps, who)
        if strongly_convex:
            alpha0, power = 0.5 * info.require("strong_convexity", who), 1.0
        else:
            _checks.in_closed_interval("V_x", V_x, 0.0, 1.0)
            alpha0, power = 1.0, 0.5 * (1.0 - V_x)
        return cls.build({"eta": 1.0 / T, "gamma": eps * T, "alpha0": alpha0, "alpha_power": power}, overrides)

    @classmethod
    def from_paper(cls, info: ProblemInfo, *, table: int = 3, **overrides: Any) -> COLDQ:
        """The experiments' parameters (Tables 3-6, identical for COLDQ): ``alpha_t = t^{1/2}``,
        ``eta = 1/T``, ``gamma = eps T``, ``eps = 0.5``."""
        paper_table(_PAPER_TABLES, table)
        T, eps = _theory_horizon_eps(info.giving(overrides), 0.5, "COLDQ.from_paper")
        return cls.build({"eta": 1.0 / T, "gamma": eps * T, "alpha0": 1.0, "alpha_power": 0.5}, overrides)

    def init(self, info, key):
        del key
        x = self.prox.start_point(info.domain)
        return QueueState.initial(x, info.num_constraints, self.gamma, info.domain)  # Q_1 = gamma

    def queue_after_round(self, t: Array, queue: Array, violation: Array) -> Array:
        """Round t's queue: the update (8) from ``t >= 2``; ``Q_1 = gamma`` is not updated with ``g_1(x_1)``."""
        updated = doubly_bounded(queue, violation, self.eta, self.gamma)
        return jnp.where(t >= 2, updated, queue).astype(queue.dtype)

    def proximal_weight(self, t: Array, dtype: Any) -> Array:
        """``alpha_t = alpha0 t^alpha_power``, the weight of the proximal term of ``P_{t+1}``."""
        return self.alpha0 * t.astype(dtype) ** self.alpha_power

    def update(self, state, x, feedback):
        t = state.t + 1  # the round just played
        queue = self.queue_after_round(t, state.queue, feedback.constraints(x))
        alpha = self.proximal_weight(t, x.dtype)
        sol = self.prox.step(feedback, state.domain, feedback.grad(x), alpha, x, queue)
        return QueueState(sol.x.astype(x.dtype), queue, t, sol.iterations, sol.converged, state.domain)

    def diagnostics(self, state):
        return state.diagnostics()


class _COLDQExpertState(eqx.Module):
    experts: Float[Array, "M p"]  # x_{t+1}[m]
    queues: Float[Array, "M N"]  # Q_t^n[m]
    log_weights: Float[Array, " M"]  # log w_{t+1}[m], normalised
    x: Float[Array, " p"]  # x_{t+1} = sum_m w_{t+1}[m] x_{t+1}[m]
    t: Int[Array, ""]
    iterations: Int[Array, ""]  # dual Newton steps of the last round, summed over experts
    converged: Bool[Array, ""]
    domain: Any  # X, from the learner's info


class COLDQExpert(AbstractQueueLearner):
    r"""COLDQ-Expert: Hedge over M COLDQ experts with geometric step sizes (Wang, Yan and Liu, AAAI 2025, Alg. 2).

    Update (Algorithm 2): each expert ``m = 1..M`` runs Algorithm 1 with its own queue and
    ``alpha_t[m] = alpha0 t^alpha_power / ratio^{m-1}``, using the gradient at its own point:

    \[
    \begin{aligned}
    x_t[m] &= \operatorname*{arg\,min}_{x \in \mathcal{X}} \big\langle \nabla f_{t-1}(x_{t-1}[m]), x - x_{t-1}[m]
        \big\rangle + \alpha_{t-1}[m]\, \|x - x_{t-1}[m]\|^2 + \sum_n Q_{t-1}^n[m] \big[g_{t-1}^n(x)\big]_+ \\
    x_t &= \textstyle\sum_m w_t[m]\, x_t[m] && \text{(played)} \\
    Q_t^n[m] &= \max\big\{ (1 - \eta)\, Q_{t-1}^n[m] + [g_t^n(x_t[m])]_+,\ \gamma \big\}
        && (t \ge 2;\ Q_1 = \gamma) \\
    w_{t+1}[m] &\propto w_t[m] \exp\big(-\kappa\, \ell_t(x_t[m])\big),
        \quad \ell_t(x) = \langle \nabla f_t(x_t), x - x_t \rangle
    \end{aligned}
    \]

    with the prior ``w_1[m] = (M + 1) / (m (m + 1) M)``. The experts are vmapped (one compiled solve).

    Source: Wang, Yan and Liu, Appendix J, Algorithm 2 and Corollary 3. Guarantee (Corollary 3,
    ``M = floor(log2(1 + T) / 2) + 1``, ``kappa = T^{-1/2}``, ``alpha_t[m] = t^{1/2} / 2^{m-1}``,
    ``eta = T^{-3/2}``, ``gamma = eps T^{3/2}``): ``O(T^{(1+V_x)/2})`` dynamic regret and ``O(T^{V_g})`` hard
    violation without knowing ``V_x`` (the violation constant carries a factor M = O(log T): step (59)(b) of
    the proof sums over all experts).

    Args:
        num_experts: M >= 1 (static).
        kappa: Hedge rate > 0.
        eta, gamma, alpha0, alpha_power: as in [`COLDQ`][ocokit.algorithms.COLDQ], shared by all experts.
        ratio: ``alpha_t[m]`` shrinks by this factor per expert, > 0 (paper: 2).
        tol, max_iter, solver, start: the part ``prox`` as in [`COLDQ`][ocokit.algorithms.COLDQ], shared by all experts
            (every
            expert starts at the same ``x_1``).

    ``eta``, ``gamma``, ``alpha0``, ``alpha_power`` and the solver options build the part ``expert``, the
    [`COLDQ`][ocokit.algorithms.COLDQ] (Algorithm 1) that every expert runs, which validates them
    (``learner.expert.eta``).

    Readings: the paper never defines ``w_2`` (its loop first produces ``w_3``); ocokit sets, as Lemma 6's
    recursion implies, ``w_2 ∝ w_1 exp(-kappa l_1(x_1[m]))`` at the end of round 1 (``= w_1`` since all
    experts start at the same point). Queues use each expert's own decision; the surrogate is linearised
    at the played ``x_t``, as Algorithm 2 writes. Weights are kept as normalised log-weights (no underflow).

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> learner = COLDQExpert.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 100))
        >>> learner.num_experts
        4
        >>> traj = ocokit.run(learner, problem, T=100)
        >>> bool(abs(traj.diagnostics["weights"].sum(axis=-1) - 1).max() < 1e-6)
        True

    References:
        J. Wang, B. Yan and Y. Liu. Doubly-Bounded Queue for Constrained Online Learning. AAAI 2025.
        L. Zhang, S. Lu and Z.-H. Zhou. Adaptive online learning in dynamic environments. NeurIPS 2018.
    """

    num_experts: int = eqx.field(static=True)
    kappa: Float[Array, ""] = hyperparameter()
    ratio: Float[Array, ""] = hyperparameter()
    expert: COLDQ
    needs: ClassVar[Needs] = dataclasses.replace(AbstractQueueLearner.needs, optional=("constraint_bound",))

    def __init__(
        self,
        num_experts: int,
        kappa: Any,
        eta: Any,
        gamma: Any,
        alpha0: Any = 1.0,
        alpha_power: Any = 0.5,
        ratio: Any = 2.0,
        **solver: Any,
    ):
        self.num_experts, self.kappa, self.ratio = num_experts, kappa, ratio
        self.expert = COLDQ(eta, gamma, alpha0, alpha_power, **solver)  # tol, max_iter, solver, start

    def __check_init__(self):
        _checks.positive_int("num_experts", self.num_experts)
        _checks.positive("kappa", self.kappa)
        _checks.positive("ratio", self.ratio)

    @property
    def prox(self) -> HingeProx:
        """The solver part of the COLDQ every expert runs (``expert.prox``)."""
        return self.expert.prox

    @staticmethod
    def theory_num_experts(T: int) -> int:
        """``M = floor(log2(1 + T) / 2) + 1`` (Corollary 3)."""
        return math.floor(0.5 * math.log2(1 + T)) + 1

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, eps: float | None = None, **overrides: Any) -> COLDQExpert:
        """Corollary 3: ``M = floor(log2(1 + T)/2) + 1``, ``kappa = T^{-1/2}``,
        ``alpha_t[m] = t^{1/2}/2^{m-1}``, ``eta = T^{-3/2}``, ``gamma = eps T^{3/2}`` (``eps`` as in
        [`COLDQ.from_theory`][ocokit.algorithms.COLDQ.from_theory])."""
        T, eps = _theory_horizon_eps(info.giving(overrides), eps, "COLDQExpert.from_theory")
        theory = {"num_experts": cls.theory_num_experts(T), "kappa": T**-0.5, "eta": T**-1.5, "gamma": eps * T**1.5}
        return cls.build({**theory, "alpha0": 1.0, "alpha_power": 0.5, "ratio": 2.0}, overrides)

    def prior(self, dtype=None) -> Array:
        """``w_1[m] = (M + 1) / (m (m + 1) M)``, ``m = 1..M`` (sums to one)."""
        M = self.num_experts
        m = jnp.arange(1, M + 1, dtype=dtype or jnp.result_type(float))
        return (M + 1) / (m * (m + 1) * M)

    def init(self, info, key):
        del key
        x = self.prox.start_point(info.domain)
        M = self.num_experts
        log_w = jnp.log(self.prior(x.dtype))
        experts = jnp.broadcast_to(x, (M, *x.shape))
        return _COLDQExpertState(
            experts=experts,
            queues=jnp.full((M, info.num_constraints), self.expert.gamma, dtype=x.dtype),
            log_weights=log_w,
            x=jnp.exp(log_w) @ experts,
            t=jnp.asarray(0, jnp.int32),
            iterations=jnp.asarray(0, jnp.int32),
            converged=jnp.asarray(True),
            domain=info.domain,
        )

    def update(self, state, x, feedback):
        t = state.t + 1
        dtype = x.dtype
        experts = state.experts
        g = jax.vmap(feedback.constraints)(experts)  # g_t(x_t[m]), (M, N)
        queues = self.expert.queue_after_round(t, state.queues, g)
        grad = feedback.grad(x)
        surrogate = experts @ grad - jnp.dot(x, grad)  # l_t(x_t[m]) = <grad f_t(x_t), x_t[m] - x_t>
        log_w = state.log_weights - self.kappa * surrogate
        log_w = (log_w - jax.nn.logsumexp(log_w)).astype(dtype)
        m = jnp.arange(self.num_experts, dtype=dtype)
        alphas = self.expert.proximal_weight(t, dtype) / self.ratio**m
        grads = jax.vmap(feedback.grad)(experts)

        def expert_step(c, alpha, z, q):
            return self.prox.step(feedback, state.domain, c, alpha, z, q)

        sol = jax.vmap(expert_step)(grads, alphas, experts, queues)
        new_experts = sol.x.astype(dtype)
        return _COLDQExpertState(
            experts=new_experts,
            queues=queues,
            log_weights=log_w,
            x=jnp.exp(log_w) @ new_experts,
            t=t,
            iterations=jnp.sum(sol.iterations).astype(jnp.int32),
            converged=jnp.all(sol.converged),
            domain=state.domain,
        )

    def diagnostics(self, state):
        return {
            "oracle_calls": state.iterations,
            "queue": state.queues,
            "weights": jnp.exp(state.log_weights),
            "solver_converged": state.converged,
        }

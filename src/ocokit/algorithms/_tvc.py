"""Full-information TVC learners of paper 000 (Wang, Wan, Zhang, AAAI 2025): OFW-TVC and SCOFW-TVC.

Both feed the gradient of the Lyapunov drift-plus-penalty surrogate of eq. (6) (formed from first-order
feedback by `full_information`) to an online Frank-Wolfe
player under a step rule of `_ofw_player`: OFW-TVC's is the parameter-free OFW
(`DecayingStep`, restarted when the surrogate-gradient bound doubles),
SCOFW-TVC's the strongly convex OFW with exact line search
(`StronglyConvexStep` with ``lam = 2 C_1``). The bandit variants BFW-TVC and
SCBFW-TVC are in `_bandit_tvc`.
"""

import abc
import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._ofw_player import AbstractOFWStep, DecayingStep, StronglyConvexStep, _OFWPlayerState
from ocokit.algorithms._tvc_common import THEORIES, AbstractLyapunovLearner, lipschitz_bound, restart_if_doubled
from ocokit.feedback import FULL_INFORMATION, FeedbackKind


class AbstractOFWTVC(AbstractLyapunovLearner):
    """A full-information TVC learner: an OFW player on the surrogate of eq. (6), and the queue.

    ``init``, ``decide`` and ``diagnostics`` (one LMO call per round, the queue) are written here once; a final
    subclass declares the surrogate's ``beta``, ``gamma``, ``lam``, ``phi``
    (`AbstractLyapunovLearner`), its step ``rule`` and writes ``update``
    and the diagnostics of its own step (``step_diagnostics``).
    """

    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def init(self, info, key):
        del key
        player = self.rule(1.0).init(info.domain)  # G~_1 = 1
        one, zero = jnp.asarray(1, jnp.int32), jnp.asarray(0, jnp.int32)
        return _TVCState(player, jnp.zeros((), player.x.dtype), jnp.ones((), player.x.dtype), one, zero)

    def decide(self, state):
        return state.player.x

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(1, jnp.int32), "queue": state.queue, **self.step_diagnostics(state)}

    @abc.abstractmethod
    def rule(self, G_tilde: Any) -> AbstractOFWStep:
        """The player's step rule in an epoch with the doubling estimate ``G~_k`` (SCOFW-TVC's ignores it)."""

    @abc.abstractmethod
    def step_diagnostics(self, state: "_TVCState") -> dict[str, Array]:
        """The diagnostics of the learner's own step (doubling, FW gap, step size)."""


class _TVCState(eqx.Module):
    player: _OFWPlayerState  # x_t, the anchor x_{s_k}, the gradient sums, the LMO state
    queue: Float[Array, ""]  # Q_t
    G_tilde: Float[Array, ""]  # OFW-TVC: the doubling estimate G~_k (1 for SCOFW-TVC)
    epoch_start: Int[Array, ""]  # OFW-TVC: s_k, the first round of the epoch (1 for SCOFW-TVC)
    t: Int[Array, ""]  # rounds absorbed so far


# --------------------------------------------------------------------------------------------------
# Algorithm 1: OFW-TVC.


class OFWTVC(AbstractOFWTVC):
    r"""OFW-TVC: Online Frank-Wolfe with Time-Varying Constraints (Wang, Wan and Zhang, AAAI 2025, Alg. 1).

    Round t (``x_t`` played, ``Q_t``, ``tilde f_t`` from eqs. 4 and 6):

    \[
    \begin{aligned}
    &\textbf{while } \tilde G_k < \beta G \big(\gamma + \Phi'(\beta Q_t)\big):\quad
        \tilde G_{k+1} = 2 \tilde G_k,\ s_{k+1} = t,\ k \leftarrow k + 1 \\
    &\eta_k = \eta / \tilde G_k && \text{(eq. 9: } \eta = D / (2 T^{3/4})\text{)} \\
    &F_{s_k:t}(x) = \eta_k \sum_{\tau=s_k}^{t} \big\langle \nabla \tilde f_\tau(x_\tau), x \big\rangle
        + \|x - x_{s_k}\|^2 && \text{(eq. 10)} \\
    &v_t = \operatorname*{arg\,min}_{x \in \mathcal{K}} \big\langle \nabla F_{s_k:t}(x_t), x \big\rangle
        && \text{(eq. 11, one LMO call)} \\
    &x_{t+1} = x_t + \min\Big(1, \frac{2}{\sqrt{t - s_k + 1}}\Big) (v_t - x_t) && \text{(eqs. 12-13)}
    \end{aligned}
    \]

    A restart (doubling) at round t starts the new epoch at t: the gradient sum restarts with round t's
    gradient, the regulariser is re-centred at ``x_t`` (which is kept) and the step counter restarts at 1.
    ``G~_1 = 1`` and ``x_1 = K.center()``.

    Source: Wang, Wan and Zhang, Algorithm 1, eqs. (4), (6), (9)-(13). Guarantee
    (Thm 1, convex f_t and g_t, adversarial): Regret_T = O(T^{3/4}), CCV Q_T = O(T^{3/4} log T), one LMO call
    per round.

    Args:
        beta: queue scale ``beta > 0`` (Thm 1: ``1 / (64 G D)``).
        gamma: loss weight ``gamma > 0`` (Thm 1: 1).
        eta: base learning rate ``> 0``; epoch k uses ``eta / G~_k`` (Thm 1: ``D / (2 T^{3/4})``).
        G: Lipschitz bound of f_t and g_t used by the doubling test (``> 0``; unused with
            ``doubling="observed"``).
        lam: scale of ``Phi(x) = exp(lam x) - 1`` (``> 0``, Thm 1: ``1 / (2 T^{3/4})``; unused by other phi).
        phi: the Lyapunov function, one of `PHIS` (default ``"exp"``, Thm 1).
        sum_index: ``"current"`` (default, main text eq. 10: the sum includes round t) or ``"lagged"``
            (the proof of Lemma 4 and classic OFW: gradients up to t-1).
        doubling: ``"analytic"`` (default, Step 5: test ``beta G (gamma + Phi'(beta Q_t))``) or
            ``"observed"`` (test the observed ``||grad tilde f_t(x_t)||``; no G needed, same analysis).

    Readings: the step ``2 / sqrt(t - s_k + 1)`` is clipped at 1 (it is 2, 1.41, 1.15 in the first rounds of
    each epoch and would leave K; classic OFW clips too). The restart at round t (not t + 1) is ocokit's
    reading of Steps 5-6 (``s_{k+1} = t``). The sum index and doubling test are the options above.

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
    needs: ClassVar[Needs] = Needs(
        constants=("grad_bound", "diameter"), constrained_constants=("constraint_grad_bound",)
    )

    def __check_init__(self):
        _checks.positive("eta", self.eta)
        _checks.one_of("sum_index", self.sum_index, ("current", "lagged"))
        _checks.one_of("doubling", self.doubling, ("analytic", "observed"))
        if self.doubling == "analytic":
            _checks.positive("G", self.G)

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> "OFWTVC":
        """Theorem 1 of Wang, Wan and Zhang: ``beta = 1/(2^6 G D)``, ``gamma = 1``, ``eta = D/(2 T^{3/4})``,
        ``lam = 1/(2 T^{3/4})``.

        ``G = max(grad_bound, constraint_grad_bound)`` and ``D = diameter(K)``; ``overrides`` give each constant
        by name, or override any field.
        """
        info, who, T = info.giving(overrides), f"{cls.__name__}.from_theory", info.horizon
        G, D = lipschitz_bound(info, who), info.require("diameter", who)
        theory = {"beta": 1.0 / (64.0 * G * D), "gamma": 1.0, "eta": D / (2.0 * T**0.75), "G": G, "lam": 0.5 * T**-0.75}
        return cls.build(theory, overrides)

    def rule(self, G_tilde):
        """OFW's decaying step with ``eta_k = eta / G~_k`` and ``sigma0 = 2`` (eqs. 9-13)."""
        return DecayingStep(self.eta / G_tilde, 2.0, lagged=self.sum_index == "lagged")

    def update(self, state, x, feedback):
        grad, Q, w = self.lyapunov.full_information(feedback, x, state.queue)
        if self.doubling == "analytic":
            bound = self.beta * self.G * (self.gamma + w)
        else:
            bound = jnp.linalg.norm(grad.ravel())
        G_tilde, restart = restart_if_doubled(state.G_tilde, bound)  # s_{k+1} = t: a new epoch starts at t
        t = state.t + 1
        epoch_start = jnp.where(restart, t, state.epoch_start)
        rule = self.rule(G_tilde)
        player = rule.step(rule.restarted(state.player, restart, x), grad, x)
        return _TVCState(player, Q, G_tilde, epoch_start, t)

    def step_diagnostics(self, state):
        return {"G_tilde": state.G_tilde, "epoch_start": state.epoch_start, "fw_gap": state.player.gap}


# --------------------------------------------------------------------------------------------------
# Algorithm 2: SCOFW-TVC.


class SCOFWTVC(AbstractOFWTVC):
    r"""SCOFW-TVC: strongly convex Online Frank-Wolfe with Time-Varying Constraints (Wang, Wan and Zhang, Alg. 2).

    Round t, with ``C_1 = gamma beta alpha_f / 2``, ``S_t = sum_{tau<=t} grad tilde f_tau(x_tau)`` and
    ``X_t = sum_{tau<=t} x_tau``:

    \[
    \begin{aligned}
    F_t^{sc}(x) &= \sum_{\tau=1}^{t} \Big[ \big\langle \nabla \tilde f_\tau(x_\tau), x \big\rangle
        + C_1 \|x - x_\tau\|^2 \Big] && \text{(eq. 14)} \\
    v_t &= \operatorname*{arg\,min}_{x \in \mathcal{K}} \big\langle S_t + 2 C_1 (t\, x_t - X_t), x \big\rangle
        && \text{(eq. 15)} \\
    \sigma_t &= \operatorname*{arg\,min}_{\sigma \in [0, 1]} F_t^{sc}\big(x_t + \sigma (v_t - x_t)\big)
        && \text{(eq. 16; Hessian } 2 C_1 t I\text{)} \\
    x_{t+1} &= x_t + \sigma_t (v_t - x_t) && \text{(eq. 17)}
    \end{aligned}
    \]

    This is SC-OFW's step (`StronglyConvexStep`, ``lam = 2 C_1``), which divides
    ``F_t^sc`` by t (running means of the gradients and iterates): same ``v_t`` and ``sigma_t``.

    Source: Wang, Wan and Zhang, Algorithm 2, eqs. (14)-(17) (eq. 17 prints ``sigma_{s_k,t}``, a typo for the
    line-search step ``sigma_t^sc`` of eq. 16). Guarantee (Thm 2, alpha_f-strongly convex f_t): Regret_T =
    O(T^{2/3}), CCV = O(T^{5/6}); one LMO call per round, no doubling.

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
    needs: ClassVar[Needs] = Needs(
        constants=("grad_bound", "diameter", "strong_convexity"), constrained_constants=("constraint_grad_bound",)
    )

    def __check_init__(self):
        _checks.positive("alpha_f", self.alpha_f)

    @classmethod
    def from_theory(
        cls, info: ProblemInfo, *, alpha_f: float | None = None, theory: str = "proof", **overrides: Any
    ) -> "SCOFWTVC":
        """Theorem 2 of Wang, Wan and Zhang: ``gamma = G/(G + alpha_f D)``, ``Phi = x^2 + x``, beta of eq. (40) or
        statement.

        ``alpha_f`` overrides the problem constant ``strong_convexity`` (ValueError if neither is ``> 0``); ``G``,
        ``D`` and ``overrides`` as in [`OFWTVC.from_theory`][ocokit.algorithms.OFWTVC.from_theory].
        """
        _checks.one_of("theory", theory, THEORIES)
        info, who, T = info.giving(overrides), f"{cls.__name__}.from_theory", info.horizon
        G, D = lipschitz_bound(info, who), info.require("diameter", who)
        a = info.require("strong_convexity", who, alpha_f)
        T23 = T ** (2.0 / 3.0)
        beta = a / (500.0 * G * T23 * (G + a * D)) if theory == "proof" else 1.0 / (G * D * T23)
        return cls.build({"beta": beta, "gamma": G / (G + a * D), "alpha_f": a}, overrides)

    def rule(self, G_tilde):
        """SC-OFW's step with ``lam = 2 C_1 = gamma beta alpha_f`` (``F_t^sc`` has Hessian ``2 C_1 t I``)."""
        del G_tilde
        return StronglyConvexStep(self.gamma * self.beta * self.alpha_f)

    def update(self, state, x, feedback):
        grad, Q, _ = self.lyapunov.full_information(feedback, x, state.queue)
        player = self.rule(state.G_tilde).step(state.player, grad, x)
        return _TVCState(player, Q, state.G_tilde, state.epoch_start, state.t + 1)

    def step_diagnostics(self, state):
        return {"step": state.player.sigma}

"""OPDP (reconstructed): online primal-dual projection-free learning, Lee, Ho-Nguyen and Lee 2023, Alg. 1.

D. Lee, N. Ho-Nguyen and D. Lee, "Projection-Free Online Convex Optimization with Stochastic Constraints",
arXiv:2305.01333, 2023. RECONSTRUCTED: neither the paper's text nor its abstract could be read, so the update
equations and every parameter value are a reconstruction from the paper that compares against it (Y. Wang,
Y. Wan and L. Zhang, "Revisiting Projection-Free Online Learning with Time-Varying Constraints", AAAI 2025:
Table 1, Related Work, Experiments), not the authors' algorithm.
The primal player is the shared online Frank-Wolfe player with the step rule
`DecayingStep`, the dual one a named queue update of
`_queues`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._ofw_player import DecayingStep, _OFWPlayerState
from ocokit.algorithms._queues import drift_plus_penalty, penalised_gradient, regularised_dual_ascent
from ocokit.feedback import FULL_INFORMATION, FeedbackKind

_DUAL_RULES = ("dpp_queue", "lagrangian")


class _OPDPState(eqx.Module):
    player: _OFWPlayerState  # the OFW primal player: x_t, x_1, S_t = sum_{tau <= t} c_tau, the LMO state
    queue: Float[Array, " N"]  # Q_t


class OPDP(AbstractLearner):
    r"""OPDP (reconstructed): online primal-dual projection-free method (Lee, Ho-Nguyen, Lee 2023, Alg. 1).

    RECONSTRUCTED: the paper could not be read; this is a "faithful-in-spirit" template (an online primal-dual
    framework around any projection-free learner, as recalled, not read), with OFW (Hazan and Kale 2012) as the
    projection-free primal player. The update
    equations were **not** checked against the paper. Do not cite results of this class as the authors'.

    Update (after playing ``x_t`` and seeing ``f_t``, ``g_t``; one LOO call per round):

    \[
    \begin{aligned}
    c_t &= V \nabla f_t(x_t) + \sum_n Q_t^n \nabla g_t^n(x_t)
        && \text{(the linear loss } \ell_t(x) = \langle c_t, x \rangle\text{)} \\
    v_t &= \mathrm{LOO}\Big(\eta \sum_{\tau \le t} c_\tau + 2 (x_t - x_1)\Big)
        && \text{(OFW: } F(x) = \eta \langle S_t, x \rangle + \|x - x_1\|^2\text{)} \\
    x_{t+1} &= x_t + \sigma_t (v_t - x_t), && \sigma_t = \min(1, \sigma_0 / \sqrt{t}) \\
    \text{(a)}\quad Q_{t+1} &= [Q_t + g_t(x_t)]_+ && \text{(dual\_rule="dpp\_queue", default)} \\
    \text{(b)}\quad Q_{t+1} &= [Q_t + \mu (g_t(x_t) - \delta \mu Q_t)]_+ && \text{(dual\_rule="lagrangian")}
    \end{aligned}
    \]

    Source: a reconstruction, unverified in every line; OFW as restated by AAAI-25 (Wang, Wan and Zhang,
    Related Work). Published bounds (AAAI-25 Table 1 only): ``O(T^{5/6})`` regret and CCV for i.i.d.
    stochastic constraints; ``O(T^{5/6 + a})`` / ``O(T^{11/12 - a/2})`` for adversarial ones.

    Args:
        eta: OFW step on the summed linear losses, > 0.
        V: weight of the loss gradient, > 0.
        sigma0: OFW step constant, ``sigma_t = min(1, sigma0 / sqrt(t))``, > 0 (Hazan 2016's 2 by default).
        mu: dual step > 0 (rule ``"lagrangian"`` only).
        dual_reg: the regulariser delta >= 0 of rule ``"lagrangian"`` (the template's delta).
        dual_rule: ``"dpp_queue"`` (default, template line (a)) or ``"lagrangian"`` (template line (b)).
        hinge: ``False`` (default, the template's ``g_t``); ``True`` uses ``[g_t]_+`` and its subgradient.

    Readings: the OFW sum includes round t's loss (as AAAI-25's own OFW and
        [`ocokit.algorithms.OFW`][ocokit.algorithms.OFW]),
    the start is ``x_1 = K.center()``, ``Q_1 = 0``. ``from_theory``'s exponents are our derivation (below),
    not the paper's, which must replace them once the paper is read.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = OPDP(eta=0.001, V=1.0)
        >>> OPDP.reconstructed, ocokit.run(learner, problem, T=20).constraints.shape
        (True, (20, 2))

    References:
        D. Lee, N. Ho-Nguyen and D. Lee. Projection-free online convex optimization with stochastic
        constraints. arXiv:2305.01333, 2023. E. Hazan and S. Kale. Projection-free online learning. ICML 2012.
    """

    eta: Float[Array, ""] = hyperparameter()
    V: Float[Array, ""] = hyperparameter(default=1.0)
    sigma0: Float[Array, ""] = hyperparameter(default=2.0)
    mu: Float[Array, ""] = hyperparameter(default=1.0)
    dual_reg: Float[Array, ""] = hyperparameter(default=0.0)
    dual_rule: str = eqx.field(static=True, default="dpp_queue")
    hinge: bool = eqx.field(static=True, default=False)
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    reconstructed: ClassVar[bool] = True

    def __check_init__(self):
        _checks.positive("eta", self.eta)
        _checks.positive("V", self.V)
        _checks.positive("sigma0", self.sigma0)
        _checks.positive("mu", self.mu)
        _checks.nonnegative("dual_reg", self.dual_reg)
        _checks.one_of("dual_rule", self.dual_rule, _DUAL_RULES)

    needs: ClassVar[Needs] = Needs(constants=("diameter", "grad_bound", "constraint_grad_bound", "constraint_bound"))

    @classmethod
    def from_theory(
        cls, info: ProblemInfo, *, dual_rule: str = "dpp_queue", scale: float = 1.0, **overrides: Any
    ) -> OPDP:
        """Reconstructed parameters: our derivation, since the paper's exponents could not be read.

        A primal-dual template whose multiplier stays below ``Lambda`` has regret ``O(R_OFW + R_dual)`` and
        violation ``O(T / Lambda)``-type bounds, with OFW's ``R_OFW = O((G_f + Lambda G_g) D T^{3/4})``
        (Hazan 2016, Thm 7.3) and the dual ascent's ``R_dual = O(Lambda B sqrt(T))``.
        ``Lambda = scale (G_f/G_g) T^{1/12}`` balances them at ``O(T^{5/6})`` regret and ``O(T^{11/12})``
        violation, the published adversarial pair at a = 0 (the published stochastic ``O(T^{5/6})``
        violation needs the paper's strong-duality argument, which we could not read). The parameters::

            mu = Lambda / (B sqrt(T)),   eta = D / (2 (G_f + Lambda G_g) T^{3/4})
            "dpp_queue" (default):  Q = lambda / mu, i.e. V = 1/mu and OFW step eta mu
            "lagrangian":  V = 1, mu, delta = B^2 sqrt(T) / Lambda^2  (so lambda <= B/(delta mu) = Lambda)

        Needs the constants ``grad_bound`` (G_f), ``constraint_grad_bound`` (G_g), ``constraint_bound`` (B)
        and ``diameter`` (D); ``overrides`` give any of them by name, or constructor arguments (``hinge``).
        Measured (tests/algorithms/test_opdp.py): with ``"dpp_queue"`` regret and CCV grow at most like
        ``T^{5/6}``; with ``"lagrangian"`` the regulariser's leak ``delta mu = B / Lambda`` keeps the per-round
        violation near ``T^{-1/12}``, so its CCV is close to linear for ``T <= 10^4``.
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        _checks.positive("scale", scale)
        info = info.giving(overrides)
        T, who = info.horizon, f"{cls.__name__}.from_theory"
        D, Gf = info.require("diameter", who), info.require("grad_bound", who)
        Gg, B = info.require("constraint_grad_bound", who), info.require("constraint_bound", who)
        cap = scale * Gf / Gg * T ** (1.0 / 12.0)
        mu = cap / (B * math.sqrt(T))
        eta = D / (2.0 * (Gf + cap * Gg) * T**0.75)
        if dual_rule == "dpp_queue":
            return cls.build({"eta": eta * mu, "V": 1.0 / mu, "dual_rule": dual_rule}, overrides)
        lagrangian = {"eta": eta, "V": 1.0, "mu": mu, "dual_reg": B / (cap * mu), "dual_rule": dual_rule}
        return cls.build(lagrangian, overrides)

    @property
    def rule(self) -> DecayingStep:
        """The primal player's step: OFW's decaying step with ``eta`` and ``sigma0``."""
        return DecayingStep(self.eta, self.sigma0)

    def init(self, info, key):
        del key
        player = self.rule.init(info.domain)
        return _OPDPState(player=player, queue=jnp.zeros((info.num_constraints,), player.x.dtype))

    def decide(self, state):
        return state.player.x

    def update(self, state, x, feedback):
        c, g = penalised_gradient(feedback, x, self.V, state.queue, self.hinge)
        player = self.rule.step(state.player, c, x)
        if self.dual_rule == "dpp_queue":
            Q = drift_plus_penalty(state.queue, g)
        else:
            Q = regularised_dual_ascent(state.queue, g, self.mu, self.dual_reg)
        return _OPDPState(player=player, queue=Q.astype(x.dtype))

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(1, jnp.int32), "queue": state.queue}

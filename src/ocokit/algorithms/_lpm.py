"""LPM and LBPM (Garber and Kretzu 2024, Algorithms 4 and 5): RECONSTRUCTED LOO-based primal-dual methods.

D. Garber and B. Kretzu, "Projection-Free Online Convex Optimization with Time-Varying Constraints", ICML 2024
(PMLR 235; arXiv:2402.08799). Only the paper's abstract and opening could be read, so both algorithms were
reconstructed from it and from the paper that compares against them (Y. Wang, Y. Wan and L. Zhang, "Revisiting
Projection-Free Online Learning with Time-Varying Constraints", AAAI 2025: Table 1, Related Work, Experiments),
which says G&K apply LOO-BOGD "under the drift-plus-penalty framework". The reconstruction: the blocked
LOO-BOGD chain `LOOChain` run on a regularised Lagrangian, with a dual
variable updated once per block by a named queue rule of `_queues`; LBPM is LPM wrapped
in the one-point bandit adapter `OnePointBandit`. Do not cite results of
these classes as the authors' algorithms.
"""

from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.algorithms._bandit import AbstractGradientLearner
from ocokit.algorithms._base import Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._loo_chain import (
    MAX_ITER,
    AbstractLOOBandit,
    AbstractLOOChainLearner,
    LOOChain,
    _LOOChainState,
    _optional_leaf,
    bandit_theory,
    full_information_theory,
)
from ocokit.algorithms._queues import drift_plus_penalty, penalised_gradient, regularised_dual_ascent
from ocokit.feedback import FULL_INFORMATION, FeedbackKind

_DUAL_RULES = ("lagrangian", "dpp_queue")


def _dual_theory(info: ProblemInfo, who: str, chain: dict[str, Any], dual_rule: str) -> dict[str, Any]:
    """The chain's theory parameters with the dual ones derived from its ``eta``: ``mu = eta``, ``V = 1`` and
    ``delta = 4 G^2``, ``G = max(grad_bound, constraint_grad_bound)``.

    For ``"dpp_queue"`` the queue ``Q = lambda / mu`` has ``V = 1/mu`` and primal step ``eta mu``, which turns
    the unregularised Lagrangian rule into the queue rule (``"dpp_queue"``; a reconstruction, see
    [`LPM`][ocokit.algorithms.LPM]).
    """
    G = max(info.require("grad_bound", who), info.require("constraint_grad_bound", who))
    eta = chain["eta"]
    if dual_rule == "lagrangian":
        return {**chain, "mu": eta, "dual_reg": 4.0 * G**2, "V": 1.0, "eta": eta}
    return {**chain, "mu": eta, "dual_reg": 0.0, "V": 1.0 / eta, "eta": eta * eta}


class _DualState(eqx.Module):
    dual: Float[Array, " N"]  # lambda_m (Lagrangian rule) or Q_m (DPP queue), fixed within a block
    viol_sum: Float[Array, " N"]  # sum over the current block of [g_t(x_m)]_+ (or g_t(x_m) with hinge=False)


class BlockDual(_checks.Checked):
    """The dual variable of LPM and LBPM (reconstructed): fixed within a block, updated at its end by a rule.

    Rule ``"lagrangian"``: ``lambda <- [lambda + mu sum_t ([g_t]_+ - delta mu lambda)]_+`` over the block's
    rounds (`regularised_dual_ascent`); rule ``"dpp_queue"``:
    ``Q <- [Q + sum_t g_t]_+`` (`drift_plus_penalty`). Arguments as in
    [`LPM`][ocokit.algorithms.LPM].
    """

    mu: Float[Array, ""] = hyperparameter(_checks.positive, default=1.0)
    dual_reg: Float[Array, ""] = hyperparameter(_checks.nonnegative, default=0.0)
    V: Float[Array, ""] = hyperparameter(_checks.positive, default=1.0)
    dual_rule: str = _checks.checked_field(_checks.among(_DUAL_RULES), static=True, default="lagrangian")
    hinge: bool = eqx.field(static=True, default=True)

    def options(self) -> dict[str, Any]:
        """Its constructor arguments (LBPM passes them on to LPM)."""
        return {"mu": self.mu, "dual_reg": self.dual_reg, "V": self.V, "dual_rule": self.dual_rule, "hinge": self.hinge}

    def loss_scale(self) -> Any:
        """The weight of the loss in the primal gradient: 1 (Lagrangian) or ``V`` (queue)."""
        return 1.0 if self.dual_rule == "lagrangian" else self.V

    def init(self, num_constraints: int, dtype: Any) -> _DualState:
        zeros = jnp.zeros((num_constraints,), dtype)
        return _DualState(dual=zeros, viol_sum=zeros)

    def step(self, state: _DualState, violation: Array, end: Array, block_size: Array) -> _DualState:
        """The block's violations summed and, at its end (``end``), the dual rule."""
        s = state.viol_sum + violation
        lam = state.dual
        if self.dual_rule == "lagrangian":  # lambda <- [lambda + mu sum_t ([g_t]_+ - delta mu lambda)]_+
            new = regularised_dual_ascent(lam, s, self.mu, block_size.astype(float) * self.dual_reg)
        else:  # Q <- [Q + sum_t g_t]_+
            new = drift_plus_penalty(lam, s)
        new = new.astype(lam.dtype)
        return _DualState(dual=jnp.where(end, new, lam), viol_sum=jnp.where(end, jnp.zeros_like(s), s))


class _LPMState(eqx.Module):
    chain: _LOOChainState
    dual: _DualState
    domain: Any  # K, from the learner's info


class LPM(AbstractGradientLearner, AbstractLOOChainLearner):
    r"""LPM (reconstructed): LOO-based primal-dual method of Garber and Kretzu 2024 (Algorithm 4).

    RECONSTRUCTED: the paper's text could not be read, so these update equations were **not** checked against
    it; they are ocokit's derivation (LOO-BOGD run on a regularised Lagrangian) from the ICML abstract and
    from Wang, Wan and Zhang (AAAI 2025), who compare against it.
    Do not cite results of this class as the authors' algorithm.

    Update (block m plays ``x_m``; ``g_t^+ = [g_t]_+`` and ``d[g]_+`` its subgradient, 0 at the kink):

    \[
    \begin{aligned}
    G_x &= \sum_{t \in B_m} \Big[ \nabla f_t(x_m) + \sum_n \lambda_m^n\, d[g_t^n]_+(x_m) \Big] \\
    G_\lambda &= \sum_{t \in B_m} \big( [g_t(x_m)]_+ - \delta \mu \lambda_m \big) \\
    y_{m+1} &= \tilde y_m - \eta G_x;\quad
        (x_{m+1}, \tilde y_{m+1}) = \mathrm{Alg3}(\mathcal{K}, x_m, y_{m+1}, \epsilon) \\
    \lambda_{m+1} &= [\lambda_m + \mu G_\lambda]_+
    \end{aligned}
    \]

    i.e. [`LOOBOGD`][ocokit.algorithms.LOOBOGD] on the regularised Lagrangian
    ``L_t(x, lambda) = f_t(x) + sum_n lambda^n [g_t^n(x)]_+ - (delta mu / 2)||lambda||^2``,
    with ``y`` accumulated round by round and ``lambda`` updated once per block.

    Source: G&K 2024 (ICML, PMLR 235), Algorithm 4, reconstructed (not read); Algorithm 3 of G&K 2022, read
    in that paper. Published bounds (verified only from the abstract and AAAI-25 Table 1): ``O~(T^{3/4})``
    regret and ``O(T^{7/8})`` CCV, with first-order access to the time-varying constraints ``g_t``. The
    reconstruction's rationale: Lagrangian OGD with step ``eta`` gives regret ``O(1/eta + eta T)`` and violation
    ``O(sqrt(T (1/eta + eta T)))``; LOO-BOGD forces ``eta ~ T^{-3/4}``, hence ``T^{3/4}`` and ``T^{7/8}``.

    Args:
        eta: primal step > 0.
        eps: tolerance of Algorithm 3, > 0.
        block_size: ``K_b``, an integer >= 1.
        mu: dual step > 0 (rule ``"lagrangian"``).
        dual_reg: the regulariser delta >= 0 of ``L_t`` (rule ``"lagrangian"``; ``delta`` above).
        V: loss weight > 0 of rule ``"dpp_queue"``.
        dual_rule: ``"lagrangian"`` (default, the rule above) or ``"dpp_queue"``: ``Q_{m+1} =
            [Q_m + sum_{t in B_m} g_t(x_m)]_+`` and primal gradient ``V grad f_t + sum_n Q_m^n grad g_t^n``
            (the YNW queue run blockwise; the reading closest to AAAI-25's "drift-plus-penalty, Phi(x) = x").
        hinge: ``True`` (default) uses ``[g_t]_+`` (bounds on CCV, as AAAI-25 report) in both the dual and the
            primal gradient; ``False`` uses ``g_t``.
        radius, pipelined, max_outer_iter, max_fw_iter: as in [`LOOBOGD`][ocokit.algorithms.LOOBOGD]; ``pipelined``
            defaults to
            ``False`` here, the reconstruction's form (the projection of block m is played in block m + 1).

    ``mu``, ``dual_reg``, ``V``, ``dual_rule`` and ``hinge`` build the part ``dual`` (`BlockDual`;
    ``learner.dual.mu``), the others the part ``chain`` (``learner.chain.eta``).

    Readings: both dual rules are implemented; every parameter value is a reconstruction (``from_theory``).

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = LPM(eta=0.01, eps=0.1, block_size=4, mu=0.01, dual_reg=1.0)
        >>> LPM.reconstructed, ocokit.run(learner, problem, T=20).constraints.shape
        (True, (20, 2))

    References:
        D. Garber and B. Kretzu. Projection-free online convex optimization with time-varying constraints.
        ICML 2024 (PMLR 235); arXiv:2402.08799.
    """

    chain: LOOChain
    eps: Float[Array, ""] = hyperparameter(_checks.positive)
    dual: BlockDual
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    reconstructed: ClassVar[bool] = True

    def __init__(
        self,
        eta: Any,
        eps: Any,
        block_size: Any,
        *,
        radius: Any = None,
        pipelined: bool = False,
        max_outer_iter: int = MAX_ITER,
        max_fw_iter: int = MAX_ITER,
        **dual: Any,
    ):
        """``dual``: the dual's arguments (`BlockDual`), by name."""
        self.chain = LOOChain(eta, block_size, radius, pipelined, max_outer_iter, max_fw_iter)
        self.eps, self.dual = eps, BlockDual(**dual)

    needs: ClassVar[Needs] = Needs(constants=("grad_bound", "constraint_grad_bound", "diameter"))

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        dual_rule: str = "lagrangian",
        radius: float | None = None,
        eta_constant: float = 1.0,
        eps_constant: float = 60.0,
        block_constant: float = 5.0,
        **overrides: Any,
    ) -> "LPM":
        """Reconstructed theory parameters (derived for the reconstruction above; not read in the paper).

        LOO-BOGD's Theorem 9 for the primal chain: ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``,
        ``K_b = floor(5 T^{1/2})`` (constants rescalable as in
        [`LOOBOGD.from_theory`][ocokit.algorithms.LOOBOGD.from_theory]); the dual step
        ``mu = eta`` and the Mahdavi-type regulariser ``delta = 4 G^2`` with ``G = max(G_f, G_g)`` (constants
        ``grad_bound``, ``constraint_grad_bound``). For ``dual_rule="dpp_queue"``: ``Q = lambda / mu``, i.e.
        ``V = 1/eta`` and primal step ``eta^2`` (the unregularised Lagrangian rule rewritten as a queue).
        ``overrides`` give each constant by name, or constructor arguments (``hinge``, ``pipelined``, ...).
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        info, who = info.giving(overrides), f"{cls.__name__}.from_theory"
        chain = full_information_theory(info, who, radius, eta_constant, eps_constant, block_constant)
        return cls.build({**_dual_theory(info, who, chain, dual_rule), "dual_rule": dual_rule}, overrides)

    def init(self, info, key):
        del key
        chain = self.chain.init(info.domain)
        dual = self.dual.init(info.num_constraints, chain.x.dtype)
        return _LPMState(chain=chain, dual=dual, domain=info.domain)

    def decide(self, state):
        return state.chain.x

    def first_order(self, state, x, feedback):
        """``V grad f_t + sum_n lambda^n d[g_t^n]_+`` at ``x``, and the violations ``[g_t(x)]_+``."""
        grad, g = penalised_gradient(feedback, x, self.dual.loss_scale(), state.dual.dual, self.dual.hinge)
        return grad, g.astype(x.dtype)

    def zeroth_order(self, state, feedback):
        """``V f_t + <lambda, [g_t]_+>`` at the played point, and the violations ``[g_t]_+`` there."""
        g = feedback.constraints
        h = jnp.maximum(g, 0.0) if self.dual.hinge else g
        value = self.dual.loss_scale() * feedback.loss + jnp.dot(state.dual.dual, h)
        return value, h.astype(state.chain.x.dtype)

    def step(self, state, grad, aux):
        """The chain's step on ``grad``; the block's violations ``aux`` summed and, at its end, the dual rule."""
        chain, end = self.chain.step(state.chain, grad, state.domain, self.eps)
        dual = self.dual.step(state.dual, aux, end, self.chain.block_size)
        return _LPMState(chain=chain, dual=dual, domain=state.domain)

    def diagnostics(self, state):
        return {"oracle_calls": state.chain.oracle_calls, "dual": state.dual.dual}


class LBPM(AbstractLOOBandit):
    r"""LBPM (reconstructed): bandit LOO-based primal-dual method of Garber and Kretzu 2024 (Algorithm 5).

    RECONSTRUCTED: the paper's text could not be read, so these update equations were **not** checked
    against it; they are [`LPM`][ocokit.algorithms.LPM] wrapped in the one-point bandit adapter
    `OnePointBandit`, as [`LOOBBGD`][ocokit.algorithms.LOOBBGD] wraps LOO-BOGD (G&K 2022,
    Algorithm 9). Do not cite results of this class as the authors' algorithm.

    Update (block m, round t; ``u_t`` uniform on S^{n-1}; only values are observed):

    \[
    \begin{aligned}
    &\text{play } z_t = x_m + \delta u_t;\quad \text{observe } f_t(z_t),\ g_t(z_t) \\
    &g^f_t = \frac{n}{\delta} f_t(z_t)\, u_t;\quad g^{g,n}_t = \frac{n}{\delta} [g^n_t(z_t)]_+\, u_t \\
    &y_{t+1} = y_t - \eta \Big(g^f_t + \sum_n \lambda_m^n g^{g,n}_t\Big) \\
    &\text{end of block: } (x_{m+1}, \tilde y_{m+1})
        = \mathrm{Alg3}\big(\mathcal{K}_{\delta/r}, x_m, y, \epsilon = \delta^2/3\big) \\
    &\phantom{\text{end of block: }} \lambda_{m+1}
        = \Big[\lambda_m + \mu \sum_t \big([g_t(z_t)]_+ - \mathtt{dual\_reg}\, \mu \lambda_m\big)\Big]_+
    \end{aligned}
    \]

    Source: G&K 2024, Algorithm 5, reconstructed (not read) on top of G&K 2022 Algorithm 9, read in that
    paper. Published bounds (AAAI-25 Table 1, ICML abstract): ``O(T^{3/4} sqrt(log T))`` expected regret and
    ``O(T^{7/8} log T)`` CCV. Needs ``r B`` inside K.

    Args:
        eta: primal step > 0.
        delta: smoothing radius, ``0 < delta < r`` (r = the inner radius of K).
        block_size: ``K_b``, an integer >= 1.
        eps: tolerance of Algorithm 3; default ``None`` uses ``delta^2 / 3`` (as Algorithm 9).
        mu, dual_reg, V, dual_rule, hinge: as in [`LPM`][ocokit.algorithms.LPM] (the regulariser is named ``dual_reg``
            since
            ``delta`` is the smoothing radius here).
        radius, pipelined, max_outer_iter, max_fw_iter: as in [`LPM`][ocokit.algorithms.LPM] (the parts ``dual`` and
            ``chain``).

    Readings: the dual rule uses the observed values ``g_t(z_t)`` at the played point; both dual rules
    and ``hinge`` as in [`LPM`][ocokit.algorithms.LPM].

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = LBPM(eta=0.001, delta=0.5, block_size=4, mu=0.01, dual_reg=1.0)
        >>> ocokit.run(learner, problem, T=20).constraints.shape
        (20, 2)

    References:
        D. Garber and B. Kretzu. Projection-free online convex optimization with time-varying constraints.
        ICML 2024 (PMLR 235); arXiv:2402.08799.
    """

    chain: LOOChain
    delta: Float[Array, ""] = hyperparameter()
    eps: Float[Array, ""] | None = _optional_leaf()
    dual: BlockDual
    reconstructed: ClassVar[bool] = True

    inner_learner: ClassVar[type[LPM]] = LPM

    def __init__(
        self,
        eta: Any,
        delta: Any,
        block_size: Any,
        eps: Any = None,
        *,
        radius: Any = None,
        pipelined: bool = False,
        max_outer_iter: int = MAX_ITER,
        max_fw_iter: int = MAX_ITER,
        **dual: Any,
    ):
        """``dual``: the dual's arguments (`BlockDual`), by name."""
        self.chain = LOOChain(eta, block_size, radius, pipelined, max_outer_iter, max_fw_iter)
        self.delta, self.eps, self.dual = delta, eps, BlockDual(**dual)

    def inner_arguments(self) -> dict[str, Any]:
        """[`LPM`][ocokit.algorithms.LPM]'s: the chain's, the dual's, and ``eps`` (``delta^2 / 3`` unless given)."""
        return {**self.chain.options(), **self.dual.options(), "eps": self.inner_eps()}

    needs: ClassVar[Needs] = Needs(
        constants=("loss_bound", "constraint_bound", "grad_bound", "constraint_grad_bound", "inner_radius", "diameter")
    )

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        dual_rule: str = "lagrangian",
        c: float | None = None,
        radius: float | None = None,
        eta_constant: float = 1.0,
        block_constant: float | None = None,
        **overrides: Any,
    ) -> "LBPM":
        """Reconstructed theory parameters (by analogy with G&K 2022's Theorem 11; not read in the paper).

        ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}`` clipped to [1, T], ``delta = c T^{-1/4}``
        capped at ``r/2`` (``c`` defaults to ``20 R sqrt(nM)``), ``M = max(loss_bound, constraint_bound)``
        (rescalable as in [`LOOBBGD.from_theory`][ocokit.algorithms.LOOBBGD.from_theory]), and the dual parameters of
        [`LPM.from_theory`][ocokit.algorithms.LPM.from_theory].
        ``overrides`` give each constant by name, or constructor arguments (``hinge``, ...).
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        info, who = info.giving(overrides), f"{cls.__name__}.from_theory"
        M = max(info.require("loss_bound", who), info.require("constraint_bound", who))
        chain = bandit_theory(info, who, M, c, radius, eta_constant, block_constant)
        return cls.build({**_dual_theory(info, who, chain, dual_rule), "dual_rule": dual_rule}, overrides)

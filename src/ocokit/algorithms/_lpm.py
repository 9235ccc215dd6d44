"""LPM and LBPM (Garber and Kretzu 2024, Algorithms 4 and 5): RECONSTRUCTED LOO-based primal-dual methods.

The paper's text could not be read, so both are rebuilt in spec ``baselines.md`` §2.2-§2.3: the blocked
LOO-BOGD chain :class:`~ocokit.algorithms._loo_chain.LOOChain` run on a regularised Lagrangian, with a dual
variable updated once per block by a named queue rule of :mod:`ocokit.algorithms._queues`; LBPM is LPM wrapped
in the one-point bandit adapter :class:`~ocokit.algorithms._bandit.OnePointBandit`. Do not cite results of
these classes as the authors' algorithms.
"""

from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._bandit import AbstractGradientLearner, AbstractOnePointBanditLearner, OnePointBandit
from ocokit.algorithms._base import ProblemInfo, hyperparameter
from ocokit.algorithms._loo_chain import (
    LOOChain,
    _int_leaf,
    _LOOChainState,
    _optional_leaf,
    bandit_theory,
    full_information_theory,
)
from ocokit.algorithms._queues import drift_plus_penalty, regularised_dual_ascent
from ocokit.feedback import FULL_INFORMATION, FeedbackKind

_DUAL_RULES = ("lagrangian", "dpp_queue")


def _check_dual(dual_rule: str, mu: Any, dual_reg: Any, V: Any) -> None:
    _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
    _checks.positive("mu", mu)
    _checks.nonnegative("dual_reg", dual_reg)
    _checks.positive("V", V)


def _dual_theory(eta: float, G: float, dual_rule: str) -> dict[str, float]:
    """The dual parameters derived from the chain's ``eta``: ``mu = eta``, ``delta = 4 G^2``, ``V = 1``.

    For ``"dpp_queue"`` the queue ``Q = lambda / mu`` has ``V = 1/mu`` and primal step ``eta mu``, which turns
    the unregularised Lagrangian rule into the queue rule (spec §2.2, "dpp_queue").
    """
    if dual_rule == "lagrangian":
        return {"mu": eta, "dual_reg": 4.0 * G**2, "V": 1.0, "eta": eta}
    return {"mu": eta, "dual_reg": 0.0, "V": 1.0 / eta, "eta": eta * eta}


class _DualState(eqx.Module):
    dual: Float[Array, " N"]  # lambda_m (Lagrangian rule) or Q_m (DPP queue), fixed within a block
    viol_sum: Float[Array, " N"]  # sum over the current block of [g_t(x_m)]_+ (or g_t(x_m) with hinge=False)


class _LPMState(eqx.Module):
    chain: _LOOChainState
    dual: _DualState
    domain: Any  # K, from the learner's info


class LPM(AbstractGradientLearner):
    """LPM (reconstructed): LOO-based primal-dual method of Garber and Kretzu 2024 (Algorithm 4).

    RECONSTRUCTED: the paper's text could not be read, so these update equations were **not** checked against
    it; they are the derivation of spec ``baselines.md`` §2.2 (LOO-BOGD run on a regularised Lagrangian).
    Do not cite results of this class as the authors' algorithm.

    Update (block m plays ``x_m``; ``g_t^+ = [g_t]_+`` and ``d[g]_+`` its subgradient, 0 at the kink)::

        Gx = sum_{t in B_m} [ grad f_t(x_m) + sum_n lambda_m^n d[g_t^n]_+(x_m) ]
        Gl = sum_{t in B_m} ( [g_t(x_m)]_+ - delta mu lambda_m )
        y_{m+1} = y~_m - eta Gx;  (x_{m+1}, y~_{m+1}) = Alg3(K, x_m, y_{m+1}, eps)
        lambda_{m+1} = [lambda_m + mu Gl]_+

    i.e. :class:`LOOBOGD` on the regularised Lagrangian
    ``L_t(x, lambda) = f_t(x) + sum_n lambda^n [g_t^n(x)]_+ - (delta mu / 2)||lambda||^2``,
    with ``y`` accumulated round by round and ``lambda`` updated once per block.

    Source: G&K 2024 (ICML, PMLR 235), Algorithm 4, reconstructed in spec ``baselines.md`` §2.2; Algorithm 3
    of G&K 2022 [P]. Published bounds (verified only from the abstract and AAAI-25 Table 1): ``O~(T^{3/4})``
    regret and ``O(T^{7/8})`` CCV, with first-order access to the time-varying constraints ``g_t``. The spec's
    derivation: Lagrangian OGD with step ``eta`` gives regret ``O(1/eta + eta T)`` and violation
    ``O(sqrt(T (1/eta + eta T)))``; LOO-BOGD forces ``eta ~ T^{-3/4}``, hence ``T^{3/4}`` and ``T^{7/8}``.

    Args:
        eta: primal step > 0.
        eps: tolerance of Algorithm 3, > 0.
        block_size: ``K_b``, an integer >= 1.
        mu: dual step > 0 (rule ``"lagrangian"``).
        dual_reg: the regulariser delta >= 0 of ``L_t`` (rule ``"lagrangian"``; the spec's ``delta``).
        V: loss weight > 0 of rule ``"dpp_queue"``.
        dual_rule: ``"lagrangian"`` (default, the spec's rule above) or ``"dpp_queue"``: ``Q_{m+1} =
            [Q_m + sum_{t in B_m} g_t(x_m)]_+`` and primal gradient ``V grad f_t + sum_n Q_m^n grad g_t^n``
            (the YNW queue run blockwise; the reading closest to AAAI-25's "drift-plus-penalty, Phi(x) = x").
        hinge: ``True`` (default) uses ``[g_t]_+`` (bounds on CCV, as AAAI-25 report) in both the dual and the
            primal gradient; ``False`` uses ``g_t``.
        radius, pipelined, max_outer_iter, max_fw_iter: as in :class:`LOOBOGD`; ``pipelined`` defaults to
            ``False`` here, the form the spec writes (the projection of block m is played in block m + 1).

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

    eta: Float[Array, ""] = hyperparameter()
    eps: Float[Array, ""] = hyperparameter()
    block_size: Int[Array, ""] = eqx.field(converter=_int_leaf)
    mu: Float[Array, ""] = hyperparameter(default=1.0)
    dual_reg: Float[Array, ""] = hyperparameter(default=0.0)
    V: Float[Array, ""] = hyperparameter(default=1.0)
    dual_rule: str = eqx.field(static=True, default="lagrangian")
    hinge: bool = eqx.field(static=True, default=True)
    radius: Float[Array, ""] | None = _optional_leaf()
    pipelined: bool = eqx.field(static=True, default=False)
    max_outer_iter: int = eqx.field(static=True, default=1000)
    max_fw_iter: int = eqx.field(static=True, default=1000)
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    reconstructed: ClassVar[bool] = True

    def __check_init__(self):
        _checks.positive("eps", self.eps)
        _check_dual(self.dual_rule, self.mu, self.dual_reg, self.V)
        _ = self.chain  # building the chain checks eta, block_size, radius and the caps

    @property
    def chain(self) -> LOOChain:
        """The blocked chain with this learner's step, block size, radius and caps."""
        return LOOChain(self.eta, self.block_size, self.radius, self.pipelined, self.max_outer_iter, self.max_fw_iter)

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        dual_rule: str = "lagrangian",
        hinge: bool = True,
        radius: float | None = None,
        pipelined: bool = False,
        eta_constant: float = 1.0,
        eps_constant: float = 60.0,
        block_constant: float = 5.0,
        grad_bound: float | None = None,
        constraint_grad_bound: float | None = None,
    ) -> "LPM":
        """Reconstructed theory parameters (spec §2.2; not read in the paper).

        LOO-BOGD's Theorem 9 for the primal chain: ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``,
        ``K_b = floor(5 T^{1/2})`` (constants rescalable as in :meth:`LOOBOGD.from_theory`); the dual step
        ``mu = eta`` and the Mahdavi-type regulariser ``delta = 4 G^2`` with ``G = max(G_f, G_g)`` (constants
        ``grad_bound``, ``constraint_grad_bound``, each overridable by name). For ``dual_rule="dpp_queue"``:
        ``Q = lambda / mu``, i.e. ``V = 1/eta`` and primal step ``eta^2`` (the unregularised Lagrangian rule
        rewritten as a queue).
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        who = f"{cls.__name__}.from_theory"
        chain = full_information_theory(info, who, radius, eta_constant, eps_constant, block_constant, grad_bound)
        G = max(
            info.require("grad_bound", who, grad_bound),
            info.require("constraint_grad_bound", who, constraint_grad_bound),
        )
        chain.update(_dual_theory(chain["eta"], G, dual_rule))
        return cls(dual_rule=dual_rule, hinge=hinge, pipelined=pipelined, **chain)

    def init(self, info, key):
        del key
        x0 = self.chain.init(info.domain)
        n, dtype = info.num_constraints, x0.x.dtype
        dual = _DualState(dual=jnp.zeros((n,), dtype), viol_sum=jnp.zeros((n,), dtype))
        return _LPMState(chain=x0, dual=dual, domain=info.domain)

    def decide(self, state):
        return state.chain.x

    def _loss_scale(self) -> Any:
        return 1.0 if self.dual_rule == "lagrangian" else self.V

    def first_order(self, state, x, feedback):
        """``V grad f_t + sum_n lambda^n d[g_t^n]_+`` at ``x``, and the violations ``[g_t(x)]_+``."""
        g = feedback.constraints(x)
        J = feedback.constraints_jacobian(x).reshape(g.shape[0], x.size)
        if self.hinge:
            J = jnp.where((g > 0)[:, None], J, 0.0)
            g = jnp.maximum(g, 0.0)
        grad = self._loss_scale() * feedback.grad(x) + (state.dual.dual @ J).reshape(x.shape)
        return grad, g.astype(x.dtype)

    def zeroth_order(self, state, feedback):
        """``V f_t + <lambda, [g_t]_+>`` at the played point, and the violations ``[g_t]_+`` there."""
        g = feedback.constraints
        h = jnp.maximum(g, 0.0) if self.hinge else g
        value = self._loss_scale() * feedback.loss + jnp.dot(state.dual.dual, h)
        return value, h.astype(state.chain.x.dtype)

    def step(self, state, grad, aux):
        """The chain's step on ``grad``; the block's violations ``aux`` summed and, at its end, the dual rule."""
        chain, end = self.chain.step(state.chain, grad, state.domain, self.eps)
        s = state.dual.viol_sum + aux
        lam = state.dual.dual
        if self.dual_rule == "lagrangian":  # lambda <- [lambda + mu sum_t ([g_t]_+ - delta mu lambda)]_+
            new = regularised_dual_ascent(lam, s, self.mu, self.block_size * self.dual_reg)
        else:  # Q <- [Q + sum_t g_t]_+
            new = drift_plus_penalty(lam, s)
        new = new.astype(lam.dtype)
        dual = _DualState(dual=jnp.where(end, new, lam), viol_sum=jnp.where(end, jnp.zeros_like(s), s))
        return _LPMState(chain=chain, dual=dual, domain=state.domain)

    def diagnostics(self, state):
        return {"oracle_calls": state.chain.oracle_calls, "dual": state.dual.dual}


class LBPM(AbstractOnePointBanditLearner):
    """LBPM (reconstructed): bandit LOO-based primal-dual method of Garber and Kretzu 2024 (Algorithm 5).

    RECONSTRUCTED: the paper's text could not be read, so these update equations were **not** checked
    against it; they are :class:`LPM` wrapped in the one-point bandit adapter
    :class:`~ocokit.algorithms._bandit.OnePointBandit`, as :class:`LOOBBGD` wraps LOO-BOGD (spec ``baselines.md``
    §2.3). Do not cite results of this class as the authors' algorithm.

    Update (block m, round t; ``u_t`` uniform on S^{n-1}; only values are observed)::

        play z_t = x_m + delta u_t;  observe f_t(z_t), g_t(z_t)
        g^f_t = (n/delta) f_t(z_t) u_t;  g^{g,n}_t = (n/delta) [g^n_t(z_t)]_+ u_t
        y_{t+1} = y_t - eta (g^f_t + sum_n lambda_m^n g^{g,n}_t)
        end of block: (x_{m+1}, y~_{m+1}) = Alg3(K_{delta/r}, x_m, y, eps = delta^2/3)
                      lambda_{m+1} = [lambda_m + mu sum_t ([g_t(z_t)]_+ - dual_reg mu lambda_m)]_+

    Source: G&K 2024, Algorithm 5, reconstructed in spec ``baselines.md`` §2.3 on top of G&K 2022 Algorithm 9
    [P]. Published bounds (AAAI-25 Table 1, ICML abstract): ``O(T^{3/4} sqrt(log T))`` expected regret and
    ``O(T^{7/8} log T)`` CCV. Needs ``r B`` inside K.

    Args:
        eta: primal step > 0.
        delta: smoothing radius, ``0 < delta < r`` (r = the inner radius of K).
        block_size: ``K_b``, an integer >= 1.
        eps: tolerance of Algorithm 3; default ``None`` uses ``delta^2 / 3`` (as Algorithm 9).
        mu, dual_reg, V, dual_rule, hinge: as in :class:`LPM` (the regulariser is named ``dual_reg`` since
            ``delta`` is the smoothing radius here).
        radius, pipelined, max_outer_iter, max_fw_iter: as in :class:`LPM`.

    Readings: the dual rule uses the observed values ``g_t(z_t)`` at the played point; both dual rules
    and ``hinge`` as in :class:`LPM`.

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

    eta: Float[Array, ""] = hyperparameter()
    delta: Float[Array, ""] = hyperparameter()
    block_size: Int[Array, ""] = eqx.field(converter=_int_leaf)
    eps: Float[Array, ""] | None = _optional_leaf()
    mu: Float[Array, ""] = hyperparameter(default=1.0)
    dual_reg: Float[Array, ""] = hyperparameter(default=0.0)
    V: Float[Array, ""] = hyperparameter(default=1.0)
    dual_rule: str = eqx.field(static=True, default="lagrangian")
    hinge: bool = eqx.field(static=True, default=True)
    radius: Float[Array, ""] | None = _optional_leaf()
    pipelined: bool = eqx.field(static=True, default=False)
    max_outer_iter: int = eqx.field(static=True, default=1000)
    max_fw_iter: int = eqx.field(static=True, default=1000)
    reconstructed: ClassVar[bool] = True

    def __check_init__(self):
        _checks.positive("delta", self.delta)
        if self.eps is not None:
            _checks.positive("eps", self.eps)
        _ = self.bandit  # building LPM checks the chain's and the dual's parameters

    @property
    def bandit(self) -> OnePointBandit:
        """:class:`LPM` over the shrunk set, with ``eps = delta^2 / 3`` unless given, on one-point estimates."""
        inner = LPM(
            eta=self.eta,
            eps=self.delta**2 / 3.0 if self.eps is None else self.eps,
            block_size=self.block_size,
            mu=self.mu,
            dual_reg=self.dual_reg,
            V=self.V,
            dual_rule=self.dual_rule,
            hinge=self.hinge,
            radius=self.radius,
            pipelined=self.pipelined,
            max_outer_iter=self.max_outer_iter,
            max_fw_iter=self.max_fw_iter,
        )
        return OnePointBandit(inner, self.delta)

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        c: float | None = None,
        dual_rule: str = "lagrangian",
        hinge: bool = True,
        radius: float | None = None,
        pipelined: bool = False,
        eta_constant: float = 1.0,
        block_constant: float | None = None,
        loss_bound: float | None = None,
        constraint_bound: float | None = None,
        grad_bound: float | None = None,
        constraint_grad_bound: float | None = None,
        inner_radius: float | None = None,
    ) -> "LBPM":
        """Reconstructed theory parameters (spec §2.3, "by analogy with Theorem 11"; not read in the paper).

        ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}`` clipped to [1, T], ``delta = c T^{-1/4}``
        capped at ``r/2`` (``c`` defaults to ``20 R sqrt(nM)``), ``M = max(loss_bound, constraint_bound)``
        (rescalable as in :meth:`LOOBBGD.from_theory`), and the dual parameters of :meth:`LPM.from_theory`.
        Each constant can be passed by name.
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        who = f"{cls.__name__}.from_theory"
        M = max(info.require("loss_bound", who, loss_bound), info.require("constraint_bound", who, constraint_bound))
        chain = bandit_theory(info, who, radius, c, eta_constant, block_constant, M, inner_radius)
        G = max(
            info.require("grad_bound", who, grad_bound),
            info.require("constraint_grad_bound", who, constraint_grad_bound),
        )
        chain.update(_dual_theory(chain["eta"], G, dual_rule))
        return cls(dual_rule=dual_rule, hinge=hinge, pipelined=pipelined, **chain)

"""LPM and LBPM (Garber and Kretzu 2024, Algorithms 4 and 5): RECONSTRUCTED LOO-based primal-dual methods.

The paper's text could not be read, so both are rebuilt in spec ``baselines.md`` §2.2-§2.3: the blocked
LOO-BOGD chain of :mod:`ocokit.algorithms._loo_bogd` (:class:`~ocokit.algorithms.LOOBOGD`, and
:class:`~ocokit.algorithms.LOOBBGD` for the bandit version) run on a regularised Lagrangian, with a dual
variable updated once per block (:func:`_dual_step`). Do not cite results of these classes as the authors'
algorithms.
"""

from __future__ import annotations

from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.algorithms._loo_bogd import (
    _bandit_init,
    _bandit_play,
    _bandit_step,
    _bandit_theory,
    _BanditState,
    _Block,
    _block_init,
    _block_step,
    _check_common,
    _constant,
    _full_info_theory,
    _int_leaf,
    _optional_leaf,
)
from ocokit.feedback import BANDIT, FULL_INFORMATION, FeedbackKind

_DUAL_RULES = ("lagrangian", "dpp_queue")

# --------------------------------------------------------------------------------------------------
# LPM and LBPM (G&K 2024, Algorithms 4 and 5): RECONSTRUCTED from spec baselines.md §2.2-§2.3.


class _DualState(eqx.Module):
    dual: Float[Array, " N"]  # lambda_m (Lagrangian rule) or Q_m (DPP queue), fixed within a block
    viol_sum: Float[Array, " N"]  # sum over the current block of [g_t(x_m)]_+ (or g_t(x_m) with hinge=False)


def _dual_init(n: int, dtype: Any) -> _DualState:
    return _DualState(dual=jnp.zeros((n,), dtype), viol_sum=jnp.zeros((n,), dtype))


def _dual_step(lrn: Any, dual: _DualState, viol: Array, end: Array) -> _DualState:
    """Add this round's violation; at a block's end apply the dual rule to the block sums."""
    s = dual.viol_sum + viol
    lam = dual.dual
    if lrn.dual_rule == "lagrangian":  # lambda_{m+1} = [lambda_m + mu sum_t ([g_t]_+ - delta mu lambda_m)]_+
        new = jnp.maximum(0.0, lam + lrn.mu * (s - lrn.block_size * lrn.dual_reg * lrn.mu * lam))
    else:  # Q_{m+1} = [Q_m + sum_t g_t]_+
        new = jnp.maximum(0.0, lam + s)
    new = new.astype(lam.dtype)
    return _DualState(dual=jnp.where(end, new, lam), viol_sum=jnp.where(end, jnp.zeros_like(s), s))


def _loss_scale(lrn: Any) -> Any:
    return 1.0 if lrn.dual_rule == "lagrangian" else lrn.V


def _check_dual(lrn: Any) -> None:
    _checks.one_of("dual_rule", lrn.dual_rule, _DUAL_RULES)
    _checks.positive("mu", lrn.mu)
    _checks.nonnegative("dual_reg", lrn.dual_reg)
    _checks.positive("V", lrn.V)


def _with_dual_theory(cls: Any, info: ProblemInfo, chain: dict[str, Any], **static: Any) -> Any:
    """``cls`` with the chain's theory parameters (``eta`` among them) and the dual ones derived from ``eta``.

    ``mu = eta``, ``delta = 4 max(G_f, G_g)^2``; the queue ``Q = lambda / mu`` has ``V = 1/mu``. ``static``
    holds ``dual_rule``, ``hinge`` and ``pipelined``.
    """
    chain = dict(chain)
    eta = chain.pop("eta")
    G = max(_constant(info, "grad_bound", cls.__name__), _constant(info, "constraint_grad_bound", cls.__name__))
    if static["dual_rule"] == "lagrangian":
        dual = {"mu": eta, "dual_reg": 4.0 * G**2, "V": 1.0, "eta": eta}
    else:
        # Q_m = lambda_m / mu turns the unregularised Lagrangian rule into the queue rule: the primal step on
        # V grad f + Q grad g is then eta / V = eta mu (spec §2.2, "dpp_queue").
        dual = {"mu": eta, "dual_reg": 0.0, "V": 1.0 / eta, "eta": eta * eta}
    return cls(**static, **chain, **dual)


class _LPMState(eqx.Module):
    block: _Block
    dual: _DualState
    domain: Any  # K, from the learner's info


class LPM(AbstractLearner):
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
        _check_common(self)
        _check_dual(self)

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
    ) -> LPM:
        """Reconstructed theory parameters (spec §2.2; not read in the paper).

        LOO-BOGD's Theorem 9 for the primal chain: ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``,
        ``K_b = floor(5 T^{1/2})`` (constants rescalable as in :meth:`LOOBOGD.from_theory`); the dual step
        ``mu = eta`` and the Mahdavi-type regulariser ``delta = 4 G^2`` with ``G = max(G_f, G_g)`` (constants
        ``grad_bound``, ``constraint_grad_bound``). For ``dual_rule="dpp_queue"``: ``Q = lambda / mu``, i.e.
        ``V = 1/eta`` and primal step ``eta^2`` (the unregularised Lagrangian rule rewritten as a queue).
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        chain = _full_info_theory(info, cls.__name__, radius, eta_constant, eps_constant, block_constant)
        return _with_dual_theory(cls, info, chain, dual_rule=dual_rule, hinge=hinge, pipelined=pipelined)

    def init(self, info, key):
        del key
        dtype = info.domain.center().dtype
        return _LPMState(
            block=_block_init(info.domain, dtype), dual=_dual_init(info.num_constraints, dtype), domain=info.domain
        )

    def decide(self, state):
        return state.block.x

    def update(self, state, x, feedback):
        g = feedback.constraints(x)
        J = feedback.constraints_jacobian(x).reshape(g.shape[0], x.size)
        if self.hinge:
            J = jnp.where((g > 0)[:, None], J, 0.0)
            g = jnp.maximum(g, 0.0)
        grad = _loss_scale(self) * feedback.grad(x) + (state.dual.dual @ J).reshape(x.shape)
        block, end = _block_step(self, state.block, grad, state.domain, self.eps)
        return _LPMState(block=block, dual=_dual_step(self, state.dual, g.astype(x.dtype), end), domain=state.domain)

    def diagnostics(self, state):
        return {"oracle_calls": state.block.oracle_calls, "dual": state.dual.dual}


class _LBPMState(eqx.Module):
    bandit: _BanditState
    dual: _DualState


class LBPM(AbstractLearner):
    """LBPM (reconstructed): bandit LOO-based primal-dual method of Garber and Kretzu 2024 (Algorithm 5).

    RECONSTRUCTED: the paper's text could not be read, so these update equations were **not** checked
    against it; they are :class:`LPM` with the bandit machinery of :class:`LOOBBGD` (spec ``baselines.md``
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
    feedback: ClassVar[FeedbackKind] = BANDIT
    reconstructed: ClassVar[bool] = True

    def __check_init__(self):
        _check_common(self)
        _check_dual(self)

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
    ) -> LBPM:
        """Reconstructed theory parameters (spec §2.3, "by analogy with Theorem 11"; not read in the paper).

        ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}`` clipped to [1, T], ``delta = c T^{-1/4}``
        capped at ``r/2`` (``c`` defaults to ``20 R sqrt(nM)``), ``M = max(loss_bound, constraint_bound)``
        (rescalable as in :meth:`LOOBBGD.from_theory`), and the dual parameters of :meth:`LPM.from_theory`.
        """
        _checks.one_of("dual_rule", dual_rule, _DUAL_RULES)
        who = cls.__name__
        M = max(_constant(info, "loss_bound", who), _constant(info, "constraint_bound", who))
        chain = _bandit_theory(info, radius, c, eta_constant, block_constant, M)
        return _with_dual_theory(cls, info, chain, dual_rule=dual_rule, hinge=hinge, pipelined=pipelined)

    def init(self, info, key):
        bandit = _bandit_init(info.domain, self.delta, key)
        return _LBPMState(bandit=bandit, dual=_dual_init(info.num_constraints, bandit.u.dtype))

    def decide(self, state):
        return _bandit_play(state.bandit)

    def update(self, state, x, feedback):
        del x
        g = feedback.constraints
        h = jnp.maximum(g, 0.0) if self.hinge else g
        # one-point estimates of f_t and of the weighted [g_t]_+ at the played point
        value = _loss_scale(self) * feedback.loss + jnp.dot(state.dual.dual, h)
        bandit, end = _bandit_step(self, state.bandit, value)
        return _LBPMState(bandit=bandit, dual=_dual_step(self, state.dual, h.astype(bandit.u.dtype), end))

    def diagnostics(self, state):
        return {"oracle_calls": state.bandit.block.oracle_calls, "dual": state.dual.dual}

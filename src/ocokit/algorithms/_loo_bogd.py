"""Blocked projection-free OGD with a linear optimisation oracle (LOO): Garber and Kretzu 2022.

[`LOOBOGD`][ocokit.algorithms.LOOBOGD] (Algorithm 4, full information) runs the blocked chain
`LOOChain` (SH-FW and the close infeasible projection, Algorithms 2-3, are
there too) on the loss gradients; [`LOOBBGD`][ocokit.algorithms.LOOBBGD] (Algorithm 9, bandit) is
[`LOOBOGD`][ocokit.algorithms.LOOBOGD] wrapped in the
one-point bandit adapter `OnePointBandit`. The *reconstructed* constrained
versions [`LPM`][ocokit.algorithms.LPM] and [`LBPM`][ocokit.algorithms.LBPM] (G&K 2024, Algs. 4 and 5) run the
same chain and are in `_lpm`.
"""

from typing import Any, ClassVar

import equinox as eqx
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.algorithms._bandit import AbstractGradientLearner
from ocokit.algorithms._base import Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._loo_chain import (
    AbstractLOOBandit,
    AbstractLOOChainLearner,
    LOOChain,
    _LOOChainState,
    _optional_leaf,
    bandit_theory,
    full_information_theory,
)
from ocokit.feedback import FULL_INFORMATION, FeedbackKind
from ocokit.sets import AbstractSet


class _LOOBOGDState(eqx.Module):
    chain: _LOOChainState
    domain: AbstractSet  # K, from the learner's info


class LOOBOGD(AbstractGradientLearner, AbstractLOOChainLearner):
    r"""LOO-BOGD: blocked online gradient descent with a linear optimisation oracle (G&K 2022, Algorithm 4).

    Update (rounds t of block m play the same feasible ``x_{m-1}``):

    \[
    \begin{aligned}
    y_{t+1} &= y_t - \eta \nabla f_t(x_{m-1}) && \text{(every round)} \\
    (x_{m+1}, \tilde y_{m+1}) &= \mathrm{Alg3}(\mathcal{K}, x_{m-1}, y_{mK_b+1}, \epsilon);\quad
        y_{mK_b+1} \leftarrow \tilde y_m && \text{(end of block } m\text{)}
    \end{aligned}
    \]

    so block m + 1 plays ``x_m`` and ``x_{m+1}`` waits a block (the paper's pipelining: the projection
    "runs in parallel" with the next block). The chain is the part `LOOChain`;
    Algorithm 3 (`close_infeasible_projection`) calls SH-FW, one LOO call per
    FW iteration. Starts at ``x_0 = x_1 = K.center()``.

    Source: G&K 2022 (COLT, PMLR 178), Algorithms 2-4, Lemmas 6-7, read in the paper's full text.
    Guarantee (Theorem 9): with ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``,
    ``K_b = 5 T^{1/2}``, the adaptive regret on every interval is ``<= 20 G_f R (T^{1/2} + T^{3/4})`` and
    the total number of LOO calls is ``<= T``. Assumes ``K`` inside ``R B`` and ``||grad f_t|| <= G_f``
    on ``R B``.

    Args:
        eta: step size eta > 0.
        eps: tolerance epsilon > 0 of Algorithms 2-3.
        block_size: block length ``K_b``, an integer >= 1 (an int32 leaf, so grids of it vmap).
        radius: R > 0 with K inside ``B(K.center(), R)``; default ``None`` uses ``K.diameter`` (always valid).
        pipelined: ``True`` (default, the paper's Algorithm 4) or ``False``: play the projection of block m
            in block m + 1 (not analysed in the paper; each chain stays an OGD-without-feasibility sequence,
            so the guarantees should hold up to constants).
        max_outer_iter, max_fw_iter: safety caps on Algorithm 3's loop and on each SH-FW run (static).

    Readings: ``x_0 = x_1 = K.center()``; the ball of Algorithm 3's first line is centred at ``K.center()``
    (the paper assumes ``0 in K`` and centres it at 0); ``||y_0||`` in that line is read as the input's norm.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = LOOBOGD(eta=0.01, eps=0.1, block_size=4)
        >>> ocokit.run(learner, problem, T=20).loss.shape
        (20,)

    References:
        D. Garber and B. Kretzu. New projection-free algorithms for online convex optimization with adaptive
        regret guarantees. COLT 2022 (PMLR 178).
    """

    chain: LOOChain
    eps: Float[Array, ""] = hyperparameter(_checks.positive)
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __init__(self, eta: Any, eps: Any, block_size: Any, **chain: Any):
        """``chain``: the other arguments of the chain (``radius``, ``pipelined``, the caps), by name."""
        self.chain, self.eps = LOOChain(eta, block_size, **chain), eps

    needs: ClassVar[Needs] = Needs(constants=("grad_bound", "diameter"))

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        radius: float | None = None,
        eta_constant: float = 1.0,
        eps_constant: float = 60.0,
        block_constant: float = 5.0,
        **overrides: Any,
    ) -> "LOOBOGD":
        """Theorem 9: ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``, ``K_b = floor(5 T^{1/2})``.

        ``K_b`` is clipped to [1, T]; ``G_f`` is the problem constant ``grad_bound``; ``R`` defaults to
        ``K.diameter``. The constants 1, 60 and 5 can be changed (``eta_constant``, ``eps_constant``,
        ``block_constant``) keeping the exponents in T: Theorem 9's are made for the proof, and at ``T < 10^4``
        its tolerance ``3 eps`` exceeds ``R^2``, so the played point barely moves (the choices of
        `full_information_theory`). ``overrides`` give ``grad_bound`` by name,
        or constructor arguments (``pipelined``, the caps).
        """
        info, who = info.giving(overrides), f"{cls.__name__}.from_theory"
        return cls.build(
            full_information_theory(info, who, radius, eta_constant, eps_constant, block_constant), overrides
        )

    def init(self, info, key):
        del key
        return _LOOBOGDState(chain=self.chain.init(info.domain), domain=info.domain)

    def decide(self, state):
        return state.chain.x

    def first_order(self, state, x, feedback):
        return feedback.grad(x), None

    def zeroth_order(self, state, feedback):
        return feedback.loss, None

    def step(self, state, grad, aux):
        del aux
        chain, _ = self.chain.step(state.chain, grad, state.domain, self.eps)
        return _LOOBOGDState(chain=chain, domain=state.domain)

    def diagnostics(self, state):
        return {"oracle_calls": state.chain.oracle_calls}


class LOOBBGD(AbstractLOOBandit):
    r"""LOO-BBGD: blocked bandit gradient descent with a LOO (G&K 2022, Algorithm 9).

    Update (block m, round t; ``u_t`` uniform on the unit sphere S^{n-1}):

    \[
    \begin{aligned}
    &\text{play } z_t = x_{m-1} + \delta u_t;\quad \text{observe } f_t(z_t) \\
    &g_t = \frac{n}{\delta} f_t(z_t)\, u_t;\quad y_{t+1} = y_t - \eta g_t \\
    &\text{end of block: } (x_{m+1}, \tilde y_{m+1})
        = \mathrm{Alg3}\big(\mathcal{K}_{\delta/r}, x_{m-1}, y_{mK_b+1}, \epsilon = \delta^2 / 3\big)
    \end{aligned}
    \]

    with ``K_{delta/r} = c + (1 - delta/r)(K - c)``, ``c = K.center()`` and ``r = K.inner_radius``, so every
    ``z_t`` lies in K. Pipelined as [`LOOBOGD`][ocokit.algorithms.LOOBOGD]. It is [`LOOBOGD`][ocokit.algorithms.LOOBOGD]
    (with ``eps = delta^2 / 3`` unless
    given) wrapped in the one-point bandit adapter `OnePointBandit`.

    Source: G&K 2022, Algorithm 9, read in the paper's full text. Guarantee (Theorem 11): with
    ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}``, ``delta = c T^{-1/4}`` (``c T^{-1/4} < r``), the
    expected adaptive regret is ``O(T^{3/4})`` and the expected number of LOO calls is ``O(T)``.

    Args:
        eta: step size > 0.
        delta: smoothing radius, ``0 < delta < r`` (r = the inner radius of K; checked by ``from_theory``).
        block_size: ``K_b``, an integer >= 1.
        eps: tolerance of Algorithm 3; default ``None`` uses Algorithm 9's ``delta^2 / 3``.
        radius, pipelined, max_outer_iter, max_fw_iter: as in [`LOOBOGD`][ocokit.algorithms.LOOBOGD].

    Readings: the "play" line of Algorithm 9 prints ``x~_{m-1}``; the only feasible points are ``x_{m-1}``, so
    ``z_t = x_{m-1} + delta u_t``. The LOO of the shrunk set is the set's own
    (``K.scaled``). Theorem 11's ``K_b`` exceeds T at practical sizes and is clipped to [1, T].

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = LOOBBGD(eta=0.001, delta=0.5, block_size=4)
        >>> round(float(learner.inner_eps()), 4)  # eps not given: Algorithm 9's delta^2 / 3
        0.0833
        >>> traj = ocokit.run(learner, problem, T=20)
        >>> int(traj.diagnostics["oracle_calls"][:3].sum())  # no LOO call inside the first block
        0

    References:
        D. Garber and B. Kretzu. New projection-free algorithms for online convex optimization with adaptive
        regret guarantees. COLT 2022 (PMLR 178).
    """

    chain: LOOChain
    delta: Float[Array, ""] = hyperparameter()
    eps: Float[Array, ""] | None = _optional_leaf()

    inner_learner: ClassVar[type[LOOBOGD]] = LOOBOGD

    def __init__(self, eta: Any, delta: Any, block_size: Any, eps: Any = None, **chain: Any):
        """``chain``: the other arguments of the chain (``radius``, ``pipelined``, the caps), by name."""
        self.chain, self.delta, self.eps = LOOChain(eta, block_size, **chain), delta, eps

    def inner_arguments(self) -> dict[str, Any]:
        """[`LOOBOGD`][ocokit.algorithms.LOOBOGD]'s: the chain's, and ``eps`` (``delta^2 / 3`` unless given)."""
        return {**self.chain.options(), "eps": self.inner_eps()}

    needs: ClassVar[Needs] = Needs(constants=("loss_bound", "inner_radius", "diameter"))

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        c: float | None = None,
        radius: float | None = None,
        eta_constant: float = 1.0,
        block_constant: float | None = None,
        **overrides: Any,
    ) -> "LOOBBGD":
        """Theorem 11: ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}``, ``delta = c T^{-1/4}``.

        ``M`` is the problem constant ``loss_bound``, ``n`` the dimension, ``R`` defaults to ``K.diameter``,
        ``c`` to Theorem 11's ``20 R sqrt(nM)``. ``delta`` is capped at ``r/2`` (the theorem needs
        ``c T^{-1/4} < r``; at practical T its constants violate this) and ``K_b`` is clipped to [1, T].
        ``eta_constant`` (1) and ``block_constant`` (``6 n M``) rescale ``eta`` and ``K_b`` (the choices of
        `bandit_theory`); ``overrides`` give the constants ``loss_bound`` (M)
        and ``inner_radius`` (r) by name, or constructor arguments.
        """
        info, who = info.giving(overrides), f"{cls.__name__}.from_theory"
        M = info.require("loss_bound", who)
        return cls.build(bandit_theory(info, who, M, c, radius, eta_constant, block_constant), overrides)

"""The online Frank-Wolfe family: classic OFW (Hazan-Kale 2012), OFW with line search and SC-OFW (paper 001).

All three play one Frank-Wolfe step per round on a quadratic surrogate ``F_t`` built from the gradients seen so
far (one warm-started LMO call per round, no projection), under a step rule of
`_ofw_player` (declared on `AbstractOFW` as ``rule``, built from the learner's
parameters). They differ only in that rule:

* [`OFW`][ocokit.algorithms.OFW]: ``F_t(x) = eta sum_{tau<=t} <grad f_tau(x_tau), x> + ||x - x_1||^2`` and the decaying
  step
  ``sigma_t = min(1, sigma0 / sqrt(t))`` (Hazan and Kale 2012; Hazan 2016, Thm 7.3; `DecayingStep`);
* [`OFWLineSearch`][ocokit.algorithms.OFWLineSearch]: the same surrogate, ``sigma_t`` the exact line search (paper 001,
  Algorithm 1;
  `LineSearchStep`);
* [`SCOFW`][ocokit.algorithms.SCOFW]: ``F_t(x) = sum_{tau<=t} <grad f_tau(x_tau), x> + lam/2 ||x - x_tau||^2`` with the
  exact line
  search (paper 001, Algorithm 2; `StronglyConvexStep`).
"""

import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.algorithms._ofw_player import AbstractOFWStep, DecayingStep, LineSearchStep, StronglyConvexStep
from ocokit.feedback import FULL_INFORMATION, FeedbackKind


class AbstractOFW(AbstractLearner):
    """An online Frank-Wolfe learner: the player's state is the whole state; the round is written here once.

    A final subclass declares ``rule``, its step rule (`AbstractOFWStep`)
    built from its own parameters, fed the round's gradient.
    """

    rule: eqx.AbstractVar[AbstractOFWStep]
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def init(self, info, key):
        del key
        return self.rule.init(info.domain)

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        return self.rule.step(state, feedback.grad(x), x)

    def diagnostics(self, state):
        return {
            "oracle_calls": jnp.asarray(1, jnp.int32),
            "lmo_iterations": state.lmo_iterations,
            "fw_gap": state.gap,
            "step": state.sigma,
        }


class OFW(AbstractOFW):
    r"""OFW: online Frank-Wolfe with the decaying step (Hazan and Kale 2012), the classic O(T^{3/4}) method.

    Update (after playing ``x_t`` and seeing ``f_t``), with ``S_t = sum_{tau<=t} grad f_tau(x_tau)``:

    \[
    \begin{aligned}
    F_t(x) &= \eta \langle S_t, x \rangle + \|x - x_1\|^2 && \text{(eq. 3 of Wan and Zhang; not halved)} \\
    v_t &= \operatorname*{arg\,min}_{v \in \mathcal{K}} \langle \nabla F_t(x_t), v \rangle,
        && \nabla F_t(x_t) = \eta S_t + 2 (x_t - x_1) \\
    x_{t+1} &= x_t + \sigma_t (v_t - x_t), && \sigma_t = \min(1, \sigma_0 / \sqrt{t})
    \end{aligned}
    \]

    ``x_1`` is ``K.center()``. One LMO call per round (warm-started: the set's LMO state is carried in the
    learner state), no projection.

    Source: E. Hazan and S. Kale (2012), as recalled by Wan and Zhang (AAAI 2021; eq. (3) and the paragraph
    after it). Guarantee: regret O(T^{3/4}) on any convex K with ``eta = O(T^{-3/4})`` and
    ``sigma_t = O(t^{-1/2})``; Wan and Zhang give no constants for this schedule, and those used here are
    recalled from Hazan (2016): ``eta = D / (2 G T^{3/4})``, ``sigma_t = min(1, 2/sqrt(t))``,
    regret <= 8 D G T^{3/4} (not checked against the book).

    Args:
        eta: scale of the linear part of the surrogate, > 0 (``from_theory``: ``D / (2 G T^{3/4})``).
        sigma0: step scale, > 0; ``sigma_t = min(1, sigma0 / sqrt(t))`` (``from_theory``: 2).
        surrogate: ``"current"`` (default) or ``"previous"``: the rounds summed in ``F_t`` (static).

    Readings: by default (``surrogate="current"``) the surrogate includes the current round's gradient
    (``tau <= t``), as Wan and Zhang (AAAI 2021) write eq. (3) for the original OFW: the same surrogate as
    [`OFWLineSearch`][ocokit.algorithms.OFWLineSearch], so the two differ only in ``sigma_t``. ``surrogate="previous"``
    sums
    ``tau <= t - 1`` (Hazan's book is sometimes recalled that way; unverified here).

    Example:
        >>> import ocokit
        >>> from ocokit.problems import OnlineLinear
        >>> problem = OnlineLinear(ocokit.sets.Box(-1.0, 1.0, dim=3))
        >>> learner = OFW.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 100))
        >>> ocokit.run(learner, problem, T=100).loss.shape
        (100,)

    References:
        E. Hazan and S. Kale. Projection-free online learning. ICML 2012.
        E. Hazan. Introduction to online convex optimization. Foundations and Trends in Optimization, 2016.
    """

    eta: Array = hyperparameter()
    sigma0: Array = hyperparameter(default=2.0)
    surrogate: str = eqx.field(static=True, default="current")
    needs: ClassVar[Needs] = Needs(constants=("grad_bound", "diameter"))

    def __check_init__(self):
        _checks.positive("eta", self.eta)
        _checks.positive("sigma0", self.sigma0)
        _checks.one_of("surrogate", self.surrogate, ("current", "previous"))

    @property
    def rule(self) -> DecayingStep:
        """The decaying step with ``eta`` and ``sigma0``, summing through round ``t - 1`` if ``"previous"``."""
        return DecayingStep(self.eta, self.sigma0, lagged=self.surrogate == "previous")

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, eta: float | None = None, **overrides: Any) -> "OFW":
        """Hazan (2016, Thm 7.3; not restated by Wan and Zhang): ``eta = D / (2 G T^{3/4})``, ``sigma0 = 2``.

        Needs the constant ``grad_bound`` (G) and ``diameter`` (D) unless ``eta`` is given; ``overrides`` give
        either by name, or constructor arguments (``sigma0``, ``surrogate``).
        """
        info = info.giving(overrides)
        if eta is None:
            who = f"{cls.__name__}.from_theory"
            eta = info.require("diameter", who) / (2.0 * info.require("grad_bound", who) * info.horizon**0.75)
        return cls.build({"eta": eta}, overrides)

    @classmethod
    def regret_bound(cls, info: ProblemInfo) -> float:
        """Hazan (2016), Thm 7.3 (as recalled by Wan and Zhang): ``8 D G T^{3/4}`` on any convex set."""
        return 8 * float(info.domain.diameter) * info.constants.grad_bound * info.horizon**0.75


class OFWLineSearch(AbstractOFW):
    r"""OFW with line search: Algorithm 1 of Wan and Zhang (AAAI 2021), O(T^{2/3}) regret over strongly convex sets.

    Update (after playing ``x_t`` and seeing ``f_t``), with ``S_t = sum_{tau<=t} grad f_tau(x_tau)``:

    \[
    \begin{aligned}
    F_t(x) &= \eta \langle S_t, x \rangle + \|x - x_1\|^2 && \text{(eq. 3; 2-smooth, 2-strongly convex)} \\
    c_t &= \nabla F_t(x_t) = \eta S_t + 2 (x_t - x_1) \\
    v_t &= \operatorname*{arg\,min}_{v \in \mathcal{K}} \langle c_t, v \rangle && \text{(line 5)} \\
    \sigma_t &= \operatorname*{arg\,min}_{s \in [0,1]} s \langle v_t - x_t, c_t \rangle + s^2 \|v_t - x_t\|^2
        = \operatorname{clip}\Big( \frac{\langle c_t, x_t - v_t \rangle}{2 \|v_t - x_t\|^2}, 0, 1 \Big)
        && \text{(line 6; 0 when } v_t = x_t\text{)} \\
    x_{t+1} &= x_t + \sigma_t (v_t - x_t) && \text{(line 7)}
    \end{aligned}
    \]

    Line 6 is the exact minimiser of ``F_t`` on the segment ``[x_t, v_t]`` (``F_t`` has Hessian ``2 I``):
    the step rule `LineSearchStep`. ``x_1`` is ``K.center()``. One LMO call
    per round, warm-started (the LMO state is carried in the learner state), no projection.

    Source: Wan and Zhang, Algorithm 1, eq. (3), Lemma 1. Guarantee (Thm 1): for convex G-Lipschitz losses
    over an alpha_K-strongly convex K (l2) of diameter D, with ``eta = D / (2 G (T+2)^{2/3})``, regret
    <= (11/4) G sqrt(C) (T+2)^{2/3}, ``C = max(4 D^2, 4096 / (3 alpha_K^2))``. alpha_K is not an input: the
    line search adapts to it.

    Args:
        eta: scale of the linear part of the surrogate, > 0 (``from_theory``: ``D / (2 G (T+2)^{2/3})``).

    Readings: the paper has one reading: the surrogate sums the stored gradients ``grad f_tau(x_tau)`` at the
    played points through the current round, and the regulariser ``||x - x_1||^2`` is centred at ``x_1`` and
    not halved (gradient ``2 (x - x_1)``).

    Example:
        >>> import ocokit
        >>> from ocokit.problems import OnlineLinear
        >>> problem = OnlineLinear(ocokit.sets.Box(-1.0, 1.0, dim=3))
        >>> learner = OFWLineSearch.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 100))
        >>> bool(ocokit.run(learner, problem, T=100, record_decisions=True).decisions.max() <= 1.0)
        True

    References:
        Y. Wan and L. Zhang. Projection-free online learning over strongly convex sets. AAAI 2021
        (arXiv:2010.08177).
    """

    eta: Array = hyperparameter()
    needs: ClassVar[Needs] = Needs(constants=("grad_bound", "diameter"))

    def __check_init__(self):
        _checks.positive("eta", self.eta)

    @property
    def rule(self) -> LineSearchStep:
        """The exact line search with ``eta``."""
        return LineSearchStep(self.eta)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, eta: float | None = None, **overrides: Any) -> "OFWLineSearch":
        """Theorem 1 of Wan and Zhang (AAAI 2021): ``eta = D / (2 G (T+2)^{2/3})`` (``grad_bound`` and
        ``diameter`` are read unless ``eta`` is given; ``overrides`` give either by name)."""
        info = info.giving(overrides)
        if eta is None:
            who = f"{cls.__name__}.from_theory"
            eta = info.require("diameter", who) / (
                2.0 * info.require("grad_bound", who) * (info.horizon + 2) ** (2 / 3)
            )
        return cls.build({"eta": eta}, overrides)

    @classmethod
    def regret_bound(cls, info: ProblemInfo) -> float | None:
        """Wan and Zhang (AAAI 2021), Thm 1, on an alpha_K-strongly convex set: ``11/4 G sqrt(C) (T + 2)^{2/3}``,
        ``C = max(4 D^2, 4096 / (3 alpha_K^2))``; ``None`` on other sets."""
        alpha, D = float(info.domain.strong_convexity), float(info.domain.diameter)
        if not alpha:
            return None
        return (
            11
            / 4
            * info.constants.grad_bound
            * math.sqrt(max(4 * D**2, 4096 / (3 * alpha**2)))
            * (info.horizon + 2) ** (2 / 3)
        )


class SCOFW(AbstractOFW):
    r"""SC-OFW: the strongly convex variant of online Frank-Wolfe (Wan and Zhang, AAAI 2021, Algorithm 2).

    Update (after playing ``x_t`` and seeing the lam-strongly convex ``f_t``):

    \[
    \begin{aligned}
    F_t(x) &= \sum_{\tau \le t} \langle \nabla f_\tau(x_\tau), x \rangle + \frac{\lambda}{2} \|x - x_\tau\|^2
        && \text{(eq. 5; } \lambda t\text{-smooth)} \\
    c_t &= \nabla F_t(x_t) = S_t + \lambda (t\, x_t - P_t),
        && S_t = \textstyle\sum_{\tau \le t} \nabla f_\tau(x_\tau),\ P_t = \sum_{\tau \le t} x_\tau \\
    v_t &= \operatorname*{arg\,min}_{v \in \mathcal{K}} \langle c_t, v \rangle && \text{(line 5)} \\
    \sigma_t &= \operatorname{clip}\Big( \frac{\langle c_t, x_t - v_t \rangle}{\lambda t \|v_t - x_t\|^2}, 0, 1 \Big)
        && \text{(line 6; 0 if } v_t = x_t\text{)} \\
    x_{t+1} &= x_t + \sigma_t (v_t - x_t) && \text{(line 7)}
    \end{aligned}
    \]

    Line 6 is the exact line search of ``F_t`` on ``[x_t, v_t]`` (Hessian ``lam t I``): the step rule
    `StronglyConvexStep`. The implementation divides ``F_t`` by t
    (running means ``S_t / t`` and ``P_t / t``, ``beta = lam``), which leaves ``v_t`` and ``sigma_t``
    unchanged and avoids the cancellation in ``t x_t - P_t`` (both terms grow linearly in t). ``x_1`` is
    ``K.center()``. Anytime: no T, D or G is needed.

    Source: Wan and Zhang, Algorithm 2, eq. (5), Lemmas 2 and 6. Guarantees, for lam-strongly convex
    G-Lipschitz losses: Thm 2, over an alpha_K-strongly convex K, regret <= C sqrt(2T) + C ln(T)/2 + G D with
    ``C = max(4 (G + lam D)^2 / lam, 288 lam / alpha_K^2)``; Thm 3, over any convex K of diameter D,
    regret <= 3 sqrt(2) C T^{2/3} / 8 + C ln(T) / 8 + G D with ``C = 16 (G + lam D)^2 / lam``.

    Args:
        lam: the losses' strong-convexity modulus lambda, > 0; must not exceed the true modulus of any f_t
            (an overestimate voids Theorems 2-3, an underestimate inflates C; ``from_theory`` reads
            ``constants.strong_convexity``).

    Readings: the paper's surrogate is eq. (4) of Garber and Hazan (2016) with c = 0 (no
    ``(c lam / 2) ||x - x_1||^2`` term; their c > 0 serves polytopes); the c > 0 variant is not offered.

    Example:
        >>> import ocokit
        >>> from ocokit.problems import OnlineQuadratic
        >>> problem = OnlineQuadratic(ocokit.sets.Box(-1.0, 1.0, dim=3), lam=1.0)
        >>> learner = SCOFW.from_theory(ocokit.algorithms.ProblemInfo.of(problem, 100))
        >>> float(learner.lam)
        1.0

    References:
        Y. Wan and L. Zhang. Projection-free online learning over strongly convex sets. AAAI 2021
        (arXiv:2010.08177).
        D. Garber and E. Hazan. A linearly convergent conditional gradient algorithm with applications to
        online and stochastic optimization. SIAM J. Optim., 2016 (eq. 4).
    """

    lam: Array = hyperparameter()
    needs: ClassVar[Needs] = Needs(constants=("strong_convexity",))

    def __check_init__(self):
        _checks.positive("lam", self.lam)

    @property
    def rule(self) -> StronglyConvexStep:
        """SC-OFW's step with ``lam``."""
        return StronglyConvexStep(self.lam)

    @classmethod
    def from_theory(cls, info: ProblemInfo, *, lam: float | None = None, **overrides: Any) -> "SCOFW":
        """Theorems 2 and 3 of Wan and Zhang (AAAI 2021): ``lam`` = the losses' modulus (the constant
        ``strong_convexity``)."""
        info = info.giving(overrides)
        return cls.build({"lam": info.require("strong_convexity", f"{cls.__name__}.from_theory", lam)}, overrides)

    @classmethod
    def regret_bound(cls, info: ProblemInfo) -> float | None:
        """Wan and Zhang (AAAI 2021) for lam-strongly convex losses (lam > 0; else ``None``): Thm 2 on an
        alpha_K-strongly convex set, ``C sqrt(2T) + C log(T) / 2 + G D`` with ``C = max(4 (G + lam D)^2 / lam,
        288 lam / alpha_K^2)``; Thm 3 on any set, ``3 sqrt(2) C T^{2/3} / 8 + C log(T) / 8 + G D`` with
        ``C = 16 (G + lam D)^2 / lam``."""
        G, lam, T = info.constants.grad_bound, info.constants.strong_convexity, info.horizon
        alpha, D = float(info.domain.strong_convexity), float(info.domain.diameter)
        if not lam > 0:
            return None
        if alpha:
            C = max(4 * (G + lam * D) ** 2 / lam, 288 * lam / alpha**2)
            return C * math.sqrt(2 * T) + C * math.log(T) / 2 + G * D
        C = 16 * (G + lam * D) ** 2 / lam
        return 3 * math.sqrt(2) * C * T ** (2 / 3) / 8 + C * math.log(T) / 8 + G * D

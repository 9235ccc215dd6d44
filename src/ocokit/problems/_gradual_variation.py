"""Problems with a controlled gradual variation and fixed known constraints (paper 004's setting).

S. Qiu and X. Wei, "Beyond O(sqrt(T)) Regret for Constrained Online Optimization: Gradual Variations and Mirror
Prox" (preprint, June 2020), bound regret by the gradual variation
``V_*(T) = sum_{t=1}^T max_{x in X_0} ||grad f^t(x) - grad f^{t-1}(x)||_*^2`` (their eq. 4) under fixed, known
constraints ``g_k(x) <= 0``. The paper never defines ``f^0``; ocokit takes ``grad f^0 = 0``, which only changes the
t = 1 term. The paper is theory only, with no experiments; these two problems are ocokit's, built so that V_* is
computable exactly and set by one ``drift`` knob:

* [`DriftingQuadratic`][ocokit.problems.DriftingQuadratic]: ``f^t(x) = 1/2 ||x - b_t||^2`` on a Euclidean ball with one
  linear and one
  quadratic constraint (ocokit's sanity check: V_* is exact because ``grad f^t - grad f^{t-1} = b_{t-1} - b_t``).
* [`DriftingAllocation`][ocokit.problems.DriftingAllocation]: linear allocation costs ``<l_t, x>`` on the probability
  simplex with a
  budget constraint ``<c, x> <= B``.

In both, the round-t parameter is ``mean + scale (sqrt(1 - drift) u + sqrt(drift) eps_t)`` with ``u`` drawn
once per run and ``eps_t`` fresh i.i.d. standard normal each round (from round t's key, so common random
numbers hold): ``drift = 0`` gives static losses (``V_* = O(1)``, only the t = 1 term), ``drift = 1``
i.i.d. ones (``V_*`` linear in T), with ``E V_* ~ 2 drift scale^2 d T`` in between.
"""

import abc
import dataclasses
import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit import _checks
from ocokit.problems._base import AbstractProblem, ProblemConstants, all_rounds
from ocokit.sets import AbstractSet, L2Ball, Simplex

_NORMS = ("l2", "linf")


def _leaf(value: Any) -> Array:
    return jnp.asarray(value, dtype=float)


def _check_drifting(dim: int, drift: Any, scale: Any) -> None:
    """The arguments every drifting problem takes: ``dim >= 2``, ``drift`` in ``[0, 1]``, ``scale > 0``."""
    _checks.integer("dim", dim, low=2)
    _checks.in_closed_interval("drift", drift, 0.0, 1.0)
    _checks.positive("scale", scale)


def dykstra_projection(point: Array, projections, iterations: int = 20000) -> Array:
    """Euclidean projection of ``point`` onto an intersection of convex sets, by Dykstra's algorithm.

    ``projections`` are the sets' own projections (closed forms); cycling through them with Dykstra's
    correction increments converges to the projection onto the intersection (Boyle and Dykstra 1986),
    linearly when the intersection has an interior point. Pure and jit/vmap safe (a ``fori_loop`` of
    fixed length); the offline comparator of [`DriftingQuadratic`][ocokit.problems.DriftingQuadratic] (Qiu and Wei's
    regret, eq. 1, compares
    with the best point of the feasible set X, not of ``X_0``).
    """

    def sweep(_, carry):
        x, increments = carry
        new = []
        for k, project in enumerate(projections):
            y = project(x + increments[k])
            new.append(x + increments[k] - y)
            x = y
        return x, jnp.stack(new)

    increments = jnp.zeros((len(projections), *point.shape), point.dtype)
    return jax.lax.fori_loop(0, iterations, sweep, (point, increments))[0]


def _project_ball(x: Array, center: Array, radius: Any) -> Array:
    d = x - center
    n = jnp.linalg.norm(d)
    return center + d * jnp.minimum(1.0, radius / jnp.where(n > 0, n, 1.0))


def _gaussian(key: PRNGKeyArray, like: Array) -> Array:
    """A standard normal vector with the shape and dtype of ``like`` (the persistent ``u`` and each ``eps_t``)."""
    return jax.random.normal(key, like.shape, dtype=like.dtype)


def _drifted(u: Array, key: PRNGKeyArray, drift: Any) -> Array:
    """``sqrt(1 - drift) u + sqrt(drift) eps_t``, with ``eps_t`` drawn from round t's key (the module's drift model)."""
    eps = _gaussian(key, u)
    return jnp.sqrt(1 - drift) * u + jnp.sqrt(drift) * eps


def _unit(dim: int, i: int) -> Array:
    return jnp.zeros((dim,)).at[i].set(1.0)


class AbstractDriftingProblem(AbstractProblem):
    """A problem of this module: fixed known constraints, and a round-t parameter drifting around its mean ``m``.

    Round t's parameter is ``m + scale (sqrt(1 - drift) u + sqrt(drift) eps_t)`` (`drifted`), with ``u``
    the episode (drawn once per run, `episode`) and ``eps_t`` drawn from round t's key. A concrete
    problem declares ``domain``, ``drift``, ``scale``, the mean ``m`` (`drift_mean`) and
    ``fixed_constraints``; the constraints of every round are those.
    """

    domain: eqx.AbstractVar[AbstractSet]
    drift: eqx.AbstractVar[Float[Array, ""]]
    scale: eqx.AbstractVar[float]
    constraints_fixed: ClassVar[bool] = True

    @abc.abstractmethod
    def drift_mean(self) -> Float[Array, " d"]:
        """``m``, the mean of the round parameters."""

    @abc.abstractmethod
    def fixed_constraints(self, x: Float[Array, " d"]) -> Float[Array, " K"]:
        """``g(x)``: the same every round (known in advance)."""

    @property
    def dim(self) -> int:
        return self.domain.shape[0]

    def episode(self, key, T):
        del T
        return _gaussian(key, self.drift_mean())  # u, the persistent part

    def drifted(self, episode: Array, key: PRNGKeyArray) -> Float[Array, " d"]:
        """``m + scale (sqrt(1 - drift) u + sqrt(drift) eps_t)``, ``eps_t`` from round t's ``key``."""
        return self.drift_mean() + self.scale * _drifted(episode, key, self.drift)

    def constraints(self, data, x):
        del data
        return self.fixed_constraints(x)

    def parameters(self, episode: Any, env_key: Any, T: int) -> Float[Array, "T d"]:
        """The round data of rounds 1..T of a run (regenerated from the keys exactly as the engine draws them)."""
        return all_rounds(self, episode, env_key, T)


class DriftingQuadratic(AbstractDriftingProblem):
    """Drifting quadratic targets on a Euclidean ball with a linear and a quadratic fixed constraint.

    Round t: ``f^t(x) = 1/2 ||x - b_t||_2^2`` on ``X_0 = {||x||_2 <= radius}`` with
    ``b_t = m + scale (sqrt(1 - drift) u + sqrt(drift) eps_t)``, ``u ~ N(0, I)`` once per run and
    ``eps_t ~ N(0, I)`` from round t's key, ``m = 0.7 e_1 + 0.4 e_2``. Fixed known constraints (K = 2)::

        g_1(x) = x_1 - 0.3 <= 0,        g_2(x) = ||x - p||_2^2 - 0.8^2 <= 0,   p = -0.4 e_2,

    both active at the comparator for typical runs (``m`` violates both). Slater point ``x = 0`` with slack
    ``min{0.3, 0.64 - 0.16} = 0.3``. Gradual variation (eq. 4, ``grad f^0 = 0``):
    ``V_*(T) = (radius + ||b_1||)^2 + sum_{t>=2} ||b_t - b_{t-1}||^2``
    ([`gradient_variation`][ocokit.problems.DriftingQuadratic.gradient_variation]).
    ``best_fixed`` is ``Pi_X(mean_t b_t)``, the projection onto ``X_0`` and both constraints (the comparator
    of Qiu and Wei's eq. 1 lies in X), by `dykstra_projection` (objective error below 1e-10 against
    CLARABEL in the tests).

    Args:
        dim: dimension d >= 2.
        drift: in ``[0, 1]``, the fraction of the target's variance redrawn each round (0: static,
            ``V_* = O(1)``; 1: i.i.d., ``V_*`` linear in T); a numeric leaf.
        scale: spread of the targets, > 0 (default 0.3).
        radius: radius of the ball X_0, >= 1 (default 1).

    Example:
        >>> import ocokit
        >>> problem = DriftingQuadratic(dim=3, drift=0.1)
        >>> traj = ocokit.run(ocokit.algorithms.OGD(eta=0.1), problem, T=30)
        >>> traj.constraints.shape, traj.comparator_loss.shape
        ((30, 2), (30,))
    """

    domain: L2Ball
    drift: Float[Array, ""]
    scale: float = eqx.field(static=True)
    radius: float = eqx.field(static=True)
    mean: Float[Array, " d"]
    normal: Float[Array, " d"]  # a, in g_1 = <a, x> - level
    level: Float[Array, ""]
    center2: Float[Array, " d"]  # p, in g_2 = ||x - p||^2 - q^2
    radius2: Float[Array, ""]  # q

    def __init__(self, dim: int = 5, drift: float = 0.0, scale: float = 0.3, radius: float = 1.0):
        _check_drifting(dim, drift, scale)
        _checks.in_closed_interval("radius", radius, 1.0, math.inf)
        self.domain = L2Ball(dim, radius=radius)
        self.drift, self.scale, self.radius = _leaf(drift), float(scale), float(radius)
        self.mean = 0.7 * _unit(dim, 0) + 0.4 * _unit(dim, 1)
        self.normal, self.level = _unit(dim, 0), _leaf(0.3)
        self.center2, self.radius2 = -0.4 * _unit(dim, 1), _leaf(0.8)

    num_constraints: ClassVar[int] = 2

    def drift_mean(self):
        return self.mean

    def round_data(self, episode, key, t):
        return self.drifted(episode, key)

    def loss(self, data, x):
        return 0.5 * jnp.sum((x - data) ** 2)

    def fixed_constraints(self, x: Float[Array, " d"]) -> Float[Array, " 2"]:
        """``g(x) = (x_1 - 0.3, ||x - p||^2 - 0.64)``: the same every round (known in advance)."""
        quadratic = jnp.sum((x - self.center2) ** 2) - self.radius2**2
        return jnp.stack([jnp.dot(self.normal, x) - self.level, quadratic])

    def targets(self, episode: Any, env_key: Any, T: int) -> Float[Array, "T d"]:
        """``b_1, ..., b_T`` of a run (`parameters`)."""
        return self.parameters(episode, env_key, T)

    def gradient_variation(self, episode: Any, env_key: Any, T: int) -> Float[Array, ""]:
        """Exact ``V_*(T)`` of eq. (4), ``grad f^0 = 0`` (l2; ``grad f^t - grad f^{t-1} = b_{t-1} - b_t``)."""
        b = self.targets(episode, env_key, T)
        first = (self.radius + jnp.linalg.norm(b[0])) ** 2
        return first + jnp.sum((b[1:] - b[:-1]) ** 2)

    def best_fixed(self, episode, env_key, T):
        m = jnp.mean(self.targets(episode, env_key, T), axis=0)
        return self.project_feasible(m)

    def project_feasible(self, y: Float[Array, " d"]) -> Float[Array, " d"]:
        """``Pi_X(y)``: the Euclidean projection onto ``X = X_0 and {g_1 <= 0, g_2 <= 0}`` (Dykstra)."""
        a, level = self.normal, self.level

        def halfspace(x):
            return x - jnp.maximum(jnp.dot(a, x) - level, 0.0) * a / jnp.dot(a, a)

        return dykstra_projection(
            y,
            (
                lambda x: _project_ball(x, jnp.zeros_like(x), self.radius),
                halfspace,
                lambda x: _project_ball(x, self.center2, self.radius2),
            ),
        )

    def slater(self) -> tuple[Float[Array, " d"], float]:
        """A Slater point and its slack: ``(0, 0.3)`` (``g_k(0) <= -0.3`` for both k)."""
        return jnp.zeros((self.dim,)), 0.3

    def constants(self) -> ProblemConstants:
        """Assumption 2.1 of Qiu and Wei 2020 (l2): ``L_f = 1``, ``L_g = 2``, ``G = (r + 0.3) + max((r + 0.4)^2 -
        0.64, 0.64)`` (the sum of ``|x_1 - 0.3|`` and ``|||x - p||^2 - q^2|``), ``H = 1 + 2 (r + 0.4)``."""
        r, d, s = self.radius, self.dim, self.scale
        g1, g2 = r + 0.3, max((r + 0.4) ** 2 - 0.64, 0.64)  # |x_1 - 0.3|, |||x - p||^2 - q^2|
        return ProblemConstants(
            grad_bound=r + math.hypot(0.7, 0.4) + s * (math.sqrt(2 * d) + 4.0),  # w.h.p. bound on ||x - b_t||
            constraint_bound=max(r + 0.3, (r + 0.4) ** 2 - 0.64, 0.64),
            constraint_grad_bound=2.0 * (r + 0.4),
            smoothness=1.0,
            constraint_smoothness=2.0,
            constraint_sum_bound=g1 + g2,
            constraint_grad_sum_bound=1.0 + 2.0 * (r + 0.4),
        )


class DriftingAllocation(AbstractDriftingProblem):
    """Allocation of one unit over d options with drifting linear costs and a fixed budget constraint.

    Round t: ``f^t(x) = <l_t, x>`` on the probability simplex ``Delta_d`` with
    ``l_t = clip(mu + scale (sqrt(1 - drift) u + sqrt(drift) eps_t), 0, 1)``, ``u`` once per run, ``eps_t``
    from round t's key. Option i has a fixed price ``c_i = i / (d - 1)`` and a mean loss
    ``mu_i = 0.25 + 0.5 (1 - c_i)``: the better options cost more, and the budget (K = 1)::

        g(x) = <c, x> - budget <= 0

    binds (a portfolio-style trade-off). Slater point ``e_1`` with slack ``budget``. The gradual variation
    in l_inf (Algorithm 2's ``V_inf``) or l2 is exact
    ([`gradient_variation`][ocokit.problems.DriftingAllocation.gradient_variation]), and ``best_fixed``
    solves the linear program over ``Delta_d`` and the budget exactly, by enumerating its vertices
    (options alone, or two options mixed to spend the budget exactly), O(d^2).

    Args:
        dim: number d >= 2 of options.
        drift: in ``[0, 1]``: 0 static costs (``V = O(1)``), 1 i.i.d. costs (``V`` linear in T).
        scale: spread of the costs, > 0 (default 0.2).
        budget: B in ``(0, 1)`` (default 0.35).

    Example:
        >>> import ocokit
        >>> problem = DriftingAllocation(dim=4)
        >>> ocokit.run(ocokit.algorithms.OGD(eta=0.1), problem, T=20).constraints.shape
        (20, 1)
    """

    domain: Simplex
    drift: Float[Array, ""]
    scale: float = eqx.field(static=True)
    budget: float = eqx.field(static=True)
    price: Float[Array, " d"]
    mu: Float[Array, " d"]

    def __init__(self, dim: int = 16, drift: float = 0.0, scale: float = 0.2, budget: float = 0.35):
        _check_drifting(dim, drift, scale)
        _checks.in_open_interval("budget", budget, 0.0, 1.0)
        self.domain = Simplex(dim)
        self.drift, self.scale, self.budget = _leaf(drift), float(scale), float(budget)
        self.price = jnp.linspace(0.0, 1.0, dim)
        self.mu = 0.25 + 0.5 * (1.0 - self.price)

    num_constraints: ClassVar[int] = 1

    def drift_mean(self):
        return self.mu

    def round_data(self, episode, key, t):
        return jnp.clip(self.drifted(episode, key), 0.0, 1.0)

    def loss(self, data, x):
        return jnp.dot(data, x)

    def fixed_constraints(self, x: Float[Array, " d"]) -> Float[Array, " 1"]:
        """``g(x) = <c, x> - budget`` (the same every round, known in advance)."""
        return jnp.reshape(jnp.dot(self.price, x) - self.budget, (1,))

    def costs(self, episode: Any, env_key: Any, T: int) -> Float[Array, "T d"]:
        """``l_1, ..., l_T`` of a run (`parameters`)."""
        return self.parameters(episode, env_key, T)

    def gradient_variation(self, episode: Any, env_key: Any, T: int, norm: str = "linf") -> Float[Array, ""]:
        """Exact ``V(T) = ||l_1||^2 + sum_{t>=2} ||l_t - l_{t-1}||^2`` in ``"linf"`` (V_inf) or ``"l2"``."""
        _checks.one_of("norm", norm, _NORMS)
        ell = self.costs(episode, env_key, T)
        diffs = jnp.concatenate([ell[:1], ell[1:] - ell[:-1]])
        per = jnp.max(jnp.abs(diffs), axis=1) if norm == "linf" else jnp.linalg.norm(diffs, axis=1)
        return jnp.sum(per**2)

    def best_fixed(self, episode, env_key, T):
        return self._lp_vertex(jnp.sum(self.costs(episode, env_key, T), axis=0))

    def _lp_vertex(self, L: Float[Array, " d"]) -> Float[Array, " d"]:
        """``argmin_{x in Delta, <c, x> <= B} <L, x>`` by enumerating the polytope's vertices."""
        c, B, d = self.price, self.budget, self.dim
        single = jnp.where(c <= B, L, jnp.inf)  # e_i, feasible when c_i <= B
        ci, cj = c[:, None], c[None, :]
        spans = (ci < B) & (cj > B)  # theta e_i + (1 - theta) e_j with <c, x> = B
        theta = jnp.where(spans, (cj - B) / jnp.where(spans, cj - ci, 1.0), 0.0)
        pair = jnp.where(spans, theta * L[:, None] + (1 - theta) * L[None, :], jnp.inf)
        best_single, best_pair = jnp.argmin(single), jnp.argmin(pair)
        i, j = best_pair // d, best_pair % d
        th = theta[i, j]
        x_pair = jnp.zeros((d,), L.dtype).at[i].add(th).at[j].add(1 - th)
        x_single = jnp.zeros((d,), L.dtype).at[best_single].set(1.0)
        return jnp.where(pair[i, j] < single[best_single], x_pair, x_single)

    def slater(self) -> tuple[Float[Array, " d"], float]:
        """A Slater point and its slack: ``(e_1, budget)``."""
        return jnp.zeros((self.dim,)).at[0].set(1.0), self.budget

    def _price_norm(self) -> float:
        """``||c||_2`` of ``c_i = i / (d - 1)``, from the static dimension (usable under jit)."""
        d = self.dim
        return math.sqrt((d - 1) * d * (2 * d - 1) / 6) / (d - 1)

    constant_norms: ClassVar[tuple[str, ...]] = ("linf",)

    def constants_in(self, norm: str) -> ProblemConstants:
        """The constants in l_inf (Algorithm 2's dual norm): ``||l_t||_inf <= 1``, ``H = ||c||_inf = 1``."""
        _checks.one_of("norm", norm, self.constant_norms)
        return dataclasses.replace(self.constants(), grad_bound=1.0, constraint_grad_bound=1.0,
                                   constraint_grad_sum_bound=1.0)  # fmt: skip

    def constants(self) -> ProblemConstants:
        """Linear losses and constraint (``L_f = L_g = 0``), ``G = max(B, 1 - B)``, ``H = ||c||_2``."""
        B = self.budget
        return ProblemConstants(
            grad_bound=math.sqrt(self.dim),  # ||l_t||_2 with l_t in [0, 1]^d (1 in l_inf)
            loss_bound=1.0,
            constraint_bound=max(B, 1.0 - B),
            constraint_grad_bound=self._price_norm(),
            smoothness=0.0,
            constraint_smoothness=0.0,
            constraint_sum_bound=max(B, 1.0 - B),
            constraint_grad_sum_bound=self._price_norm(),
        )

"""Synthetic unconstrained OCO over a decision set: linear and strongly convex quadratic losses (paper 001).

Both problems have closed-form comparators, so static regret is exact on any set with an exact LMO (linear
losses) or an exact projection (quadratic losses). They are the workloads of the ``strongly-convex-sets``
experiment: the paper has no experiments, so ocokit checks its regret bounds (Theorems 1-3) on linear losses
with bounded gradients for OFW and on ``(lam/2)||x - z_t||^2`` for SC-OFW (comparator ``Pi_K(mean_t z_t)``).

Reference: Y. Wan and L. Zhang, "Projection-free Online Learning over Strongly Convex Sets", AAAI 2021
(arXiv:2010.08177).
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from ocokit import _checks
from ocokit.problems._base import AbstractProblem, ProblemConstants, round_at
from ocokit.sets import AbstractSet


def _unit(key, shape, dtype) -> Array:
    """A point uniform on the unit sphere of arrays of ``shape`` (Frobenius norm)."""
    g = jax.random.normal(key, shape, dtype=dtype)
    return g / jnp.linalg.norm(g.ravel())


def _check_domain(domain) -> None:
    if not isinstance(domain, AbstractSet):
        raise ValueError(f"domain must be an ocokit set (ocokit.sets), got {type(domain).__name__}")


def _sum_over_rounds(problem: AbstractProblem, episode, env_key, T, field: str) -> Array:
    """``sum_{t=1}^T data_t[field]``, round t's data from ``fold_in(env_key, t)`` (O(dim) memory).

    A ``fori_loop``, so ``T`` may also be traced (the ``strongly-convex-sets`` experiment vmaps it).
    """
    x0 = problem.domain.center()

    def body(t, acc):
        return acc + round_at(problem, episode, env_key, t)[field]

    return jax.lax.fori_loop(1, T + 1, body, jnp.zeros_like(x0))


class OnlineLinear(AbstractProblem):
    """Online linear optimisation over K with a drifting random cost: ``f_t(x) = <theta_t, x>``.

    ``theta_t = drift * u + noise * w_t``: ``u`` is a unit direction drawn once per run (``episode``),
    ``w_t`` is uniform on the unit sphere, fresh each round. So ``||theta_t|| <= drift + noise = G``. No
    long-term constraints (N = 0).

    Comparators: ``best_fixed = lmo(sum_t theta_t)`` (exact for any set with an exact LMO) and
    ``round_optimum = lmo(theta_t)``.

    Args:
        domain: the decision set K (any [`AbstractSet`][ocokit.sets.AbstractSet]).
        drift: norm of the mean cost, >= 0.
        noise: radius of the per-round perturbation, >= 0; ``drift + noise > 0``.

    Example:
        >>> import ocokit
        >>> problem = OnlineLinear(ocokit.sets.Box(-1.0, 1.0, dim=2), drift=1.0, noise=0.5)
        >>> problem.constants().grad_bound
        1.5
    """

    domain: AbstractSet
    drift: float = eqx.field(static=True)
    noise: float = eqx.field(static=True)
    radius_bound: float = eqx.field(static=True)  # max_{x in K} ||x||, bounded by ||center|| + D

    def __init__(self, domain: AbstractSet, drift: float = 1.0, noise: float = 1.0):
        _check_domain(domain)
        _checks.nonnegative("drift", drift)
        _checks.nonnegative("noise", noise)
        _checks.positive("drift + noise", drift + noise)
        self.domain, self.drift, self.noise = domain, float(drift), float(noise)
        self.radius_bound = float(jnp.linalg.norm(domain.center().ravel()) + domain.diameter)

    num_constraints: ClassVar[int] = 0

    def episode(self, key, T):
        del T
        x0 = self.domain.center()
        return {"direction": _unit(key, x0.shape, x0.dtype)}

    def round_data(self, episode, key, t):
        x0 = self.domain.center()
        w = _unit(key, x0.shape, x0.dtype)
        return {"theta": self.drift * episode["direction"] + self.noise * w}

    def loss(self, data, x):
        return jnp.vdot(data["theta"].ravel(), x.ravel())

    def constraints(self, data, x):
        return jnp.zeros((0,), dtype=x.dtype)

    def constants(self) -> ProblemConstants:
        G = self.drift + self.noise
        return ProblemConstants(grad_bound=G, loss_bound=G * self.radius_bound, strong_convexity=0.0, smoothness=0.0)

    def best_fixed(self, episode, env_key, T) -> Array:
        return self.domain.lmo(_sum_over_rounds(self, episode, env_key, T, "theta"))

    def round_optimum(self, data) -> Array:
        return self.domain.lmo(data["theta"])


class OnlineQuadratic(AbstractProblem):
    """Strongly convex online quadratic losses ``f_t(x) = (lam/2) ||x - z_t||^2`` over K.

    ``z_t = center(K) + offset * u + noise * w_t``: ``u`` is a unit direction drawn once per run, ``w_t``
    uniform on the unit sphere each round. With ``offset`` beyond K's extent the best fixed point lies on
    the boundary of K, where the set's curvature matters. No long-term constraints (N = 0).

    Comparators: ``best_fixed = project_K(mean_t z_t)`` (``argmin_K sum_t f_t``; exact whenever the set's
    ``project`` is) and ``round_optimum = project_K(z_t)``. Constants: strong convexity and smoothness
    ``lam``; gradient bound ``lam (D + offset + noise)``, since
    ``||x - z_t|| <= ||x - center|| + ||center - z_t||``.

    Args:
        domain: the decision set K (its ``project`` is used for the comparators only).
        lam: the strong-convexity modulus lambda, > 0.
        offset: distance of the mean target from K's centre, >= 0.
        noise: radius of the per-round perturbation of the target, >= 0.

    Example:
        >>> import ocokit
        >>> problem = OnlineQuadratic(ocokit.sets.Box(-1.0, 1.0, dim=2), lam=2.0)
        >>> problem.constants().strong_convexity
        2.0
    """

    domain: AbstractSet
    lam: float = eqx.field(static=True)
    offset: float = eqx.field(static=True)
    noise: float = eqx.field(static=True)
    diameter_bound: float = eqx.field(static=True)

    def __init__(self, domain: AbstractSet, lam: float = 1.0, offset: float = 2.0, noise: float = 1.0):
        _check_domain(domain)
        _checks.positive("lam", lam)
        _checks.nonnegative("offset", offset)
        _checks.nonnegative("noise", noise)
        self.domain, self.lam = domain, float(lam)
        self.offset, self.noise = float(offset), float(noise)
        self.diameter_bound = float(domain.diameter)

    num_constraints: ClassVar[int] = 0

    def episode(self, key, T):
        del T
        x0 = self.domain.center()
        return {"target": x0 + self.offset * _unit(key, x0.shape, x0.dtype)}

    def round_data(self, episode, key, t):
        x0 = self.domain.center()
        return {"z": episode["target"] + self.noise * _unit(key, x0.shape, x0.dtype)}

    def loss(self, data, x):
        r = (x - data["z"]).ravel()
        return 0.5 * self.lam * jnp.vdot(r, r)

    def constraints(self, data, x):
        return jnp.zeros((0,), dtype=x.dtype)

    def constants(self) -> ProblemConstants:
        reach = self.diameter_bound + self.offset + self.noise
        return ProblemConstants(
            grad_bound=self.lam * reach,
            loss_bound=0.5 * self.lam * reach**2,
            strong_convexity=self.lam,
            smoothness=self.lam,
        )

    def best_fixed(self, episode, env_key, T) -> Array:
        return self.domain.project(_sum_over_rounds(self, episode, env_key, T, "z") / T)

    def round_optimum(self, data) -> Array:
        return self.domain.project(data["z"])

"""The K-sparse polytope: the convex hull of K-sparse vectors with entries in ``[-tau, tau]``."""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.sets._balls import _arg, _check_scale, _dtype_of, _float_leaf, _nan_through
from ocokit.sets._base import AbstractSet


def _capped_mass(a_sorted: Array, prefix: Array, theta: Array, tau: Array) -> Array:
    """``f(theta) = sum_i min(max(a_i - theta, 0), tau)`` at every entry of ``theta`` (vectorised).

    ``f(theta) = g(theta) - g(theta + tau)`` with ``g(t) = sum_i max(a_i - t, 0)``, read off the sorted
    ``a`` and its prefix sums in O(log d) per point.
    """
    d = a_sorted.shape[0]

    def g(t):
        below = jnp.searchsorted(a_sorted, t, side="right")  # how many a_i <= t
        return (prefix[-1] - prefix[below]) - t * (d - below).astype(prefix.dtype)

    return g(theta) - g(theta + tau)


class KSparsePolytope(AbstractSet):
    """The K-sparse polytope ``P = conv{x in R^d : ||x||_0 <= K, ||x||_inf <= tau}``.

    For an integer ``K >= 1`` this is ``P = {x in R^d : ||x||_inf <= tau, ||x||_1 <= K tau}`` (Garber and
    Hazan 2016; FrankWolfe.jl's ``KSparseLMO``); its vertices have exactly ``min(K, d)`` nonzero entries,
    each ``± tau``. For ``K >= d`` it is the box ``[-tau, tau]^d``; for ``K = 1`` the l1 ball of radius tau.

    lmo: ``v_i = -tau sign(d_i)`` on the ``min(K, d)`` coordinates of largest ``|d_i|``, zero elsewhere.
    Ties in ``|d_i|`` take the lowest indices (a stable sort), and a chosen entry ``d_i = 0`` (of either
    sign) gets ``+tau``, so the result is always a vertex: a zero direction gives ``tau (e_0 + ... +
    e_{K-1})``. O(d log d).

    project: exact. If ``clip(x, -tau, tau)`` has ``||.||_1 <= K tau`` it is the projection; otherwise
    ``P(x)_i = sign(x_i) min(max(|x_i| - theta, 0), tau)`` with the unique ``theta > 0`` such that
    ``sum_i min(max(|x_i| - theta, 0), tau) = K tau`` (the KKT conditions). That sum is piecewise linear
    in theta with breakpoints ``|x_i|`` and ``|x_i| - tau``; ocokit sorts the breakpoints, evaluates the
    sum at all of them by prefix sums, and solves the linear piece that crosses ``K tau`` on its active
    set. O(d log d), no iteration.

    Geometry: ``diameter = 2 tau sqrt(min(K, d))`` (two opposite vertices), ``inner_radius = tau min(1,
    K / sqrt(d))`` (the l2 ball of radius r is in the box iff ``r <= tau`` and in the l1 ball iff
    ``r sqrt(d) <= K tau``), ``center = 0``; ``scaled(s)`` multiplies tau by s.

    Args:
        dim: the dimension d (static, ``>= 1``).
        K: the sparsity, an integer ``>= 1`` (static; ``K > d`` is allowed and gives the box).
        tau: the bound ``tau > 0`` on every entry; a numeric leaf, so it can be batched (vmap).

    Example:
        >>> import jax.numpy as jnp
        >>> from ocokit.sets import KSparsePolytope
        >>> P = KSparsePolytope(4, K=2, tau=1.0)
        >>> P.lmo(jnp.array([0.5, -3.0, 0.0, 2.0]))
        Array([ 0.,  1.,  0., -1.], dtype=float32)
        >>> P.project(jnp.array([3.0, 1.5, 1.0, 0.0]))
        Array([1.  , 0.75, 0.25, 0.  ], dtype=float32)

    References:
        D. Garber and E. Hazan, "A linearly convergent variant of the conditional gradient algorithm under
        strong convexity, with applications to online and stochastic optimization", SIAM J. Optim., 2016.
        M. Besançon, A. Carderera and S. Pokutta, "FrankWolfe.jl: a high-performance and flexible toolbox
        for Frank-Wolfe algorithms and conditional gradients", INFORMS J. Comput., 2022 (``KSparseLMO``).
    """

    dim: int = eqx.field(static=True)
    K: int = eqx.field(static=True)
    tau: Float[Array, ""] = eqx.field(converter=_float_leaf, default=1.0)

    def __check_init__(self):
        _checks.positive_int("dim", self.dim)
        _checks.positive_int("K", self.K)
        _checks.positive("tau", self.tau)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.dim,)

    def lmo(self, direction: Float[Array, " d"]) -> Float[Array, " d"]:
        direction = _arg(self, "lmo", "direction", direction)
        dtype = _dtype_of(direction)
        k = min(self.K, self.dim)
        top = jnp.argsort(-jnp.abs(direction), stable=True)[:k]  # largest |d_i|, lowest index on ties
        tau = self.tau.astype(dtype)
        signs = jnp.where(direction[top] > 0, -tau, tau)
        return _nan_through(jnp.zeros(self.shape, dtype).at[top].set(signs), direction)

    def project(self, x: Float[Array, " d"]) -> Float[Array, " d"]:
        x = _arg(self, "project", "x", x)
        dtype = _dtype_of(x)
        x = x.astype(dtype)
        tau = self.tau.astype(dtype)
        budget = self.K * tau
        a = jnp.abs(x)
        clipped = jnp.minimum(a, tau)
        inside = jnp.sum(clipped) <= budget

        a_sorted = jnp.sort(a)
        prefix = jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(a_sorted)])
        breaks = jnp.sort(jnp.maximum(jnp.concatenate([jnp.zeros(1, dtype), a, a - tau]), 0))
        mass = _capped_mass(a_sorted, prefix, breaks, tau)  # nonincreasing, 0 at the last breakpoint
        j = jnp.clip(jnp.argmax(mass <= budget), 1, breaks.shape[0] - 1)  # theta in [breaks[j-1], breaks[j]]
        lo, hi = breaks[j - 1], breaks[j]
        mid = (lo + hi) / 2  # classify on the open piece: no breakpoint lies strictly inside it
        free = (a - tau < mid) & (mid < a)
        n_free = jnp.sum(free)
        n_capped = jnp.sum(a - tau >= mid).astype(dtype)
        theta = (jnp.sum(jnp.where(free, a, 0)) + n_capped * tau - budget) / jnp.maximum(n_free, 1).astype(dtype)
        theta = jnp.clip(jnp.where(n_free > 0, theta, lo), lo, hi)
        on_boundary = jnp.sign(x) * jnp.clip(a - theta, 0, tau)
        return jnp.where(inside, jnp.sign(x) * clipped, on_boundary)

    def contains(self, x: Float[Array, " d"], atol: float = 1e-8) -> Any:
        x = _arg(self, "contains", "x", x)
        a = jnp.abs(x)
        return jnp.all(a <= self.tau + atol) & (jnp.sum(a) <= self.K * self.tau + atol)

    @property
    def diameter(self) -> Float[Array, ""]:
        return 2 * math.sqrt(min(self.K, self.dim)) * self.tau

    @property
    def inner_radius(self) -> Float[Array, ""]:
        return min(1.0, self.K / math.sqrt(self.dim)) * self.tau

    def center(self) -> Float[Array, " d"]:
        return jnp.zeros(self.shape, self.tau.dtype)

    def scaled(self, s: Any) -> KSparsePolytope:
        _check_scale(s)
        return eqx.tree_at(lambda k: k.tau, self, s * self.tau)

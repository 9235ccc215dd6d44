"""The (scaled, shifted) probability simplex and its capped, full-dimensional version."""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.sets._balls import _arg, _check_scale, _dtype_of, _float_leaf, _nan_through
from ocokit.sets._base import AbstractSet, simplex_projection


class Simplex(AbstractSet):
    """The probability simplex ``K = offset + radius * Delta``, or its capped version.

    * ``capped=False`` (default): ``Delta = {z in R^d : z >= 0, sum_i z_i = 1}``, so with the defaults
      ``K = {x >= 0, sum x = 1}``, the probability simplex; ``radius`` r sets the total mass.
    * ``capped=True``: ``Delta = {z >= 0, sum_i z_i <= 1}``, so ``K = {x >= 0, sum x <= r}`` (full
      dimensional; the corner ``0`` is a vertex).

    ``offset`` (a scalar ``o``, default 0) shifts every coordinate: ``K = {x >= o, sum (x - o) = r}`` (or
    ``<= r``). It exists so that `scaled` stays a ``Simplex``: ``center + s (K - center)`` is the
    simplex of radius ``s r`` shifted to ``o + (1 - s) (center - o)``.

    lmo: ``o + r e_i`` at ``i = argmin_j d_j`` (lowest index on ties, so a zero direction gives
    ``o + r e_0``). Capped: ``o + r e_i`` if ``min_j d_j < 0``, else the corner ``o 1`` (so a zero or a
    nonnegative direction gives the corner). O(d). project: sort-based, O(d log d) (wraps
    ``optax.projections.projection_simplex``, Duchi et al. 2008); capped: ``max(x - o, 0)`` when that
    has mass ``<= r``, else the simplex projection. contains: every ``x_i >= o - atol`` and
    ``|sum (x - o) - r| <= atol`` (capped: ``sum (x - o) <= r + atol``).

    Geometry (d = dim):

    * ``capped=False``: K is not full-dimensional, so ``inner_radius`` is **relative to its affine hull**
      ``{sum x = d o + r}``: the ball ``B(center, r / sqrt(d (d - 1)))`` intersected with that hyperplane
      lies in K, with ``center = o + r / d``. ``diameter = r sqrt(2)``. A bandit method that perturbs
      the centre must do so inside the hyperplane (directions with zero sum).
    * ``capped=True``: the inscribed ball has radius ``rho = r / (d + sqrt(d))`` and centre ``o + rho``;
      ``diameter = r sqrt(2)`` for ``d >= 2`` (``r`` for ``d = 1``).

    Args:
        dim: the dimension d (static; ``>= 2`` for the probability simplex, ``>= 1`` when capped).
        radius: r > 0, the total mass; a numeric leaf, so it can be batched.
        capped: ``False`` for ``sum = r``, ``True`` for ``sum <= r`` (static).
        offset: the shift o of every coordinate (a finite scalar, default 0).

    Example:
        >>> import jax.numpy as jnp
        >>> from ocokit.sets import Simplex
        >>> Simplex(3).lmo(jnp.array([0.5, -1.0, 2.0]))
        Array([0., 1., 0.], dtype=float32)
        >>> Simplex(3, capped=True).lmo(jnp.array([0.5, 1.0, 2.0]))
        Array([0., 0., 0.], dtype=float32)

    References:
        J. Duchi, S. Shalev-Shwartz, Y. Singer and T. Chandra, "Efficient projections onto the l1-ball
        for learning in high dimensions", ICML 2008.
    """

    dim: int = eqx.field(static=True)
    radius: Float[Array, ""] = eqx.field(converter=_float_leaf, default=1.0)
    capped: bool = eqx.field(static=True, default=False)
    offset: Float[Array, ""] = eqx.field(converter=_float_leaf, default=0.0)

    def __check_init__(self):
        if not isinstance(self.capped, bool):
            raise ValueError(f"capped must be True or False, got {self.capped!r}")
        _checks.positive_int("dim", self.dim)
        if not self.capped and self.dim < 2:
            raise ValueError(f"dim must be >= 2 for the probability simplex (capped=False), got {self.dim}")
        _checks.positive("radius", self.radius)
        arr = _checks._concrete(self.offset)
        if arr is not None and not np.all(np.isfinite(arr)):
            raise ValueError(f"offset must be finite, got {arr}")

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.dim,)

    def _unit_center(self) -> float:
        """The centre's coordinate for ``radius = 1, offset = 0``."""
        return 1 / (self.dim + math.sqrt(self.dim)) if self.capped else 1 / self.dim

    def lmo(self, direction: Float[Array, " d"]) -> Float[Array, " d"]:
        direction = _arg(self, "lmo", "direction", direction)
        dtype = _dtype_of(direction)
        i = jnp.argmin(direction)
        r, o = self.radius.astype(dtype), self.offset.astype(dtype)
        mass = r if not self.capped else jnp.where(direction[i] < 0, r, jnp.zeros((), dtype))
        return _nan_through(jnp.full(self.shape, o, dtype).at[i].add(mass), direction)

    def project(self, x: Float[Array, " d"]) -> Float[Array, " d"]:
        x = _arg(self, "project", "x", x)
        dtype = _dtype_of(x)
        r, o = self.radius.astype(dtype), self.offset.astype(dtype)
        z = x.astype(dtype) - o
        on_simplex = simplex_projection(z, r)
        if self.capped:
            clipped = jnp.maximum(z, 0)
            on_simplex = jnp.where(jnp.sum(clipped) <= r, clipped, on_simplex)
        return on_simplex + o

    def contains(self, x: Float[Array, " d"], atol: float = 1e-8) -> Any:
        x = _arg(self, "contains", "x", x)
        z = x - self.offset
        mass = jnp.sum(z)
        total = mass <= self.radius + atol if self.capped else jnp.abs(mass - self.radius) <= atol
        return jnp.all(z >= -atol) & total

    @property
    def diameter(self) -> Float[Array, ""]:
        factor = math.sqrt(2) if self.dim >= 2 else 1.0
        return factor * self.radius

    @property
    def inner_radius(self) -> Float[Array, ""]:
        d = self.dim
        factor = 1 / (d + math.sqrt(d)) if self.capped else 1 / math.sqrt(d * (d - 1))
        return factor * self.radius

    def center(self) -> Float[Array, " d"]:
        value = self.offset + self._unit_center() * self.radius
        return jnp.full(self.shape, value, jnp.result_type(self.radius, self.offset))

    def scaled(self, s: Any) -> Simplex:
        _check_scale(s)
        shift = (1 - s) * self._unit_center() * self.radius
        return eqx.tree_at(lambda k: (k.radius, k.offset), self, (s * self.radius, self.offset + shift))

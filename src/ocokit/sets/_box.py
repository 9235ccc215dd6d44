"""The box ``{x : lower <= x <= upper}``."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.sets._balls import _arg, _check_scale, _dtype_of, _float_leaf, _nan_through
from ocokit.sets._base import AbstractSet, projections


class Box(AbstractSet):
    """The box ``K = {x in R^d : lower_i <= x_i <= upper_i}``.

    lmo: ``v_i = lower_i`` where ``direction_i > 0``, else ``upper_i`` (so a zero direction gives
    ``upper``); O(d). project: clipping, O(d) (``optax.projections.projection_box``). Both return the
    input's dtype. Geometry: ``diameter = ||upper - lower||_2``, ``inner_radius = min_i (upper_i -
    lower_i) / 2``, ``center = (lower + upper) / 2``; ``scaled(s)`` shrinks every side about the centre.
    ``box_bounds()`` declares the box: ``(lower, upper)``.

    Args:
        lower: lower bounds, shape ``(d,)`` (a scalar is broadcast when ``dim`` is given).
        upper: upper bounds, ``upper > lower`` entrywise.
        dim: the dimension d when the bounds are scalars.

    Example:
        >>> import jax.numpy as jnp
        >>> from ocokit.sets import Box
        >>> Box(0.0, 5.0, dim=3).lmo(jnp.array([1.0, -1.0, 0.0]))
        Array([0., 5., 5.], dtype=float32)
    """

    lower: Float[Array, " d"]
    upper: Float[Array, " d"]

    def __init__(self, lower, upper, dim: int | None = None):
        lower, upper = _float_leaf(lower), _float_leaf(upper)
        if dim is not None:
            _checks.positive_int("dim", dim)
            lower, upper = jnp.broadcast_to(lower, (dim,)), jnp.broadcast_to(upper, (dim,))
        if lower.ndim != 1 or lower.shape != upper.shape:
            raise ValueError(
                "lower and upper must be vectors of one shape (or scalars with dim), "
                f"got {lower.shape} and {upper.shape}"
            )
        _checks.positive("upper - lower", upper - lower)
        self.lower, self.upper = lower, upper

    @property
    def shape(self) -> tuple[int, ...]:
        return self.lower.shape

    def box_bounds(self) -> tuple[Float[Array, " d"], Float[Array, " d"]]:
        return self.lower, self.upper

    def lmo(self, direction):
        direction = _arg(self, "lmo", "direction", direction)
        dtype = _dtype_of(direction)
        return _nan_through(jnp.where(direction > 0, self.lower.astype(dtype), self.upper.astype(dtype)), direction)

    def project(self, x):
        x = _arg(self, "project", "x", x)
        dtype = _dtype_of(x)
        lower, upper = self.lower.astype(dtype), self.upper.astype(dtype)
        return projections().projection_box(x.astype(dtype), lower, upper)

    def contains(self, x, atol: float = 1e-8):
        x = _arg(self, "contains", "x", x)
        x = x.astype(np.promote_types(x.dtype, self.lower.dtype))  # compared in the wider of the two dtypes
        return jnp.all((x >= self.lower - atol) & (x <= self.upper + atol))

    @property
    def diameter(self):
        return jnp.linalg.norm(self.upper - self.lower)

    @property
    def inner_radius(self):
        return jnp.min(self.upper - self.lower) / 2

    def center(self):
        return (self.lower + self.upper) / 2

    def scaled(self, s) -> Box:
        _check_scale(s)
        c, half = self.center(), (self.upper - self.lower) / 2
        return eqx.tree_at(lambda b: (b.lower, b.upper), self, (c - s * half, c + s * half))

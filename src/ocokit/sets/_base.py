"""The decision-set contract: linear minimisation, projection, membership and geometry."""

from __future__ import annotations

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


class AbstractSet(eqx.Module):
    """A compact convex decision set K, the hard constraint of the online game.

    Contract (every concrete set is final and implements all of it, pure and jit/vmap-safe):

    * ``shape``: the shape of a decision (``(d,)`` for vectors, ``(m, n)`` for matrices).
    * ``lmo(direction)``: a minimiser ``argmin_{v in K} <direction, v>``. Call it with the raw gradient;
      ocokit never negates at call sites. A zero direction, ties and edge radii return a deterministic
      point of K, never NaN.
    * ``lmo_init()`` / ``warm_lmo(direction, state) -> (vertex, state)``: the same oracle with an explicit
      warm-start state (the top singular pair for the nuclear-norm ball). Stateless sets inherit a
      pass-through, so learners always call ``warm_lmo`` and carry the state in their own state.
    * ``project(x)``: the Euclidean projection onto K (exact, or documented otherwise).
    * ``contains(x, atol)``: membership to tolerance ``atol``.
    * ``diameter``: ``max_{x, y in K} ||x - y||_2``; ``inner_radius``: the radius r of a Euclidean ball
      ``B(center, r)`` inside K (for bandit shrinking); ``center``: that ball's centre, also the default
      starting point.
    * ``scaled(s)``: the set ``center + s (K - center)`` (the shrunk set ``(1 - delta/r) K`` of bandit
      methods), of the same class.
    * ``box_bounds()``: a capability the set declares: ``(lower, upper)`` when K is the box
      ``{x : lower <= x <= upper}``, else ``None`` (the default). Code that can exploit a box (clipping,
      projected Newton on the box) asks the set, never its class.
    * Inputs: ``lmo``, ``warm_lmo``, ``project`` and ``contains`` take exactly one point or direction of
      ``shape`` with a real dtype; anything else is a one-line ``ValueError`` naming the set, the method,
      the expected and the received shape, raised when the call is traced (static shapes: no cost in
      compiled code). A batch goes through ``jax.vmap``, never implicit broadcasting.
    * Non-finite inputs: a direction with a NaN or infinite entry gives an ``lmo`` vertex with NaN entries
      (never a finite vertex, so the engine's non-finite guard names the round); ``project`` of a point
      with a NaN entry has NaN entries; ``contains`` of it is False.
    """

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, ...]:
        """Shape of one decision."""

    @abc.abstractmethod
    def lmo(self, direction: Float[Array, "..."]) -> Float[Array, "..."]:
        """``argmin_{v in K} <direction, v>``."""

    @abc.abstractmethod
    def project(self, x: Float[Array, "..."]) -> Float[Array, "..."]:
        """Euclidean projection of ``x`` onto K."""

    @abc.abstractmethod
    def contains(self, x: Float[Array, "..."], atol: float = 1e-8) -> Any:
        """Whether ``x`` lies in K up to ``atol`` (a boolean array, jit-safe)."""

    @property
    @abc.abstractmethod
    def diameter(self) -> Float[Array, ""]:
        """``max_{x, y in K} ||x - y||_2``."""

    @property
    @abc.abstractmethod
    def inner_radius(self) -> Float[Array, ""]:
        """Radius of a Euclidean ball centred at ``center`` and contained in K."""

    @abc.abstractmethod
    def center(self) -> Float[Array, "..."]:
        """Centre of the inner ball; the default starting point."""

    @abc.abstractmethod
    def scaled(self, s: Any) -> AbstractSet:
        """The set ``center + s (K - center)`` for ``0 < s <= 1``."""

    @property
    def strong_convexity(self) -> Any:
        """``alpha_K`` of K as a strongly convex set w.r.t. l2 (Wan and Zhang, AAAI 2021, Def. 3): every
        ``(x + y) / 2 + (alpha_K / 8) ||x - y||^2 u`` with ``||u|| <= 1`` lies in K. 0 (the default): K is not
        strongly convex, or its constant is not known."""
        return 0.0

    def box_bounds(self) -> tuple[Float[Array, " d"], Float[Array, " d"]] | None:
        """``(lower, upper)`` when K is the box ``{x : lower <= x <= upper}``; ``None`` (the default) otherwise."""
        return None

    def lmo_init(self) -> Any:
        """Initial warm-start state of the LMO (``None`` for stateless oracles)."""
        return None

    def warm_lmo(self, direction: Float[Array, "..."], state: Any) -> tuple[Float[Array, "..."], Any]:
        """The LMO with an explicit warm-start state; stateless sets pass the state through."""
        return self.lmo(direction), state

    def lmo_calls(self, state: Any) -> Any:
        """Inner iterations spent by the last ``warm_lmo`` call (1 for closed-form oracles)."""
        del state
        return jnp.asarray(1, dtype=jnp.int32)


def projections() -> Any:
    """``optax.projections``, imported when a projection is first traced: optax takes about 0.1 s to import,
    which a command whose programs are all loaded from disk (``ocokit run``'s second invocation) never needs."""
    from optax import projections

    return projections


def simplex_projection(v: Array, r: Array) -> Array:
    """Euclidean projection of ``v`` onto ``{x >= 0, sum(x) = r}`` in ``v``'s dtype (the sort-based algorithm of
    Duchi, Shalev-Shwartz, Singer and Chandra, "Efficient projections onto the l1-ball for learning in high
    dimensions", ICML 2008, through ``optax.projections.projection_simplex``, which promotes float32 under x64
    and mixes integer and float arrays internally: run under standard promotion whatever the caller's)."""
    with jax.numpy_dtype_promotion("standard"):
        return projections().projection_simplex(v, r).astype(v.dtype)

"""Named virtual-queue (dual) updates, each written once and cited; every queue learner uses these.

A virtual queue ``Q`` accumulates constraint violation and weighs the constraints in the primal step.
The rules differ in how they grow, decay and are bounded:

* :func:`drift_plus_penalty`: ``Q <- [Q + v]_+`` (Neely's drift-plus-penalty; Yu, Neely and Wei,
  NeurIPS 2017, eq. (3); OPDP's and LPM's ``dpp_queue`` rule).
* :func:`regularised_dual_ascent`: ``lambda <- [lambda + mu (v - reg mu lambda)]_+`` (projected dual ascent
  on a Lagrangian with a ``reg mu / 2 ||lambda||^2`` regulariser; Mahdavi, Jin and Yang, JMLR 2012; the
  ``lagrangian`` rule of OPDP and LPM).
* :func:`doubly_bounded`: ``Q <- max{(1 - eta) Q + [v]_+, gamma}`` (paper 003, eq. (8): COLDQ).
* :func:`mirror_prox_queue`: ``Q <- max{-gamma g, Q + gamma g}`` (paper 004, Algorithm 1, Line 3).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jaxtyping import Array


def drift_plus_penalty(queue: Array, violation: Array) -> Array:
    """``[Q + v]_+``: the drift-plus-penalty virtual queue (Yu, Neely and Wei 2017, eq. (3)).

    ``violation`` is the increment ``v`` (``g_t(x_t)``, its linearisation, or a block's sum of them).
    """
    return jnp.maximum(queue + violation, 0.0)


def regularised_dual_ascent(dual: Array, violation: Array, mu: Any, reg: Any) -> Array:
    """``[lambda + mu (v - reg mu lambda)]_+``: one step of regularised projected dual ascent.

    The gradient step on ``lambda`` of ``<lambda, v> - reg mu / 2 ||lambda||^2`` with step ``mu``, projected
    on ``lambda >= 0`` (Mahdavi, Jin and Yang 2012, "Trading regret for efficiency", JMLR, Alg. 1).
    """
    return jnp.maximum(0.0, dual + mu * (violation - reg * mu * dual))


def doubly_bounded(queue: Array, violation: Array, eta: Array, gamma: Array) -> Array:
    """The queue update (8) of paper 003: ``Q_t = max{(1 - eta) Q_{t-1} + [g_t(x_t)]_+, gamma}``.

    ``violation`` is ``g_t(x_t)``, the new constraint at the new decision (spec §7 pitfall 1). By Lemma 1,
    ``gamma <= Q_t <= max(gamma, G / eta)`` whenever ``|g| <= G``.
    """
    return jnp.maximum((1.0 - eta) * queue + jnp.maximum(violation, 0.0), gamma)


def mirror_prox_queue(queue: Array, g: Array, gamma: Any) -> Array:
    """``Q(t) = max{-gamma g, Q(t-1) + gamma g}`` (paper 004, Algorithm 1, Line 3; not ``[Q + gamma g]_+``).

    Keeps ``Q(t) + gamma g >= 0`` so that the weights ``w = Q + gamma g`` of eq. (13) are non-negative.
    """
    return jnp.maximum(-gamma * g, queue + gamma * g)

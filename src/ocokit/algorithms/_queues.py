"""Named virtual-queue (dual) updates, each written once and cited; every queue learner uses these.

A virtual queue ``Q`` accumulates constraint violation and weighs the constraints in the primal step.
The rules differ in how they grow, decay and are bounded:

* `drift_plus_penalty`: ``Q <- [Q + v]_+`` (Neely's drift-plus-penalty; Yu, Neely and Wei,
  NeurIPS 2017, eq. (3); OPDP's and LPM's ``dpp_queue`` rule).
* `regularised_dual_ascent`: ``lambda <- [lambda + mu (v - reg mu lambda)]_+`` (projected dual ascent
  on a Lagrangian with a ``reg mu / 2 ||lambda||^2`` regulariser; Mahdavi, Jin and Yang, JMLR 2012; the
  ``lagrangian`` rule of OPDP and LPM).
* `doubly_bounded`: ``Q <- max{(1 - eta) Q + [v]_+, gamma}`` (paper 003, eq. (8): COLDQ).
* `mirror_prox_queue`: ``Q <- max{-gamma g, Q + gamma g}`` (paper 004, Algorithm 1, Line 3).
* `floored_rectified`: ``Q <- max{floor, Q + scale [v]_+}`` (RECOO; Guo, Liu, Wei and Ying, NeurIPS
  2022, as implemented by the COLDQ authors).
* `cumulative_hinge`: ``q <- q + gamma [v]_+`` (Yi et al., ICML 2021, Algorithm 1).
* `leaky_dual_ascent`: ``q <- [(1 - reg step) q + step v]_+`` (Yi et al., IEEE TAC 2023,
  Algorithm 1, one agent).

Every rule is elementwise over the N constraints and keeps the arithmetic order of the learner it came
from, so a learner using it reproduces its earlier trajectories bit for bit.

The primal side of the queue-weighted (drift-plus-penalty / Lagrangian) loss, ``V f_t + sum_n Q^n h_t^n``
with ``h_t = [g_t]_+`` or ``g_t``, is `penalised_gradient` (OPDP, LPM).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jaxtyping import Array


def penalised_gradient(feedback: Any, x: Array, loss_weight: Any, queue: Array, hinge: bool) -> tuple[Array, Array]:
    """``(V grad f_t(x) + sum_n Q^n grad h_t^n(x), h_t(x))``: the gradient of the queue-weighted loss and ``h_t``.

    ``h_t = [g_t]_+`` with the subgradient ``1[g_t^n > 0] grad g_t^n`` (``hinge=True``) or ``h_t = g_t``: the
    linear loss of the drift-plus-penalty step (Yu, Neely and Wei, NeurIPS 2017) and the gradient in x of the
    Lagrangian ``f_t + <lambda, h_t>`` (Mahdavi, Jin and Yang, JMLR 2012), from first-order feedback.
    """
    g = feedback.constraints(x)
    J = feedback.constraints_jacobian(x).reshape(g.shape[0], x.size)
    if hinge:
        J = jnp.where((g > 0)[:, None], J, 0.0)
        g = jnp.maximum(g, 0.0)
    return loss_weight * feedback.grad(x) + (queue @ J).reshape(x.shape), g


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

    J. Wang, B. Yan and Y. Liu, "Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
    Dynamics of Both Loss and Constraint", AAAI 2025, Section 4.1. ``violation`` is ``g_t(x_t)``, the new
    constraint at the new decision (not ``g_{t-1}(x_t)``). By Lemma 1, ``gamma <= Q_t <= max(gamma, G / eta)``
    whenever ``|g| <= G``.
    """
    return jnp.maximum((1.0 - eta) * queue + jnp.maximum(violation, 0.0), gamma)


def mirror_prox_queue(queue: Array, g: Array, gamma: Any) -> Array:
    """``Q(t) = max{-gamma g, Q(t-1) + gamma g}`` (paper 004, Algorithm 1, Line 3; not ``[Q + gamma g]_+``).

    S. Qiu and X. Wei, "Beyond O(sqrt(T)) Regret for Constrained Online Optimization: Gradual Variations and
    Mirror Prox", preprint, 2020: the Yu-Neely virtual queue. Keeps ``Q(t) + gamma g >= 0`` so that the
    weights ``w = Q + gamma g`` of eq. (13) are non-negative.
    """
    return jnp.maximum(-gamma * g, queue + gamma * g)


def floored_rectified(queue: Array, violation: Array, scale: Any, floor: Any) -> Array:
    """``max{floor, Q + scale [v]_+}``: RECOO's rectified queue with a time-varying floor.

    With ``scale = gamma_t = gamma t^{1/2 + epsilon}`` and ``floor = eta_t = eta t^{1/2}`` this is the
    queue of RECOO (H. Guo, X. Liu, H. Wei and L. Ying, "Online Convex Optimization with Hard Constraints:
    Towards the Best of Two Worlds and Beyond", NeurIPS 2022), in the form the COLDQ authors implement
    in their public code (reduced to one agent; the rule was not read in Guo et al.'s paper):
    ``Q_t = max{eta_t, Q_{t-1} + gamma_t [g_t(x_t)]_+}``. Only the clipped constraint enters (the
    rectifier), so the queue never decreases below its floor.
    """
    return jnp.maximum(floor, queue + scale * jnp.maximum(violation, 0.0))


def cumulative_hinge(queue: Array, violation: Array, gamma: Any) -> Array:
    """``q + gamma [v]_+``: the unbounded accumulated-violation queue of Yi et al. (ICML 2021, Algorithm 1).

    X. Yi, X. Li, T. Yang, L. Xie, T. Chai and K. H. Johansson, "Regret and Cumulative Constraint
    Violation Analysis for Online Convex Optimization with Long Term Constraints", ICML 2021, Algorithm 1
    as the COLDQ authors implement it in their public code (one agent; not read in Yi et al.'s paper):
    ``q_t = q_{t-1} + gamma [g(x_t)]_+``. Applied once more with the same ``v`` it gives the look-ahead
    ``q_hat = q_t + gamma [g(x_t)]_+`` of the primal step.
    """
    return queue + gamma * jnp.maximum(violation, 0.0)


def leaky_dual_ascent(dual: Array, increment: Array, step: Any, reg: Any) -> Array:
    """``[(1 - reg step) q + step v]_+``: the regularised dual step of Yi et al. (IEEE TAC 2023, Alg. 1).

    X. Yi, X. Li, T. Yang, L. Xie, T. Chai and K. H. Johansson, "Regret and Cumulative Constraint
    Violation Analysis for Distributed Online Constrained Convex Optimization", IEEE Transactions on
    Automatic Control 68(5), 2023, Algorithm 1 with one agent, as the COLDQ authors implement it in their
    public code (not read in Yi et al.'s paper):
    ``q <- max{0, (1 - beta_t gamma_t) q + gamma_t ([g(x_{t-1})]_+ + s . (x_t - x_{t-1}))}``, with
    ``increment`` the bracket (the clipped constraint linearised at the new point), ``step`` the dual
    step and ``reg`` the dual regulariser (their product is the leak).
    """
    return jnp.maximum(0.0, (1.0 - reg * step) * dual + step * increment)

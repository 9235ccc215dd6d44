"""Pieces shared by the virtual-queue learners of paper 003: COLDQ, COLDQ-Expert, RECOO, Yi et al. 2021 and 2023.

The starting point, the validation of the per-round solver's options, the lookup of a paper-003 parameter
table, the common state, the call to the exact hinge-proximal solver and the diagnostics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ocokit import _checks
from ocokit.algorithms._hinge_prox import SOLVERS, HingeProxSolution, hinge_prox_step

STARTS = ("origin", "center")

_V = TypeVar("_V")


def start_point(domain, start: str) -> Array:
    """``x_1``: ``Pi_X(0)`` for ``start="origin"`` (the COLDQ authors' code: ``x_1 = 0``), else ``X.center()``."""
    c = domain.center()
    return (domain.project(jnp.zeros_like(c)) if start == "origin" else c).astype(c.dtype)


def check_solver_options(learner) -> None:
    """Validate the fields ``tol``, ``max_iter``, ``solver`` and ``start`` of a hinge-proximal learner."""
    _checks.positive("tol", learner.tol)
    _checks.positive_int("max_iter", learner.max_iter)
    _checks.one_of("solver", learner.solver, SOLVERS)
    _checks.one_of("start", learner.start, STARTS)


def paper_table(tables: Mapping[int, _V], table: int) -> _V:
    """The entry of paper 003's parameter table ``table``; ``ValueError`` for a table not listed."""
    if table not in tables:
        raise ValueError(f"table must be one of {sorted(tables)}, got {table!r}")
    return tables[table]


class QueueState(eqx.Module):
    """State of a single-point queue learner after round ``t``."""

    x: Float[Array, " p"]  # the decision to play next, x_{t+1}
    queue: Float[Array, " N"]  # the virtual queue after round t
    t: Int[Array, ""]  # rounds absorbed so far
    iterations: Int[Array, ""]  # inner iterations of the last update (dual Newton steps, or 1 projection)
    converged: Bool[Array, ""]  # whether the last inner solve met its tolerance
    domain: Any  # X, from the learner's info


def initial_fields(info, start: str, queue0) -> dict[str, Any]:
    """The fields of :class:`QueueState` before round 1: ``x_1``, a queue filled with ``queue0``, no rounds."""
    x = start_point(info.domain, start)
    return {
        "x": x,
        "queue": jnp.full((info.num_constraints,), queue0, dtype=x.dtype),
        "t": jnp.asarray(0, jnp.int32),
        "iterations": jnp.asarray(0, jnp.int32),
        "converged": jnp.asarray(True),
        "domain": info.domain,
    }


def prox_step(learner, feedback, domain, c: Array, alpha: Array, z: Array, weights: Array) -> HingeProxSolution:
    """``argmin_X <c, x - z> + alpha ||x - z||^2 + sum_n weights_n [g_n(x)]_+`` for round data of ``feedback``.

    :func:`~ocokit.algorithms._hinge_prox.hinge_prox_step` with the learner's ``solver``, ``tol`` and
    ``max_iter``; ``g`` is the constraint of the round just played.
    """
    return hinge_prox_step(
        feedback,
        domain,
        c,
        alpha,
        z,
        weights,
        solver=learner.solver,
        tol=learner.tol,
        max_iter=learner.max_iter,
    )


def solver_diagnostics(state) -> dict[str, Array]:
    """``oracle_calls`` (inner iterations of the last update), ``queue`` and ``solver_converged``."""
    return {"oracle_calls": state.iterations, "queue": state.queue, "solver_converged": state.converged}

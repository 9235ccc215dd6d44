"""Pieces shared by the virtual-queue learners of paper 003: COLDQ, COLDQ-Expert, RECOO, Yi et al. 2021 and 2023.

The starting point, the validation of the per-round solver's options, the lookup of a paper-003 parameter
table, the common state, the call to the exact hinge-proximal solver and the diagnostics; and the small
problems of the learners' suite cases (built without comparators, so that a case compiles quickly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import equinox as eqx
import jax
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


def initial_fields(info, start: str, queue0) -> dict[str, Any]:
    """The fields of :class:`QueueState` before round 1: ``x_1``, a queue filled with ``queue0``, no rounds."""
    x = start_point(info.domain, start)
    return {
        "x": x,
        "queue": jnp.full((info.num_constraints,), queue0, dtype=x.dtype),
        "t": jnp.asarray(0, jnp.int32),
        "iterations": jnp.asarray(0, jnp.int32),
        "converged": jnp.asarray(True),
    }


def prox_step(learner, feedback, c: Array, alpha: Array, z: Array, weights: Array) -> HingeProxSolution:
    """``argmin_X <c, x - z> + alpha ||x - z||^2 + sum_n weights_n [g_n(x)]_+`` for round data of ``feedback``.

    :func:`~ocokit.algorithms._hinge_prox.hinge_prox_step` with the learner's ``solver``, ``tol`` and
    ``max_iter``; ``g`` is the constraint of the round just played.
    """
    return hinge_prox_step(
        feedback.problem,
        feedback.data,
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


# --------------------------------------------------------------------------------------------------
# Small problems of the suite cases (no comparators: a light compile).


def regression_rounds():
    """The rounds of a small Fig. 1 problem (paper 003 §6.1): ``K = [0, 5]^4``, ``N = 2``."""
    from ocokit.problems import CustomProblem, ProblemConstants, TimeVaryingRegression

    regression = TimeVaryingRegression(dim=4, rows=3)
    return CustomProblem(
        domain=regression.domain,
        loss=lambda d, x: 0.5 * jnp.sum((d["H"] @ x - d["y"]) ** 2),
        constraints=lambda d, x: d["A"] @ x - d["b"],
        sampler=lambda key, t: regression.round_data(None, key, t),
        constants=ProblemConstants(constraint_bound=20.0),  # |A x - b| <= 4 * 5 on K
    )


def ball_problem():
    """A small problem with a non-linear convex constraint (for the smooth solver's suite case)."""
    from ocokit.problems import CustomProblem
    from ocokit.sets import Box

    def sampler(key, t):
        return jax.random.uniform(key, (3,), minval=-1.0, maxval=1.0)

    return CustomProblem(
        domain=Box(-1.0, 1.0, dim=3),
        loss=lambda c, x: jnp.sum((x - 2.0 * c) ** 2),
        constraints=lambda c, x: jnp.array([jnp.sum((x - 0.3 * c) ** 2) - 0.25, jnp.sum(x) - 0.5]),
        sampler=sampler,
    )


def fixed_program_rounds(quadratic: bool):
    """A small online QP (``quadratic=True``) or LP of paper 003 §6.2-§6.3: ``K = [0, 1]^2``, fixed ``A, b``.

    ``theta_t`` is ``U(-2, 2)^2`` (not the paper's schedule, which needs an episode).
    """
    from ocokit.problems import CustomProblem, ProblemConstants
    from ocokit.sets import Box

    A = jnp.array([[0.3, 0.2], [0.1, 0.45], [0.25, 0.25]])
    b = jnp.array([0.1, 0.2, 0.15])

    def loss(theta, x):
        return jnp.sum((x - theta) ** 2) + 20.0 * jnp.dot(theta, x) if quadratic else jnp.dot(theta, x)

    return CustomProblem(
        domain=Box(0.0, 1.0, dim=2),
        loss=loss,
        constraints=lambda theta, x: A @ x - b,
        sampler=lambda key, t: jax.random.uniform(key, (2,), minval=-2.0, maxval=2.0),
        constants=ProblemConstants(constraint_bound=1.0),
    )


def job_rounds():
    """A small job-scheduling problem (paper 003 §6.4): 2 regions x 3 centres, ``K = [0, 50]^6``,
    ``g_t(x) = lambda_t - sum_i 4 ln(1 + 4 x_i)`` with ``lambda_t ~ Poisson(40)``."""
    from ocokit.problems import CustomProblem
    from ocokit.sets import Box

    def sampler(key, t):
        kc, kl = jax.random.split(key)
        prices = jax.random.uniform(kc, (2,), minval=20.0, maxval=60.0)
        return {"c": jnp.repeat(prices, 3), "lam": jax.random.poisson(kl, 40.0).astype(prices.dtype)}

    return CustomProblem(
        domain=Box(0.0, 50.0, dim=6),
        loss=lambda d, x: jnp.dot(d["c"], x),
        constraints=lambda d, x: jnp.reshape(d["lam"] - 4.0 * jnp.sum(jnp.log1p(4.0 * x)), (1,)),
        sampler=sampler,
    )

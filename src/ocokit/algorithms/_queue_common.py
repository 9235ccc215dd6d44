"""The parts of the virtual-queue family of paper 003: COLDQ, COLDQ-Expert, RECOO, Yi et al. 2021 and 2023.

* `HingeProx`: the per-round solver part, the exact hinge-penalised proximal step of
  `_hinge_prox` with its options (the solver's kind ``solver``, ``tol``, ``max_iter``)
  and the starting point ``x_1`` (``start``), validated once.
* `AbstractQueueLearner`: the family's abstract class; a learner of it holds a ``prox`` part and
  plays the ``x`` of its state.
* `QueueState`: the common state, with its diagnostics.
* `start_point` and `paper_table`: ``x_1`` and the lookup of a paper-003 parameter table.

The virtual-queue updates themselves are in `_queues`.

References:
    J. Wang, B. Yan and Y. Liu. Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
    Dynamics of Both Loss and Constraint. AAAI 2025 (paper 003), Algorithm 1, problem ``P_t``.
"""

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, hyperparameter
from ocokit.algorithms._hinge_prox import AbstractHingeSolver, HingeProxSolution, as_solver, hinge_prox_step
from ocokit.feedback import FULL_INFORMATION, FeedbackKind
from ocokit.sets import AbstractSet

STARTS = ("origin", "center")

_V = TypeVar("_V")


def start_point(domain: AbstractSet, start: str) -> Array:
    """``x_1``: ``Pi_X(0)`` for ``start="origin"`` (the COLDQ authors' code: ``x_1 = 0``), else ``X.center()``."""
    c = domain.center()
    return (domain.project(jnp.zeros_like(c)) if start == "origin" else c).astype(c.dtype)


def paper_table(tables: Mapping[int, _V], table: int) -> _V:
    """The entry of paper 003's parameter table ``table``; ``ValueError`` for a table not listed."""
    if table not in tables:
        raise ValueError(f"table must be one of {sorted(tables)}, got {table!r}")
    return tables[table]


class HingeProx(_checks.Checked):
    """The per-round solver of a queue learner: the exact hinge-penalised proximal step and ``x_1``.

    `step` solves, for the constraint ``g`` of the round just played (paper 003, problem ``P_t`` of
    Algorithm 1, Section 4.3)::

        argmin_{x in X} <c, x - z> + alpha ||x - z||^2 + sum_n w_n [g_n(x)]_+

    by dual projected Newton (`hinge_prox_step`). COLDQ, COLDQ-Expert,
    RECOO and Yi et al. 2021 hold one as their ``prox`` field.

    Args:
        tol: relative tolerance of the solve (dual KKT residual in units of ``g``), > 0; an array leaf.
        max_iter: cap on dual Newton steps per round, >= 1 (static).
        solver: how the step is solved: a solver kind
            (`AbstractHingeSolver`) or its name
            (`SOLVERS`, mapped here): ``"auto"``
            (`DeclaredSolver`) uses the problem's declared structure
            (``affine_constraints`` / ``log_capacity_constraint``) and the generic smooth solver otherwise;
            ``"affine"`` asserts ``g`` is affine.
        start: ``"origin"`` (default) plays ``x_1 = Pi_X(0)`` (``0`` in all four of paper 003's setups, as
            in the COLDQ authors' code); ``"center"`` plays ``X.center()`` (static).

    References:
        J. Wang, B. Yan and Y. Liu. Doubly-Bounded Queue for Constrained Online Learning. AAAI 2025.
        D. P. Bertsekas. Projected Newton methods for optimization problems with simple constraints.
        SIAM J. Control and Optimization 20(2), 1982.
    """

    tol: Float[Array, ""] = hyperparameter(_checks.positive, default=1e-11)
    max_iter: int = _checks.checked_field(_checks.positive_int, static=True, default=50)
    solver: AbstractHingeSolver = eqx.field(converter=as_solver, default="auto")
    start: str = _checks.checked_field(_checks.among(STARTS), static=True, default="origin")

    def start_point(self, domain: AbstractSet) -> Array:
        """``x_1`` in ``domain`` (see ``start``; `start_point`)."""
        return start_point(domain, self.start)

    def step(
        self, feedback: Any, domain: AbstractSet, c: Array, alpha: Any, z: Array, weights: Array
    ) -> HingeProxSolution:
        """``argmin_X <c, x - z> + alpha ||x - z||^2 + sum_n weights_n [g_n(x)]_+``, ``g`` of ``feedback``."""
        return hinge_prox_step(
            feedback, domain, c, alpha, z, weights, solver=self.solver, tol=self.tol, max_iter=self.max_iter
        )


class QueueState(eqx.Module):
    """State of a single-point queue learner after round ``t``."""

    x: Float[Array, " p"]  # the decision to play next, x_{t+1}
    queue: Float[Array, " N"]  # the virtual queue after round t
    t: Int[Array, ""]  # rounds absorbed so far
    iterations: Int[Array, ""]  # inner iterations of the last update (dual Newton steps, or 1 projection)
    converged: Bool[Array, ""]  # whether the last inner solve met its tolerance
    domain: Any  # X, from the learner's info

    @classmethod
    def initial(cls, x: Array, num_constraints: int, queue0: Any, domain: AbstractSet) -> "QueueState":
        """The state before round 1: ``x_1 = x``, a queue filled with ``queue0``, no rounds absorbed.

        A learner whose state carries more (Yi et al. 2021's steps) holds this state as a field.
        """
        return cls(
            x=x,
            queue=jnp.full((num_constraints,), queue0, dtype=x.dtype),
            t=jnp.asarray(0, jnp.int32),
            iterations=jnp.asarray(0, jnp.int32),
            converged=jnp.asarray(True),
            domain=domain,
        )

    def diagnostics(self) -> dict[str, Array]:
        """``oracle_calls`` (inner iterations of the last update), ``queue`` and ``solver_converged``."""
        return {"oracle_calls": self.iterations, "queue": self.queue, "solver_converged": self.converged}


class AbstractQueueLearner(AbstractLearner):
    """A virtual-queue learner of paper 003's family that solves a hinge-penalised proximal step per round.

    Its per-round solver and starting point are the part ``prox`` (`HingeProx`); its state has
    the decision to play in ``x``, which `decide` returns. Full-information feedback: the update of
    round ``t`` uses ``grad f_t`` and the whole constraint function ``g_t``.
    """

    prox: eqx.AbstractVar[HingeProx]
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION
    needs: ClassVar[Needs] = Needs(vector=True, hinge_prox=True)

    def decide(self, state):
        return state.x

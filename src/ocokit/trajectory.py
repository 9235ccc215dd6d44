"""The record of a run: [`Trajectory`][ocokit.Trajectory], and [`NonFiniteError`][ocokit.NonFiniteError] for a run that
stops being finite.

Kept apart from the engine so that [`ocokit.metrics`][ocokit.metrics] (pure functions of a trajectory) imports no
engine.
"""

from __future__ import annotations

import equinox as eqx
from jaxtyping import Array, Float, Int

QUANTITIES = ("loss", "constraints", "decision")
"""What `bad_quantity` indexes."""


class NonFiniteError(FloatingPointError):
    """A loss, constraint value or decision became non-finite during a run."""


class Trajectory(eqx.Module):
    """Per-round record of one run (leading axis: rounds; batched runs add leading axes).

    Attributes:
        loss: ``f_t(x_t)``, shape ``(T,)``.
        constraints: ``g_t(x_t)``, shape ``(T, N)``.
        diagnostics: the learner's per-round diagnostics (e.g. ``"oracle_calls"``, ``"queue"``).
        comparator_loss: ``f_t(x*)`` of the best fixed feasible point, or ``None``.
        optimum_loss: ``f_t(x_t*)`` of the per-round constrained optimum, or ``None``.
        decisions: ``x_t`` if recorded, else ``None``.
        first_bad_round: first 1-based round with a non-finite quantity, ``-1`` if none.
        bad_quantity: index into ``("loss", "constraints", "decision")`` of that quantity, ``-1`` if none.
    """

    loss: Float[Array, " T"]
    constraints: Float[Array, "T N"]
    diagnostics: dict[str, Array]
    comparator_loss: Float[Array, " T"] | None
    optimum_loss: Float[Array, " T"] | None
    decisions: Array | None
    first_bad_round: Int[Array, ""]
    bad_quantity: Int[Array, ""]

    @property
    def horizon(self) -> int:
        """Number of rounds T."""
        return self.loss.shape[-1]

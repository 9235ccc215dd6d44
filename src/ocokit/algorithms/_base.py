"""The learner contract: ``init / decide / update`` over an explicit state, with a declared feedback kind."""

from __future__ import annotations

import abc
import math
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit.feedback import FeedbackKind
from ocokit.problems._base import AbstractProblem, ProblemConstants
from ocokit.sets import AbstractSet


class ProblemInfo(eqx.Module):
    """What a learner may know before round 1: the set, N, the horizon, the memory, the constants and the
    declared structure of the constraints.

    Theory constructors read constants through :meth:`require`, the one place that says which constant is
    missing and how to supply it.
    """

    domain: AbstractSet
    num_constraints: int = eqx.field(static=True)
    horizon: int = eqx.field(static=True)
    constants: ProblemConstants = ProblemConstants()
    memory: int = eqx.field(static=True, default=1)
    constraint_structure: str = eqx.field(static=True, default="general")

    @classmethod
    def of(cls, problem: AbstractProblem, T: int) -> ProblemInfo:
        """The information a learner gets about ``problem`` over ``T`` rounds."""
        return cls(
            problem.domain,
            problem.num_constraints,
            T,
            problem.constants(),
            problem.memory(),
            problem.constraint_structure,
        )

    def require(
        self, name: str, who: str, override: Any = None, *, allow_zero: bool = False, argument: str | None = None
    ) -> float:
        """The constant ``name``: ``override`` when given, else the problem's; ``ValueError`` if unknown.

        ``name`` is a field of :class:`~ocokit.problems.ProblemConstants` (``grad_bound``, ``loss_bound``,
        ...) or ``"diameter"`` / ``"inner_radius"`` of the domain. ``who`` names the caller in the error
        (``"OFWTVC.from_theory"``). The value must be finite and ``> 0`` (``>= 0`` with ``allow_zero``).
        ``argument`` is the caller's keyword that overrides it, when not named ``name`` (the error's hint).
        This is the one way every ``from_theory`` reads and overrides a constant.
        """
        if override is not None:
            value, source = float(override), f"{name}={override!r}"
        elif name in ("diameter", "inner_radius"):
            value, source = float(getattr(self.domain, name)), f"the domain's {name}"
        elif name in ProblemConstants.__dataclass_fields__:
            value, source = float(getattr(self.constants, name)), f"the problem constant {name}"
        else:
            raise ValueError(
                f"unknown constant {name!r}; expected diameter, inner_radius or one of "
                f"{sorted(ProblemConstants.__dataclass_fields__)}"
            )
        ok = math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
        if not ok:
            bound = ">= 0" if allow_zero else "> 0"
            raise ValueError(
                f"{who} needs {source} (finite, {bound}), got {value}; pass {argument or name}=... or "
                "declare it in the problem's constants()"
            )
        return value


def hyperparameter(**kwargs: Any) -> Any:
    """A numeric hyperparameter field: stored as an array leaf, so grids of it vmap and never recompile."""
    return eqx.field(converter=jnp.asarray, **kwargs)


class AbstractLearner(eqx.Module):
    """An online learner as three pure functions over an explicit state (optax/blackjax style).

    * ``init(info, key) -> state``: the state before round 1 (fixed shapes and dtypes thereafter).
    * ``decide(state) -> x``: the point played this round; must lie in ``info.domain``. It never sees the
      current round's loss: the engine calls it before generating the round.
    * ``update(state, x, feedback) -> state``: absorb round t's feedback (of the declared kind
      ``feedback``, see :mod:`ocokit.feedback`) after playing ``x``.
    * ``diagnostics(state) -> dict``: scalars or small arrays the engine records every round (queue
      lengths, oracle calls). By convention ``"oracle_calls"`` counts LMO / projection / inner-solver
      iterations of the last update.

    Numeric hyperparameters are array leaves (:func:`hyperparameter`), structural choices are static
    fields. ``from_theory(info)`` builds the learner with a paper's theory-driven parameters.
    """

    feedback: ClassVar[FeedbackKind]

    @abc.abstractmethod
    def init(self, info: ProblemInfo, key: PRNGKeyArray) -> Any:
        """The state before round 1."""

    @abc.abstractmethod
    def decide(self, state: Any) -> Float[Array, "..."]:
        """The decision x_t to play."""

    @abc.abstractmethod
    def update(self, state: Any, x: Float[Array, "..."], feedback: Any) -> Any:
        """The state after observing round t's feedback."""

    def prepare(self, state: Any, feedback: Any) -> Any:
        """Absorb feedback available before round 1; the identity by default.

        The engine calls it once, after ``init``, for a learner whose feedback kind looks ahead
        (``PREDICTIONS``: the prediction oracle of the first window).
        """
        del feedback
        return state

    def diagnostics(self, state: Any) -> dict[str, Array]:
        """Per-round quantities to record (none by default)."""
        del state
        return {}

"""The learner contract: ``init / decide / update`` over an explicit state, with a declared feedback kind."""

from __future__ import annotations

import abc
import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit import _checks
from ocokit.feedback import FeedbackKind
from ocokit.problems._base import AbstractProblem, ProblemConstants
from ocokit.sets import AbstractSet

CONSTANT_NAMES = ("diameter", "inner_radius", *ProblemConstants.__dataclass_fields__)
"""The constants a ``from_theory`` may read: the domain's ``diameter`` and ``inner_radius`` and the fields of
[`ProblemConstants`][ocokit.problems.ProblemConstants]."""


@dataclasses.dataclass(frozen=True)
class Needs:
    """What a learner needs of a problem, declared on its class (`AbstractLearner.needs`), never found by trying.

    Two parts. What every instance needs (checked by the engine before compiling, ``ValueError`` naming it:
    [`mismatch`][ocokit.algorithms.Needs.mismatch]): ``memory`` (it plays losses with memory, ``h > 1``; a learner
    without it plays memoryless losses only), ``sets`` (the decision-set classes it plays on; empty: any set) and
    ``vector`` (1-D decisions only). What its ``from_theory`` needs at its default arguments (read by the benchmark,
    [`theory_mismatch`][ocokit.algorithms.Needs.theory_mismatch]): ``constants`` the problem must declare (finite and
    ``> 0``; ``diameter`` and ``inner_radius`` are the domain's), ``constrained_constants`` needed as well when the
    problem has constraints, ``optional`` (constants it reads when the problem declares them, and does without),
    ``hinge_prox`` (it solves a hinge-proximal step with the solver of the declared
    constraint structure: affine constraints over any set, else a box domain), ``constraints`` (``False``: its
    ``from_theory`` builds it for unconstrained problems only), ``nonnegative`` (constants that may be 0) and
    ``memoryless`` (``False``: it is compared on losses with memory only, as a learner that reads predictions of the
    coming rounds would see ahead of the others on memoryless ones).
    Every problem offers every feedback kind (the engine builds each from the loss and constraints); a bandit
    learner's need of a set with an inner ball is the constant ``inner_radius``.
    """

    constants: tuple[str, ...] = ()
    constrained_constants: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    memory: bool = False
    sets: tuple[type[AbstractSet], ...] = ()
    vector: bool = False
    hinge_prox: bool = False
    constraints: bool = True
    nonnegative: tuple[str, ...] = ()
    memoryless: bool = True

    def __post_init__(self):
        unknown = sorted(set(self.reads) - set(CONSTANT_NAMES))
        if unknown:
            raise ValueError(f"unknown constants {unknown} in Needs; expected names among {list(CONSTANT_NAMES)}")

    @property
    def reads(self) -> tuple[str, ...]:
        """Every constant the ``from_theory`` reads (needed or optional): each may be given to it by name."""
        return tuple(dict.fromkeys(self.constants + self.constrained_constants + self.optional))

    def mismatch(self, problem: AbstractProblem) -> str | None:
        """Why no instance of the learner can play ``problem`` (memory, set, decision shape), or ``None``."""
        h, domain = problem.memory(), problem.domain
        if h > 1 and not self.memory:
            return f"its losses have memory (h = {h}) and the learner plays memoryless losses only"
        if self.sets and not isinstance(domain, self.sets):
            names = " or ".join(s.__name__ for s in self.sets)
            return f"the learner plays on {names} only, and the problem's set is {type(domain).__name__}"
        if self.vector and len(domain.shape) != 1:
            return f"the learner plays vector decisions only, and the problem's have shape {domain.shape}"
        return None

    def theory_mismatch(self, problem: AbstractProblem) -> str | None:
        """Why the learner's ``from_theory`` (default arguments) cannot be played on ``problem``, or ``None``."""
        why = self.mismatch(problem)
        if why is not None:
            return why
        N, domain = problem.num_constraints, problem.domain
        if problem.memory() == 1 and not self.memoryless:
            return "it is compared on losses with memory only (it reads predictions of the coming rounds)"
        if N and not self.constraints:
            return f"its from_theory builds it for unconstrained problems only, and the problem has N = {N}"
        if self.hinge_prox and problem.constraint_structure != "affine" and domain.box_bounds() is None:
            return (
                f"its hinge-proximal step needs affine constraints or a box, and the problem has "
                f"{problem.constraint_structure} constraints over {type(domain).__name__}"
            )
        constants = problem.constants()
        for name in self.constants + (self.constrained_constants if N else ()):
            value = float(getattr(domain if name in ("diameter", "inner_radius") else constants, name))
            zero_ok = name in self.nonnegative
            if not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
                bound = ">= 0" if zero_ok else "> 0"
                return f"its from_theory needs the constant {name} (finite, {bound}), and the problem declares {value}"
        return None


class ProblemInfo(eqx.Module):
    """What a learner may know before round 1: the set, N, the horizon, the memory, the constants and the
    declared structure of the constraints.

    Theory constructors read constants through [`require`][ocokit.algorithms.ProblemInfo.require], the one place that
    says which constant is
    missing and how to supply it; the values a caller gives ``from_theory`` by name are held in ``given``
    ([`giving`][ocokit.algorithms.ProblemInfo.giving]) and win over the problem's
    ([`AbstractLearner.build`][ocokit.algorithms.AbstractLearner.build]).
    """

    domain: AbstractSet
    num_constraints: int = eqx.field(static=True)
    horizon: int = eqx.field(static=True)
    constants: ProblemConstants = ProblemConstants()
    memory: int = eqx.field(static=True, default=1)
    constraint_structure: str = eqx.field(static=True, default="general")
    given: tuple[tuple[str, float], ...] = eqx.field(static=True, default=())
    norm_constants: dict[str, ProblemConstants] = eqx.field(default_factory=dict)
    fixed_constraints: Callable[[Array], Array] | None = None

    @classmethod
    def of(cls, problem: AbstractProblem, T: int) -> ProblemInfo:
        """The information a learner gets about ``problem`` over ``T`` rounds: with the constants in every dual
        norm it declares, and its constraints when they are fixed and known
        ([`AbstractProblem.constraints_fixed`][ocokit.problems.AbstractProblem.constraints_fixed])."""
        return cls(
            problem.domain,
            problem.num_constraints,
            T,
            problem.constants(),
            problem.memory(),
            problem.constraint_structure,
            norm_constants={norm: problem.constants_in(norm) for norm in problem.constant_norms},
            fixed_constraints=problem.fixed_constraints if problem.constraints_fixed else None,
        )

    def require(
        self,
        name: str,
        who: str,
        override: Any = None,
        *,
        allow_zero: bool = False,
        argument: str | None = None,
        optional: bool = False,
        norm: str = "l2",
    ) -> Any:
        """The constant ``name``: ``override`` when given, else the problem's; ``ValueError`` if unknown.

        ``name`` is a field of [`ProblemConstants`][ocokit.problems.ProblemConstants] (``grad_bound``, ``loss_bound``,
        ...) or ``"diameter"`` / ``"inner_radius"`` of the domain. ``who`` names the caller in the error
        (``"OFWTVC.from_theory"``). The value must be finite and ``> 0`` (``>= 0`` with ``allow_zero``).
        ``argument`` is the caller's keyword that overrides it, when not named ``name`` (the error's hint).
        With ``optional``, a constant that is not finite (unknown) gives ``None`` instead of the error.
        ``norm``: the dual norm of the gradient bounds (``"l2"``, or one the problem declares,
        [`AbstractProblem.constants_in`][ocokit.problems.AbstractProblem.constants_in]; ``"linf"`` bounds default
        to the l2 ones, which bound an l_inf norm too).
        This is the one way every ``from_theory`` reads and overrides a constant.
        """
        override = dict(self.given).get(name) if override is None else override
        if override is not None:
            value, source = float(override), f"{name}={override!r}"
        elif name in ("diameter", "inner_radius"):
            value, source = float(getattr(self.domain, name)), f"the domain's {name}"
        elif name in ProblemConstants.__dataclass_fields__:
            if norm not in ("l2", "linf", *self.norm_constants):
                raise ValueError(f"{who} needs the problem's constants in the {norm} norm, which it does not declare")
            # a bound on an l2 norm bounds the l_inf norm too: the l2 constants stand in for undeclared l_inf ones
            constants = self.norm_constants.get(norm, self.constants)
            where = "" if norm not in self.norm_constants else f" (in {norm})"
            value, source = float(getattr(constants, name)), f"the problem constant {name}{where}"
        else:
            raise ValueError(f"unknown constant {name!r}; expected one of {list(CONSTANT_NAMES)}")
        if optional and not math.isfinite(value):
            return None
        ok = math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
        if not ok:
            bound = ">= 0" if allow_zero else "> 0"
            raise ValueError(
                f"{who} needs {source} (finite, {bound}), got {value}; pass {argument or name}=... or "
                "declare it in the problem's constants()"
            )
        return value

    def giving(self, overrides: Mapping[str, Any]) -> ProblemInfo:
        """This information with the caller's values of the constants named in ``overrides``.

        The names of `CONSTANT_NAMES` among ``overrides`` (the keywords of a ``from_theory``) are held, and
        [`require`][ocokit.algorithms.ProblemInfo.require] then returns them (``None`` keeps the problem's); the other
        names are ignored.
        """
        given = tuple(
            (name, float(value)) for name, value in overrides.items() if name in CONSTANT_NAMES and value is not None
        )
        return dataclasses.replace(self, given=(*self.given, *given))


def hyperparameter(check: _checks.Check | None = None, **kwargs: Any) -> Any:
    """A numeric hyperparameter field: stored as an array leaf, so grids of it vmap and never recompile.

    ``check``, a function ``check(name, value)`` that returns or raises ``ValueError`` naming the parameter
    (ocokit's positivity check, say), validates it when the learner or part is built.
    """
    return _checks.checked_field(check, converter=jnp.asarray, **kwargs)


class AbstractLearner(_checks.Checked):
    """An online learner as three pure functions over an explicit state (optax/blackjax style).

    * ``init(info, key) -> state``: the state before round 1 (fixed shapes and dtypes thereafter).
    * ``decide(state) -> x``: the point played this round; must lie in ``info.domain``. It never sees the
      current round's loss: the engine calls it before generating the round.
    * ``update(state, x, feedback) -> state``: absorb round t's feedback (of the declared kind
      ``feedback``, see [`ocokit.feedback`][ocokit.feedback]) after playing ``x``.
    * ``diagnostics(state) -> dict``: scalars or small arrays the engine records every round (queue
      lengths, oracle calls). By convention ``"oracle_calls"`` counts LMO / projection / inner-solver
      iterations of the last update.

    Numeric hyperparameters are array leaves ([`hyperparameter`][ocokit.algorithms.hyperparameter]), structural choices
    are static
    fields; a field declares its own check (``hyperparameter(check)``, or a static field with its check), run
    when the learner is built. ``from_theory(info,
    **overrides)`` builds the learner with a paper's theory-driven parameters: it reads every constant through
    [`ProblemInfo.require`][ocokit.algorithms.ProblemInfo.require], and any constant (by name) or constructor argument
    may be overridden
    ([`build`][ocokit.algorithms.AbstractLearner.build]).
    """

    feedback: ClassVar[FeedbackKind]
    needs: ClassVar[Needs] = Needs()
    """What it needs of a problem ([`Needs`][ocokit.algorithms.Needs]; by default nothing: any memoryless problem)."""

    @classmethod
    def build(cls, arguments: Mapping[str, Any], overrides: Mapping[str, Any]) -> Self:
        """``cls(**arguments)`` with the caller's ``overrides`` winning: how every ``from_theory`` ends.

        The one theory convention: ``from_theory(info, **overrides)`` gives ``info`` the overrides named after
        constants (``info = info.giving(overrides)``, so [`ProblemInfo.require`][ocokit.algorithms.ProblemInfo.require]
        returns them), computes
        the theorem's constructor ``arguments`` and returns ``cls.build(arguments, overrides)``; every other
        override replaces a constructor argument. A constant the class's ``from_theory`` does not read
        ([`Needs.reads`][ocokit.algorithms.Needs.reads] of its `needs`) or an unknown argument raises ``ValueError``.
        """
        constants = {name for name in overrides if name in CONSTANT_NAMES}
        unread = sorted(constants - set(cls.needs.reads))
        if unread:
            raise ValueError(f"{cls.__name__}.from_theory reads the constants {list(cls.needs.reads)}, not {unread}")
        rest = {name: value for name, value in overrides.items() if name not in constants}
        parameters = inspect.signature(cls).parameters.values()
        if all(p.kind != inspect.Parameter.VAR_KEYWORD for p in parameters):  # else the parts check their own
            names = [p.name for p in parameters]
            unknown = sorted(set(rest) - set(names))
            if unknown:
                raise ValueError(f"unknown parameters {unknown} for {cls.__name__}; valid: {names}")
        return cls(**{**arguments, **rest})

    @abc.abstractmethod
    def init(self, info: ProblemInfo, key: PRNGKeyArray) -> Any:
        """The state before round 1."""

    @abc.abstractmethod
    def decide(self, state: Any) -> Float[Array, "..."]:
        """The decision x_t to play."""

    @abc.abstractmethod
    def update(self, state: Any, x: Float[Array, "..."], feedback: Any) -> Any:
        """The state after observing round t's feedback."""

    @classmethod
    def regret_bound(cls, info: ProblemInfo) -> float | None:
        """The explicit static-regret bound its theorem gives, at its ``from_theory`` parameters, on the problem of
        ``info`` over ``info.horizon`` rounds; ``None`` (the default) when no theorem gives one there."""
        return None

    def prepare(self, state: Any, feedback: Any) -> Any:
        """Absorb feedback available before round 1; the identity by default.

        The engine calls it once, after ``init``, with
        [`ocokit.feedback.before_round_one`][ocokit.feedback.before_round_one]: ``None``, or for a
        feedback kind that looks ahead, the feedback known before playing (``PREDICTIONS``: the prediction oracle of
        the first window).
        """
        del feedback
        return state

    def diagnostics(self, state: Any) -> dict[str, Array]:
        """Per-round quantities to record (none by default)."""
        del state
        return {}

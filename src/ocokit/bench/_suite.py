"""The benchmark suite as data: the standard problems at laptop sizes, the entrants, and who plays what.

A [`SuiteProblem`][ocokit.bench.SuiteProblem] names a problem of the literature and builds it for a horizon (from a
data folder when it needs one). An [`Entrant`][ocokit.bench.Entrant] is a learner on the board: a library class at
its ``from_theory`` parameters, or a user's factory (`entrant`). Who plays what is the rule of
[`why_not`][ocokit.bench.why_not]: what the learner's class declares it needs
([`Needs`][ocokit.algorithms.Needs]) against what the problem declares (its set, memory, constraints, structure
and constants), never found by trying.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ocokit import algorithms as A
from ocokit.algorithms import AbstractLearner, ProblemInfo
from ocokit.datasets import resolve
from ocokit.problems import (
    AbstractProblem,
    DriftingAllocation,
    DriftingQuadratic,
    JobScheduling,
    OnlineLinear,
    OnlineLinearProgram,
    OnlineMatrixCompletion,
    OnlineQuadratic,
    OnlineQuadraticProgram,
    QuadraticWithMemory,
    TimeVaryingRegression,
    synthetic_low_rank_ratings,
)
from ocokit.sets import Box, L2Ball, Simplex


@dataclasses.dataclass(frozen=True)
class SuiteProblem:
    """A standard problem of the suite: ``make(T, data_dir)`` builds it for horizon T.

    ``paper`` names where it comes from (a paper key of [`ocokit.papers`][ocokit.papers] and where in it, as the
    experiments write it); ``data`` is the dataset file it reads (``None``: synthetic): such a problem is played when
    named, or when its data folder is given (`problems`), and only where the file is found (`available`).
    """

    name: str
    title: str
    paper: str
    make: Callable[[int, Path | None], AbstractProblem]
    data: str | None = None

    def available(self, data_dir: Path | None) -> bool:
        """Whether it can be built: synthetic, or its dataset file is under ``data_dir`` (or ``$OCOKIT_DATA``)."""
        if self.data is None:
            return True
        try:
            resolve(self.data, data_dir)
        except FileNotFoundError:
            return False
        return True


SUITE: tuple[SuiteProblem, ...] = (
    SuiteProblem("regression", "time-varying regression, time-varying linear constraints (d = 10, N = 2)",
                 "003 Fig. 1", lambda T, data: TimeVaryingRegression()),
    SuiteProblem("online-qp", "online quadratic programming, fixed linear constraints (d = 2, N = 3)",
                 "003 Fig. 2", lambda T, data: OnlineQuadraticProgram(horizon=T)),
    SuiteProblem("online-lp", "online linear programming, fixed linear constraints (d = 2, N = 3)",
                 "003 Fig. 3", lambda T, data: OnlineLinearProgram(horizon=T)),
    SuiteProblem("job-scheduling", "job scheduling on synthetic diurnal prices (10 regions x 10 centres)",
                 "003 Fig. 4", lambda T, data: JobScheduling.synthetic(num_slots=T)),
    SuiteProblem("gradual-variation", "drifting quadratic on the l2 ball, two fixed constraints (d = 5)",
                 "004 Thms 4.1-4.2", lambda T, data: DriftingQuadratic(dim=5, drift=0.3)),
    SuiteProblem("simplex-budget", "drifting allocation on the simplex under a budget (d = 16)",
                 "004 Thms 6.1-6.2", lambda T, data: DriftingAllocation(dim=16, drift=0.3)),
    SuiteProblem("experts", "linear losses on the probability simplex, no constraints (d = 16)",
                 "Hedge", lambda T, data: OnlineLinear(Simplex(16))),
    SuiteProblem("sc-set-linear", "linear losses over a strongly convex set (l2 ball, d = 5)",
                 "001 Thm 1", lambda T, data: OnlineLinear(L2Ball(5, radius=1.0))),
    SuiteProblem("sc-set-quadratic", "strongly convex quadratic losses over the l2 ball (d = 5)",
                 "001 Thm 2", lambda T, data: OnlineQuadratic(L2Ball(5, radius=1.0))),
    SuiteProblem("matrix-completion", "synthetic rank-3 matrix completion, 30 x 20, nuclear-norm ball",
                 "000 Fig. 1 (synthetic)", lambda T, data: OnlineMatrixCompletion(synthetic_low_rank_ratings(30, 20, rank=3))),  # noqa: E501
    SuiteProblem("memory-predictions", "quadratic costs with memory h = 2 on [-1, 1] (d = 1)",
                 "002 Fig. 1", lambda T, data: QuadraticWithMemory(Box(-1.0, 1.0, dim=1), memory=2, x0=0.5)),
    SuiteProblem("movielens", "MovieLens-100k matrix completion (943 x 1682)", "000 Fig. 1",
                 lambda T, data: OnlineMatrixCompletion.from_movielens(data), data="ml-100k/u.data"),
    SuiteProblem("filmtrust", "FilmTrust matrix completion (1508 x 2071)", "000 Fig. 2",
                 lambda T, data: OnlineMatrixCompletion.from_filmtrust(data), data="filmtrust/ratings.txt"),
)  # fmt: skip
"""The standard problems, at sizes a laptop plays in minutes (``T = 500``, three seeds)."""


def problems(names: Sequence[str] | None, data_dir: Path | None) -> list[SuiteProblem]:
    """The suite problems ``names``; ``None``: the synthetic ones, and those on datasets when ``data_dir`` is given and
    holds their file (``$OCOKIT_DATA`` alone does not add them: they take far longer than the rest). An unknown or
    unavailable name raises ``ValueError``."""
    by_name = {p.name: p for p in SUITE}
    if names is None:
        return [p for p in SUITE if p.data is None or (data_dir is not None and p.available(data_dir))]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown problems {unknown}; the suite has {', '.join(by_name)}")
    missing = [n for n in names if not by_name[n].available(data_dir)]
    if missing:
        files = ", ".join(f"{by_name[n].data}" for n in missing)
        raise ValueError(f"problems {missing} need their data ({files}): give --data FOLDER or set $OCOKIT_DATA")
    return [by_name[n] for n in dict.fromkeys(names)]


THEORY_KEYWORDS: dict[type[AbstractLearner], dict[str, Any]] = {A.OCOMemoryLimitedPredictions: {"window": 1}}
"""The ``from_theory`` arguments a library learner has no default for (the predictions learner's window W)."""


def why_not(cls: type[AbstractLearner], problem: AbstractProblem) -> str | None:
    """Why learner class ``cls`` at its ``from_theory`` parameters cannot play ``problem`` (``None``: it can).

    The rule: [`Needs.theory_mismatch`][ocokit.algorithms.Needs.theory_mismatch] of the class's declared needs
    against the problem's declared set, memory, constraints, structure and constants.
    """
    return cls.needs.theory_mismatch(problem)


@dataclasses.dataclass(frozen=True)
class Entrant:
    """A learner on the board: ``make(info)`` builds it for a problem; ``cls`` is its class when known before
    building (a library learner, or a user's class), which `why_not` reads; ``None`` for a user's factory,
    whose learner the engine checks once built."""

    label: str
    make: Callable[[ProblemInfo], AbstractLearner]
    cls: type[AbstractLearner] | None = None
    note: str = ""

    def why_not(self, problem: AbstractProblem) -> str | None:
        """Why it cannot play ``problem``, as far as its class tells before building (`why_not`)."""
        return None if self.cls is None else why_not(self.cls, problem)


def library_classes() -> list[type[AbstractLearner]]:
    """Every concrete learner class exported by [`ocokit.algorithms`][ocokit.algorithms], by name."""
    found = (getattr(A, name) for name in A.__all__)
    return sorted(
        (c for c in found if inspect.isclass(c) and issubclass(c, AbstractLearner) and not inspect.isabstract(c)),
        key=lambda c: c.__name__,
    )


def library(names: Sequence[str] | None = None) -> list[Entrant]:
    """The library's learners at their ``from_theory`` parameters (``names``: those only; unknown names raise)."""
    classes = {c.__name__: c for c in library_classes()}
    unknown = [n for n in names or () if n not in classes]
    if unknown:
        raise ValueError(f"unknown learners {unknown}; the library has {', '.join(classes)}")
    chosen = list(classes) if names is None else list(dict.fromkeys(names))
    return [_from_class(classes[n], n, THEORY_KEYWORDS.get(classes[n], {})) for n in chosen]


def _from_class(cls: type[AbstractLearner], label: str, keywords: dict[str, Any], note: str = "") -> Entrant:
    make = functools.partial(cls.from_theory, **keywords) if keywords else cls.from_theory
    note = note or "from_theory" + (f" ({', '.join(f'{k} = {v}' for k, v in keywords.items())})" if keywords else "")
    return Entrant(label, make, cls, note)


def entrant(spec: str, taken: Sequence[str] = ()) -> Entrant:
    """The user's learner ``module:name``: a learner class (played at its ``from_theory``) or a callable taking the
    [`ProblemInfo`][ocokit.algorithms.ProblemInfo] and returning a learner.

    The module is imported as by ``python -m`` (the current folder first on the path). Its label is ``name``, with
    `` (user)`` added when ``taken`` (the other labels) has it already. A bad spec raises ``ValueError``.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute.isidentifier():
        raise ValueError(f"--learner takes module:factory (e.g. mypkg.mine:make), got {spec!r}")
    if os.getcwd() not in sys.path:  # a learner in a file of the user's own, as python -m finds it
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"--learner {spec}: cannot import {module_name!r} ({err})") from None
    target = getattr(module, attribute, None)
    label = attribute if attribute not in taken else f"{attribute} (user)"
    if inspect.isclass(target) and issubclass(target, AbstractLearner):
        return _from_class(target, label, {}, f"user's class {spec}, from_theory")
    if callable(target) and not inspect.isclass(target):
        return Entrant(label, target, None, f"user's factory {spec}")
    raise ValueError(
        f"--learner {spec}: {attribute!r} must be an AbstractLearner class with from_theory or a callable taking the "
        f"ProblemInfo and returning a learner, got {type(target).__name__}"
    )

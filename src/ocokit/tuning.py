"""Grid searches of hyperparameters: the third kind of study, declared as data and recorded with the command that
wrote them.

Papers tune their baselines by "choosing the best hyper-parameters from a grid". A [`Tuning`][ocokit.experiments.Tuning]
declares an experiment's search: each [`Method`][ocokit.experiments.Method] (its class, its knob: a learner field
scaled from its theory value, or a theory input), the grid, and the folder of recorded tables.
[`Tuning.search`][ocokit.experiments.Tuning.search] plays each grid value on the tuning seeds as a stored run of the
experiment's store (one vmapped sweep per method, resumable, on the executor) and
[`choose`][ocokit.experiments.choose] picks a value by [`TUNING_CRITERION`][ocokit.experiments.TUNING_CRITERION].
``ocokit tune NAME --T T`` records the table that the experiment's runs use by default; the experiment's option
``tune=true`` searches again at run time.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import operator
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import equinox as eqx
import jax
import numpy as np

from ocokit import metrics
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine import stack, sweep
from ocokit.harness import Experiment, Option, Progress
from ocokit.results import atomic_write_json
from ocokit.store import Context

GRID = tuple(10.0**k for k in range(-5, 6))
"""The grid {10^-5, 10^-4, ..., 10^5} of a knob."""
TUNING_CRITERION = (
    "smallest mean final cumulative loss over the tuning seeds; CCV second: among the values whose loss is within "
    "1% of the smallest, the smallest mean final CCV (then the grid value nearest 1); diverged runs excluded"
)
TUNING_OPTIONS = (
    Option("tune", bool, False, "run the grid search now and use its choice"),
    Option("tuned", bool, True, "use the recorded grid search's choices (false: every knob at its theory value)"),
    Option("tune_T", int, None, "horizon of the grid search (default: T)", low=1),
    Option("tune_seeds", int, 1, "tuning seeds", low=1),
)
"""The options of an experiment with a [`Tuning`][ocokit.experiments.Tuning]."""


def choose(grid: Sequence[float | tuple[float, ...]], loss: np.ndarray, ccv: np.ndarray) -> int:
    """Index into ``grid`` chosen by [`TUNING_CRITERION`][ocokit.experiments.TUNING_CRITERION] (``nan`` marks a diverged
    run).

    A grid value may be a tuple (a product grid over several knobs); "nearest 1" then sums each knob's
    distance from 1 in decades.
    """
    ok = np.isfinite(loss) & np.isfinite(ccv)
    nearest_one = lambda idx: int(min(idx, key=lambda i: np.abs(np.log10(grid[i])).sum()))  # noqa: E731
    if not ok.any():
        return nearest_one(range(len(grid)))
    near = np.flatnonzero(ok & (loss <= np.min(loss[ok]) * 1.01 + 1e-12))
    return nearest_one(near[np.isclose(ccv[near], np.min(ccv[near]), rtol=1e-9, atol=0.0)])


def grid_scores(
    learners: Sequence[AbstractLearner], problem: Any, T: int, seeds: Sequence[int], *, batched: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Each learner's final cumulative loss and CCV on each of ``seeds``, ``(len(learners), len(seeds))`` each
    (``nan`` where a run diverged).

    ``batched``: the learners run as one vmapped sweep; ``False``: one sweep each, for learners with
    data-dependent loops (a vmapped ``while_loop`` runs every member as long as the slowest one).
    """
    options = {"throw": False, "chunk_size": len(learners) * len(seeds), "comparators": False}
    if batched:
        trajs = [sweep(stack(list(learners)), problem, T, list(seeds), batched_learner=True, **options)]
    else:
        trajs = [jax.tree.map(lambda a: a[None], sweep(lrn, problem, T, list(seeds), **options)) for lrn in learners]
    traj = jax.tree.map(lambda *a: np.concatenate(a), *trajs)
    ok = np.asarray(traj.first_bad_round) < 0
    loss = np.where(ok, metrics.cumulative_loss(traj)[..., -1], np.nan)
    return loss, np.where(ok, metrics.hard_violation(traj)[..., -1], np.nan)


def grid_search(
    learners: Sequence[AbstractLearner],
    grid: Sequence[float | tuple[float, ...]],
    problem: Any,
    T: int,
    seeds: Sequence[int],
    *,
    batched: bool = True,
) -> dict[str, Any]:
    """Score the learners built for each value of ``grid`` on ``seeds`` (`grid_scores`) and choose one.

    Returns ``{"grid", "chosen", "cumulative_loss", "ccv"}``: the mean final cumulative loss and CCV over the
    seeds (``nan`` where a run diverged) and the value chosen by [`choose`][ocokit.experiments.choose].
    """
    loss, ccv = grid_scores(learners, problem, T, seeds, batched=batched)
    return _row(grid, loss.mean(axis=1), ccv.mean(axis=1))


def _row(grid, loss: np.ndarray, ccv: np.ndarray) -> dict[str, Any]:
    return {"grid": list(grid), "chosen": grid[choose(grid, loss, ccv)], "cumulative_loss": loss.tolist(),
            "ccv": ccv.tolist()}  # fmt: skip


def scale_field(learner: AbstractLearner, path: str, scale: float) -> AbstractLearner:
    """``learner`` with its numeric field ``path`` (a dotted path into a part, e.g. ``"chain.eta"``) times ``scale``."""
    field = operator.attrgetter(path)
    return eqx.tree_at(field, learner, field(learner) * scale)


@dataclasses.dataclass(frozen=True)
class Method:
    """A method of a [`Tuning`][ocokit.experiments.Tuning]: ``cls.from_theory(info, **keywords)`` with its ``knob``
    tuned (a name, or a tuple of names tuned over the product of their grids).

    A knob named in the tuning's ``theory_inputs`` is a theory input: the grid value itself goes to those
    ``from_theory`` keywords (say the Lipschitz constant ``G``); any other knob is the learner's field (at the path
    ``fields`` gives, default its name), multiplied by the grid value (a multiplier of its theory value).
    """

    cls: type[AbstractLearner]
    knob: str | tuple[str, ...]
    keywords: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    note: str = ""
    fields: Mapping[str, str] = dataclasses.field(default_factory=dict)


def knob_values(knob: str | tuple[str, ...], value: Any) -> list[tuple[str, float]]:
    """``(name, value)`` for each name of ``knob`` at ``value`` (a tuple for a tuple of knobs; none for ``None``)."""
    value = grid_value(value)
    return [] if value is None else list(zip(knob, value, strict=True)) if isinstance(knob, tuple) else [(knob, value)]


def grid_value(value: Any) -> Any:
    """A knob value as a grid holds it (JSON stores a product grid's tuples as lists)."""
    return tuple(value) if isinstance(value, list) else value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Tuning:
    """An experiment's grid search.

    Attributes:
        methods: label -> the [`Method`][ocokit.experiments.Method] searched.
        folder: where the recorded tables live, ``<experiment>.json``.
        theory_inputs: knob -> the ``from_theory`` keywords that receive its value (knobs not named: fields).
        grid: each knob's grid.
        seed_offset: tuning seeds are ``seed_offset, seed_offset + 1, ...``, disjoint from the evaluation seeds.
        unbatched: labels whose grid runs one sweep per value (data-dependent loops;
            [`grid_search`][ocokit.experiments.grid_search]).
        reference_loss: ``problem -> loss per round`` of a reference (say ``X = 0``): the tables also give each
            value's loss relative to it.
    """

    option_names: ClassVar[tuple[str, ...]] = tuple(o.name for o in TUNING_OPTIONS)
    """The options an experiment with a tuning declares ([`TUNING_OPTIONS`][ocokit.experiments.TUNING_OPTIONS])."""
    methods: Mapping[str, Method]
    folder: Path
    theory_inputs: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    grid: tuple[float, ...] = GRID
    seed_offset: int = 10_000
    unbatched: tuple[str, ...] = ()
    reference_loss: Callable[[Any], float] | None = None

    @property
    def knobs(self) -> dict[str, str | tuple[str, ...]]:
        """Label -> the knob tuned."""
        return {label: method.knob for label, method in self.methods.items()}

    def build(self, label: str, info: ProblemInfo, value: Any = None) -> AbstractLearner:
        """Method ``label`` by its ``from_theory``, its knobs at ``value`` (``None``: the theory's)."""
        method = self.methods[label]
        pairs = knob_values(method.knob, value)
        theory = {k: v for n, v in pairs if n in self.theory_inputs for k in self.theory_inputs[n]}
        learner = method.cls.from_theory(info, **(dict(method.keywords) | theory))
        for knob, v in pairs:
            learner = learner if knob in self.theory_inputs else scale_field(learner, method.fields.get(knob, knob), v)
        return learner

    def describe(self, label: str, value: Any) -> str:
        """How ``label``'s knobs are set at ``value``, for the legend's note."""
        knob = self.methods[label].knob
        if value is None:
            return (
                f"{knob} at its theory value"
                if isinstance(knob, str)
                else f"{' and '.join(knob)} at their theory values"
            )
        return ", ".join(f"{k} = {v:g} " + ("in the theorem's formulas" if k in self.theory_inputs else "x theory")
                         for k, v in knob_values(knob, value))  # fmt: skip

    def grid_of(self, label: str) -> tuple:
        """The grid of ``label``'s knob: `grid`, or its product with itself for a tuple of knobs."""
        knob = self.knobs[label]
        return self.grid if not isinstance(knob, tuple) else tuple(itertools.product(self.grid, repeat=len(knob)))

    def seeds(self, n: int) -> list[int]:
        """The first ``n`` tuning seeds."""
        return [self.seed_offset + s for s in range(n)]

    def recorded(self, name: str) -> dict:
        """The recorded table of experiment ``name`` (``{}`` when none is recorded)."""
        path = self.folder / f"{name}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def chosen(self, name: str) -> dict[str, Any]:
        """Label -> the value the recorded table chose; a row that tuned another knob than `knobs` names
        (a table older than the knob) is not used."""
        rows = self.recorded(name).get("methods", {}).items()
        return {m: grid_value(r["chosen"]) for m, r in rows if grid_value(r["knob"]) == self.knobs.get(m)}

    def search(self, ctx: Context, labels, problem, T: int, seeds: int, started=None) -> dict[str, Any]:
        """The grid search of each of ``labels`` on the first ``seeds`` tuning seeds at horizon ``T``: per label,
        [`grid_search`][ocokit.experiments.grid_search]'s row with the knob (and the loss relative to the reference).

        The third kind of study beside [`Comparison`][ocokit.experiments.Comparison] and
        [`Sweep`][ocokit.experiments.Sweep]: each grid value is a stored run of ``ctx``'s store (one row per seed),
        a label's missing values are computed as one unit on its executor (one vmapped sweep), and a re-run reads
        them back. ``started(label, values)`` is called as each label's search starts."""
        info, keys, methods = ProblemInfo.of(problem, T), self.seeds(seeds), {}
        for m in labels:
            grid, knob, batched = self.grid_of(m), self.knobs[m], m not in self.unbatched
            if started is not None:
                started(m, len(grid))
            learners = [self.build(m, info, v) for v in grid]
            configs = {i: {"knob": knob, "value": v, "learner": learners[i], "problem": problem, "T": T,
                           "seeds": keys, "criterion": TUNING_CRITERION} for i, v in enumerate(grid)}  # fmt: skip

            def compute(missing, learners=learners, batched=batched):
                loss, ccv = grid_scores([learners[i] for i in missing], problem, T, keys, batched=batched)
                cols = lambda j: {"seed": np.asarray(keys), "cumulative_loss": loss[j], "ccv": ccv[j]}  # noqa: E731
                return {i: (cols(j), {}) for j, i in enumerate(missing)}

            runs = ctx.cells(f"{m} grid search", configs, compute)
            loss, ccv = (
                np.array([np.mean(runs[i][0][k]) for i in range(len(grid))]) for k in ("cumulative_loss", "ccv")
            )
            methods[m] = {"knob": knob, **_row(grid, loss, ccv)}
            if self.reference_loss is not None:
                reference = T * self.reference_loss(problem)
                methods[m]["loss_vs_reference"] = [v / reference for v in methods[m]["cumulative_loss"]]
        return {"experiment": ctx.experiment.name, "criterion": TUNING_CRITERION, "T": T, "seeds": keys,
                "methods": methods}  # fmt: skip

    def choices(self, ctx: Context, labels, problem) -> tuple[dict[str, Any], str]:
        """The knob values of a run ([`TUNING_OPTIONS`][ocokit.experiments.TUNING_OPTIONS]) and where they come from:
        the recorded table, the
        theory (``tuned=false``), or a search now (``tune=true``, its table written to ``out/tuning.json``)."""
        name, o = ctx.experiment.name, ctx.options
        if not o["tune"]:
            return (self.chosen(name) if o["tuned"] else {}), f"grid search recorded in {self.folder.name}/{name}.json"
        T = o["tune_T"] or ctx.T
        table = self.search(ctx, labels, problem, T, o["tune_seeds"])
        atomic_write_json(ctx.out / "tuning.json", table)
        return {m: grid_value(r["chosen"]) for m, r in table["methods"].items()}, f"tuned now, T = {T}"

    def record(
        self,
        exp: Experiment,
        problem,
        T: int,
        seeds: int,
        command: str,
        path: Path | None = None,
        started=None,
        out: Path | None = None,
        data_dir: Path | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Path:
        """Search every tuned method of ``exp`` and write the table its runs use by default (or to ``path``); the
        grid's runs are kept under ``out`` (a re-run resumes), or in a temporary folder when ``out`` is ``None``."""
        labels = [a.label for a in exp.algorithms if a.label in self.knobs]
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) if out is None else Path(out)
            raw = {k: str(v) for k, v in (options or {}).items()}
            ctx = Context(exp, T, seeds, folder, data_dir, exp.parse_options(raw), raw, Progress())
            table = self.search(ctx, labels, problem, T, seeds, started=started)
        path = self.folder / f"{exp.name}.json" if path is None else Path(path)
        constants = dataclasses.asdict(problem.constants())
        atomic_write_json(path, {"command": command, "problem_constants": constants, **table})
        return path

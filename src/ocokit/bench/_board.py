"""Playing the board: every entrant on every problem it can play, over seeds with common random numbers.

Runs go to the content-addressed store of the experiments ([`Context.cells`][ocokit.experiments.Context.cells]: one
Parquet file per seed under ``OUT/runs/experiment=bench/``), so a second command computes only what is missing, and a
Ray executor computes the units elsewhere. Each seed's comparators (best fixed point, per-round optimum) are computed
once per problem, for every entrant. A run that turns non-finite is stored as it is and its row says so (the round
and the quantity, as [`NonFiniteError`][ocokit.NonFiniteError] would); an entrant whose building or playing raises
gets a row with the message; the rest of the board is played.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ocokit import metrics
from ocokit.algorithms import AbstractLearner, ProblemInfo
from ocokit.bench._suite import Entrant, SuiteProblem
from ocokit.engine import with_comparators
from ocokit.engine._game import check_compatible
from ocokit.executors import AbstractExecutor, Local
from ocokit.harness import Experiment, Outcome, Progress
from ocokit.store import Context
from ocokit.studies import SeedComparators, play, round_columns
from ocokit.trajectory import QUANTITIES

MEASURES = ("static_regret", "dynamic_regret", "hard_violation", "squared_violation", "cumulative_loss")
"""The final values the board reports per seed (of `ocokit.metrics.ROUND_METRICS`; CCV is the
hard violation), with ``seconds_per_round``."""

BENCH = Experiment(name="bench", paper="", title="ocokit bench", study=lambda exp, ctx: Outcome({}))
"""The store's name for the board's runs (not a registered experiment)."""


@dataclasses.dataclass
class Result:
    """One entrant on one problem: ``values[measure]`` per seed (empty when it never ran), or why it failed.

    ``error`` is the first failure: a seed's run turned non-finite (``error_round`` its round), or building or
    playing the learner raised (``error_round`` -1); ``skipped`` says why the pair is not played at all.
    """

    problem: str
    learner: str
    seeds: list[int] = dataclasses.field(default_factory=list)
    values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    error: str = ""
    error_round: int = -1
    skipped: str = ""


@dataclasses.dataclass
class Board:
    """What a bench command played: every result, the sizes, and how many runs were new or found stored."""

    results: list[Result]
    problems: list[SuiteProblem]
    entrants: list[Entrant]
    T: int
    seeds: int
    new_runs: int = 0
    skipped_runs: int = 0

    def played(self) -> list[Result]:
        """The results of the pairs that were scheduled (compatible), in problem then entrant order."""
        return [r for r in self.results if not r.skipped]


def play_board(
    problems: Sequence[SuiteProblem],
    entrants: Sequence[Entrant],
    *,
    T: int,
    seeds: int,
    out: Path,
    data_dir: Path | None = None,
    progress: Progress | None = None,
    executor: AbstractExecutor | None = None,
    chunk_size: int = 10,
) -> Board:
    """Play every entrant on every problem it can play (`Entrant.why_not`, then the engine's check of the built
    learner), seeds ``0..seeds-1``, storing each run under ``out`` (resumed); the [`Board`][ocokit.bench.Board]."""
    ctx = Context(BENCH, T, seeds, Path(out), data_dir, {}, {}, progress or Progress(), True, executor or Local())
    results = []
    for suite in problems:
        problem = suite.make(T, data_dir)
        env = SeedComparators(problem, T, chunk_size)  # each seed's comparators, once for every entrant
        for e in entrants:
            results.append(_play_pair(ctx, suite, problem, e, env, chunk_size))
    return Board(results, list(problems), list(entrants), T, seeds, ctx.new, ctx.skipped)


def _play_pair(ctx: Context, suite: SuiteProblem, problem, e: Entrant, env, chunk_size: int) -> Result:
    result = Result(suite.name, e.label)
    why = e.why_not(problem)
    if why is not None:
        result.skipped = why
        return result
    try:
        learner = e.make(ProblemInfo.of(problem, ctx.T))
    except Exception as err:  # the entrant's own code: its row says what it raised
        return _failed(result, "building it raised", err)
    if not isinstance(learner, AbstractLearner):
        return _failed(result, "building it", TypeError(f"returned a {type(learner).__name__}, not a learner"))
    try:
        check_compatible(learner, problem)  # a user's factory is checked once built
    except ValueError as err:
        result.skipped = str(err)
        return result
    configs = {s: {"problem_name": suite.name, "learner": learner, "problem": problem, "T": ctx.T, "seed": s}
               for s in range(ctx.seeds)}  # fmt: skip

    # What a unit computes, pickled for a Ray worker: the learner, problem, T and comparators only (not ctx, whose
    # progress display holds locks).
    compute = functools.partial(_compute, learner, problem, ctx.T, env=env, chunk_size=chunk_size)
    try:
        cells = ctx.cells(f"{e.label} on {suite.name}", configs, compute, chunk_size)
    except Exception as err:  # tracing, compiling or running it raised (locally, or on a worker: UnitError)
        return _failed(result, "playing it raised", err)
    records = [cells[s] for s in range(ctx.seeds)]
    result.seeds = list(range(ctx.seeds))
    names = [m for m in MEASURES if all(m in columns for columns, _ in records)]
    result.values = {m: np.array([columns[m][-1] for columns, _ in records], float) for m in names}
    result.values["seconds_per_round"] = np.array([meta["wall_seconds_per_round"] for _, meta in records], float)
    bad = [(s, meta) for s, (_, meta) in zip(result.seeds, records, strict=True) if meta.get("error")]
    if bad:
        seed, meta = bad[0]
        result.error, result.error_round = f"seed {seed}: {meta['error']}", int(meta["first_bad_round"])
    return result


def _failed(result: Result, what: str, err: BaseException) -> Result:
    message = " ".join(str(err).split()) or type(err).__name__
    result.error = f"{what}: {type(err).__name__}: {message}"[:300]
    return result


def _compute(learner, problem, T: int, missing: list, env, chunk_size: int) -> dict[int, tuple[dict, dict]]:
    """The runs of seeds ``missing``: per-round columns and metrics, the time per round of a compiled run, and each
    seed's first non-finite round (stored, not raised)."""
    traj, timing = play(learner, problem, T, missing, chunk_size=chunk_size, comparators=False, throw=False)
    traj = with_comparators(traj, env(missing))
    per_round = metrics.available_metrics(traj)
    bad, what = np.asarray(traj.first_bad_round), np.asarray(traj.bad_quantity)
    done: dict[int, tuple[dict, dict[str, Any]]] = {}
    for i, s in enumerate(missing):
        error = f"non-finite {QUANTITIES[what[i]]} at round {bad[i]}" if bad[i] >= 0 else ""
        meta = timing | {"first_bad_round": int(bad[i]), "error": error}
        done[s] = (round_columns(traj, i) | {k: v[i] for k, v in per_round.items()}, meta)
    return done

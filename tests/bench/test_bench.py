"""The benchmark: the compatibility rule, the leaderboard's front, and ``ocokit bench`` end to end."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ocokit import bench, cli
from ocokit.algorithms import OGD, Hedge, OCOMemoryLimitedPredictions, ProblemInfo
from ocokit.bench._suite import library_classes
from ocokit.engine._game import check_compatible
from ocokit.problems import QuadraticWithMemory, TimeVaryingRegression
from ocokit.sets import Box

T = 30
SYNTHETIC = [p for p in bench.SUITE if p.data is None]
PROBLEMS = {p.name: p.make(T, None) for p in SYNTHETIC}
runner = CliRunner()


def test_every_library_learner_plays_a_suite_problem():
    homeless = [c.__name__ for c in library_classes() if all(bench.why_not(c, p) for p in PROBLEMS.values())]
    assert not homeless


@pytest.mark.parametrize("entrant", bench.library(), ids=lambda e: e.label)
def test_scheduled_pairs_build_and_pass_the_engine_check(entrant):
    for problem in PROBLEMS.values():
        if entrant.why_not(problem) is None:
            check_compatible(entrant.make(ProblemInfo.of(problem, T)), problem)  # raises for an incompatible pair


@pytest.mark.parametrize("entrant", bench.library(), ids=lambda e: e.label)
def test_a_declared_constant_is_one_from_theory_cannot_do_without(entrant):
    for problem in PROBLEMS.values():
        why = entrant.why_not(problem)
        if why is not None and "needs the constant" in why:
            with pytest.raises(ValueError):
                entrant.make(ProblemInfo.of(problem, T))


def test_a_learner_reading_predictions_is_compared_on_losses_with_memory_only():
    played = [name for name, p in PROBLEMS.items() if bench.why_not(OCOMemoryLimitedPredictions, p) is None]
    assert played and all(PROBLEMS[name].memory() > 1 for name in played)
    assert "predictions" in bench.why_not(OCOMemoryLimitedPredictions, PROBLEMS["online-qp"])


def test_the_engine_refuses_what_a_learner_declares_it_cannot_play():
    memory = QuadraticWithMemory(Box(-1.0, 1.0, dim=1), memory=2)
    with pytest.raises(ValueError, match="memory"):
        check_compatible(OGD(eta=0.1), memory)
    with pytest.raises(ValueError, match="Simplex"):
        check_compatible(Hedge(eta=0.1), TimeVaryingRegression())


def test_pareto_front_by_hand():
    points = {
        "a": (1.0, 5.0),
        "b": (2.0, 2.0),
        "c": (3.0, 2.0),
        "d": (5.0, 0.0),
        "e": (1.0, 5.0),
        "f": (float("nan"), 0),
    }
    assert bench.pareto_front(points) == {"a", "b", "d", "e"}  # c is dominated by b; a and e tie; nan never


def _bench(out, *extra):
    args = ["bench", "--problems", "regression,experts", "--learners", "OGD,Hedge", "--T", "20", "--seeds", "2",
            "--out", str(out), "--learner", "tests.bench.user_learners:make", *extra]  # fmt: skip
    return runner.invoke(cli.app, args)


def test_bench_end_to_end_with_a_user_learner_a_failing_one_and_resume(tmp_path):
    out = tmp_path / "board"
    extra = ["--learner", "tests.bench.user_learners:NaNAfterThree", "--learner", "tests.bench.user_learners:broken"]
    first = _bench(out, *extra, "--json")
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary == json.loads((out / "leaderboard.json").read_text())
    boards = {p["name"]: p["learners"] for p in summary["problems"]}
    assert set(boards["regression"]) == {"OGD", "make", "NaNAfterThree", "broken"}
    assert set(boards["experts"]) == {"OGD", "Hedge", "make", "NaNAfterThree", "broken"}
    assert {"problem": "regression", "learner": "Hedge"} in [{k: v[k] for k in ("problem", "learner")}
                                                             for v in summary["not_played"]]  # fmt: skip
    nan = boards["regression"]["NaNAfterThree"]
    assert "non-finite loss at round 4" in nan["error"] and nan["error_round"] == 4 and not nan["on_front"]
    assert "RuntimeError: the user's factory is broken" in boards["experts"]["broken"]["error"]
    for board in boards.values():  # the rest of the board: every other learner has its numbers
        for label in set(board) - {"NaNAfterThree", "broken"}:
            assert not board[label]["error"] and board[label]["seeds"] == 2 and "static_regret" in board[label]
        assert any(v["on_front"] for v in board.values())
    ranks = {r["learner"]: r for r in summary["ranks"]}
    assert ranks["make"]["problems"] == 2 and ranks["broken"]["failed"] == 2
    table = pq.read_table(out / "leaderboard.parquet").to_pandas()
    assert list(table.columns) == ["learner", "problem", "seed", "metric", "value"]
    assert set(table.learner) == {"OGD", "Hedge", "make", "NaNAfterThree"}  # broken has no runs
    assert len(table[(table.learner == "make") & (table.metric == "hard_violation")]) == 4  # 2 problems x 2 seeds
    page = (out / "leaderboard.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "rank summary" in page
    assert "| learner | front | regret |" in (out / "leaderboard.md").read_text()
    second = _bench(out, *extra, "--plain")
    assert second.exit_code == 0, second.output
    assert "(0 new runs, " in second.output  # resumed: every run read back from the store
    assert "### regression" in second.output


def test_bench_names_an_unknown_problem_or_a_bad_learner_spec(tmp_path):
    result = runner.invoke(cli.app, ["bench", "--problems", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown problems ['nope']" in result.output
    result = runner.invoke(cli.app, ["bench", "--learner", "no_colon", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "module:factory" in result.output

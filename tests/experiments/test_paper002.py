"""The paper-002 experiments run small: records, summary, figure, claims, re-runs and redraws."""

import json

import numpy as np
import pytest

from ocokit import experiments as E
from ocokit.results import load_runs


def test_both_experiments_are_registered_with_the_papers_settings():
    assert {"memory-predictions-horizon", "memory-predictions-window"} <= set(E.names())
    horizon, window = E.get("memory-predictions-horizon"), E.get("memory-predictions-window")
    assert (horizon.default_T, horizon.default_seeds, window.default_T, window.default_seeds) == (
        20,
        200,
        20,
        200,
    )
    assert len(horizon.algorithms) == 4 and len(window.algorithms) == 6
    assert len(horizon.claims) == 3 and len(window.claims) == 4
    with pytest.raises(ValueError, match="unknown options"):
        window.run(T=5, seeds=1, out="/nonexistent", options={"colour": "red"})


def test_horizon_experiment_runs_small_and_skips_finished_runs(tmp_path):
    exp = E.get("memory-predictions-horizon")
    options = {"laws": "truncated_gaussian"}
    report = exp.run(T=6, seeds=8, out=tmp_path, options={**options, "literal_seeds": "2"})
    assert (
        report.new_runs == 5 and report.skipped_runs == 0
    )  # 2 configurations x T in {5, 6}, and the literal
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["T"] == 6 and (tmp_path / "memory-predictions-horizon.png").stat().st_size > 10_000
    algos = summary["algorithms"]
    literal = algos.pop("truncated Gaussian, one-point (literal: unconstrained)")
    assert (
        literal["runs"] == 2 and literal["diverged"] == 2
    )  # spec §6 B3: the paper's literal setting blows up
    assert set(algos) == {"truncated Gaussian, two-point", "truncated Gaussian, one-point"}
    for stats in algos.values():
        assert (
            stats["seeds"] == 2 and stats["diverged"] == 0
        )  # a quarter of the runs, as the paper's 50 of 200
        assert stats["by_T"]["T"] == [5, 6] and all(r > 0 for r in stats["by_T"]["median_regret"])
    runs = load_runs(tmp_path)
    assert len(runs) == 5 and sum(np.all(cols["regret"] > 0) for cols, _ in runs) >= 4
    assert {c.statement for c in report.claims} == {c.statement for c in exp.claims}
    assert any(
        "not measured" in c.measured for c in report.claims
    )  # the Gaussian configurations were not run
    again = exp.run(T=6, seeds=8, out=tmp_path, options={**options, "literal_seeds": "2"})
    assert again.new_runs == 0 and again.skipped_runs == 5
    assert exp.plot(tmp_path).exists()


def test_window_experiment_runs_small_and_measures_the_literal_one_point_divergence(tmp_path):
    exp = E.get("memory-predictions-window")
    options = {"laws": "truncated_gaussian", "points": "two_point", "windows": "2", "literal_seeds": "2"}
    report = exp.run(T=8, seeds=4, out=tmp_path, options=options)
    assert report.new_runs == 2  # one configuration at W = 2, and the literal single-point setting
    algos = json.loads((tmp_path / "summary.json").read_text())["algorithms"]
    stats = algos["truncated Gaussian, two-point"]
    assert stats["by_W"]["W"] == [2] and np.isfinite(stats["by_W"]["median_log_regret"][0])
    literal = next(v for k, v in algos.items() if "literal" in k)
    assert (
        literal["runs"] == 2 and literal["diverged"] == 2
    )  # spec §6 B3: the paper's literal setting blows up
    assert (tmp_path / "memory-predictions-window.png").exists()
    assert exp.run(T=8, seeds=4, out=tmp_path, options=options).new_runs == 0

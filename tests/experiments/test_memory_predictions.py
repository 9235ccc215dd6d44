"""The paper-002 experiments run small: records, summary, figure, claims, re-runs and redraws."""

import json

import numpy as np
import pytest

from ocokit import experiments as E
from ocokit.results import load_runs

pytestmark = pytest.mark.integration


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
    assert len(horizon.claims) == 4 and len(window.claims) == 5
    with pytest.raises(ValueError, match="unknown options"):
        window.run(T=5, seeds=1, out="/nonexistent", options={"colour": "red"})


def test_horizon_experiment_runs_small_and_skips_finished_runs(tmp_path):
    exp = E.get("memory-predictions-horizon")
    options = {"laws": "truncated_gaussian", "points": "two_point", "literal_seeds": "2"}
    report = exp.run(T=5, seeds=8, out=tmp_path, options=options)
    assert report.new_runs == 2 and report.skipped_runs == 0  # one configuration at T = 5, and the literal
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["T"] == 5 and (tmp_path / "memory-predictions-horizon.png").stat().st_size > 10_000
    algos = summary["algorithms"]
    literal = algos.pop("truncated Gaussian, one-point (literal: unconstrained)")
    stats = algos.pop("truncated Gaussian, two-point")
    # spec §6 B3: the paper's single-point settings on R run away (they pass 1e6 only later than T = 5)
    regret = stats["regret"]["T"]
    assert literal["runs"] == 2 and literal["median_regret"] > 10 * regret["median"][0]
    assert not algos
    assert regret["runs"] == regret["finite"] == [2]  # a quarter of the runs: the paper's 50 of 200
    assert regret["x"] == [5] and 0 < regret["median"][0] < 1e3
    cols, meta = next((c, m) for c, m in load_runs(tmp_path) if m["algorithm"] == "truncated Gaussian, two-point")
    assert list(cols["seed"]) == [5000, 5001]  # a fresh instance per (T, seed)
    np.testing.assert_allclose(cols["regret_over_T"], cols["regret"] / 5)
    assert np.all(cols["regret"] > 0) and meta["T"] == 5
    assert {c.statement for c in report.claims} == {c.statement for c in exp.claims}
    assert any("not measured" in c.measured for c in report.claims)  # the Gaussian configurations were not run
    literal_claim = report.claims[-1]
    assert "2 runs diverged" in literal_claim.measured and "X = [-5, 5]" in literal_claim.measured
    again = exp.run(T=5, seeds=8, out=tmp_path, options=options)
    assert again.new_runs == 0 and again.skipped_runs == 2
    assert exp.plot(tmp_path).exists()


def test_window_experiment_runs_small_and_measures_the_literal_one_point_divergence(tmp_path):
    # The single-point configuration on the box is the literal setting's learner (one compilation for both).
    exp = E.get("memory-predictions-window")
    options = {"laws": "truncated_gaussian", "points": "one_point", "windows": "2", "literal_seeds": "2"}
    report = exp.run(T=8, seeds=4, out=tmp_path, options=options)
    assert report.new_runs == 2  # one configuration at W = 2, and the literal single-point setting
    algos = json.loads((tmp_path / "summary.json").read_text())["algorithms"]
    stats = algos["truncated Gaussian, one-point"]  # what the figure shows: the paper's parameters on [-5, 5]
    assert stats["log_regret"]["W"]["x"] == [2] and stats["regret"]["W"]["finite"] == [1]  # a quarter of 4
    assert np.isfinite(stats["log_regret"]["W"]["median"][0]) and stats["regret"]["W"]["mean"][0] < 1e4
    literal = next(v for k, v in algos.items() if "literal" in k)
    assert literal["runs"] == 2 and literal["diverged"] == 2  # spec §6 B3: the paper's literal setting blows up
    assert not report.claims[-1].holds and "2/2 runs diverged" in report.claims[-1].measured
    assert (tmp_path / "memory-predictions-window.png").exists()
    assert exp.run(T=8, seeds=4, out=tmp_path, options=options).new_runs == 0

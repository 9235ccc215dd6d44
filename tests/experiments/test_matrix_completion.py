"""The matrix-completion experiments of paper 000 (Figs. 1-2) at small size, their claims and their tuning."""

import dataclasses
import json
import math

import numpy as np
import pytest

from ocokit import experiments, run
from ocokit.algorithms import ProblemInfo
from ocokit.experiments import matrix_completion as mc
from ocokit.problems import synthetic_low_rank_ratings

from ..problems.test_matrix_completion import write_ratings


@pytest.fixture
def small_data(tmp_path):
    """A folder laid out like OCOKIT_DATA with small generated MovieLens and FilmTrust ratings files."""
    folder = tmp_path / "data"
    write_ratings(folder, synthetic_low_rank_ratings(12, 10, n_obs=40, step=1.0, seed=5), "movielens")
    ft = synthetic_low_rank_ratings(11, 9, n_obs=30, low=0.5, high=4.0, step=0.5, seed=6)
    write_ratings(folder, ft, "filmtrust")
    return folder


def _check_report(report, out, labels, T, seeds):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["T"] == T and set(summary["algorithms"]) == set(labels)
    for label in labels:
        stats = summary["algorithms"][label]
        assert stats["seeds"] == seeds and "x theory" in stats["note"]
        for metric in ("cumulative_loss", "hard_violation"):
            assert math.isfinite(stats[metric]["mean"]) and stats[metric]["mean"] >= 0
    assert (out / f"{report.experiment}.png").read_bytes()[:4] == b"\x89PNG"
    assert [c.statement for c in report.claims] == [c.statement for c in experiments.get(report.experiment).claims]
    for claim in report.claims:  # measured with numbers, not "not measured"
        assert "not measured" not in claim.measured and any(ch.isdigit() for ch in claim.measured)


def test_movielens_experiment_on_real_data_at_tiny_T_skips_finished_runs(data_dir, tmp_path):
    exp = experiments.get("matrix-completion-movielens")
    out = tmp_path / "out"
    report = exp.run(T=3, seeds=2, out=out, data_dir=data_dir)
    _check_report(report, out, ("OFW-TVC", "SCOFW-TVC", "OPDP", "LPM"), 3, 2)
    assert report.new_runs == 8
    # round 1 plays X_1 = 0 for every method: loss r^2 / 2 >= 1/2 for a MovieLens rating r in 1..5, g_1 = 0
    for label in report.summary:
        assert report.summary[label]["cumulative_loss"]["mean"] >= 0.5
    again = exp.run(T=3, seeds=2, out=out, data_dir=data_dir)
    assert again.new_runs == 0 and again.skipped_runs == 8
    assert again.summary["OFW-TVC"]["cumulative_loss"] == report.summary["OFW-TVC"]["cumulative_loss"]


def test_filmtrust_experiment_runs_small(small_data, tmp_path):
    report = experiments.get("matrix-completion-filmtrust").run(T=8, seeds=2, out=tmp_path / "ft", data_dir=small_data)
    _check_report(report, tmp_path / "ft", ("BFW-TVC", "SCBFW-TVC", "LBPM"), 8, 2)


def test_tuning_runs_the_grid_as_one_sweep_and_uses_its_choice(small_data, tmp_path):
    movielens = mc.MATRIX_COMPLETION_MOVIELENS
    exp = dataclasses.replace(movielens, title="tuning test", algorithms=movielens.algorithms[:1], claims=())
    out = tmp_path / "tuned"
    report = exp.run(T=5, seeds=1, out=out, data_dir=small_data, options={"tune": "true", "tune_T": "5"})
    tuning = json.loads((out / "tuning.json").read_text())
    row = tuning["methods"]["OFW-TVC"]
    assert tuning["criterion"] == mc.CRITERION and tuning["seeds"] == [mc.TUNE_SEED_OFFSET]
    assert row["grid"] == list(mc.GRID) and len(row["score"]) == len(mc.GRID)
    scores = np.array([np.inf if s is None or np.isnan(s) else s for s in row["score"]])
    np.testing.assert_allclose(scores[np.isfinite(scores)], (np.array(row["cumulative_loss"]) + row["ccv"])[
        np.isfinite(scores)], rtol=1e-12)  # fmt: skip
    assert row["chosen"] == mc.GRID[mc._best(scores)] and scores[mc.GRID.index(row["chosen"])] == scores.min()
    assert f"beta = {row['chosen']:g} x theory (tuned now" in report.summary["OFW-TVC"]["note"]
    # each method's grid is stored as it finishes; a re-run reads it back and skips every run
    assert len(list((out / "tuning").glob("OFW-TVC-*.json"))) == 1
    again = exp.run(T=5, seeds=1, out=out, data_dir=small_data, options={"tune": "true", "tune_T": "5"})
    assert again.new_runs == 0 and json.loads((out / "tuning.json").read_text()) == tuning


def test_tuning_picks_the_smallest_score_and_breaks_ties_toward_the_theory_value():
    grid = np.array(mc.GRID)
    assert grid[mc._best(np.arange(11.0))] == 1e-5  # a strict winner wins
    assert grid[mc._best(np.full(11, 7.0))] == 1.0  # a knob the score ignores keeps its theory value
    assert grid[mc._best(np.full(11, np.inf))] == 1.0  # every run diverged
    assert grid[mc._best(np.r_[np.inf, 3.0, 2.0, 2.0, 2.0 * (1 + 1e-6), 5.0, 2.5, 9, 9, 9, 9])] == 1e-2


def test_missing_data_and_bad_options_raise_clear_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("OCOKIT_DATA", raising=False)
    exp = experiments.get("matrix-completion-filmtrust")
    with pytest.raises(FileNotFoundError, match=r"matrix-completion-filmtrust.*OCOKIT_DATA"):
        exp.run(T=2, seeds=1, out=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"filmtrust/ratings\.txt"):
        exp.run(T=2, seeds=1, out=tmp_path, data_dir=tmp_path / "empty")
    with pytest.raises(ValueError, match="unknown options"):
        exp.run(T=2, seeds=1, out=tmp_path, options={"tuning": "yes"})
    with pytest.raises(ValueError, match="tune"):
        exp.run(T=2, seeds=1, out=tmp_path, data_dir=tmp_path, options={"tune": "maybe"})
    for bad in ("ten", "0"):
        with pytest.raises(ValueError, match="option tune_T must be an integer >= 1"):
            exp.run(T=2, seeds=1, out=tmp_path, data_dir=tmp_path, options={"tune_T": bad})


def _summary(values):
    return {k: {"cumulative_loss": {"mean": v[0]}, "hard_violation": {"mean": v[1]}} for k, v in values.items()}


def test_claims_compare_the_right_numbers():
    ml = {c.statement: c.check for c in experiments.get("matrix-completion-movielens").claims}
    ofw_claim, sc_claim = ml.values()
    paper_like = _summary({"OFW-TVC": (10, 5), "SCOFW-TVC": (8, 6), "OPDP": (12, 9), "LPM": (11, 7)})
    assert ofw_claim(paper_like)[1] and sc_claim(paper_like)[1]
    assert not ofw_claim(_summary({"OFW-TVC": (10, 8), "SCOFW-TVC": (8, 6), "OPDP": (12, 9), "LPM": (11, 7)}))[1]
    assert not sc_claim(_summary({"OFW-TVC": (10, 5), "SCOFW-TVC": (8, 4), "OPDP": (12, 9), "LPM": (11, 7)}))[1]
    assert not sc_claim(_summary({"OFW-TVC": (10, 5), "SCOFW-TVC": (11, 6), "OPDP": (12, 9), "LPM": (9, 7)}))[1]
    (bandit,) = (c.check for c in experiments.get("matrix-completion-filmtrust").claims)
    assert bandit(_summary({"BFW-TVC": (1, 1), "SCBFW-TVC": (2, 2), "LBPM": (3, 3)}))[1]
    measured, holds = bandit(_summary({"BFW-TVC": (1, 1), "SCBFW-TVC": (2, 4), "LBPM": (3, 3)}))
    assert not holds and "SCBFW-TVC 4 vs LBPM 3" in measured
    missing = experiments.get("matrix-completion-filmtrust").check_claims(_summary({"BFW-TVC": (1, 1)}))
    assert not missing[0].holds and "not measured" in missing[0].measured


def test_recorded_constants_cover_every_method_and_lie_on_the_grid():
    for name in ("matrix-completion-movielens", "matrix-completion-filmtrust"):
        exp = experiments.get(name)
        assert set(mc.TUNED[name]) == {a.label for a in exp.algorithms}
        assert all(v in mc.GRID for v in mc.TUNED[name].values())
        assert exp.default_T == mc.HORIZONS[name] and exp.default_seeds == 10 and exp.needs_data


def test_lbpm_never_ends_its_theory_block_within_the_horizon_so_its_eta_is_inert(small_data):
    # Why LBPM's grid need not run: K_b = 6 n M T^{1/2} is clipped to T, the first block never ends, and the
    # knob (eta) cannot change a single round.
    problem = mc.make_problem("filmtrust")(12, small_data, mc.MATRIX_COMPLETION_FILMTRUST.parse_options())
    T = 12
    lbpm = mc.METHODS["LBPM"][0](ProblemInfo.of(problem, T))
    assert int(lbpm.block_size) == T
    runs = [run(mc.scale_knob(lbpm, "eta", s), problem, T, key=3) for s in (1e-5, 1.0, 1e5)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.loss, runs[0].loss)
        np.testing.assert_array_equal(other.constraints, runs[0].constraints)

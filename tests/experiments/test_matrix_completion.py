"""The matrix-completion experiments of paper 000 (Figs. 1-2) at small size, their claims and their tuning."""

import dataclasses
import json
import math

import equinox as eqx
import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from ocokit import cli, experiments, run
from ocokit.algorithms import BFWTVC, OPDP, SCBFWTVC, ProblemInfo
from ocokit.experiments import matrix_completion as mc
from ocokit.problems import synthetic_low_rank_ratings
from ocokit.tuning import GRID, TUNING_CRITERION, choose, grid_value, scale_field

from ..problems.test_matrix_completion import write_ratings

pytestmark = pytest.mark.integration


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
        assert stats["seeds"] == seeds and ("theor" in stats["note"] or label == mc.ZERO)
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
    _check_report(report, out, (mc.ZERO, "OFW-TVC", "SCOFW-TVC", "OPDP", "LPM"), 3, 2)
    assert report.new_runs == 10
    # round 1 plays X_1 = 0 for every method: loss r^2 / 2 >= 1/2 for a MovieLens rating r in 1..5, g_1 = 0
    for label in report.summary:
        assert report.summary[label]["cumulative_loss"]["mean"] >= 0.5
    again = exp.run(T=3, seeds=2, out=out, data_dir=data_dir)
    assert again.new_runs == 0 and again.skipped_runs == 10
    assert again.summary["OFW-TVC"]["cumulative_loss"] == report.summary["OFW-TVC"]["cumulative_loss"]


def test_filmtrust_experiment_runs_small(small_data, tmp_path):
    report = experiments.get("matrix-completion-filmtrust").run(T=8, seeds=2, out=tmp_path / "ft", data_dir=small_data)
    _check_report(report, tmp_path / "ft", (mc.ZERO, "BFW-TVC", "SCBFW-TVC", "LBPM"), 8, 2)


def test_tuning_runs_the_grid_as_one_sweep_and_uses_its_choice(small_data, tmp_path):
    movielens = mc.MATRIX_COMPLETION_MOVIELENS
    exp = dataclasses.replace(movielens, title="tuning test", algorithms=movielens.algorithms[:2], claims=())
    out = tmp_path / "tuned"
    report = exp.run(T=5, seeds=1, out=out, data_dir=small_data, options={"tune": "true", "tune_T": "5"})
    tuning = json.loads((out / "tuning.json").read_text())
    row = tuning["methods"]["OFW-TVC"]
    assert tuning["criterion"] == TUNING_CRITERION and tuning["seeds"] == [mc.TUNING.seed_offset]
    assert row["grid"] == list(GRID) and row["knob"] == "G"
    loss, ccv = (np.array([np.nan if v is None else v for v in row[k]]) for k in ("cumulative_loss", "ccv"))
    assert row["chosen"] == GRID[choose(GRID, loss, ccv)]
    assert np.nanmin(loss) <= loss[GRID.index(row["chosen"])] <= 1.01 * np.nanmin(loss)
    zero = 5 * mc.make_problem("movielens")(5, small_data, exp.parse_options()).zero_loss()
    np.testing.assert_allclose(row["loss_vs_reference"], loss / zero, rtol=1e-12)
    assert f"G = {row['chosen']:g} in the theorem's formulas (tuned now" in report.summary["OFW-TVC"]["note"]
    # each grid value is a stored run (the store of the experiment's runs); a re-run reads them back
    assert report.new_runs == 2 + len(GRID)  # X = 0 and OFW-TVC on one seed, OFW-TVC's grid
    again = exp.run(T=5, seeds=1, out=out, data_dir=small_data, options={"tune": "true", "tune_T": "5"})
    assert again.new_runs == 0 and json.loads((out / "tuning.json").read_text()) == tuning


def test_tuning_picks_the_smallest_loss_then_the_smallest_ccv_then_the_value_nearest_1():
    grid, ccv = np.array(GRID), np.zeros(11)
    assert grid[choose(GRID, np.arange(11.0) + 10, ccv)] == 1e-5  # a strict winner wins
    assert grid[choose(GRID, np.full(11, 7.0), ccv)] == 1.0  # a knob the score ignores: the value nearest 1
    assert grid[choose(GRID, np.full(11, np.nan), ccv)] == 1.0  # every run diverged
    loss = np.r_[np.nan, 3.0, 2.0, 2.0, 2.01, 5.0, 2.5, 9, 9, 9, 9]  # 1e-3, 1e-2, 1e-1 within 1% of the least
    assert grid[choose(GRID, loss, ccv)] == 1e-1  # ties on loss and on CCV: the value nearest 1
    assert grid[choose(GRID, loss, np.r_[0, 0, 1, 4, 3, 0, 0, 0, 0, 0, 0])] == 1e-3  # CCV decides among near ties
    assert grid[choose(GRID, loss, np.r_[0, 0, 5, 4, 3, 0, 0, 0, 0, 0, 0])] == 1e-1


def test_a_product_grid_tunes_knobs_together_and_prefers_values_near_1_in_every_knob():
    grid = mc.TUNING.grid_of("LPM")
    assert len(grid) == len(GRID) ** 2 and (1e-4, 0.1) in grid and mc.TUNING.grid_of("OPDP") == GRID
    flat = np.full(len(grid), 3.0)
    assert grid[choose(grid, flat, np.zeros(len(grid)))] == (1.0, 1.0)
    loss = np.where([v[0] <= 1e-3 for v in grid], 1.0, 2.0)  # every eps <= 1e-3 ties: eta nearest 1, eps 1e-3
    assert grid[choose(grid, loss, np.zeros(len(grid)))] == (1e-3, 1.0)


def test_build_sets_every_knob_of_a_product_grid(small_data):
    problem = mc.make_problem("movielens")(5, small_data, mc.MATRIX_COMPLETION_MOVIELENS.parse_options())
    info = ProblemInfo.of(problem, 5)
    theory, tuned = mc.TUNING.build("LPM", info), mc.TUNING.build("LPM", info, [1e-4, 0.05])  # JSON's list form
    np.testing.assert_allclose([tuned.eps, tuned.chain.eta], [1e-4 * theory.eps, 0.05 * theory.chain.eta], rtol=1e-12)
    assert mc.TUNING.describe("LPM", (1e-4, 0.05)) == "eps = 0.0001 x theory, eta = 0.05 x theory"
    assert mc.TUNING.describe("LPM", None) == "eps and eta at their theory values"


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
    learns, ofw_claim, sc_claim = ml.values()
    paper_like = _summary({"OFW-TVC": (10, 5), "SCOFW-TVC": (8, 6), "OPDP": (12, 9), "LPM": (11, 7)})
    assert ofw_claim(paper_like)[1] and sc_claim(paper_like)[1]
    assert learns(paper_like | _summary({mc.ZERO: (14, 0)}))[1]
    measured, holds = learns(paper_like | _summary({mc.ZERO: (13, 0)}))
    assert not holds and "OPDP 0.923" in measured
    assert not ofw_claim(_summary({"OFW-TVC": (10, 8), "SCOFW-TVC": (8, 6), "OPDP": (12, 9), "LPM": (11, 7)}))[1]
    assert not sc_claim(_summary({"OFW-TVC": (10, 5), "SCOFW-TVC": (8, 4), "OPDP": (12, 9), "LPM": (11, 7)}))[1]
    assert not sc_claim(_summary({"OFW-TVC": (10, 5), "SCOFW-TVC": (11, 6), "OPDP": (12, 9), "LPM": (9, 7)}))[1]
    _, bandit = (c.check for c in experiments.get("matrix-completion-filmtrust").claims)
    assert bandit(_summary({"BFW-TVC": (1, 1), "SCBFW-TVC": (2, 2), "LBPM": (3, 3)}))[1]
    measured, holds = bandit(_summary({"BFW-TVC": (1, 1), "SCBFW-TVC": (2, 4), "LBPM": (3, 3)}))
    assert not holds and "SCBFW-TVC 4 vs LBPM 3" in measured
    missing = experiments.get("matrix-completion-filmtrust").check_claims(_summary({"BFW-TVC": (1, 1)}))
    assert not missing[1].holds and "not measured" in missing[1].measured


def test_recorded_tuning_covers_every_method_lies_on_the_grid_and_never_used_an_evaluation_seed():
    # FilmTrust records none: no knob makes its bandit methods learn at a reachable horizon (module doc)
    assert mc.TUNING.recorded("matrix-completion-filmtrust") == {}
    assert all("at its theory value" in a.note for a in experiments.get("matrix-completion-filmtrust").algorithms[1:])
    for name in ("matrix-completion-movielens",):
        exp, table = experiments.get(name), mc.TUNING.recorded(name)
        assert set(table["methods"]) == {a.label for a in exp.algorithms} - {mc.ZERO}
        for m, row in table["methods"].items():
            assert grid_value(row["knob"]) == mc.KNOBS[m] and grid_value(row["chosen"]) in mc.TUNING.grid_of(m)
            assert [grid_value(v) for v in row["grid"]] == list(mc.TUNING.grid_of(m)) and m in mc.TUNING.chosen(name)
        assert min(table["seeds"]) >= mc.TUNING.seed_offset > mc.SEEDS[name] and table["criterion"] == TUNING_CRITERION
        assert table["command"].startswith(f"ocokit tune {name} --T ")
        assert exp.default_T == mc.HORIZONS[name] and exp.default_seeds == mc.SEEDS[name] and exp.needs_data
        for a in exp.algorithms[1:]:
            assert mc.TUNING.describe(a.label, table["methods"][a.label]["chosen"]) in a.note


def test_the_tuning_command_writes_the_table_the_experiment_reads(small_data, tmp_path):
    out = tmp_path / "table.json"
    args = ["tune", "matrix-completion-movielens", "--T", "4", "--data", str(small_data), "--write", str(out)]
    result = CliRunner().invoke(cli.app, [*args, "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "runs").rglob("*.parquet"))) == 3 * len(GRID) + len(GRID) ** 2  # one per value
    assert "OFW-TVC: 11 values" in result.output and "LPM: 121 values" in result.output
    table = json.loads(out.read_text())
    assert table["T"] == 4 and table["seeds"] == [mc.TUNING.seed_offset] and table["criterion"] == TUNING_CRITERION
    assert set(table["methods"]) == {"OFW-TVC", "SCOFW-TVC", "OPDP", "LPM"}
    assert table["command"] == "ocokit tune matrix-completion-movielens --T 4 --seeds 1"
    assert table["problem_constants"]["grad_bound"] > 0
    # the experiment reads such a table: its choices are the table's
    recorded = dataclasses.replace(mc.TUNING, folder=tmp_path)
    out.rename(tmp_path / "matrix-completion-movielens.json")
    chosen = recorded.chosen("matrix-completion-movielens")
    assert chosen == {m: grid_value(r["chosen"]) for m, r in table["methods"].items()}


def test_tune_refuses_an_experiment_without_a_grid_search():
    result = CliRunner().invoke(cli.app, ["tune", "online-qp", "--T", "4"])
    assert result.exit_code == 2
    assert "error: experiment 'online-qp' has no grid search; experiments with one: matrix-completion" in result.output
    with pytest.raises(ValueError, match=r"has a tuning but not its options \['tune', 'tune_T'"):
        dataclasses.replace(mc.MATRIX_COMPLETION_MOVIELENS, options=())


def test_lbpm_theory_block_never_ends_so_eta_is_inert_and_the_block_constant_is_the_knob(small_data):
    # K_b = 6 n M T^{1/2} is clipped to T: the first block never ends and eta cannot change a single round;
    # the tuned knob, the block constant, ends blocks within the horizon and moves the decisions.
    problem = mc.make_problem("filmtrust")(12, small_data, mc.MATRIX_COMPLETION_FILMTRUST.parse_options())
    T, info = 12, ProblemInfo.of(problem, 12)
    lbpm = mc.TUNING.build("LBPM", info)
    assert int(lbpm.chain.block_size) == T
    runs = [run(scale_field(lbpm, "chain.eta", s), problem, T, key=3) for s in (1e-5, 1.0, 1e5)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.loss, runs[0].loss)
        np.testing.assert_array_equal(other.constraints, runs[0].constraints)
    tuned = mc.TUNING.build("LBPM", info, 1.0)
    assert int(tuned.chain.block_size) == round(T**0.5)
    assert not np.array_equal(run(tuned, problem, T, key=3).loss, runs[0].loss)


def _same(a, b) -> bool:
    """Two learners of one structure with equal numbers (``nan`` equal to ``nan``)."""
    (la, ta), (lb, tb) = (jax.tree.flatten(eqx.filter(m, eqx.is_array)) for m in (a, b))
    return ta == tb and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(la, lb, strict=True))


def test_theory_inputs_reach_the_theorem_formulas(small_data):
    problem = mc.make_problem("filmtrust")(12, small_data, mc.MATRIX_COMPLETION_FILMTRUST.parse_options())
    info = ProblemInfo.of(problem, 12)
    assert _same(mc.TUNING.build("BFW-TVC", info, 1e-2), BFWTVC.from_theory(info, loss_bound=1e-2))
    assert _same(mc.TUNING.build("SCBFW-TVC", info, 10.0), SCBFWTVC.from_theory(info, alpha_f=10.0))
    assert not _same(mc.TUNING.build("SCBFW-TVC", info, 10.0), mc.TUNING.build("SCBFW-TVC", info))
    g = mc.TUNING.build("OFW-TVC", info, 1e-3)
    assert float(g.G) == 1e-3 and float(g.beta) == 1.0 / (64e-3 * float(problem.domain.diameter))
    opdp = mc.TUNING.build("OPDP", info, 10.0)
    assert float(opdp.eta) == 10.0 * float(OPDP.from_theory(info).eta)

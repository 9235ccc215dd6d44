"""The ``strongly-convex-sets`` experiment (paper 001): grid, options, theorem bounds, a small run."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ocokit
from ocokit import experiments as E
from ocokit.algorithms import OFWLineSearch, ProblemInfo
from ocokit.experiments import strongly_convex_sets
from ocokit.results import load_runs

pytestmark = pytest.mark.integration


def test_registered_with_the_papers_claims():
    experiment = E.get("strongly-convex-sets")
    assert experiment is strongly_convex_sets.STRONGLY_CONVEX_SETS
    assert len(experiment.claims) == 7
    assert {a.label for a in experiment.algorithms} == set(strongly_convex_sets.LEARNERS)


def test_horizon_grid():
    assert strongly_convex_sets.horizons(4000, 6) == [125, 250, 500, 1000, 2000, 4000]
    assert strongly_convex_sets.horizons(20, 6) == [8, 10, 20]
    with pytest.raises(ValueError, match="horizons"):
        strongly_convex_sets.horizons(10, 6)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"size": "3"}, "unknown options"),
        ({"dim": "three"}, "dim"),
        ({"points": "0"}, "points"),
        ({"settings": "l2-linear,cube"}, "settings"),
    ],
)
def test_bad_options_raise_value_error(options, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        E.get("strongly-convex-sets").run(T=64, seeds=1, out=tmp_path, options=options)


def test_small_run_end_to_end_and_equal_to_separate_runs(tmp_path):
    experiment = E.get("strongly-convex-sets")
    options = {"dim": "3", "points": "3", "settings": "l2-quadratic"}
    report = experiment.run(T=64, seeds=2, out=tmp_path, options=options)
    grid = strongly_convex_sets.horizons(64, 3)
    assert grid == [16, 32, 64]
    assert report.new_runs == 6 and report.skipped_runs == 0  # 2 learners x 3 horizons
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["experiment"] == "strongly-convex-sets" and saved["options"] == options
    assert (tmp_path / "strongly-convex-sets-quadratic.png").stat().st_size > 10_000
    assert not (tmp_path / "strongly-convex-sets-linear.png").exists()
    measured = {c.statement: c for c in report.claims}
    assert sum("not measured" in c.measured for c in report.claims) == 5  # they need settings not run
    thm2 = measured[
        "SC-OFW: regret O(sqrt T) over the l2 ball for strongly convex losses (Wan and Zhang, AAAI 2021, Thm 2)"
    ]
    assert "fitted exponent" in thm2.measured
    entry = report.summary["SC-OFW"]
    assert entry["regret"]["l2-quadratic"]["x"] == grid and set(entry["regret"]) == {"l2-quadratic"}
    assert 0 < max(entry["regret_over_bound"]["l2-quadratic"]["mean"]) < 1
    # The regret read from the T = 64 sweep's first Tb rounds equals a separate Tb-round run (same seed).
    problem = strongly_convex_sets._S["l2-quadratic"].make_problem(3)
    runs = [c for c, m in load_runs(tmp_path) if m["algorithm"] == "OFW-LS" and m["T"] == 32]
    separate = ocokit.run(OFWLineSearch.from_theory(ProblemInfo.of(problem, 32)), problem, 32, 1)
    expected = ocokit.metrics.static_regret(separate)[-1]
    assert list(runs[0]["seed"]) == [0, 1]
    np.testing.assert_allclose(runs[0]["regret"][1], expected, rtol=1e-9, atol=1e-9)
    # `ocokit plot` re-runs with the stored configuration, finds every run on disk and redraws.
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("part-*.parquet")}
    assert experiment.plot(tmp_path) == tmp_path / "strongly-convex-sets-quadratic.png"
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("part-*.parquet")} == stamps
    assert json.loads((tmp_path / "summary.json").read_text())["claims"] == saved["claims"]


@pytest.mark.slow
def test_default_run_confirms_the_papers_exponents(tmp_path):
    experiment = E.get("strongly-convex-sets")
    report = experiment.run(T=experiment.default_T, seeds=experiment.default_seeds, out=tmp_path)
    holds = {c.statement: c.holds for c in report.claims}
    paper_claims = [s for s in holds if "Wan and Zhang, AAAI 2021, Thm" in s]
    assert len(paper_claims) == 5
    assert all(holds[s] for s in paper_claims), report.claims

"""The study over a grid (:class:`ocokit.studies.Sweep`): a new study is a declaration; its fits, its prefix runs
and its measures agree with the plain computations."""

import dataclasses
import json

import numpy as np
import pytest

from ocokit import metrics
from ocokit.algorithms import OFW, OGD, ProblemInfo
from ocokit.experiments import Algorithm, Cell, Claim, Experiment, Fit, Plot, Sweep
from ocokit.harness import ALGORITHMS
from ocokit.problems import OnlineLinear
from ocokit.sets import L2Ball
from ocokit.studies import play

PROBLEM = OnlineLinear(L2Ball(3), drift=1.0, noise=1.0)


def regret_vs_T(**sweep) -> Experiment:
    """Regret against T for two learners on one problem, with its exponent fit, a figure and a claim."""
    exponent = lambda s: s["OGD"]["regret_exponent_T"]["mean"]  # noqa: E731
    return Experiment(
        name="regret-vs-T", paper="a test", title="OGD and OFW: regret against T",
        algorithms=(Algorithm("OGD", OGD.from_theory), Algorithm("OFW", OFW.from_theory)),
        study=Sweep(grid=lambda ctx: [Cell("T", T, PROBLEM, T) for T in (ctx.T // 8, ctx.T // 4, ctx.T // 2, ctx.T)],
                    fits=(Fit("regret", "T"),), plots=(Plot("", "{exp.title}", (("regret", "regret", "T"),)),),
                    **sweep),
        claims=(Claim("OGD's regret grows like sqrt(T)", lambda s: (f"{exponent(s):.2f}", exponent(s) < 0.6)),),
    )  # fmt: skip


@pytest.mark.integration
def test_a_new_study_over_a_grid_is_a_declaration(tmp_path):
    report = regret_vs_T().run(T=400, seeds=3, out=tmp_path)
    assert report.new_runs == 8 and [c.holds for c in report.claims] == [True]  # 2 learners x 4 horizons
    entry = json.loads((tmp_path / "summary.json").read_text())["algorithms"]["OGD"]
    assert entry["regret"]["T"]["x"] == [50, 100, 200, 400] and entry["regret"]["T"]["runs"] == [3] * 4
    assert 0 < entry["regret_exponent_T"]["mean"] < 0.6 and (tmp_path / "regret-vs-T.png").stat().st_size > 0
    # each cell's numbers are those of a plain run of its horizon, and a second command reruns nothing
    traj, _ = play(OGD.from_theory(ProblemInfo.of(PROBLEM, 100)), PROBLEM, 100, range(3))
    regret = metrics.static_regret(traj)[:, -1]
    assert entry["regret"]["T"]["mean"][1] == pytest.approx(regret.mean(), rel=1e-12)
    assert entry["regret"]["T"]["max"][1] == pytest.approx(regret.max(), rel=1e-12)
    assert regret_vs_T().run(T=400, seeds=3, out=tmp_path).new_runs == 0


@pytest.mark.integration
def test_prefix_runs_equal_separate_runs(tmp_path):
    separate = regret_vs_T().run(T=96, seeds=2, out=tmp_path / "a").summary
    prefix = regret_vs_T(prefix=True).run(T=96, seeds=2, out=tmp_path / "b").summary
    for label in ("OGD", "OFW"):
        for stat in ("mean", "std", "median", "max"):
            np.testing.assert_allclose(prefix[label]["regret"]["T"][stat], separate[label]["regret"]["T"][stat],
                                       rtol=1e-10)  # fmt: skip


def test_fit_is_the_growth_exponent_or_a_linear_slope_of_the_chosen_cells():
    x = [1.0, 2.0, 4.0, 8.0, 16.0]
    entry = {"regret": {"T": {"x": x, "mean": [3 * v**0.5 for v in x], "median": [2 - v for v in x]}}}
    fit = Fit("regret", "T")(entry)["regret_exponent_T"]
    assert fit["mean"] == pytest.approx(0.5) and fit["se"] == pytest.approx(0.0, abs=1e-12)
    assert fit["mean"] == pytest.approx(metrics.growth_exponent(x, entry["regret"]["T"]["mean"])[0])
    linear = Fit("regret", "T", stat="median", log=False)(entry)["regret_slope_T"]
    assert linear["mean"] == pytest.approx(-1.0) and linear["r2"] == pytest.approx(1.0)
    assert Fit("regret", "T", above=4.0)(entry) == {}  # two cells left: no fit
    assert Fit("regret", "T", stat="median")(entry) == {}  # values <= 0: no log-log fit
    assert Fit("violation", "T")(entry) == {} and Fit("regret", "V")(entry) == {}  # not measured


@pytest.mark.integration
def test_the_algorithms_option_chooses_among_the_declared_labels(tmp_path):
    exp = dataclasses.replace(regret_vs_T(), options=(ALGORITHMS,))
    with pytest.raises(ValueError, match=r"among \['OGD', 'OFW'\]"):
        exp.run(T=40, seeds=1, out=tmp_path, options={"algorithms": "OGD,Nope"})
    report = exp.run(T=40, seeds=1, out=tmp_path, options={"algorithms": "OFW"})
    assert list(report.summary) == ["OFW"] and report.new_runs == 4


def test_play_reports_compile_time_apart_from_the_time_per_round():
    learner = OGD(eta=0.123456)  # a step no other test compiles with
    _, first = play(learner, PROBLEM, 37, range(2))
    _, second = play(learner, PROBLEM, 37, range(2))  # the same program: only small host-side traces are left
    assert first["compile_seconds"] > 0 and second["compile_seconds"] < 0.1 * first["compile_seconds"]
    assert 0 < first["wall_seconds_per_round"] and 0 < second["wall_seconds_per_round"]

"""Paper 003 experiments: each runs at a small T, writes summary.json and the figure; claims are checked."""

from __future__ import annotations

import json

import pytest

from ocokit import experiments as E
from ocokit.experiments import virtual_queues
from ocokit.problems import JobScheduling, OnlineLinearProgram, OnlineQuadraticProgram, TimeVaryingRegression

pytestmark = pytest.mark.integration

T, SEEDS = 20, 2
NAMES = ("time-varying-regression", "online-qp", "online-lp", "job-scheduling")
PROBLEMS = {
    "time-varying-regression": TimeVaryingRegression,
    "online-qp": OnlineQuadraticProgram,
    "online-lp": OnlineLinearProgram,
    "job-scheduling": JobScheduling,
}
THIRD = {
    "time-varying-regression": "Yi et al. 2023",
    "online-qp": "Yi et al. 2021",
    "online-lp": "Yi et al. 2021",
    "job-scheduling": "Yi et al. 2023",
}


def _run(name, out, T=T, **kwargs):
    options = {"extras": "false", **kwargs.pop("options", {})}
    return E.get(name).run(T=T, seeds=SEEDS, out=out, options=options, **kwargs)


def _check_outputs(name, out, labels, T=T):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == name and summary["T"] == T
    assert list(summary["algorithms"]) == labels
    assert summary["problem"]["class"] == PROBLEMS[name].__name__
    for stats in summary["algorithms"].values():
        assert stats["seeds"] == SEEDS
        for metric in ("cumulative_loss", "hard_violation", "static_regret", "dynamic_regret"):
            assert metric in stats  # the comparators give both regrets
    assert (out / f"{name}.png").stat().st_size > 10_000
    return summary


def test_time_varying_regression_end_to_end(tmp_path):
    """COLDQ and RECOO, the pair the claim compares (Yi et al. 2023 runs in the job-scheduling test)."""
    name = "time-varying-regression"
    report = _run(name, tmp_path, options={"algorithms": "COLDQ,RECOO"})
    _check_outputs(name, tmp_path, ["COLDQ", "RECOO"])
    assert len(report.claims) == 1 and "COLDQ" in report.claims[0].measured
    assert report.new_runs == 2 * SEEDS


def test_online_lp_end_to_end(tmp_path):
    """The paper's three algorithms on Fig. 3's problem at T = 200. With the fixed constraint and the
    feasible start x_1 = 0, COLDQ's hard violation stays at solver-tolerance level once its queue floor
    gamma = T / 2 = 100 makes the hinge an exact penalty (Corollary 1, V_g = 0); RECOO's first step is an
    unpenalised gradient step (Q_1 = 0) and violates. A re-run finds every run; the figure is redrawn."""
    name, labels, T_lp = "online-lp", ["COLDQ", "RECOO", "Yi et al. 2021"], 200
    options = {"algorithms": ",".join(labels)}
    report = _run(name, tmp_path, T=T_lp, options=options)
    summary = _check_outputs(name, tmp_path, labels, T=T_lp)
    violation = {k: v["hard_violation"]["mean"] for k, v in summary["algorithms"].items()}
    assert violation["COLDQ"] < 1e-5 and violation["RECOO"] > 1e-2 and violation["Yi et al. 2021"] > 1.0
    assert report.claims[0].holds and "RECOO" in report.claims[0].measured  # Fig. 3 claim, at T = 200
    assert report.new_runs == 3 * SEEDS
    again = _run(name, tmp_path, T=T_lp, options=options)  # a re-run finds every run on disk
    assert (again.new_runs, again.skipped_runs) == (0, 3 * SEEDS)
    (tmp_path / f"{name}.png").unlink()
    assert E.get(name).plot(tmp_path).is_file()  # redrawn from the stored runs
    assert "problem" in json.loads((tmp_path / "summary.json").read_text())


@pytest.mark.parametrize(
    ("name", "label", "options"),
    [
        ("online-qp", virtual_queues.YNW_LABEL, {"extras": "true"}),
        ("job-scheduling", "Yi et al. 2023", {"prices": "synthetic"}),
    ],
)
def test_other_experiments_run_with_one_algorithm(name, label, options, tmp_path):
    """One projection-based algorithm each (compile time): the wiring, comparators and outputs."""
    report = _run(name, tmp_path, options={"algorithms": label, **options})
    summary = _check_outputs(name, tmp_path, [label])
    assert not report.claims[0].holds and "not measured" in report.claims[0].measured
    if name == "job-scheduling":
        assert "synthetic" in summary["problem"]["price_source"]
        assert summary["algorithms"][label]["time_average_loss"]["mean"] > 0


def test_sinha_vaze_and_yuan_lamperski_run_as_extra_references(tmp_path):
    """The two baselines of spec baselines.md §8-9 at their theory parameters beside the paper's algorithms."""
    name = "time-varying-regression"
    labels = [virtual_queues.SINHA_VAZE_LABEL, virtual_queues.YUAN_LAMPERSKI_LABEL]
    report = _run(name, tmp_path, options={"algorithms": ",".join(labels), "extras": "true"})
    summary = _check_outputs(name, tmp_path, labels)
    assert report.new_runs == 2 * SEEDS
    for label in labels:
        stats = summary["algorithms"][label]
        assert "not in the paper's figure" in stats["note"]
        assert stats["squared_violation"]["mean"] >= 0.0 and stats["hard_violation"]["mean"] > 0.0


def _job_problem(T, data_dir, options):
    return virtual_queues.job_problem(T, data_dir, virtual_queues.JOB_SCHEDULING.parse_options(options))


def test_job_scheduling_reads_real_prices(data_dir):
    problem = _job_problem(40, data_dir, {})
    assert "hourly day-ahead prices" in problem.price_source and problem.prices.shape == (40, 10)
    assert _job_problem(40, data_dir, {"start_hour": "100"}).prices.shape == (40, 10)


def test_job_scheduling_price_options(tmp_path, monkeypatch):
    monkeypatch.delenv("OCOKIT_DATA", raising=False)
    make = _job_problem
    assert "synthetic" in make(30, None, {"prices": "synthetic"}).price_source
    assert "synthetic" in make(30, None, {}).price_source  # auto, no data location at all: labelled fallback
    for prices in ("auto", "real"):  # a data location without the prices is an error naming the file
        with pytest.raises(ValueError, match=r"US-NY-NYIS\.csv"):
            make(30, tmp_path, {"prices": prices})
    with pytest.raises(FileNotFoundError):
        make(30, None, {"prices": "real"})
    with pytest.raises(ValueError, match="nyiso_path"):
        make(30, None, {"prices": "nyiso"})
    with pytest.raises(ValueError, match="prices must be one of"):
        make(30, None, {"prices": "cheap"})


def test_unknown_and_bad_options_raise(tmp_path):
    with pytest.raises(ValueError, match="unknown option"):
        E.get("online-qp").run(T=5, seeds=1, out=tmp_path, options={"gamma": "1"})
    with pytest.raises(ValueError, match="recoo_queue must be one of"):
        E.get("online-lp").run(T=5, seeds=1, out=tmp_path, options={"recoo_queue": "old"})
    with pytest.raises(ValueError, match="extras must be true or false"):
        E.get("online-lp").run(T=5, seeds=1, out=tmp_path, options={"extras": "maybe"})
    with pytest.raises(ValueError, match="option algorithms must list labels"):
        E.get("online-lp").run(T=5, seeds=1, out=tmp_path, options={"algorithms": "COLDQ,OGD"})


def test_registry_lists_the_paper_algorithms_and_extras():
    for name in NAMES:
        labels = [a.label for a in E.get(name).algorithms]
        assert labels[:3] == ["COLDQ", "RECOO", THIRD[name]]
        assert virtual_queues.EXPERT_LABEL in labels and virtual_queues.YNW_LABEL in labels
        assert virtual_queues.SINHA_VAZE_LABEL in labels and virtual_queues.YUAN_LAMPERSKI_LABEL in labels
        assert all("not in the paper's figure" in a.note for a in E.get(name).algorithms[3:])
    assert E.get("online-qp").default_T == 5000 and E.get("job-scheduling").default_T == 2880
    assert E.get("time-varying-regression").default_seeds == 20


def _summary(**finals):
    return {label: {m: {"mean": v, "std": 0.0} for m, v in metrics.items()} for label, metrics in finals.items()}


def _pair(coldq_violation, coldq_loss, recoo_violation, recoo_loss):
    return _summary(
        COLDQ={"hard_violation": coldq_violation, "cumulative_loss": coldq_loss},
        RECOO={"hard_violation": recoo_violation, "cumulative_loss": recoo_loss},
    )


def test_claim_checks_follow_their_statements():
    ok = _pair(59.0, 105.0, 100.0, 100.0)
    assert virtual_queues.CLAIM_FIG1.check(ok)[1]
    assert not virtual_queues.CLAIM_FIXED.check(ok)[1]  # 59% is not at most half
    worse_loss = _pair(10.0, 111.0, 100.0, 100.0)
    assert not virtual_queues.CLAIM_FIG1.check(worse_loss)[1] and not virtual_queues.CLAIM_FIXED.check(worse_loss)[1]
    negative = _pair(1.0, -95.0, 3.0, -100.0)
    assert virtual_queues.CLAIM_FIXED.check(negative)[1]  # -95 <= -100 + 10
    jobs = _summary(
        COLDQ={"time_average_loss": 9.0, "time_average_hard_violation": 2.0},
        RECOO={"time_average_loss": 10.0, "time_average_hard_violation": 1.5},
        **{"Yi et al. 2023": {"time_average_loss": 11.0, "time_average_hard_violation": 30.0}},
    )
    text, holds = virtual_queues.CLAIM_FIG4.check(jobs)
    assert holds and "RECOO 10" in text
    jobs["COLDQ"]["time_average_hard_violation"]["mean"] = 2.6  # more than 1 job per slot above RECOO's
    assert not virtual_queues.CLAIM_FIG4.check(jobs)[1]
    results = E.get("job-scheduling").check_claims({"COLDQ": {}})
    assert not results[0].holds and "not measured" in results[0].measured

"""Paper 003 experiments: each runs at a small T, writes summary.json and the figure; claims are checked."""

from __future__ import annotations

import json

import pytest

from ocokit import experiments as E
from ocokit.experiments import paper003
from ocokit.problems import JobScheduling, OnlineLinearProgram, OnlineQuadraticProgram, TimeVaryingRegression

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


def _run(name, out, **kwargs):
    options = {"extras": "false", **kwargs.pop("options", {})}
    return E.get(name).run(T=T, seeds=SEEDS, out=out, options=options, **kwargs)


@pytest.mark.parametrize("name", NAMES[:3])
def test_experiment_runs_and_writes_its_outputs(name, tmp_path):
    report = _run(name, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["experiment"] == name and summary["T"] == T
    assert list(summary["algorithms"]) == ["COLDQ", "RECOO", THIRD[name]]
    assert summary["problem"]["class"] == PROBLEMS[name].__name__
    for stats in summary["algorithms"].values():
        assert stats["seeds"] == SEEDS
        for metric in ("cumulative_loss", "hard_violation", "static_regret", "dynamic_regret"):
            assert metric in stats  # the comparators give both regrets
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    assert len(report.claims) == 1 and "COLDQ" in report.claims[0].measured
    assert report.new_runs == 3 * SEEDS
    again = _run(name, tmp_path)  # a re-run finds every run on disk
    assert (again.new_runs, again.skipped_runs) == (0, 3 * SEEDS)


def test_job_scheduling_reads_real_prices(tmp_path, data_dir):
    report = _run("job-scheduling", tmp_path, data_dir=data_dir)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "hourly day-ahead prices" in summary["problem"]["price_source"]
    assert set(summary["algorithms"]) == {"COLDQ", "RECOO", "Yi et al. 2023"}
    for stats in summary["algorithms"].values():
        assert stats["time_average_loss"]["mean"] > 0 and stats["time_average_hard_violation"]["mean"] >= 0
    assert (tmp_path / "job-scheduling.png").is_file()
    assert "time-averaged cost" in report.claims[0].measured
    figure = E.get("job-scheduling").plot(tmp_path)  # redraw from the stored runs
    assert figure.is_file() and "problem" in json.loads((tmp_path / "summary.json").read_text())


def test_job_scheduling_price_options(tmp_path, monkeypatch):
    monkeypatch.delenv("OCOKIT_DATA", raising=False)
    make = paper003._job_problem
    assert "synthetic" in make(30, None, {"prices": "synthetic"}).price_source
    assert "synthetic" in make(30, tmp_path, {}).price_source  # auto: no data found -> labelled fallback
    with pytest.raises(FileNotFoundError):
        make(30, tmp_path, {"prices": "real"})
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


def test_registry_lists_the_paper_algorithms_and_extras():
    for name in NAMES:
        labels = [a.label for a in E.get(name).algorithms]
        assert labels[:3] == ["COLDQ", "RECOO", THIRD[name]]
        assert paper003.EXPERT_LABEL in labels and paper003.YNW_LABEL in labels
    assert E.get("online-qp").default_T == 5000 and E.get("job-scheduling").default_T == 2880
    assert E.get("time-varying-regression").default_seeds == 20


def _summary(**finals):
    return {
        label: {m: {"mean": v, "std": 0.0} for m, v in metrics.items()} for label, metrics in finals.items()
    }


def _pair(coldq_violation, coldq_loss, recoo_violation, recoo_loss):
    return _summary(
        COLDQ={"hard_violation": coldq_violation, "cumulative_loss": coldq_loss},
        RECOO={"hard_violation": recoo_violation, "cumulative_loss": recoo_loss},
    )


def test_claim_checks_follow_their_statements():
    ok = _pair(59.0, 105.0, 100.0, 100.0)
    assert paper003.CLAIM_FIG1.check(ok)[1]
    assert not paper003.CLAIM_FIXED.check(ok)[1]  # 59% is not at most half
    worse_loss = _pair(10.0, 111.0, 100.0, 100.0)
    assert not paper003.CLAIM_FIG1.check(worse_loss)[1] and not paper003.CLAIM_FIXED.check(worse_loss)[1]
    negative = _pair(1.0, -95.0, 3.0, -100.0)
    assert paper003.CLAIM_FIXED.check(negative)[1]  # -95 <= -100 + 10
    jobs = _summary(
        COLDQ={"time_average_loss": 9.0, "time_average_hard_violation": 2.0},
        RECOO={"time_average_loss": 10.0, "time_average_hard_violation": 1.5},
        **{"Yi et al. 2023": {"time_average_loss": 11.0, "time_average_hard_violation": 30.0}},
    )
    text, holds = paper003.CLAIM_FIG4.check(jobs)
    assert holds and "RECOO 10" in text
    jobs["COLDQ"]["time_average_hard_violation"]["mean"] = 2.6  # more than 1 job per slot above RECOO's
    assert not paper003.CLAIM_FIG4.check(jobs)[1]
    results = E.get("job-scheduling").check_claims({"COLDQ": {}})
    assert not results[0].holds and "not measured" in results[0].measured

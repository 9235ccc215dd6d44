"""The paper 004 experiments run end to end at a small size, store their runs and skip them on a re-run."""

from __future__ import annotations

import json

import pytest

from ocokit import experiments

pytestmark = pytest.mark.integration


def _check_outputs(out, name, figures, labels, report):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == name and set(summary["algorithms"]) == set(labels)
    for figure in figures:
        assert (out / figure).stat().st_size > 0
    assert report.figure == out / figures[0]
    assert len(report.claims) == len(experiments.get(name).claims)
    return summary


def test_gradual_variation_runs_small(tmp_path):
    exp = experiments.get("gradual-variation")
    options = {"horizons": "3", "ratio": "2", "algorithms": "MirrorProx", "drifts": "0,1"}
    report = exp.run(T=16, seeds=2, out=tmp_path, options=options)
    summary = _check_outputs(
        tmp_path,
        "gradual-variation",
        ["gradual-variation.png", "gradual-variation-V.png"],
        ["MirrorProx"],
        report,
    )
    stats = summary["algorithms"]["MirrorProx"]
    assert stats["regret"]["static"]["x"] == stats["violation"]["iid"]["x"] == [4, 8, 16]
    assert set(stats["violation"]) == {"static", "iid", "V"} and len(stats["regret"]["V"]["x"]) == 2  # two drifts
    assert stats["regret"]["iid"]["runs"] == [2, 2, 2] and "regret_exponent_static" in stats
    claims = {c["statement"][:40]: c for c in summary["claims"]}
    lemma = next(c for s, c in claims.items() if s.startswith("Lemma 5.5"))
    assert lemma["holds"]  # a deterministic property of every run
    assert any("not measured" in c["measured"] for c in summary["claims"])  # YuNeelyWei was not run


def test_simplex_mirror_prox_runs_small_and_redraws_without_rerunning(tmp_path):
    exp = experiments.get("simplex-mirror-prox")
    options = {"horizons": "3", "ratio": "2", "algorithms": "SimplexMirrorProx", "dim": "4", "dims": "4,5,6"}
    report = exp.run(T=16, seeds=2, out=tmp_path, options=options)
    summary = _check_outputs(
        tmp_path,
        "simplex-mirror-prox",
        ["simplex-mirror-prox.png", "simplex-mirror-prox-d.png"],
        ["SimplexMirrorProx"],
        report,
    )
    stats = summary["algorithms"]["SimplexMirrorProx"]
    assert stats["regret"]["T"]["x"] == [4, 8, 16] and stats["regret"]["d"]["x"] == [4, 5, 6]
    assert "violation_over_log_Td" in stats and "regret_exponent_d" in stats
    assert max(max(a["max"]) for a in stats["lemma55_gap"].values()) <= 1e-9
    stored = sorted((tmp_path / "runs").rglob("part-*.parquet"))
    assert report.new_runs == len(stored) > 0
    assert exp.plot(tmp_path) == tmp_path / "simplex-mirror-prox.png"  # redraws from the stored runs ...
    assert sorted((tmp_path / "runs").rglob("part-*.parquet")) == stored  # ... and runs nothing again


def test_bad_options_raise_value_error(tmp_path):
    exp = experiments.get("gradual-variation")
    with pytest.raises(ValueError, match="unknown options"):
        exp.run(T=64, seeds=1, out=tmp_path, options={"speed": "fast"})
    with pytest.raises(ValueError, match="unknown algorithms"):
        exp.run(T=256, seeds=1, out=tmp_path, options={"algorithms": "Nope"})
    with pytest.raises(ValueError, match="too small"):
        exp.run(T=8, seeds=1, out=tmp_path)
    with pytest.raises(ValueError, match="dims"):
        experiments.get("simplex-mirror-prox").run(T=256, seeds=1, out=tmp_path, options={"dims": "4,8"})

"""``ocokit bench --executor ray`` on a real local Ray cluster (two CPUs, as ``tests/test_executors.py`` starts it):
the runs are computed on Ray's workers and the board is the local executor's, number for number."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ocokit import cli, executors

pytestmark = [pytest.mark.ray, pytest.mark.integration]


def _numbers(out) -> tuple[dict, list]:
    """The board without its timings (they differ by design): the JSON summary and the Parquet rows."""
    summary = json.loads((out / "leaderboard.json").read_text())
    for problem in summary["problems"]:
        for row in problem["learners"].values():
            row.pop("seconds_per_round")
    table = pq.read_table(out / "leaderboard.parquet").to_pylist()
    return summary, sorted((r for r in table if r["metric"] != "seconds_per_round"), key=lambda r: tuple(r.values()))


def test_bench_on_ray_gives_the_local_board(cluster, tmp_path, monkeypatch):
    units = []
    real_map = executors.Ray.map

    def counted(self, fn, batch):  # the real executor, its units counted: the runs went to Ray
        batch = list(batch)
        units.extend(batch)
        return real_map(self, fn, batch)

    monkeypatch.setattr(executors.Ray, "map", counted)
    runner = CliRunner()
    args = ["bench", "--problems", "regression,experts", "--learners", "OGD,Hedge,COLDQ", "--T", "12", "--seeds",
            "2", "--learner", "tests.bench.user_learners:make"]  # fmt: skip
    local = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    assert not units
    remote = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "ray"), "--executor", "ray"])
    assert remote.exit_code == 0, remote.output
    assert "6 (learner, problem) pairs played" in remote.output and "(12 new runs, 0 found on disk)" in remote.output
    assert units  # every pair's seeds went through Ray
    want, got = _numbers(tmp_path / "local"), _numbers(tmp_path / "ray")
    assert got[0] == want[0]
    assert len(got[1]) >= 6 * 2 * 3 and got[1] == want[1]  # pairs x seeds x (at least) measures, value for value

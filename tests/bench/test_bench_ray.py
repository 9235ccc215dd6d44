"""``ocokit bench --executor ray`` on a real local Ray cluster (two CPUs, as ``tests/test_executors.py`` starts it):
the runs are computed on Ray's workers and the board is the local executor's, number for number."""

from __future__ import annotations

import json
import warnings

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ocokit import cli, executors

pytestmark = [pytest.mark.ray, pytest.mark.integration]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray of two CPUs for the whole module (no dashboard, a small object store)."""
    ray = pytest.importorskip("ray")
    with warnings.catch_warnings():  # fork+exec of Ray's processes, after JAX started its threads: harmless
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False)
    yield ray
    ray.shutdown()


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

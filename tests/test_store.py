"""The runs folder as a dataset: pandas, polars, duckdb and pyarrow read it whole; permissions; provenance."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import ocokit
from ocokit import experiments, results, studies
from ocokit.algorithms import OGD
from ocokit.problems import JobScheduling

from .golden.generate import numbers
from .helpers import register_two_ogd

LABELS = ("OGD", "SC OFW/TVC", "truncated Gaussian, two-point")  # a slash, spaces, a comma: URI-encoded folders


def _store(out: Path, T: int = 4, seeds: int = 2) -> dict[tuple[str, int], dict[str, np.ndarray]]:
    """Runs of three labels with different diagnostic columns (one each), as a harness would store them."""
    written = {}
    for i, label in enumerate(LABELS):
        for seed in range(seeds):
            rng = np.random.default_rng(10 * i + seed)
            cols = {"t": np.arange(1, T + 1), "loss": rng.normal(size=T), f"diag_{i}": rng.normal(size=T)}
            config = {"learner": OGD(eta=0.1 * (i + 1)), "T": T, "seed": seed}
            results.save_records(results.run_path(out, "exp", label, config), cols, {"algorithm": label, **config})
            written[label, seed] = cols
    return written


def _check_frame(frame: pd.DataFrame, written) -> None:
    """``frame`` (algorithm, seed, round, quantity, value) holds exactly the ``written`` columns."""
    assert len(frame) == sum(len(c) * len(next(iter(c.values()))) for c in written.values())
    for (label, seed), cols in written.items():
        for name, col in cols.items():
            rows = frame[(frame.algorithm == label) & (frame.seed == seed) & (frame.quantity == name)]
            np.testing.assert_array_equal(rows.sort_values("round").value.to_numpy(), col.astype(float))


def test_pandas_polars_duckdb_and_pyarrow_read_a_runs_folder_without_options(tmp_path):
    written = _store(tmp_path)
    runs = tmp_path / "runs"
    frames = {
        "pandas": pd.read_parquet(runs),
        "polars": pl.scan_parquet(runs).collect().to_pandas(),
        "duckdb": duckdb.sql(f"SELECT * FROM read_parquet('{runs}/**/*.parquet', hive_partitioning = true)").df(),
        "pyarrow": pads.dataset(runs, partitioning="hive").to_table().to_pandas(),
        "ocokit": results.dataset(tmp_path).to_table().to_pandas(),
    }
    for name, frame in frames.items():
        frame = frame.astype({"algorithm": str, "seed": int})
        assert {"experiment", "algorithm", "seed", "key", "T", "round", "quantity", "value"} <= set(frame), name
        assert set(frame.experiment.astype(str)) == {"exp"} and set(frame["T"]) == {4}, name
        _check_frame(frame, written)


def test_load_runs_and_export_csv(tmp_path):
    written = _store(tmp_path)
    runs = results.load_runs(tmp_path)
    assert len(runs) == len(written)
    for cols, meta in runs:
        expected = written[meta["algorithm"], meta["seed"]]
        assert list(cols) == list(expected) and cols["t"].dtype == np.int64
        np.testing.assert_array_equal(cols["loss"], expected["loss"])
    csv = results.export_csv(tmp_path)
    frame = pd.read_csv(csv)
    assert list(frame.columns) == ["experiment", "algorithm", "seed", "key", "T", "round", "quantity", "value"]
    _check_frame(frame, written)


def test_metadata_describes_live_objects_and_records_provenance(tmp_path):
    prices = np.linspace(10.0, 80.0, 24 * 3).reshape(24, 3)
    config = {"learner": OGD(eta=0.25), "problem": JobScheduling(prices), "make": _make, "T": 3, "seed": 1}
    path = results.run_path(tmp_path, "exp", "OGD", config)
    results.save_records(path, {"loss": np.zeros(3)}, {"algorithm": "OGD", **config, "wall_seconds_per_round": 0.5})
    _, meta = results.load_records(path)
    assert meta["learner"].startswith("OGD(eta=") and "0.25" in meta["learner"]
    assert meta["problem"].startswith("JobScheduling(") and "sha256:" in meta["problem"]  # prices by digest
    assert meta["make"] == f"{__name__}._make" and meta["wall_seconds_per_round"] == 0.5
    prov = meta["provenance"]
    assert prov["key"] == path.stem.removeprefix("part-")
    assert prov["versions"]["ocokit"] == ocokit.__version__ and {"jax", "equinox", "numpy"} <= set(prov["versions"])
    assert prov["platform"] and prov["device"] and prov["created"].endswith("+00:00")
    text = json.dumps(meta)
    assert str(tmp_path) not in text and str(Path(ocokit.__file__).parent) not in text  # no paths of this machine


def _make(info):
    return OGD(eta=0.1)


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_files_take_their_permissions_from_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = results.run_path(tmp_path, "exp", "OGD", {"seed": 0})
        results.save_records(path, {"loss": np.zeros(2)}, {})
        results.atomic_write_json(tmp_path / "summary.json", {"a": 1})
    finally:
        os.umask(old)
    for p in (path, tmp_path / "summary.json"):
        assert p.stat().st_mode & 0o777 == 0o666 & ~umask
    assert path.parent.stat().st_mode & 0o777 == 0o777 & ~umask


def test_temporaries_of_dead_writers_are_removed(tmp_path):
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    host = results._host()
    folder = results.run_path(tmp_path, "exp", "OGD", {"seed": 0}).parent
    folder.mkdir(parents=True)
    killed = folder / f".part-a.parquet.ocokit-{host}-{dead}-0badc0de.tmp"  # a writer killed mid-write
    live = folder / f".part-b.parquet.ocokit-{host}-{os.getpid()}-0badc0de.tmp"  # a writer at work now
    remote = folder / ".part-c.parquet.ocokit-otherhost-1-0badc0de.tmp"  # another machine's writer, recent
    old = folder / ".part-d.parquet.ocokit-otherhost-1-0badc0de.tmp"  # another machine's, long gone
    for p in (killed, live, remote, old):
        p.write_bytes(b"partial")
    stale = time.time() - results.STALE_SECONDS - 60
    os.utime(old, (stale, stale))
    assert results.load_runs(tmp_path) == []  # opening the store cleans
    assert sorted(p.name for p in folder.iterdir()) == sorted([live.name, remote.name])
    os.utime(remote, (stale, stale))
    results.save_records(folder / "part-e.parquet", {"loss": np.zeros(1)}, {})  # writing cleans its folder
    assert sorted(p.name for p in folder.iterdir()) == sorted([live.name, "part-e.parquet"])


register_two_ogd("store-smoke", slow_label="OGD slow/0.01")  # a label that needs escaping in a folder name


def test_group_by_over_the_dataset_reproduces_the_summary(tmp_path):
    T, seeds = 20, 2  # the sizes of test_cli.py: its compiled programs are shared through the persistent cache
    experiments.get("store-smoke").run(T=T, seeds=seeds, out=tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())["algorithms"]
    finals = pl.scan_parquet(tmp_path / "runs").filter(pl.col("round") == pl.col("T")).collect()
    assert finals.select(pl.col("seed").n_unique()).item() == seeds
    by_polars = finals.group_by("algorithm", "quantity").agg(pl.col("value").mean()).rows()
    runs = tmp_path / "runs"
    sql = f"SELECT algorithm, quantity, avg(value) FROM read_parquet('{runs}/**/*.parquet', hive_partitioning = true)"
    by_duckdb = duckdb.sql(f"{sql} WHERE round = T GROUP BY ALL").fetchall()
    by_pandas = pd.read_parquet(runs).query("round == T").groupby(["algorithm", "quantity"], observed=True).value.mean()
    checked = 0
    for label, stats in summary.items():
        for metric, stat in stats.items():
            if isinstance(stat, dict) and "mean" in stat:
                for means in (by_polars, by_duckdb):
                    assert dict(((a, q), v) for a, q, v in means)[label, metric] == pytest.approx(
                        stat["mean"], abs=1e-12
                    )
                assert by_pandas[label, metric] == pytest.approx(stat["mean"], abs=1e-12)
                checked += 1
    assert checked >= 2 * len(summary) and set(summary) == {"OGD", "OGD slow/0.01"}


def test_a_truncated_damaged_or_short_stored_run_is_recomputed_and_replaced(tmp_path):
    exp, T, seeds = experiments.get("store-smoke"), 20, 2
    exp.run(T=T, seeds=seeds, out=tmp_path)
    want = numbers(json.loads((tmp_path / "summary.json").read_text())["algorithms"])
    files = results.run_files(tmp_path)
    truncated, garbage, short = files[:3]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])  # a writer cut off mid-file
    garbage.write_bytes(np.random.default_rng(0).bytes(400))
    table = pq.read_table(short, partitioning=None)
    pq.write_table(table.filter(pc.field("round") < T), short)  # a readable file, its metadata intact, a round short
    for path in (truncated, garbage, short):
        with pytest.raises(results.CorruptRunError, match=re.escape(str(path))):
            results.load_records(path)
    with pytest.raises(ValueError, match=r"stored run .* is (unreadable|corrupt)"):
        exp.plot(tmp_path)  # read only: a damaged run is an error naming it, never silently redrawn
    report = exp.run(T=T, seeds=seeds, out=tmp_path)
    assert (report.new_runs, report.skipped_runs) == (3, len(files) - 3)
    assert results.run_files(tmp_path) == files  # recomputed in place: each damaged file replaced, no new key
    for path in files:
        cols, _ = results.load_records(path)
        assert {len(c) for c in cols.values()} == {T}
    assert not list(tmp_path.rglob("*.tmp"))
    assert numbers(json.loads((tmp_path / "summary.json").read_text())["algorithms"]) == want


class _Elsewhere(ocokit.executors.Local):
    """Local, but each unit runs in a copy of the function, as a Ray worker unpickles it: nothing it computes (the
    comparators of its seeds) comes back but its result."""

    def map(self, fn, units):
        for unit in units:
            yield unit, cloudpickle.loads(cloudpickle.dumps(fn))(unit)


def _same_runs(one: Path, other: Path) -> list[Path]:
    """Assert that two output folders store the same runs (names and every column, bit for bit, with the
    comparators' ``dynamic_regret``); their names relative to the folder."""
    names = [sorted(p.relative_to(folder) for p in results.run_files(folder)) for folder in (one, other)]
    assert names[0] == names[1]
    for name in names[0]:
        (a, _), (b, _) = results.load_records(one / name), results.load_records(other / name)
        assert set(a) == set(b) and "dynamic_regret" in a
        for column in a:
            np.testing.assert_array_equal(a[column], b[column])
    return names[0]


@pytest.mark.integration  # an experiment run four times
def test_a_comparison_computes_each_seeds_comparators_once_for_every_algorithm(tmp_path, monkeypatch):
    exp, T, seeds, computed = experiments.get("store-smoke"), 20, 3, []
    real = studies.comparators

    def spy(problem, T, seeds, **kwargs):  # the real computation, its seeds noted
        computed.append(list(seeds))
        return real(problem, T, seeds, **kwargs)

    monkeypatch.setattr(studies, "comparators", spy)
    exp.run(T=T, seeds=seeds, out=tmp_path / "here")
    assert computed == [[0, 1, 2]]  # by the first algorithm's unit; the second algorithm's reuses them
    exp.run(T=T, seeds=seeds, out=tmp_path / "elsewhere", executor=_Elsewhere())
    assert computed == [[0, 1, 2], [0, 1, 2], [0, 1, 2]]  # each unit in its own copy computes its own seeds'
    stored = _same_runs(tmp_path / "here", tmp_path / "elsewhere")
    assert len(stored) == 2 * seeds
    victim = next(p for p in stored if "seed=1" in str(p))
    (tmp_path / "here" / victim).unlink()  # one algorithm lacks seed 1: only seed 1's comparators are computed
    exp.run(T=T, seeds=seeds, out=tmp_path / "here")
    assert computed[3:] == [[1]]
    _same_runs(tmp_path / "here", tmp_path / "elsewhere")
    exp.run(T=T, seeds=seeds, out=tmp_path / "here")  # all stored: nothing to compute
    assert computed[4:] == []


def test_a_unit_that_fails_raises_after_the_units_before_it_are_stored(tmp_path, monkeypatch):
    exp, T, seeds, plays = experiments.get("store-smoke"), 20, 2, []
    real_play = studies.play

    def play(learner, *args, **kwargs):
        plays.append(float(learner.eta))
        if float(learner.eta) == 0.01:  # the second learner ("OGD slow/0.01") fails
            raise RuntimeError("the slow learner failed")
        return real_play(learner, *args, **kwargs)

    monkeypatch.setattr(studies, "play", play)
    with pytest.raises(RuntimeError, match="the slow learner failed"):
        exp.run(T=T, seeds=seeds, out=tmp_path)
    assert plays == [0.05, 0.01]
    stored = results.run_files(tmp_path)
    assert len(stored) == seeds and all("algorithm=OGD/" in p.as_posix() for p in stored)
    assert not list(tmp_path.rglob("*.tmp"))

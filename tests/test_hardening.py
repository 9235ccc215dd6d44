"""Hardening of the public entries: the engine's arguments, memory refused up front, and the data loaders.

Every case here failed before (a tracer error, an AttributeError, an allocation until XLA gave up, a codec
error without the file, a NaN accepted, a silent synthetic fallback) and is now a one-line error naming
the culprit.
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

import ocokit
from ocokit import cli, datasets
from ocokit.algorithms import OGD
from ocokit.problems import JobScheduling, TimeVaryingRegression

PROBLEM, LEARNER = TimeVaryingRegression(dim=3), OGD(eta=0.05)

# ------------------------------------------------------------------------------------------ the engine


def test_any_integer_type_is_a_horizon_and_a_seed():
    reference = ocokit.run(LEARNER, PROBLEM, 4, key=1, comparators=False)
    for T, key in ((np.int64(4), np.int32(1)), (np.int16(4), np.uint8(1)), (4, np.asarray(1))):
        np.testing.assert_array_equal(ocokit.run(LEARNER, PROBLEM, T, key=key, comparators=False).loss, reference.loss)
    swept = ocokit.sweep(LEARNER, PROBLEM, np.int64(4), np.arange(1, 3), comparators=False)
    np.testing.assert_array_equal(swept.loss[0], reference.loss)
    session = ocokit.Session(LEARNER, PROBLEM, horizon=np.int64(4), key=np.int64(1))
    assert session.decide().shape == (3,)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([], "keys must be a number of seeds .* got an empty list"),
        ((), "keys must be a number of seeds .* got an empty tuple"),
        (np.array([], dtype=int), "got an empty ndarray"),
        (2.0, "keys must be a number of seeds .* got 2.0"),
        ("3", "keys must be a number of seeds .* got '3'"),
        (True, "keys must be a number of seeds .* got True"),
        (0, "keys must be an integer >= 1, got 0"),
        ([0, 1.5], r"keys\[1\] must be an integer seed .* got 1.5"),
        ([0, None], r"keys\[1\] must be an integer seed .* got None"),
        ([2**70], r"keys\[0\] must be an integer seed in \[-2\*\*63, 2\*\*63 - 1\]"),
        (jax.random.PRNGKey(0), r"got one PRNG key \(use jax.random.split\(key, S\)\)"),
    ],
)
def test_bad_keys_are_one_line_naming_keys(keys, message):
    with pytest.raises(ValueError, match=message) as err:
        ocokit.sweep(LEARNER, PROBLEM, 4, keys)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("key", [1.5, "0", None, [1, 2], np.zeros(3)])
def test_bad_key_of_a_run(key):
    with pytest.raises(ValueError, match=r"key must be an integer seed in .* or a PRNG key"):
        ocokit.run(LEARNER, PROBLEM, 4, key=key)


@pytest.mark.parametrize("T", [2**31, 10**12, np.int64(2**40), True, 3.0, np.float64(3)])
def test_bad_horizon_names_T_and_its_range(T):
    with pytest.raises(ValueError, match=r"T must be an integer >= 1 and <= 2147483647, got"):
        ocokit.run(LEARNER, PROBLEM, T)
    with pytest.raises(ValueError, match=r"horizon must be an integer >= 1"):
        ocokit.Session(LEARNER, PROBLEM, horizon=T)


def test_a_run_that_cannot_fit_in_memory_is_refused_before_anything_is_allocated():
    with pytest.raises(ValueError, match=r"run of 1 run\(s\) x T = 1000000000 rounds would need about .* GB") as err:
        ocokit.run(LEARNER, PROBLEM, 10**9, record_decisions=True)
    assert "use a smaller T (or record_decisions=False)" in str(err.value)
    with pytest.raises(ValueError, match=r"sweep of 100000 run\(s\) .* fewer seeds per call or a smaller chunk_size"):
        ocokit.sweep(LEARNER, PROBLEM, 10**6, 10**5, comparators=False)
    grid = ocokit.stack([OGD(eta=0.1), OGD(eta=0.2)])
    with pytest.raises(ValueError, match=r"sweep of 200000 run\(s\)"):
        ocokit.sweep(grid, PROBLEM, 10**6, 10**5, batched_learner=True)
    with pytest.raises(ValueError, match=r"comparators of 1000 run\(s\) x T = 1000000 rounds would need"):
        ocokit.comparators(PROBLEM, 10**6, 1000)


# ----------------------------------------------------------------------------------------- the loaders


def _ml(tmp_path, content: bytes | str):
    f = tmp_path / "u.data"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    return f


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1\t2\t5\t0\n1\t3\t4\xff\t0\n", r"u\.data:2: not UTF-8 text \(byte 0xff at offset 13\)"),
        ("1\t2\t5\t0\n2\t1\tnan\t0\n", r"u\.data:2: rating 'nan' is not a finite number"),
        ("1\t2\tinf\t0\n", r"u\.data:1: rating 'inf' is not a finite number"),
        ("1\t2\t5\t0\nnan\t1\t3\t0\n", r"u\.data:2: user ids must be positive integers \(1-based\), got nan"),
        ("1\t2\t5\t0\n1\t1e300\t3\t0\n", r"u\.data:2: item id 1e\+300 is over the limit of 268435456 ids"),
        ("1\t2\t5\t0\n3\t1\t4\t0\n200000000\t1\t4\t0\n\n", r"u\.data:3: user id 200000000 makes a 200000000 x 2"),
        (
            "1\t2\t5\t0\n20000\t1\t4\t0\n1\t20000\t4\t0\n",
            r"u\.data:2: user id 20000 makes a 20000 x 20000 .* 268435456",
        ),
    ],
)
def test_loader_names_file_and_line_for_bad_bytes_values_and_ids(tmp_path, content, message):
    with pytest.raises(ValueError, match=message) as err:
        datasets.load_movielens(_ml(tmp_path, content))
    assert str(tmp_path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("rating", ["0", "4.8", "0.4"])
def test_filmtrust_ratings_outside_the_stated_range_are_rejected(tmp_path, rating):
    f = tmp_path / "ratings.txt"
    f.write_text(f"1 1 2.5\n2 1 {rating}\n")
    with pytest.raises(ValueError, match=re.escape("FilmTrust ratings must lie in [0.5, 4]")):
        datasets.load_filmtrust(f)
    f.write_text("1 1 0.5\n2 1 4\n")
    assert datasets.load_filmtrust(f).ratings.tolist() == [0.5, 4.0]


def _prices(folder, rows: int, regions=("FR",), cell=lambda i: f"{10 + i % 7}.5"):
    d = folder / "electricity-prices-2023"
    d.mkdir(exist_ok=True)
    for region in regions:
        body = "".join(f"2023,2023,{cell(i)}\n" for i in range(rows))
        (d / f"{region}.csv").write_text("Datetime (UTC),Datetime (Local),Price (USD/MWh)\n" + body)
    return d


@pytest.mark.parametrize("bad", ["nan", "inf", "-Infinity"])
def test_non_finite_price_names_file_and_line(tmp_path, bad):
    _prices(tmp_path, 5, cell=lambda i: bad if i == 3 else "1.0")
    with pytest.raises(ValueError, match=rf"FR\.csv:5: price '{bad}' is not a finite number"):
        datasets.load_electricity_prices(["FR"], tmp_path)


def test_electricity_path_that_is_no_folder_is_not_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(_prices(tmp_path, 5).parent))  # the env var must not win
    with pytest.raises(FileNotFoundError, match="not found \\(or not a folder\\)"):
        datasets.load_electricity_prices(["FR"], tmp_path / "electricity-prices-2023" / "FR.csv")
    with pytest.raises(ValueError, match=r"FR\.csv: 5 hourly prices, 9 needed \(lacks hours 5 to 8\)"):
        datasets.load_electricity_prices(["FR"], tmp_path, hours=9)


def test_job_scheduling_with_a_data_path_never_falls_back_to_synthetic_prices(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match="no path given"):  # no location at all: callers may fall back
        JobScheduling.from_electricity_prices(regions=["FR"], num_slots=24)
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder in (empty, tmp_path / "missing"):
        with pytest.raises(ValueError, match=f"job-scheduling prices: .*{re.escape(str(folder))}"):
            JobScheduling.from_electricity_prices(folder, regions=["FR"], num_slots=24)
    monkeypatch.setenv(datasets.ENV_VAR, str(empty))  # $OCOKIT_DATA is a location given, too
    with pytest.raises(ValueError, match=r"job-scheduling prices: .*not found"):
        JobScheduling.from_electricity_prices(regions=["FR"], num_slots=24)
    _prices(tmp_path, 30)
    problem = JobScheduling.from_electricity_prices(tmp_path, regions=["FR"], start_hour=4, num_slots=24 * 12)
    assert problem.prices.shape == (288, 1) and "hourly day-ahead" in problem.price_source
    with pytest.raises(ValueError, match=r"FR\.csv: 30 hourly prices, 31 needed \(lacks hours 30 to 30\)"):
        JobScheduling.from_electricity_prices(tmp_path, regions=["FR"], start_hour=7, num_slots=24 * 12)
    with pytest.raises(ValueError, match=r"FR\.csv: 30 hourly prices, 8760 needed"):  # wraps: the whole year
        JobScheduling.from_electricity_prices(tmp_path, regions=["FR"], start_hour=8750, num_slots=24 * 12)
    with pytest.raises(ValueError, match=r"start_hour must be an integer >= 0 and <= 8759, got 8760"):
        JobScheduling.from_electricity_prices(tmp_path, regions=["FR"], start_hour=8760)


# --------------------------------------------------------------------------------------- the command line


def test_plot_computes_in_float64_like_run(tmp_path):
    """``ocokit plot`` once recomputed missing runs in float32; it now switches float64 on first, as ``run`` does."""
    jax.config.update("jax_enable_x64", False)
    try:
        result = CliRunner().invoke(cli.app, ["plot", str(tmp_path)])
        enabled = jax.config.jax_enable_x64
    finally:
        jax.config.update("jax_enable_x64", True)
    assert result.exit_code == 2 and "summary.json not found" in result.output
    assert enabled

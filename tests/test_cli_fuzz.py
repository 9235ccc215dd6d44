"""Fuzzing the command line with generated bad input: each must exit non-zero with one line ``error: ...``.

Every case runs in-process through typer's ``CliRunner`` and is rejected before anything is compiled: the
bad values of ``--T``, ``--seeds`` and ``--option`` go to ``fuzz-guard``, an experiment whose study fails
the test if it is ever reached, and the bad data folders to ``job-scheduling``, which reads its prices
before computing. No case may leave a file behind.
"""

from __future__ import annotations

import json
import os
import re
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ocokit import cli, datasets, experiments
from ocokit.experiments import Option

from .helpers import register_test_experiment

runner = CliRunner()
LETTERS = st.text(string.ascii_letters, min_size=1, max_size=8)


def _never_reached(experiment, ctx):
    raise AssertionError("the study was reached: a bad input was not rejected before computing")


register_test_experiment(
    "fuzz-guard",
    "command-line fuzzing guard",
    _never_reached,
    options=(
        Option("start_hour", int, 0, "an hour of the day", low=0, high=23),
        Option("mode", str, "a", "a mode", choices=("a", "b")),
    ),
    default_T=10,
    default_seeds=1,
)


def _rejected(args: list[str], *, header: bool = False, out=None) -> str:
    """Invoke ``ocokit ARGS`` in a scratch folder; check exit 2, one ``error:`` line, no traceback, nothing written.

    ``run`` gets ``--out``: ``out(scratch)`` when given (it may create files in the scratch folder, which must
    stay as they were), else a folder that does not exist yet (and must not exist after).
    """
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "out" if out is None else out(Path(scratch))
        before = _snapshot(Path(scratch))
        result = runner.invoke(cli.app, [*args, "--out", str(target)] if args[0] == "run" else args)
        assert result.exit_code == 2, result.output
        assert isinstance(result.exception, SystemExit), repr(result.exception)  # not an uncaught error
        lines = [line for line in result.output.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error: ")]
        assert len(errors) == 1 and lines[-1] == errors[0], result.output
        assert header or len(lines) == 1, result.output  # validated up front: nothing else printed
        assert "Traceback" not in result.output
        assert _snapshot(Path(scratch)) == before, "a file or folder was written or changed"
        return errors[0]


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder``: a file's bytes, ``None`` for a folder."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes() for p in folder.rglob("*")}


BAD_T = st.one_of(
    st.integers(max_value=0),
    st.integers(min_value=2**31, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: x != int(x) if x == x and abs(x) < 1e300 else 1),
    LETTERS,
).map(str)
BAD_SEEDS = st.one_of(st.integers(max_value=0), st.integers(min_value=10_001, max_value=10**20), LETTERS).map(str)


@settings(max_examples=40, deadline=None)
@given(T=BAD_T)
def test_bad_horizon(T):
    message = _rejected(["run", "fuzz-guard", "--T", T])
    assert "--T" in message


@settings(max_examples=40, deadline=None)
@given(seeds=BAD_SEEDS)
def test_bad_seeds_including_a_million(seeds):
    assert "--seeds" in _rejected(["run", "fuzz-guard", "--seeds", seeds])


def test_a_million_seeds_is_refused_at_once():
    assert "--seeds must be an integer >= 1 and <= 10000" in _rejected(["run", "fuzz-guard", "--seeds", "1000000"])


@settings(max_examples=20, deadline=None)
@given(T=st.integers(10**8, 2**31 - 1), seeds=st.integers(1000, 10_000))
def test_a_run_too_big_for_memory_is_refused_with_the_estimate(T, seeds):
    message = _rejected(["run", "fuzz-guard", "--T", str(T), "--seeds", str(seeds)])
    assert "would need about" in message and "use a smaller --T or fewer --seeds" in message


BAD_OPTIONS = st.one_of(
    LETTERS,  # no "="
    LETTERS.map(lambda v: f"={v}"),  # no key
    LETTERS.filter(lambda k: k not in ("start_hour", "mode")).map(lambda k: f"{k}=1"),  # unknown key
    st.one_of(LETTERS, st.integers(24, 10**9).map(str), st.integers(max_value=-1).map(str)).map(
        lambda v: f"start_hour={v}"
    ),  # not an integer in [0, 23]
    LETTERS.filter(lambda v: v not in ("a", "b")).map(lambda v: f"mode={v}"),  # not a choice
)


@settings(max_examples=50, deadline=None)
@given(option=BAD_OPTIONS)
def test_bad_options(option):
    message = _rejected(["run", "fuzz-guard", "--option", option])
    assert "option" in message


def test_a_non_integer_option_names_the_option_and_what_it_accepts():
    message = _rejected(["run", "job-scheduling", "--option", "start_hour=abc"])
    assert message == "error: option start_hour must be an integer in [0, 8759], got 'abc'"


@settings(max_examples=30, deadline=None)
@given(name=st.text(min_size=0, max_size=12).filter(lambda n: n not in experiments.names() and n[:1] != "-"))
def test_unknown_experiment_names(name):
    assert "unknown experiment" in _rejected(["run", name])


@settings(max_examples=20, deadline=None)
@given(args=st.lists(LETTERS.map(lambda s: f"--{s}"), min_size=1, max_size=3))
def test_unknown_flags_and_commands(args):
    _rejected(["run", "fuzz-guard", *args])
    _rejected(["frobnicate", *args])


@settings(max_examples=20, deadline=None)
@given(name=LETTERS)
def test_a_data_path_that_does_not_exist(name):
    message = _rejected(["run", "fuzz-guard", "--data", f"/nonexistent/{name}"])
    assert f"--data /nonexistent/{name} does not exist" in message


HEADER = "Datetime (UTC),Datetime (Local),Price (USD/MWh)\n"
BAD_PRICE_FILES = st.one_of(
    st.binary(max_size=64).map(lambda b: b"\xff" + b),  # not UTF-8
    st.just(b""),  # empty
    st.just(HEADER.encode()),  # no prices
    st.integers(1, 200).map(lambda n: (HEADER + "a,b,30.5\n" * n).encode()),  # too short for the window
    st.sampled_from(["nan", "inf", "-inf", "abc"]).map(lambda v: (HEADER + f"a,b,1\na,b,{v}\n").encode()),
    st.text(string.ascii_letters + ",\n", max_size=40).map(lambda t: ("x,y\n" + t).encode()),  # no price header
)


@settings(max_examples=25, deadline=None)
@given(content=BAD_PRICE_FILES, empty_folder=st.booleans())
def test_bad_price_data_is_an_error_naming_the_file_never_a_synthetic_fallback(content, empty_folder):
    with tempfile.TemporaryDirectory() as data:
        folder = Path(data) / "electricity-prices-2023"
        folder.mkdir()
        if not empty_folder:
            (folder / "US-NY-NYIS.csv").write_bytes(content)  # the first region: read first
        message = _rejected(["run", "job-scheduling", "--data", data, "--T", "2880", "--seeds", "1"], header=True)
        assert "US-NY-NYIS.csv" in message and data in message


@settings(max_examples=20, deadline=None)
@given(
    summary=st.one_of(
        st.binary(max_size=40).map(lambda b: b"\xff" + b),
        st.text(max_size=20).filter(lambda t: not t.strip().startswith(("{", "[", '"')) or not t.strip()),
        st.sampled_from(["[]", "3", '"x"', "{}", '{"experiment": 3}']),
        LETTERS.filter(lambda n: n not in experiments.names()).map(lambda n: json.dumps({"experiment": n})),
    ),
    command=st.sampled_from(["plot", "report"]),
)
def test_plot_and_report_of_a_bad_or_missing_folder(summary, command):
    assert "summary.json" in _rejected([command, "/nonexistent/folder"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "summary.json"
        path.write_bytes(summary if isinstance(summary, bytes) else summary.encode())
        _rejected([command, folder])
        assert sorted(p.name for p in Path(folder).iterdir()) == ["summary.json"]


# --------------------------------------------------------------------------------------- corrupted ratings files

RATINGS = {  # experiment -> (file under the data folder, field separator, extra fields, a valid rating)
    "matrix-completion-movielens": ("ml-100k/u.data", "\t", "\t0", "3"),
    "matrix-completion-filmtrust": ("filmtrust/ratings.txt", " ", "", "2.5"),
}


def _ratings_line(user: str, item: str, rating: str, sep: str, extra: str) -> str:
    return f"{user}{sep}{item}{sep}{rating}{extra}\n"


@st.composite
def bad_ratings(draw, experiment: str) -> bytes:
    """A ratings file that no loader may accept: each kind of damage, after a few valid lines."""
    _, sep, extra, ok = RATINGS[experiment]
    valid = "".join(_ratings_line(str(u), str(i), ok, sep, extra) for u, i in [(1, 1), (2, 3), (3, 2)])
    kind = draw(st.sampled_from(["bytes", "truncated", "columns", "nonfinite", "negative", "huge", "empty", "blank"]))
    if kind == "bytes":  # random bytes, not UTF-8
        return valid.encode() + b"\xff" + draw(st.binary(max_size=48))
    if kind == "truncated":  # a line cut off before its rating
        return (valid + f"4{sep}{draw(st.integers(1, 99))}").encode()
    if kind == "columns":  # too few fields, or a non-numeric one
        line = draw(st.sampled_from([f"4{sep}5\n", f"4{sep}x{sep}{ok}{extra}\n", f"user{sep}item{sep}rating\n"]))
        return (valid + line).encode()
    if kind == "nonfinite":
        return (
            valid + _ratings_line("4", "5", draw(st.sampled_from(["nan", "inf", "-inf", "NaN"])), sep, extra)
        ).encode()
    if kind == "negative":
        user, item = draw(st.sampled_from([("-1", "2"), ("2", "-7"), ("0", "1"), ("1.5", "2")]))
        return (valid + _ratings_line(user, item, ok, sep, extra)).encode()
    if kind == "huge":
        huge = str(draw(st.integers(2**28 + 1, 10**30)))
        user, item = draw(st.sampled_from([(huge, "1"), ("1", huge)]))
        return (valid + _ratings_line(user, item, ok, sep, extra)).encode()
    return b"" if kind == "empty" else b"\n  \n"


@settings(max_examples=40, deadline=None)
@given(data=st.data(), experiment=st.sampled_from(sorted(RATINGS)))
def test_corrupted_ratings_files_are_one_line_naming_the_file(data, experiment):
    relative, *_ = RATINGS[experiment]
    content = data.draw(bad_ratings(experiment))
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / relative
        file.parent.mkdir()
        file.write_bytes(content)
        message = _rejected(["run", experiment, "--data", folder, "--T", "5", "--seeds", "1"], header=True)
        assert str(file) in message, message
        loader = datasets.load_movielens if "movielens" in experiment else datasets.load_filmtrust
        with pytest.raises(ValueError, match=re.escape(str(file))):  # the loader itself, in Python
            loader(folder)
        assert file.read_bytes() == content and [p.name for p in Path(folder).iterdir()] == [file.parent.name]


@settings(max_examples=20, deadline=None)
@given(content=BAD_PRICE_FILES)
def test_the_price_loader_names_the_file_of_each_corrupted_price_file(content):
    with tempfile.TemporaryDirectory() as data:
        file = Path(data) / "electricity-prices-2023" / "FR.csv"
        file.parent.mkdir()
        file.write_bytes(content)
        with pytest.raises(ValueError, match=re.escape(str(file))):
            datasets.load_electricity_prices(["FR"], path=data, hours=201)


# ------------------------------------------------------------------------------------------ --out that cannot be


def _a_file(path: Path) -> Path:
    path.write_text("not a folder")
    return path


def _read_only(scratch: Path) -> Path:
    folder = scratch / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


OUT_KINDS = ["file", "below a file", "nothing can be created"]
if os.geteuid() != 0:  # root writes in a read-only folder
    OUT_KINDS += ["read-only folder", "below a read-only folder"]


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(OUT_KINDS), name=LETTERS)
def test_an_out_that_is_no_writable_folder_is_refused_before_anything(kind, name):
    chosen: list[Path] = []

    def out(scratch: Path) -> Path:
        if kind == "file":
            path = _a_file(scratch / name)
        elif kind == "below a file":
            path = _a_file(scratch / name) / "results"
        elif kind == "nothing can be created":
            path = Path("/proc") / f"ocokit-{name}"
        else:
            path = _read_only(scratch) / (name if kind.startswith("below") else "")
        chosen.append(path)
        return path

    message = _rejected(["run", "fuzz-guard"], out=out)
    assert message.startswith(f"error: --out {chosen[0]} "), message
    assert ("not a folder" if "file" in kind else "is not a writable folder") in message, message

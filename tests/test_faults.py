"""Faults a user's environment or input causes, each answered in one line naming the culprit (issue 41, item 6):
two experiments in one output folder, an empty or invalid summary.json, a full disk, round data given as nested
lists, constraints returned as a list, a list of step sizes, complex values."""

import errno
import json
import os
import re

import jax.numpy as jnp
import numpy as np
import pytest
from typer.testing import CliRunner

import ocokit
from ocokit import cli, experiments, results
from ocokit.algorithms import OGD
from ocokit.problems import CustomProblem
from ocokit.sets import Box

from .helpers import register_two_ogd

register_two_ogd("faults-smoke", chunk_size=1)
register_two_ogd("faults-other", chunk_size=1)

RUN = ["run", "faults-smoke", "--T", "4", "--seeds", "1", "--plain"]


def _lines(output: str, prefix: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(prefix)]


@pytest.fixture
def wide(monkeypatch):
    """Errors on one line whatever their length (no terminal wrapping)."""
    monkeypatch.setattr(cli.console, "width", 1000)
    monkeypatch.setattr(cli.status_console, "width", 1000)


# ----------------------------------------------------------------------------- one experiment per output folder


def test_a_folder_holding_another_experiment_is_refused_in_one_line_naming_it(tmp_path, wide):
    out = tmp_path / "shared"
    out.mkdir()
    summary = json.dumps({"experiment": "faults-smoke", "algorithms": {}, "T": 4, "seeds": 1, "options": {}})
    (out / "summary.json").write_text(summary)
    (out / "faults-smoke.png").write_bytes(b"a figure")
    result = CliRunner().invoke(cli.app, ["run", "faults-other", "--T", "4", "--seeds", "1", "--out", str(out)])
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.output, "error:")
    assert line == (
        f"error: {out} holds the results of experiment 'faults-smoke' ({out / 'summary.json'}); "
        "give 'faults-other' another output folder (--out)"
    )
    assert "warning" not in result.output  # refused, not retried
    assert (out / "summary.json").read_text() == summary and not (out / "runs").exists()  # nothing computed
    with pytest.raises(ValueError, match=r"holds the results of experiment 'faults-smoke'"):
        experiments.get("faults-other").run(T=4, seeds=1, out=out)  # the Python API refuses alike


def test_the_same_experiment_runs_again_in_its_folder(tmp_path):
    out = tmp_path / "own"
    for _ in range(2):
        result = CliRunner().invoke(cli.app, [*RUN, "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert "(0 new runs, 2 found on disk)" in result.output
    assert json.loads((out / "summary.json").read_text())["experiment"] == "faults-smoke"


# ------------------------------------------------------------------------------------- empty or invalid summary


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "{path} is empty; run `ocokit run NAME --out {out}` again to write it"),
        (b"  \n", "{path} is empty; run `ocokit run NAME --out {out}` again to write it"),
        (b'{"experiment": ', "{path} is not valid JSON (Expecting value); run `ocokit run NAME --out {out}` again"),
        (b"\x80 garbage", "{path} is not valid JSON (not UTF-8 text); run `ocokit run NAME --out {out}` again"),
    ],
)
@pytest.mark.parametrize("command", ["report", "plot", "export"])
def test_an_empty_or_invalid_summary_is_named(tmp_path, wide, content, message, command):
    (tmp_path / "summary.json").write_bytes(content)
    result = CliRunner().invoke(cli.app, [command, str(tmp_path)])
    assert result.exit_code == 2, result.output
    path = tmp_path / "summary.json"
    assert result.output.strip() == "error: " + message.format(path=path, out=tmp_path)


# ------------------------------------------------------------------------------------------------ a full disk


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", _full_disk)
    target = tmp_path / "folder" / "summary.json"
    with pytest.raises(OSError) as info:
        results.atomic_write_json(target, {"a": 1})
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert str(info.value) == f"[Errno 28] No space left on device: '{target}'"
    run = tmp_path / "runs" / "experiment=x" / "algorithm=y" / "part-0123456789abcdef.parquet"
    with pytest.raises(OSError, match=re.escape(f"No space left on device: '{run}'")):
        results.save_records(run, {"loss": np.ones(3)}, {"T": 3})
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no temporary left behind


def test_a_full_disk_during_a_run_is_one_line_naming_the_file(tmp_path, monkeypatch, wide):
    monkeypatch.setattr(os, "fsync", _full_disk)
    result = CliRunner().invoke(cli.app, [*RUN, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.output, "error:")
    assert re.fullmatch(rf"error: \[Errno 28\] No space left on device: '{re.escape(str(tmp_path))}/out/\S+'", line)
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------- user functions and parameters

BOX = Box(-1.0, 1.0, dim=2)


def _square(c, x):
    return jnp.sum((x - c) ** 2)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: CustomProblem(domain=BOX, loss=_square, data=[[0.0, 1.0], [1.0, 0.0]]),
            "data[0][0] must be an array with a leading round axis of length >= 1, got a scalar; "
            "a nested list of numbers is one array: pass jnp.asarray(...)",
        ),
        (
            lambda: CustomProblem(domain=BOX, loss=_square, data={"c": jnp.ones((3, 2)), "w": jnp.ones((4,))}),
            "data['w'] has 4 rounds (leading axis) but data['c'] has 3",
        ),
        (
            lambda: CustomProblem(domain=BOX, loss=_square, data={"c": jnp.ones((3, 2)), "w": 1.0}),
            "data['w'] must be an array with a leading round axis of length >= 1, got a scalar",
        ),
        (
            lambda: CustomProblem(domain=BOX, loss=_square, data=jnp.ones((0, 2))),
            "data must be an array with a leading round axis of length >= 1, got shape (0, 2)",
        ),
        (
            lambda: CustomProblem(
                domain=BOX, loss=_square, constraints=lambda c, x: [x.sum() - 0.5, x[0]], data=jnp.ones((3, 2))
            ),
            "constraints(data, x) must return one array, a vector (N,), got a list of 2 values: "
            "build it with jnp.array([...])",
        ),
        (
            lambda: CustomProblem(domain=BOX, loss=lambda c, x: (_square(c, x),), data=jnp.ones((3, 2))),
            "loss(data, x) must return one array, a scalar, got a tuple of 1 values: build it with jnp.array([...])",
        ),
        (
            lambda: CustomProblem(
                domain=BOX, loss=_square, constraints=lambda c, x: jnp.array([x.sum() + 1j]), data=jnp.ones((3, 2))
            ),
            "constraints(data, x) must return real values, got dtype complex128 (take jnp.real or jnp.abs of it)",
        ),
        (
            lambda: CustomProblem(domain=BOX, loss=lambda c, x: _square(c, x) + 0j, data=jnp.ones((3, 2))),
            "loss(data, x) must return real values, got dtype complex128 (take jnp.real or jnp.abs of it)",
        ),
        (
            lambda: OGD(eta=[0.1, 0.2]),
            "eta must be one number, got shape (2,) ([0.1, 0.2]); for a grid of values use "
            "ocokit.stack([OGD(eta=v, ...) for v in values]) with batched_learner=True",
        ),
        (
            lambda: OGD(eta=np.full((2, 1), 0.1)),
            "eta must be one number, got shape (2, 1) ([[0.1], [0.1]]); for a grid of values use "
            "ocokit.stack([OGD(eta=v, ...) for v in values]) with batched_learner=True",
        ),
    ],
    ids=[
        "nested-list-rounds",
        "unequal-rounds",
        "scalar-leaf",
        "no-rounds",
        "list-constraints",
        "tuple-loss",
        "complex-constraint",
        "complex-loss",
        "eta-list",
        "eta-matrix",
    ],
)
def test_bad_user_input_is_one_line_naming_the_culprit(make, message):
    with pytest.raises(ValueError) as info:
        make()
    assert str(info.value) == message


def test_what_the_checks_still_accept():
    problem = CustomProblem(domain=BOX, loss=_square, data=jnp.asarray([[0.0, 1.0], [1.0, 0.0]]))
    assert float(ocokit.run(OGD(eta=0.1), problem, T=3).loss.sum()) > 0
    grid = ocokit.stack([OGD(eta=0.1), OGD(eta=0.2)])  # a grid is built by stacking, never by the constructor
    assert grid.eta.shape == (2,)
    assert ocokit.sweep(grid, problem, 3, 1, batched_learner=True).loss.shape == (2, 1, 3)
    assert OGD(eta=np.float64(0.1)).eta.shape == () and OGD(eta=jnp.asarray(0.1)).eta.shape == ()

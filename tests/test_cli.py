"""The command line: run writes summary, runs and figure; a second run skips; errors are one line."""

import json
import sys

import pytest
from typer.testing import CliRunner

from ocokit import cli

runner = CliRunner()


def test_run_then_skip_then_plot_and_report(tmp_path):
    out = tmp_path / "tvr"
    args = ["run", "time-varying-regression", "--T", "20", "--seeds", "2", "--out", str(out)]
    first = runner.invoke(cli.app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == "time-varying-regression" and summary["T"] == 20
    assert (out / "time-varying-regression.png").stat().st_size > 0
    n_runs = len(list((out / "runs").glob("*.parquet")))
    assert n_runs == 2 * len(summary["algorithms"])
    second = runner.invoke(cli.app, args)
    assert second.exit_code == 0 and "0 new runs" in second.output
    assert runner.invoke(cli.app, ["plot", str(out)]).exit_code == 0
    assert "final values" in runner.invoke(cli.app, ["report", str(out)]).output


def test_list_names_every_experiment():
    from ocokit import experiments

    result = runner.invoke(cli.app, ["list"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    for name in experiments.names():
        assert name in result.output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no-such-experiment"], "unknown experiment 'no-such-experiment'; available:"),
        (["run", "time-varying-regression", "--T", "0"], "--T must be an integer >= 1"),
        (["run", "time-varying-regression", "--seeds", "0"], "--seeds must be an integer >= 1"),
        (["run", "time-varying-regression", "--option", "novalue"], "--option takes key=value"),
        (["report", "/nonexistent/folder"], "summary.json not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys, argv, message):
    monkeypatch.setattr(sys, "argv", ["ocokit", *argv])
    monkeypatch.setattr(cli.console, "width", 400)
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code == 2
    assert message in capsys.readouterr().out

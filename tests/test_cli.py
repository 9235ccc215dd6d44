"""The command line: run writes summary, runs and figure; a second run skips; errors are one line."""

import json
import sys

import pytest
from typer.testing import CliRunner

from ocokit import cli, experiments
from ocokit.algorithms import OGD
from ocokit.problems import TimeVaryingRegression

runner = CliRunner()

# A tiny experiment of the test's own, so these tests exercise the command line, not any one algorithm.
if "cli-smoke" not in experiments.names():
    experiments.register(
        experiments.Experiment(
            name="cli-smoke",
            paper="tests",
            title="command-line smoke test",
            study=experiments.Comparison(make_problem=lambda T, data_dir, options: TimeVaryingRegression(dim=3)),
            algorithms=[
                experiments.Algorithm("OGD", lambda info: OGD(eta=0.05)),
                experiments.Algorithm("OGD-slow", lambda info: OGD(eta=0.01)),
            ],
        )
    )


def test_run_then_skip_then_plot_and_report(tmp_path):
    out = tmp_path / "smoke"
    args = ["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", str(out)]
    first = runner.invoke(cli.app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == "cli-smoke" and summary["T"] == 20
    assert (out / "cli-smoke.png").stat().st_size > 0
    n_runs = len(list((out / "runs").glob("*.parquet")))
    assert n_runs == 2 * len(summary["algorithms"])
    second = runner.invoke(cli.app, args)
    assert second.exit_code == 0 and "0 new runs" in second.output
    assert runner.invoke(cli.app, ["plot", str(out)]).exit_code == 0
    assert "final values" in runner.invoke(cli.app, ["report", str(out)]).output


def test_list_names_every_experiment(monkeypatch):
    monkeypatch.setattr(cli.console, "width", 400)
    result = runner.invoke(cli.app, ["list"])
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

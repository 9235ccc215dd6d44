"""The command line: run writes summary, runs and figure; a second run skips; errors are one line."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocokit import _cli_tables, cli, experiments

from .helpers import register_two_ogd

runner = CliRunner()

# A tiny experiment of the test's own, so these tests exercise the command line, not any one algorithm.
register_two_ogd("cli-smoke")


def test_run_then_skip_then_plot_and_report(tmp_path):
    out = tmp_path / "smoke"
    args = ["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", str(out)]
    first = runner.invoke(cli.app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == "cli-smoke" and summary["T"] == 20
    assert (out / "cli-smoke.png").stat().st_size > 0
    n_runs = len(list((out / "runs").rglob("part-*.parquet")))
    assert n_runs == 2 * len(summary["algorithms"])
    second = runner.invoke(cli.app, args)
    assert second.exit_code == 0 and "0 new runs" in second.output
    assert runner.invoke(cli.app, ["plot", str(out)]).exit_code == 0
    assert "final values" in runner.invoke(cli.app, ["report", str(out)]).output
    third = runner.invoke(cli.app, [*args, "--reuse-across-versions"])
    assert third.exit_code == 0 and "0 new runs" in third.output
    exported = runner.invoke(cli.app, ["export", str(out)])
    assert exported.exit_code == 0, exported.output
    rows = (out / "runs.csv").read_text().splitlines()
    assert rows[0].replace('"', "").split(",")[:3] == ["experiment", "algorithm", "seed"]
    assert len(rows) > 1 + 2 * len(summary["algorithms"]) * 20  # at least the loss of every round of every run


def test_list_names_every_experiment(monkeypatch):
    monkeypatch.setattr(cli.console, "width", 400)
    result = runner.invoke(cli.app, ["list"])
    assert result.exit_code == 0
    for name in experiments.names():
        assert name in result.output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no-such-experiment"], "unknown experiment 'no-such-experiment' (valid: cli-smoke, "),
        (["run", "time-varyng-regression"], "did you mean 'time-varying-regression'?"),
        (["list", "online-pq"], "did you mean 'online-qp'"),
        (["run", "online-qp", "--option", "extra=false"], "online-qp 'extra'; did you mean 'extras'?"),
        (["plot", ".", "--format", "jpg"], "unknown --format 'jpg'"),
        (["plot", ".", "--dpi", "0"], "dpi must be an integer in [10, 2400]"),
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


def test_run_json_prints_the_summary_alone_on_stdout(tmp_path):
    out = tmp_path / "smoke"
    result = runner.invoke(cli.app, ["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads((out / "summary.json").read_text())  # nothing else on stdout
    assert "cli-smoke" in result.stderr and "wrote" in result.stderr  # the header and the files: stderr


def test_tables_are_plain_markdown_off_a_terminal_or_with_plain(tmp_path):
    out = tmp_path / "smoke"
    args = ["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", str(out), "--plain"]
    assert runner.invoke(cli.app, args).exit_code == 0
    for command in (["report", str(out)], ["report", str(out), "--plain"], ["list", "cli-smoke"]):
        result = runner.invoke(cli.app, command)  # CliRunner's stdout is no terminal: plain either way
        assert result.exit_code == 0, result.output
        rows = [line for line in result.stdout.splitlines() if line.startswith("|")]
        assert rows and not any(ch in result.stdout for ch in "┃│━─┏"), result.stdout  # no box drawing
        assert len({row.replace("\\|", "").count("|") for row in rows}) == 1, result.stdout  # no row wraps
        if command[0] == "report":
            assert rows[0] == "| metric | OGD | OGD-slow |" and rows[1] == "|---|---:|---:|"
            assert "cli-smoke: final values, mean ± sample std (ddof = 1) over the seeds" in result.stdout
            assert "| seeds | 2 | 2 |" in result.stdout
        else:  # the card's tables
            assert "| label | note |" in rows


def test_progress_bar_shows_an_eta():
    import io

    from rich.console import Console

    target = Console(file=io.StringIO(), force_terminal=True, width=200)
    with cli._progress_bar(target) as bar:
        task = bar.add_task("OGD", total=10)
        bar.advance(task, 4)
        rendered = Console(file=io.StringIO(), width=200, record=True)
        rendered.print(bar.get_renderable())
        text = rendered.export_text()
    assert "OGD" in text and "4/10" in text and "ETA" in text
    assert re.search(r"ETA (\d+:\d\d:\d\d|-:--:--)", text), text


def _one_line_error(args: list[str]) -> str:
    result = runner.invoke(cli.app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_out_that_is_a_file_is_refused_before_computing(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    for out in (target, target / "below"):
        message = _one_line_error(["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", str(out)])
        assert f"--out {out}" in message and "is a file, not a folder" in message
    assert target.read_text() == "keep me" and [p.name for p in tmp_path.iterdir()] == ["results.txt"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes in read-only folders")
def test_out_in_a_read_only_folder_is_refused_before_computing(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        for out in (locked, locked / "new"):
            message = _one_line_error(["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", str(out)])
            assert f"--out {out} is not a writable folder" in message
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where nothing can be created")
def test_out_where_nothing_can_be_created_is_refused_before_computing():
    message = _one_line_error(["run", "cli-smoke", "--T", "20", "--seeds", "2", "--out", "/proc/ocokit-results"])
    assert message.startswith("error: --out /proc/ocokit-results is not a writable folder")
    assert not Path("/proc/ocokit-results").exists()


@pytest.mark.integration
@pytest.mark.parametrize("status", [0, 2])
def test_the_console_script_ends_with_its_status_and_its_output_whole(tmp_path, status):
    out = tmp_path / "out"
    args = ["run", "time-varying-regression", "--T", "8" if status == 0 else "0", "--seeds", "2", "--json",
            "--option", "extras=false", "--option", "algorithms=COLDQ", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "OCOKIT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}
    done = subprocess.run([sys.executable, "-m", "ocokit.cli", *args], capture_output=True, text=True, env=env)
    assert done.returncode == status, done.stderr[-2000:]
    if status == 0:
        assert json.loads(done.stdout) == json.loads((out / "summary.json").read_text())  # flushed whole
    else:
        assert done.stdout.strip() == "error: --T must be an integer >= 1 and <= 2147483647, got 0"


def test_list_is_one_line_per_experiment_within_100_columns_naming_papers(monkeypatch):
    monkeypatch.setattr(cli.console, "width", 400)
    result = runner.invoke(cli.app, ["list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= _cli_tables.LIST_WIDTH
    for name in experiments.names():
        (line,) = [line for line in lines if line.startswith(name + " ")]
        exp = experiments.get(name)
        assert f"T={exp.default_T}, {exp.default_seeds} seeds" in line
    (line,) = [line for line in lines if line.startswith("time-varying-regression ")]
    assert "Wang, Yan and Liu 2025" in line and "Fig. 1" in line
    assert not re.search(r"(?<![\d.])00[0-4](?![\d])", result.output)  # no bare paper id


def test_list_name_prints_the_card(monkeypatch):
    monkeypatch.setattr(cli.console, "width", 400)
    result = runner.invoke(cli.app, ["list", "time-varying-regression", "--plain"])
    assert result.exit_code == 0, result.output
    exp = experiments.get("time-varying-regression")
    assert "Wang, Yan and Liu, AAAI 2025, Fig. 1" in result.output
    assert f"--T {exp.default_T} --seeds {exp.default_seeds}" in result.output
    for algorithm in exp.algorithms:
        assert algorithm.label in result.output
    for option in exp.options:
        assert f"--option {option.name}=..." in result.output and option.describe() in result.output
    for claim in exp.claims:
        assert claim.statement in result.output
    assert not re.search(r"(?<![\d.])00[0-4](?![\d])", result.output)


def _summary(T, seeds, std=1.5):
    return {
        "experiment": "time-varying-regression",
        "T": T,
        "seeds": seeds,
        "options": {},
        "algorithms": {"COLDQ": {"hard_violation": {"mean": 2.0, "std": std}, "seeds": seeds}},
        "claims": [{"statement": "a claim", "measured": "x", "holds": False}],
    }


def test_report_shows_seeds_and_warns_below_the_default_size(capsys):
    exp = experiments.get("time-varying-regression")
    cli.print_report(_summary(100, 2), plain=True)
    small = capsys.readouterr().out
    assert "sample std (ddof = 1)" in small and "| seeds | 2 |" in small
    assert f"smaller than the size the claims are meant for (T = {exp.default_T}, {exp.default_seeds} seeds" in small
    cli.print_report(_summary(exp.default_T, exp.default_seeds), plain=True)
    assert "smaller than" not in capsys.readouterr().out


def test_missing_data_names_the_command_line_flag_and_the_variable(monkeypatch, tmp_path):
    from ocokit import datasets

    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match=r"--data FOLDER on the command line.*OCOKIT_DATA"):
        datasets.resolve("ml-100k/u.data", tmp_path)


def test_plot_writes_the_asked_format(tmp_path):
    out = tmp_path / "smoke"
    assert runner.invoke(cli.app, ["run", "cli-smoke", "--T", "10", "--seeds", "2", "--out", str(out)]).exit_code == 0
    for fmt, magic in [("pdf", b"%PDF"), ("svg", b"<?xml")]:
        result = runner.invoke(cli.app, ["plot", str(out), "--format", fmt, "--dpi", "200"])
        assert result.exit_code == 0, result.output
        assert (out / f"cli-smoke.{fmt}").read_bytes().startswith(magic)

"""The ``ocokit`` command: list, run, plot and report the registered experiments.

``ocokit run NAME`` enables float64 (the library never does on import), runs every algorithm of the
experiment with a progress bar, skips runs already stored under ``--out``, and writes
``OUT/summary.json``, one Parquet file per run under ``OUT/runs/`` and the figure ``OUT/NAME.png``; it
then prints the summary and the paper's claims as a table (claim / measured / holds).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Online convex optimization under constraints.",
)
console = Console()


def _experiments():
    from ocokit import experiments

    return experiments


class _RichProgress:
    """Adapts the harness's progress hooks to a rich progress bar."""

    def __init__(self, bar: Progress):
        self.bar, self.tasks = bar, {}

    def start(self, label: str, total: int) -> None:
        self.tasks[label] = self.bar.add_task(label, total=total)

    def advance(self, label: str, steps: int = 1) -> None:
        if label not in self.tasks:
            self.start(label, steps)
        self.bar.advance(self.tasks[label], steps)


def _parse_options(options: list[str]) -> dict[str, str]:
    parsed = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes key=value, got {item!r}")
        parsed[key.strip()] = value.strip()
    return parsed


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def print_report(report_json: dict) -> None:
    """Print a summary.json as two tables: final metrics per algorithm, and the claims."""
    algos = report_json.get("algorithms", {})
    metric_names: list[str] = []
    for stats in algos.values():
        for k, v in stats.items():
            if isinstance(v, dict) and "mean" in v and k not in metric_names:
                metric_names.append(k)
    table = Table(title=f"{report_json.get('experiment', '')}: final values (mean ± std over seeds)")
    table.add_column("metric")
    for label in algos:
        table.add_column(label, justify="right")
    for m in metric_names:
        table.add_row(
            m.replace("_", " "),
            *(f"{_fmt(st[m]['mean'])} ± {_fmt(st[m]['std'])}" if m in st else "-" for st in algos.values()),
        )
    table.add_row(
        "wall s / round (incl. compile)",
        *(f"{st['wall_seconds_per_round']:.2e}" if "wall_seconds_per_round" in st else "-" for st in algos.values()),
    )
    console.print(table)
    claims = report_json.get("claims", [])
    if claims:
        ctable = Table(title="paper claims")
        ctable.add_column("claim")
        ctable.add_column("measured")
        ctable.add_column("holds")
        for c in claims:
            ctable.add_row(c["statement"], c["measured"], "[green]yes[/green]" if c["holds"] else "[red]no[/red]")
        console.print(ctable)


@app.command("list")
def list_experiments() -> None:
    """List the registered experiments, the algorithms each compares and its options."""
    E = _experiments()
    table = Table(title="ocokit experiments")
    table.add_column("name", no_wrap=True, min_width=max(len(n) for n in E.names()))
    for col in ("paper", "what", "algorithms", "options", "default T", "seeds"):
        table.add_column(col)
    for name in E.names():
        exp = E.get(name)
        algos = ", ".join(a.label + (f" ({a.note})" if a.note else "") for a in exp.algorithms)
        options = ", ".join(f"{o.name}={o.default} ({o.describe()})" for o in exp.options)
        table.add_row(name, exp.paper, exp.title, algos, options, str(exp.default_T), str(exp.default_seeds))
    console.print(table)


@app.command("run")
def run_experiment(
    name: Annotated[str, typer.Argument(help="experiment name (see `ocokit list`)")],
    T: Annotated[int | None, typer.Option("--T", help="horizon (default: the experiment's)")] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", help="repetitions (default: the experiment's)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="output folder (default: results/NAME)")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="dataset folder (default: $OCOKIT_DATA)")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="experiment option key=value")] = None,
) -> None:
    """Run an experiment, skipping runs already stored in OUT; write summary.json, runs and the figure."""
    import jax

    jax.config.update("jax_enable_x64", True)
    E = _experiments()
    exp = E.get(name)
    T = exp.default_T if T is None else T
    seeds = exp.default_seeds if seeds is None else seeds
    if T < 1:
        raise ValueError(f"--T must be an integer >= 1, got {T}")
    if seeds < 1:
        raise ValueError(f"--seeds must be an integer >= 1, got {seeds}")
    out = Path("results") / name if out is None else out
    options = _parse_options(option or [])
    console.print(f"[bold]{name}[/bold] ({exp.paper}): T = {T}, seeds = {seeds}, out = {out}")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        report = exp.run(T=T, seeds=seeds, out=out, data_dir=data, options=options, progress=_RichProgress(bar))
    print_report(report.to_json())
    console.print(
        f"wrote {out / 'summary.json'}"
        + (f" and {report.figure}" if report.figure else "")
        + f" ({report.new_runs} new runs, {report.skipped_runs} found on disk)"
    )


@app.command("plot")
def plot(out: Annotated[Path, typer.Argument(help="an output folder of `ocokit run`")]) -> None:
    """Redraw the figure of a finished run from its stored records."""
    summary = _read_summary(out)
    figure = _experiments().get(summary["experiment"]).plot(out)
    console.print(f"wrote {figure}")


@app.command("report")
def report(out: Annotated[Path, typer.Argument(help="an output folder of `ocokit run`")]) -> None:
    """Print the summary and the claims of a finished run."""
    print_report(_read_summary(out))


def _read_summary(out: Path) -> dict:
    path = Path(out) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run `ocokit run NAME --out {out}` first")
    return json.loads(path.read_text())


def main() -> None:
    """Entry point of the ``ocokit`` console script; errors print one line and exit with status 2."""
    try:
        app(standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (ValueError, FileNotFoundError) as err:
        console.print(f"[red]error:[/red] {err}")
        sys.exit(2)
    except Exception as err:  # click's usage errors (typer vendors click; match by interface)
        if hasattr(err, "show") and hasattr(err, "exit_code"):
            if type(err).__name__ != "NoArgsIsHelpError":  # help was printed already
                err.show()
            sys.exit(err.exit_code)
        raise


if __name__ == "__main__":
    main()

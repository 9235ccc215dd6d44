"""``ocokit bench``: every learner (the user's too) on every compatible suite problem, and the leaderboard.

Registered on the ``ocokit`` command group by `ocokit.cli`, outside [`ocokit.bench`][ocokit.bench] so that
``ocokit --help`` imports no JAX; it shares the group's conventions (float64 and the compilation cache, the progress
bar, ``--plain`` Markdown, ``--json`` on stdout with the rest on stderr, one-line errors). The board is played by
[`play_board`][ocokit.bench.play_board] and written by [`write_leaderboard`][ocokit.bench.write_leaderboard].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def bench(
    problems: Annotated[str | None, typer.Option("--problems", help="suite problems, comma-separated (all)")] = None,
    learners: Annotated[str | None, typer.Option("--learners", help="library learners, comma-separated (all)")] = None,
    learner: Annotated[
        list[str] | None, typer.Option("--learner", help="your learner, module:factory (repeatable)")
    ] = None,
    T: Annotated[int, typer.Option("--T", help="horizon")] = 500,
    seeds: Annotated[int, typer.Option("--seeds", help="seeds 0..K-1, the same rounds for every learner")] = 3,
    out: Annotated[Path, typer.Option("--out", help="output folder (runs and leaderboard)")] = Path("results/bench"),
    data: Annotated[Path | None, typer.Option("--data", help="dataset folder (default: $OCOKIT_DATA)")] = None,
    executor: Annotated[str, typer.Option("--executor", help="where runs are computed: local or ray")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster: auto or ray://host:port")] = None,
    plain: Annotated[bool, typer.Option("--plain", help="print tables as plain Markdown")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="print leaderboard.json on stdout, the rest to stderr")
    ] = False,
) -> None:
    """Play every library learner (and yours, --learner module:factory) on every compatible suite problem at its
    from_theory parameters; print the leaderboard and write OUT/leaderboard.{md,json,parquet,html}."""
    from ocokit import _checks, bench, cli
    from ocokit._cli_tables import _plain, console, print_table, status_console
    from ocokit.results import check_writable_folder

    _checks.horizon(T, "--T")
    if not 1 <= seeds <= cli.MAX_SEEDS:
        raise ValueError(f"--seeds must be an integer >= 1 and <= {cli.MAX_SEEDS}, got {seeds}")
    cache = cli._float64()
    if data is not None and not data.exists():
        raise ValueError(f"--data {data} does not exist (give the folder holding the datasets)")
    chosen = bench.problems(_names(problems), data)
    entrants = bench.library(_names(learners))
    for spec in learner or []:
        entrants.append(bench.entrant(spec, [e.label for e in entrants]))
    check_writable_folder(out, "--out")
    runner = cli._executor(executor, address, None, None)
    status = status_console if as_json else console
    status.print(f"[bold]ocokit bench[/bold]: {len(chosen)} problems x {len(entrants)} learners, T = {T}, "
                 f"seeds = {seeds}, out = {out}", soft_wrap=True, highlight=False)  # fmt: skip

    def compute():
        with cli._progress_bar(status) as bar:
            return bench.play_board(chosen, entrants, T=T, seeds=seeds, out=out, data_dir=data,
                                    progress=cli._RichProgress(bar), executor=runner)  # fmt: skip

    try:
        board = compute()
    except Exception as err:  # a damaged cache entry fails in JAX: once more without the cache
        if cache is None or isinstance(err, ValueError | OSError | FloatingPointError):
            raise
        board = cli._without_cache(cache, err, compute)
    paths = bench.write_leaderboard(board, out)
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))
    if as_json:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True))
    elif _plain(plain):
        console.print(bench.markdown(summary), markup=False, highlight=False, soft_wrap=True)
    else:
        for title, columns, rows in bench.tables(summary):
            print_table(title, columns, rows, plain=False, right=len(columns) - 1)
    pairs = len(board.played())
    status.print(
        f"{pairs} (learner, problem) pairs played, {len(board.results) - pairs} not compatible; "
        f"wrote {', '.join(str(p) for p in paths.values())} ({board.new_runs} new runs, "
        f"{board.skipped_runs} found on disk)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )

"""The Leaderboard page, from the committed small board ``docs/leaderboard/leaderboard.json``.

The file is the JSON ``ocokit bench`` writes (``docs/_hooks/make_leaderboard.py`` plays it). The page shows the
rank summary, then per problem its table (from [`ocokit.bench.tables`][ocokit.bench.tables], each learner linked to
its algorithm page and its row anchored ``row-<problem>-<learner>``) and its regret-CCV scatter, drawn at build time
as the bench draws it; the bench's own self-contained HTML page is written beside it. Every algorithm page links
its rows (`learner_cell`). Imported by ``docs/_hooks/pages.py``.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from pathlib import Path

BOARD = Path(__file__).resolve().parents[1] / "leaderboard" / "leaderboard.json"
PAGE = "leaderboard.md"


def load() -> dict | None:
    """The committed board, or ``None`` when there is none."""
    return json.loads(BOARD.read_text(encoding="utf-8")) if BOARD.is_file() else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def row_anchor(problem: str, learner: str) -> str:
    """The id of ``learner``'s row in ``problem``'s table."""
    return f"row-{_slug(problem)}-{_slug(learner)}"


def rank_anchor(learner: str) -> str:
    """The id of ``learner``'s row in the rank summary."""
    return f"rank-{_slug(learner)}"


def command(summary: dict) -> str:
    """The bench command that played the board (every library learner on its problems)."""
    names = ",".join(p["name"] for p in summary["problems"])
    return shlex.join(["ocokit", "bench", "--problems", names, "--T", str(summary["T"]), "--seeds",
                       str(summary["seeds"])])  # fmt: skip


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", r"\|")


def _table(columns: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |"]
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|")
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _learner(name: str, anchor: str, library: set[str]) -> str:
    shown = f"[{name}](algorithms/{name}.md)" if name in library else _cell(name)
    return f'<span id="{anchor}"></span>{shown}'


def page(summary: dict, library: set[str]) -> str:
    """The page's Markdown; ``library`` names the learners that have an algorithm page."""
    from ocokit import bench
    from ocokit.papers import cite

    tables = bench.tables(summary)
    lines = [
        "# Leaderboard",
        "",
        "Every library learner at its `from_theory` parameters on the standard problems it can play, over seeds "
        "with common random numbers (`ocokit bench`). Constrained OCO is bi-objective, so there is no single "
        "score: per problem, the regret and the constraint violation of each learner (mean ± sample std over the "
        "seeds), with the Pareto front of mean regret against mean CCV marked, and across problems how often each "
        "learner is on the front. Time per round is that of a compiled run on the machine that played the board.",
        "",
        "This board was played at a small size by",
        "",
        "```bash",
        command(summary),
        "```",
        "",
        f"on {len(summary['problems'])} problems, chosen so that every library learner plays. Its JSON, as the "
        "bench wrote it, is [`leaderboard.json`](leaderboard/leaderboard.json) (`python "
        "docs/_hooks/make_leaderboard.py` plays it again); the same board as the bench's self-contained HTML page "
        "is [`leaderboard.html`](leaderboard/leaderboard.html). `ocokit bench` with no option plays every problem "
        "of the suite; the [tutorial](tutorials/benchmark-your-learner.md) puts your own learner on it.",
        "",
        "## Rank summary",
        "",
    ]
    rank_title, rank_columns, rank_rows = tables[-1]
    rows = [[_learner(r[0], rank_anchor(r[0]), library), *map(_cell, r[1:])] for r in rank_rows]
    lines += [f"{rank_title[0].upper()}{rank_title[1:]}.", "", *_table(rank_columns, rows), ""]
    for p, (_, columns, rows) in zip(summary["problems"], tables[:-1], strict=True):
        name = p["name"]
        regret = "static" if p["front_regret"] == "static_regret" else "dynamic"
        shown = [[_learner(r[0], row_anchor(name, r[0]), library), *map(_cell, r[1:])] for r in rows]
        lines += [
            f"## {name}",
            "",
            f"{_cell(p['title'])} ({_cell(cite(p['paper']))}). T = {summary['T']}, {summary['seeds']} seeds; "
            f"the front is drawn with the {regret} regret.",
            "",
            *_table(columns, shown),
            "",
            f"![{name}: {regret} regret against CCV, stars on the Pareto front](leaderboard/{name}.png)",
            "",
        ]
    if summary["not_played"]:
        lines += [f'??? note "Pairs not played ({len(summary["not_played"])}): why each learner cannot play"', ""]
        rows = [[_cell(n["problem"]), _cell(n["learner"]), _cell(n["why"])] for n in summary["not_played"]]
        lines += ["    " + line for line in _table(["problem", "learner", "why"], rows)]
        lines.append("")
    return "\n".join(lines)


def learner_cell(summary: dict | None, name: str) -> str:
    """An algorithm page's line on the board: how often on the front, and a link to each of its rows."""
    if summary is None:
        return "no board committed"
    ranks = {r["learner"]: r for r in summary["ranks"]}
    if name not in ranks:
        return f"not on the committed board (`ocokit bench --learners {name}` plays it)"
    rank = ranks[name]
    rows = []
    for p in summary["problems"]:
        row = p["learners"].get(name)
        if row is not None:
            mark = " (failed)" if row["error"] else " (on the front)" if row["on_front"] else ""
            rows.append(f"[{p['name']}](../{PAGE}#{row_anchor(p['name'], name)}){mark}")
    return (
        f"[on the Pareto front in {rank['on_front']} of {rank['problems']} problem{'s' * (rank['problems'] != 1)}]"
        f"(../{PAGE}#{rank_anchor(name)}) "
        f"(T = {summary['T']}, {summary['seeds']} seeds): " + ", ".join(rows)
    )


def files(summary: dict) -> dict[str, str | bytes]:
    """The files the page shows, by site path: each problem's scatter (PNG) and the bench's HTML page."""
    from ocokit import bench
    from ocokit.bench._report import scatter_png

    out: dict[str, str | bytes] = {}
    for p in summary["problems"]:
        out[f"leaderboard/{p['name']}.png"] = scatter_png(p["name"], p["learners"], p["front_regret"])
    with tempfile.TemporaryDirectory() as tmp:
        out["leaderboard/leaderboard.html"] = bench.write_html(summary, Path(tmp) / "board.html").read_text("utf-8")
    return out

"""The leaderboard of a [`Board`][ocokit.bench.Board]: no single score, constrained OCO being bi-objective.

Per problem, each entrant's static regret (and dynamic regret where the problem has per-round optima), CCV (the hard
violation ``sum_t sum_n [g_t^n(x_t)]_+``), squared violation and time per round of a compiled run, as mean ± sample
std (ddof = 1) over the seeds, with the number of seeds; the Pareto front of mean regret (static; dynamic where the
problem has no best fixed point) against mean CCV is marked.
Across problems, the rank summary counts how often each entrant is on the front. Written as Markdown
([`markdown`][ocokit.bench.markdown]), JSON ([`summarise`][ocokit.bench.summarise]), tidy Parquet (one row per
entrant x problem x seed x measure: [`write_parquet`][ocokit.bench.write_parquet]) and one self-contained HTML page
with a regret-vs-CCV scatter per problem ([`write_html`][ocokit.bench.write_html]).
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Any

from ocokit.bench._board import Board
from ocokit.metrics import mean_std
from ocokit.papers import cite

COLUMNS = (
    ("static_regret", "regret"),
    ("dynamic_regret", "dynamic regret"),
    ("hard_violation", "CCV"),
    ("squared_violation", "squared violation"),
    ("seconds_per_round", "s / round"),
)
"""The measures of a problem's table and their headers."""


def pareto_front(points: dict[str, tuple[float, float]]) -> set[str]:
    """The labels whose ``(regret, ccv)`` no other point dominates (at most in both, less in one); non-finite
    points are never on the front."""
    finite = {k: p for k, p in points.items() if all(math.isfinite(v) for v in p)}

    def dominated(p):
        return any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in finite.values())

    return {k for k, p in finite.items() if not dominated(p)}


def summarise(board: Board) -> dict[str, Any]:
    """The board as JSON: per problem its entrants' statistics (``{"mean", "std"}`` per measure, ``seeds``,
    ``on_front``, ``error``), the pairs not played and why, and the rank summary."""
    out: dict[str, Any] = {"T": board.T, "seeds": board.seeds, "problems": [], "not_played": []}
    for suite in board.problems:
        rows = {}
        for r in (r for r in board.played() if r.problem == suite.name):
            stats = {m: mean_std(v) for m, v in r.values.items() if v.size}
            rows[r.learner] = {**stats, "seeds": len(r.seeds), "error": r.error, "error_round": r.error_round}
        regret = regret_measure(rows)
        points = {k: (v[regret]["mean"], v["hard_violation"]["mean"]) for k, v in rows.items()
                  if not v["error"] and regret in v and "hard_violation" in v}  # fmt: skip
        front = pareto_front(points)
        for k, v in rows.items():
            v["on_front"] = k in front
        entry = {"name": suite.name, "title": suite.title, "paper": cite(suite.paper), "front_regret": regret}
        out["problems"].append(entry | {"learners": rows})
    out["not_played"] = [{"problem": r.problem, "learner": r.learner, "why": r.skipped} for r in board.results
                         if r.skipped]  # fmt: skip
    out["ranks"] = _ranks(out["problems"])
    return out


def regret_measure(rows: dict[str, Any]) -> str:
    """The regret the front is drawn with: static where the problem has a best fixed point, else dynamic."""
    return "static_regret" if any("static_regret" in v for v in rows.values()) else "dynamic_regret"


def _ranks(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[str, list[int]] = {}
    for p in problems:
        for k, v in p["learners"].items():
            c = counts.setdefault(k, [0, 0, 0])
            c[0], c[1], c[2] = c[0] + 1, c[1] + int(v["on_front"]), c[2] + int(bool(v["error"]))
    ranks = [{"learner": k, "problems": n, "on_front": f, "failed": e} for k, (n, f, e) in counts.items()]
    return sorted(ranks, key=lambda r: (-r["on_front"] / r["problems"], -r["on_front"], r["learner"]))


def _cell(stats: dict[str, float] | None, measure: str) -> str:
    if stats is None:
        return "-"
    if measure == "seconds_per_round":  # one timing per unit of seeds: its spread over seeds says nothing
        return f"{stats['mean']:.3g}"
    return f"{stats['mean']:.4g} ± {stats['std']:.2g}"


def tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The leaderboard's tables ``(title, columns, rows)``: one per problem, then the rank summary."""
    out = []
    for p in summary["problems"]:
        name, learners = p["name"], p["learners"]
        shown = [(m, h) for m, h in COLUMNS if any(m in v for v in learners.values())]
        rows = []
        for k, v in sorted(learners.items(), key=lambda kv: _order(kv[1], p["front_regret"])):
            mark = "yes" if v["on_front"] else ""
            rest = [f"failed: {v['error']}"] if v["error"] else []
            rows.append([k, mark, *(_cell(v.get(m), m) for m, _ in shown), str(v["seeds"]), *rest])
        columns = ["learner", "front", *(h for _, h in shown), "seeds"]
        if any(v["error"] for v in learners.values()):
            columns.append("note")
            rows = [r + [""] * (len(columns) - len(r)) for r in rows]
        title = f"{name}: {p['title']} ({p['paper']}); T = {summary['T']}, mean ± sample std over seeds"
        out.append((title, columns, rows))
    ranks = [[r["learner"], str(r["on_front"]), str(r["problems"]), str(r["failed"])] for r in summary["ranks"]]
    out.append(("rank summary: how often each learner is on the regret-CCV Pareto front",
                ["learner", "on front", "problems played", "failed"], ranks))  # fmt: skip
    return out


def _order(v: dict[str, Any], measure: str) -> tuple:
    """Front first, then by mean regret; failures last."""
    regret = v.get(measure, {}).get("mean", math.inf)
    return (bool(v["error"]), not v["on_front"], regret if math.isfinite(regret) else math.inf)


def markdown_table(title: str, columns: list[str], rows: list[list[str]]) -> str:
    """One Markdown table under its title (``|`` in cells escaped)."""
    cell = lambda s: " ".join(str(s).split()).replace("|", "\\|")  # noqa: E731
    lines = [f"### {title}", "", "| " + " | ".join(cell(c) for c in columns) + " |"]
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown(summary: dict[str, Any]) -> str:
    """The whole leaderboard as Markdown: every table of `tables`."""
    return "\n".join(markdown_table(*t) for t in tables(summary))


def write_parquet(board: Board, path: Path) -> Path:
    """The tidy table: one row per (learner, problem, seed, measure) with its value (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: dict[str, list] = {"learner": [], "problem": [], "seed": [], "metric": [], "value": []}
    for r in board.played():
        for m, values in r.values.items():
            for s, v in zip(r.seeds, values, strict=True):
                for k, x in zip(rows, (r.learner, r.problem, s, m, float(v)), strict=True):
                    rows[k].append(x)
    types = {"learner": pa.string(), "problem": pa.string(), "seed": pa.int64(), "metric": pa.string(),
             "value": pa.float64()}  # fmt: skip
    table = pa.table({k: pa.array(rows[k], t) for k, t in types.items()})
    pq.write_table(table, path)
    return path


def scatter_png(name: str, learners: dict[str, Any], regret: str = "static_regret") -> bytes:
    """A problem's regret-vs-CCV scatter (mean with sample-std error bars over seeds; symmetric-log axes, which are
    logarithmic beyond a small linear band around 0 so that a zero CCV and a negative regret show), as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    colours = plt.get_cmap("tab20")
    for i, (k, v) in enumerate(learners.items()):
        if v["error"] or regret not in v or "hard_violation" not in v:
            continue
        r, c = v[regret], v["hard_violation"]
        front = v["on_front"]
        ax.errorbar(r["mean"], c["mean"], xerr=_finite(r["std"]), yerr=_finite(c["std"]), fmt="*" if front else "o",
                    markersize=11 if front else 6, capsize=3, label=k, color=colours(i % 20))  # fmt: skip
    ax.set_xscale("symlog", linthresh=1e-2)
    ax.set_yscale("symlog", linthresh=1e-2)
    ax.set_xlabel(f"{regret.replace('_', ' ')} at T")
    ax.set_ylabel("CCV at T")
    ax.set_title(f"{name} (stars: Pareto front)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0


def write_html(summary: dict[str, Any], path: Path) -> Path:
    """One self-contained HTML page: per problem its table and scatter (inline base64 PNG), then the rank summary."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>ocokit leaderboard</title>{_STYLE}</head><body>",
             f"<h1>ocokit leaderboard</h1><p>T = {summary['T']}, {summary['seeds']} seeds (common random numbers); "
             "mean ± sample std over seeds; Pareto front of mean regret against mean CCV marked.</p>"]  # fmt: skip
    table_list = tables(summary)
    for p, table in zip(summary["problems"], table_list, strict=False):
        name = p["name"]
        png = base64.b64encode(scatter_png(name, p["learners"], p["front_regret"])).decode("ascii")
        parts.append(f"<section id='{html.escape(name)}'>{_html_table(*table)}")
        parts.append(f"<img alt='regret vs CCV on {html.escape(name)}' src='data:image/png;base64,{png}'></section>")
    parts.append(_html_table(*table_list[-1]))
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


_STYLE = (
    "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child{text-align:left}</style>"
)


def _html_table(title: str, columns: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<h3>{html.escape(title)}</h3><table><tr>{head}</tr>{body}</table>"


def write_leaderboard(board: Board, out: Path) -> dict[str, Path]:
    """Write ``leaderboard.json``, ``leaderboard.md``, ``leaderboard.parquet`` and ``leaderboard.html`` into
    ``out`` (each atomically); their paths by kind."""
    from ocokit.results import atomic_write_bytes, atomic_write_json

    out, summary = Path(out), summarise(board)
    paths = {k: out / f"leaderboard.{k}" for k in ("json", "md", "parquet", "html")}
    atomic_write_json(paths["json"], summary)
    atomic_write_bytes(paths["md"], markdown(summary).encode("utf-8"))
    write_parquet(board, paths["parquet"])
    write_html(summary, paths["html"])
    return paths

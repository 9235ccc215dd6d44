"""The command line's tables and cards: a summary and its claims, ``ocokit list`` and an experiment's card.

Rich's box drawing on a terminal, plain Markdown with ``--plain`` or off a terminal (a log, a pipe); cells are
plain text. `console` is where the command prints, `status_console` where ``run --json`` sends the rest.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
status_console = Console(stderr=True)
"""Where ``run --json`` sends what is not the summary (the progress bar, the header, the files written)."""


def _experiments():
    """The experiment registry, imported on first use (``ocokit --help`` loads no JAX)."""
    from ocokit import experiments

    return experiments


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _plain(plain: bool) -> bool:
    """Plain Markdown tables: asked for with ``--plain``, or stdout is not a terminal (a log, a pipe)."""
    return plain or not console.is_terminal


def _cell(value: str) -> str:
    return " ".join(str(value).split()).replace("|", "\\|")


def print_table(title: str, columns: list[str], rows: list[list[str]], *, plain: bool, right: int = 0) -> None:
    """Print a table: rich's box drawing, or (``plain``) a Markdown table under its title that never wraps.

    The last ``right`` columns are right-aligned. Cells are plain text (no rich markup).
    """
    aligns = [i >= len(columns) - right for i in range(len(columns))]
    if plain:
        lines = [title, "", "| " + " | ".join(_cell(c) for c in columns) + " |"]
        lines.append("|" + "|".join("---:" if a else "---" for a in aligns) + "|")
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        console.print("\n".join(lines) + "\n", markup=False, highlight=False, soft_wrap=True)
        return
    table = Table(title=escape(title))
    for column, a in zip(columns, aligns, strict=True):
        table.add_column(escape(column), justify="right" if a else "left")
    for row in rows:
        table.add_row(*(escape(c) for c in row))
    console.print(table)


def _seeds_of(stats: dict, report_json: dict) -> str:
    seeds = stats.get("seeds", report_json.get("seeds"))
    return str(seeds) if seeds is not None else "-"


def print_report(
    report_json: dict, *, plain: bool = False, default_T: int | None = None, default_seeds: int | None = None
) -> None:
    """Print a summary.json as two tables: final metrics per algorithm (mean ± sample std over the seeds, and how
    many seeds), and the claims; under the claims, a line when the run is smaller than the experiment's default
    size (``default_T``/``default_seeds``, read from the registry when not given), for which the claims are meant.
    """
    algos = report_json.get("algorithms", {})
    metric_names: list[str] = []
    for stats in algos.values():
        for k, v in stats.items():
            if isinstance(v, dict) and "mean" in v and k not in metric_names:
                metric_names.append(k)
    rows = [[m.replace("_", " "), *(_mean_spread(st[m]) if m in st else "-" for st in algos.values())]
            for m in metric_names]  # fmt: skip
    rows.append(["seeds", *(_seeds_of(st, report_json) for st in algos.values())])
    wall = [f"{st['wall_seconds_per_round']:.2e}" if "wall_seconds_per_round" in st else "-" for st in algos.values()]
    rows.append(["wall s / round", *wall])
    compiling = [f"{st['compile_seconds']:.3g}" if "compile_seconds" in st else "-" for st in algos.values()]
    rows.append(["compile s", *compiling])
    title = f"{report_json.get('experiment', '')}: final values, mean ± sample std (ddof = 1) over the seeds"
    print_table(title, ["metric", *algos], rows, plain=_plain(plain), right=len(algos))
    claims = report_json.get("claims", [])
    if claims:
        rows = [[c["statement"], c["measured"], "yes" if c["holds"] else "no"] for c in claims]
        print_table("paper claims", ["claim", "measured", "holds"], rows, plain=_plain(plain))
        smaller = _smaller_than_default(report_json, default_T, default_seeds)
        if smaller:
            console.print(smaller, markup=False, highlight=False, soft_wrap=True)


def _mean_spread(stats: dict) -> str:
    """``mean ± std`` of a metric over the seeds, or ``slope (se s)`` of a fit (its standard error)."""
    if "se" in stats:
        return f"{_fmt(stats['mean'])} (se {_fmt(stats['se'])})"
    return f"{_fmt(stats['mean'])} ± {_fmt(stats['std'])}"


def _smaller_than_default(report_json: dict, default_T: int | None, default_seeds: int | None) -> str | None:
    """The line under the claims when this run is smaller than the size its claims are meant for, else ``None``."""
    name = report_json.get("experiment")
    if default_T is None or default_seeds is None:
        E = _experiments()
        if name not in E.names():
            return None
        default_T, default_seeds = E.get(name).default_T, E.get(name).default_seeds
    T, seeds = report_json.get("T"), report_json.get("seeds")
    if not isinstance(T, int) or not isinstance(seeds, int) or (T >= default_T and seeds >= default_seeds):
        return None
    return (
        f"note: this run (T = {T}, {seeds} seeds) is smaller than the size the claims are meant for "
        f"(T = {default_T}, {default_seeds} seeds: `ocokit run {name}`); at this size they may not hold."
    )


LIST_WIDTH = 100
"""``ocokit list`` prints one line per experiment within this many columns."""


def _shorten(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` characters, cut at a word with "..." if it is longer."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[: max(0, width - 3)]
    cut = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return cut.rstrip(",;:") + "..."


def _list_cells(exp) -> tuple[str, str]:
    """(paper by name, what): ``("Wang, Yan and Liu 2025", "Fig. 1: Time-varying regression, ...")``."""
    from ocokit.papers import PAPERS

    head, _, rest = exp.paper.partition(" ")
    paper = PAPERS.get(head)
    if paper is None:
        return exp.paper, exp.title
    rest = rest.strip()
    where = "" if not rest or rest.startswith("(") else f"{rest}: "
    return f"{paper.short_authors} {paper.year}", where + exp.title


def _list_lines(names: list[str]) -> list[str]:
    """One line per experiment, at most ``LIST_WIDTH`` columns: name, paper, what, default size."""
    E = _experiments()
    cells = {n: _list_cells(E.get(n)) for n in names}
    sizes = {n: f"T={E.get(n).default_T}, {E.get(n).default_seeds} seeds" for n in names}
    w_name = max(len(n) for n in [*names, "experiment"])
    w_paper = max(len(c[0]) for c in [*cells.values(), ("paper", "")])
    w_size = max(len(v) for v in [*sizes.values(), "default size"])
    w_what = LIST_WIDTH - w_name - w_paper - w_size - 6
    row = lambda a, b, c, d: f"{a:<{w_name}}  {b:<{w_paper}}  {_shorten(c, w_what):<{w_what}}  {d:>{w_size}}"  # noqa: E731
    return [row("experiment", "paper", "what", "default size"), *(row(n, *cells[n], sizes[n]) for n in names)]


def _print_card(exp, *, plain: bool) -> None:
    """An experiment's card: paper, size, data, algorithms, options (defaults and ranges) and claims."""
    from ocokit.papers import PAPERS, cite

    paper = PAPERS.get(exp.paper.split()[0]) if exp.paper.split() else None
    lines = [f"{exp.name}: {exp.title}", f"  paper:    {cite(exp.paper)}"]
    if paper is not None:
        lines.append(f"            {paper.title}" + (f" ({paper.url})" if paper.url else ""))
    lines += [
        f"  default:  --T {exp.default_T} --seeds {exp.default_seeds} (the size the claims are meant for)",
        f"  data:     {'needs --data FOLDER or OCOKIT_DATA' if exp.needs_data else 'none (synthetic)'}",
        f"  command:  ocokit run {exp.name}" + (" --data FOLDER" if exp.needs_data else ""),
    ]
    console.print("\n".join(lines) + "\n", markup=False, highlight=False, soft_wrap=True)
    print_table(
        "algorithms",
        ["label", "note"],
        [[a.label, a.note or "-"] for a in exp.algorithms],
        plain=_plain(plain),
    )
    if exp.options:
        rows = [[f"--option {o.name}=...", o.describe(), repr(o.default), o.help or "-"] for o in exp.options]
        print_table("options", ["option", "accepts", "default", "what it does"], rows, plain=_plain(plain))
    if exp.claims:
        rows = [[c.statement] for c in exp.claims]
        print_table(f"claims (checked by `ocokit run {exp.name}`)", ["claim"], rows, plain=_plain(plain))

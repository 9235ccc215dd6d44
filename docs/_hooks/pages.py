"""MkDocs hook: generate one page per learner and one per experiment, each from one template.

The pages are built from the code at build time, so they follow it: a learner page from the class (its
docstring, ``feedback`` kind, ``from_theory`` signature, references), an experiment page from the
``ocokit.experiments`` registry (title, paper, options, algorithms, claims, the module's docstring) and the
small-size run committed under ``docs/figures/`` (``<name>.png`` and ``<name>.json``, written by
``docs/_hooks/make_figures.py``). It also serves MathJax from the ``mathjax`` package of the ``docs`` extra.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from pathlib import Path

import leaderboard_page  # docs/_hooks/leaderboard_page.py (mkdocs puts a hook's folder on the path)
from cost_per_round import measure_cost  # docs/_hooks/cost_per_round.py
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.ocokit")

# What a learner of each feedback kind sees after playing x_t (the protocol, in math).
SETTINGS = {
    "full_information": (
        r"After playing \(x_t \in \mathcal{X}\) the learner sees the round's loss \(f_t\) and constraints "
        r"\(g_t = (g_t^1, \dots, g_t^N)\) as functions of \(x\): values, gradients \(\nabla f_t(x)\) and the "
        r"Jacobian of \(g_t\), and the declared structure of the constraints (affine, log-capacity)."
    ),
    "bandit": (
        r"After playing \(x_t \in \mathcal{X}\) the learner sees only the values \(f_t(x_t)\) and "
        r"\(g_t(x_t)\) at the point it played (one-point bandit feedback)."
    ),
    "zeroth_order": (
        r"After playing \(x_t\) the learner may query the values \(f_t(x)\) and \(g_t(x)\) at points of its "
        r"choice (zeroth-order feedback; two-point and one-point estimators), never a gradient."
    ),
    "predictions": (
        r"The learner queries values of the coming rounds' costs through a prediction oracle over a window "
        r"of \(W\) rounds, \(f_{t}, \dots, f_{t+W}\), before committing to \(x_t\)."
    ),
}

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"


# --------------------------------------------------------------------------------------------- discovery


def learners() -> list[type]:
    """Every concrete learner exported by ``ocokit.algorithms``, in ``__all__`` order."""
    import ocokit.algorithms as algorithms

    found = []
    for name in algorithms.__all__:
        obj = getattr(algorithms, name)
        if inspect.isclass(obj) and issubclass(obj, algorithms.AbstractLearner) and not inspect.isabstract(obj):
            found.append(obj)
    return found


def experiments() -> list:
    """Every registered experiment, by name."""
    import ocokit.experiments as registry

    return [registry.get(name) for name in registry.names()]


def _code_names(code) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _code_names(const)
    return names


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def learner_of(algorithm, classes: list[type]) -> type | None:
    """The learner class an experiment's ``Algorithm`` builds: named by its ``make`` or by its label."""
    make = algorithm.make
    names = set()
    if make is not None:
        code = getattr(make, "__code__", None) or getattr(getattr(make, "func", None), "__code__", None)
        if code is not None:
            names = _code_names(code)
            cells = [cell.cell_contents for cell in getattr(make, "__closure__", None) or ()]
            names |= {c.__name__ for c in cells if inspect.isclass(c)}
    by_name = [c for c in classes if c.__name__ in names]
    if len(by_name) == 1:
        return by_name[0]
    label = _norm(algorithm.label.split("(")[0])
    by_label = [c for c in classes if _norm(c.__name__) == label]
    return by_label[0] if by_label else None


# ------------------------------------------------------------------------------------------- formatting


def _public(path: str) -> bool:
    """Whether ``ocokit.pkg.Name`` is rendered in the API reference (a name of a subpackage's ``__all__``)."""
    import importlib

    module, _, name = path.rpartition(".")
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return False
    return name in getattr(mod, "__all__", ())


def rst_to_markdown(text: str) -> str:
    """Turn the reST bits of a module docstring into Markdown: roles become links or code, ``x`` becomes `x`."""

    def role(match: re.Match) -> str:
        target = match.group(2)
        shown = target.rsplit(".", 1)[-1] if target.startswith("~") else target
        target = target.lstrip("~")
        if target.startswith("ocokit.") and _public(target):
            return f"[`{shown}`][{target}]"
        return f"`{shown}`"

    text = re.sub(r":(class|func|data|mod|meth|attr):`([^`]+)`", role, text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return text


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def _references(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    match = re.search(r"^References:\n((?:[ \t]+.*\n?|\n)+)", doc, flags=re.MULTILINE)
    if not match:
        return "(none given)"
    return " ".join(line.strip() for line in match.group(1).splitlines() if line.strip())


def _kind(cls: type) -> str:
    return cls.feedback.value if hasattr(cls.feedback, "value") else str(cls.feedback)


def _table_cell(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")


class _Shown(str):
    """An annotation as the page shows it: its text, unquoted."""

    def __repr__(self) -> str:
        return str(self)


def _shown_annotation(annotation):
    """A class by its name (``ProblemInfo``, not ``ocokit.algorithms._base.ProblemInfo``), a string unquoted."""
    if annotation is inspect.Parameter.empty:
        return annotation
    if isinstance(annotation, type):
        return _Shown(annotation.__qualname__)
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return _Shown(re.sub(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_]\w*)", "", text))


def public_signature(function) -> str:
    """``inspect.signature(function)`` with annotations by their names: no module path, no private module."""
    signature = inspect.signature(function)
    parameters = [p.replace(annotation=_shown_annotation(p.annotation)) for p in signature.parameters.values()]
    return str(
        signature.replace(parameters=parameters, return_annotation=_shown_annotation(signature.return_annotation))
    )


# ------------------------------------------------------------------------------------------------ pages


def algorithm_page(cls: type, used_in: list[str], leaderboard: str = "no board committed") -> str:
    name, kind = cls.__name__, _kind(cls)
    lines = [f"# {name}", ""]
    if getattr(cls, "reconstructed", False):
        lines += [
            '!!! warning "Reconstructed baseline"',
            "    The paper's text could not be obtained: this learner follows a reconstruction from the",
            "    published description and is **not** the authors' algorithm. Its docstring below says what was",
            "    rebuilt and how.",
            "",
        ]
    lines += [rst_to_markdown(_summary(cls)), ""]
    theory = getattr(cls, "from_theory", None)
    signature = f"{name}.from_theory{public_signature(theory)}" if theory is not None else "(none)"
    experiments_cell = ", ".join(f"[{e}](../experiments/{e}.md)" for e in used_in) or "(none registered)"
    lines += [
        "| | |",
        "|---|---|",
        f"| feedback | `{kind}` (see [feedback kinds](../api/feedback.md)) |",
        f"| import | `from ocokit.algorithms import {name}` |",
        f"| paper | {_table_cell(_references(cls))} |",
        f"| experiments | {experiments_cell} |",
        f"| leaderboard | {leaderboard} |",
        "",
        "## Setting",
        "",
        r"At round \(t = 1, \dots, T\) the learner plays \(x_t \in \mathcal{X}\) (the problem's domain, an "
        r"[`AbstractSet`][ocokit.sets.AbstractSet]); the round then reveals a convex loss \(f_t\) and "
        r"constraints \(g_t\), to be kept \(\le 0\) in the long run:",
        "",
        r"\[ \mathrm{Regret}_T = \sum_{t=1}^T f_t(x_t) - \min_{x \in \mathcal{X}} \sum_{t=1}^T f_t(x), \qquad"
        r" \mathrm{CCV}_T = \sum_{t=1}^T \big\| [g_t(x_t)]_+ \big\|. \]",
        "",
        SETTINGS.get(kind.replace("-", "_"), f"Feedback kind `{kind}`."),
        "",
        "## Theory defaults",
        "",
        "The paper's theory-driven parameters come from one constructor, which reads the problem's constants",
        "through [`ProblemInfo.require`][ocokit.algorithms.ProblemInfo.require] (every keyword overrides one):",
        "",
        "```python",
        signature,
        "```",
        "",
        f"Its documentation, and what each parameter does, is in the reference below ([`from_theory`]"
        f"[ocokit.algorithms.{name}.from_theory]).",
        "",
        "## Cost per round",
        "",
        measure_cost(cls),
        "",
        "## Reference",
        "",
        f"::: ocokit.algorithms.{name}",
        "    options:",
        "      heading_level: 3",
        "      inherited_members: [from_theory]",  # a from_theory written once on a family's abstract class
        "",
    ]
    return "\n".join(lines)


def algorithms_index(classes: list[type]) -> str:
    lines = [
        "# Algorithms",
        "",
        "Every learner exported by `ocokit.algorithms` has a page generated from one template: its setting",
        "and feedback kind, the paper it follows, its theory constructor and its full reference (update",
        "rule, sources, guarantees, parameters and the readings chosen where the paper is ambiguous).",
        "",
        r"All of them play the constrained online game: choose \(x_t \in \mathcal{X}\), then suffer "
        r"\(f_t(x_t)\) and the violation \([g_t(x_t)]_+\).",
        "",
        "| learner | feedback | summary |",
        "|---|---|---|",
    ]
    for cls in classes:
        mark = " (**reconstructed**)" if getattr(cls, "reconstructed", False) else ""
        lines.append(
            f"| [{cls.__name__}]({cls.__name__}.md){mark} | `{_kind(cls)}` | "
            f"{_table_cell(rst_to_markdown(_summary(cls)))} |"
        )
    return "\n".join(lines) + "\n"


def _option_cell(option) -> str:
    try:
        accepts = option.describe()
    except (KeyError, TypeError, AttributeError):
        accepts = getattr(option.kind, "__name__", str(option.kind))
    return _table_cell(accepts)


def figure_record(name: str) -> dict | None:
    path = FIGURES / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _subject_module(experiment, modules):
    """The module that declares ``experiment`` (holds it as a module-level name)."""
    for name, module in sorted(modules.items()):
        if name.startswith("ocokit.experiments.") and any(v is experiment for v in vars(module).values()):
            return module
    return None


def _setup_modules(module, modules) -> list:
    """The experiment modules of shared setup (declaring no experiment) whose names ``module`` imports."""
    from ocokit.harness import Experiment

    names = sorted({getattr(v, "__module__", None) or "" for v in vars(module).values()} - {module.__name__})
    return [modules[n] for n in names if n.startswith("ocokit.experiments.") and n in modules
            and not any(isinstance(v, Experiment) for v in vars(modules[n]).values())]  # fmt: skip


def experiment_page(experiment, classes: list[type]) -> str:
    import sys

    name = experiment.name
    from ocokit.papers import PAPERS, cite

    paper = PAPERS.get(experiment.paper.split()[0]) if experiment.paper.split() else None
    module = _subject_module(experiment, sys.modules)
    lines = [f"# {name}", "", f"**{experiment.title}**", ""]
    lines += [
        "| | |",
        "|---|---|",
        f"| paper | {_table_cell(cite(experiment.paper))}"
        + (f": {_table_cell(paper.reference())}" if paper is not None else "")
        + " |",
        f"| defaults | T = {experiment.default_T}, {experiment.default_seeds} seeds |",
        f"| data | {'needs `--data PATH` or `OCOKIT_DATA`' if experiment.needs_data else 'none (synthetic)'} |",
        "",
        "## Command",
        "",
        "```bash",
        f"ocokit run {name}" + (" --data PATH" if experiment.needs_data else ""),
        "```",
        "",
        "writes one Parquet file per run, `summary.json` and the figure under `results/" + name + "/`, and",
        "prints the claims below with what was measured (`ocokit list` shows the options).",
        "",
    ]
    if module is not None and module.__doc__:
        lines += ["## Setup and readings", "", rst_to_markdown(inspect.cleandoc(module.__doc__)), ""]
        for shared in _setup_modules(module, sys.modules):
            lines += [rst_to_markdown(inspect.cleandoc(shared.__doc__ or "")), ""]
    lines += ["## Algorithms", "", "| label | learner | note |", "|---|---|---|"]
    for algorithm in experiment.algorithms:
        cls = learner_of(algorithm, classes)
        link = f"[{cls.__name__}](../algorithms/{cls.__name__}.md)" if cls is not None else ""
        lines.append(f"| {_table_cell(algorithm.label)} | {link} | {_table_cell(algorithm.note)} |")
    lines += ["", "## Options", ""]
    if experiment.options:
        lines += ["| option | accepts | default | what it does |", "|---|---|---|---|"]
        for option in experiment.options:
            lines.append(
                f"| `{option.name}` | {_option_cell(option)} | `{_table_cell(repr(option.default))}` | "
                f"{_table_cell(rst_to_markdown(option.help))} |"
            )
    else:
        lines.append("(none)")
    record = figure_record(name)
    lines += ["", "## Figure", ""]
    measured = {}
    if record is not None and (FIGURES / f"{name}.png").exists():
        opts = " ".join(f"--option {k}={v}" for k, v in record.get("options", {}).items())
        size = f"T = {record['T']}, {record['seeds']} seeds" + (f", options {opts}" if opts else "")
        lines += [
            f"![{name}: {experiment.title}](../figures/{name}.png)",
            "",
            f"Drawn by a real run at a small size ({size}), not the paper's: "
            f"`ocokit run {name} --T {record['T']} --seeds {record['seeds']}"
            + (f" {opts}" if opts else "")
            + (" --data PATH" if experiment.needs_data else "")
            + "`. The full-size numbers are in the README's reproduction table.",
            "",
        ]
        measured = {c["statement"]: c for c in record.get("claims", [])}
    else:
        lines += ["No figure committed yet (`python docs/_hooks/make_figures.py " + name + "` draws one).", ""]
    lines += ["## Claims", ""]
    if experiment.claims:
        header = "measured at the figure's size" if measured else "measured"
        lines += [f"| claim | {header} | holds |", "|---|---|---|"]
        for claim in experiment.claims:
            got = measured.get(claim.statement)
            value = _table_cell(got["measured"]) if got else "not run at the figure's size"
            holds = ("yes" if got["holds"] else "no") if got else ""
            lines.append(f"| {_table_cell(claim.statement)} | {value} | {holds} |")
        lines += [
            "",
            "A claim checked at this small size may not hold where it holds at the paper's size (and the other "
            "way round); `ocokit run " + name + "` checks it at the default size.",
        ]
    else:
        lines.append("(none declared)")
    notes = ROOT / "docs" / "notes" / f"{name}.md"  # what we found where a claim does not hold
    if notes.is_file():
        lines += ["", "## Where a claim does not hold", "", notes.read_text(encoding="utf-8").strip()]
    return "\n".join(lines) + "\n"


def experiments_index(registered: list) -> str:
    from ocokit.papers import cite

    lines = [
        "# Experiments",
        "",
        "Every experiment registered in `ocokit.experiments` has a page generated from the registry: the",
        "paper's setup and ocokit's readings, the command, a figure from a real small-size run, the options",
        "and the claims with what was measured.",
        "",
        "| experiment | paper | title |",
        "|---|---|---|",
    ]
    for e in registered:
        lines.append(f"| [{e.name}]({e.name}.md) | {_table_cell(cite(e.paper))} | {_table_cell(e.title)} |")
    return "\n".join(lines) + "\n"


def reproductions_page() -> str:
    """The Reproductions page: the README's reproduction table (one source), with the docs' own title."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Reproductions") :].split("\n## ", 1)[0]
    body = section.split("\n", 1)[1].replace("](docs/", "](")
    return "# Reproductions\n" + body + "\nWhere a claim does not hold, the experiment's page says what we found.\n"


def citing_page() -> str:
    """The Citing page: ocokit's own entry, then every paper's BibTeX, from ``ocokit.papers`` (one source)."""
    from ocokit import __version__
    from ocokit.papers import BASELINES, PAPERS

    lines = [
        "# Citing",
        "",
        "If you use ocokit, please cite it together with the papers of the methods you use. `CITATION.cff` at the",
        "root of the repository holds ocokit's metadata; the entries below come from "
        "[`ocokit.papers`][ocokit.papers], which the command line and the figures also use to name the papers.",
        "",
        "## ocokit",
        "",
        "```bibtex",
        "@software{ocokit,",
        "  title = {ocokit: online convex optimization under constraints, in {JAX}},",
        "  author = {{ocokit developers}},",
        f"  version = {{{__version__}}},",
        "  year = {2026},",
        "  url = {URL-TO-BE-FILLED-BY-THE-MAINTAINERS}",
        "}",
        "```",
        "",
        "## The reproduced papers",
        "",
    ]
    for paper in PAPERS.values():
        lines += [f"### {paper.short}", "", paper.title + ".", "", "```bibtex", paper.bibtex(), "```", ""]
    lines += ["## The baselines' papers", ""]
    seen = set()
    for learner, paper in BASELINES.items():
        if paper.title in seen:
            continue
        seen.add(paper.title)
        lines += [f"### {paper.short} ({learner})", "", paper.title + ".", "", "```bibtex", paper.bibtex(), "```", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- API pages


def api_modules() -> list[str]:
    """``ocokit``, each subpackage named in ``ocokit.__all__``, ``ocokit.experiments`` and ``ocokit.bench``."""
    import ocokit

    subpackages = [f"ocokit.{n}" for n in ocokit.__all__ if inspect.ismodule(getattr(ocokit, n))]
    return ["ocokit", *subpackages, "ocokit.experiments", "ocokit.bench"]


def public_names(module_name: str) -> list[str]:
    """A module's public names: its ``__all__`` less submodules, else what it defines without a leading ``_``."""
    import importlib

    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return [n for n in module.__all__ if not inspect.ismodule(getattr(module, n))]
    return [
        n
        for n, obj in vars(module).items()
        if not n.startswith("_") and not inspect.ismodule(obj) and getattr(obj, "__module__", None) == module_name
    ]


def api_path(module_name: str) -> str:
    return "api/index.md" if module_name == "ocokit" else f"api/{module_name.removeprefix('ocokit.')}.md"


def api_page(module_name: str, classes: list[type]) -> str:
    learner_names = {c.__name__ for c in classes} if module_name == "ocokit.algorithms" else set()
    names = public_names(module_name)
    lines = [f"# {module_name}", "", f"::: {module_name}", "    options:", "      members: false",
             "      show_root_heading: false", ""]  # fmt: skip
    if module_name == "ocokit":
        lines += ["Subpackages: " + ", ".join(f"[`{m}`](../{api_path(m)})" for m in api_modules()[1:]) + ".", ""]
    if learner_names:
        lines += ["## Learners", "", "Each learner's reference is on its own page:", ""]
        lines += [f"- [`{n}`](../algorithms/{n}.md)" for n in names if n in learner_names]
        lines += [""]
    for n in names:
        if n not in learner_names:
            lines += [f"::: {module_name}.{n}", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- hooks


def _expand_nav(nav: list, title: str, pages: list[tuple[str, str]], index_title: str | None = None) -> None:
    for i, entry in enumerate(nav):
        if isinstance(entry, dict) and title in entry and isinstance(entry[title], str):
            index = {index_title: entry[title]} if index_title else entry[title]
            nav[i] = {title: [index, *({label: path} for label, path in pages)]}


def _drop_missing(nav: list, docs_dir: Path) -> list:
    kept = []
    for entry in nav:
        if isinstance(entry, dict):
            ((title, value),) = entry.items()
            if isinstance(value, list):
                kept.append({title: _drop_missing(value, docs_dir)})
                continue
            if (
                isinstance(value, str)
                and value.endswith(".md")
                and not _generated(value)
                and not (docs_dir / value).exists()
            ):
                log.info("nav: %s not written yet; left out", value)
                continue
        kept.append(entry)
    return kept


def _generated(path: str) -> bool:
    generated = ("citing.md", "reproductions.md", leaderboard_page.PAGE)
    return path.startswith(("algorithms/", "experiments/", "api/")) or path in generated


_STATE: dict = {}


def on_config(config):
    classes, registered = learners(), experiments()
    _STATE.update(classes=classes, experiments=registered)
    nav = config["nav"]
    _expand_nav(nav, "Algorithms", [(c.__name__, f"algorithms/{c.__name__}.md") for c in classes])
    _expand_nav(nav, "Experiments", [(e.name, f"experiments/{e.name}.md") for e in registered])
    _expand_nav(nav, "API reference", [(m, api_path(m)) for m in api_modules()[1:]], index_title="ocokit")
    config["nav"] = _drop_missing(nav, Path(config["docs_dir"]))
    return config


def on_files(files: Files, config) -> Files:
    classes, registered = _STATE["classes"], _STATE["experiments"]
    used: dict[str, list[str]] = {c.__name__: [] for c in classes}
    for e in registered:
        for algorithm in e.algorithms:
            cls = learner_of(algorithm, classes)
            if cls is not None and e.name not in used[cls.__name__]:
                used[cls.__name__].append(e.name)
    pages = {"algorithms/index.md": algorithms_index(classes), "experiments/index.md": experiments_index(registered)}
    board = leaderboard_page.load()
    rows = {c.__name__: leaderboard_page.learner_cell(board, c.__name__) for c in classes}
    pages |= {f"algorithms/{c.__name__}.md": algorithm_page(c, used[c.__name__], rows[c.__name__]) for c in classes}
    pages |= {f"experiments/{e.name}.md": experiment_page(e, classes) for e in registered}
    pages |= {api_path(m): api_page(m, classes) for m in api_modules()}
    pages["citing.md"] = citing_page()
    pages["reproductions.md"] = reproductions_page()
    if board is not None:  # the page, its scatters and the bench's HTML page
        pages[leaderboard_page.PAGE] = leaderboard_page.page(board, {c.__name__ for c in classes})
        pages |= leaderboard_page.files(board)
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    import mathjax

    script = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-svg.js"
    files.append(File.generated(config, "javascripts/mathjax/tex-svg.js", abs_src_path=str(script)))
    return files

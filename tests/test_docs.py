"""The documentation site: a real ``mkdocs build --strict``, its pages, and a look at it in headless Chromium.

The site is built once per session into a temporary folder. Every registered learner and experiment must have
its page, every public name its anchor in the API reference, and the built pages must render (css and js
served, navigation, math typeset by MathJax, figures loaded) in a real browser: Debian's ``chromium`` driven by
playwright (never playwright's own browser download). The browser part is skipped only if
``/usr/bin/chromium`` is missing.
"""

from __future__ import annotations

import functools
import http.server
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .helpers import CHROMIUM, CHROMIUM_ARGS, watch_page

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
BOARD = ROOT / "docs" / "leaderboard" / "leaderboard.json"

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    return out


def _learners() -> list[str]:
    import ocokit.algorithms as algorithms

    return [
        n
        for n in algorithms.__all__
        if inspect.isclass(getattr(algorithms, n))
        and issubclass(getattr(algorithms, n), algorithms.AbstractLearner)
        and not inspect.isabstract(getattr(algorithms, n))
    ]


def _public_api() -> dict[str, list[str]]:
    """Per public module: ``ocokit``, each subpackage of ``ocokit.__all__``, ``ocokit.experiments`` and
    ``ocokit.bench``."""
    import ocokit

    modules = ["ocokit", *(f"ocokit.{n}" for n in ocokit.__all__ if inspect.ismodule(getattr(ocokit, n)))]
    modules += ["ocokit.experiments", "ocokit.bench"]
    names = {}
    for name in modules:
        module = importlib.import_module(name)
        if hasattr(module, "__all__"):
            names[name] = [n for n in module.__all__ if not inspect.ismodule(getattr(module, n))]
        else:
            names[name] = [
                n
                for n, obj in vars(module).items()
                if not n.startswith("_") and not inspect.ismodule(obj) and getattr(obj, "__module__", None) == name
            ]
    return names


def _anchors(site: Path) -> set[str]:
    found = set()
    for page in site.rglob("*.html"):
        found |= set(re.findall(r'id="(ocokit[^"]*)"', page.read_text()))
    return found


def test_entry_pages_exist(site):
    for page in ["index.html", "architecture/index.html", "contributing/index.html", "api/index.html"]:
        assert (site / page).is_file(), page
    assert (site / "javascripts" / "mathjax" / "tex-svg.js").stat().st_size > 100_000  # served, not fetched


def test_every_learner_has_a_page(site):
    learners = _learners()
    assert len(learners) >= 20
    for name in learners:
        html = (site / "algorithms" / name / "index.html").read_text()
        assert f'id="ocokit.algorithms.{name}"' in html, name  # its reference is rendered there
        assert "from_theory" in html and "feedback" in html, name


def _paper_experiments() -> list[str]:
    """The library's registered experiments (other test modules register small ones of their own, paper "tests")."""
    import ocokit.experiments as registry

    return [name for name in registry.names() if registry.get(name).paper != "tests"]


def test_every_experiment_has_a_page_with_its_claims(site):
    import ocokit.experiments as registry

    assert len(_paper_experiments()) >= 10
    for name in _paper_experiments():
        html = (site / "experiments" / name / "index.html").read_text()
        assert f"ocokit run {name}" in html, name
        for claim in registry.get(name).claims:
            assert claim.statement.split()[0] in html, (name, claim.statement)


def test_every_public_name_is_in_the_api_reference(site):
    anchors = _anchors(site)
    missing = [f"{m}.{n}" for m, names in _public_api().items() for n in names if f"{m}.{n}" not in anchors]
    assert not missing, f"not in the API reference: {missing}"


RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|data|attr|obj|exc|ref):(?=\s*(?:`|<code|~|&#96;))")
"""A Sphinx role left in a docstring: mkdocstrings renders it as text (``:class:<code>~ocokit...</code>``)."""


def test_raw_role_is_caught():
    assert RAW_ROLE.search("see (:class:<code>~ocokit.algorithms.COLDQ</code>: the")
    assert RAW_ROLE.search("see :func:`run` here")
    assert not RAW_ROLE.search('<a href="#ocokit.run"><code>run</code></a> and a dict {"a": 1}')


def test_no_raw_sphinx_role_in_the_site(site):
    """Docstrings cross-reference in Markdown (autorefs ``[`Name`][ocokit.pkg.Name]``), never with Sphinx roles."""
    found = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for match in RAW_ROLE.finditer(text):
            snippet = re.sub(r"<[^>]+>", "", text[match.start() : match.start() + 120]).split("\n")[0]
            found.append(f"{page.relative_to(site)}: {snippet}")
    assert not found, f"{len(found)} raw roles (convert them: docstrings use autorefs links):\n" + "\n".join(found)


PRIVATE_NAME = re.compile(r'<(?:span|a)\b[^>]*\btitle="[A-Za-z_][\w.]*"[^>]*>\s*(?:<code>)?\s*(_[A-Za-z]\w*)')
"""A Python name rendered by mkdocstrings (it carries the object's path in ``title``) that starts with ``_``: a
private class shown as a base or an annotation, a private constant shown as a default, a link to a private name."""


def test_private_name_is_caught():
    base = '<p class="doc doc-class-bases">Bases: <code><span title="ocokit.sets._balls._AbstractNormBall">'
    assert PRIVATE_NAME.search(base + "_AbstractNormBall</span></code></p>")
    default = '<span class="o">=</span><span class="n"><span title="ocokit.problems._qp._POSITIVE_WINDOWS">'
    assert PRIVATE_NAME.search(default + "_POSITIVE_WINDOWS</span></span>")
    assert not PRIVATE_NAME.search('<span title="ocokit.sets.AbstractSet">AbstractSet</span>, <code>_slope_</code>')
    assert not PRIVATE_NAME.search('<a href="#x" class="headerlink" title="Permanent link">&para;</a>')


def test_no_private_name_in_the_site(site):
    """Bases, defaults and annotations name public objects only (``docs/_hooks/griffe_public.py`` rewrites them)."""
    found = []
    for page in sorted(site.rglob("*.html")):
        for match in PRIVATE_NAME.finditer(page.read_text(encoding="utf-8")):
            found.append(f"{page.relative_to(site)}: {match.group(1)}")
    assert not found, f"{len(found)} private names shown:\n" + "\n".join(found)


def test_committed_figures_are_small_and_belong_to_registered_experiments():

    figures = sorted((ROOT / "docs" / "figures").glob("*.png"))
    assert figures
    for png in figures:
        assert png.stat().st_size < 150_000, png.name
        assert png.stem in _paper_experiments(), png.name
        record = json.loads(png.with_suffix(".json").read_text())
        assert record["T"] >= 1 and record["seeds"] >= 1


def _board() -> dict:
    return json.loads(BOARD.read_text(encoding="utf-8"))


def test_committed_leaderboard_is_small_and_holds_every_library_learner():
    """The Leaderboard page's board, as ``ocokit bench`` writes it (``python docs/_hooks/make_leaderboard.py``): a
    few tens of KB, suite problems only, every library learner on it with its numbers (a learner added or removed:
    play it again)."""
    from ocokit import bench

    assert BOARD.stat().st_size < 60_000
    board = _board()
    assert board["T"] >= 1 and board["seeds"] >= 2
    assert {p["name"] for p in board["problems"]} <= {p.name for p in bench.SUITE}
    on_board = {r["learner"] for r in board["ranks"]}
    assert on_board == set(_learners()), "play the board again: python docs/_hooks/make_leaderboard.py"
    for p in board["problems"]:
        assert any(row["on_front"] for row in p["learners"].values()), p["name"]
        for name, row in p["learners"].items():
            assert not row["error"] and row["seeds"] == board["seeds"] and "hard_violation" in row, (p["name"], name)


def _ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))


def test_the_leaderboard_page_has_its_tables_and_scatters(site):
    board = _board()
    problems = [p["name"] for p in board["problems"]]
    html = (site / "leaderboard" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)
    command = f"ocokit bench --problems {','.join(problems)} --T {board['T']} --seeds {board['seeds']}"
    assert command in text  # the page says what produced it
    assert len(re.findall(r"<table\b", html)) == len(problems) + 2  # the ranks, each problem, the pairs not played
    for header in ["learner", "front", "regret", "CCV", "squared violation", "s / round", "seeds", "on front"]:
        assert f">{header}</th>" in html, header
    ids = _ids(html)
    for p in board["problems"]:
        assert p["name"] in ids  # the problem's heading
        for name, row in p["learners"].items():
            assert f"row-{p['name']}-{name.lower()}" in ids, (p["name"], name)
            ccv = row["hard_violation"]
            assert f"{ccv['mean']:.4g} ± {ccv['std']:.2g}" in text, (p["name"], name)  # mean ± sample std
        png = (site / "leaderboard" / f"{p['name']}.png").read_bytes()  # the scatter, drawn at build time
        assert png.startswith(b"\x89PNG") and len(png) > 5_000, p["name"]
        assert f'src="{p["name"]}.png"' in html, p["name"]
    assert {f"rank-{r['learner'].lower()}" for r in board["ranks"]} <= ids
    page = (site / "leaderboard" / "leaderboard.html").read_text(encoding="utf-8")  # the bench's own page
    assert page.count("data:image/png;base64,") == len(problems)
    assert json.loads((site / "leaderboard" / "leaderboard.json").read_text()) == board


def test_every_algorithm_page_links_its_leaderboard_rows(site):
    board = _board()
    ids = _ids((site / "leaderboard" / "index.html").read_text(encoding="utf-8"))
    for name in _learners():
        html = (site / "algorithms" / name / "index.html").read_text(encoding="utf-8")
        links = set(re.findall(r'href="\.\./\.\./leaderboard/#([^"]+)"', html))
        rows = {f"row-{p['name']}-{name.lower()}" for p in board["problems"] if name in p["learners"]}
        assert rows and links == rows | {f"rank-{name.lower()}"}, name
        assert links <= ids, (name, links - ids)


def test_tutorials_are_in_the_site(site):
    pages = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
    assert len(pages) >= 5
    for page in pages:
        assert (site / "tutorials" / page.stem / "index.html").is_file(), page.name


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install -y chromium)")
def test_pages_render_in_headless_chromium(server, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (docs extra)")
    failures: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            watch_page(page, failures, console=False)
            for path, shot, math in [
                ("/", "entry.png", True),
                ("/algorithms/COLDQ/", "algorithm.png", True),
                ("/experiments/time-varying-regression/", "experiment.png", False),
            ]:
                page.goto(server + path, wait_until="networkidle")
                # Material's stylesheet applied and the navigation drawn.
                assert page.locator("nav.md-nav--primary").count() >= 1, path
                header = page.evaluate("getComputedStyle(document.querySelector('.md-header')).position")
                assert header in ("sticky", "fixed"), (path, header)
                if math:  # MathJax (served by the site) typeset the page's math as SVG, with no TeX error
                    page.wait_for_selector(".arithmatex mjx-container svg", timeout=20_000)
                    assert page.locator("mjx-merror").count() == 0, path
                else:  # the experiment's committed figure loaded (a real image, not a broken link)
                    width = page.evaluate("document.querySelector('img[src*=\"figures/\"]').naturalWidth")
                    assert width > 100, path
                    page.locator("img[src*='figures/']").scroll_into_view_if_needed()
                assert page.locator("pre code").count() >= 1, path  # code blocks rendered
                page.screenshot(path=str(tmp_path / shot), full_page=False)
        finally:
            browser.close()
    assert not failures, failures
    for shot in ["entry.png", "algorithm.png", "experiment.png"]:
        assert (tmp_path / shot).stat().st_size > 10_000, shot


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install -y chromium)")
def test_the_leaderboard_page_renders_in_headless_chromium(server, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (docs extra)")
    board = _board()
    first = board["problems"][0]
    row = f"row-{first['name']}-{next(iter(first['learners'])).lower()}"
    failures: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            watch_page(page, failures)
            page.goto(f"{server}/leaderboard/#{row}", wait_until="networkidle")
            assert page.locator("nav.md-nav--primary").count() >= 1
            widths = page.evaluate("Array.from(document.querySelectorAll('article img')).map(i => i.naturalWidth)")
            assert len(widths) == len(board["problems"]) and min(widths) > 100, widths  # every scatter loaded
            assert page.locator(f"article #{row}").count() == 1  # an algorithm page's link lands on its row
            page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=False)
        finally:
            browser.close()
    assert not failures, failures
    assert (tmp_path / "leaderboard.png").stat().st_size > 10_000

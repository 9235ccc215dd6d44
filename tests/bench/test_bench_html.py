"""The bench's HTML leaderboard in a real browser (integration tier): a tiny board's page opens in Debian's Chromium,
driven by playwright as ``tests/test_docs.py`` drives it, with every problem's scatter drawn and no console error.
Skipped only if ``/usr/bin/chromium`` is missing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ocokit import cli

from ..helpers import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.integration

# Each problem's section: its table, and its scatter's natural and drawn sizes (null when there is no image).
_SECTION = """(name) => {
  const section = document.getElementById(name);
  const img = section && section.querySelector("img");
  if (!img || !img.complete) return null;
  return {rows: section.querySelectorAll("tr").length, width: img.naturalWidth, height: img.naturalHeight,
          shown: img.getBoundingClientRect().width};
}"""


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install -y chromium)")
def test_the_html_board_opens_in_headless_chromium_with_its_scatters(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (docs extra)")
    out = tmp_path / "board"
    args = ["bench", "--problems", "regression,experts", "--learners", "OGD,Hedge,COLDQ", "--T", "15", "--seeds", "2",
            "--out", str(out)]  # fmt: skip
    done = CliRunner().invoke(cli.app, args)
    assert done.exit_code == 0, done.output
    summary = json.loads((out / "leaderboard.json").read_text())
    problems = {p["name"]: len(p["learners"]) for p in summary["problems"]}
    assert problems == {"regression": 2, "experts": 2}  # OGD and COLDQ; OGD and Hedge
    failures: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: failures.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda err: failures.append(f"page error: {err}"))
            page.on("requestfailed", lambda r: failures.append(f"failed {r.url}"))
            page.goto((out / "leaderboard.html").as_uri(), wait_until="load")
            for name, learners in problems.items():
                section = page.evaluate(_SECTION, name)
                assert section is not None, name  # the section and its scatter
                assert section["rows"] == learners + 1, (name, section)  # header and one row per learner
                assert min(section["width"], section["height"], section["shown"]) > 100, (name, section)
            assert "rank summary" in page.inner_text("body")
            page.screenshot(path=str(tmp_path / "board.png"), full_page=True)
        finally:
            browser.close()
    assert not failures, failures
    assert (tmp_path / "board.png").stat().st_size > 10_000

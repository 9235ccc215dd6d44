"""Every tutorial under docs/tutorials runs: its ```python blocks, in order, as one script per page.

Blocks fenced as ```python are executed; blocks fenced otherwise (```bash, ```py for shown-only code) are not.
Each tutorial runs in its own namespace with the working directory in a temporary folder.
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
PAGES = sorted(TUTORIALS.glob("*.md"))
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown page, in order."""
    return [m.group(1) for m in FENCE.finditer(text)]


def test_block_collector_reads_only_python_fences():
    text = "a\n```python\nx = 1\n```\n```py\nnot run\n```\n```bash\nls\n```\n```python\ny = x + 1\n```\n"
    assert python_blocks(text) == ["x = 1\n", "y = x + 1\n"]


def test_there_are_tutorials():
    assert len(PAGES) >= 5, [p.name for p in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_runs(page, tmp_path, monkeypatch):
    blocks = python_blocks(page.read_text())
    assert blocks, f"{page.name} has no ```python block"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"tutorial_{page.stem.replace('-', '_')}"}
    out = io.StringIO()
    for i, code in enumerate(blocks, 1):
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{page.name}, block {i}", "exec"), namespace)
    assert out.getvalue().strip(), f"{page.name} prints nothing"

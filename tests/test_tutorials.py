"""Every tutorial under docs/tutorials runs: its ```python blocks, in order, as one script per page.

Blocks fenced as ```python are executed; blocks fenced otherwise (```bash, ```py for shown-only code) are not.
Each tutorial runs as a reader runs it: in a fresh Python process (JAX's defaults, not the suite's settings), one
namespace for all its blocks, the working directory a temporary folder. A fresh process also keeps the pages away
from the many programs a test worker has compiled before them: twice on CI an in-process run of these pages
segfaulted inside XLA's compiler late in the suite, and a crashed worker stalls pytest-xdist's file scheduling.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

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


# Runs the blocks (a JSON list on stdin) in order in one namespace, each compiled under "PAGE, block N" so that a
# traceback names the block.
_RUNNER = """
import json, sys
page, blocks = json.load(sys.stdin)
namespace = {"__name__": "tutorial"}
for i, code in enumerate(blocks, 1):
    exec(compile(code, f"{page}, block {i}", "exec"), namespace)
"""


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_runs(page, tmp_path):
    blocks = python_blocks(page.read_text())
    assert blocks, f"{page.name} has no ```python block"
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps([page.name, blocks]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=240,
    )
    assert done.returncode == 0, f"{page.name} failed:\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{page.name} prints nothing"

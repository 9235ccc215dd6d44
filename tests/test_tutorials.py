"""Every tutorial under docs/tutorials runs: its ```python blocks, in order, as one script per page.

Blocks fenced as ```python are executed; blocks fenced otherwise (```bash, ```py for shown-only code) are not. Two
fences stand for what a reader does outside Python, in page order with the executed blocks: a ```python block titled
with a file name (```python title="mine.py") is that file of the reader's own, written into the working folder and
not executed; each ``$ ocokit ...`` line of a ```console block is a command, run (as ``python -m ocokit.cli``) in the
working folder, and it must succeed.
Each tutorial runs as a reader runs it: in a fresh Python process (JAX's defaults, not the suite's settings), one
namespace for all its blocks, the working directory a temporary folder. A fresh process also keeps the pages away
from the many programs a test worker has compiled before them: twice on CI an in-process run of these pages
segfaulted inside XLA's compiler late in the suite, and a crashed worker stalls pytest-xdist's file scheduling.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

TUTORIALS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
PAGES = sorted(TUTORIALS.glob("*.md"))
FENCE = re.compile(r"^```(python|console)(?![\w-])([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
TITLE = re.compile(r"""\btitle=["']([\w.-]+\.py)["']""")


def steps(text: str) -> list[list[str]]:
    """What a page asks to do, in order: ``["exec", code]``, ``["write", file name, code]``, ``["run", *argv]``."""
    found = []
    for language, attributes, body in FENCE.findall(text):
        if language == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    argv = shlex.split(line[2:])
                    if argv[0] != "ocokit":
                        raise ValueError(f"a ```console block runs ocokit commands only, got {line!r}")
                    found.append(["run", *argv[1:]])
        elif title := TITLE.search(attributes):
            found.append(["write", title.group(1), body])
        else:
            found.append(["exec", body])
    return found


def python_blocks(text: str) -> list[str]:
    """The executed ```python blocks of a Markdown page, in order."""
    return [step[1] for step in steps(text) if step[0] == "exec"]


def test_block_collector_reads_only_python_fences():
    text = "a\n```python\nx = 1\n```\n```py\nnot run\n```\n```bash\nls\n```\n```python\ny = x + 1\n```\n"
    assert python_blocks(text) == ["x = 1\n", "y = x + 1\n"]


def test_a_titled_block_is_a_file_and_a_console_line_a_command():
    text = (
        '```python title="mine.py"\ndef f():\n    pass\n```\n```pythonic\nno\n```\n'
        "```console\n$ ocokit bench --T 5 --out 'a b'\nsome output\n```\n```python\nimport mine\n```\n"
    )
    assert steps(text) == [
        ["write", "mine.py", "def f():\n    pass\n"],
        ["run", "bench", "--T", "5", "--out", "a b"],
        ["exec", "import mine\n"],
    ]
    with pytest.raises(ValueError, match="ocokit commands only"):
        steps("```console\n$ rm -rf results\n```\n")


def test_there_are_tutorials():
    assert len(PAGES) >= 5, [p.name for p in PAGES]


# Does the steps (a JSON list on stdin) in order, one namespace for the executed blocks, each compiled under
# "PAGE, block N" so that a traceback names the block; a failed command raises with the end of its output.
_RUNNER = """
import json, subprocess, sys
page, steps = json.load(sys.stdin)
namespace = {"__name__": "tutorial"}
for i, (kind, *rest) in enumerate(steps, 1):
    if kind == "exec":
        exec(compile(rest[0], f"{page}, block {i}", "exec"), namespace)
    elif kind == "write":
        open(rest[0], "w", encoding="utf-8").write(rest[1])
    else:
        done = subprocess.run([sys.executable, "-m", "ocokit.cli", *rest], capture_output=True, text=True)
        print(done.stdout)
        if done.returncode != 0:
            raise RuntimeError(f"{page}, block {i}: ocokit {' '.join(rest)} failed:\\n{done.stderr[-3000:]}")
"""


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_runs(page, tmp_path):
    todo = steps(page.read_text())
    assert any(kind == "exec" for kind, *_ in todo), f"{page.name} has no ```python block"
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps([page.name, todo]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=240,
    )
    assert done.returncode == 0, f"{page.name} failed:\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{page.name} prints nothing"

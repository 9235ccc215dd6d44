"""The README's Python example runs as written and shows the constrained learner's lower CCV."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_yu_neely_wei_violates_less():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    ccv = {line.split()[0]: float(line.split()[-1]) for line in buf.getvalue().splitlines()}
    assert set(ccv) == {"OGD", "YuNeelyWei"}
    assert ccv["YuNeelyWei"] < 0.2 * ccv["OGD"]

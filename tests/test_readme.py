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


def _reproduction_commands() -> list[str]:
    """The commands of the README's reproduction table (its last column, ``same`` and ``both`` left out)."""
    text = README.read_text()
    table = text[text.index("| claim | paper | measured | holds | command |") :].split("\n\n")[0]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    return [c for row in rows for c in re.findall(r"`([^`]+)`", row.rsplit("|", 2)[-2])]


def test_every_reproduction_command_names_what_exists():
    from ocokit import experiments

    commands = _reproduction_commands()
    assert any(c.startswith("ocokit run") for c in commands)
    root = README.parent
    for command in commands:
        words = command.split()
        if words[:2] == ["ocokit", "run"]:
            experiment = experiments.get(words[2])  # a one-line error naming the valid names otherwise
            options = (
                dict(w.split("=", 1) for w in words[words.index("--option") + 1 :: 2]) if "--option" in words else {}
            )
            experiment.parse_options(options)
        elif words[0] == "pytest":
            assert (root / words[1]).is_file(), command
        elif words[0] == "python":
            assert (root / words[1]).is_file(), command
        else:
            raise AssertionError(f"unknown command in the reproduction table: {command}")


def test_readme_and_changelog_stay_short():
    assert len(README.read_bytes()) <= 20_000
    assert len((README.parent / "CHANGELOG.md").read_bytes()) <= 6_000

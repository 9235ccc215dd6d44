"""The README's Python example runs, its reproduction table names commands that exist, and the README and the
CHANGELOG stay short."""

import contextlib
import io
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TABLE_HEADER = "| claim | paper | measured | holds | command |"


def test_readme_example_runs_and_yu_neely_wei_violates_less():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    ccv = {line.split()[0]: float(line.split()[-1]) for line in buf.getvalue().splitlines()}
    assert set(ccv) == {"OGD", "YuNeelyWei"}
    assert ccv["YuNeelyWei"] < 0.2 * ccv["OGD"]


def _reproduction_rows() -> list[dict[str, object]]:
    """The rows of the README's reproduction table: each cell, and the row's commands (a row whose command cell
    is ``same`` takes the commands of the row above it)."""
    text = README.read_text()
    table = text[text.index(TABLE_HEADER) :].split("\n\n")[0].splitlines()
    assert table[1].startswith("|---"), "the reproduction table has no separator line"
    rows, previous = [], None
    for line in table[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 5, f"a reproduction row needs 5 cells (claim, paper, measured, holds, command): {line}"
        claim, paper, measured, holds, command_cell = cells
        assert claim and paper and measured and holds, f"an empty cell in the reproduction row: {line}"
        if command_cell == "same":
            assert previous is not None, f"'same' on the first reproduction row: {line}"
            commands = previous
        else:
            commands = re.findall(r"`([^`]+)`", command_cell)
            assert commands, f"the reproduction row names no command: {line}"
        rows.append({"claim": claim, "holds": holds, "commands": commands})
        previous = commands
    return rows


def _run_flags() -> set[str]:
    """The flags of ``ocokit run`` as the README's command-line synopsis lists them."""
    text = README.read_text()
    synopsis = re.search(r"^ocokit run NAME .*?(?=^ocokit plot)", text, re.S | re.M).group(0)
    return set(re.findall(r"--[a-z-]+", synopsis))


def test_every_reproduction_command_names_what_exists():
    from ocokit import experiments

    rows = _reproduction_rows()
    commands = {c for row in rows for c in row["commands"]}
    assert any(c.startswith("ocokit run ") for c in commands)
    registered, flags = set(experiments.names()), _run_flags()
    for command in sorted(commands):
        words = shlex.split(command)
        if words[:2] == ["ocokit", "run"]:
            name = words[2]
            assert name in registered, f"{command}: {name!r} is not a registered experiment ({sorted(registered)})"
            used = {w for w in words[3:] if w.startswith("--")}
            assert used <= flags, f"{command}: {sorted(used - flags)} not in the README's `ocokit run` synopsis"
            options = [words[i + 1] for i, w in enumerate(words) if w == "--option"]
            assert all("=" in o for o in options), f"{command}: --option takes key=value"
            experiments.get(name).parse_options(dict(o.split("=", 1) for o in options))  # raises on a bad one
        elif words[0] in ("pytest", "python"):
            assert (ROOT / words[1]).is_file(), f"{command}: {words[1]} does not exist"
        else:
            raise AssertionError(f"unknown command in the reproduction table: {command}")


def test_every_claim_that_does_not_hold_has_a_write_up_on_its_experiments_page():
    """A row whose verdict is not a plain "yes" links, through its ``ocokit run`` command, to the write-up the docs
    show on that experiment's page (``docs/notes/NAME.md``, included by ``docs/_hooks/pages.py``)."""
    from ocokit import experiments

    for row in _reproduction_rows():
        if row["holds"].startswith("yes"):
            continue
        names = [shlex.split(c)[2] for c in row["commands"] if c.startswith("ocokit run ")]
        assert names, f"a claim that does not hold with no experiment to explain it: {row['claim']}"
        for name in names:
            assert (ROOT / "docs" / "notes" / f"{name}.md").is_file(), f"{row['claim']}: docs/notes/{name}.md"
    for note in (ROOT / "docs" / "notes").glob("*.md"):
        assert note.stem in experiments.names(), f"{note} belongs to no registered experiment"


def test_readme_and_changelog_stay_short():
    assert len(README.read_bytes()) <= 20_000
    assert len((ROOT / "CHANGELOG.md").read_bytes()) <= 6_000


def test_changelog_has_each_kind_of_change_once():
    text = (ROOT / "CHANGELOG.md").read_text()
    unreleased = text[text.index("## [Unreleased]") :].split("\n## ")[0]
    headings = re.findall(r"^### (.+)$", unreleased, re.M)
    assert len(headings) == len(set(headings)), headings
    assert set(headings) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, headings

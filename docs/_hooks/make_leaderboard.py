"""Play the Leaderboard page's board: a small ``ocokit bench`` run, through the CLI, its JSON committed.

Usage: ``python docs/_hooks/make_leaderboard.py [STORE]`` from the repository root. It runs
``ocokit bench --problems PROBLEMS --T T --seeds SEEDS --out STORE`` (every library learner; STORE a temporary
folder unless given, where a second run resumes) and copies the ``leaderboard.json`` the bench writes, unchanged,
to ``docs/leaderboard/leaderboard.json``, which the docs hook renders as the Leaderboard page (tables, the rank
summary, a scatter per problem drawn at build time) and links from every algorithm page.

The three problems are the fewest on which every library learner plays (online QP for the learners of general
sets, the simplex budget for the simplex-only ones, memory with predictions for the learners of losses with
memory), so the file stays a few tens of KB (the whole suite at this size took 6 minutes on a 2-core machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BOARD = Path(__file__).resolve().parents[1] / "leaderboard" / "leaderboard.json"
PROBLEMS = ("online-qp", "simplex-budget", "memory-predictions")
T, SEEDS = 200, 3
MAX_BYTES = 60_000


def command(out: Path) -> list[str]:
    """The bench command the page names (``--out`` last)."""
    return ["ocokit", "bench", "--problems", ",".join(PROBLEMS), "--T", str(T), "--seeds", str(SEEDS),
            "--out", str(out)]  # fmt: skip


def play(store: Path) -> None:
    print(" ".join(command(store)), flush=True)
    subprocess.run([*command(store), "--plain"], check=True, env=os.environ.copy())
    BOARD.parent.mkdir(exist_ok=True)
    shutil.copyfile(store / "leaderboard.json", BOARD)
    size = BOARD.stat().st_size
    print(f"wrote {BOARD} ({size} bytes)")
    if size > MAX_BYTES:
        raise SystemExit(f"{BOARD.name} is {size} bytes, over {MAX_BYTES}: play fewer problems")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        play(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            play(Path(tmp))

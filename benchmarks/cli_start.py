"""CLI start-up benchmark: ``ocokit run time-varying-regression`` end to end, the working tree against a git ref.

Run by hand: ``python benchmarks/cli_start.py [--ref 50c9c5b] [--repeats 3]``. In this one script run, each
command a fresh process (``python -m ocokit.cli run time-varying-regression --out <new folder>``, the
experiment's default T and seeds) with ``PYTHONPATH`` set to the contender's ``src/`` (the ref checked out by
``git worktree add`` into a temporary folder, removed at the end; each contender's path is checked to win over
the editable install). Each contender runs twice per repeat: its *first* invocation with ``OCOKIT_CACHE_DIR`` a
new empty folder (a newcomer's first run: everything compiled), its *second* with the same folder (the programs
loaded from the persistent compilation cache). The contenders are interleaved (their order alternates between
repeats), ``--repeats`` times; the table gives each one's best and median wall time and the ratios new / old.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _git import ROOT, short, worktree_at

COMMAND = ["run", "time-varying-regression"]
INVOCATIONS = ("first", "second")


def environment(src: Path, cache: Path) -> dict[str, str]:
    """This process's environment with ``src`` first on the path and ``cache`` as the CLI's cache folder (no
    JAX compilation cache or path of its own)."""
    drop = ("JAX_COMPILATION_CACHE_DIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {"PYTHONPATH": str(src), "OCOKIT_CACHE_DIR": str(cache)}


def check_path(src: Path) -> None:
    """Exit unless ``import ocokit`` in a fresh process with ``PYTHONPATH=src`` imports ``src``'s copy."""
    code = "import ocokit; print(ocokit.__file__)"
    got = subprocess.run([sys.executable, "-c", code], env=environment(src, src), capture_output=True, text=True)
    if got.returncode != 0 or not Path(got.stdout.strip()).resolve().is_relative_to(src.resolve()):
        raise SystemExit(f"PYTHONPATH={src} does not win: ocokit imported from {got.stdout.strip() or got.stderr}")


def timed(src: Path, cache: Path, out: Path) -> float:
    """Wall seconds of ``ocokit run ...`` in a fresh process (it must succeed)."""
    tic = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ocokit.cli", *COMMAND, "--out", str(out)],
        env=environment(src, cache), capture_output=True, text=True,
    )  # fmt: skip
    seconds = time.perf_counter() - tic
    if done.returncode != 0:
        raise SystemExit(f"ocokit {' '.join(COMMAND)} ({src}) failed:\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="50c9c5b", help="the git ref to compare with (default: 50c9c5b)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the four commands")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be an integer >= 1, got {args.repeats}")
    ref = short(args.ref) or args.ref
    with worktree_at(args.ref) as tree, tempfile.TemporaryDirectory(prefix="ocokit-cli-start-") as tmp:
        srcs = {"old": tree / "src", "new": ROOT / "src"}
        for src in srcs.values():
            check_path(src)
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)  # bytecode, once
        walls: dict[tuple[str, str], list[float]] = {(n, i): [] for n in srcs for i in INVOCATIONS}
        for r in range(args.repeats):
            order = list(srcs) if r % 2 == 0 else list(srcs)[::-1]
            for name in order:
                (Path(tmp) / f"cache-{name}-{r}").mkdir()
            for which in INVOCATIONS:
                for name in order:
                    cache, out = Path(tmp) / f"cache-{name}-{r}", Path(tmp) / f"out-{name}-{r}-{which}"
                    walls[name, which].append(timed(srcs[name], cache, out))
    best = {k: min(v) for k, v in walls.items()}
    median = {k: statistics.median(v) for k, v in walls.items()}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    head = f"ocokit {' '.join(COMMAND)}, {args.repeats} repeats, load {load} on {os.cpu_count()} cores"
    print(head)
    print(f"{'invocation':<11} {'old ' + ref + ' best/median':>24} {'new best/median':>18} {'new/old best/median':>20}")
    for which in INVOCATIONS:
        old, new = (f"{best[n, which]:6.2f} / {median[n, which]:6.2f} s" for n in ("old", "new"))
        ratio = f"{best['new', which] / best['old', which]:.2f}x / {median['new', which] / median['old', which]:.2f}x"
        print(f"{which:<11} {old:>24} {new:>18} {ratio:>20}")


if __name__ == "__main__":
    main()

"""The library as it was at a commit (from this checkout's git), to time old against new: one module, or a tree."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> bytes | None:
    """``git ARGS`` run at the repository root (its stdout), or ``None`` when git or the commit is unavailable."""
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def module_at(commit: str, path: str, name: str) -> types.ModuleType | None:
    """The source file ``path`` (relative to the repository root) as of ``commit``, executed as module ``name``.

    ``None`` when git or the commit is unavailable (the benchmarks then skip the comparison).
    """
    source = _git("show", f"{commit}:{path}")
    if source is None:
        return None
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses (equinox modules) look their module up
    exec(compile(source.decode(), f"{commit}:{path}", "exec"), module.__dict__)
    return module


def short(ref: str) -> str | None:
    """``ref``'s abbreviated commit hash, or ``None`` when git or the ref is unavailable."""
    out = _git("rev-parse", "--short", "--verify", f"{ref}^{{commit}}")
    return None if out is None else out.decode().strip()


@contextlib.contextmanager
def worktree_at(ref: str) -> Iterator[Path]:
    """The whole tree as of ``ref``, checked out (detached) by ``git worktree add`` into a temporary folder,
    removed with its worktree entry on exit. ``SystemExit`` when git or the ref is unavailable."""
    with tempfile.TemporaryDirectory(prefix="ocokit-ref-") as tmp:
        tree = Path(tmp) / "tree"
        if _git("worktree", "add", "--detach", "--quiet", str(tree), ref) is None:
            raise SystemExit(f"git worktree add {ref} failed (is {ref!r} a commit of this checkout?)")
        try:
            yield tree
        finally:
            _git("worktree", "remove", "--force", str(tree))

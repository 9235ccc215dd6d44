"""The library as it was at a commit (from this checkout's git), to time old against new: one module, or a folder."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import types
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


def folder_at(commit: str, path: str, into: Path) -> Path | None:
    """The folder ``path`` (relative to the repository root) as of ``commit``, extracted under ``into``."""
    archive = _git("archive", commit, path)
    if archive is None:
        return None
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / path

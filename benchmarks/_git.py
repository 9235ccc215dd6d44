"""Load a module of the library as it was at a commit (from this checkout's git), to time old against new."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path


def module_at(commit: str, path: str, name: str) -> types.ModuleType | None:
    """The source file ``path`` (relative to the repository root) as of ``commit``, executed as module ``name``.

    ``None`` when git or the commit is unavailable (the benchmarks then skip the comparison).
    """
    root = Path(__file__).resolve().parents[1]
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses (equinox modules) look their module up
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module

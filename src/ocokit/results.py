"""Results on disk: one Parquet file of per-round records per run, keyed by a hash of its configuration.

Writes are atomic (a temporary file in the same folder, then ``os.replace``), so an interrupted run never
leaves a half-written file, and a re-run skips every run whose file exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def config_hash(config: Mapping[str, Any]) -> str:
    """A short, stable hash of a JSON-serialisable configuration."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_path(out: Path, experiment: str, algorithm: str, config: Mapping[str, Any]) -> Path:
    """Where the run with ``config`` is stored: ``out/runs/<algorithm>-<hash>.parquet``."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in algorithm)
    return Path(out) / "runs" / f"{safe}-{config_hash({'experiment': experiment, **config})}.parquet"


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    atomic_write_bytes(Path(path), (json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n").encode())


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def save_records(path: Path, columns: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> None:
    """Save per-round columns (equal length) with JSON metadata as one Parquet file, atomically."""
    path = Path(path)
    table = pa.table({k: np.asarray(v) for k, v in columns.items()})
    table = table.replace_schema_metadata({"ocokit": json.dumps(dict(metadata), default=_json_default)})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_records(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The columns and metadata of a file written by :func:`save_records`."""
    table = pq.read_table(path)
    meta = json.loads((table.schema.metadata or {}).get(b"ocokit", b"{}"))
    return {name: table.column(name).to_numpy() for name in table.column_names}, meta


def load_runs(out: Path) -> list[tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """Every run stored under ``out/runs`` (sorted by file name)."""
    return [load_records(p) for p in sorted((Path(out) / "runs").glob("*.parquet"))]

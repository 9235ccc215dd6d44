"""Results on disk: a tidy, hive-partitioned Parquet dataset of runs, each keyed by the content of its configuration
(`fingerprints`).

Layout: one file per run, ``OUT/runs/experiment=E/algorithm=A/seed=S/part-KEY.parquet`` (values URI-encoded as
pyarrow's hive partitioning writes them; ``seed=-1`` for a run that does not belong to one seed). Every file has
the same long ("tidy") schema, one row per round and quantity::

    key: string   T: int64   round: int64 (1-based)   quantity: string   value: float64

so pandas (``read_parquet``), polars (``scan_parquet``), duckdb (``read_parquet``) and `dataset` read a
whole runs folder at once, with ``experiment``, ``algorithm`` and ``seed`` as columns taken from the folders,
however many diagnostics each learner records. `load_records` turns a file back into its columns (with
their dtypes) and its metadata: a JSON description of the configuration and the provenance (library versions,
platform, device, the key, the creation time and the ocokit git commit when known).

``KEY`` is ``CONTENT-VERSIONS``: a hash of everything that determines the numbers
(`fingerprint`: array contents, static fields, the code of user functions, exact
numbers) and a hash of the ocokit, jax and equinox versions, so a changed dataset entry, a changed loss function,
a hyperparameter moved by 1e-9 or an upgrade each computes anew; ``reuse_across_versions=True`` accepts a stored
run of any version.

Writes are atomic (a temporary file ``.NAME.ocokit-HOST-PID-RANDOM.tmp`` in the same folder, then ``os.replace``)
and honour the umask. The temporaries a killed writer left in a run folder are removed the next time that folder
is written or the store is loaded; nothing else is ever removed (`remove_stale_temporaries`). Reads validate:
a file that is truncated, not Parquet or short of rows raises `CorruptRunError` naming it, and
the harness has `load_records` check that a run holds what its name promises (`MismatchedRunError`:
another run's file copied or moved there); either way it counts the run as missing and recomputes it.
"""

from __future__ import annotations

import errno
import json
import numbers
import os
import re
import secrets
import socket
import stat
import sys
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from ocokit.fingerprints import KEY_LENGTH, describe, fingerprint, library_versions, provenance

STALE_SECONDS = 600
"""An ocokit temporary file older than this is a dead writer's (a run's file is written in one go, in seconds)."""

PARTITION_SCHEMA = pa.schema([("experiment", pa.string()), ("algorithm", pa.string()), ("seed", pa.int64())])
"""The columns of the runs folder's hive partitioning, ``experiment=E/algorithm=A/seed=S``: written and read by
``pyarrow.dataset.partitioning(PARTITION_SCHEMA, flavor="hive")`` (values URI-encoded), as `run_path` and
`dataset` do."""

_HIVE = pads.partitioning(PARTITION_SCHEMA, flavor="hive")

_FORMAT = "tidy-1"


# ---------------------------------------------------------------------------------------------- run paths


def run_path(
    out: Path, experiment: str, algorithm: str, config: Mapping[str, Any], *, reuse_across_versions: bool = False
) -> Path:
    """Where the run of ``config`` is stored: ``out/runs/experiment=E/algorithm=A/seed=S/part-KEY.parquet``.

    ``S`` is ``config["seed"]`` when it is an integer, else -1. With ``reuse_across_versions=True`` a stored
    run of the same content made by any ocokit/jax/equinox version is returned when there is one (the newest).
    """
    for name, value in (("experiment", experiment), ("algorithm", algorithm)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    seed = config.get("seed")
    seed = int(seed) if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) else -1
    where = (pc.field("experiment") == experiment) & (pc.field("algorithm") == algorithm) & (pc.field("seed") == seed)
    folder = Path(out) / "runs" / _HIVE.format(where)[0]
    content = fingerprint({"experiment": experiment, "algorithm": algorithm, "config": config})[:KEY_LENGTH]
    path = folder / f"part-{content}-{fingerprint(library_versions())[:8]}.parquet"
    if reuse_across_versions and not path.exists():
        stored = sorted(folder.glob(f"part-{content}-*.parquet"), key=lambda p: p.stat().st_mtime)
        return stored[-1] if stored else path
    return path


# ----------------------------------------------------------------------------------------------- atomic writes


_TMP = re.compile(r"\.(?P<name>.+)\.ocokit-(?P<host>[A-Za-z0-9-]+)-(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp")
"""The name of every temporary file ocokit writes (`temporary_name`), and of nothing else it removes."""

_PARTITIONS = ("experiment=", "algorithm=", "seed=")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def temporary_name(name: str) -> str:
    """The name of a temporary file for ``name``, ``.NAME.ocokit-HOST-PID-RANDOM.tmp``: a pattern only ocokit writes,
    naming the host and the process that write it (so that a dead writer's can be told from a live one's)."""
    return f".{name}.ocokit-{_host()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Remove the temporary files dead writers left in the store of ``out``; returns the removed paths.

    Only files named as ocokit names its temporaries (`temporary_name`) are removed, only in the run folders
    ``out/runs/experiment=E/algorithm=A/seed=S`` (none reached through a symbolic link), and only those of a finished
    process of this host or older than `STALE_SECONDS` (another host's). Nothing else is touched.
    """
    folders = (Path(out) / "runs").glob("experiment=*/algorithm=*/seed=*")
    return [tmp for folder in folders if _is_run_folder(folder) for tmp in remove_dead_temporaries(folder)]


def _is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` is a run folder ``.../runs/experiment=E/algorithm=A/seed=S`` reached through no link."""
    chain = [folder, *folder.parents[:3]]
    names = [p.name for p in reversed(chain)]
    if len(chain) < 4 or names[0] != "runs" or not all(map(str.startswith, names[1:], _PARTITIONS)):
        return False
    return not any(p.is_symlink() for p in chain)


def remove_dead_temporaries(folder: Path, name: str | None = None) -> list[Path]:
    """Remove the ocokit temporaries of dead writers from ``folder`` (not below it), those of the file ``name`` only
    when given; returns the removed."""
    removed, now, host = [], time.time(), _host()
    try:
        found = [(p, m) for p in folder.iterdir() if (m := _TMP.fullmatch(p.name)) and name in (None, m["name"])]
    except OSError:
        return removed
    for tmp, match in found:
        try:
            info, dead = tmp.lstat(), match["host"] == host and not _alive(int(match["pid"]))
            if stat.S_ISREG(info.st_mode) and (dead or now - info.st_mtime > STALE_SECONDS):
                tmp.unlink()
                removed.append(tmp)
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` atomically, with the permissions the umask gives a new file (through a temporary
    `temporary_name` beside it, removed if the write fails)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / temporary_name(path.name)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the kernel applies the umask
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk: name the file
            raise OSError(err.errno, os.strerror(err.errno), str(path)) from None
        raise


def check_writable_folder(folder: Path, what: str = "out") -> None:
    """Check, leaving nothing behind, that ``folder`` is a folder (or can become one) this process can write in.

    The nearest existing folder on the way to ``folder`` must be a folder in which a file can be created: a
    probe file is created there and removed at once. Otherwise ``ValueError`` naming ``what`` and ``folder``
    (a file in the way, or why nothing can be written there: permissions, a read-only file system).
    """
    folder = Path(folder)
    nearest = folder.absolute()
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        where = "is a file" if nearest == folder.absolute() else f"cannot be created: {nearest} is a file"
        raise ValueError(f"{what} {folder} {where}, not a folder; give a folder to write the results in")
    probe = nearest / temporary_name("write-check")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        inside = "" if nearest == folder.absolute() else f" (nothing can be created in {nearest})"
        raise ValueError(f"{what} {folder} is not a writable folder: {reason}{inside}") from None


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically (live objects as `describe` gives them)."""
    atomic_write_bytes(Path(path), (json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n").encode())


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return describe(o, max_array=sys.maxsize)


# ------------------------------------------------------------------------------------------------- records


def save_records(
    path: Path, columns: Mapping[str, Any], metadata: Mapping[str, Any]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Save per-round columns (1-D, numeric, equal length) and metadata as one tidy Parquet file, atomically.

    The metadata (live objects allowed: see `describe`) is stored as JSON together with
    `provenance` (its key is the file name's, ``part-KEY.parquet``); ``T`` is ``metadata["T"]`` when it is an
    integer, else the number of rounds. Writing into a run folder of a store first removes the temporaries dead
    writers left there (`remove_stale_temporaries`).

    Returns:
        What `load_records` reads back from the file: the columns (copies, with their dtypes) and the
        stored metadata, as JSON gives it back.
    """
    path = Path(path)
    arrays = {str(k): np.asarray(v) for k, v in columns.items()}
    lengths = {a.shape[0] if a.ndim == 1 else -1 for a in arrays.values()}
    for name, a in arrays.items():
        if a.ndim != 1 or a.dtype.kind not in "biuf":
            raise ValueError(f"column {name!r} must be 1-D bool, int or float, got {a.dtype}{list(a.shape)}")
        if a.dtype.kind in "iu" and a.size and np.max(np.abs(a.astype(np.float64))) > 2**53:
            raise ValueError(f"column {name!r} has integers beyond 2**53, which float64 cannot hold exactly")
    if len(lengths) > 1:
        raise ValueError(f"columns must have equal lengths, got {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    T = metadata.get("T")
    T = int(T) if isinstance(T, numbers.Integral) and not isinstance(T, bool) else n
    key, names = _name_key(path), list(arrays)
    rows = n * len(names)
    table = pa.table(
        {
            "key": _repeated([key], np.zeros(rows, np.int32)),
            "T": pa.array(np.full(rows, T, np.int64)),
            "round": pa.array(np.tile(np.arange(1, n + 1, dtype=np.int64), len(names))),
            "quantity": _repeated(names, np.repeat(np.arange(len(names), dtype=np.int32), n)),
            "value": pa.array(np.concatenate([a.astype(np.float64) for a in arrays.values()] or [np.zeros(0)])),
        }
    )
    meta = json.dumps({"provenance": provenance(key), **describe(dict(metadata))}, default=_json_default)
    table = table.replace_schema_metadata(
        {
            "ocokit": meta,
            "ocokit.format": _FORMAT,
            "ocokit.columns": json.dumps([[k, a.dtype.str] for k, a in arrays.items()]),
            "ocokit.rows": str(n),
        }
    )
    sink = pa.BufferOutputStream()
    # dictionaries for the two string columns only, no min/max statistics (a run file is one small row group):
    # half the time of pyarrow's defaults, which try a dictionary of every column
    pq.write_table(table, sink, use_dictionary=["key", "quantity"], write_statistics=False)
    if _is_run_folder(path.parent):
        remove_dead_temporaries(path.parent)
    atomic_write_bytes(path, sink.getvalue().to_pybytes())
    return {k: a.copy() for k, a in arrays.items()}, json.loads(meta)


def _repeated(values: list[str], codes: np.ndarray) -> pa.StringArray:
    """The string column ``values[codes]``, built from its codes (a few distinct values repeated over many rows)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(values, pa.string())).cast(pa.string())


def _name_key(path: Path) -> str:
    """The key a run file's name gives: ``KEY`` of ``part-KEY.parquet`` (else the name without its suffix)."""
    match = re.fullmatch(r"part-(.+)\.parquet", path.name)
    return match[1] if match else path.stem


class CorruptRunError(ValueError):
    """A stored run file that cannot be read back whole (truncated, not Parquet, rows missing)."""


class MismatchedRunError(CorruptRunError):
    """A stored run that is not the run its file name promises (another run's file copied or moved there)."""


class MismatchedRunWarning(UserWarning):
    """A stored run found to be another run's (`MismatchedRunError`) is recomputed and its file replaced."""


def load_records(
    path: Path, *, expect: Mapping[str, Any] | None = None, recompute: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The columns (with their dtypes) and metadata of a file written by `save_records`.

    The file is validated as it is read: a file that is not a readable Parquet file of runs (truncated, random
    bytes, its metadata damaged) or whose columns do not each hold rounds ``1..n``, ``n`` the rows it was written
    with, raises `CorruptRunError` naming it (a missing file: ``FileNotFoundError``).

    With ``expect`` (the metadata the run is stored with, or its part known beforehand: the experiment, the
    algorithm, the configuration), the run is also checked by content: the key it stores must be its name's
    (``part-KEY.parquet``) and its stored experiment, algorithm, T and seed those of ``expect`` (each compared where
    both hold it), else `MismatchedRunError` naming the file and what differs; with ``recompute=True`` (the
    caller recomputes the run and replaces the file) a `MismatchedRunWarning` of one line says so first.
    """
    path = Path(path)
    columns, meta = _read(path)
    if expect is None:
        return columns, meta
    shown = describe({k: expect[k] for k in ("experiment", "algorithm", "T", "seed") if k in expect})
    differ = [f"{k} {meta[k]!r} instead of {v!r}" for k, v in shown.items() if k in meta and meta[k] != v]
    key = (meta.get("provenance") or {}).get("key")
    if key is not None and key != _name_key(path):
        differ.append(f"key {key} instead of {_name_key(path)}")
    if differ:
        err = MismatchedRunError(f"stored run {path} holds another run ({', '.join(differ)})")
        if recompute:
            warnings.warn(f"{err}; recomputing it and replacing the file", MismatchedRunWarning, stacklevel=2)
        raise err
    return columns, meta


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    try:
        with pq.ParquetFile(path) as file:  # one file (pq.read_table opens it as a dataset)
            table = file.read()
        raw = table.schema.metadata or {}
        meta = json.loads(raw.get(b"ocokit", b"{}"))
        if not isinstance(meta, dict):
            raise ValueError("its metadata is not a JSON object")
        if raw.get(b"ocokit.format") != _FORMAT.encode():  # a wide file of an earlier version
            columns = {name: table.column(name).to_numpy() for name in table.column_names}
            if len({c.shape[0] for c in columns.values()}) > 1:
                raise CorruptRunError(f"stored run {path} is corrupt: its columns have different lengths")
            return columns, meta
        return _tidy_columns(path, table, raw), meta
    except (FileNotFoundError, CorruptRunError):
        raise
    except (pa.ArrowException, OSError, ValueError, KeyError, TypeError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise CorruptRunError(f"stored run {path} is unreadable ({reason})") from None


def _tidy_columns(path: Path, table: pa.Table, raw: Mapping[bytes, bytes]) -> dict[str, np.ndarray]:
    quantity = pc.dictionary_encode(table.column("quantity")).combine_chunks()
    codes, index = quantity.indices.to_numpy(), {name: i for i, name in enumerate(quantity.dictionary.to_pylist())}
    rounds, values = table.column("round").to_numpy(), table.column("value").to_numpy()
    declared = raw.get(b"ocokit.rows")  # absent in files of earlier versions: every column as long as the first
    n = int(declared) if declared is not None else None
    columns = {}
    for name, dtype in json.loads(raw[b"ocokit.columns"]):
        rows = np.flatnonzero(codes == index.get(name, -1))
        order = np.argsort(rounds[rows], kind="stable")
        n = rows.size if n is None else n
        if not np.array_equal(rounds[rows[order]], np.arange(1, n + 1)):
            raise CorruptRunError(
                f"stored run {path} is corrupt: column {name!r} has {rows.size} rows, expected rounds 1 to {n}"
            )
        columns[name] = values[rows[order]].astype(np.dtype(dtype))
    return columns


def run_files(out: Path) -> list[Path]:
    """Every run file under ``out/runs`` (sorted by path); removes dead writers' temporaries first
    (`remove_stale_temporaries`)."""
    remove_stale_temporaries(out)
    return sorted((Path(out) / "runs").glob("experiment=*/algorithm=*/seed=*/part-*.parquet"))


def load_runs(out: Path) -> list[tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """Every run stored under ``out/runs``, as `load_records` gives it (sorted by path)."""
    return [load_records(p) for p in run_files(out)]


def dataset(out: Path) -> pads.Dataset:
    """The runs under ``out/runs`` as one pyarrow dataset (the tidy schema plus experiment, algorithm, seed)."""
    return pads.dataset(
        run_files(out), format="parquet", partitioning=_HIVE, partition_base_dir=str(Path(out) / "runs")
    )


def export_csv(out: Path, dest: Path | None = None) -> Path:
    """Write every run under ``out/runs`` as one flat CSV (default ``out/runs.csv``), atomically; returns it."""
    dest = Path(out) / "runs.csv" if dest is None else Path(dest)
    columns = ["experiment", "algorithm", "seed", "key", "T", "round", "quantity", "value"]
    sink = pa.BufferOutputStream()
    pacsv.write_csv(dataset(out).to_table(columns=columns), sink)
    atomic_write_bytes(dest, sink.getvalue().to_pybytes())
    return dest

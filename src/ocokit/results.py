"""Results on disk: a tidy, hive-partitioned Parquet dataset of runs, each keyed by the content of its configuration.

Layout: one file per run, ``OUT/runs/experiment=E/algorithm=A/seed=S/part-KEY.parquet`` (values URI-encoded as
pyarrow's hive partitioning writes them; ``seed=-1`` for a run that does not belong to one seed). Every file has
the same long ("tidy") schema, one row per round and quantity::

    key: string   T: int64   round: int64 (1-based)   quantity: string   value: float64

so pandas (``read_parquet``), polars (``scan_parquet``), duckdb (``read_parquet``) and :func:`dataset` read a
whole runs folder at once, with ``experiment``, ``algorithm`` and ``seed`` as columns taken from the folders,
however many diagnostics each learner records. :func:`load_records` turns a file back into its columns (with
their dtypes) and its metadata: a JSON description of the configuration and the provenance (library versions,
platform, device, the key, the creation time and the ocokit git commit when known).

``KEY`` is ``CONTENT-VERSIONS``: a hash of everything that determines the numbers (:func:`fingerprint`: array
contents, static fields, the code of user functions, exact numbers) and a hash of the ocokit, jax and equinox
versions, so a changed dataset entry, a changed loss function, a hyperparameter moved by 1e-9 or an upgrade
each computes anew; ``reuse_across_versions=True`` accepts a stored run of any version.

Writes are atomic (a temporary file in the same folder, then ``os.replace``) and honour the umask; temporaries
left by a killed writer are removed the next time the folder is written or the store is loaded. Reads validate:
a file that is truncated, not Parquet or short of rows raises :class:`CorruptRunError` naming it (the harness
then counts the run as missing and recomputes it).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import hashlib
import inspect
import json
import numbers
import os
import platform
import re
import secrets
import socket
import subprocess
import sys
import time
import types
import urllib.parse
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import pyarrow.dataset as pads

KEY_LENGTH = 20
"""Hex digits of the content part of a run key."""

STALE_SECONDS = 600
"""A temporary file older than this is a dead writer's (a run's file is written in one go, in seconds)."""

PARTITION_SCHEMA = pa.schema([("experiment", pa.string()), ("algorithm", pa.string()), ("seed", pa.int64())])
"""The columns of the runs folder's hive partitioning, ``experiment=E/algorithm=A/seed=S`` (:func:`partition_folder`
writes it; ``pyarrow.dataset.partitioning(PARTITION_SCHEMA, flavor="hive")`` reads it, as :func:`dataset` does)."""

_FORMAT = "tidy-1"
_LIBRARIES = ("jax", "equinox", "optax", "numpy")  # their functions are named, not read: their version is keyed


# ---------------------------------------------------------------------------------------------- content keys


def library_versions() -> dict[str, str]:
    """The versions that enter every run key: ocokit, jax and equinox."""
    import ocokit

    return {"ocokit": ocokit.__version__, "jax": jax.__version__, "equinox": eqx.__version__}


def fingerprint(obj: Any) -> str:
    """A SHA-256 hex digest of ``obj``'s content, equal for equal content built twice, in any process.

    Reads arrays (numpy, jax, PRNG keys) by dtype, shape and bytes; numbers exactly (``repr`` of floats);
    mappings regardless of order; dataclasses and equinox modules by type and every field, static ones included;
    user functions by qualified name, source, bytecode, defaults, closure values and the plain functions of
    their own module they call; functions of jax, numpy, equinox and optax by qualified name (their versions
    are in the run key). Raises ``TypeError`` for a tracer or an object with no readable content.
    """
    h = hashlib.sha256()
    _feed(h, obj, set())
    return h.hexdigest()


def config_hash(config: Any, *, reuse_across_versions: bool = False) -> str:
    """The key of ``config``: ``CONTENT-VERSIONS`` (``CONTENT-any`` with ``reuse_across_versions``)."""
    versions = "any" if reuse_across_versions else fingerprint(library_versions())[:8]
    return f"{fingerprint(config)[:KEY_LENGTH]}-{versions}"


def partition_folder(experiment: str, algorithm: str, seed: int) -> str:
    """``experiment=E/algorithm=A/seed=S`` with each value URI-encoded (every character but ASCII letters, digits and
    ``-._~`` as ``%XX`` of its UTF-8 bytes): the folder pyarrow's hive partitioning of :data:`PARTITION_SCHEMA` writes
    for those values, and reads back as them.

    Written here rather than by ``pyarrow.dataset``: importing that module imports pandas where pandas is installed
    (about 0.3 s at the start of every ``ocokit run``), and a run only needs this path. :func:`save_records` builds
    its table without pandas too (:func:`_arrow`); reading a run back converts to NumPy, which imports it.
    """
    values = {"experiment": experiment, "algorithm": algorithm, "seed": seed}
    return "/".join(f"{name}={urllib.parse.quote(str(value), safe='')}" for name, value in values.items())


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
    folder = Path(out) / "runs" / partition_folder(experiment, algorithm, seed)
    content = fingerprint({"experiment": experiment, "algorithm": algorithm, "config": config})[:KEY_LENGTH]
    path = folder / f"part-{content}-{fingerprint(library_versions())[:8]}.parquet"
    if reuse_across_versions and not path.exists():
        stored = sorted(folder.glob(f"part-{content}-*.parquet"), key=lambda p: p.stat().st_mtime)
        return stored[-1] if stored else path
    return path


def _emit(h, tag: str, payload: bytes | str) -> None:
    data = payload.encode() if isinstance(payload, str) else payload
    h.update(tag.encode() + len(data).to_bytes(8, "little") + data)


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _feed(h, obj: Any, path: set[int]) -> None:
    if obj is None or type(obj) in (bool, int, float, complex):
        _emit(h, type(obj).__name__, repr(obj))
        return
    if isinstance(obj, str | bytes):
        _emit(h, type(obj).__name__, obj)
        return
    if isinstance(obj, jax.core.Tracer):
        raise TypeError("cannot fingerprint a traced value; pass concrete arrays")
    if isinstance(obj, np.ndarray | np.generic | jax.Array):
        if jax.dtypes.issubdtype(obj.dtype, jax.dtypes.prng_key):
            _emit(h, "prng", str(obj.dtype))
            obj = jax.random.key_data(obj)
        a = np.ascontiguousarray(np.asarray(obj))
        if a.dtype == object:
            _emit(h, "object-array", repr(a.shape))
            _feed(h, a.ravel().tolist(), path)
        else:
            _emit(h, "array", f"{a.dtype.str}{a.shape}")
            _emit(h, "bytes", a.tobytes())
        return
    if isinstance(obj, type):
        _emit(h, "class", _name(obj))
        return
    if isinstance(obj, enum.Enum):
        _emit(h, "enum", f"{_name(type(obj))}.{obj.name}")
        return
    if isinstance(obj, PurePath):
        _emit(h, "path", str(obj))
        return
    if id(obj) in path:
        _emit(h, "cycle", "")
        return
    path.add(id(obj))
    try:
        if isinstance(obj, Mapping):
            _emit(h, "mapping", _name(type(obj)))
            for kf, k in sorted((fingerprint(k), k) for k in obj):
                _emit(h, "key", kf)
                _feed(h, obj[k], path)
        elif isinstance(obj, list | tuple):
            _emit(h, "sequence", f"{_name(type(obj))}:{len(obj)}")
            for item in obj:
                _feed(h, item, path)
        elif isinstance(obj, set | frozenset):
            _emit(h, "set", ",".join(sorted(fingerprint(item) for item in obj)))
        elif dataclasses.is_dataclass(obj):
            _emit(h, "dataclass", _name(type(obj)))
            for f in dataclasses.fields(obj):
                _emit(h, "field", f.name)
                _feed(h, getattr(obj, f.name, "<unset>"), path)
        elif isinstance(obj, types.FunctionType):
            _feed_function(h, obj, path)
        elif isinstance(obj, types.MethodType):
            _emit(h, "method", "")
            _feed(h, obj.__self__, path)
            _feed(h, obj.__func__, path)
        elif isinstance(obj, functools.partial):
            _emit(h, "partial", "")
            _feed(h, (obj.func, obj.args, obj.keywords), path)
        elif isinstance(obj, types.CodeType):
            _feed_code(h, obj, path)
        elif callable(obj) and inspect.unwrap(obj) is not obj:  # a functools.wraps wrapper (a jitted function)
            _emit(h, "wrapper", _name(type(obj)))
            _feed(h, inspect.unwrap(obj), path)
        elif isinstance(obj, types.BuiltinFunctionType | np.ufunc | types.ModuleType):
            _emit(h, "builtin", f"{_name(type(obj))}:{_name(obj)}:{getattr(obj, '__name__', '')}")
        elif getattr(obj, "__dict__", None):
            _emit(h, "object", _name(type(obj)))
            _feed(h, vars(obj), path)
        else:
            text = repr(obj)
            if " at 0x" in text:
                raise TypeError(f"cannot fingerprint {_name(type(obj))}: no fields and a repr naming an address")
            _emit(h, "repr", f"{_name(type(obj))}:{text}")
    finally:
        path.discard(id(obj))


def _feed_function(h, fn: types.FunctionType, path: set[int]) -> None:
    _emit(h, "function", _name(fn))
    if (fn.__module__ or "").partition(".")[0] in _LIBRARIES:
        return
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = ""
    _emit(h, "source", source)
    _feed_code(h, fn.__code__, path)
    _feed(h, (fn.__defaults__, fn.__kwdefaults__), path)
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # an empty cell
            cells.append("<empty cell>")
    _feed(h, cells, path)
    for name in sorted(_global_names(fn.__code__)):
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            _emit(h, "global", name)
            _feed(h, value, path)


def _feed_code(h, code: types.CodeType, path: set[int]) -> None:
    _emit(h, "code", code.co_code)
    _emit(h, "names", ",".join(code.co_names))
    for const in code.co_consts:
        _feed(h, const, path)


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


# ------------------------------------------------------------------------------------ descriptions, provenance


class _Shown:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _array_text(a: Any) -> str:
    if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
        a = jax.random.key_data(a)
    a = np.asarray(a)
    return f"{a.dtype}{list(a.shape)} sha256:{fingerprint(a)[:16]}"


def describe(obj: Any, max_array: int = 1000) -> Any:
    """A readable JSON value for ``obj``: modules and dataclasses pretty-printed (arrays of more than 16
    entries by dtype, shape and digest), functions by qualified name, arrays as lists (larger than
    ``max_array``: dtype, shape and digest)."""
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray | jax.Array):
        if jax.dtypes.issubdtype(obj.dtype, jax.dtypes.prng_key):
            obj = jax.random.key_data(obj)
        return np.asarray(obj).tolist() if np.size(obj) <= max_array else _array_text(obj)
    if isinstance(obj, Mapping):
        return {str(k): describe(v, max_array) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [describe(v, max_array) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        short = jax.tree.map(
            lambda x: _Shown(_array_text(x)) if isinstance(x, np.ndarray | jax.Array) and np.size(x) > 16 else x, obj
        )
        return eqx.tree_pformat(short, short_arrays=False)
    if isinstance(obj, PurePath | enum.Enum | complex):
        return str(obj)
    if isinstance(obj, functools.partial):
        return f"functools.partial({describe(obj.func)}, *{describe(obj.args)}, **{describe(obj.keywords)})"
    if callable(obj):
        return _name(getattr(obj, "__wrapped__", obj))
    return repr(obj)


def describe_each(configs: Mapping[Any, Mapping[str, Any]]) -> dict[Any, dict[str, Any]]:
    """:func:`describe` of every value of every configuration, each object shared by several configurations
    (a learner run over many seeds) described once."""
    seen: dict[int, Any] = {}  # by id: every object stays alive in ``configs`` meanwhile

    def shown(value: Any) -> Any:
        if id(value) not in seen:
            seen[id(value)] = describe(value)
        return seen[id(value)]

    return {k: {str(name): shown(value) for name, value in config.items()} for k, config in configs.items()}


def provenance(key: str | None = None) -> dict[str, Any]:
    """Where and with what a result was made: library versions, platform, device, time, ocokit git commit."""
    versions = {
        **library_versions(),
        "jaxlib": _version("jaxlib"),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "python": platform.python_version(),
    }
    devices = jax.devices()
    return {
        "key": key,
        "versions": versions,
        "platform": platform.platform(),
        "device": f"{len(devices)} x {devices[0].platform}:{devices[0].device_kind}",
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": _git_commit(),
    }


@functools.cache
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _git_commit() -> str | None:
    """The commit of the ocokit source tree (``+dirty`` with uncommitted changes), if it is one."""
    here = Path(__file__).resolve().parent
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        )
        lines = top.stdout.split()
        if top.returncode or len(lines) != 2 or Path(lines[0]).resolve() / "src" / "ocokit" != here:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, timeout=10
        )
        return lines[1] + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


# ----------------------------------------------------------------------------------------------- atomic writes


_TMP = re.compile(r"^\..+\.(?P<host>[A-Za-z0-9-]*)-(?P<pid>\d+)\.[0-9a-f]+\.tmp$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())


def remove_stale_temporaries(folder: Path, *, recursive: bool = False) -> list[Path]:
    """Remove the ``.*.tmp`` files of dead writers under ``folder``: those of a finished process of this host,
    and any older than :data:`STALE_SECONDS`. Returns the removed paths (unremovable ones are left)."""
    folder, removed, now = Path(folder), [], time.time()
    if not folder.is_dir():
        return removed
    for tmp in folder.rglob(".*.tmp") if recursive else folder.glob(".*.tmp"):
        match = _TMP.match(tmp.name)
        try:
            dead = match is not None and match["host"] == _host() and not _alive(int(match["pid"]))
            if dead or now - tmp.stat().st_mtime > STALE_SECONDS:
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
    except PermissionError:
        return True
    return True


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` atomically, with the permissions the umask gives a new file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    tmp = path.parent / f".{path.name}.{_host()}-{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the kernel applies the umask
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
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
    probe = nearest / f".write-check.{_host()}-{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        inside = "" if nearest == folder.absolute() else f" (nothing can be created in {nearest})"
        raise ValueError(f"{what} {folder} is not a writable folder: {reason}{inside}") from None


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically (live objects as :func:`describe` gives them)."""
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

    The metadata (live objects allowed: see :func:`describe`) is stored as JSON together with
    :func:`provenance`; ``T`` is ``metadata["T"]`` when it is an integer, else the number of rounds.

    Returns:
        What :func:`load_records` reads back from the file: the columns (copies, with their dtypes) and the
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
    match = re.fullmatch(r"part-(.+)\.parquet", path.name)
    key = match[1] if match else path.stem
    names = list(arrays)
    rows = n * len(names)
    codes = _arrow(np.repeat(np.arange(len(names), dtype=np.int32), n))
    table = pa.Table.from_arrays(
        [
            pa.DictionaryArray.from_arrays(_arrow(np.zeros(rows, np.int32)), _strings([key])).cast(pa.string()),
            _arrow(np.full(rows, T, np.int64)),
            _arrow(np.tile(np.arange(1, n + 1, dtype=np.int64), len(names))),
            pa.DictionaryArray.from_arrays(codes, _strings(names)).cast(pa.string()),
            _arrow(np.concatenate([a.astype(np.float64) for a in arrays.values()] or [np.zeros(0)])),
        ],
        names=["key", "T", "round", "quantity", "value"],
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
    atomic_write_bytes(path, sink.getvalue().to_pybytes())
    return {k: a.copy() for k, a in arrays.items()}, json.loads(meta)


def _arrow(values: np.ndarray) -> pa.Array:
    """``pa.array(values)`` for a 1-D integer or float array, sharing its buffer, built without pyarrow's check for a
    pandas object: that check imports pandas where pandas is installed (about 0.3 s, on the storing thread of an
    ``ocokit run``), and so do ``pa.array`` on a list, ``pa.scalar`` and ``pa.table``."""
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise TypeError(f"_arrow takes a 1-D integer or float array, got {values.dtype}{list(values.shape)}")
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _strings(values: Sequence[str]) -> pa.StringArray:
    """``pa.array(values, pa.string())``, built from its UTF-8 bytes and offsets (see :func:`_arrow`)."""
    data = [v.encode() for v in values]
    offsets = np.cumsum([0, *map(len, data)], dtype=np.int32)
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)))


class CorruptRunError(ValueError):
    """A stored run file that cannot be read back whole (truncated, not Parquet, rows missing)."""


def load_records(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The columns (with their dtypes) and metadata of a file written by :func:`save_records`.

    The file is validated as it is read: a file that is not a readable Parquet file of runs (truncated, random
    bytes, its metadata damaged) or whose columns do not each hold rounds ``1..n``, ``n`` the rows it was written
    with, raises :class:`CorruptRunError` naming it (a missing file: ``FileNotFoundError``).
    """
    path = Path(path)
    try:
        with pq.ParquetFile(path) as file:  # one file (pq.read_table opens it as a dataset: pyarrow.dataset)
            table = file.read()
        raw = table.schema.metadata or {}
        meta = json.loads(raw.get(b"ocokit", b"{}"))
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
    """Every run file under ``out/runs`` (sorted by path); removes dead writers' temporaries first."""
    runs = Path(out) / "runs"
    remove_stale_temporaries(runs, recursive=True)
    return sorted(runs.glob("experiment=*/algorithm=*/seed=*/part-*.parquet"))


def load_runs(out: Path) -> list[tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """Every run stored under ``out/runs``, as :func:`load_records` gives it (sorted by path)."""
    return [load_records(p) for p in run_files(out)]


def dataset(out: Path) -> pads.Dataset:
    """The runs under ``out/runs`` as one pyarrow dataset (the tidy schema plus experiment, algorithm, seed)."""
    import pyarrow.dataset as pads  # here, not at the top: see partition_folder

    partitioning = pads.partitioning(PARTITION_SCHEMA, flavor="hive")
    return pads.dataset(
        run_files(out), format="parquet", partitioning=partitioning, partition_base_dir=str(Path(out) / "runs")
    )


def export_csv(out: Path, dest: Path | None = None) -> Path:
    """Write every run under ``out/runs`` as one flat CSV (default ``out/runs.csv``), atomically; returns it."""
    dest = Path(out) / "runs.csv" if dest is None else Path(dest)
    columns = ["experiment", "algorithm", "seed", "key", "T", "round", "quantity", "value"]
    sink = pa.BufferOutputStream()
    pacsv.write_csv(dataset(out).to_table(columns=columns), sink)
    atomic_write_bytes(dest, sink.getvalue().to_pybytes())
    return dest

"""What a run is, in words that survive the process: its content key, its description and its provenance.

`config_hash` keys a stored run (`results`) by a hash of everything that determines its numbers
(`fingerprint`: array contents, static fields, the code of user functions, exact numbers) and a hash of the
ocokit, jax and equinox versions; `describe` writes a configuration as JSON for people; `provenance`
records where and with what a result was made.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import hashlib
import inspect
import platform
import subprocess
import types
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path, PurePath
from typing import Any

import equinox as eqx
import jax
import numpy as np
import pyarrow as pa

KEY_LENGTH = 20
"""Hex digits of the content part of a run key."""

_LIBRARIES = ("jax", "equinox", "optax", "numpy")  # their functions are named, not read: their version is keyed


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
    """`describe` of every value of every configuration, each object shared by several configurations
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

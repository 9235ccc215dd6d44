"""Compiled engine programs kept on disk, found again without tracing: what makes a second ``ocokit run`` fast.

JAX's persistent compilation cache (which the CLI turns on) skips XLA's compile, but every process still
traces each program and lowers it to MLIR to find its key, about 0.15 s per program of an experiment, and
loads the executable through that key. Here a compiled engine program is keyed on what determines it
*before* tracing: the program's function, its XLA options, its arguments (the static ones by value, the
arrays by shape and dtype), ocokit's own source code, the versions of JAX, jaxlib, equinox, NumPy and
Python, JAX's configuration, ``XLA_FLAGS`` and the machine (platform, devices, CPU features). A hit loads
the serialized executable (``jax.experimental.serialize_executable``) and calls it: nothing is traced,
lowered or compiled. A miss compiles the program as usual and stores it (here only: JAX's cache gets no
second copy). A program that makes custom calls other than jaxlib's LAPACK kernels (which a loaded program
first initializes: :func:`_initialize_lapack`) is not stored, since such calls (a host callback) are bound to
the process that compiled them.

Only programs built from trusted code are keyed: every class and function reached from the static
arguments must come from ocokit, JAX, equinox, NumPy or the standard library, whose code the key covers
(through ocokit's source digest and the versions). A program holding any other code (a user's loss, a
lambda) is never stored: it runs through ``eqx.filter_jit`` as it does without the cache, since a key
could not see that code change.

Off by default (the library never writes to disk on its own); the CLI turns it on with :func:`use`, in a
folder inside its compilation cache. The folder is safe to delete at any time. A file that cannot be read
back whole (checksum, format) is treated as missing and replaced; the folder is bounded
(:data:`MAX_BYTES`, least recently used out). Each file is written atomically, so concurrent processes
never read half a program. The key sees ocokit's source files, not changes made to its module globals at
run time (a test patching a constant): the CLI makes none. A stored program is run as it is, so the folder must
be trusted as JAX's own cache is (it is the user's).

The CLI also notes which programs a command called (:func:`remember`); the next identical command starts
loading them in a thread as it begins (:func:`prefetch`), so that XLA's loading (about 0.4 s for an experiment's
six programs) overlaps the imports and set-up instead of following them.

Across processes this needs two precautions, both tested (``tests/test_executables.py``). A program that JAX's
own cache loaded cannot be serialized again (XLA drops its kernels: the copy fails in the next process), so a
program is stored only when XLA compiled it in this process (:func:`_compile`), under a module name of its
key that JAX's cache keys on. And jaxlib's LAPACK kernels are initialized when a process first lowers a
linear-algebra op, which a loaded program never does (:func:`_initialize_lapack`).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import hashlib
import importlib.metadata
import io
import json
import math
import os
import pickle
import platform
import re
import secrets
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax._src import config as _jax_config
from jax.experimental import serialize_executable

FORMAT = b"ocokit-executable-1\n"
"""The first bytes of a stored program (a program of another format is recompiled)."""

MAX_BYTES = 2**30
"""The bound on the folder's size (1 GiB, as the CLI bounds JAX's cache): beyond it, the least recently used
programs are removed. One experiment can need a quarter of it: ``memory-predictions-window``'s 63 programs take
about 260 MiB."""

TRUSTED = frozenset(
    {
        "ocokit",
        "jax",
        "jaxlib",
        "jaxtyping",
        "equinox",
        "numpy",
        "builtins",
        "copyreg",
        "collections",
        "dataclasses",
        "enum",
        "functools",
        "math",
        "operator",
        "_operator",
        "_functools",
        "typing",
    }
)
"""The top-level modules whose classes and functions may appear in a stored program's static arguments."""

_DISTRIBUTIONS = ("jax", "jaxlib", "equinox", "jaxtyping", "numpy")
_JAX_CACHE_HIT = "/jax/compilation_cache/cache_hits"
_LAPACK = "lapack_"
"""The prefix of the custom calls a stored program may make: jaxlib's LAPACK kernels (:func:`_initialize_lapack`).
A program calling any other (a host callback, an FFT) is bound to its process and is not stored."""

counts: collections.Counter[str] = collections.Counter()
"""What this process did with its programs: ``"loaded"`` (from disk), ``"prefetched"`` (calls served by a load
:func:`prefetch` started), ``"stored"``, ``"compiled"`` (stored or not), ``"untrusted"`` (calls not keyed:
:data:`TRUSTED`)."""
_counts_lock = threading.Lock()

_folder: Path | None = None
_loaded: dict[str, tuple[Callable, Any]] = {}
"""This process's programs by key: each is read from disk at most once per process."""
_MAX_LOADED = 64
"""The most programs :data:`_loaded` holds (the oldest goes first)."""
_used: list[str] = []
"""The keys this process called, in order: what :func:`remember` writes."""
_prefetched: dict[str, concurrent.futures.Future] = {}
"""Loads :func:`prefetch` started, by key."""
_prefetch_done: concurrent.futures.Future | None = None
"""Done once the loads the last :func:`prefetch` started have ended (:func:`wait_prefetch`)."""
_SUFFIX, _COMMANDS, _FACTS = ".xla", "commands", "facts"
"""A stored program's file suffix, and the subfolders of the command notes (:func:`remember`) and of the values
:func:`remembered` keeps."""
MAX_COMMANDS = 256
"""The most commands :func:`remember` keeps (the least recently remembered go first)."""
MAX_FACTS = 4096
"""The most values :func:`remembered` keeps (the least recently written go first; each is a few bytes)."""


def use(folder: Path | str | None) -> None:
    """Keep compiled engine programs in ``folder`` from now on (``None``: stop)."""
    global _folder
    _folder = None if folder is None else Path(folder)
    _loaded.clear()
    _used.clear()
    cancel_prefetch()


def cancel_prefetch() -> None:
    """Drop the loads :func:`prefetch` started that have not begun (one in progress finishes: at most about 0.1 s,
    which the interpreter waits for at exit)."""
    for future in _prefetched.values():
        future.cancel()
    _prefetched.clear()


def wait_prefetch() -> None:
    """Wait until the loads :func:`prefetch` started have ended (at once when none was started): work that can wait
    for them (drawing's imports, say) then leaves the interpreter's lock to the loads and the set-up."""
    if _prefetch_done is not None:
        concurrent.futures.wait([_prefetch_done])


def stored_files(folder: Path) -> list[Path]:
    """Every file this module keeps under ``folder``: the programs, the command notes and the remembered values
    (what ``ocokit cache --clear`` deletes; nothing else there is touched)."""
    folder = Path(folder)
    return sorted(
        [*folder.glob(f"*{_SUFFIX}"), *(folder / _COMMANDS).glob("*.json"), *(folder / _FACTS).glob("*.json")]
    )


def _count(what: str) -> None:
    with _counts_lock:  # a prefetching thread counts too
        counts[what] += 1


def remember(command: str) -> None:
    """Note, under ``command`` (a description of an invocation), the programs this process has called, so that
    :func:`prefetch` can start loading them the next time, before they are asked for."""
    if _folder is None or not _used:
        return
    from ocokit.results import atomic_write_bytes

    commands = _folder / _COMMANDS
    try:
        commands.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"command": command, "programs": _used})
        atomic_write_bytes(_command_path(command), text.encode())
        _keep_newest(commands, MAX_COMMANDS)
    except OSError:  # an unwritable folder: the next invocation loads as it goes
        pass


def prefetch(command: str) -> None:
    """Start loading, in a thread, the programs ``command`` called last time (:func:`remember`); a call of one of
    them then waits for its load instead of starting its own. XLA loads a program (about 0.03-0.09 s on a
    2-core CPU) without holding Python's lock, so the loads overlap the imports and set-up that come first."""
    if _folder is None:
        return
    try:
        keys = json.loads(_command_path(command).read_text())["programs"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not isinstance(keys, list) or not all(isinstance(k, str) and re.fullmatch("[0-9a-f]{64}", k) for k in keys):
        return
    global _prefetch_done
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ocokit-prefetch")
    for key in keys:
        if key not in _loaded and key not in _prefetched:
            _prefetched[key] = pool.submit(_load, _folder, key)
    _prefetch_done = pool.submit(lambda: None)  # done once every load before it has ended or was cancelled
    pool.shutdown(wait=False)


def remembered(fn: Callable, args: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, a JSON value that ``fn(*args)`` determines, read from the folder in use if a process stored
    it there, else computed and stored: what the engine learns by tracing or probing (a problem's memory
    footprint, whether XLA knows an option) costs a fresh process nothing the second time.

    It is keyed as a program is (:func:`program_key`: ``fn``, the static arguments by value, the arrays by shape
    and dtype, ocokit's source, the versions, JAX's configuration, the machine), so ``fn``'s result must depend on
    nothing else. Without a folder, or for arguments holding untrusted code, it is computed every time. A value
    that cannot be read back (damaged, another format) is computed again and replaced.
    """
    if _folder is None:
        return compute()
    key = _keyed(fn, (), args)[0]
    if key is None:
        return compute()
    path = _folder / _FACTS / f"{key}.json"
    try:
        return json.loads(path.read_text())["value"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = compute()
    from ocokit.results import atomic_write_bytes

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(
            path, json.dumps({"function": f"{fn.__module__}:{fn.__qualname__}", "value": value}).encode()
        )
        _keep_newest(path.parent, MAX_FACTS)
    except OSError:  # an unwritable folder (or a file removed meanwhile): computed again next time
        pass
    return value


def _keep_newest(folder: Path, limit: int) -> None:
    """Remove the oldest JSON files of ``folder`` (by modification time) beyond the newest ``limit``."""
    files = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime)
    for path in files[: max(0, len(files) - limit)]:
        path.unlink(missing_ok=True)


def _command_path(command: str) -> Path:
    return _folder / _COMMANDS / f"{hashlib.sha256(command.encode()).hexdigest()[:32]}.json"


def folder() -> Path | None:
    """The folder in use (``None``: programs are not kept on disk)."""
    return _folder


class Program:
    """``eqx.filter_jit(fn)`` compiled with the XLA ``options``, its executables kept on disk when :func:`use`
    names a folder and the arguments are keyable (see the module docstring).

    ``fn`` must return a pytree of arrays (``None`` allowed): a stored program has no traced Python output.
    """

    def __init__(self, fn: Callable, options: tuple[tuple[str, Any], ...] = ()):
        self.fn, self.options = fn, options
        self.jitted = eqx.filter_jit(fn, compiler_options=dict(options)) if options else eqx.filter_jit(fn)

    def __call__(self, *args: Any) -> Any:
        if _folder is None:
            return self.jitted(*args)
        found = self._find(args)
        if found is None:
            return self.jitted(*args)
        (executable, out_tree), leaves = found
        return jax.tree.unflatten(out_tree, executable(*leaves))

    def prepare(self, *args: Any) -> None:
        """Compile the program for arguments of the shapes of ``args`` (or load it), without running it: a call
        from another thread then only runs it (XLA never compiles in two threads at once this way)."""
        found = self._find(args) if _folder is not None else None
        if found is None:
            self.jitted.lower(*args).compile()  # fills the cache the jitted call looks in

    def _find(self, args: tuple) -> tuple[tuple[Callable, Any], list] | None:
        """The program's executable for ``args`` (loaded, or compiled and stored) and their array leaves; ``None``
        when the arguments hold untrusted code (not keyed)."""
        key, leaves, static, treedef = _keyed(self.fn, self.options, args)
        if key is None:
            _count("untrusted")
            return None
        if key not in _used:
            _used.append(key)
        entry = _loaded.get(key)
        if entry is None:
            while len(_loaded) >= _MAX_LOADED:
                _loaded.pop(next(iter(_loaded)), None)
            future = _prefetched.pop(key, None)
            entry = future.result() if future is not None else None
            if entry is not None:
                _count("prefetched")
            entry = entry or _load(_folder, key) or _compile_and_store(_folder, key, self, static, treedef, leaves)
            _loaded[key] = entry
        return entry, leaves


def _keyed(fn: Callable, options: tuple, args: tuple) -> tuple[str | None, list, Any, Any]:
    """:func:`program_key` of ``fn`` on ``args`` (split into arrays and static values), with the array leaves,
    the static part and the arrays' structure it was computed from."""
    dynamic, static = eqx.partition(args, eqx.is_array)
    leaves, treedef = jax.tree.flatten(dynamic)
    return program_key(fn, options, static, treedef, leaves), leaves, static, treedef


def program_key(fn: Callable, options: tuple, static: Any, treedef: Any, leaves: list) -> str | None:
    """The stored name of ``fn``'s program for these arguments, or ``None`` when they hold untrusted code."""
    environment = _environment()
    if environment is None:
        return None
    digest = hashlib.sha256(environment)
    digest.update(repr(sorted((k, repr(v)) for k, v in jax.config.values.items())).encode())
    digest.update(f"{fn.__module__}:{fn.__qualname__}:{options!r}".encode())
    avals = [(tuple(np.shape(x)), str(x.dtype), bool(getattr(x, "weak_type", False))) for x in leaves]
    try:
        digest.update(_trusted_pickle((static, avals)))
        digest.update(_trusted_pickle(jax.tree.unflatten(treedef, list(range(len(leaves))))))
    except (_Untrusted, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return digest.hexdigest()


class _Untrusted(Exception):
    """A class or function outside :data:`TRUSTED` in a program's static arguments."""


class _TrustedPickler(pickle.Pickler):
    """Pickles (for a key only: never read back) and refuses any class or function of an untrusted module."""

    def reducer_override(self, obj: Any) -> Any:
        kind = obj if isinstance(obj, type) else type(obj)  # every object's class (its reduction may hide it)
        own = None if isinstance(obj, type) else getattr(obj, "__module__", None)  # and a function's own module
        for module in (kind.__module__, own):
            if isinstance(module, str) and module.partition(".")[0] not in TRUSTED:
                raise _Untrusted(f"{module}.{getattr(obj, '__qualname__', kind.__qualname__)}")
        return NotImplemented


def _trusted_pickle(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _TrustedPickler(buffer, protocol=5).dump(obj)
    return buffer.getvalue()


@functools.cache
def _environment() -> bytes | None:
    """What every key of this process shares: ocokit's source, the versions, XLA's flags and the machine (JAX's
    configuration, which a process may change, enters each key: :func:`program_key`). ``None`` when ocokit's
    source files cannot be read (an install without them): then nothing is keyed."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    sources = sorted(root.rglob("*.py"))
    if not sources:
        return None
    for path in sources:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    versions = {name: importlib.metadata.version(name) for name in _DISTRIBUTIONS}
    devices = jax.devices()
    machine = [
        sys.version,
        platform.machine(),
        _cpu_features(),
        devices[0].platform,
        devices[0].device_kind,
        len(devices),
        devices[0].client.platform_version,
        os.environ.get("XLA_FLAGS", ""),
    ]
    digest.update(repr((versions, machine)).encode())
    return digest.digest()


def _cpu_features() -> str:
    """The CPU's feature flags (Linux), so a folder shared by machines never runs a program built for another."""
    try:
        with open("/proc/cpuinfo") as fh:
            return next((line for line in fh if line.startswith(("flags", "Features"))), "")
    except OSError:
        return platform.processor()


def _path(folder: Path, key: str) -> Path:
    return folder / f"{key}{_SUFFIX}"


def _load(folder: Path, key: str) -> tuple[Callable, Any] | None:
    """The stored program ``key``, or ``None`` when it is missing or unreadable (which is then removed)."""
    path = _path(folder, key)
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head, checksum, payload = blob[: len(FORMAT)], blob[len(FORMAT) : len(FORMAT) + 32], blob[len(FORMAT) + 32 :]
    if head != FORMAT or hashlib.sha256(payload).digest() != checksum:
        path.unlink(missing_ok=True)
        return None
    try:
        stored_key, targets, serialized, in_tree, out_tree, skeleton = pickle.loads(payload)
        if stored_key != key:
            raise ValueError("another program under this name")
        if any(target.startswith(_LAPACK) for target in targets):
            _initialize_lapack()
        executable = serialize_executable.deserialize_and_load(serialized, in_tree, out_tree)
        result_tree = jax.tree.structure(skeleton)
    except (pickle.UnpicklingError, EOFError, ImportError, AttributeError, TypeError, ValueError, RuntimeError):
        path.unlink(missing_ok=True)  # written by something else, or not loadable here: compiled again
        return None
    try:
        os.utime(path)  # recently used: the last to be removed
    except OSError:
        pass
    _count("loaded")
    return executable, result_tree


def _compile_and_store(
    folder: Path, key: str, program: Program, static: Any, treedef: Any, leaves: list
) -> tuple[Callable, Any]:
    """Compile ``program`` for these arguments, store it (only if XLA compiled it here), and return it."""
    from ocokit.results import atomic_write_bytes

    result_tree = []

    def flat(*dynamic):
        out = program.fn(*eqx.combine(jax.tree.unflatten(treedef, dynamic), static))
        out_leaves, tree = jax.tree.flatten(out)
        if not all(isinstance(x, jax.Array) for x in out_leaves):
            raise TypeError(f"{program.fn.__qualname__} must return arrays only to be stored")
        result_tree.append(tree)
        return out_leaves

    # A program JAX's cache loaded cannot be serialized again (XLA drops its kernels: the copy fails in the next
    # process). JAX's cache keys on the module's name, so a name of this key keeps the programs stored here
    # apart; if JAX has it all the same (this folder was emptied, not JAX's), a one-off name compiles it afresh.
    for suffix in ("", f"_{secrets.token_hex(8)}"):
        flat.__name__ = flat.__qualname__ = f"ocokit_{key[:24]}{suffix}"
        executable, fresh = _compile(jax.jit(flat, compiler_options=dict(program.options)), leaves)
        _count("compiled")
        if fresh:
            break
    targets = sorted(set(re.findall(r'custom_call_target="([^"]+)"', executable.as_text() or "")))
    if not fresh or any(not target.startswith(_LAPACK) for target in targets):  # a host callback: process-bound
        return executable, result_tree[0]
    serialized, in_tree, out_tree = serialize_executable.serialize(executable)
    skeleton = jax.tree.unflatten(result_tree[0], list(range(result_tree[0].num_leaves)))  # picklable, unlike
    payload = pickle.dumps((key, targets, serialized, in_tree, out_tree, skeleton), protocol=5)  # treedefs
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(_path(folder, key), FORMAT + hashlib.sha256(payload).digest() + payload)
        _count("stored")
        _bound(folder, keep=_path(folder, key))
    except OSError:  # an unwritable cache costs the next process a compile, nothing else
        pass
    return executable, result_tree[0]


def _compile(jitted: Any, leaves: list) -> tuple[Any, bool]:
    """``jitted`` compiled for ``leaves``, and whether XLA compiled it in this call (not loaded from JAX's cache,
    which a listener of JAX's monitoring events sees in this thread).

    JAX's own cache is read but not written: the program is stored here, and a second copy in JAX's folder would
    cost its serialization and compression again (about 0.2 s for Fig. 1's seven programs) for nothing. (The
    minimum compile time JAX caches from is raised for this thread and this call only.)"""
    thread, hits = threading.get_ident(), []

    def listen(event: str, **_: Any) -> None:
        if event == _JAX_CACHE_HIT and threading.get_ident() == thread:
            hits.append(event)

    jax.monitoring.register_event_listener(listen)
    try:
        with _jax_config.persistent_cache_min_compile_time_secs(math.inf):
            executable = jitted.lower(*leaves).compile()
    finally:
        jax.monitoring.unregister_event_listener(listen)
    return executable, not hits


@functools.cache
def _initialize_lapack() -> None:
    """Make jaxlib's LAPACK kernels callable in this process, as lowering any linear-algebra op does.

    jaxlib fills in its LAPACK function pointers the first time a process lowers such an op (through
    ``jaxlib.lapack.prepare_lapack_call``); a program loaded from disk is never lowered, so without this its
    Cholesky or triangular solve would call through a null pointer. Where jaxlib lacks that function, lowering
    (not compiling) a 1 x 1 Cholesky does the same, in about 0.2 s.
    """
    try:
        from jaxlib.lapack import prepare_lapack_call
    except ImportError:
        jax.jit(jax.numpy.linalg.cholesky).lower(np.eye(1))
    else:
        prepare_lapack_call("potrf", np.float64)


def _bound(folder: Path, keep: Path) -> None:
    """Remove the least recently used programs, never ``keep`` (the one just stored), while the folder holds
    more than :data:`MAX_BYTES`."""
    files = []
    for path in folder.glob(f"*{_SUFFIX}"):
        try:
            stat = path.stat()
        except OSError:  # removed meanwhile by another process
            continue
        files.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= MAX_BYTES:
            break
        if path != keep:
            path.unlink(missing_ok=True)
            total -= size

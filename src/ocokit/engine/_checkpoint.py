"""A [`Session`][ocokit.Session]'s checkpoint file: its whole state on disk, written atomically, read back checked.

The file is one line of JSON, the header, then the carried state's leaves as equinox writes them
(`tree_serialise_leaves`: one ``.npy`` record per array, never a pickle)::

    {"format": "ocokit-session-checkpoint-1", "versions": {...}, "learner": {...}, "problem": {...},
     "horizon": T, "key": {...}, "round": t, "payload": {"bytes": n, "sha256": "..."}}\\n
    <n bytes of leaves>

The header records the versions of ocokit, jax and equinox that wrote it, the learner's and the problem's class and
`fingerprint` (every number, static field and function of their configuration), the
horizon, the session's key and the round index; the payload's length and SHA-256 make a truncated or damaged file a
one-line error rather than a wrong state. A checkpoint is written to a temporary file of a name only ocokit writes
(`temporary_name`) in the same folder, flushed to disk and renamed over the old one
(`atomic_write_bytes`), then the folder is flushed: a process killed at any moment leaves the
previous checkpoint or the new one, whole, and at most a temporary that the next restore removes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ocokit import results
from ocokit.fingerprints import fingerprint, library_versions

FORMAT = "ocokit-session-checkpoint-1"
"""The format of the files `write` writes; another one is refused by `read`."""

_MAX_HEADER = 1 << 20  # bytes: a header is a few hundred; a file whose first line is longer is not a checkpoint


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint read from ``path``, whole and intact: its header and its leaves, not yet deserialised."""

    path: Path
    header: dict[str, Any]
    payload: bytes

    @property
    def round(self) -> int:
        """The rounds the saved session had played."""
        return int(self.header["round"])

    @property
    def horizon(self) -> int:
        """The horizon the saved session was made with."""
        return int(self.header["horizon"])

    @property
    def key(self) -> jax.Array:
        """The key the saved session was made with."""
        return decode_key(self.header["key"])


def configuration(learner: Any, problem: Any, horizon: int, key: jax.Array) -> dict[str, Any]:
    """What a checkpoint must match to be restored into a session: the learner and the problem (class and
    fingerprint), the horizon and the key. ``ValueError`` if the learner or problem cannot be fingerprinted."""
    config: dict[str, Any] = {}
    for name, obj in (("learner", learner), ("problem", problem)):
        try:
            fields = dataclasses.fields(obj) if dataclasses.is_dataclass(obj) else ()
            config[name] = {
                "class": type(obj).__name__,
                "fingerprint": fingerprint(obj),
                "fields": {f.name: fingerprint(getattr(obj, f.name, None))[:16] for f in fields},
            }
        except TypeError as err:
            raise ValueError(f"cannot checkpoint a session whose {name} has no readable configuration: {err}") from None
    return {**config, "horizon": int(horizon), "key": encode_key(key)}


def encode_key(key: jax.Array) -> dict[str, Any]:
    """A PRNG key (raw ``uint32`` data or a typed key) as JSON."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return {"impl": str(jax.random.key_impl(key)), "data": np.asarray(jax.random.key_data(key)).tolist()}
    return {"impl": None, "dtype": str(key.dtype), "data": np.asarray(key).tolist()}


def decode_key(encoded: dict[str, Any]) -> jax.Array:
    """The key `encode_key` wrote."""
    if encoded.get("impl") is None:
        return jnp.asarray(np.asarray(encoded["data"], dtype=encoded["dtype"]))
    return jax.random.wrap_key_data(jnp.asarray(np.asarray(encoded["data"], dtype=np.uint32)), impl=encoded["impl"])


def write(path: Path, config: dict[str, Any], round_: int, carry: Any) -> None:
    """Write a session's ``carry`` after ``round_`` rounds, with its ``config``, atomically to ``path``."""
    buffer = io.BytesIO()
    eqx.tree_serialise_leaves(buffer, carry, filter_spec=_save_leaf)
    payload = buffer.getvalue()
    header = {
        "format": FORMAT,
        "versions": library_versions(),
        **config,
        "round": int(round_),
        "payload": {"bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()},
    }
    line = json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    path = Path(path)
    results.atomic_write_bytes(path, line + payload)
    _sync_folder(path.parent)


def sweep(path: Path) -> None:
    """Remove the temporaries of ``path`` that killed writers left beside it: only files named as ocokit names its
    temporaries of this file, only those of a dead process of this host or older than
    `STALE_SECONDS` (another host's)."""
    results.remove_dead_temporaries(Path(path).parent, Path(path).name)


def read(path: Path) -> Checkpoint:
    """The checkpoint at ``path``, checked whole (format, header, length and SHA-256 of the leaves), or one line
    naming the file and what is wrong with it; first the temporaries that killed writers left beside it are removed
    (`sweep`)."""
    path = Path(path)
    sweep(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read checkpoint {path}: {err.strerror or err}") from None
    end = data.find(b"\n", 0, _MAX_HEADER)
    try:
        header = json.loads(data[:end]) if end > 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{path} is not an ocokit Session checkpoint (format {FORMAT})")
    payload, want = data[end + 1 :], header.get("payload") or {}
    if len(payload) != want.get("bytes"):
        raise ValueError(f"checkpoint {path} is truncated: {len(payload)} bytes of state, its header says {want}")
    if hashlib.sha256(payload).hexdigest() != want.get("sha256"):
        raise ValueError(f"checkpoint {path} is corrupt: its state does not match the SHA-256 of its header")
    return Checkpoint(path, header, payload)


def mismatch(checkpoint: Checkpoint, config: dict[str, Any]) -> str | None:
    """One line naming what differs between ``checkpoint`` and a session of ``config`` (learner, problem, horizon,
    key, ocokit version), or ``None`` when it can be restored into it."""
    saved, differ = checkpoint.header, []
    for name in ("learner", "problem"):
        if saved.get(name) != config[name]:
            was, now = saved.get(name) or {}, config[name]
            if was.get("class") != now["class"]:
                differ.append(f"{name} ({was.get('class')}, not {now['class']})")
                continue
            fields = was.get("fields") or {}
            changed = [f for f, fp in now["fields"].items() if fields.get(f) != fp] or ["configuration"]
            differ.append(f"{name} ({now['class']} with another {', '.join(changed)})")
    if saved.get("horizon") != config["horizon"]:
        differ.append(f"horizon ({saved.get('horizon')}, not {config['horizon']})")
    if saved.get("key") != config["key"]:
        differ.append(f"key ({saved.get('key', {}).get('data')}, not {config['key']['data']})")
    version, running = (saved.get("versions") or {}).get("ocokit"), library_versions()["ocokit"]
    if version != running:
        differ.append(f"ocokit version ({version}, not {running})")
    if not differ:
        return None
    return f"checkpoint {checkpoint.path} was saved with another " + ", ".join(differ)


def restore_carry(checkpoint: Checkpoint, like: Any) -> Any:
    """The carry saved in ``checkpoint``, of the structure, shapes, dtypes and weak types of ``like`` (a fresh
    session's carry), in buffers of its own; one line naming the file if it holds another structure."""
    buffer = io.BytesIO(checkpoint.payload)
    try:
        carry = eqx.tree_deserialise_leaves(buffer, like, filter_spec=_load_leaf)
    except (ValueError, EOFError, OSError) as err:
        raise ValueError(f"checkpoint {checkpoint.path} holds another state than this session's: {err}") from None
    if buffer.tell() != len(checkpoint.payload):
        raise ValueError(f"checkpoint {checkpoint.path} holds another state than this session's: more leaves")
    return carry


def _save_leaf(f: Any, leaf: Any) -> None:
    """One leaf of the carry as one ``.npy`` record (a typed PRNG key as its raw data)."""
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    np.save(f, np.asarray(leaf), allow_pickle=False)


def _load_leaf(f: Any, like: Any) -> Any:
    """The leaf `_save_leaf` wrote, as ``like`` is: the same shape, dtype, weak type and key type."""
    value = np.load(f, allow_pickle=False)
    if jax.dtypes.issubdtype(like.dtype, jax.dtypes.prng_key):
        want_shape, want_dtype = jax.random.key_data(like).shape, np.dtype(np.uint32)
    else:
        want_shape, want_dtype = like.shape, np.dtype(like.dtype)
    if value.shape != want_shape or value.dtype != want_dtype:
        raise ValueError(f"a leaf {value.dtype}{list(value.shape)} where {want_dtype}{list(want_shape)} was expected")
    if jax.dtypes.issubdtype(like.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(jnp.array(value, copy=True), impl=jax.random.key_impl(like))
    if like.weak_type:  # written into a copy of ``like``, which keeps its weak type (a cast would make it strong)
        return like.at[...].set(value)
    return jnp.array(value, copy=True)


def _sync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries to disk, so that a rename in it survives a power cut (where the OS allows)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

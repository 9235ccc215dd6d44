"""Validation of user-supplied parameters (concrete values only; tracers are skipped).

Every check raises ``ValueError`` naming the parameter, the allowed range and the value received, so a
bad configuration fails before anything is compiled (DESIGN.md, Conventions).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def _concrete(value: Any) -> np.ndarray | None:
    """The value as a NumPy array, or ``None`` when it is traced (checks are skipped under jit/vmap)."""
    if isinstance(value, jax.core.Tracer):
        return None
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None


def _fail(name: str, rule: str, value: Any) -> None:
    shown = np.asarray(value)
    shown = shown.item() if shown.ndim == 0 else shown
    raise ValueError(f"{name} must be {rule}, got {shown}")


def positive(name: str, value: Any) -> None:
    """``value > 0`` (every entry of a batched value)."""
    arr = _concrete(value)
    if arr is not None and not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        _fail(name, "> 0", value)


def nonnegative(name: str, value: Any) -> None:
    """``value >= 0``."""
    arr = _concrete(value)
    if arr is not None and not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
        _fail(name, ">= 0", value)


def in_open_interval(name: str, value: Any, low: float, high: float) -> None:
    """``low < value < high``."""
    arr = _concrete(value)
    if arr is not None and not (np.all(arr > low) and np.all(arr < high)):
        _fail(name, f"in ({low}, {high})", value)


def in_closed_interval(name: str, value: Any, low: float, high: float) -> None:
    """``low <= value <= high``."""
    arr = _concrete(value)
    if arr is not None and not (np.all(arr >= low) and np.all(arr <= high)):
        _fail(name, f"in [{low}, {high}]", value)


def greater_than(name: str, value: Any, bound: float) -> None:
    """``value > bound``."""
    arr = _concrete(value)
    if arr is not None and not np.all(arr > bound):
        _fail(name, f"> {bound}", value)


def positive_int(name: str, value: Any) -> None:
    """A Python or NumPy integer ``>= 1``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def one_of(name: str, value: Any, allowed: tuple[str, ...] | list[str]) -> None:
    """``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")


def shape_is(name: str, value: Any, shape: tuple[int, ...]) -> None:
    """``value`` has exactly ``shape``."""
    got = tuple(np.shape(value))
    if got != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {got}")


def integer(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """An integral value in ``[low, high]`` as a Python ``int``.

    Accepts any integer type (``int``, NumPy integers, a concrete 0-d JAX or NumPy integer array); rejects
    ``bool``, floats (even integral ones) and everything else.
    """
    rule = f"an integer >= {low}" + (f" and <= {high}" if high is not None else "")
    dtype = getattr(value, "dtype", None)
    integral = isinstance(value, int | np.integer) or (
        dtype is not None and np.ndim(value) == 0 and np.issubdtype(dtype, np.integer)
    )
    if isinstance(value, bool) or isinstance(value, jax.core.Tracer) or not integral:
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    number = int(value)
    if number < low or (high is not None and number > high):
        raise ValueError(f"{name} must be {rule}, got {number}")
    return number


Check = Callable[[str, Any], None]
"""A check ``check(name, value)``: returns, or raises ``ValueError`` naming the parameter."""


def optional(check: Check) -> Check:
    """``check``, or ``None`` (a default computed later from other parameters)."""

    def checked(name: str, value: Any) -> None:
        if value is not None:
            check(name, value)

    return checked


def among(allowed: tuple[str, ...] | list[str]) -> Check:
    """`one_of` ``allowed``, as a check."""
    return lambda name, value: one_of(name, value, allowed)


def within(low: float, high: float) -> Check:
    """`in_closed_interval` ``[low, high]``, as a check."""
    return lambda name, value: in_closed_interval(name, value, low, high)


def checked_field(check: Check | None = None, **kwargs: Any) -> Any:
    """An ``eqx.field(**kwargs)`` declaring its own ``check``, which `Checked` runs on construction."""
    metadata = {**kwargs.pop("metadata", {}), **({} if check is None else {"check": check})}
    return eqx.field(metadata=metadata, **kwargs)


class Checked(eqx.Module):
    """A module whose fields declare their checks (`checked_field`): each runs, with the field's name, when
    the module is built, so a field and its rule are written once, together (and a rule shared by a family
    with the field that its abstract class declares)."""

    def __check_init__(self):
        for field in dataclasses.fields(self):
            if _declared_scalar(field):
                scalar(field.name, getattr(self, field.name), type(self).__name__)
            check = field.metadata.get("check")
            if check is not None:
                check(field.name, getattr(self, field.name))


_SCALAR_ANNOTATION = re.compile(r"""(Float|Int|Real|Shaped|Num|Inexact|Integer|Bool)\[\s*Array\s*,\s*(""|'')\s*\]""")


def _declared_scalar(field: dataclasses.Field) -> bool:
    """Whether ``field`` is declared a scalar array (``Float[Array, ""]``; a string under postponed annotations)."""
    if isinstance(field.type, str):
        return _SCALAR_ANNOTATION.fullmatch(field.type.strip()) is not None
    return getattr(field.type, "dim_str", None) == ""


def scalar(name: str, value: Any, owner: str) -> None:
    """``value`` is one number (shape ``()``), as ``owner``'s field ``name`` declares; traced values are skipped.

    A list or an array of values is refused in one line, which says how a grid of values is run instead.
    """
    if isinstance(value, jax.core.Tracer) or np.ndim(value) == 0:
        return
    raise ValueError(
        f"{name} must be one number, got shape {np.shape(value)} ({np.asarray(value).tolist()}); "
        f"for a grid of values use ocokit.stack([{owner}({name}=v, ...) for v in values]) with batched_learner=True"
    )


def array_arg(owner: str, name: str, value: Any, shape: tuple[int, ...]) -> jax.Array:
    """``value`` as a JAX array after checking its static shape and that its dtype is real and numeric.

    For the methods of a set (``owner`` is e.g. ``"L2Ball.project"``): checked when the call is traced, from
    the static shape, so it costs nothing in compiled code. A batch goes through ``jax.vmap``, never through
    implicit broadcasting.
    """
    got = tuple(np.shape(value))
    if got != tuple(shape):
        raise ValueError(f"{owner}: {name} must have shape {tuple(shape)}, got shape {got}")
    arr = value if isinstance(value, jax.Array) else jnp.asarray(value)
    if not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise ValueError(f"{owner}: {name} must be a real (float or integer) array, got dtype {arr.dtype}")
    return arr


def round_data_arrays(data: Any, name: str = "data") -> Any:
    """Per-round data as a pytree of JAX arrays sharing a leading round axis of length >= 1 (one line naming the
    first leaf that is not one: a scalar, a nested list of numbers, a length that differs from the others')."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(data)
    if not leaves:
        raise ValueError(f"{name} must be arrays whose leading axis indexes the rounds, got no array in {data!r}")
    arrays, first = [], None
    for path, leaf in leaves:
        where = name + jax.tree_util.keystr(path)
        arr = jnp.asarray(leaf)
        if arr.ndim == 0 or arr.shape[0] == 0:
            nested = isinstance(data, list | tuple) and all(np.ndim(v) == 0 for _, v in leaves)
            hint = "; a nested list of numbers is one array: pass jnp.asarray(...)" if nested else ""
            got = "a scalar" if arr.ndim == 0 else f"shape {arr.shape}"
            raise ValueError(f"{where} must be an array with a leading round axis of length >= 1, got {got}{hint}")
        if first is not None and arr.shape[0] != first[1]:
            raise ValueError(f"{where} has {arr.shape[0]} rounds (leading axis) but {first[0]} has {first[1]}")
        first = first or (where, arr.shape[0])
        arrays.append(arr)
    return jax.tree_util.tree_unflatten(treedef, arrays)


def real_array_result(what: str, expected: str, result: Any) -> Any:
    """``result`` (``jax.eval_shape`` of a user function) when it is one array of real values; else one line naming
    ``what``: a list or tuple of values (give one array: ``jnp.array([...])``) or complex values."""
    if not isinstance(result, jax.ShapeDtypeStruct):
        kind = f"a {type(result).__name__} of {len(result)} values" if isinstance(result, list | tuple) else "a pytree"
        raise ValueError(f"{what} must return one array, {expected}, got {kind}: build it with jnp.array([...])")
    if jnp.issubdtype(result.dtype, jnp.complexfloating):  # the engine would keep only its real part, silently
        raise ValueError(f"{what} must return real values, got dtype {result.dtype} (take jnp.real or jnp.abs of it)")
    return result


def memory_limit() -> int:
    """Bytes a run may fill with records: half the accelerator's memory, or half the host's physical memory."""
    stats = jax.devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"]) // 2
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # no sysconf: assume 16 GB
        return 8 * 2**30


def fits_in_memory(what: str, nbytes: float, reduce: str) -> None:
    """Refuse, before anything is allocated, ``what`` whose estimated size ``nbytes`` exceeds `memory_limit`."""
    limit = memory_limit()
    if nbytes > limit:
        raise ValueError(
            f"{what} would need about {_human(nbytes)} of memory, over the limit of {_human(limit)} "
            f"(half the memory of this machine or its accelerator); {reduce}"
        )


def _human(nbytes: float) -> str:
    """``nbytes`` in decimal units, e.g. ``"1.2 GB"``."""
    unit = 0
    while nbytes >= 1000 and unit < 5:
        nbytes, unit = nbytes / 1000, unit + 1
    return f"{nbytes:.3g} {('B', 'KB', 'MB', 'GB', 'TB', 'PB')[unit]}"


# --------------------------------------------------------------------------------------------------
# The engine's entry arguments: the horizon, the runs' keys, and whether a call fits in memory. Each public
# entry (``run``, ``sweep``, ``comparators``, ``Session``, the harness, the CLI) checks its arguments here, once.

MAX_T = 2**31 - 1
"""The longest horizon: rounds are counted in int32."""
_SEEDS = (-(2**63), 2**63 - 1)  # what jax.random.PRNGKey accepts
_KEYS_RULE = "a number of seeds (an integer >= 1), a non-empty list of integer seeds or a batch of PRNG keys"


def horizon(value: Any, name: str = "T") -> int:
    """A horizon: an integer in ``[1, MAX_T]`` as a Python ``int``."""
    return integer(name, value, 1, MAX_T)


def is_key_batch(keys: Any, single: bool = False) -> bool:
    """Whether ``keys`` is a PRNG key (``single``) or a batch of them: typed keys, or raw uint32 pairs."""
    if not isinstance(keys, jax.Array | np.ndarray):
        return False
    typed = jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
    ndim = keys.ndim - (0 if typed else 1)
    shaped = typed or (keys.dtype == np.uint32 and keys.ndim >= 1 and keys.shape[-1] == 2)
    return shaped and ndim == (0 if single else 1)


def key(value: Any) -> jax.Array:
    """One run's key: an integer seed (any integer type) or a PRNG key."""
    if is_key_batch(value, single=True):
        return value
    try:
        seed = integer("key", value, *_SEEDS)
    except ValueError:
        rule = "an integer seed in [-2**63, 2**63 - 1] or a PRNG key (jax.random.PRNGKey(seed))"
        raise ValueError(f"key must be {rule}, got {value!r}") from None
    return jax.random.PRNGKey(seed)


def count_keys(keys: Any) -> int:
    """The number S of runs ``keys`` asks for, after checking it (one line naming ``keys`` otherwise)."""
    if isinstance(keys, int | np.integer) and not isinstance(keys, bool):
        return integer("keys", keys, 1)
    if is_key_batch(keys):
        if keys.shape[0] < 1:
            raise ValueError(f"keys must be {_KEYS_RULE}, got an empty batch of keys")
        return int(keys.shape[0])
    if isinstance(keys, list | tuple | range) or (isinstance(keys, np.ndarray | jax.Array) and keys.ndim == 1):
        if len(keys) == 0:
            raise ValueError(f"keys must be {_KEYS_RULE}, got an empty {type(keys).__name__}")
        if getattr(keys, "dtype", None) == np.uint32 and len(keys) == 2:
            raise ValueError(f"keys must be {_KEYS_RULE}, got one PRNG key (use jax.random.split(key, S))")
        for i, seed in enumerate(keys if not isinstance(keys, range) else (keys[0], keys[-1])):
            try:
                integer("seed", seed, *_SEEDS)
            except ValueError as err:
                raise ValueError(f"keys[{i}] must be an integer seed in [-2**63, 2**63 - 1], got {seed!r}") from err
        return len(keys)
    raise ValueError(f"keys must be {_KEYS_RULE}, got {keys!r}")


def keys(value: Any) -> jax.Array:
    """A batch of PRNG keys from a count S (seeds ``0..S-1``), a list of seeds, or keys (checked first)."""
    count_keys(value)
    if is_key_batch(value):
        return value
    seeds = range(int(value)) if isinstance(value, int | np.integer) else value
    return jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])


def _nbytes(tree: Any) -> int:
    return sum(int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree))


def _footprint(problem: Any, T: int, comparators: bool) -> tuple[int, int, bool]:
    """Bytes of ``problem``'s episode and of one round's data, from shapes only (``jax.eval_shape``), and (with
    ``comparators``) whether its comparators hold every round's data (``best_fixed`` or ``round_optimum`` defined).
    A problem whose episode or rounds cannot be traced abstractly (host code) counts 0 bytes."""
    key0, t = jax.random.PRNGKey(0), jax.ShapeDtypeStruct((), jnp.int32)
    try:
        episode = jax.eval_shape(lambda k: problem.episode(k, T), key0)
        data = _nbytes(jax.eval_shape(lambda ep, t: problem.round_data(ep, key0, t), episode, t))
        held = comparators and (
            jax.eval_shape(lambda ep, t: problem.round_optimum(problem.round_data(ep, key0, t)), episode, t) is not None
            or jax.eval_shape(lambda ep: problem.best_fixed(ep, key0, T), episode) is not None
        )
    except Exception:  # a problem whose episode cannot be traced abstractly (host code): estimated without it
        return 0, 0, False
    return _nbytes(episode), data, held


def runs_fit(what: str, problem: Any, T: int, runs: int, chunk: int, decisions: bool, comparators: bool) -> None:
    """Refuse up front a call that would not fit in memory (instead of allocating until XLA fails).

    The estimate, from shapes only (nothing is compiled): the result holds ``runs`` x T rounds of records (the
    loss, the N constraint values, the two comparator losses if computed, the decision if recorded; not the
    learner's diagnostics); each of the ``chunk`` runs computed at once also holds its episode and, for the
    comparators, five times its round data per round (``best_fixed`` stacks every round's data; drawing it
    vmapped over the rounds peaks at about 4.4 times the data's size for
    [`TimeVaryingRegression`][ocokit.problems.TimeVaryingRegression]).
    """
    itemsize = 8 if jax.config.jax_enable_x64 else 4
    entries = int(np.prod(problem.domain.shape)) if decisions else 0
    values = 1 + problem.num_constraints + (2 if comparators else 0) + entries
    episode, data, held = _footprint(problem, T, comparators)
    records = float(T) * values * itemsize
    nbytes = runs * records + chunk * (records + (5.0 * T * data if held else 0.0) + episode)
    reduce = "use a smaller T" + (", fewer seeds per call or a smaller chunk_size" if runs > 1 else "")
    reduce += " (or record_decisions=False)" if decisions else ""
    fits_in_memory(f"{what} of {runs} run(s) x T = {T} rounds", nbytes, reduce)

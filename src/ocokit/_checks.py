"""Validation of user-supplied parameters (concrete values only; tracers are skipped).

Every check raises ``ValueError`` naming the parameter, the allowed range and the value received, so a
bad configuration fails before anything is compiled (DESIGN.md, Conventions).
"""

from __future__ import annotations

import dataclasses
import os
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
    """:func:`one_of` ``allowed``, as a check."""
    return lambda name, value: one_of(name, value, allowed)


def within(low: float, high: float) -> Check:
    """:func:`in_closed_interval` ``[low, high]``, as a check."""
    return lambda name, value: in_closed_interval(name, value, low, high)


def checked_field(check: Check | None = None, **kwargs: Any) -> Any:
    """An ``eqx.field(**kwargs)`` declaring its own ``check``, which :class:`Checked` runs on construction."""
    metadata = {**kwargs.pop("metadata", {}), **({} if check is None else {"check": check})}
    return eqx.field(metadata=metadata, **kwargs)


class Checked(eqx.Module):
    """A module whose fields declare their checks (:func:`checked_field`): each runs, with the field's name, when
    the module is built, so a field and its rule are written once, together (and a rule shared by a family
    with the field that its abstract class declares)."""

    def __check_init__(self):
        for field in dataclasses.fields(self):
            check = field.metadata.get("check")
            if check is not None:
                check(field.name, getattr(self, field.name))


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
    """Refuse, before anything is allocated, ``what`` whose estimated size ``nbytes`` exceeds :func:`memory_limit`."""
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

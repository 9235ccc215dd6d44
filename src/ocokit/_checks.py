"""Validation of user-supplied parameters (concrete values only; tracers are skipped).

Every check raises ``ValueError`` naming the parameter, the allowed range and the value received, so a
bad configuration fails before anything is compiled (DESIGN.md, Conventions).
"""

from __future__ import annotations

from typing import Any

import jax
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

"""Compiled programs and chunks of runs: what ``run``, ``sweep``, ``comparators`` and ``Session`` share.

Every program is ``eqx.filter_jit`` of an engine function, compiled with XLA's defaults unless the caller passes
``compiler_options`` (the library itself sets none): one computation gives one number, whichever entry point
(the Python API, the command line, a Ray worker) ran it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import PRNGKeyArray

Options = tuple[tuple[str, Any], ...]


def options(compiler_options: Mapping[str, Any] | None) -> Options:
    """``compiler_options`` (XLA option names to values, or ``None``) as sorted name-value pairs, checked."""
    if compiler_options is None:
        return ()
    if not isinstance(compiler_options, Mapping) or not all(isinstance(k, str) for k in compiler_options):
        raise ValueError(f"compiler_options must be a dict of XLA option names to values, got {compiler_options!r}")
    return tuple(sorted(compiler_options.items()))


@functools.cache
def program(fn: Callable, compiler_options: Options = ()) -> Callable:
    """``eqx.filter_jit(fn)`` with the XLA ``compiler_options`` (name-value pairs), one per function and options."""
    return eqx.filter_jit(fn, compiler_options=dict(compiler_options) or None)


def key_chunks(keys: PRNGKeyArray, size: int) -> list[tuple[PRNGKeyArray, int]]:
    """The keys in chunks of ``size`` consecutive keys, the last padded by wrapping around (every chunk has one
    shape: one compiled program), each with how many of its keys are real."""
    S = keys.shape[0]
    return [
        (keys if size == S else keys[np.arange(start, start + size) % S], min(size, S - start))  # one chunk: no gather
        for start in range(0, S, size)
    ]


def in_chunks(fn: Callable, keys: PRNGKeyArray, size: int) -> Any:
    """``fn`` on the keys in chunks of ``size`` (`key_chunks`), its outputs concatenated over the keys and
    trimmed to their number."""
    pieces = [jax.tree.map(lambda a, k=keep: a[:k], fn(chunk)) for chunk, keep in key_chunks(keys, size)]
    return pieces[0] if len(pieces) == 1 else jax.tree.map(lambda *xs: jnp.concatenate(xs), *pieces)

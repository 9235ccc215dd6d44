"""Best-of timings for the benchmark scripts: the candidates interleaved, so a slow spell of the machine hits all."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import NamedTuple


class Best(NamedTuple):
    """The fastest wall and CPU (process) times of a function's timed calls, in seconds (each minimum on its own)."""

    wall: float
    cpu: float


def best_of_each(
    fns: Mapping[str, Callable[[], object]],
    repeats: int,
    *,
    inner: Mapping[str, int] | None = None,
    warm_up: bool = True,
) -> dict[str, Best]:
    """The fastest call of each function over ``repeats`` turns, the functions interleaved within a turn.

    ``inner[name]`` calls of that function per turn (default 1), each timed; one untimed call of each first
    (compilation) unless ``warm_up=False``.
    """
    inner = inner or {}
    if warm_up:
        for fn in fns.values():
            fn()
    wall, cpu = dict.fromkeys(fns, float("inf")), dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            for _ in range(inner.get(name, 1)):
                tic, cpu_tic = time.perf_counter(), time.process_time()
                fn()
                wall[name] = min(wall[name], time.perf_counter() - tic)
                cpu[name] = min(cpu[name], time.process_time() - cpu_tic)
    return {name: Best(wall[name], cpu[name]) for name in fns}


def best_of(fn: Callable[[], object], repeats: int, *, warm_up: bool = True) -> Best:
    """:func:`best_of_each` for one function."""
    return best_of_each({"fn": fn}, repeats, warm_up=warm_up)["fn"]

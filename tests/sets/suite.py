"""The set suite's case type: each family's test file declares its ``SUITE_CASES`` with these.

``tests/sets/test_set_suite.py`` collects ``SUITE_CASES`` from every ``tests/sets/test_*.py`` and runs every
check on them, so adding a set touches its source file, its own test file and one export line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ocokit.sets import AbstractSet


@dataclasses.dataclass(frozen=True)
class Case:
    """One instance of a set under the suite's checks.

    Attributes:
        name: the case id.
        make: builds the instance.
        reference_min: ``min_{v in K} <d, v>`` in closed form, written from the set's definition (not the
            library), as a function of ``(K, d)``.
        gauge: the norm whose ball K is (so ``gauge(lmo(d)) == radius``), or ``None``.
        zero_sum_hull: K's affine hull is ``{x : sum x = const}`` (the probability simplex).
        lmo_rtol: relative accuracy of ``<d, lmo(d)>`` (iterative oracles are looser).
        proj_tol: accuracy of the projection (iterative projections are looser).
    """

    name: str
    make: Callable[[], AbstractSet]
    reference_min: Callable[[AbstractSet, np.ndarray], float]
    gauge: Callable[[np.ndarray], float] | None = None
    zero_sum_hull: bool = False
    lmo_rtol: float = 1e-12
    proj_tol: float = 1e-10


def lp_norm(x: np.ndarray, p: float) -> float:
    """``||x||_p``, computed stably (scaled by the largest entry)."""
    a = np.abs(np.ravel(x))
    top = a.max()
    return 0.0 if top == 0 else float(top * np.sum((a / top) ** p) ** (1 / p))

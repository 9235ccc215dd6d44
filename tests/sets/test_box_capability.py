"""The box capability: ``box_bounds()`` is declared by :class:`Box` (its bounds) and absent (``None``) elsewhere."""

from __future__ import annotations

import importlib
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ocokit.sets as S
from ocokit.sets import AbstractSet, Box

from .suite import Case


def _suite_cases() -> list[Case]:
    """``SUITE_CASES`` of every family test file in this folder: one instance or more of every exported set."""
    found = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.stem not in ("test_set_suite", Path(__file__).stem):
            found.extend(getattr(importlib.import_module(f"{__package__}.{path.stem}"), "SUITE_CASES", []))
    return found


CASES = _suite_cases()


def test_only_box_declares_the_capability():
    declaring = sorted(
        name
        for name in S.__all__
        if name != "AbstractSet" and getattr(S, name).box_bounds is not AbstractSet.box_bounds
    )
    assert declaring == ["Box"]
    assert {type(c.make()).__name__ for c in CASES} == set(S.__all__) - {"AbstractSet"}  # every set is seen below


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_box_bounds_of_every_suite_set(case):
    K = case.make()
    bounds = K.box_bounds()
    if isinstance(K, Box):
        lower, upper = bounds
        assert lower is K.lower and upper is K.upper
    else:
        assert bounds is None


_bounds = eqx.filter_jit(lambda K: K.box_bounds())
_project = eqx.filter_jit(lambda K, x: K.project(x))
_contains = eqx.filter_jit(lambda K, x: K.contains(x, 0.0))

_values = st.floats(-10.0, 10.0, allow_nan=False, allow_subnormal=False)
_widths = st.floats(1e-3, 10.0, allow_nan=False, allow_subnormal=False)


@settings(max_examples=30, deadline=None)
@given(
    lower=hnp.arrays(np.float64, 4, elements=_values),
    width=hnp.arrays(np.float64, 4, elements=_widths),
    x=hnp.arrays(np.float64, 4, elements=st.floats(-25.0, 25.0, allow_nan=False, allow_subnormal=False)),
    s=st.floats(0.05, 1.0),
)
def test_declared_bounds_describe_the_box(lower, width, x, s):
    # The declared (lower, upper) is the set: membership is lower <= x <= upper, the projection is the clip,
    # under jit too; the shrunk set declares its own bounds.
    K = Box(jnp.asarray(lower), jnp.asarray(lower + width))
    lo, hi = (np.asarray(b) for b in _bounds(K))
    np.testing.assert_array_equal(lo, np.asarray(K.lower))
    np.testing.assert_array_equal(hi, np.asarray(K.upper))
    np.testing.assert_array_equal(np.asarray(_project(K, jnp.asarray(x))), np.clip(x, lo, hi))
    assert bool(_contains(K, jnp.asarray(x))) == bool(np.all((x >= lo) & (x <= hi)))
    shrunk = K.scaled(s)
    s_lo, s_hi = shrunk.box_bounds()
    np.testing.assert_array_equal(np.asarray(s_lo), np.asarray(shrunk.lower))
    np.testing.assert_array_equal(np.asarray(s_hi), np.asarray(shrunk.upper))
    assert np.all(np.asarray(s_lo) >= lo - 1e-12) and np.all(np.asarray(s_hi) <= hi + 1e-12)

"""Every set's methods check what they receive: the shape and dtype kind (before tracing), and NaN propagation.

Property tests (hypothesis) over one small instance of every set: a wrong shape or a complex or boolean dtype
is a one-line ``ValueError`` naming the set, the method, the expected and the received shape (also under
``jit``), and a direction with a NaN or infinite entry never gives a finite vertex.
"""

from __future__ import annotations

import re

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ocokit.sets import Box, KSparsePolytope, L1Ball, L2Ball, LpBall, NuclearNormBall, Simplex

SETS = {
    "l2": L2Ball(3, radius=2.0),
    "l1": L1Ball(3),
    "lp": LpBall(3, p=1.5),
    "box": Box(-1.0, 2.0, dim=3),
    "simplex": Simplex(3),
    "capped_simplex": Simplex(3, capped=True),
    "ksparse": KSparsePolytope(4, K=2),
    "nuclear": NuclearNormBall((2, 3)),
}
METHODS = {
    "lmo": ("direction", lambda K, a: K.lmo(a)),
    "warm_lmo": ("direction", lambda K, a: K.warm_lmo(a, K.lmo_init())),
    "project": ("x", lambda K, a: K.project(a)),
    "contains": ("x", lambda K, a: K.contains(a)),
}


def _message(K, method: str, got: tuple[int, ...]) -> str:
    arg = METHODS[method][0]
    owner = "lmo" if method == "warm_lmo" and type(K).__name__ != "NuclearNormBall" else method
    return re.escape(f"{type(K).__name__}.{owner}: {arg} must have shape {K.shape}, got shape {got}")


@pytest.mark.parametrize("name", list(SETS))
@settings(max_examples=25, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5), method=st.sampled_from(list(METHODS)))
def test_wrong_shape_is_one_line_naming_set_method_and_shapes(name, shape, method):
    K = SETS[name]
    if shape == K.shape:
        shape = (*shape, 1)
    call = METHODS[method][1]
    with pytest.raises(ValueError, match=_message(K, method, shape)) as err:
        call(K, np.ones(shape))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", list(SETS))
def test_wrong_shape_fails_when_traced_under_jit_and_never_broadcasts(name):
    K = SETS[name]
    batch = jnp.ones((2, *K.shape))
    with pytest.raises(ValueError, match=_message(K, "project", batch.shape)):
        eqx.filter_jit(lambda K, x: K.project(x))(K, batch)  # no silent row-by-row projection
    with pytest.raises(ValueError, match=_message(K, "lmo", (1,))):
        K.lmo(jnp.ones(1))  # no broadcasting either


@pytest.mark.parametrize("name", list(SETS))
@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.bool_])
def test_complex_or_boolean_input_is_rejected(name, dtype):
    K = SETS[name]
    for arg, call in METHODS.values():
        with pytest.raises(ValueError, match=rf"{type(K).__name__}\.\w+: {arg} must be a real .* got dtype"):
            call(K, jnp.ones(K.shape, dtype))


@eqx.filter_jit
def _lmo_project_contains(K, direction, x):
    return K.lmo(direction), K.warm_lmo(direction, K.lmo_init())[0], K.project(x), K.contains(x)


@pytest.mark.parametrize("name", list(SETS))
@settings(max_examples=10, deadline=None)
@given(data=st.data(), bad=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_direction_never_gives_a_finite_vertex(name, data, bad):
    K = SETS[name]
    size = int(np.prod(K.shape))
    values = data.draw(hnp.arrays(np.float64, size, elements=st.floats(-10, 10)))
    index = data.draw(st.integers(0, size - 1))
    direction = values.copy()
    direction[index] = bad
    x = values.copy()
    x[index] = np.nan
    vertex, warm_vertex, projected, inside = _lmo_project_contains(
        K, jnp.asarray(direction.reshape(K.shape)), jnp.asarray(x.reshape(K.shape))
    )
    assert np.isnan(vertex).any() and np.isnan(warm_vertex).any()
    assert np.isnan(projected).any()
    assert not bool(inside)
    finite_vertex = _lmo_project_contains(K, jnp.asarray(values.reshape(K.shape)), jnp.zeros(K.shape))[0]
    assert np.all(np.isfinite(finite_vertex)) and bool(K.contains(finite_vertex, atol=1e-6))

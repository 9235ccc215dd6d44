"""The set suite (STYLE.md §3.6), generated over a registry of instances of every set.

Every family's test file declares ``SUITE_CASES`` (instances with their closed-form references, see
``tests/sets/suite.py``); this suite collects them all and puts each through every check here.
Family-specific references (linprog, CVXPY, a full SVD, exact vertices, warm starts) live in the family's
own test file.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ocokit.sets as S
from ocokit.sets import AbstractSet

from .suite import Case


def _collect() -> list[Case]:
    """``SUITE_CASES`` of every family test file in this folder (each declares its own instances)."""
    found = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.stem != "test_set_suite":
            found.extend(getattr(importlib.import_module(f"{__package__}.{path.stem}"), "SUITE_CASES", []))
    return found


# Instances of one class share a dimension on purpose: their radii (and p) are leaves, so they share one
# compilation per jitted helper, which keeps the suite fast and exercises "no recompilation".
CASES = _collect()
IDS = [c.name for c in CASES]
NORM_CASES = [c for c in CASES if c.gauge is not None]


def _reference_min(case: Case, K: AbstractSet, d: np.ndarray) -> float:
    return case.reference_min(K, np.asarray(d, dtype=float))


_warm_lmo = eqx.filter_jit(lambda K, d, state: K.warm_lmo(d, state))
_project = eqx.filter_jit(lambda K, x: K.project(x))
_contains_jit = eqx.filter_jit(lambda K, x, atol: K.contains(x, atol))


def _contains(K: AbstractSet, x: jax.Array, atol: float) -> jax.Array:
    return _contains_jit(K, x, jnp.asarray(atol))  # atol as an array: one compilation for every atol


def _lmo(K: AbstractSet, d: jax.Array) -> jax.Array:
    """The cold LMO, through the jitted ``warm_lmo`` (what ``lmo`` is): one compilation per set."""
    return _warm_lmo(K, d, K.lmo_init())[0]


@eqx.filter_jit
def _batched(K, ds, xs, factors):
    """vmap over inputs, and over a batch of sets (one per shrink factor) for the first direction."""
    over_inputs = jax.vmap(lambda d, x: (K.lmo(d), K.project(x), K.contains(x, 1e-9)))(ds, xs)
    over_sets = jax.vmap(lambda s: K.scaled(s).lmo(ds[0]))(factors)
    return over_inputs, over_sets


def _rng(case: Case, salt: int = 0) -> np.random.Generator:
    return np.random.default_rng([sum(map(ord, case.name)), salt])


def _hull_direction(case: Case, K: AbstractSet, rng: np.random.Generator) -> np.ndarray:
    """A random unit direction of K's affine hull (zero-sum for the probability simplex)."""
    u = rng.standard_normal(K.shape)
    if case.zero_sum_hull:
        u = u - u.mean()
    return u / np.linalg.norm(u)


def _points_in(case: Case, K: AbstractSet, rng: np.random.Generator, n: int = 24) -> np.ndarray:
    """Points of K built without ``project``: the centre, the inner ball, convex combinations of vertices."""
    c = np.asarray(K.center())
    rho = float(K.inner_radius)
    inner = [c + rho * rng.uniform(0, 1) * _hull_direction(case, K, rng) for _ in range(n // 2)]
    vertices = np.stack([np.asarray(_lmo(K, jnp.asarray(rng.standard_normal(K.shape)))) for _ in range(8)])
    combos = [np.tensordot(rng.dirichlet(np.ones(8) * 0.3), vertices, axes=1) for _ in range(n // 2)]
    return np.stack([c, *inner, *combos, *vertices])


def _scale(K: AbstractSet) -> float:
    return float(K.diameter) + float(np.abs(np.asarray(K.center())).max()) + 1.0


def _directions(shape: tuple[int, ...]):
    floats = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False)
    return hnp.arrays(np.float64, shape, elements=floats)


def test_every_exported_set_has_suite_cases():
    registered = {type(c.make()).__name__ for c in CASES}
    assert registered == set(S.__all__) - {"AbstractSet"}, "declare SUITE_CASES in the set's test file"
    for name in S.__all__:
        assert getattr(S, name).__doc__, name


# --------------------------------------------------------------------------------------------------- lmo


@pytest.mark.parametrize("case", CASES, ids=IDS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_lmo_feasible_and_minimal(case, data):
    K = case.make()
    d = data.draw(_directions(K.shape))
    v = np.asarray(_lmo(K, jnp.asarray(d)))
    assert np.all(np.isfinite(v))
    assert bool(_contains(K, jnp.asarray(v), 1e-9))
    points = _points_in(case, K, _rng(case))
    tol = 1e-9 * (1 + np.abs(d).sum()) * _scale(K) + case.lmo_rtol * abs(_reference_min(case, K, d))
    assert np.vdot(d, v) <= np.min(np.tensordot(points, d, axes=d.ndim)) + tol  # a flipped sign fails here
    assert np.vdot(d, v) == pytest.approx(_reference_min(case, K, d), rel=max(case.lmo_rtol, 1e-12), abs=tol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lmo_zero_direction_is_a_deterministic_point_of_K(case):
    K = case.make()
    v1 = np.asarray(_lmo(K, jnp.zeros(K.shape)))
    v2 = np.asarray(_lmo(K, -jnp.zeros(K.shape)))
    assert np.all(np.isfinite(v1))
    assert bool(_contains(K, jnp.asarray(v1), 1e-12))
    np.testing.assert_array_equal(v1, v2)


@pytest.mark.parametrize("case", NORM_CASES, ids=[c.name for c in NORM_CASES])
def test_norm_ball_lmo_lies_on_the_sphere(case):
    K = case.make()
    gauge = case.gauge
    rng = _rng(case, 1)
    for d in [rng.standard_normal(K.shape) * 10.0**k for k in (-6, 0, 6)] + [np.zeros(K.shape)]:
        v = np.asarray(_lmo(K, jnp.asarray(d)))
        assert gauge(v) == pytest.approx(float(K.radius), rel=1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_warm_lmo_matches_lmo_and_keeps_its_state_shape(case):
    K = case.make()
    state = K.lmo_init()
    rng = _rng(case, 2)
    d_before, d = (jnp.asarray(rng.standard_normal(K.shape)) for _ in range(2))
    _, state_after_one_call = _warm_lmo(K, d_before, state)
    v, new_state = _warm_lmo(K, d, state_after_one_call)  # a warm start changes the cost, not the answer
    np.testing.assert_allclose(v, _lmo(K, d), atol=1e-6 * float(K.diameter))
    shapes = jax.tree.map(lambda a: (a.shape, a.dtype), (state,))
    assert jax.tree.map(lambda a: (a.shape, a.dtype), (new_state,)) == shapes
    calls = K.lmo_calls(new_state)
    assert calls.dtype == jnp.int32 and int(calls) >= 1


# ---------------------------------------------------------------------------------------------- project


def _outside_points(K: AbstractSet, rng: np.random.Generator, n: int = 10) -> np.ndarray:
    c = np.asarray(K.center())
    return np.stack([c + rng.standard_normal(K.shape) * _scale(K) * 10.0 ** rng.uniform(-1, 1) for _ in range(n)])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_project_is_the_euclidean_projection(case):
    K = case.make()
    rng = _rng(case, 3)
    xs = _outside_points(K, rng)
    us = _points_in(case, K, rng)
    tol = case.proj_tol * _scale(K) ** 2
    ps = np.stack([np.asarray(_project(K, jnp.asarray(x))) for x in xs])
    for x, p in zip(xs, ps, strict=True):
        assert bool(_contains(K, jnp.asarray(p), 1e-9)), "projected point not in K"
        np.testing.assert_allclose(_project(K, jnp.asarray(p)), p, atol=case.proj_tol * _scale(K))  # idempotent
        vi = np.tensordot(us - p, x - p, axes=x.ndim)  # <x - P(x), u - P(x)> <= 0 for every u in K
        assert vi.max() <= tol * (1 + np.linalg.norm(x - p))
    for i in range(len(xs) - 1):  # non-expansive
        assert np.linalg.norm(ps[i] - ps[i + 1]) <= np.linalg.norm(xs[i] - xs[i + 1]) * (1 + 1e-12) + tol


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_project_fixes_points_of_K(case):
    K = case.make()
    for u in _points_in(case, K, _rng(case, 4)):
        np.testing.assert_allclose(_project(K, jnp.asarray(u)), u, atol=case.proj_tol * _scale(K))


# --------------------------------------------------------------------------------------------- geometry


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_contains_accepts_K_and_rejects_points_pushed_out(case):
    K = case.make()
    rng = _rng(case, 5)
    c = np.asarray(K.center())
    assert bool(K.contains(jnp.asarray(c)))
    for _ in range(5):
        v = np.asarray(_lmo(K, jnp.asarray(rng.standard_normal(K.shape))))  # an extreme point
        assert bool(_contains(K, jnp.asarray(v), 1e-9))
        assert not bool(_contains(K, jnp.asarray(c + 1.01 * (v - c)), 1e-9))
    far = np.asarray(_outside_points(K, rng, 1)[0])
    assert bool(_contains(K, _project(K, jnp.asarray(far)), 1e-9))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_inner_ball_and_diameter(case):
    K = case.make()
    rng = _rng(case, 6)
    c, rho, diam = np.asarray(K.center()), float(K.inner_radius), float(K.diameter)
    assert rho > 0 and diam >= 2 * rho * (1 - 1e-12)
    for _ in range(20):  # the inner ball (within the affine hull for the simplex) lies in K
        assert bool(_contains(K, jnp.asarray(c + rho * _hull_direction(case, K, rng)), 1e-9))
    vertices = [np.asarray(_lmo(K, jnp.asarray(rng.standard_normal(K.shape)))) for _ in range(12)]
    widest = max(np.linalg.norm(a - b) for a in vertices for b in vertices)
    assert widest <= diam * (1 + 1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("s", [0.3, 1.0])
def test_scaled_is_the_shrunk_set(case, s):
    K = case.make()
    Ks = K.scaled(s)
    assert type(Ks) is type(K)
    c = np.asarray(K.center())
    np.testing.assert_allclose(Ks.center(), c, atol=1e-12)
    assert float(Ks.diameter) == pytest.approx(s * float(K.diameter), rel=1e-12)
    assert float(Ks.inner_radius) == pytest.approx(s * float(K.inner_radius), rel=1e-12)
    rng = _rng(case, 7)
    for u in _points_in(case, K, rng, 6):
        assert bool(_contains(Ks, jnp.asarray(c + s * (u - c)), 1e-9))
    for _ in range(3):  # lmo over c + s (K - c) is c + s (lmo_K - c)
        d = jnp.asarray(rng.standard_normal(K.shape))
        expected = c + s * (np.asarray(_lmo(K, d)) - c)
        np.testing.assert_allclose(_lmo(Ks, d), expected, atol=1e-6 * float(K.diameter))


# ------------------------------------------------------------------------------------ jit, vmap, dtype


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_equals_a_loop(case):
    K = case.make()
    rng = _rng(case, 8)
    ds = jnp.asarray(rng.standard_normal((4, *K.shape)))
    xs = jnp.asarray(_outside_points(K, rng, 4))
    factors = [0.5, 0.75, 1.0]
    batched, batched_lmo = _batched(K, ds, xs, jnp.asarray(factors))
    for i in range(4):
        looped = (_lmo(K, ds[i]), _project(K, xs[i]), _contains(K, xs[i], 1e-9))
        for b, single in zip(batched, looped, strict=True):
            np.testing.assert_allclose(b[i], single, rtol=1e-10, atol=1e-12)
    for i, s in enumerate(factors):  # a batch of sets (several radii) vmaps like a batch of inputs
        np.testing.assert_allclose(batched_lmo[i], _lmo(K.scaled(s), ds[0]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float32_stays_float32(case):
    K = case.make()
    rng = _rng(case, 9)
    d = jnp.asarray(rng.standard_normal(K.shape), jnp.float32)
    x = jnp.asarray(_outside_points(K, rng, 1)[0], jnp.float32)
    v = _lmo(K, d)
    p = _project(K, x)
    assert v.dtype == jnp.float32 and p.dtype == jnp.float32
    d64 = np.asarray(d, np.float64)
    assert np.vdot(d64, np.asarray(v, np.float64)) == pytest.approx(_reference_min(case, K, d64), rel=1e-5, abs=1e-5)
    assert bool(_contains(K, v, 1e-5)) and bool(_contains(K, p, 1e-4 * _scale(K)))
    v_warm, state = _warm_lmo(K, d, K.lmo_init())
    assert v_warm.dtype == jnp.float32
    dtypes = jax.tree.map(lambda a: a.dtype, (K.lmo_init(),))
    assert jax.tree.map(lambda a: a.dtype, (state,)) == dtypes  # a learner's carry keeps its dtypes


def test_bad_scale_raises():
    for case in CASES:
        K = case.make()
        for s in (0.0, -0.5, 1.5):
            with pytest.raises(ValueError, match="s must be"):
                K.scaled(s)

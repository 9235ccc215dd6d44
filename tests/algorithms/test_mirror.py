"""Mirror geometries (Euclidean and entropic prox steps) and Hedge, against CVXPY and NumPy references."""

from __future__ import annotations

import math

import cvxpy as cp
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import EntropicGeometry, EuclideanGeometry, Hedge, MirrorProx, ProblemInfo
from ocokit.algorithms._mirror import entropic_prox, euclidean_prox, kl_divergence, mix_uniform
from ocokit.problems import CustomProblem, DriftingAllocation
from ocokit.sets import Box, L2Ball, Simplex

# ------------------------------------------------------------------------------------------------
# Prox steps: closed forms against the per-round subproblem solved by CVXPY.


@pytest.mark.parametrize("domain", [L2Ball(4, radius=0.7), Box(-0.5, 0.3, dim=4), Simplex(4)])
def test_euclidean_prox_solves_the_subproblem(domain):
    rng = np.random.default_rng(0)
    center = np.asarray(domain.project(jnp.asarray(rng.normal(size=4))))
    h, alpha = rng.normal(size=4) * 3, 2.5
    x = cp.Variable(4)
    if isinstance(domain, L2Ball):
        cons = [cp.norm(x) <= float(domain.radius)]
    elif isinstance(domain, Box):
        cons = [x >= np.asarray(domain.lower), x <= np.asarray(domain.upper)]
    else:
        cons = [x >= 0, cp.sum(x) == 1]
    cp.Problem(cp.Minimize(h @ x + alpha / 2 * cp.sum_squares(x - center)), cons).solve(solver="CLARABEL")
    got = euclidean_prox(domain, jnp.asarray(center), jnp.asarray(h), alpha)
    np.testing.assert_allclose(got, x.value, atol=1e-6)
    assert EuclideanGeometry().prox(domain, jnp.asarray(center), jnp.asarray(h), alpha).shape == (4,)


@pytest.mark.parametrize(("radius", "offset"), [(1.0, 0.0), (2.0, 0.0), (0.5, 0.3)])
def test_entropic_prox_solves_the_kl_subproblem(radius, offset):
    rng = np.random.default_rng(1)
    d = 5
    domain = Simplex(d, radius=radius, offset=offset)
    u = rng.dirichlet(np.ones(d)) * radius
    center, h, alpha = u + offset, rng.normal(size=d), 1.7
    got = np.asarray(entropic_prox(domain, jnp.asarray(center), jnp.asarray(h), alpha))

    x = cp.Variable(d)  # <h, x> + alpha sum_i (x_i - o) log((x_i - o) / (c_i - o))
    model = cp.Problem(
        cp.Minimize(h @ x + alpha * cp.sum(cp.rel_entr(x - offset, u))),
        [x >= offset, cp.sum(x - offset) == radius],
    )
    model.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    np.testing.assert_allclose(got, x.value, atol=1e-5)  # CLARABEL's exponential cone is this accurate
    # KKT: h_i + alpha log((x_i - o) / (c_i - o)) is the same for every i, and the mass is r
    stationarity = h + alpha * np.log((got - offset) / u)
    np.testing.assert_allclose(stationarity, stationarity.mean(), atol=1e-10)
    np.testing.assert_allclose(got.sum() - d * offset, radius, rtol=1e-12)


def test_entropic_prox_is_the_multiplicative_update_and_never_overflows():
    domain = Simplex(3)
    y = jnp.array([0.2, 0.3, 0.5])
    h = jnp.array([1.0, -2.0, 0.5])
    expected = np.asarray(y) * np.exp(-np.asarray(h) / 4.0)
    np.testing.assert_allclose(entropic_prox(domain, y, h, 4.0), expected / expected.sum(), rtol=1e-12)
    huge = entropic_prox(domain, y, jnp.array([1e6, -1e6, 0.0]), 1e-3)
    assert np.all(np.isfinite(huge)) and float(huge[1]) == pytest.approx(1.0)
    # a zero entry of the centre stays zero (and is not NaN)
    z = entropic_prox(domain, jnp.array([0.0, 0.5, 0.5]), jnp.array([-100.0, 0.0, 0.0]), 1.0)
    assert float(z[0]) == 0.0 and np.isclose(float(z.sum()), 1.0)


@given(nu=st.floats(1e-4, 1.0), seed=st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_mixing_keeps_every_entry_above_nu_over_d(nu, seed):
    d = 6
    x = jnp.asarray(np.random.default_rng(seed).dirichlet(np.ones(d) * 0.1))
    y = mix_uniform(Simplex(d), x, nu)
    assert float(y.min()) >= nu / d * (1 - 1e-12)
    assert float(y.sum()) == pytest.approx(1.0)


@given(seed=st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_kl_divergence_is_nonnegative_and_one_strongly_convex_in_l1(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    kl = float(kl_divergence(jnp.asarray(x), jnp.asarray(y)))
    assert kl >= 0.5 * np.abs(x - y).sum() ** 2 - 1e-12  # Pinsker: rho = 1 w.r.t. l1
    assert float(kl_divergence(jnp.asarray(x), jnp.asarray(x))) == pytest.approx(0.0, abs=1e-14)
    np.testing.assert_allclose(EntropicGeometry().divergence(jnp.asarray(x), jnp.asarray(y)), kl)


def test_geometry_constants_follow_the_spec_table():
    eu = EuclideanGeometry()
    assert float(eu.divergence_bound(L2Ball(3, radius=1.5))) == pytest.approx(2 * 1.5**2)  # 2 r^2
    box = Box(jnp.array([0.0, -1.0]), jnp.array([1.0, 2.0]))
    assert float(eu.divergence_bound(box)) == pytest.approx(0.5 * (1 + 9))  # ||u - l||^2 / 2
    assert float(eu.divergence_bound(Simplex(4))) == pytest.approx(1.0)
    assert eu.bounded and not EntropicGeometry().bounded
    assert math.isinf(EntropicGeometry().divergence_bound(Simplex(4)))
    v = jnp.array([3.0, -4.0])
    assert float(eu.dual_norm(v)) == 5.0 and float(EntropicGeometry().dual_norm(v)) == 4.0
    assert float(EntropicGeometry().norm(v)) == 7.0


@pytest.mark.parametrize("domain", [Box(0.0, 1.0, dim=3), Simplex(3, capped=True), L2Ball(3)])
def test_entropic_geometry_rejects_sets_other_than_the_simplex(domain):
    with pytest.raises(ValueError, match="probability simplex"):
        EntropicGeometry().check_domain(domain)


def test_mirror_prox_rejects_an_unbounded_divergence():
    problem = DriftingAllocation(dim=3)
    learner = MirrorProx(gamma=1.0, eta=1.0, L_f=0.0, L_g=0.0, G=1.0, H=1.0, geometry=EntropicGeometry())
    with pytest.raises(ValueError, match=r"Assumption 2\.3"):
        learner.init(ProblemInfo.of(problem, 10), None)


# ------------------------------------------------------------------------------------------------
# Hedge.


def reference_hedge(grads, d, eta, nu=0.0, decay="constant"):
    """Exponentiated gradient from Kivinen-Warmuth, in NumPy, with uniform mixing."""
    x = np.full(d, 1.0 / d)
    xs = []
    for t, grad in enumerate(grads, start=1):
        xs.append(x.copy())
        step = eta if decay == "constant" else eta / math.sqrt(t)
        w = x * np.exp(-step * grad(x))
        x = (1 - nu) * w / w.sum() + nu / d
    return np.array(xs)


def _quadratic_simplex_problem(T=25, d=4, seed=0):
    targets = np.random.default_rng(seed).dirichlet(np.ones(d), size=T)
    problem = CustomProblem(domain=Simplex(d), loss=lambda b, x: 0.5 * jnp.sum((x - b) ** 2), data=jnp.asarray(targets))
    return problem, [lambda x, b=b: x - b for b in targets]


@pytest.mark.parametrize(("eta", "nu", "decay"), [(0.8, 0.0, "constant"), (2.0, 0.05, "inverse_sqrt")])
def test_hedge_matches_the_numpy_reference_iterate_by_iterate(eta, nu, decay):
    problem, grads = _quadratic_simplex_problem()
    traj = ocokit.run(Hedge(eta=eta, nu=nu, decay=decay), problem, T=25, record_decisions=True)
    np.testing.assert_allclose(traj.decisions, reference_hedge(grads, 4, eta, nu, decay), rtol=1e-10)


def _linear(c, x):
    return c @ x


@given(seed=st.integers(0, 1000))
@settings(max_examples=10, deadline=None)
def test_hedge_meets_its_regret_bound_on_linear_losses(seed):
    """Regret <= ln(d)/eta + (eta/2) sum_t ||l_t||_inf^2 <= F sqrt(2 T ln d) with eta from from_theory."""
    T, d = 60, 5
    costs = np.random.default_rng(seed).uniform(-1, 1, size=(T, d))
    problem = CustomProblem(domain=Simplex(d), loss=_linear, data=jnp.asarray(costs))
    learner = Hedge.from_theory(ProblemInfo.of(problem, T), grad_bound=1.0)
    traj = ocokit.run(learner, problem, T=T)
    regret = float(traj.loss.sum()) - costs.sum(axis=0).min()
    assert regret <= math.sqrt(2 * T * math.log(d)) + 1e-9
    assert float(learner.eta) == pytest.approx(math.sqrt(2 * math.log(d) / T))


def test_hedge_rejects_bad_hyperparameters_and_sets():
    with pytest.raises(ValueError, match="eta"):
        Hedge(eta=0.0)
    with pytest.raises(ValueError, match="nu"):
        Hedge(eta=1.0, nu=1.0)
    with pytest.raises(ValueError, match="decay"):
        Hedge(eta=1.0, decay="fast")
    problem = CustomProblem(domain=Box(0.0, 1.0, dim=2), loss=lambda c, x: c @ x, data=jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="simplex"):
        Hedge.from_theory(ProblemInfo.of(problem, 3), grad_bound=1.0)

"""OFW (Hazan-Kale), OFW with line search and SC-OFW (paper 001) against NumPy references from the spec."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import OFW, OGD, SCOFW, OFWLineSearch, ProblemInfo
from ocokit.feedback import FullInformation
from ocokit.problems import CustomProblem, OnlineLinear, OnlineQuadratic, ProblemConstants
from ocokit.sets import Box, L1Ball, L2Ball

from ..helpers import BoxLike

DIM = 4
T_SMALL = 60


# ------------------------------------------------------------------------------------------------
# NumPy references (spec paper001.md §2.1, §2.2, §2.5; Hazan-Kale OFW of §2.1 "Original OFW").


def np_lmo(domain, c):
    """argmin_{v in K} <c, v> for the sets used here, written independently of the library."""
    if isinstance(domain, Box):
        return np.where(c > 0, np.asarray(domain.lower), np.asarray(domain.upper))
    r = float(domain.radius)
    if isinstance(domain, L2Ball):
        n = np.linalg.norm(c)
        return -r * c / n if n > 0 else r * np.eye(c.size)[0]
    if isinstance(domain, L1Ball):
        i = int(np.argmax(np.abs(c)))
        v = np.zeros_like(c)
        v[i] = -r * np.sign(c[i]) if c[i] != 0 else r
        return v
    raise NotImplementedError(type(domain))


def np_project_l2(y, r):
    n = np.linalg.norm(y)
    return y if n <= r else y * (r / n)


def reference_ofw(domain, grad, T, *, eta, rule, sigma0=2.0, lagged=False):
    """Algorithm 1 of 001 (``rule="line_search"``) or Hazan-Kale OFW (``rule="decay"``)."""
    x1 = np.asarray(domain.center(), dtype=float)
    x, S = x1.copy(), np.zeros_like(x1)
    xs, steps = [], []
    for t in range(1, T + 1):
        xs.append(x.copy())
        S_prev, S = S, S + grad(t, x)
        c = eta * (S_prev if lagged else S) + 2.0 * (x - x1)
        v = np_lmo(domain, c)
        d = v - x
        dd = d @ d
        if rule == "line_search":
            sigma = min(max((c @ (x - v)) / (2.0 * dd), 0.0), 1.0) if dd > 0 else 0.0
        else:
            sigma = min(1.0, sigma0 / math.sqrt(t))
        steps.append(sigma)
        x = x + sigma * d
    return np.array(xs), np.array(steps)


def reference_scofw(domain, grad, T, *, lam):
    """Algorithm 2 of 001 in the paper's un-normalised form: c_t = S_t + lam (t x_t - P_t)."""
    x = np.asarray(domain.center(), dtype=float)
    S, P = np.zeros_like(x), np.zeros_like(x)
    xs, steps = [], []
    for t in range(1, T + 1):
        xs.append(x.copy())
        S, P = S + grad(t, x), P + x
        c = S + lam * (t * x - P)
        v = np_lmo(domain, c)
        d = v - x
        dd = d @ d
        sigma = min(max((c @ (x - v)) / (lam * t * dd), 0.0), 1.0) if dd > 0 else 0.0
        steps.append(sigma)
        x = x + sigma * d
    return np.array(xs), np.array(steps)


# ------------------------------------------------------------------------------------------------
# Fixed small sequences: f_t(x) = <a_t, x> + (lam_t / 2) ||x - z_t||^2 (linear when lam_t = 0). One
# module-level loss function, so every test on a given set class reuses one compiled run.


def _loss(data, x):
    return jnp.dot(data["a"], x) + 0.5 * data["lam"] * jnp.sum((x - data["z"]) ** 2)


def fixed_problem(domain, a, z, lam):
    T = a.shape[0]
    data = {"a": jnp.asarray(a), "z": jnp.asarray(z), "lam": jnp.full((T,), float(lam))}
    problem = CustomProblem(domain=domain, loss=_loss, data=data)
    return problem, (lambda t, x: a[t - 1] + lam * (x - z[t - 1]))


def linear_problem(domain, T=T_SMALL, seed=0):
    a = np.asarray(jax.random.normal(jax.random.PRNGKey(seed), (T, DIM))) + np.array([1.0, -0.5, 0.3, 0.0])
    return fixed_problem(domain, a, np.zeros_like(a), 0.0)


def quadratic_problem(domain, lam=1.0, T=T_SMALL, seed=1):
    z = np.asarray(jax.random.normal(jax.random.PRNGKey(seed), (T, DIM))) + np.array([2.0, 0.0, -1.0, 0.5])
    return fixed_problem(domain, np.zeros_like(z), z, lam)


DOMAINS = {
    "box": lambda: Box(-1.0, 1.0, dim=DIM),
    "l2ball": lambda: L2Ball(DIM, radius=1.5),
    "l1ball": lambda: L1Ball(DIM, radius=1.0),
}
LOSSES = {"linear": linear_problem, "quadratic": quadratic_problem}


def _assert_in_set(domain, xs):
    assert bool(jnp.all(jax.vmap(lambda x: domain.contains(x, atol=1e-9))(jnp.asarray(xs))))


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize(
    ("rule", "domain"),
    [
        ("line_search", "box"),
        ("line_search", "l2ball"),
        ("line_search", "l1ball"),
        ("decay", "l2ball"),
        ("decay", "l1ball"),
    ],
)
def test_ofw_matches_numpy_reference_iterate_by_iterate(rule, domain, loss):
    problem, grad = LOSSES[loss](DOMAINS[domain]())
    eta = 0.07
    learner = OFWLineSearch(eta=eta) if rule == "line_search" else OFW(eta=eta, sigma0=1.5)
    traj = ocokit.run(learner, problem, T_SMALL, 0, record_decisions=True)
    xs, steps = reference_ofw(problem.domain, grad, T_SMALL, eta=eta, rule=rule, sigma0=1.5)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(traj.diagnostics["step"]), steps, rtol=0, atol=1e-10)
    _assert_in_set(problem.domain, traj.decisions)
    if rule == "decay":  # Hazan-Kale's schedule sigma_t = min(1, sigma0 / sqrt(t))
        np.testing.assert_allclose(steps, np.minimum(1.0, 1.5 / np.sqrt(np.arange(1, T_SMALL + 1))))


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("domain", ["l2ball", "l1ball"])
def test_scofw_matches_numpy_reference_iterate_by_iterate(domain, loss):
    lam = 1.0
    problem, grad = LOSSES[loss](DOMAINS[domain]())
    traj = ocokit.run(SCOFW(lam=lam), problem, T_SMALL, 0, record_decisions=True)
    xs, steps = reference_scofw(problem.domain, grad, T_SMALL, lam=lam)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(traj.diagnostics["step"]), steps, rtol=0, atol=1e-10)
    _assert_in_set(problem.domain, traj.decisions)


def test_hazan_kale_lagged_surrogate_reading():
    problem, grad = linear_problem(DOMAINS["l2ball"]())
    traj = ocokit.run(OFW(eta=0.07, surrogate="previous"), problem, T_SMALL, 0, record_decisions=True)
    xs, _ = reference_ofw(problem.domain, grad, T_SMALL, eta=0.07, rule="decay", lagged=True)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=0, atol=1e-10)
    current, _ = reference_ofw(problem.domain, grad, T_SMALL, eta=0.07, rule="decay")
    assert not np.allclose(xs[2:], current[2:])  # the two readings differ


def test_pinned_first_iterates_of_ofw_line_search_on_the_l2_ball():
    """A tiny trace pinned as literals (hand-checkable: a_t = (1, 0), (0, 1), (1, 1) over the unit ball)."""
    a = np.zeros((T_SMALL, DIM))
    a[:3, :2] = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    problem, _ = fixed_problem(L2Ball(DIM, radius=1.0), a, np.zeros_like(a), 0.0)
    traj = ocokit.run(OFWLineSearch(eta=0.5), problem, T_SMALL, 0, record_decisions=True)
    # Round 1: c = 0.5 (1, 0), v = (-1, 0), gap = 0.5, ||d||^2 = 1 -> sigma = 0.25, x_2 = (-0.25, 0).
    # Round 2: c = 0.5 (1, 1) + 2 (-0.25, 0) = (0, 0.5), v = (0, -1); d = (0.25, -1), gap = 0.5,
    #          ||d||^2 = 1.0625 -> sigma = 0.5 / 2.125, x_3 = (-0.25, 0) + sigma d.
    s2 = 0.5 / 2.125
    expected = np.array([[0.0, 0.0], [-0.25, 0.0], [-0.25 + 0.25 * s2, -s2]])
    np.testing.assert_allclose(np.asarray(traj.decisions)[:3, :2], expected, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(traj.decisions)[:3, 2:], 0.0)


# ------------------------------------------------------------------------------------------------
# The line search is the exact minimiser of the surrogate on [x_t, v_t] (brute force over sigma).


def _surrogates(kind, problem, grad, xs, eta, lam):
    """F_t as Python closures built from the definitions (eqs. 3 and 5 of 001), never from c_t."""
    x1 = xs[0]
    grads = np.array([grad(t, xs[t - 1]) for t in range(1, len(xs) + 1)])

    def F(t, y):
        S = grads[:t].sum(axis=0)
        if kind == "ofw":
            return eta * S @ y + np.sum((y - x1) ** 2)
        return S @ y + 0.5 * lam * np.sum((y[None, :] - xs[:t]) ** 2)

    def c(t, y):
        S = grads[:t].sum(axis=0)
        if kind == "ofw":
            return eta * S + 2.0 * (y - x1)
        return S + lam * (t * y - xs[:t].sum(axis=0))

    return F, c


@pytest.mark.parametrize("domain", ["l2ball", "l1ball"])
@pytest.mark.parametrize("kind", ["ofw", "scofw"])
def test_line_search_step_is_the_exact_minimiser_along_the_segment(kind, domain):
    eta, lam = 0.1, 0.5
    problem, grad = quadratic_problem(DOMAINS[domain](), lam=lam)
    learner = OFWLineSearch(eta=eta) if kind == "ofw" else SCOFW(lam=lam)
    T = T_SMALL
    traj = ocokit.run(learner, problem, T, 0, record_decisions=True)
    xs = np.asarray(traj.decisions)
    steps = np.asarray(traj.diagnostics["step"])
    F, c = _surrogates(kind, problem, grad, xs, eta, lam)
    grid = np.linspace(0.0, 1.0, 20001)
    for t in range(1, T):
        x_t, x_next = xs[t - 1], xs[t]
        d = np_lmo(problem.domain, c(t, x_t)) - x_t
        values = np.array([F(t, x_t + s * d) for s in grid[::50]])  # coarse scan, then refine locally
        s0 = grid[::50][int(np.argmin(values))]
        fine = grid[(grid >= s0 - 0.0025) & (grid <= s0 + 0.0025)]
        s_best = fine[int(np.argmin([F(t, x_t + s * d) for s in fine]))]
        assert 0.0 <= steps[t - 1] <= 1.0
        assert abs(steps[t - 1] - s_best) <= 1e-4, (t, steps[t - 1], s_best)
        np.testing.assert_allclose(x_next, x_t + steps[t - 1] * d, atol=1e-10)
        assert F(t, x_next) <= F(t, x_t + s_best * d) + 1e-10  # nothing on the grid beats sigma_t
        assert F(t, x_next) <= F(t, x_t) + 1e-12  # the surrogate never increases


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), eta=st.floats(1e-3, 2.0))
def test_ofw_line_search_never_increases_the_surrogate(seed, eta):
    problem, grad = linear_problem(DOMAINS["l2ball"](), seed=seed)
    traj = ocokit.run(OFWLineSearch(eta=eta), problem, T_SMALL, 0, record_decisions=True)
    xs = np.asarray(traj.decisions)
    F, _ = _surrogates("ofw", problem, grad, xs, eta, 0.0)
    for t in range(1, T_SMALL):
        assert F(t, xs[t]) <= F(t, xs[t - 1]) + 1e-10
    assert np.all(np.linalg.norm(xs, axis=1) <= 1.5 + 1e-9)


# ------------------------------------------------------------------------------------------------
# Lemmas 1 and 2 on the Euclidean ball, with the closed-form surrogate minimisers of spec §2.5.


def test_lemma1_ofw_line_search_tracks_the_surrogate_minimiser_on_the_l2_ball():
    r, T = 1.5, T_SMALL
    problem, grad = linear_problem(L2Ball(DIM, radius=r), seed=7)
    a = np.array([grad(t, np.zeros(DIM)) for t in range(1, T + 1)])
    D, G, alpha_K = 2 * r, np.linalg.norm(a, axis=1).max(), 1.0 / r
    eta = D / (2 * G * (T + 2) ** (2 / 3))  # Theorem 1's step
    traj = ocokit.run(OFWLineSearch(eta=eta), problem, T, 0, record_decisions=True)
    xs = np.asarray(traj.decisions)
    x1 = xs[0]
    C = max(4 * D**2, 4096 / (3 * alpha_K**2))
    ratios = []
    for t in range(2, T + 1):  # h_t = F_{t-1}(x_t) - F_{t-1}(x_t^*), x_t^* = Pi_K(x_1 - eta S_{t-1} / 2)
        S = a[: t - 1].sum(axis=0)
        x_star = np_project_l2(x1 - eta * S / 2, r)

        def F(y, S=S):
            return eta * S @ y + np.sum((y - x1) ** 2)

        h = F(xs[t - 1]) - F(x_star)
        eps = C / (t + 2) ** (2 / 3)
        assert h >= -1e-9
        assert h <= eps
        ratios.append(h / eps)
    # Far inside the lemma (the spec's simulation, §5, saw 1e-4); a wrong sign or step would not be.
    assert max(ratios) < 1e-2


def test_lemma2_scofw_error_stays_below_the_constant_on_the_l2_ball():
    r, lam, T = 1.5, 1.0, T_SMALL
    problem, grad = quadratic_problem(L2Ball(DIM, radius=r), lam=lam, seed=3)
    traj = ocokit.run(SCOFW(lam=lam), problem, T, 0, record_decisions=True)
    xs = np.asarray(traj.decisions)
    grads = np.array([grad(t, xs[t - 1]) for t in range(1, T + 1)])
    z = xs - grads / lam
    D, alpha_K = 2 * r, 1.0 / r
    G = lam * (r + np.linalg.norm(z, axis=1).max())  # max_{x in K} ||lam (x - z_t)||
    C = max(4 * (G + lam * D) ** 2 / lam, 288 * lam / alpha_K**2)
    worst = 0.0
    for t in range(2, T + 1):  # x_t^* = Pi_K((P_{t-1} - S_{t-1} / lam) / (t - 1))
        S, P = grads[: t - 1].sum(axis=0), xs[: t - 1].sum(axis=0)
        x_star = np_project_l2((P - S / lam) / (t - 1), r)

        def F(y, S=S, t=t):
            return S @ y + 0.5 * lam * np.sum((y[None, :] - xs[: t - 1]) ** 2)

        h = F(xs[t - 1]) - F(x_star)
        assert -1e-7 <= h <= C
        assert np.linalg.norm(xs[t - 1] - x_star) <= math.sqrt(2 * C / ((t - 1) * lam)) + 1e-9
        worst = max(worst, h / C)
    assert worst < 0.05  # the spec's simulation (§5) saw 2e-3


# ------------------------------------------------------------------------------------------------
# Feasibility, warm-started LMO state, theory defaults, validation.


class _CountingBox(BoxLike):
    """A box whose warm-start LMO state counts calls (checks that learners carry the state)."""

    def lmo_init(self):
        return jnp.asarray(0, jnp.int32)

    def warm_lmo(self, direction, state):
        return self.box.lmo(direction), state + 1

    def lmo_calls(self, state):
        return state


@pytest.mark.parametrize("learner", [OFW(eta=0.1), OFWLineSearch(eta=0.1), SCOFW(lam=1.0)])
def test_the_warm_lmo_state_is_carried_from_round_to_round(learner):
    problem = OnlineLinear(_CountingBox(Box(-1.0, 1.0, dim=3)))
    info = ProblemInfo.of(problem, 5)
    state = learner.init(info, jax.random.PRNGKey(0))
    episode = problem.episode(jax.random.PRNGKey(1), 5)
    update = eqx.filter_jit(lambda s, x, data: learner.update(s, x, FullInformation(problem, data)))
    for t in range(1, 6):
        data = problem.round_data(episode, jax.random.PRNGKey(t), t)
        state = update(state, learner.decide(state), data)
        # lmo_calls(state) reports the carried counter: it has seen every previous call.
        assert int(learner.diagnostics(state)["lmo_iterations"]) == t
        assert int(learner.diagnostics(state)["oracle_calls"]) == 1


def test_works_on_matrix_decisions_with_a_nuclear_norm_ball():
    K = ocokit.sets.NuclearNormBall((4, 3), radius=1.0)
    problem = OnlineLinear(K)
    traj = ocokit.run(OFWLineSearch(eta=0.1), problem, 8, 0, record_decisions=True)
    assert traj.decisions.shape == (8, 4, 3)
    assert bool(jnp.all(jax.vmap(lambda x: K.contains(x, atol=1e-6))(traj.decisions)))
    # x_1 = 0 and each round mixes in one rank-one vertex: rank(x_t) <= t - 1.
    ranks = [np.linalg.matrix_rank(x, tol=1e-9) for x in np.asarray(traj.decisions)]
    assert all(rank <= t for t, rank in enumerate(ranks))
    assert ranks[1] == 1


def test_from_theory_uses_the_theorems_parameters():
    T = 100
    problem = OnlineLinear(L2Ball(3, radius=1.0), drift=1.0, noise=1.0)
    info = ProblemInfo.of(problem, T)
    D, G = 2.0, 2.0
    assert float(OFWLineSearch.from_theory(info).eta) == pytest.approx(D / (2 * G * (T + 2) ** (2 / 3)))
    hk = OFW.from_theory(info)
    assert float(hk.eta) == pytest.approx(D / (2 * G * T**0.75))
    assert float(hk.sigma0) == 2.0
    assert float(OFWLineSearch.from_theory(info, eta=0.3).eta) == pytest.approx(0.3)
    quad = OnlineQuadratic(L2Ball(3), lam=0.7)
    assert float(SCOFW.from_theory(ProblemInfo.of(quad, T)).lam) == pytest.approx(0.7)
    assert float(SCOFW.from_theory(ProblemInfo.of(quad, T), lam=0.2).lam) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: OFWLineSearch(eta=0.0), "eta"),
        (lambda: OFWLineSearch(eta=-1.0), "eta"),
        (lambda: OFW(eta=0.1, sigma0=0.0), "sigma0"),
        (lambda: OFW(eta=float("nan")), "eta"),
        (lambda: OFW(eta=0.1, surrogate="lagged"), "surrogate"),
        (lambda: SCOFW(lam=0.0), "lam"),
        (lambda: SCOFW(lam=-2.0), "lam"),
        (lambda: OFWLineSearch(eta=jnp.array([0.1, -0.1])), "eta"),
    ],
)
def test_bad_hyperparameters_raise_value_error(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_from_theory_needs_the_constants_it_uses():
    no_G = CustomProblem(domain=L2Ball(2), loss=lambda c, x: jnp.dot(c, x), data=jnp.ones((3, 2)))
    info = ProblemInfo.of(no_G, 10)
    for cls in (OFW, OFWLineSearch):
        with pytest.raises(ValueError, match="grad_bound"):
            cls.from_theory(info)
    with pytest.raises(ValueError, match="strong_convexity"):
        SCOFW.from_theory(info)
    merely_convex = CustomProblem(
        domain=L2Ball(2),
        loss=lambda c, x: jnp.dot(c, x),
        data=jnp.ones((3, 2)),
        constants=ProblemConstants(grad_bound=1.0, strong_convexity=0.0),
    )
    with pytest.raises(ValueError, match="strong_convexity"):
        SCOFW.from_theory(ProblemInfo.of(merely_convex, 10))


def test_regret_bounds_match_the_spec_arithmetic():
    # Spec strongly_convex_sets.md §4.3: Euclidean ball, r = G = 1, T = 1000 -> Theorem 1 gives about 10,175.
    unit = ProblemInfo.of(OnlineLinear(L2Ball(5, radius=1.0), drift=0.5, noise=0.5), 1000)
    assert OFWLineSearch.regret_bound(unit) == pytest.approx(10175, rel=1e-3)
    assert OFW.regret_bound(unit) == pytest.approx(8 * 2 * 1 * 1000**0.75)
    assert OFWLineSearch.regret_bound(ProblemInfo.of(OnlineLinear(L1Ball(5)), 1000)) is None  # not strongly convex
    assert SCOFW.regret_bound(unit) is None  # linear losses: lam = 0
    quad = OnlineQuadratic(L1Ball(5, radius=1.0), lam=1.0, offset=2.0, noise=1.0)
    G, D = quad.constants().grad_bound, 2.0
    C = 16 * (G + D) ** 2
    expected = 3 * math.sqrt(2) * C * 1000 ** (2 / 3) / 8 + C * math.log(1000) / 8 + G * D
    assert SCOFW.regret_bound(ProblemInfo.of(quad, 1000)) == pytest.approx(expected)
    assert OGD.regret_bound(unit) is None  # no theorem declared

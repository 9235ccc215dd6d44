"""The TVC family of paper 000 against slow NumPy references written from spec paper000.md §2-§3.

Each learner is run by the engine on a small L2-ball problem (two linear constraints, reduced by their max)
and on a small nuclear-norm-ball matrix-completion problem, and compared iterate by iterate with a NumPy loop
that follows the spec's pseudo-code; the same runs check that every decision lies in K and the paper's
invariants (the queue is the CCV of the max constraint, the doubling estimate only grows, restarts re-centre).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import BFWTVC, OFWTVC, SCBFWTVC, SCOFWTVC, ProblemInfo
from ocokit.algorithms._bandit_tvc import _direction
from ocokit.algorithms._tvc_common import double_until, lyapunov, lyapunov_prime, queue_step
from ocokit.feedback import FullInformation, one_point_sphere_estimate
from ocokit.problems import (
    CustomProblem,
    OnlineMatrixCompletion,
    ProblemConstants,
    synthetic_low_rank_ratings,
)
from ocokit.sets import L2Ball

SEED = 7

# --------------------------------------------------------------------------------------------------
# Small problems and their NumPy loss / constraint functions.


def l2_problem(dim=4, radius=2.0):
    """``f_t = 1/2 ||x - c_t||^2``, ``g_t = A_t x - b_t`` (2 rows) over the L2 ball; 0 is always feasible."""

    def sampler(key, t):
        k1, k2, k3 = jax.random.split(key, 3)
        return {
            "c": 0.8 + 0.5 * jax.random.normal(k1, (dim,)),
            "a": jax.random.uniform(k2, (2, dim)),
            "b": 0.2 * jax.random.uniform(k3, (2,)),
        }

    constants = ProblemConstants(
        grad_bound=radius + 3.0, loss_bound=0.5 * (radius + 3.0) ** 2, constraint_grad_bound=math.sqrt(dim),
        strong_convexity=1.0,
    )  # fmt: skip
    return CustomProblem(
        domain=L2Ball(dim, radius=radius),
        loss=lambda d, x: 0.5 * jnp.sum((x - d["c"]) ** 2),
        constraints=lambda d, x: d["a"] @ x - d["b"],
        sampler=sampler,
        constants=constants,
    )


L2_FUNCTIONS = {
    "f": lambda d, x: 0.5 * np.sum((x - d["c"]) ** 2),
    "grad_f": lambda d, x: x - d["c"],
    "g": lambda d, x: d["a"] @ x - d["b"],
    "jac": lambda d, x: d["a"],
}


def matrix_problem():
    ratings = synthetic_low_rank_ratings(5, 4, rank=2, n_obs=12, seed=3)
    return OnlineMatrixCompletion(ratings, radius=3.0, sampling="entry", lmo_tol=1e-13)


def _matrix_functions(problem):
    users, items, values = (np.asarray(a) for a in (problem.users, problem.items, problem.ratings))

    def grad_f(d, x):
        out = np.zeros_like(x)
        np.add.at(
            out,
            (users[d["index"]], items[d["index"]]),
            x[users[d["index"]], items[d["index"]]] - values[d["index"]],
        )
        return out

    return {
        "f": lambda d, x: 0.5 * np.sum((x[users[d["index"]], items[d["index"]]] - values[d["index"]]) ** 2),
        "grad_f": grad_f,
        "g": lambda d, x: np.array([np.sum(d["PT"] * x)]),
        "jac": lambda d, x: d["PT"][None],
    }


def lmo_l2(radius):
    return lambda d: -radius * d / np.linalg.norm(d)


def lmo_nuclear(radius):
    def lmo(d):
        if not np.any(d):
            out = np.zeros_like(d)
            out[0, 0] = radius
            return out
        U, _, Vt = np.linalg.svd(d)
        return -radius * np.outer(U[:, 0], Vt[0])

    return lmo


def numpy_rounds(problem, T, seed=SEED):
    """Round t's data exactly as the engine draws it (``fold_in(env_key, t)``), as NumPy."""
    env_key, _ = ocokit.engine.split_key(jax.random.PRNGKey(seed))
    ts = jnp.arange(1, T + 1)
    data = jax.jit(jax.vmap(lambda t: problem.round_data(None, jax.random.fold_in(env_key, t), t)))(ts)
    data = jax.tree.map(np.asarray, data)
    return [jax.tree.map(lambda a, i=i: a[i], data) for i in range(T)]


def learner_key(seed=SEED):
    return ocokit.engine.split_key(jax.random.PRNGKey(seed))[1]


def phi_prime(phi, x, lam):
    if phi == "exp":
        return lam * np.exp(lam * x)
    return {"square_plus_linear": 2 * x + 1, "square": 2 * x, "linear": 1.0}[phi]


def max_constraint(fns, d, x):
    values = fns["g"](d, x)
    n = int(np.argmax(values))
    return values[n], fns["jac"](d, x)[n]


def run(learner, problem, T):
    """The engine's run, checking that every decision lies in K (l2 norm or sum of singular values)."""
    traj = ocokit.run(learner, problem, T, SEED, record_decisions=True)
    xs = np.asarray(traj.decisions)
    size = np.linalg.svd(xs, compute_uv=False).sum(axis=-1) if xs.ndim == 3 else np.linalg.norm(xs, axis=-1)
    assert np.all(size <= float(problem.domain.radius) * (1 + 1e-12)), "a decision left K"
    return traj


def directions(T, shape):
    """The learners' u_1..u_T (:func:`_direction` of the learner key), the bandit references' randomness."""
    ts = jnp.arange(1, T + 1)
    return np.asarray(jax.jit(jax.vmap(lambda t: _direction(learner_key(), t, jnp.zeros(shape))))(ts))


# --------------------------------------------------------------------------------------------------
# NumPy references (spec §3.1-3.5, line by line).


def ofw_tvc_reference(lrn, fns, lmo, rounds, x1, sum_index="current", doubling="analytic"):
    x, Q, Gt, s, S, anchor = x1, 0.0, 1.0, 1, np.zeros_like(x1), x1
    beta, gamma, eta, G, lam = (float(v) for v in (lrn.beta, lrn.gamma, lrn.eta, lrn.G, lrn.lam))
    out = {"x": [], "Gt": [], "s": [], "Q": []}
    for t, d in enumerate(rounds, 1):
        out["x"].append(x)
        gval, grad_g = max_constraint(fns, d, x)
        Q += max(0.0, gval)
        w = phi_prime(lrn.phi, beta * Q, lam)
        grad = gamma * beta * fns["grad_f"](d, x) + w * beta * (grad_g if gval > 0 else 0.0)
        bound = beta * G * (gamma + w) if doubling == "analytic" else np.linalg.norm(grad)
        restarted = False
        while Gt < bound:  # Steps 5-7
            Gt, restarted = 2 * Gt, True
        if restarted:  # s_{k+1} = t: the new epoch starts at t, re-centred at x_t
            s, S, anchor = t, np.zeros_like(x), x
        previous = S
        S = S + grad
        gradF = Gt**-1 * eta * (S if sum_index == "current" else previous) + 2 * (x - anchor)
        v = lmo(gradF)
        x = x + min(1.0, 2 / math.sqrt(t - s + 1)) * (v - x)
        out["Gt"].append(Gt), out["s"].append(s), out["Q"].append(Q)
    return {k: np.array(v) for k, v in out.items()}


def scofw_tvc_reference(lrn, fns, lmo, rounds, x1):
    x, Q, S, X = x1, 0.0, np.zeros_like(x1), np.zeros_like(x1)
    beta, gamma, alpha = float(lrn.beta), float(lrn.gamma), float(lrn.alpha_f)
    C1 = gamma * beta * alpha / 2
    out = {"x": [], "step": [], "F_along": []}
    for t, d in enumerate(rounds, 1):
        out["x"].append(x)
        gval, grad_g = max_constraint(fns, d, x)
        Q += max(0.0, gval)
        w = phi_prime(lrn.phi, beta * Q, None)
        grad = gamma * beta * fns["grad_f"](d, x) + w * beta * (grad_g if gval > 0 else 0.0)
        S, X = S + grad, X + x
        gradF = S + 2 * C1 * (t * x - X)  # eq. (15)
        v = lmo(gradF)
        direction = v - x
        dd = np.sum(direction**2)
        sigma = 0.0 if dd == 0 else float(np.clip(-np.sum(gradF * direction) / (2 * C1 * t * dd), 0, 1))
        # F_t^sc along the segment, up to a constant (for the brute-force line-search check)
        out["F_along"].append((np.sum(gradF * direction), C1 * t * dd))
        out["step"].append(sigma)
        x = x + sigma * direction
    return {k: np.array(v) for k, v in out.items()}


def bfw_tvc_reference(lrn, fns, lmo_shrunk, rounds, y1, shape, reference_inner):
    y, Q, acc, lin, anchor, Gt = y1, 0.0, np.zeros(shape), np.zeros(shape), y1, 1.0
    delta, beta, gamma = float(lrn.delta), float(lrn.beta), float(lrn.gamma)
    d_dim = math.prod(shape)
    out = {"x": [], "calls": [], "Gt": []}
    us = directions(len(rounds), shape)
    for t, d in enumerate(rounds, 1):
        u = us[t - 1]
        x = y + delta * u  # eq. (20)
        out["x"].append(x)
        gval = np.max(fns["g"](d, x))
        Q += max(0.0, gval)
        w = phi_prime(lrn.phi, beta * Q, float(lrn.lam))
        value = gamma * beta * fns["f"](d, x) + w * beta * max(0.0, gval)  # tilde f_t(x_t)
        acc = acc + (d_dim / delta) * value * u  # eq. (21), summed over the block
        calls = 0
        if t % lrn.block == 0:
            y, lin, anchor, Gt, calls = reference_inner(y, acc, lin, anchor, Gt, w, lmo_shrunk, t)
            acc = np.zeros(shape)
        out["calls"].append(calls), out["Gt"].append(Gt)
    return {k: np.array(v) for k, v in out.items()}


def bfw_inner(lrn):
    beta, gamma, G, eta, eps = (float(v) for v in (lrn.beta, lrn.gamma, lrn.G, lrn.eta, lrn.epsilon))

    def inner(y, acc, lin, anchor, Gt, w, lmo, t):
        restarted = False
        while Gt < beta * G * (gamma + w):  # Step 8, with Q_t of the block's last round
            Gt, restarted = 2 * Gt, True
        if restarted:  # b_k = m: re-anchor at hat y_m, the sum restarts with hat nabla_m
            lin, anchor = np.zeros_like(lin), y
        lin = lin + acc
        z, calls = y, 0
        while True:  # Steps 13-18: FW with exact line search until the gap is small
            gradF = (eta / Gt) * lin + 2 * (z - anchor)
            v = lmo(gradF)
            calls += 1
            gap = np.sum(gradF * (z - v))
            dvec = v - z
            dd = np.sum(dvec**2)
            z = z + (0.0 if dd == 0 else float(np.clip(gap / (2 * dd), 0, 1))) * dvec
            if gap <= eps or calls >= lrn.max_inner:
                break
        return z, lin, anchor, Gt, calls

    return inner


def scbfw_inner(lrn, literal=False):
    curvature = float(lrn.gamma) * float(lrn.beta) * float(lrn.alpha_f)

    def inner(y, acc, lin, anchor, Gt, w, lmo, t):
        lin = lin + acc - (0.0 if literal else curvature * lrn.block * y)  # eq. (27) with the shift
        C3 = curvature * t / 2
        z = y
        for _ in range(lrn.inner_steps):  # eqs. (28)-(30)
            gradF = lin + 2 * C3 * z
            dvec = lmo(gradF) - z
            dd = np.sum(dvec**2)
            z = z + (0.0 if dd == 0 else float(np.clip(-np.sum(gradF * dvec) / (2 * C3 * dd), 0, 1))) * dvec
        return z, lin, anchor, Gt, lrn.inner_steps

    return inner


# --------------------------------------------------------------------------------------------------
# The shared queue / Lyapunov machinery.


@pytest.mark.parametrize(
    ("phi", "x", "value", "slope"),
    [("exp", 2.0, math.exp(1.0) - 1, 0.5 * math.exp(1.0)), ("square_plus_linear", 3.0, 12.0, 7.0),
     ("square", 3.0, 9.0, 6.0), ("linear", 3.0, 3.0, 1.0)],
)  # fmt: skip
def test_lyapunov_functions(phi, x, value, slope):
    lam = 0.5
    np.testing.assert_allclose(lyapunov(phi, x, lam), value, rtol=1e-12)
    np.testing.assert_allclose(lyapunov_prime(phi, x, lam), slope, rtol=1e-12)
    xs = jnp.linspace(0.0, 5.0, 11)
    assert float(lyapunov(phi, 0.0, lam)) == 0.0  # Definition 1: Phi(0) = 0, Phi >= 0, Phi' >= 0 non-decreasing
    assert np.all(np.diff(np.asarray(lyapunov_prime(phi, xs, lam))) >= 0) and np.all(lyapunov(phi, xs, lam) >= 0)
    # the derivative is the derivative (central differences)
    h = 1e-6
    np.testing.assert_allclose((lyapunov(phi, x + h, lam) - lyapunov(phi, x - h, lam)) / (2 * h), slope, rtol=1e-6)


def test_exp_lyapunov_stays_finite_and_queue_adds_positive_parts():
    assert np.isfinite(float(lyapunov_prime("exp", 1e12, 1.0)))
    Q, w = queue_step(jnp.asarray(2.0), jnp.asarray(-1.0), 0.5, "square", 1.0)
    assert float(Q) == 2.0 and float(w) == 2.0  # g < 0 leaves Q; w = Phi'(beta Q) = 2 * 0.5 * 2
    Q, w = queue_step(Q, jnp.asarray(1.5), 0.5, "square", 1.0)
    assert float(Q) == 3.5 and float(w) == 3.5


@settings(max_examples=200, deadline=None)
@given(st.integers(-3, 12), st.floats(0.0, 1e9, allow_nan=False))
def test_doubling_reaches_the_bound_with_the_fewest_doublings(j, bound):
    G0 = 2.0**j
    G1 = float(double_until(jnp.asarray(G0), jnp.asarray(bound)))
    k = math.log2(G1 / G0)
    assert G1 >= G0 and G1 >= bound and k == round(k)  # only grows, by powers of two, to the bound
    assert G1 == G0 or G1 / 2 < bound  # and no further


# --------------------------------------------------------------------------------------------------
# The learners against their references.


def test_ofw_tvc_matches_reference_doubles_and_recentres():
    problem, T = l2_problem(), 40
    info = ProblemInfo.of(problem, T)
    learner = OFWTVC.from_theory(info, beta=1.0, G=3.0, lam=0.2)  # large beta: several doublings
    traj = run(learner, problem, T)
    ref = ofw_tvc_reference(learner, L2_FUNCTIONS, lmo_l2(2.0), numpy_rounds(problem, T), np.zeros(4))
    np.testing.assert_allclose(traj.decisions, ref["x"], rtol=1e-9, atol=1e-12)
    Gt, s = np.asarray(traj.diagnostics["G_tilde"]), np.asarray(traj.diagnostics["epoch_start"])
    np.testing.assert_array_equal(Gt, ref["Gt"])
    np.testing.assert_array_equal(s, ref["s"])
    restarts = np.flatnonzero(np.diff(np.concatenate([[1.0], Gt])) > 0) + 1  # rounds that doubled
    assert len(restarts) >= 3, "the instance must exercise several restarts"
    assert np.all(np.diff(Gt) >= 0)  # the estimate only grows
    np.testing.assert_array_equal(s[restarts - 1], restarts)  # a restart at t starts the epoch at t
    # the queue is the CCV of the max constraint (eq. 4)
    ccv = np.cumsum(np.maximum(np.asarray(traj.constraints).max(axis=1), 0))
    np.testing.assert_allclose(traj.diagnostics["queue"], ccv, rtol=1e-12)


def test_ofw_tvc_restart_recentres_the_regulariser_at_the_played_point():
    problem = l2_problem()
    info = ProblemInfo.of(problem, 10)
    learner = OFWTVC.from_theory(info, beta=1.0, G=3.0, lam=0.2)
    rounds = numpy_rounds(problem, 3)
    feedback = [FullInformation(problem, jax.tree.map(jnp.asarray, d)) for d in rounds]
    update = eqx.filter_jit(lambda lrn, s, x, fb: lrn.update(s, x, fb))
    state = learner.init(info, learner_key())
    for t in (1, 2):
        state = update(learner, state, learner.decide(state), feedback[t - 1])
    x3 = learner.decide(state)
    assert float(state.G_tilde) > 1 and int(state.epoch_start) == 1 and np.any(np.asarray(x3) != 0)
    # a huge G forces a doubling at round 3: the epoch restarts at t = 3, anchored at the played x_3
    forced = OFWTVC.from_theory(info, beta=1.0, G=1e6, lam=0.2)
    new = update(forced, state, x3, feedback[2])
    assert float(new.G_tilde) > float(state.G_tilde) and int(new.epoch_start) == 3
    np.testing.assert_array_equal(new.player.anchor, x3)
    # the gradient sum restarts with round 3's surrogate gradient (eq. 6), computed here by hand
    x, d = np.asarray(x3), rounds[2]
    gval, grad_g = max_constraint(L2_FUNCTIONS, d, x)
    Q = float(state.queue) + max(gval, 0.0)
    w = 0.2 * math.exp(0.2 * Q)
    grad = (x - d["c"]) + w * (grad_g if gval > 0 else 0.0)
    np.testing.assert_allclose(new.player.linear, grad, rtol=1e-12)
    # the step counter restarts: sigma = min(1, 2/sqrt(1)) = 1, so x_4 = v_3 = lmo(eta_k grad + 2 (x_3 - x_3))
    np.testing.assert_allclose(new.player.x, lmo_l2(2.0)(grad), rtol=1e-12)


@pytest.mark.slow
def test_ofw_tvc_lagged_observed_on_the_nuclear_ball():
    problem, T = matrix_problem(), 25
    info = ProblemInfo.of(problem, T)
    learner = OFWTVC.from_theory(info, beta=1e-2, sum_index="lagged", doubling="observed")
    traj = run(learner, problem, T)
    fns = _matrix_functions(problem)
    rounds = numpy_rounds(problem, T)
    ref = ofw_tvc_reference(learner, fns, lmo_nuclear(3.0), rounds, np.zeros((5, 4)), "lagged", "observed")
    np.testing.assert_allclose(traj.decisions, ref["x"], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(traj.diagnostics["G_tilde"], ref["Gt"])


@pytest.mark.parametrize("kind", [pytest.param("l2", marks=pytest.mark.slow), "nuclear"])
def test_scofw_tvc_matches_reference_and_its_line_search_is_exact(kind):
    problem, T = (l2_problem(), 30) if kind == "l2" else (matrix_problem(), 25)
    info = ProblemInfo.of(problem, T)
    learner = SCOFWTVC.from_theory(info, alpha_f=1.0, beta=0.05 if kind == "l2" else 0.5, gamma=1.0)
    traj = run(learner, problem, T)
    fns, lmo, x1 = (L2_FUNCTIONS, lmo_l2(2.0), np.zeros(4)) if kind == "l2" else (
        _matrix_functions(problem), lmo_nuclear(3.0), np.zeros((5, 4)))  # fmt: skip
    ref = scofw_tvc_reference(learner, fns, lmo, numpy_rounds(problem, T), x1)
    np.testing.assert_allclose(traj.decisions, ref["x"], rtol=1e-7, atol=1e-9)
    steps = np.asarray(traj.diagnostics["step"])
    np.testing.assert_allclose(steps, ref["step"], rtol=1e-6, atol=1e-9)
    grid = np.linspace(0.0, 1.0, 100_001)  # brute-force minimiser of F_t^sc along [x_t, v_t]
    for (lin, quad), step in zip(ref["F_along"], steps, strict=True):
        along = lin * grid + quad * grid**2
        assert lin * step + quad * step**2 <= along.min() + 1e-12 * (abs(lin) + quad)
        assert abs(grid[np.argmin(along)] - step) <= 2e-5
    assert 0 < np.count_nonzero((steps > 0) & (steps < 1)), "the line search must be interior sometimes"


@pytest.mark.parametrize("kind", ["l2", pytest.param("nuclear", marks=pytest.mark.slow)])
def test_bfw_tvc_matches_reference(kind):
    if kind == "l2":
        problem, T, shape, lmo, fns = l2_problem(), 36, (4,), lmo_l2, L2_FUNCTIONS
        overrides = {"beta": 0.5, "G": 3.0, "lam": 0.3, "block": 4, "epsilon": 1e-3}
    else:
        problem, T, shape, lmo = matrix_problem(), 24, (5, 4), lmo_nuclear
        fns = _matrix_functions(problem)
        overrides = {"beta": 1e-2, "block": 3, "epsilon": 1e-4, "max_inner": 4}
    info = ProblemInfo.of(problem, T)
    learner = BFWTVC.from_theory(info, **overrides)
    traj = run(learner, problem, T)
    radius = 2.0 if kind == "l2" else 3.0
    r = float(problem.domain.inner_radius)
    lmo_shrunk = lmo(radius * (1 - float(learner.delta) / r))
    ref = bfw_tvc_reference(learner, fns, lmo_shrunk, numpy_rounds(problem, T), np.zeros(shape), shape,
                            bfw_inner(learner))  # fmt: skip
    np.testing.assert_allclose(traj.decisions, ref["x"], rtol=1e-7, atol=1e-9)
    calls = np.asarray(traj.diagnostics["oracle_calls"])
    np.testing.assert_array_equal(calls, ref["calls"])
    ends = np.arange(1, T + 1) % learner.block == 0
    assert np.all(calls[~ends] == 0) and np.all((calls[ends] >= 1) & (calls[ends] <= learner.max_inner))
    np.testing.assert_array_equal(traj.diagnostics["G_tilde"], ref["Gt"])
    if kind == "l2":
        assert len(np.unique(ref["Gt"])) >= 3, "the instance must exercise restarts"
    else:
        assert calls.max() == learner.max_inner, "the instance must exercise the safety cap"


@pytest.mark.parametrize(
    ("kind", "surrogate"), [("l2", "shifted"), pytest.param("nuclear", "literal", marks=pytest.mark.slow)]
)
def test_scbfw_tvc_matches_reference(kind, surrogate):
    if kind == "l2":
        problem, T, shape, lmo, fns = l2_problem(), 30, (4,), lmo_l2, L2_FUNCTIONS
    else:
        problem, T, shape, lmo = matrix_problem(), 24, (5, 4), lmo_nuclear
        fns = _matrix_functions(problem)
    info = ProblemInfo.of(problem, T)
    learner = SCBFWTVC.from_theory(info, alpha_f=1.0, theory="statement", block=3, inner_steps=2,
                                   surrogate=surrogate)  # fmt: skip
    traj = run(learner, problem, T)
    radius = 2.0 if kind == "l2" else 3.0
    lmo_shrunk = lmo(radius * (1 - float(learner.delta) / float(problem.domain.inner_radius)))
    ref = bfw_tvc_reference(learner, fns, lmo_shrunk, numpy_rounds(problem, T), np.zeros(shape), shape,
                            scbfw_inner(learner, literal=surrogate == "literal"))  # fmt: skip
    np.testing.assert_allclose(traj.decisions, ref["x"], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(traj.diagnostics["oracle_calls"], ref["calls"])


def test_one_point_estimator_is_unbiased_for_a_linear_function():
    dim, delta, n = 6, 0.3, 100_000
    a, b, y = jnp.arange(1.0, dim + 1.0) / dim, 0.7, jnp.full((dim,), 0.1)

    def estimate(t):
        u = _direction(jax.random.PRNGKey(11), t, y)  # the learners' u_t
        return one_point_sphere_estimate(jnp.dot(a, y + delta * u) + b, u, delta)

    samples = np.asarray(jax.jit(jax.vmap(estimate))(jnp.arange(n)))
    directions = jax.vmap(lambda t: _direction(jax.random.PRNGKey(11), t, y))(jnp.arange(9))
    norms = np.linalg.norm(np.asarray(directions), axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    stderr = samples.std(axis=0) / math.sqrt(n)
    assert np.all(np.abs(samples.mean(axis=0) - np.asarray(a)) <= 5 * stderr)  # E = grad of the linear f


# --------------------------------------------------------------------------------------------------
# Theory defaults and validation.


def test_from_theory_follows_the_theorems():
    problem, T = l2_problem(), 256
    info = ProblemInfo.of(problem, T)
    G, D = 5.0, 4.0  # max(grad_bound, constraint_grad_bound), diameter
    ofw = OFWTVC.from_theory(info)
    np.testing.assert_allclose([ofw.beta, ofw.gamma, ofw.eta, ofw.G, ofw.lam],
                               [1 / (64 * G * D), 1.0, D / (2 * T**0.75), G, 0.5 * T**-0.75])  # fmt: skip
    sc = SCOFWTVC.from_theory(info)  # alpha_f from the problem's strong_convexity = 1
    np.testing.assert_allclose([sc.beta, sc.gamma], [1 / (500 * G * T ** (2 / 3) * (G + D)), G / (G + D)])
    assert sc.phi == "square_plus_linear"
    np.testing.assert_allclose(SCOFWTVC.from_theory(info, theory="statement").beta, 1 / (G * D * T ** (2 / 3)))
    bfw = BFWTVC.from_theory(info, c=1.0)
    M, d, r = 0.5 * 25.0, 4, 2.0
    C2 = 16 * G * (D / r + 3 + 1 + 2 * D / (d * M) + d * M * D)
    np.testing.assert_allclose([bfw.beta, bfw.eta, bfw.delta, bfw.epsilon], [1 / C2, D / (d * M * T**0.75),
                               T**-0.25, 4 * D**2 / 16])  # fmt: skip
    assert bfw.block == 16
    scb = SCBFWTVC.from_theory(info, c=1.0)
    C3 = 8 + 3 + D / r + 12 * D
    np.testing.assert_allclose(
        [scb.beta, scb.gamma, scb.delta],
        [1.0, 16 * (8 * math.log(T ** (1 / 3)) + C3) * G**2 * T ** (2 / 3), T ** (-1 / 3)],
    )
    assert scb.block == scb.inner_steps == round(T ** (2 / 3)) and scb.phi == "square"
    assert OFWTVC.from_theory(info, beta=0.5, phi="linear").beta == 0.5  # every field can be overridden


def test_bad_parameters_raise_value_errors():
    info = ProblemInfo.of(l2_problem(), 16)
    with pytest.raises(ValueError, match="beta"):
        OFWTVC(beta=-1.0, gamma=1.0, eta=1.0, G=1.0, lam=1.0)
    with pytest.raises(ValueError, match="phi"):
        OFWTVC(beta=1.0, gamma=1.0, eta=1.0, G=1.0, lam=1.0, phi="cubic")
    with pytest.raises(ValueError, match="lam"):
        OFWTVC(beta=1.0, gamma=1.0, eta=1.0, G=1.0)  # exp needs its scale
    with pytest.raises(ValueError, match="G"):
        OFWTVC(beta=1.0, gamma=1.0, eta=1.0, lam=1.0)  # the analytic doubling test needs G
    with pytest.raises(ValueError, match="surrogate"):
        SCBFWTVC.from_theory(info, surrogate="other")
    with pytest.raises(ValueError, match="unknown parameters"):
        OFWTVC.from_theory(info, betta=1.0)
    with pytest.raises(ValueError, match="delta"):
        BFWTVC.from_theory(info, delta=5.0).init(info, learner_key())  # delta >= r = 2
    plain = ocokit.problems.TimeVaryingRegression()
    with pytest.raises(ValueError, match="strong_convexity"):
        SCOFWTVC.from_theory(ProblemInfo.of(plain, 16))  # not strongly convex and no alpha_f given

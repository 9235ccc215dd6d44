"""Algorithm 1 of paper 002 (OCO with memory and limited predictions) and its bandit subroutine.

The reference is a plain-Python loop written from spec paper002.md §2.2 (dict caches, lazy D^j_k), fed the
same directions as the learner (a pure function of the learner key and the absolute index).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import ocokit
from ocokit.algorithms import BanditOCOMemory, OCOMemoryLimitedPredictions, ProblemInfo
from ocokit.algorithms._smoothing_step import INIT_PERTURB, SmoothingStep, _direction, _slots, _stream
from ocokit.engine import split_key
from ocokit.feedback import direction_variance, make_feedback
from ocokit.problems import QuadraticWithMemory
from ocokit.sets import Box

PAPER = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-4, "x0": 0.5, "half_width": 2.0}


def paper_problem(**kw):
    return QuadraticWithMemory(Box(-5.0, 5.0, dim=1), memory=2, x0=0.5, **kw)


def boxed_problem(**kw):
    """d = 2, h = 3 on a small box: the projection is active."""
    return QuadraticWithMemory(Box(-0.3, 0.4, dim=2), memory=3, x0=0.1, mu=1.0, beta=3.0, b_scale=3.0, **kw)


@eqx.filter_jit
def _episode_and_data(problem, env_key, T):
    episode = problem.episode(env_key, T)
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    data = jax.vmap(lambda t: problem.round_data(episode, jax.random.fold_in(env_key, t), t))(ts)
    return episode, data["A"], data["B"]


def rounds(problem, env_key, T):
    """The run's episode and round data (A_k, B_k), k = 1..T, as the engine and the oracle see them."""
    episode, A, B = _episode_and_data(problem, env_key, T)
    A, B = np.asarray(A), np.asarray(B)

    def data(k):
        return A[k - 1], B[k - 1]

    return episode, data


@eqx.filter_jit
def _directions(lkey, law, half_width, d, K, T):
    """The learner's directions: u_r (r = 0..T), the fixed u^0, and u^j_i (j < K, i = 0..T)."""
    idx = jnp.arange(T + 1, dtype=jnp.int32)
    one = jax.vmap(lambda stream, i: _direction(stream, i, (d,), law, half_width), in_axes=(None, 0))
    init = one(_stream(lkey, 0), idx)
    fixed = _direction(_stream(lkey, 1), jnp.asarray(0, jnp.int32), (d,), law, half_width)
    layers = jnp.stack([one(jax.random.fold_in(_stream(lkey, 2), j), idx) for j in range(K)] or [init[:0]])
    return init, fixed, layers


def reference(learner, problem, T, key):
    """Algorithm 1 as in spec §2.2: returns (x^K_1..T, x^0_1..T), shape (T, d) each."""
    env_key, lkey = split_key(key)
    _, data = rounds(problem, env_key, T)
    h, d = problem.memory(), problem.dim
    W, strict, sm = learner.window, learner.strict_window, learner.smoothing
    K = W if h == 1 else (W - strict) // (h - 1)
    x0bar = np.broadcast_to(np.asarray(sm.x0, float), (d,))
    lo, hi = np.asarray(problem.domain.lower), np.asarray(problem.domain.upper)
    U_init, U_fixed, U_layers = (np.asarray(v) for v in _directions(lkey, sm.law, sm.half_width, d, K, T))

    def proj(v):
        return np.clip(v, lo, hi)

    def l(k, window):  # noqa: E743 - the paper's name
        if k < 1 or k > T:
            return 0.0
        A, B = data(k)
        w = window.reshape(-1)
        return 0.5 * w @ A @ w + B @ w

    def grad_l(k, window):
        if k < 1 or k > T:
            return np.zeros_like(window)
        A, B = data(k)
        return (A @ window.reshape(-1) + B).reshape(window.shape)

    def u_init(r):
        return U_fixed if sm.init_perturb == "fixed_trajectory" else U_init[r]

    def u_layer(j, i):
        return U_layers[j, i]

    x = [dict() for _ in range(K + 1)]

    def X(j, i):
        return x0bar if i <= 0 else x[j][i]

    x[0][1] = x0bar.copy()
    D = {}
    dp, delta = float(learner.delta_prime), float(sm.delta)

    def Dk(j, k):  # computed once per (j, k), lazily
        if k < 1 or k > T:  # l_k = 0 outside the horizon
            return np.zeros((h, d))
        if (j, k) not in D:
            idx = range(k - h + 1, k + 1)
            w = np.stack([X(j, i) for i in idx])
            if sm.estimator == "exact":
                D[(j, k)] = grad_l(k, w)
            else:
                U = np.stack([u_layer(j, i) if i >= 1 else np.zeros(d) for i in idx])
                if sm.estimator == "two_point":
                    val = (l(k, w + dp * U) - l(k, w - dp * U)) / (2 * dp)
                else:
                    val = l(k, w + dp * U) / dp
                D[(j, k)] = val * U
        return D[(j, k)]

    for t in range(2 - W, T + 1):
        r = t + W - 1
        if r <= T:
            idx = list(range(r - h + 1, r + 1))
            w = np.stack([X(0, i) for i in idx])
            u = u_init(r)
            if sm.init_perturb == "last":
                mask = np.array([i == r for i in idx], float)
            else:
                mask = np.array([i >= 1 for i in idx], float)
            P = delta * mask[:, None] * u[None]
            if sm.estimator == "exact":
                g = (mask[:, None] * grad_l(r, w)).sum(0)
            elif sm.estimator == "two_point":
                g = (l(r, w + P) - l(r, w - P)) / (2 * delta) * u
            else:
                g = l(r, w + P) / delta * u
        else:
            g = np.zeros(d)
        eta_r = float(sm.eta) / r
        x[0][r + 1] = proj(X(0, r) - eta_r * g)
        for j in range(K):
            s = t + (K - j - 1) * (h - 1)
            if s < 1 or s > T:
                continue
            acc = sum(Dk(j, k)[h - 1 - (k - s)] for k in range(s, s + h))
            x[j + 1][s] = proj(X(j, s) - float(learner.alpha) * acc)
    xs = np.stack([x[K][t] for t in range(1, T + 1)])
    x0s = np.stack([x[0][t] for t in range(1, T + 1)])
    return xs, x0s


T = 12  # one horizon for every run: runs of one learner structure share a compilation
BOX = dict(eta=0.5, alpha=0.1, delta=0.1, delta_prime=1e-3, x0=0.1, half_width=0.7)
CONFIGS = {
    # the paper's setting: h = 2, K = W = 3, two-point, truncated Gaussian on [-2, 2], "unary" init; the
    # simulator itself answers only rounds now..now + 3 (the pseudo-code's reach, spec §6 A7)
    "paper": (dict(window=3, **PAPER), lambda: paper_problem(prediction_window=3)),
    # d = 2, h = 3, active box; strict window (K = floor(3 / 2) = 1), Gaussian, "last", one-point; the
    # simulator answers only the stated window now..now + W - 1
    "strict-one-point": (
        dict(
            window=4,
            strict_window=True,
            law="gaussian",
            init_perturb="last",
            estimator="one_point",
            **{**BOX, "delta_prime": 0.05},
        ),
        lambda: boxed_problem(prediction_window=4, strict_window=True),
    ),
    # d = 2, h = 3, active box; K = floor(5 / 2) = 2 (h - 1 does not divide W), Rademacher, fixed u^0
    "box-rademacher": (
        dict(window=5, law="rademacher", init_perturb="fixed_trajectory", **BOX),
        boxed_problem,
    ),
}
_RUNS = {}


def run_config(name, seed=3):
    """Engine run (recorded decisions) and spec-loop reference of a named configuration, computed once."""
    if (name, seed) not in _RUNS:
        params, make_problem = CONFIGS[name]
        learner, problem = OCOMemoryLimitedPredictions(**params), make_problem()
        traj = ocokit.run(learner, problem, T, seed, record_decisions=True)
        _RUNS[(name, seed)] = (
            learner,
            problem,
            traj,
            *reference(learner, problem, T, jax.random.PRNGKey(seed)),
        )
    return _RUNS[(name, seed)]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_matches_the_spec_loop_iterate_by_iterate(name):
    _, problem, traj, xs, _ = run_config(name)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=0, atol=1e-10)
    assert bool(jnp.all(jax.vmap(lambda x: problem.domain.contains(x, atol=1e-12))(traj.decisions)))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_query_budget_window_and_flags(name):
    # "paper" and "strict-one-point" run on simulators that answer nan beyond their window (now + W, resp.
    # now + W - 1), so a single query too far would make the run non-finite and run_config raise.
    learner, problem, traj, _, _ = run_config(name)
    assert problem.prediction_window in (None, learner.window)
    assert problem.strict_window == learner.strict_window
    h = problem.memory()
    K = learner.layers(h)
    per_value = 1 if learner.smoothing.estimator == "one_point" else 2
    calls = np.asarray(traj.diagnostics["oracle_calls"])
    interior = calls[: T - learner.window - K * (h - 1)]  # rounds whose queries all fall in 1..T
    assert interior.size > 0 and np.all(interior == per_value * (K + 1))  # 2(K + 1) values, two-point
    assert np.all(calls <= per_value * (K + 1))
    look = np.asarray(traj.diagnostics["lookahead"])
    assert look.max() == max(learner.window - 1, K * (h - 1))  # init phase: W - 1; layer 0: K (h - 1)
    assert look.max() <= (learner.window - 1 if learner.strict_window else learner.window)
    assert np.all(np.asarray(traj.diagnostics["flagged_queries"]) == 0)


def test_pipelined_zeroth_order_layers_equal_the_offline_vectorised_method():
    # Spec §2.3: x^{j+1} = Pi(x^j - alpha g^j), g^j_s = u^j_s sum_{k=s}^{s+h-1} D^j_k, all blocks at once.
    learner, problem, traj, _, x0 = run_config("box-rademacher")
    env_key, lkey = split_key(jax.random.PRNGKey(3))
    _, data = rounds(problem, env_key, T)
    h, d, dp = 3, 2, float(learner.delta_prime)
    K = learner.layers(h)
    assert K == 2
    hist = np.full((h - 1, d), 0.1)
    x = x0.copy()
    U_layers = np.asarray(_directions(lkey, learner.smoothing.law, learner.smoothing.half_width, d, K, T)[2])
    for j in range(K):
        U = U_layers[j, 1:]
        xp, xm = np.concatenate([hist, x + dp * U]), np.concatenate([hist, x - dp * U])
        Dj = np.zeros(T + 1)
        for k in range(1, T + 1):
            A, B = data(k)
            wp, wm = xp[k - 1 : k - 1 + h].reshape(-1), xm[k - 1 : k - 1 + h].reshape(-1)
            Dj[k] = (0.5 * wp @ A @ wp + B @ wp - 0.5 * wm @ A @ wm - B @ wm) / (2 * dp)
        g = np.stack([U[s - 1] * Dj[s : min(s + h, T + 1)].sum() for s in range(1, T + 1)])
        x = np.clip(x - float(learner.alpha) * g, -0.3, 0.4)
    np.testing.assert_allclose(np.asarray(traj.decisions), x, rtol=0, atol=1e-10)


def offline_pgd(problem, env_key, x_init, alpha, K):
    """K full projected gradient steps on C_T from x_init (the vector view of Sec. 3), and C_T, C_T(x*)."""
    episode, data = rounds(problem, env_key, T)
    A = jnp.stack([data(t)[0] for t in range(1, T + 1)])
    B = jnp.stack([data(t)[1] for t in range(1, T + 1)])
    grad = jax.grad(lambda xs: problem.total_cost(A, B, xs))
    xs = [jnp.asarray(x_init)]
    for _ in range(K):
        xs.append(jax.vmap(problem.domain.project)(xs[-1] - alpha * grad(xs[-1])))
    cost = [float(problem.total_cost(A, B, x)) for x in xs]
    return np.asarray(xs[-1]), cost, float(problem.total_cost(A, B, episode["x_star"]))


@pytest.mark.parametrize(
    ("window", "make_problem"),
    [pytest.param(3, paper_problem, marks=pytest.mark.slow), (4, boxed_problem)],
    ids=["h2-W3", "h3-W4-not-divisible"],
)
@pytest.mark.integration  # long runs of the reference loop
def test_exact_gradients_reproduce_K_projected_gradient_steps_on_C_T(window, make_problem):
    problem = make_problem()
    x0 = float(problem.x0[0])
    params = dict(eta=0.3, delta=0.2, delta_prime=1e-4, x0=x0, estimator="exact")
    # alpha = 0.07 (the spec's check), then Theorem 2's alpha = 1 / (beta h): the gradient-descent rate
    h = problem.memory()
    for alpha in (0.07, 1.0 / (problem.beta * h)):
        learner = OCOMemoryLimitedPredictions(window=window, alpha=alpha, **params)
        played = np.asarray(ocokit.run(learner, problem, T, 5, record_decisions=True).decisions)
        _, x_init = reference(learner, problem, T, jax.random.PRNGKey(5))  # x^0 (does not depend on W)
        K = learner.layers(h)
        env_key, _ = split_key(jax.random.PRNGKey(5))
        expected, cost, best = offline_pgd(problem, env_key, x_init, alpha, K)
        np.testing.assert_allclose(played, expected, rtol=0, atol=1e-10)
        if alpha == 1.0 / (problem.beta * h):  # C_T(x^K) - C_T(x*) <= (1 - mu/(beta h))^K (C_T(x^0) - C_T(x*))
            rate = 1 - problem.mu / (problem.beta * h)
            assert all(-1e-9 <= c - best <= rate**j * (cost[0] - best) + 1e-9 for j, c in enumerate(cost))


@pytest.mark.parametrize(
    ("law", "half_width", "init_perturb"),
    [
        ("truncated_gaussian", 2.0, "unary"),
        ("truncated_gaussian", (2 * 4 * 3) ** -0.25, "last"),  # Definition 1's a for d = 2, h = 2
        ("rademacher", math.nan, "unary"),
    ],
)
def test_init_estimate_on_a_quadratic_has_mean_sigma_a_squared_times_the_gradient(law, half_width, init_perturb):
    # Spec §1.6 caveat, for the learner's own estimator: on a quadratic window cost the two-point estimate is
    # exactly (sum_i grad_i f . u) u over the perturbed slots i, so its mean is sigma_a^2 sum_i grad_i f.
    d, h, r, n = 2, 2, 5, 40_000
    k1, k2 = jax.random.split(jax.random.PRNGKey(7))
    M = jax.random.normal(k1, (h * d, h * d))
    A, b = M @ M.T + jnp.eye(h * d), jax.random.normal(k2, (h * d,))
    w = jnp.array([[0.3, -0.2], [0.1, 0.4]])
    grad = (A @ w.reshape(-1) + b).reshape(h, d)
    learner = BanditOCOMemory(eta=0.1, delta=0.3, law=law, half_width=half_width, init_perturb=init_perturb)
    slots, a = jnp.arange(r - h + 1, r + 1), jnp.asarray(half_width)

    def value(ws):
        flat = ws.reshape(ws.shape[0], -1)
        return 0.5 * jnp.einsum("pi,ij,pj->p", flat, A, flat) + flat @ b

    @jax.jit
    def estimates(keys):
        one = lambda key: learner.smoothing.estimate(w, slots, r, key, a, value)  # noqa: E731
        us = jax.vmap(lambda key: _direction(_stream(key, 0), jnp.asarray(r), (d,), law, a))(keys)
        return jax.vmap(one)(keys), us

    g, us = (np.asarray(v) for v in estimates(jax.random.split(jax.random.PRNGKey(0), n)))
    slot_grad = np.asarray(grad[-1] if init_perturb == "last" else grad.sum(axis=0))
    np.testing.assert_allclose(g, (us @ slot_grad)[:, None] * us, rtol=1e-8, atol=1e-10)
    sigma2 = float(direction_variance(law, (d,), half_width=half_width))
    se = g.std(axis=0) / math.sqrt(n)
    assert np.all(np.abs(g.mean(axis=0) - sigma2 * slot_grad) < 5 * se)
    if law == "truncated_gaussian":
        assert sigma2 < 0.78  # 0.7737 for a = 2, 0.066 for Definition 1's a: biased, not unbiased


def test_initialisation_phase_is_the_bandit_subroutine():
    # Algorithm 1's x^0 (the reference, which matches Algorithm 1 above) is BanditOCOMemory's play.
    _, problem, _, _, x0 = run_config("box-rademacher")
    bandit = BanditOCOMemory(eta=0.5, delta=0.1, x0=0.1, law="rademacher", init_perturb="fixed_trajectory")
    played = ocokit.run(bandit, problem, T, 3, record_decisions=True).decisions
    np.testing.assert_allclose(played, x0, rtol=0, atol=1e-12)


def test_a_query_beyond_the_problems_window_is_flagged_not_answered():
    params, _ = CONFIGS["paper"]
    problem = paper_problem(prediction_window=3, strict_window=True)  # the simulator answers t..t+2
    eager = OCOMemoryLimitedPredictions(**params)  # the pseudo-code's reach: t..t+3
    traj = ocokit.run(eager, problem, T, 0, throw=False)
    assert int(traj.first_bad_round) == 1 and int(traj.diagnostics["flagged_queries"].sum()) > 0
    with pytest.raises(ocokit.NonFiniteError, match="non-finite"):
        ocokit.run(eager, problem, T, 0)


@pytest.mark.integration  # long runs of the reference loop
def test_no_lookahead_beyond_the_window():
    from ..helpers import Perturbed

    learner, problem, traj, _, _ = run_config("paper")
    t0, reach = 8, 3  # x_t uses rounds <= t + W = t + 3
    b = ocokit.run(learner, Perturbed(problem, t0), T, 3, record_decisions=True).decisions
    a = traj.decisions
    np.testing.assert_array_equal(a[: t0 - reach - 1], b[: t0 - reach - 1])
    assert not np.allclose(a[t0 - reach - 1], b[t0 - reach - 1])  # x_{t0 - 3} does use round t0


@pytest.mark.slow  # one more compilation (a vmapped grid); the shared suite checks vmap on the K = 0 cases
def test_vmap_over_seeds_and_a_hyperparameter_grid_equals_separate_runs():
    params, make_problem = CONFIGS["box-rademacher"]
    problem = make_problem()
    grid = [OCOMemoryLimitedPredictions(**{**params, "alpha": a}) for a in (params["alpha"], 0.03)]
    swept = ocokit.sweep(ocokit.stack(grid), problem, T, [3, 4], batched_learner=True)
    np.testing.assert_allclose(swept.loss[0, 0], run_config("box-rademacher")[2].loss, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(swept.loss[1, 1], ocokit.run(grid[1], problem, T, 4).loss, rtol=1e-12, atol=1e-12)


def test_state_keeps_its_tree_shapes_and_dtypes_through_prepare_and_update():
    params, make_problem = CONFIGS["box-rademacher"]
    learner, problem = OCOMemoryLimitedPredictions(**params), make_problem()
    key = jax.random.PRNGKey(0)
    state = learner.init(ProblemInfo.of(problem, T), key)
    fb = make_feedback(type(learner).feedback, problem, None, None, None, episode=None, env_key=key, t=0)
    shapes = [
        jax.eval_shape(lambda: state),
        jax.eval_shape(lambda: learner.prepare(state, fb)),
        jax.eval_shape(lambda: learner.update(state, None, fb)),
    ]
    for other in shapes[1:]:
        assert jax.tree.structure(other) == jax.tree.structure(shapes[0])
        for x, y in zip(jax.tree.leaves(other), jax.tree.leaves(shapes[0]), strict=True):
            assert (x.shape, x.dtype) == (y.shape, y.dtype)


@pytest.mark.slow  # h = 1 is an inferred edge case (spec §6 A9); one more compilation
def test_memory_one_uses_W_layers_on_the_current_block():
    problem = QuadraticWithMemory(Box(-2.0, 2.0, dim=2), memory=1, x0=0.0, mu=1.0, beta=2.0)
    learner = OCOMemoryLimitedPredictions(
        window=3, estimator="exact", eta=0.5, alpha=0.3, delta=0.1, delta_prime=1e-4, x0=0.0
    )
    assert learner.layers(1) == 3
    traj = ocokit.run(learner, problem, T, 0, record_decisions=True)
    xs, _ = reference(learner, problem, T, jax.random.PRNGKey(0))
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=0, atol=1e-10)


def test_from_theory_uses_theorems_1_and_2():
    problem = paper_problem()
    info = ProblemInfo.of(problem, 16)
    lrn = OCOMemoryLimitedPredictions.from_theory(info, window=3)
    assert float(lrn.smoothing.eta) == pytest.approx(1 / 5) and float(lrn.alpha) == pytest.approx(1 / 20)
    assert float(lrn.smoothing.delta) == pytest.approx(0.25) and math.isnan(float(lrn.smoothing.half_width))
    state = lrn.init(info, jax.random.PRNGKey(0))
    assert float(state.half_width) == pytest.approx((2 * 1 * 3) ** -0.25)  # Definition 1, d = 1, h = 2
    assert float(state.xs[0, 0, 0]) == 0.0  # x0 = nan: the domain's centre
    b = BanditOCOMemory.from_theory(info)
    assert float(b.smoothing.eta) == pytest.approx(0.2) and float(b.smoothing.delta) == pytest.approx(0.25)
    unknown = QuadraticWithMemory(Box(-1.0, 1.0, dim=1), sampler=lambda k, t: (jnp.eye(2), jnp.zeros(2)))
    with pytest.raises(ValueError, match="strong_convexity"):
        OCOMemoryLimitedPredictions.from_theory(ProblemInfo.of(unknown, 5), window=2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window": 0}, "window"),
        ({"alpha": -1.0}, "alpha"),
        ({"delta_prime": 0.0}, "delta_prime"),
        ({"half_width": -2.0}, "half_width"),
        ({"law": "cauchy"}, "law"),
        ({"estimator": "three_point"}, "estimator"),
        ({"init_perturb": "all"}, "init_perturb"),
        ({"eta_decay": "sqrt"}, "eta_decay"),
    ],
)
def test_bad_hyperparameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OCOMemoryLimitedPredictions(**{"window": 2, **PAPER, **kwargs})


def test_bandit_rejects_the_exact_estimator_and_session_rejects_predictions():
    with pytest.raises(ValueError, match="estimator"):
        BanditOCOMemory(eta=0.1, delta=0.1, estimator="exact")
    with pytest.raises(ValueError, match="round context"):  # found at construction, which traces a round
        ocokit.Session(OCOMemoryLimitedPredictions(window=2, **PAPER), paper_problem(), horizon=5)


def test_numeric_fields_are_leaves_and_structural_ones_static():
    lrn = OCOMemoryLimitedPredictions(window=2, **PAPER)
    leaves = jax.tree.leaves(eqx.filter(lrn, eqx.is_array))
    assert len(leaves) == 6 and all(isinstance(v, jax.Array) for v in leaves)


# --------------------------------------------------------------------------------------------------
# The part both learners hold as ``smoothing``: subroutine (a) (SmoothingStep).

SMOOTHING = {"eta": 0.2, "delta": 0.2, "x0": 0.5, "half_width": 2.0, "law": "rademacher", "init_perturb": "last"}
ALGORITHM1 = {"window": 2, "alpha": 0.05, "delta_prime": 1e-4}


@pytest.mark.parametrize("build", ["part", "bandit", "algorithm1"])
@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("eta", 0.0),
        ("eta", math.inf),
        ("delta", -0.1),
        ("half_width", -2.0),
        ("law", "cauchy"),
        ("estimator", "three_point"),
        ("init_perturb", "all"),
        ("eta_decay", "sqrt"),
    ],
)
def test_each_smoothing_field_is_checked_by_the_part_with_a_one_line_error_naming_it(build, field, bad):
    params = {**SMOOTHING, field: bad}
    make = {
        "part": lambda: SmoothingStep(**params),
        "bandit": lambda: BanditOCOMemory(**params),
        "algorithm1": lambda: OCOMemoryLimitedPredictions(**ALGORITHM1, **params),
    }[build]
    with pytest.raises(ValueError) as err:
        make()
    message = str(err.value)
    assert message.startswith(f"{field} must be") and "\n" not in message


def test_both_learners_hold_the_part_their_keywords_build():
    part = SmoothingStep(**SMOOTHING)
    assert eqx.tree_equal(BanditOCOMemory(**SMOOTHING).smoothing, part)
    assert eqx.tree_equal(OCOMemoryLimitedPredictions(**ALGORITHM1, **SMOOTHING).smoothing, part)
    assert (part.queries, SmoothingStep(**{**SMOOTHING, "estimator": "one_point"}).queries) == (2, 1)
    exact = SmoothingStep(**{**SMOOTHING, "estimator": "exact"})  # Algorithm 1 only: the bandit has no gradients
    w, slots = jnp.zeros((2, 1)), jnp.arange(2)
    with pytest.raises(ValueError, match="exact"):
        exact.estimate(w, slots, jnp.asarray(1), jax.random.PRNGKey(0), jnp.asarray(2.0), lambda ws: ws.sum((1, 2)))


@eqx.filter_jit
def _linear_step(part, c, w, r, key, domain):
    """The part's estimate of ``l(w) = <c, w>`` at index r, the direction it used, and the projected step."""
    slots, half_width = _slots(r, w.shape[0]), jnp.asarray(0.7)
    g = part.estimate(w, slots, r, key, half_width, lambda ws: jnp.sum(ws * c[None], axis=(1, 2)))
    fixed = part.init_perturb == "fixed_trajectory"  # one u^0 (index 0 of stream 1), else u_r of stream 0
    u = _direction(_stream(key, int(fixed)), jnp.where(fixed, 0, r), w.shape[1:], part.law, half_width)
    return g, u, part.perturbed(slots, r), part.step(domain, w[-1], g, r)


@settings(max_examples=30, deadline=None)
@given(
    c=arrays(np.float64, (2, 2), elements=st.floats(-3, 3)),
    w=arrays(np.float64, (2, 2), elements=st.floats(-1, 1)),
    r=st.integers(-2, 40),
    seed=st.integers(0, 2**31 - 1),
    law=st.sampled_from(["rademacher", "gaussian", "truncated_gaussian"]),
    init_perturb=st.sampled_from(INIT_PERTURB),
    eta_decay=st.sampled_from(["inverse_t", "constant"]),
)
def test_two_point_step_on_a_linear_window_cost_follows_its_direction_exactly(
    c, w, r, seed, law, init_perturb, eta_decay
):
    # l(w + P) - l(w - P) = 2 <c, P> with P = delta u on the perturbed slots: g_r = <sum_i c_i, u> u over those
    # slots, for every law, reading of P and index r (history slots, index <= 0, are never perturbed).
    part = SmoothingStep(eta=0.3, delta=0.1, law=law, init_perturb=init_perturb, eta_decay=eta_decay)
    domain = Box(-0.5, 0.5, dim=2)
    g, u, mask, x_next = (
        np.asarray(v)
        for v in _linear_step(part, jnp.asarray(c), jnp.asarray(w), jnp.int32(r), jax.random.PRNGKey(seed), domain)
    )
    slots = np.arange(r - 1, r + 1)
    np.testing.assert_array_equal(mask, slots == r if init_perturb == "last" else slots >= 1)
    expected = (c[mask].sum(axis=0) @ u) * u
    np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12 * (1 + np.abs(c).sum() * (u @ u)))
    eta_r = 0.3 / max(r, 1) if eta_decay == "inverse_t" else 0.3
    np.testing.assert_allclose(x_next, np.clip(w[-1] - eta_r * g, -0.5, 0.5), rtol=1e-12, atol=1e-15)

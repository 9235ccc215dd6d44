"""BFW-TVC and SCBFW-TVC against plain NumPy loops written from paper 000, Algorithms 3 and 4.

Wang, Wan and Zhang, "Revisiting Projection-Free Online Learning with Time-Varying Constraints", AAAI 2025;
the readings of the spec ``paper000.md`` (§3.3-3.5, §7) are followed where the paper is silent or
inconsistent, each marked "(spec)" below:

* played point ``x_t = y_t + delta u_t`` with ``y_t = hat y_m`` frozen over block m, ``hat y_1`` the centre
  of ``K_delta = (1 - delta/r) K`` (eq. 20; any point of ``K_delta`` is allowed);
* ``Q_t = Q_{t-1} + g_t^+(x_t)`` first, then ``tilde f_t(x_t) = gamma beta f_t(x_t) + Phi'(beta Q_t) beta
  g_t^+(x_t)`` and ``tilde nabla_t = (d/delta) tilde f_t(x_t) u_t`` (eqs. 4, 6, 21); two constraints are
  reduced to their maximum (spec §1.1);
* BFW-TVC at ``t mod K = 0``: double ``G~`` while ``G~ < beta G (gamma + Phi'(beta Q_t))`` (Q of the block's
  last round, spec); on a doubling the epoch restarts at ``b_k = m`` and the regulariser is re-centred at
  ``hat y_m`` (spec, by analogy with Alg. 1); ``eta_k = eta / G~_k`` with ``eta = cD/(dMT^{3/4})`` (eq. 22);
  FW with exact line search on ``F_{b_k:m}`` over ``K_delta`` from ``hat y_m`` until the gap at the
  current iterate is ``<= epsilon``, the output being the point after that step (Steps 13-19, eqs. 23-26),
  with the library's safety cap ``max_inner`` on the number of LMO calls (spec §3.4 recommends a cap);
* SCBFW-TVC at ``t mod K = 0``: L FW steps with exact line search over ``K_delta`` from ``hat y_m`` on
  ``F_m^sc`` (eqs. 27-30) with ``C_3 = gamma beta alpha_f t / 2``: by default the shifted surrogate
  ``sum_{tau<=m} [<hat nabla_tau, y> + (gamma beta alpha_f K / 2) ||y - hat y_tau||^2]`` (spec), or eq. (27)
  as printed (``surrogate="literal"``);
* a last partial block gets no update (spec).

The references are written as slowly and literally as the formulas: the block gradients ``hat nabla_tau`` and
the points ``hat y_tau`` are kept in lists and summed afresh at every inner step; no ocokit code is called.

Randomness: the problem's rounds are NumPy arrays handed to :class:`~ocokit.problems.CustomProblem` (round t
reads entry t - 1), so the reference reads the same data directly. The sphere directions are regenerated
from the run's key with the same ``jax.random`` calls as the learner (documented in ``_bandit_tvc``): the
engine gives the learner ``fold_in(run_key, 1)``, and ``u_t`` is a standard Gaussian drawn in float32 from
``fold_in(learner_key, t)``, cast to float64 and normalised (here in NumPy). Any disagreement in that
convention makes every decision differ by ``O(delta)``.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import BFWTVC, SCBFWTVC, ProblemInfo
from ocokit.problems import CustomProblem, ProblemConstants
from ocokit.sets import L2Ball

DIM, RADIUS, T_DEFAULT, SEED = 4, 2.0, 300, 5
ATOL = 1e-10

# --------------------------------------------------------------------------------------------------
# The problem: quadratic or linear losses, two time-varying linear constraints, an l2 ball.


def make_rounds(T, seed=0):
    """Round data as NumPy arrays: targets ``c_t``, slopes ``s_t``, constraints ``A_t x <= b_t`` (2 rows)."""
    rng = np.random.default_rng(seed)
    return {
        "c": 0.3 + 0.2 * rng.standard_normal((T, DIM)),
        "s": -0.5 + 0.5 * rng.standard_normal((T, DIM)),
        "A": rng.uniform(0.0, 1.0, (T, 2, DIM)),
        "b": 0.2 * rng.uniform(0.0, 1.0, (T, 2)),
    }


def numpy_functions(kind, rounds):
    """``f(t, x)`` and ``g(t, x)`` (the max of the two constraints) in NumPy, for 1-based rounds."""
    if kind == "quadratic":

        def f(t, x):
            return 0.5 * float(np.sum((x - rounds["c"][t - 1]) ** 2))
    else:

        def f(t, x):
            return float(rounds["s"][t - 1] @ x)

    def g(t, x):
        return float(np.max(rounds["A"][t - 1] @ x - rounds["b"][t - 1]))

    return f, g


def make_problem(kind, rounds):
    c, s, A = rounds["c"], rounds["s"], rounds["A"]
    row_norm = float(np.linalg.norm(A, axis=2).max())
    if kind == "quadratic":
        G_f = RADIUS + float(np.linalg.norm(c, axis=1).max())
        constants = ProblemConstants(
            grad_bound=G_f, loss_bound=0.5 * G_f**2, constraint_grad_bound=row_norm, strong_convexity=1.0
        )

        def loss(d, x):
            return 0.5 * jnp.sum((x - d["c"]) ** 2)
    else:
        G_f = float(np.linalg.norm(s, axis=1).max())
        constants = ProblemConstants(grad_bound=G_f, loss_bound=RADIUS * G_f, constraint_grad_bound=row_norm)

        def loss(d, x):
            return jnp.dot(d["s"], x)

    return CustomProblem(
        domain=L2Ball(DIM, radius=RADIUS),
        loss=loss,
        constraints=lambda d, x: d["A"] @ x - d["b"],
        data={k: jnp.asarray(v) for k, v in rounds.items()},
        constants=constants,
    )


def run_learner(learner, problem, T):
    run_key = jax.random.PRNGKey(SEED)
    traj = ocokit.run(learner, problem, T, run_key, record_decisions=True, comparators=False)
    return traj, run_key


def sphere_directions(run_key, T):
    """``u_1..u_T``: the learner's key is ``fold_in(run_key, 1)``; ``u_t`` from ``fold_in(learner_key, t)``."""
    learner_key = jax.random.fold_in(run_key, 1)
    draw = jax.vmap(lambda t: jax.random.normal(jax.random.fold_in(learner_key, t), (DIM,), jnp.float32))
    z = np.asarray(draw(jnp.arange(1, T + 1, dtype=jnp.int32)), np.float64)
    return z / np.linalg.norm(z, axis=1, keepdims=True)


# --------------------------------------------------------------------------------------------------
# The NumPy references.


def lmo_ball(direction, radius):
    """``argmin_{||y|| <= radius} <direction, y>`` (for a zero direction any point; ``radius e_1`` here)."""
    norm = np.linalg.norm(direction)
    if norm == 0.0:
        out = np.zeros_like(direction)
        out[0] = radius
        return out
    return -radius * direction / norm


def phi_prime(phi, x, lam):
    """``Phi'`` for ``Phi = exp(lam x) - 1`` (Thm 3) or ``Phi = x^2`` (Thm 4)."""
    return {"exp": lambda: lam * math.exp(lam * x), "square": lambda: 2.0 * x}[phi]()


def line_search(grad_at_z, direction, curvature):
    """``argmin_{sigma in [0,1]} F(z + sigma d)`` for a quadratic F with Hessian ``curvature * I``."""
    dd = float(direction @ direction)
    if dd == 0.0:
        return 0.0
    return min(1.0, max(0.0, -float(grad_at_z @ direction) / (curvature * dd)))


def bandit_rounds(p, f, g, us, T, block_update):
    """Steps 2-7 of Algorithms 3-4 (the part they share); ``block_update`` is Steps 8-19 / 8-15."""
    delta, beta, gamma = p["delta"], p["beta"], p["gamma"]
    y_hat = [None, np.zeros(DIM)]  # hat y_1 = the centre of K_delta (1-based: y_hat[m])
    nabla_hat = [None]  # hat nabla_m, m = 1, 2, ...
    block_estimates = []
    Q = 0.0
    out = {"x": [], "Q": [], "calls": [], "Gt": [], "b": [], "gap": [], "gap_scale": []}
    state = {"Gt": 1.0, "b": 1, "gap": 0.0, "gap_scale": 0.0}  # G~_1 = 1, b_1 = 1
    for t in range(1, T + 1):
        m = (t - 1) // p["block"] + 1
        y_t = y_hat[m]  # Step 3
        x_t = y_t + delta * us[t - 1]  # eq. (20)
        f_val, g_val = f(t, x_t), g(t, x_t)  # Step 4: only the two values are observed
        Q = Q + max(0.0, g_val)  # eq. (4)
        w = phi_prime(p["phi"], beta * Q, p["lam"])
        surrogate_value = gamma * beta * f_val + w * beta * max(0.0, g_val)  # eq. (6) at x_t
        block_estimates.append((DIM / delta) * surrogate_value * us[t - 1])  # eq. (21)
        calls = 0
        if t % p["block"] == 0:
            nabla_hat.append(np.sum(block_estimates, axis=0))  # hat nabla_m = sum_{tau=t-K+1}^{t}
            block_estimates = []
            y_next, calls = block_update(p, state, m, t, w, nabla_hat, y_hat)
            y_hat.append(y_next)  # hat y_{m+1}
        out["x"].append(x_t), out["Q"].append(Q), out["calls"].append(calls)
        for k in ("Gt", "b", "gap", "gap_scale"):
            out[k].append(state[k])
    return {k: np.array(v) for k, v in out.items()}


def bfw_block_update(p, state, m, t, w, nabla_hat, y_hat):
    """Algorithm 3, Steps 8-19 (eqs. 22-26)."""
    doubled = False
    while state["Gt"] < p["beta"] * p["G"] * (p["gamma"] + w):  # Steps 8-10
        state["Gt"] = 2.0 * state["Gt"]
        doubled = True
    if doubled:  # (spec) b_k = m: the new epoch's sum starts with hat nabla_m, anchored at y_{s_k} = hat y_m
        state["b"] = m
    b = state["b"]
    eta_k = p["eta"] / state["Gt"]  # eq. (22)
    radius = (1.0 - p["delta"] / p["r"]) * RADIUS  # K_delta

    def grad_F(y):  # eq. (23): F_{b_k:m}(y) = eta_k sum_{tau=b_k}^{m} <hat nabla_tau, y> + ||y - hat y_{b_k}||^2
        return eta_k * sum(nabla_hat[tau] for tau in range(b, m + 1)) + 2.0 * (y - y_hat[b])

    z, calls = y_hat[m], 0  # Step 13: tilde y_1 = hat y_m
    while True:  # Steps 14-18
        calls += 1
        grad = grad_F(z)
        v = lmo_ball(grad, radius)  # eq. (24)
        gap = float(grad @ (z - v))
        # the size of grad F's terms times diam(K_delta): what the rounding of the gap is relative to
        state["gap_scale"] = (float(np.linalg.norm(grad - 2.0 * (z - y_hat[b]))) + 8 * RADIUS) * 2 * radius
        sigma = line_search(grad, v - z, 2.0)  # eq. (25), F has Hessian 2 I
        z = z + sigma * (v - z)  # eq. (26)
        if gap <= p["epsilon"] or calls >= p["max_inner"]:  # stop rule at tilde y_tau; output tilde y_{tau+1}
            break
    state["gap"] = gap
    return z, calls


def scbfw_block_update(p, state, m, t, w, nabla_hat, y_hat):
    """Algorithm 4, Steps 8-15 (eqs. 27-30)."""
    curvature = p["gamma"] * p["beta"] * p["alpha_f"]
    C3 = curvature * t / 2.0  # t = mK: the round count (spec §7.9)
    radius = (1.0 - p["delta"] / p["r"]) * RADIUS

    def grad_F(y):
        linear = sum(nabla_hat[tau] for tau in range(1, m + 1))
        if p["surrogate"] == "literal":  # eq. (27) as printed
            return linear + 2.0 * C3 * y
        # (spec) sum_{tau<=m} [<hat nabla_tau, y> + (gamma beta alpha_f K/2) ||y - hat y_tau||^2]
        return linear + curvature * p["block"] * sum(y - y_hat[tau] for tau in range(1, m + 1))

    z = y_hat[m]  # tilde y_1 = hat y_m
    for _ in range(p["inner_steps"]):  # Steps 10-14
        grad = grad_F(z)
        v = lmo_ball(grad, radius)  # eq. (28)
        state["gap"] = float(grad @ (z - v))
        state["gap_scale"] = (float(np.linalg.norm(sum(nabla_hat[1 : m + 1]))) + 4 * C3 * RADIUS) * 2 * radius
        z = z + line_search(grad, v - z, 2.0 * C3) * (v - z)  # eqs. (29)-(30), Hessian 2 C_3 I
    return z, p["inner_steps"]


def learner_parameters(learner, problem):
    names = ("beta", "gamma", "delta", "lam", "eta", "G", "epsilon", "alpha_f")
    p = {k: float(getattr(learner, k)) for k in names if hasattr(learner, k)}
    p.update(block=learner.block, phi=learner.phi, r=float(problem.domain.inner_radius))
    for k in ("max_inner", "inner_steps", "surrogate"):
        if hasattr(learner, k):
            p[k] = getattr(learner, k)
    return p


def check_against_reference(learner, kind, T, block_update):
    rounds = make_rounds(T)
    problem = make_problem(kind, rounds)
    traj, run_key = run_learner(learner, problem, T)
    f, g = numpy_functions(kind, rounds)
    ref = bandit_rounds(learner_parameters(learner, problem), f, g, sphere_directions(run_key, T), T, block_update)
    xs = np.asarray(traj.decisions)
    assert np.all(np.linalg.norm(xs, axis=1) <= RADIUS * (1 + 1e-12)), "a played point left K"
    np.testing.assert_allclose(xs, ref["x"], rtol=0, atol=ATOL)
    diag = {k: np.asarray(v) for k, v in traj.diagnostics.items()}
    np.testing.assert_allclose(diag["queue"], ref["Q"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(diag["oracle_calls"], ref["calls"])
    # the FW gap of the last inner step, to the precision a gap of a gradient of that size can have
    assert np.all(np.abs(diag["fw_gap"] - ref["gap"]) <= 1e-13 * ref["gap_scale"])
    # the observed values are those of the played points (a check of the reference's f and g)
    np.testing.assert_allclose(traj.loss, [f(t, x) for t, x in enumerate(ref["x"], 1)], rtol=1e-12, atol=1e-12)
    return traj, ref, diag


# --------------------------------------------------------------------------------------------------
# The learners against the references.

BFW_CASES = {
    # Theorem 3's parameters: K = round(sqrt(300)) = 17, 17 full blocks and a partial one of 11 rounds; its
    # epsilon = 4 D^2 / sqrt(T) is large, so each block takes one FW step
    "theory-quadratic": ("quadratic", T_DEFAULT, {}),
    # beta G gamma = 1 and a fast exp: G~ doubles at several blocks (restarts, re-anchoring); a tiny epsilon
    # with a cap of 5 LMO calls (blocks end on the cap), and a looser one (blocks end on the gap rule)
    "doubling-quadratic": (
        "quadratic",
        150,
        {"beta": 1.0, "G": 1.0, "gamma": 1.0, "lam": 0.5, "block": 4, "epsilon": 1e-8, "max_inner": 5},
    ),
    "doubling-linear": ("linear", 150, {"beta": 1.0, "G": 1.0, "gamma": 1.0, "lam": 0.5, "block": 6, "epsilon": 1e-5}),
}


@pytest.mark.parametrize("case", list(BFW_CASES))
def test_bfw_tvc_matches_algorithm_3(case):
    kind, T, overrides = BFW_CASES[case]
    learner = BFWTVC.from_theory(ProblemInfo.of(make_problem(kind, make_rounds(T)), T), **overrides)
    _, ref, diag = check_against_reference(learner, kind, T, bfw_block_update)
    np.testing.assert_array_equal(diag["G_tilde"], ref["Gt"])
    np.testing.assert_array_equal(diag["epoch_start"], ref["b"])
    ends = np.arange(1, T + 1) % learner.block == 0
    assert np.all(ref["calls"][~ends] == 0) and np.all(ref["calls"][ends] >= 1)
    if case.startswith("doubling"):
        assert len(np.unique(ref["Gt"])) >= 3 and len(np.unique(ref["b"])) >= 3, "several restarts wanted"
        assert ref["calls"].max() > 1, "the inner loop must take several steps somewhere"
    if case == "doubling-quadratic":
        assert ref["calls"].max() == learner.max_inner, "the safety cap must be reached somewhere"
    if case.startswith("theory"):
        assert T % learner.block != 0, "a last partial block is wanted"


SCBFW_CASES = {
    # Theorem 4's proof parameters: K = L = round(300^(2/3)) = 45, six blocks and a partial one of 30 rounds
    "theory-proof": (T_DEFAULT, {}),
    # the statement's beta and gamma, eq. (27) as printed, short blocks and few FW steps
    "statement-literal": (120, {"theory": "statement", "block": 5, "inner_steps": 4, "surrogate": "literal"}),
    # the shifted surrogate with other blocks and the exp Lyapunov function
    "shifted-exp": (90, {"beta": 0.3, "gamma": 1.0, "block": 6, "inner_steps": 2, "phi": "exp", "lam": 0.2}),
}


@pytest.mark.parametrize("case", list(SCBFW_CASES))
def test_scbfw_tvc_matches_algorithm_4(case):
    T, options = SCBFW_CASES[case]
    learner = SCBFWTVC.from_theory(ProblemInfo.of(make_problem("quadratic", make_rounds(T)), T), **options)
    _, ref, _ = check_against_reference(learner, "quadratic", T, scbfw_block_update)
    ends = np.arange(1, T + 1) % learner.block == 0
    assert np.all(ref["calls"][ends] == learner.inner_steps) and np.all(ref["calls"][~ends] == 0)
    assert T // learner.block >= 6 and T % learner.block != 0 if case == "theory-proof" else T // learner.block >= 15


def test_from_theory_uses_the_theorems_parameters():
    """Theorems 3 and 4 of 000 (Thm 4 with the proof's beta and gamma), computed here from the constants."""
    T = T_DEFAULT
    rounds = make_rounds(T)
    problem = make_problem("quadratic", rounds)
    info = ProblemInfo.of(problem, T)
    consts = problem.constants()
    G = max(consts.grad_bound, consts.constraint_grad_bound)
    D, r, d, M = 2 * RADIUS, RADIUS, DIM, consts.loss_bound
    c = r / 2  # the library's default c (inferred: delta < r for every T)
    bfw = BFWTVC.from_theory(info)
    C2 = 2**4 * G * (c * D / r + 3 * c + 1 + 2 * c * D / (d * M) + d * M * D / c)
    got = [float(getattr(bfw, k)) for k in ("beta", "gamma", "eta", "delta", "epsilon", "lam")]
    want = [1 / C2, 1.0, c * D / (d * M * T**0.75), c * T**-0.25, 4 * D**2 / math.sqrt(T), 0.5 * T**-0.75]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert bfw.block == round(math.sqrt(T)) and bfw.phi == "exp"
    scb = SCBFWTVC.from_theory(info)
    C3p = 8 + 3 * c + c * D / r + 12 * D
    gamma = 16 * (8 * math.log(T ** (1 / 3)) + C3p) * G**2 * T ** (2 / 3) / 1.0
    got = [float(scb.beta), float(scb.gamma), float(scb.alpha_f), float(scb.delta)]
    np.testing.assert_allclose(got, [1.0, gamma, 1.0, c * T ** (-1 / 3)], rtol=1e-12)
    assert scb.block == scb.inner_steps == round(T ** (2 / 3)) and scb.phi == "square"

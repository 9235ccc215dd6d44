"""Sinha and Vaze (NeurIPS 2024) against a NumPy loop written from spec baselines.md §8.2, and its invariants."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import ProblemInfo, SinhaVaze
from ocokit.problems import CustomProblem, OnlineQuadraticProgram, TimeVaryingRegression
from ocokit.sets import Box

from ..helpers import host_rounds, play_by_hand, two_round_toy
from ..learner_cases import regression_rounds

T = 200
PROBLEM = regression_rounds()  # K = [0, 5]^4, f_t = 1/2 ||H_t x - y_t||^2, g_t = A_t x - b_t (N = 2)
UPPER = 5.0


def reference_sinha_vaze(data, V, beta, lam, D, multi="per_constraint", variant="convex", alpha=None):
    """Spec baselines.md §8.2, line by line: the queue before the gradient, the AdaGrad-norm step including it.

    The strongly convex variant (unverified): ``Phi(Q) = Q^2`` and ``eta_t = 1 / (V alpha t)``.
    """
    x = np.zeros(4)  # x_1 = 0, inside [0, 5]^4
    Q = np.zeros(1 if multi == "max" else 2)
    sumsq = 0.0
    xs, Qs = [], []
    for t, d in enumerate(data, start=1):  # the data of round t, at x_t
        xs.append(x.copy())
        grad_f = d["H"].T @ (d["H"] @ x - d["y"])
        g, J = d["A"] @ x - d["b"], d["A"]
        if multi == "max":
            n = int(np.argmax(g))
            g, J = g[n : n + 1], J[n : n + 1]
        Q = Q + beta * np.maximum(g, 0.0)  # updated BEFORE the gradient
        s = np.where((g > 0)[:, None], J, 0.0)
        phi_prime = lam * np.exp(lam * Q) if variant == "convex" else 2.0 * Q
        nabla = V * beta * grad_f + s.T @ (phi_prime * beta)
        sumsq += float(nabla @ nabla)
        eta = math.sqrt(2) * D / (2 * math.sqrt(sumsq)) if variant == "convex" else 1.0 / (V * alpha * t)
        x = np.clip(x - eta * nabla, 0.0, UPPER)
        Qs.append(Q.copy())
    return np.array(xs), np.array(Qs)


def _run(learner, T_=T, seed=3):
    traj = ocokit.run(learner, PROBLEM, T_, seed, record_decisions=True, comparators=False)
    return np.asarray(traj.decisions), np.asarray(traj.diagnostics["queue"]), traj


@pytest.mark.parametrize(
    "params",
    [
        {"V": 1.0, "beta": 0.05, "lam": 0.5, "D": 10.0},  # the constraints weigh: queue and projection matter
        {"V": 1.0, "beta": 1.0 / (2 * 50.0 * 10.0), "lam": 1.0 / (2 * math.sqrt(T)), "D": 10.0},  # theory's shape
        {"V": 1.0, "beta": 0.05, "lam": 0.5, "D": 10.0, "multi": "max"},
    ],
    ids=["weighted", "theory", "max"],
)
def test_matches_numpy_reference_decision_by_decision_over_200host_rounds(params):
    xs, Qs, traj = _run(SinhaVaze(**params))
    multi = params.get("multi", "per_constraint")
    ref_x, ref_Q = reference_sinha_vaze(host_rounds(PROBLEM, T, 3), **{k: v for k, v in params.items() if k != "multi"},
                                        multi=multi)  # fmt: skip
    np.testing.assert_allclose(xs, ref_x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Qs.reshape(ref_Q.shape), ref_Q, rtol=1e-10, atol=1e-12)
    assert np.max(np.abs(xs - ref_x)) < 1e-10
    violated = np.asarray(traj.constraints) > 0
    assert violated.any() and (~violated).any(), "the run must switch constraints on and off"
    assert np.any(xs == 0.0) or np.any(xs == UPPER), "the projection must be active in some round"


def test_strongly_convex_variant_matches_the_reference():
    params = {"V": 2.0, "beta": 1.0, "alpha": 0.5}
    xs, Qs, _ = _run(SinhaVaze(**params, variant="strongly_convex"), T_=60)
    ref_x, ref_Q = reference_sinha_vaze(
        host_rounds(PROBLEM, 60, 3), lam=None, D=None, variant="strongly_convex", **params
    )
    np.testing.assert_allclose(xs, ref_x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Qs, ref_Q, rtol=1e-10, atol=1e-12)


def test_two_round_toy_with_hand_computed_timing():
    """V = beta = 1, lam = ln 2 (Phi'(Q) = ln 2 * 2^Q), D = sqrt 2 (the first AdaGrad step has length 1).

    Round 1: x_1 = 0, g = 1, Q = 1 (before the gradient), nabla_1 = 1 + 2 ln 2, x_2 = -1.
    Round 2: g = 2 (-1) + 3 = 1, Q = 2, nabla_2 = 1 + 4 ln 2 * 2 = 1 + 8 ln 2 (the queue of round 2, not 1),
    eta_2 = 1 / sqrt(nabla_1^2 + nabla_2^2) (the current gradient included), x_3 = -1 - eta_2 nabla_2.
    """
    ln2 = math.log(2.0)
    n1, n2 = 1 + 2 * ln2, 1 + 8 * ln2
    hand_x = [0.0, -1.0, -1.0 - n2 / math.hypot(n1, n2)]
    problem, data = two_round_toy()
    learner = SinhaVaze(V=1.0, beta=1.0, lam=ln2, D=math.sqrt(2.0))
    xs, qs = play_by_hand(learner, problem, data, lambda lrn, s: lrn.diagnostics(s)["queue"][0])
    np.testing.assert_allclose(xs, hand_x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(qs, [1.0, 2.0], rtol=0, atol=1e-12)
    # The NumPy loop of the spec gives the same numbers on the toy.
    x, Q, sumsq, ref = 0.0, 0.0, 0.0, [0.0]
    for a, b in ((1.0, -1.0), (2.0, -3.0)):
        g = a * x - b
        Q += max(g, 0.0)
        nabla = 1.0 + (ln2 * math.exp(ln2 * Q)) * (a if g > 0 else 0.0)
        sumsq += nabla**2
        x = min(max(x - math.sqrt(2) * math.sqrt(2.0) / (2 * math.sqrt(sumsq)) * nabla, -10.0), 10.0)
        ref.append(x)
    np.testing.assert_allclose(ref, hand_x, rtol=0, atol=1e-12)
    # A queue updated after the gradient would give nabla_2 = 1 + 4 ln 2; a step without it, eta_2 = 1 / nabla_1.
    assert abs(hand_x[2] - (-1.0 - (1 + 4 * ln2) / math.hypot(n1, 1 + 4 * ln2))) > 1e-2
    assert abs(hand_x[2] - (-1.0 - n2 / n1)) > 1e-2


def test_queue_is_beta_times_the_ccv_of_the_played_points_and_decisions_stay_in_k():
    beta = 0.05
    xs, Qs, traj = _run(SinhaVaze(V=1.0, beta=beta, lam=0.5, D=10.0))
    hinge = np.maximum(np.asarray(traj.constraints), 0.0)
    np.testing.assert_allclose(Qs, beta * np.cumsum(hinge, axis=0), rtol=1e-12)  # CCV(t) = CCV(t-1) + g~_t(x_t)
    assert np.all(Qs >= 0) and np.all(np.diff(Qs, axis=0) >= 0)
    assert np.all((xs >= 0.0) & (xs <= UPPER))
    _, Q_max, traj_max = _run(SinhaVaze(V=1.0, beta=beta, lam=0.5, D=10.0, multi="max"))
    g_max = np.asarray(traj_max.constraints).max(axis=1)
    np.testing.assert_allclose(Q_max, beta * np.cumsum(np.maximum(g_max, 0.0)), rtol=1e-12)


def test_without_constraints_the_step_is_adagrad_norm():
    problem = CustomProblem(
        domain=Box(-1.0, 1.0, dim=2),
        loss=lambda d, x: jnp.dot(d, x),
        data=jnp.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]),
    )
    traj = ocokit.run(SinhaVaze(V=2.0, beta=0.5, lam=1.0, D=1.0), problem, 3, 0, record_decisions=True)
    x, sumsq, expected = np.zeros(2), 0.0, []
    for c in ([1.0, 0.0], [0.0, 2.0], [1.0, 1.0]):
        expected.append(x.copy())
        nabla = 2.0 * 0.5 * np.array(c)
        sumsq += nabla @ nabla
        x = np.clip(x - math.sqrt(2) / (2 * math.sqrt(sumsq)) * nabla, -1.0, 1.0)
    np.testing.assert_allclose(np.asarray(traj.decisions), expected, rtol=0, atol=1e-12)
    assert traj.diagnostics["queue"].shape == (3, 0)


def test_no_step_while_every_gradient_is_zero():
    problem = CustomProblem(domain=Box(-1.0, 1.0, dim=2), loss=lambda d, x: d * jnp.sum(x), data=jnp.zeros(4))
    traj = ocokit.run(SinhaVaze(V=1.0, beta=1.0, lam=1.0, D=1.0, start="center"), problem, 4, 0, record_decisions=True)
    np.testing.assert_array_equal(np.asarray(traj.decisions), np.zeros((4, 2)))  # finite: no 0 * inf


def test_from_theory_uses_the_paper_values_and_overrides():
    problem = TimeVaryingRegression(dim=4, rows=3)
    info = ProblemInfo.of(problem, 400)
    consts = problem.constants()
    G, D = max(consts.grad_bound, consts.constraint_grad_bound), float(problem.domain.diameter)
    learner = SinhaVaze.from_theory(info)
    assert float(learner.V) == 1.0
    assert float(learner.beta) == pytest.approx(1.0 / (2.0 * G * D), rel=1e-12)
    assert float(learner.lam) == pytest.approx(1.0 / 40.0, rel=1e-12)
    assert float(learner.D) == pytest.approx(D, rel=1e-12)
    assert (learner.variant, learner.multi, learner.start) == ("convex", "per_constraint", "origin")
    other = SinhaVaze.from_theory(info, grad_bound=1.0, constraint_grad_bound=2.0, diameter=3.0, V=0.01, multi="max")
    assert float(other.beta) == pytest.approx(1.0 / 12.0, rel=1e-12)
    assert (float(other.V), float(other.D), other.multi) == (0.01, 3.0, "max")


def test_from_theory_strongly_convex_variant():
    problem = OnlineQuadraticProgram()
    info = ProblemInfo.of(problem, 100)
    consts = problem.constants()
    G = max(consts.grad_bound, consts.constraint_grad_bound)
    learner = SinhaVaze.from_theory(info, variant="strongly_convex")
    assert learner.variant == "strongly_convex"
    assert float(learner.beta) == 1.0 and float(learner.alpha) == consts.strong_convexity
    assert float(learner.V) == pytest.approx(G**2 * math.log(100 * math.e) / consts.strong_convexity, rel=1e-12)
    with pytest.raises(ValueError, match="strong_convexity"):
        SinhaVaze.from_theory(ProblemInfo.of(TimeVaryingRegression(), 100), variant="strongly_convex")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"V": 0.0}, "V"),
        ({"V": -1.0}, "V"),
        ({"beta": 0.0}, "beta"),
        ({"beta": float("inf")}, "beta"),
        ({"lam": 0.0}, "lam"),
        ({"lam": float("nan")}, "lam"),
        ({"D": -1.0}, "D"),
        ({"variant": "concave"}, "variant"),
        ({"multi": "sum"}, "multi"),
        ({"start": "zero"}, "start"),
        ({"variant": "strongly_convex"}, "alpha"),  # alpha is required by the strongly convex variant
        ({"variant": "strongly_convex", "alpha": 0.0}, "alpha"),
    ],
)
def test_bad_hyperparameters_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        SinhaVaze(**{"V": 1.0, "beta": 1.0, "lam": 1.0, "D": 1.0, **kwargs})


def test_bad_theory_arguments_raise_value_error():
    info = ProblemInfo.of(TimeVaryingRegression(), 100)
    with pytest.raises(ValueError, match="variant must be one of"):
        SinhaVaze.from_theory(info, variant="concave")
    with pytest.raises(ValueError, match="grad_bound"):
        SinhaVaze.from_theory(ProblemInfo.of(PROBLEM, 100))  # the suite's rounds declare no gradient bound
    with pytest.raises(ValueError, match="unknown parameters"):
        SinhaVaze.from_theory(info, eta=1.0)

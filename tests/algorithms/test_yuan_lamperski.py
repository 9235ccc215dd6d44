"""Yuan and Lamperski (NeurIPS 2018) against a NumPy loop written from spec baselines.md §9, and its invariants."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import OGD, ProblemInfo, YuanLamperski
from ocokit.problems import CustomProblem, OnlineQuadratic
from ocokit.sets import Box, L2Ball

from ..helpers import host_rounds, play_by_hand, two_round_toy
from ..learner_cases import regression_rounds

T = 200
PROBLEM = regression_rounds()  # K = [0, 5]^4, f_t = 1/2 ||H_t x - y_t||^2, g_t = A_t x - b_t (N = 2)
UPPER = 5.0


def reference_yuan_lamperski(data, beta, eta_p, first_update="gradient"):
    """Spec baselines.md §9, line by line: x_1 = 0; q = 0 for x_2 (the code's t = 2); then
    q^n = [g^n(x_{t-1})]_+ / eta_p and x_t = Pi_X(x_{t-1} - beta (grad f + sum_n q^n grad g^n 1[g^n > 0]))."""
    x = np.zeros(4)
    xs, qs = [], []
    for t, d in enumerate(data, start=1):  # round t's data, at x_t; computes x_{t+1}
        xs.append(x.copy())
        grad_f = d["H"].T @ (d["H"] @ x - d["y"])
        g, J = d["A"] @ x - d["b"], d["A"]
        q = np.zeros(2) if (t == 1 and first_update == "gradient") else np.maximum(g, 0.0) / eta_p
        step = grad_f + sum(q[n] * J[n] * (g[n] > 0) for n in range(2))
        x = np.clip(x - beta * step, 0.0, UPPER)
        qs.append(q)
    return np.array(xs), np.array(qs)


@pytest.mark.parametrize(
    ("beta", "eta_p", "first_update"),
    [
        (1.0 / math.sqrt(T), 1.0 / (5 * 2 * math.sqrt(T)), "gradient"),  # the code's parameters (a = 5, p = 2, G = 1)
        (0.05, 0.5, "gradient"),
        (0.05, 0.5, "penalised"),
    ],
    ids=["code", "small-penalty", "penalised"],
)
def test_matches_numpy_reference_decision_by_decision_over_200host_rounds(beta, eta_p, first_update):
    learner = YuanLamperski(beta=beta, eta_p=eta_p, first_update=first_update)
    traj = ocokit.run(learner, PROBLEM, T, 3, record_decisions=True, comparators=False)
    xs, qs = np.asarray(traj.decisions), np.asarray(traj.diagnostics["multiplier"])
    ref_x, ref_q = reference_yuan_lamperski(host_rounds(PROBLEM, T, 3), beta, eta_p, first_update)
    np.testing.assert_allclose(xs, ref_x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(qs, ref_q, rtol=1e-10, atol=1e-12)
    violated = np.asarray(traj.constraints) > 0
    assert violated.any() and (~violated).any(), "the run must switch constraints on and off"
    assert np.any(xs == 0.0), "the projection must be active in some round"


def test_two_round_toy_with_hand_computed_timing():
    """beta = 1/2, eta_p = 1/2 (penalty 2 [g]_+ grad g) on spec §10.1's toy: f_t(x) = x, g_1 = x + 1, g_2 = 2x + 3.

    ``first_update="gradient"``: x_1 = 0; q = 0, x_2 = -1/2; round 2: g_2(x_2) = 2 > 0, q = 4,
    d = 1 + 4 * 2 = 9, x_3 = -1/2 - 9/2 = -5 (round 2's g at x_2; g_1 at x_2 would give q = 1, x_3 = -1.5).
    ``first_update="penalised"``: q = 2, d = 3, x_2 = -3/2; round 2: g_2(x_2) = 0 (the kink: no penalty), x_3 = -2.
    """
    problem, data = two_round_toy()
    for first_update, hand_x, hand_q in (("gradient", [0.0, -0.5, -5.0], [0.0, 4.0]),
                                         ("penalised", [0.0, -1.5, -2.0], [2.0, 0.0])):  # fmt: skip
        learner = YuanLamperski(beta=0.5, eta_p=0.5, first_update=first_update)
        xs, qs = play_by_hand(learner, problem, data, lambda lrn, s: lrn.diagnostics(s)["multiplier"][0])
        np.testing.assert_allclose(xs, hand_x, rtol=0, atol=1e-12, err_msg=first_update)
        np.testing.assert_allclose(qs, hand_q, rtol=0, atol=1e-12, err_msg=first_update)


def test_multiplier_is_the_scaled_hinge_of_the_played_point_and_decisions_stay_in_k():
    eta_p = 0.5
    traj = ocokit.run(YuanLamperski(beta=0.05, eta_p=eta_p), PROBLEM, T, 4, record_decisions=True, comparators=False)
    q = np.asarray(traj.diagnostics["multiplier"])
    hinge = np.maximum(np.asarray(traj.constraints), 0.0)
    np.testing.assert_array_equal(q[0], 0.0)  # the first update is a plain gradient step
    np.testing.assert_allclose(q[1:], hinge[1:] / eta_p, rtol=1e-12)
    assert np.all(q >= 0)
    xs = np.asarray(traj.decisions)
    assert np.all((xs >= 0.0) & (xs <= UPPER))


def test_without_constraints_reduces_to_projected_ogd():
    problem = OnlineQuadratic(L2Ball(3, radius=1.0), lam=1.0, offset=2.0, noise=1.0)
    yl = ocokit.run(YuanLamperski(beta=0.1, eta_p=1.0, start="center"), problem, 30, 5, record_decisions=True)
    ogd = ocokit.run(OGD(eta=0.1), problem, 30, 5, record_decisions=True)
    np.testing.assert_allclose(np.asarray(yl.decisions), np.asarray(ogd.decisions), atol=1e-12)
    assert yl.diagnostics["multiplier"].shape == (30, 0)


def test_from_theory_uses_the_code_parameters_and_overrides():
    info = ProblemInfo.of(PROBLEM, 400)
    learner = YuanLamperski.from_theory(info)
    assert float(learner.beta) == pytest.approx(1.0 / 20.0, rel=1e-12)
    assert float(learner.eta_p) == pytest.approx(1.0 / (5 * 2 * 1.0 * 20.0), rel=1e-12)
    assert (learner.first_update, learner.start) == ("gradient", "origin")
    other = YuanLamperski.from_theory(info, a=2.0, G=3.0, beta=0.5, first_update="penalised")
    assert float(other.eta_p) == pytest.approx(1.0 / (2 * 2 * 9.0 * 20.0), rel=1e-12)
    assert (float(other.beta), other.first_update) == (0.5, "penalised")
    unconstrained = CustomProblem(domain=Box(-1.0, 1.0, dim=2), loss=lambda d, x: jnp.dot(d, x), data=jnp.ones((3, 2)))
    assert float(YuanLamperski.from_theory(ProblemInfo.of(unconstrained, 400)).eta_p) == pytest.approx(0.01)  # p = 1


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"beta": 0.0}, "beta"),
        ({"beta": -1.0}, "beta"),
        ({"eta_p": 0.0}, "eta_p"),
        ({"eta_p": float("inf")}, "eta_p"),
        ({"first_update": "plain"}, "first_update"),
        ({"start": "zero"}, "start"),
    ],
)
def test_bad_hyperparameters_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        YuanLamperski(**{"beta": 1.0, "eta_p": 1.0, **kwargs})


@pytest.mark.parametrize(("kwargs", "name"), [({"a": 0.0}, "a"), ({"G": -1.0}, "G"), ({"eta": 1.0}, "unknown")])
def test_bad_theory_arguments_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}"):
        YuanLamperski.from_theory(ProblemInfo.of(PROBLEM, 100), **kwargs)

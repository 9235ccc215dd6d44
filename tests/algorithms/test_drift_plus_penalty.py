"""Yu-Neely-Wei drift-plus-penalty against a NumPy loop written from spec baselines.md §7.2."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import OGD, ProblemInfo, YuNeelyWei
from ocokit.problems import CustomProblem, OnlineQuadratic
from ocokit.sets import Box, L2Ball

from ..helpers import play_by_hand, two_round_toy

T = 30
DIM, N = 3, 2


def _loss(data, x):
    r = data["H"] @ x - data["y"]
    return 0.5 * jnp.dot(r, r)


def _constraints(data, x):
    return data["A"] @ x - data["b"]


def fixed_problem(seed=0, b_shift=0.0, domain=None):
    """Least squares with linear constraints A_t x <= b_t, fixed arrays (the NumPy loop reads the same)."""
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    data = {
        "H": np.asarray(jax.random.uniform(k[0], (T, 4, DIM), minval=-1.0, maxval=1.0)),
        "y": np.asarray(jax.random.normal(k[1], (T, 4))) + 2.0,
        "A": np.asarray(jax.random.uniform(k[2], (T, N, DIM))),
        "b": np.asarray(jax.random.uniform(k[3], (T, N))) + b_shift,
    }
    domain = domain or Box(-1.0, 2.0, dim=DIM)
    problem = CustomProblem(domain=domain, loss=_loss, constraints=_constraints, data=jax.tree.map(jnp.asarray, data))
    return problem, data


def reference_ynw(data, V, alpha, project, x1):
    """Spec baselines.md §7.2, line by line."""
    x, Q = np.asarray(x1, dtype=float), np.zeros(N)
    xs, Qs = [], []
    for t in range(T):
        H, y, A, b = data["H"][t], data["y"][t], data["A"][t], data["b"][t]
        xs.append(x.copy())
        grad_f = H.T @ (H @ x - y)
        g, J = A @ x - b, A
        d = V * grad_f + J.T @ Q
        x_new = project(x - d / (2 * alpha))
        Q = np.maximum(Q + g + J @ (x_new - x), 0.0)
        Qs.append(Q.copy())
        x = x_new
    return np.array(xs), np.array(Qs)


@pytest.mark.parametrize(("V", "alpha"), [(1.0, 2.0), (math.sqrt(T), float(T))])
def test_matches_numpy_reference_iterate_by_iterate(V, alpha):
    problem, data = fixed_problem()
    learner = YuNeelyWei(V=V, alpha=alpha)  # starts at Pi_K(0) = 0 (the reference codes' x(1))
    traj = ocokit.run(learner, problem, T, 0, record_decisions=True)
    x1 = np.zeros(DIM)
    xs, Qs = reference_ynw(data, V, alpha, lambda z: np.clip(z, -1.0, 2.0), x1)
    np.testing.assert_allclose(np.asarray(traj.decisions), xs, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(traj.diagnostics["queue"]), Qs, rtol=0, atol=1e-10)
    assert np.all(Qs >= 0)


def test_two_round_toy_with_hand_computed_timing():
    """f_t(x) = x, g_t(x) = a_t x - b_t on [-10, 10], V = alpha = 1 (spec §10.1: old g, linearised at x(t+1)).

    Round 1: x(1) = 0, g = 1, d = 1, x(2) = -0.5, Q(2) = max(0 + 1 + 1 * (-0.5), 0) = 0.5.
    Round 2: g = 2 (-0.5) + 3 = 2, d = 1 + 0.5 * 2 = 2, x(3) = -1.5, Q(3) = max(0.5 + 2 + 2 (-1), 0) = 0.5.
    """
    problem, data = two_round_toy()
    xs, qs = play_by_hand(YuNeelyWei(V=1.0, alpha=1.0), problem, data, lambda lrn, s: s.queue[0])
    np.testing.assert_allclose(xs, [0.0, -0.5, -1.5], atol=1e-12)
    np.testing.assert_allclose(qs, [0.5, 0.5], atol=1e-12)


def test_queue_is_the_running_sum_of_linearised_violations_when_it_never_clips():
    problem, data = fixed_problem(b_shift=-5.0)  # A x - b >= -3 + 4 > 0 on the box: Q never clips
    traj = ocokit.run(YuNeelyWei(V=1.0, alpha=5.0), problem, T, 0, record_decisions=True)
    xs = np.asarray(traj.decisions)
    Q = np.asarray(traj.diagnostics["queue"])  # Q(t+1), after round t
    # g_s(x_s) + <grad g_s, x_{s+1} - x_s> for s = 1..T-1 (x_{T+1} is not recorded).
    lin = np.einsum("tnd,td->tn", data["A"][:-1], xs[:-1]) - data["b"][:-1]
    lin += np.einsum("tnd,td->tn", data["A"][:-1], xs[1:] - xs[:-1])
    assert np.all(lin > 0)
    np.testing.assert_allclose(Q[:-1], np.cumsum(lin, axis=0), atol=1e-10)


def test_without_constraints_reduces_to_projected_ogd():
    problem = OnlineQuadratic(L2Ball(DIM, radius=1.0), lam=1.0, offset=2.0, noise=1.0)
    V, alpha = 3.0, 10.0
    ynw = ocokit.run(YuNeelyWei(V=V, alpha=alpha, start="center"), problem, T, 5, record_decisions=True)
    ogd = ocokit.run(OGD(eta=V / (2 * alpha)), problem, T, 5, record_decisions=True)
    np.testing.assert_allclose(np.asarray(ynw.decisions), np.asarray(ogd.decisions), atol=1e-12)
    assert ynw.diagnostics["queue"].shape == (T, 0)


def test_from_theory_uses_the_spec_parameters_and_overrides():
    problem, _ = fixed_problem()
    info = ProblemInfo.of(problem, 400)
    learner = YuNeelyWei.from_theory(info)
    assert float(learner.V) == pytest.approx(20.0)
    assert float(learner.alpha) == pytest.approx(400.0)
    assert learner.start == "origin"
    other = YuNeelyWei.from_theory(info, V=2.0, alpha=3.0, start="center")
    assert (float(other.V), float(other.alpha), other.start) == (2.0, 3.0, "center")


def test_origin_start_is_the_projection_of_zero():
    problem, _ = fixed_problem(domain=Box(1.0, 2.0, dim=DIM))
    state = YuNeelyWei(V=1.0, alpha=1.0).init(ProblemInfo.of(problem, T), jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(state.x), np.ones(DIM))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"V": 0.0, "alpha": 1.0}, "V"),
        ({"V": -1.0, "alpha": 1.0}, "V"),
        ({"V": 1.0, "alpha": 0.0}, "alpha"),
        ({"V": 1.0, "alpha": float("inf")}, "alpha"),
        ({"V": 1.0, "alpha": 1.0, "start": "zero"}, "start"),
    ],
)
def test_bad_hyperparameters_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        YuNeelyWei(**kwargs)

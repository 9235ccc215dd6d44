"""Metrics on trajectories small enough to compute by hand."""

import jax.numpy as jnp
import numpy as np
import pytest

from ocokit import metrics
from ocokit.engine import Trajectory


def _traj(loss, cons, comparator=None, optimum=None, diagnostics=None):
    return Trajectory(
        loss=jnp.asarray(loss, dtype=float),
        constraints=jnp.asarray(cons, dtype=float),
        diagnostics=diagnostics or {},
        comparator_loss=None if comparator is None else jnp.asarray(comparator, dtype=float),
        optimum_loss=None if optimum is None else jnp.asarray(optimum, dtype=float),
        decisions=None,
        first_bad_round=jnp.asarray(-1),
        bad_quantity=jnp.asarray(-1),
    )


TRAJ = _traj(
    loss=[1.0, 2.0, 3.0],
    cons=[[0.5, -1.0], [-0.25, 2.0], [1.0, -3.0]],
    comparator=[0.5, 0.5, 0.5],
    optimum=[0.0, 1.0, 1.0],
    diagnostics={"oracle_calls": jnp.array([1, 3, 2])},
)


def test_losses_and_regrets():
    np.testing.assert_array_equal(metrics.cumulative_loss(TRAJ), [1, 3, 6])
    np.testing.assert_array_equal(metrics.time_average_loss(TRAJ), [1, 1.5, 2])
    np.testing.assert_array_equal(metrics.static_regret(TRAJ), [0.5, 2.0, 4.5])
    np.testing.assert_array_equal(metrics.dynamic_regret(TRAJ), [1, 2, 4])


def test_violations():
    # hard: positive parts summed over constraints and rounds, never cancelling
    np.testing.assert_array_equal(metrics.hard_violation(TRAJ), [0.5, 2.5, 3.5])
    np.testing.assert_array_equal(metrics.hard_violation_per_constraint(TRAJ)[-1], [1.5, 2.0])
    assert metrics.ccv is metrics.hard_violation
    np.testing.assert_array_equal(metrics.time_average_hard_violation(TRAJ), [0.5, 1.25, 3.5 / 3])
    # soft: running sums per constraint are [0.5, 0.25, 1.25] and [-1, 1, -2]
    np.testing.assert_array_equal(metrics.soft_violation(TRAJ), [0.5, 1.25, 1.25])
    np.testing.assert_allclose(metrics.long_term_violation(TRAJ), [0.5, np.hypot(0.25, 1.0), 1.25])
    np.testing.assert_array_equal(metrics.cumulative_oracle_calls(TRAJ), [1, 4, 6])
    # squared: [0.5^2, 2^2, 1^2] per round (the negative parts give 0), then the running sum
    np.testing.assert_array_equal(metrics.squared_violation(TRAJ), [0.25, 4.25, 5.25])


def test_squared_violation_is_recorded_and_batched():
    assert metrics.ROUND_METRICS["squared_violation"] is metrics.squared_violation
    np.testing.assert_array_equal(metrics.available_metrics(TRAJ)["squared_violation"], [0.25, 4.25, 5.25])
    t = _traj(np.ones((4, 3)), np.full((4, 3, 2), -0.5))  # feasible everywhere: no squared violation
    assert metrics.squared_violation(t).shape == (4, 3)
    np.testing.assert_array_equal(metrics.squared_violation(t), 0.0)
    none = _traj([1.0, 2.0], np.zeros((2, 0)))  # no constraints
    np.testing.assert_array_equal(metrics.squared_violation(none), [0.0, 0.0])


def test_soft_never_exceeds_hard():
    rng = np.random.default_rng(0)
    t = _traj(rng.normal(size=50), rng.normal(size=(50, 3)))
    assert np.all(metrics.soft_violation(t) <= metrics.hard_violation(t) + 1e-12)


def test_missing_comparators_are_reported_not_guessed():
    t = _traj([1.0], [[0.0]])
    with pytest.raises(ValueError, match="best_fixed"):
        metrics.static_regret(t)
    with pytest.raises(ValueError, match="round_optimum"):
        metrics.dynamic_regret(t)
    assert "static_regret" not in metrics.available_metrics(t)
    assert "cumulative_loss" in metrics.available_metrics(t)


def test_batched_trajectories():
    t = _traj(np.ones((4, 3)), np.ones((4, 3, 2)))
    assert metrics.hard_violation(t).shape == (4, 3)
    np.testing.assert_array_equal(metrics.hard_violation(t)[:, -1], 6.0)


def test_growth_exponent_recovers_a_power_law():
    T = np.array([100, 200, 400, 800, 1600])
    slope, se = metrics.growth_exponent(T, 3.0 * T**0.75)
    assert slope == pytest.approx(0.75, abs=1e-12) and se == pytest.approx(0.0, abs=1e-10)
    noisy = 3.0 * T**0.5 * np.array([1.1, 0.9, 1.05, 0.95, 1.0])
    slope, se = metrics.growth_exponent(T, noisy)
    assert abs(slope - 0.5) < 3 * se + 0.05 and se > 0


def test_growth_exponent_bad_input():
    with pytest.raises(ValueError, match=">= 3"):
        metrics.growth_exponent([1, 2], [1, 2])
    with pytest.raises(ValueError, match="positive"):
        metrics.growth_exponent([1, 2, 3], [1, 0, 2])


def test_mean_std_is_the_sample_standard_deviation():
    # values 1, 2, 3, 4: mean 5/2, squared deviations sum to 5, so the sample variance (ddof = 1) is 5/3
    entry = metrics.mean_std([1.0, 2.0, 3.0, 4.0])
    assert entry["mean"] == 2.5
    assert entry["std"] == np.sqrt(5.0 / 3.0)
    assert metrics.quartiles([1.0, 2.0, 3.0, 4.0])["std"] == np.sqrt(5.0 / 3.0)
    assert metrics.mean_std([7.0]) == {"mean": 7.0, "std": 0.0}  # one seed: no spread measured

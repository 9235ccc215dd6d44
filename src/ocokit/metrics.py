"""Performance metrics: pure functions of a [`Trajectory`][ocokit.Trajectory] (or of its arrays).

Every per-round metric returns the running value after each round t = 1..T (shape ``(..., T)``, so
batched trajectories work unchanged); the final value is ``metric[..., -1]``. Definitions follow
DESIGN.md and Wang, Yan and Liu (AAAI 2025), section 3.2:

* cumulative loss ``sum_{s<=t} f_s(x_s)``;
* static regret ``sum_{s<=t} f_s(x_s) - f_s(x*)`` against the best fixed point feasible for all rounds;
* dynamic regret ``sum_{s<=t} f_s(x_s) - f_s(x_s*)`` against the per-round constrained optimum;
* CCV = hard violation ``sum_{s<=t} sum_n [g_s^n(x_s)]_+`` (no cancellation across rounds);
* soft violation ``sum_n [sum_{s<=t} g_s^n(x_s)]_+`` and long-term violation ``||[sum_{s<=t} g_s(x_s)]_+||_2``;
* squared violation ``sum_{s<=t} sum_n [g_s^n(x_s)]_+^2`` (Yuan and Lamperski, NeurIPS 2018).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ocokit.trajectory import Trajectory


def _np(a) -> np.ndarray:
    return np.asarray(a, dtype=float)


def cumulative_loss(traj: Trajectory) -> np.ndarray:
    """``sum_{s<=t} f_s(x_s)``."""
    return np.cumsum(_np(traj.loss), axis=-1)


def time_average_loss(traj: Trajectory) -> np.ndarray:
    """``(1/t) sum_{s<=t} f_s(x_s)``."""
    return cumulative_loss(traj) / np.arange(1, traj.horizon + 1)


def static_regret(traj: Trajectory) -> np.ndarray:
    """``sum_{s<=t} f_s(x_s) - f_s(x*)``; raises ``ValueError`` if the run recorded no comparator."""
    if traj.comparator_loss is None:
        raise ValueError("static regret needs a problem with best_fixed(); this trajectory has no comparator_loss")
    return np.cumsum(_np(traj.loss) - _np(traj.comparator_loss), axis=-1)


def dynamic_regret(traj: Trajectory) -> np.ndarray:
    """``sum_{s<=t} f_s(x_s) - f_s(x_s*)``; raises ``ValueError`` without a per-round optimum."""
    if traj.optimum_loss is None:
        raise ValueError("dynamic regret needs a problem with round_optimum(); this trajectory has no optimum_loss")
    return np.cumsum(_np(traj.loss) - _np(traj.optimum_loss), axis=-1)


def hard_violation_per_constraint(traj: Trajectory) -> np.ndarray:
    """``sum_{s<=t} [g_s^n(x_s)]_+`` for each n, shape ``(..., T, N)``."""
    return np.cumsum(np.maximum(_np(traj.constraints), 0.0), axis=-2)


def hard_violation(traj: Trajectory) -> np.ndarray:
    """CCV = hard violation ``sum_{s<=t} sum_n [g_s^n(x_s)]_+``."""
    return hard_violation_per_constraint(traj).sum(axis=-1)


ccv = hard_violation


def time_average_hard_violation(traj: Trajectory) -> np.ndarray:
    """``(1/t) sum_{s<=t} sum_n [g_s^n(x_s)]_+`` (delayed jobs per slot in the job-scheduling setup)."""
    return hard_violation(traj) / np.arange(1, traj.horizon + 1)


def soft_violation(traj: Trajectory) -> np.ndarray:
    """``sum_n [sum_{s<=t} g_s^n(x_s)]_+`` (Wang, Yan and Liu, eq. 4)."""
    return np.maximum(np.cumsum(_np(traj.constraints), axis=-2), 0.0).sum(axis=-1)


def long_term_violation(traj: Trajectory) -> np.ndarray:
    """``|| [sum_{s<=t} g_s(x_s)]_+ ||_2``."""
    return np.linalg.norm(np.maximum(np.cumsum(_np(traj.constraints), axis=-2), 0.0), axis=-1)


def squared_violation(traj: Trajectory) -> np.ndarray:
    """``sum_{s<=t} sum_n [g_s^n(x_s)]_+^2``: the cumulative squared violation (no cancellation across rounds).

    The violation that J. Yuan and A. Lamperski, "Online convex optimization for cumulative constraints",
    NeurIPS 2018, bound ([`YuanLamperski`][ocokit.algorithms.YuanLamperski]); squared per constraint, then summed over
    the constraints and the rounds (spec baselines.md §0.2).
    """
    return np.cumsum((np.maximum(_np(traj.constraints), 0.0) ** 2).sum(axis=-1), axis=-1)


def cumulative_oracle_calls(traj: Trajectory) -> np.ndarray:
    """Running total of the learner's ``"oracle_calls"`` diagnostic."""
    if "oracle_calls" not in traj.diagnostics:
        raise ValueError("this learner records no 'oracle_calls' diagnostic")
    return np.cumsum(_np(traj.diagnostics["oracle_calls"]), axis=-1)


ROUND_METRICS: dict[str, Callable[[Trajectory], np.ndarray]] = {
    "cumulative_loss": cumulative_loss,
    "time_average_loss": time_average_loss,
    "static_regret": static_regret,
    "dynamic_regret": dynamic_regret,
    "hard_violation": hard_violation,
    "time_average_hard_violation": time_average_hard_violation,
    "soft_violation": soft_violation,
    "long_term_violation": long_term_violation,
    "squared_violation": squared_violation,
    "cumulative_oracle_calls": cumulative_oracle_calls,
}
"""Per-round metrics by name (CCV is ``hard_violation``); the harness records every one that applies."""


def available_metrics(traj: Trajectory) -> dict[str, np.ndarray]:
    """Every metric of `ROUND_METRICS` that ``traj`` supports, by name."""
    out = {}
    for name, fn in ROUND_METRICS.items():
        try:
            out[name] = fn(traj)
        except ValueError:
            continue
    return out


def growth_exponent(horizons, values) -> tuple[float, float]:
    """Least-squares slope of ``log(values)`` against ``log(horizons)`` and its standard error.

    A metric growing like ``c T^a`` gives slope ``a``. Needs at least three positive points.

    Returns:
        ``(slope, standard_error)``.
    """
    T = _np(horizons).ravel()
    v = _np(values).ravel()
    if T.shape != v.shape or T.size < 3:
        raise ValueError(f"growth_exponent needs >= 3 matching points, got {T.size} horizons and {v.size} values")
    if np.any(T <= 0) or np.any(v <= 0):
        raise ValueError("growth_exponent needs positive horizons and values (log-log fit)")
    slope, se, _ = linear_fit(np.log(T), np.log(v))
    return slope, se


def linear_fit(x, y) -> tuple[float, float, float]:
    """Least-squares slope of ``y`` on ``x``, its standard error and the coefficient of determination R^2."""
    x, y = _np(x).ravel(), _np(y).ravel()
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc**2).sum())
    resid = y - y.mean() - slope * xc
    se = float(np.sqrt((resid**2).sum() / max(x.size - 2, 1) / (xc**2).sum()))
    r2 = 1.0 - float((resid**2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-300))
    return slope, se, r2


def sample_std(values) -> float:
    """The sample standard deviation of ``values`` (ddof = 1, as ``stddev_samp`` in SQL and pandas' ``std``);
    0.0 for a single value (no spread is measured)."""
    v = _np(values).ravel()
    return float(v.std(ddof=1)) if v.size > 1 else 0.0


def mean_std(values) -> dict[str, float]:
    """``{"mean", "std"}`` of ``values``: the summary entry of a final metric over seeds.

    ``std`` is the sample standard deviation (ddof = 1; [`sample_std`][ocokit.metrics.sample_std]), the spread
    of one seed's value, not the standard error of the mean (divide by ``sqrt(seeds)`` for that).
    """
    return {"mean": float(np.mean(values)), "std": sample_std(values)}


def quartiles(values) -> dict[str, float]:
    """Mean, sample std (ddof = 1), median and quartiles of the finite entries (nan if none)."""
    v = _np(values).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return dict.fromkeys(("mean", "std", "median", "q25", "q75"), float("nan"))
    q25, q50, q75 = np.percentile(v, [25, 50, 75])
    return {"mean": float(v.mean()), "std": sample_std(v), "median": float(q50), "q25": float(q25), "q75": float(q75)}

"""Experiments of paper 002 (Ye et al., "OCO with Memory and Limited Predictions", 2024), Sec. 5, Figs. 1-2.

Both reproduce the paper's scalar example: ``x_t`` in R (d = 1), memory h = 2, quadratic costs
``f_t(x_{t-1}, x_t) = 1/2 w^T A_t w + B_t^T w`` with the spec's inferred generator (``A_t = Q diag(lam) Q^T``,
``lam ~ U[5, 10]``, ``B_t ~ U[-1, 1]^2``, paper002.md §6 B1), ``x0 = 0.5``, ``eta_t = 0.2 / t``,
``alpha = 0.05``, ``delta = 0.2``, ``delta' = 1e-4``, no model error (``l_t = f_t``), and dynamic regret
against the offline optimum of the whole horizon (eq. 3). Smoothing laws: Gaussian N(0, 1), truncated
Gaussian on [-2, 2] and Bernoulli +-1; the truncated Gaussian uses a quarter of the runs (the paper's
50 against 200). Bands are quartiles (the paper's shaded areas), centre lines medians.

* ``memory-predictions-horizon`` (Fig. 1): regret of the initialisation phase alone (subroutine (a),
  :class:`~ocokit.algorithms.BanditOCOMemory`, which is Algorithm 1's ``x^0``) for T = 5..20, as
  ``Reg / sqrt(T)`` and ``Reg / T``. The learner never uses T, so each run is played once at the largest T
  and each horizon T reads its first T rounds; every (T, seed) pair is a fresh instance.
* ``memory-predictions-window`` (Fig. 2): overall regret of Algorithm 1
  (:class:`~ocokit.algorithms.OCOMemoryLimitedPredictions`, K = W layers for h = 2) at T = 20, as
  ``log(Reg)`` against W = 1..10.

The decision set is the box X = [-5, 5] (option ``box``; spec §6 B3), not R as in the paper: with the
paper's single-point settings on R both phases diverge (the initialisation step ``eta_r l_r / delta`` and
the layer step ``alpha l_k / delta'`` grow with the quadratic cost they move along: ``|x|`` reaches 1e12
within 20 rounds). Both experiments measure that literal setting on a few seeds (``diverged`` in the
summary, the last row of the claims table, and the figure's title) and plot the single-point runs on the box
with the paper's parameters otherwise (``one_point_delta_prime`` can change ``delta'``; 0.2 does not help).
Those runs are finite but saturate at the box's faces. The two-point runs stay far inside the box (``|x| < 2.2``
in our runs), so they are the paper's unconstrained runs.
Window reading: the pseudo-code's (queries up to round t + W, spec §6 A7; option ``strict_window=true``
for the stated window t..t+W-1).

Options (``--option key=value``): ``box`` (5.0), ``one_point_delta_prime`` (1e-4), ``truncated_share``
(0.25), ``windows`` (``1-10`` or a comma list), ``strict_window`` (false), ``literal_seeds`` (20), and
``laws`` / ``points`` (comma lists) to run a subset of the configurations.
"""

from __future__ import annotations

import math
import time
from typing import Any

import equinox as eqx
import numpy as np

from ocokit import metrics
from ocokit.algorithms import BanditOCOMemory, OCOMemoryLimitedPredictions
from ocokit.engine import sweep
from ocokit.experiments._base import Algorithm, Claim, Report, register
from ocokit.experiments._paper002_base import (
    HALF_WIDTH,
    LAWS,
    PAPER,
    POINTS,
    Paper002Experiment,
    iqr,
    label,
    linear_fit,
    literal_finite,
    make_problem,
    num_seeds,
    optimal_costs,
    parse_options,
    quartiles,
    run_keys,
)
from ocokit.results import load_records, run_path, save_records

_LITERAL_CLAIM = "single-point feedback with the paper's parameters on X = R stays finite (the paper plots it)"


def _bandit(law: str, estimator: str) -> BanditOCOMemory:
    """Subroutine (a) with the paper's parameters (Algorithm 1's ``x^0``)."""
    return BanditOCOMemory(eta=PAPER["eta"], delta=PAPER["delta"], x0=PAPER["x0"], half_width=HALF_WIDTH, law=law,
                           estimator=estimator)  # fmt: skip


class MemoryPredictionsHorizon(Paper002Experiment):
    """Fig. 1 of paper 002: the initialisation phase's ``Reg / sqrt(T)`` and ``Reg / T`` for T = 5..T."""

    name = "memory-predictions-horizon"
    paper = "002 Fig. 1"
    title = "OCO with memory: initialisation-phase regret against T"
    default_T = 20
    default_seeds = 200
    configs = tuple((law, est) for law in ("gaussian", "truncated_gaussian") for est in ("two_point", "one_point"))
    algorithms = tuple(
        Algorithm(label(law, est), lambda info, law=law, est=est: _bandit(law, est)) for law, est in configs
    )

    def _collect(self, *, T, seeds, out, options, progress, compute) -> Report:
        opts = parse_options(options)
        if seeds > 1000:
            raise ValueError(f"seeds must be <= 1000 (run ids are 1000 T + seed), got {seeds}")
        horizons = list(range(min(5, T), T + 1))
        problem = make_problem(opts["box"])
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: dict[str, dict[str, Any]] = {}
        skipped = new = 0
        for (law, est), algo in zip(self.configs, self.algorithms, strict=True):
            if law not in opts["laws"] or est not in opts["points"]:
                continue
            name, learner = algo.label, algo.make(None)
            S = num_seeds(law, seeds, opts["truncated_share"])
            base = {
                "learner": eqx.tree_pformat(learner, short_arrays=False),
                "problem": eqx.tree_pformat(problem),
                "seeds": S,
                "T_max": T,
            }
            paths = {h: run_path(out, self.name, name, {**base, "T": h}) for h in horizons}
            progress.start(name, len(horizons))
            if all(self._stored(p, compute) for p in paths.values()):
                skipped += len(horizons)
                progress.advance(name, len(horizons))
            else:
                seed_ids = [1000 * h + s for h in horizons for s in range(S)]  # fresh instance per (T, seed)
                tic = time.perf_counter()
                loss = np.asarray(sweep(learner, problem, T, seed_ids, chunk_size=256, throw=False).loss)
                seconds = (time.perf_counter() - tic) / (T * len(seed_ids))
                for i, h in enumerate(horizons):
                    rows = slice(i * S, (i + 1) * S)
                    cost = loss[rows, :h].sum(axis=1)
                    best = np.asarray(optimal_costs(problem, run_keys(seed_ids[rows]), h))
                    columns = {"seed": np.asarray(seed_ids[rows]), "regret": cost - best, "cost": cost,
                               "optimal_cost": best}  # fmt: skip
                    meta = {**base, "T": h, "experiment": self.name, "algorithm": name,
                            "wall_seconds_per_round": seconds}  # fmt: skip
                    save_records(paths[h], columns, meta)
                    progress.advance(name, 1)
                new += len(horizons)
            records = [load_records(paths[h]) for h in horizons]
            reg = np.stack([r[0]["regret"] for r in records], axis=1)  # (S, len(horizons))
            hs = np.asarray(horizons, float)
            curves[name] = {"Reg / sqrt(T)": reg / np.sqrt(hs), "Reg / T": reg / hs}
            summary[name] = {
                "regret": quartiles(reg[:, -1]),
                "reg_over_sqrt_T": quartiles(reg[:, -1] / math.sqrt(horizons[-1])),
                "reg_over_T": quartiles(reg[:, -1] / horizons[-1]),
                "by_T": {
                    "T": horizons,
                    "mean_regret": [float(v) for v in np.nanmean(np.where(np.isfinite(reg), reg, np.nan), axis=0)],
                    "median_regret": [float(v) for v in np.nanmedian(reg, axis=0)],
                    "iqr_reg_over_sqrt_T": iqr(reg / np.sqrt(hs)),
                },
                "seeds": S,
                "diverged": int((~np.isfinite(reg).all(axis=1)).sum()),
                "wall_seconds_per_round": float(np.mean([r[1]["wall_seconds_per_round"] for r in records])),
                "note": "subroutine (a) alone = Algorithm 1's x^0",
            }
        box = f"X = [-{opts['box']:g}, {opts['box']:g}]"
        literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained)"
        summary[literal], fresh, stale = self._literal(
            literal, {None: _bandit("truncated_gaussian", "one_point")}, T, min(seeds, opts["literal_seeds"]), out,
            compute, progress, f"the paper's parameters on {box}",
        )  # fmt: skip
        panels = ["Reg / sqrt(T)", "Reg / T"]
        return self._finish(summary, curves, panels, out, T, seeds, options, skipped + stale, new + fresh,
                            setting=box, literal=literal, x=np.asarray(horizons), xlabel="T", logy=panels)  # fmt: skip


def _two_vs_one(summary, laws, stat) -> tuple[str, bool]:
    parts, holds = [], True
    for law in laws:
        two, one = stat(summary[label(law, "two_point")]), stat(summary[label(law, "one_point")])
        parts.append(f"{LAWS[law]}: {two:.3g} vs {one:.3g}")
        holds &= two < one
    return "; ".join(parts), holds


def _horizon_two_vs_one(summary) -> tuple[str, bool]:
    text, holds = _two_vs_one(summary, ("gaussian", "truncated_gaussian"), lambda s: s["regret"]["mean"])
    return f"mean Reg at the largest T, two- vs one-point: {text}", holds


def _horizon_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    parts, holds = [], True
    for est in ("two_point", "one_point"):
        tg, g = summary[label("truncated_gaussian", est)], summary[label("gaussian", est)]
        iqr_tg = float(np.mean(tg["by_T"]["iqr_reg_over_sqrt_T"]))
        iqr_g = float(np.mean(g["by_T"]["iqr_reg_over_sqrt_T"]))
        where = " (on the box)" if est == "one_point" else ""
        parts.append(
            f"{POINTS[est]}{where}: mean Reg {tg['regret']['mean']:.3g} vs {g['regret']['mean']:.3g}, "
            f"IQR of Reg/sqrt(T) {iqr_tg:.3g} vs {iqr_g:.3g}"
        )
        holds &= tg["regret"]["mean"] < g["regret"]["mean"] and iqr_tg < iqr_g
    return "truncated vs Gaussian: " + "; ".join(parts), holds


def _horizon_sublinear(summary) -> tuple[str, bool]:
    s = summary[label("truncated_gaussian", "two_point")]["by_T"]
    Ts, reg = np.asarray(s["T"], float), np.asarray(s["mean_regret"], float)
    if Ts.size < 3:
        return f"not measured (needs >= 3 horizons, got {Ts.size})", False
    slope, se = metrics.growth_exponent(Ts, reg)
    ratio = (reg[-1] / Ts[-1]) / (reg[0] / Ts[0])
    return (
        f"truncated two-point: Reg ~ T^{slope:.2f} (se {se:.2f}); Reg/T at T={Ts[-1]:g} is {ratio:.2f}x "
        f"that at T={Ts[0]:g}",
        slope < 1.0 and ratio < 1.0,
    )


MemoryPredictionsHorizon.claims = (
    Claim("two-point feedback gives lower initialisation-phase regret than single-point", _horizon_two_vs_one),
    Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _horizon_truncated_vs_gaussian),
    Claim("the initialisation phase has sublinear regret: Reg/T declines in T (Theorem 1)", _horizon_sublinear),
    Claim(_LITERAL_CLAIM, literal_finite),
)


class MemoryPredictionsWindow(Paper002Experiment):
    """Fig. 2 of paper 002: ``log(Reg)`` of Algorithm 1 against the prediction window W at T = 20."""

    name = "memory-predictions-window"
    paper = "002 Fig. 2"
    title = "OCO with memory and limited predictions: log(Reg) against the window W"
    default_T = 20
    default_seeds = 200
    configs = tuple((law, est) for law in LAWS for est in POINTS)
    algorithms = tuple(
        Algorithm(
            label(law, est),
            lambda info, law=law, est=est: OCOMemoryLimitedPredictions(
                window=1, **PAPER, half_width=HALF_WIDTH, law=law, estimator=est
            ),
            "Algorithm 1, K = W layers (h = 2)",
        )
        for law, est in configs
    )

    @staticmethod
    def _learner(law, est, W, opts, delta_prime=None) -> OCOMemoryLimitedPredictions:
        """Algorithm 1 with the paper's parameters (one-point: ``delta'`` of the options unless given)."""
        params = {**PAPER, "half_width": HALF_WIDTH}
        if est == "one_point":
            params["delta_prime"] = opts["one_point_delta_prime"] if delta_prime is None else delta_prime
        return OCOMemoryLimitedPredictions(
            window=W, law=law, estimator=est, strict_window=opts["strict_window"], **params
        )

    def _collect(self, *, T, seeds, out, options, progress, compute) -> Report:
        opts = parse_options(options)
        windows = opts["windows"]
        Ws = np.asarray(windows, float)
        problem = make_problem(opts["box"])
        box = f"X = [-{opts['box']:g}, {opts['box']:g}]"
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: dict[str, dict[str, Any]] = {}
        skipped = new = 0
        for law, est in self.configs:
            if law not in opts["laws"] or est not in opts["points"]:
                continue
            name = label(law, est)
            S = num_seeds(law, seeds, opts["truncated_share"])
            progress.start(name, len(windows))
            regs, seconds = [], []
            for W in windows:
                learner = self._learner(law, est, W, opts)
                base = {"learner": eqx.tree_pformat(learner, short_arrays=False),
                        "problem": eqx.tree_pformat(problem), "seeds": S, "T": T, "W": W}  # fmt: skip
                (cols, meta), fresh = self._runs(name, learner, problem, T, range(S), out, base, compute, progress)
                new, skipped = new + fresh, skipped + (not fresh)
                regs.append(cols["regret"])
                seconds.append(meta["wall_seconds_per_round"])
            reg = np.stack(regs, axis=1)  # (S, len(windows))
            log_reg = np.log(np.where(reg > 0, reg, np.nan))
            curves.setdefault(LAWS[law], {})[f"log(Reg), {POINTS[est]}"] = log_reg
            med = np.nanmedian(log_reg, axis=0)
            slope, r2 = linear_fit(Ws, med) if len(windows) >= 2 else (math.nan, math.nan)
            summary[name] = {
                "log_regret_first_W": quartiles(log_reg[:, 0]),
                "log_regret_last_W": quartiles(log_reg[:, -1]),
                "by_W": {
                    "W": windows,
                    "median_log_regret": [float(v) for v in med],
                    "mean_regret": [float(v) for v in np.nanmean(reg, axis=0)],
                    "iqr_log_regret": iqr(log_reg),
                },
                "slope_per_W": slope,
                "r2": r2,
                "seeds": S,
                "diverged": int((~np.isfinite(reg)).sum()),
                "wall_seconds_per_round": float(np.mean(seconds)),
                "note": f"delta' = {self._learner(law, est, 1, opts).delta_prime:g}, {box}",
            }
        literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained, delta' = 1e-4)"
        literal_windows = sorted({windows[0], windows[len(windows) // 2], windows[-1]})
        learners = {W: self._learner("truncated_gaussian", "one_point", W, opts, PAPER["delta_prime"])
                    for W in literal_windows}  # fmt: skip
        plotted = f"the paper's parameters on {box}, delta' = {opts['one_point_delta_prime']:g}"
        summary[literal], fresh, stale = self._literal(
            literal, learners, T, min(seeds, opts["literal_seeds"]), out, compute, progress, plotted
        )
        panels = [f"log(Reg), {POINTS[e]}" for e in POINTS]
        return self._finish(summary, curves, panels, out, T, seeds, options, skipped + stale, new + fresh,
                            setting=f"T = {T}, {box}", literal=literal, x=Ws, xlabel="W")  # fmt: skip


def _mean_median_log(summary, law, est) -> float:
    return float(np.mean(summary[label(law, est)]["by_W"]["median_log_regret"]))


def _window_two_vs_one(summary) -> tuple[str, bool]:
    text, holds = _two_vs_one(summary, tuple(LAWS), lambda s: float(np.mean(s["by_W"]["median_log_regret"])))
    return f"median log(Reg) averaged over W, two- vs one-point: {text}", holds


def _window_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    tg, g = summary[label("truncated_gaussian", "two_point")], summary[label("gaussian", "two_point")]
    a, b = (
        _mean_median_log(summary, "truncated_gaussian", "two_point"),
        _mean_median_log(summary, "gaussian", "two_point"),
    )
    iqr_tg, iqr_g = float(np.mean(tg["by_W"]["iqr_log_regret"])), float(np.mean(g["by_W"]["iqr_log_regret"]))
    return (
        f"two-point, averaged over W: median log(Reg) {a:.3g} vs {b:.3g}; IQR of log(Reg) {iqr_tg:.3g} vs "
        f"{iqr_g:.3g}; decay per unit W {tg['slope_per_W']:.3g} vs {g['slope_per_W']:.3g}",
        a < b and iqr_tg < iqr_g,
    )


def _window_linear_decay(summary) -> tuple[str, bool]:
    s = summary[label("truncated_gaussian", "two_point")]
    if len(s["by_W"]["W"]) < 3:
        return f"not measured (needs >= 3 windows, got {len(s['by_W']['W'])})", False
    return (
        f"truncated two-point: median log(Reg) = c {s['slope_per_W']:+.3f} W, R^2 = {s['r2']:.2f}",
        s["slope_per_W"] < 0 and s["r2"] >= 0.9,
    )


def _window_bernoulli(summary) -> tuple[str, bool]:
    diff = _mean_median_log(summary, "rademacher", "two_point") - _mean_median_log(
        summary, "truncated_gaussian", "two_point"
    )
    better = "Bernoulli lower" if diff < 0 else "truncated Gaussian lower"
    return (
        f"two-point: median Reg ratio Bernoulli / truncated = {math.exp(diff):.3g} (geometric mean over W; "
        f"{better}); comparable = within a factor 10",
        abs(diff) < math.log(10.0),
    )


MemoryPredictionsWindow.claims = (
    Claim("two-point feedback gives lower regret than single-point", _window_two_vs_one),
    Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _window_truncated_vs_gaussian),
    Claim("log(Reg) falls about linearly in W for the truncated Gaussian (Theorem 2)", _window_linear_decay),
    Claim("Bernoulli smoothing is comparable to the truncated Gaussian", _window_bernoulli),
    Claim(_LITERAL_CLAIM, literal_finite),
)

MEMORY_PREDICTIONS_HORIZON = register(MemoryPredictionsHorizon())
MEMORY_PREDICTIONS_WINDOW = register(MemoryPredictionsWindow())

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
summary) and plot the single-point runs on the box with the paper's parameters otherwise
(``one_point_delta_prime`` can change ``delta'``; 0.2 does not help). Those runs are finite but
saturate at the box's faces. The two-point runs stay far inside the box (``|x| < 2.2`` in our runs), so
they are the paper's unconstrained runs.
Window reading: the pseudo-code's (queries up to round t + W, spec §6 A7; option ``strict_window=true``
for the stated window t..t+W-1).

Options (``--option key=value``): ``box`` (5.0), ``one_point_delta_prime`` (1e-4), ``truncated_share``
(0.25), ``windows`` (``1-10`` or a comma list), ``strict_window`` (false), ``literal_seeds`` (20), and
``laws`` / ``points`` (comma lists) to run a subset of the configurations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ocokit import metrics
from ocokit.algorithms import BanditOCOMemory, OCOMemoryLimitedPredictions
from ocokit.engine import split_key, sweep
from ocokit.experiments._base import (
    AbstractExperiment,
    Algorithm,
    Claim,
    Report,
    SilentProgress,
    register,
)
from ocokit.plotting import band_figure
from ocokit.problems import QuadraticWithMemory
from ocokit.results import atomic_write_json, load_records, run_path, save_records
from ocokit.sets import Box

PAPER = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-4, "x0": 0.5}
HALF_WIDTH = 2.0  # the experiments' truncation [-2, 2] ("slightly modify Definition 1")
LAWS = {"gaussian": "Gaussian", "truncated_gaussian": "truncated Gaussian", "rademacher": "Bernoulli"}
POINTS = {"two_point": "two-point", "one_point": "one-point"}
DEFAULTS = {
    "box": "5.0",
    "one_point_delta_prime": "1e-4",
    "truncated_share": "0.25",
    "windows": "1-10",
    "strict_window": "false",
    "literal_seeds": "20",
    "laws": ",".join(LAWS),
    "points": ",".join(POINTS),
}


def _label(law: str, estimator: str) -> str:
    return f"{LAWS[law]}, {POINTS[estimator]}"


def _options(options: Mapping[str, str] | None) -> dict[str, Any]:
    raw = {**DEFAULTS, **dict(options or {})}
    unknown = set(raw) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)}; valid: {sorted(DEFAULTS)}")
    try:
        parsed = {
            "box": float(raw["box"]),
            "one_point_delta_prime": float(raw["one_point_delta_prime"]),
            "truncated_share": float(raw["truncated_share"]),
            "windows": _windows(raw["windows"]),
            "strict_window": raw["strict_window"].lower() in ("1", "true", "yes"),
            "literal_seeds": int(raw["literal_seeds"]),
            "laws": [v.strip() for v in raw["laws"].split(",") if v.strip()],
            "points": [v.strip() for v in raw["points"].split(",") if v.strip()],
        }
    except ValueError as err:
        raise ValueError(f"bad option value: {err}") from None
    if not set(parsed["laws"]) <= set(LAWS) or not set(parsed["points"]) <= set(POINTS) or not parsed["laws"]:
        raise ValueError(f"options laws and points must be lists from {sorted(LAWS)} and {sorted(POINTS)}")
    if parsed["box"] <= 0 or parsed["one_point_delta_prime"] <= 0 or not 0 < parsed["truncated_share"] <= 1:
        raise ValueError("options box and one_point_delta_prime must be > 0 and truncated_share in (0, 1]")
    return parsed


def _windows(text: str) -> list[int]:
    if "-" in text:
        lo, hi = (int(v) for v in text.split("-"))
        values = list(range(lo, hi + 1))
    else:
        values = [int(v) for v in text.split(",") if v.strip()]
    if not values or min(values) < 1:
        raise ValueError(f"windows must be integers >= 1, got {text!r}")
    return values


def _seeds(law: str, seeds: int, share: float) -> int:
    return max(1, round(seeds * share)) if law == "truncated_gaussian" else seeds


def _problem(box: float) -> QuadraticWithMemory:
    return QuadraticWithMemory(Box(-box, box, dim=1), memory=2, x0=PAPER["x0"])


def _quartiles(values: np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": math.nan, "std": math.nan, "median": math.nan, "q25": math.nan, "q75": math.nan}
    q25, q50, q75 = np.percentile(v, [25, 50, 75])
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "median": float(q50),
        "q25": float(q25),
        "q75": float(q75),
    }


@eqx.filter_jit
def _optimal_costs(problem: QuadraticWithMemory, keys: jax.Array, T: int) -> jax.Array:
    """``C_T(x*)`` of the first T rounds of each run key (the engine's rounds, eq. 2 on horizon T)."""

    def one(key):
        env_key = split_key(key)[0]
        episode = problem.episode(env_key, T)
        ts = jnp.arange(1, T + 1, dtype=jnp.int32)
        data = jax.vmap(lambda t: problem.round_data(episode, jax.random.fold_in(env_key, t), t))(ts)
        return problem.total_cost(data["A"], data["B"], episode["x_star"])

    return jax.vmap(one)(keys)


def _keys(seed_ids: Sequence[int]) -> jax.Array:
    return jnp.stack([jax.random.PRNGKey(int(s)) for s in seed_ids])


def _linear_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of y on x and the coefficient of determination R^2."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc**2).sum())
    resid = y - y.mean() - slope * xc
    r2 = 1.0 - float((resid**2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-300))
    return slope, r2


class _Paper002(AbstractExperiment):
    """Shared plumbing: stored runs, the figure and ``plot`` from stored runs."""

    def plot(self, out: Path) -> Path:
        """Redraw the figure and summary from the runs stored under ``out`` (computes nothing)."""
        import json

        stored = json.loads((Path(out) / "summary.json").read_text())
        report = self._collect(
            T=stored["T"],
            seeds=stored["seeds"],
            out=Path(out),
            options=stored["options"],
            progress=SilentProgress(),
            compute=False,
        )
        return report.figure

    def run(self, *, T, seeds, out, data_dir=None, options=None, progress=None) -> Report:
        del data_dir
        if isinstance(T, bool) or not isinstance(T, int) or T < 1:
            raise ValueError(f"T must be an integer >= 1, got {T!r}")
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
        return self._collect(
            T=T,
            seeds=seeds,
            out=Path(out),
            options=dict(options or {}),
            progress=progress or SilentProgress(),
            compute=True,
        )

    def _collect(self, *, T, seeds, out, options, progress, compute) -> Report:
        raise NotImplementedError

    def _stored(self, path: Path, compute: bool) -> bool:
        if path.exists():
            return True
        if not compute:
            raise ValueError(
                f"run {path.name} of {self.name!r} is not stored under {path.parent}; run it first"
            )
        return False

    def _runs(self, label, learner, problem, T, seed_ids, out, base, compute, progress):
        """Final dynamic regret of ``learner`` on seeds ``seed_ids`` (one stored file; nan if non-finite)."""
        path = run_path(out, self.name, label, base)
        if self._stored(path, compute):
            progress.advance(label, 1)
            return load_records(path), False
        tic = time.perf_counter()
        traj = sweep(learner, problem, T, list(seed_ids), chunk_size=256, throw=False)
        regret = metrics.dynamic_regret(traj)[:, -1]
        seconds = (time.perf_counter() - tic) / (T * len(seed_ids))
        bad = np.asarray(traj.first_bad_round) >= 0
        columns = {
            "seed": np.asarray(seed_ids),
            "regret": np.where(bad, np.nan, regret),
            "first_bad_round": np.asarray(traj.first_bad_round),
        }
        save_records(
            path,
            columns,
            {**base, "experiment": self.name, "algorithm": label, "wall_seconds_per_round": seconds},
        )
        progress.advance(label, 1)
        return load_records(path), True


class MemoryPredictionsHorizon(_Paper002):
    """Fig. 1 of paper 002: the initialisation phase's ``Reg / sqrt(T)`` and ``Reg / T`` for T = 5..T."""

    name = "memory-predictions-horizon"
    paper = "002 Fig. 1"
    title = "OCO with memory: initialisation-phase regret against T"
    default_T = 20
    default_seeds = 200
    configs = tuple(
        (law, est) for law in ("gaussian", "truncated_gaussian") for est in ("two_point", "one_point")
    )
    algorithms = tuple(
        Algorithm(
            _label(law, est),
            lambda info, law=law, est=est: BanditOCOMemory(
                eta=PAPER["eta"],
                delta=PAPER["delta"],
                x0=PAPER["x0"],
                half_width=HALF_WIDTH,
                law=law,
                estimator=est,
            ),
        )
        for law, est in configs
    )

    def _collect(self, *, T, seeds, out, options, progress, compute) -> Report:
        opts = _options(options)
        if seeds > 1000:
            raise ValueError(f"seeds must be <= 1000 (run ids are 1000 T + seed), got {seeds}")
        horizons = list(range(min(5, T), T + 1))
        problem = _problem(opts["box"])
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: dict[str, dict[str, Any]] = {}
        skipped = new = 0
        for (law, est), algo in zip(self.configs, self.algorithms, strict=True):
            if law not in opts["laws"] or est not in opts["points"]:
                continue
            label, learner = algo.label, algo.make(None)
            S = _seeds(law, seeds, opts["truncated_share"])
            base = {
                "learner": eqx.tree_pformat(learner, short_arrays=False),
                "problem": eqx.tree_pformat(problem),
                "seeds": S,
                "T_max": T,
            }
            paths = {h: run_path(out, self.name, label, {**base, "T": h}) for h in horizons}
            progress.start(label, len(horizons))
            if all(self._stored(p, compute) for p in paths.values()):
                skipped += len(horizons)
                progress.advance(label, len(horizons))
            else:
                seed_ids = [1000 * h + s for h in horizons for s in range(S)]  # fresh instance per (T, seed)
                tic = time.perf_counter()
                traj = sweep(learner, problem, T, seed_ids, chunk_size=256, throw=False)
                loss = np.asarray(traj.loss)
                seconds = (time.perf_counter() - tic) / (T * len(seed_ids))
                for i, h in enumerate(horizons):
                    rows = slice(i * S, (i + 1) * S)
                    cost = loss[rows, :h].sum(axis=1)
                    best = np.asarray(_optimal_costs(problem, _keys(seed_ids[rows]), h))
                    regret = cost - best
                    columns = {
                        "seed": np.asarray(seed_ids[rows]),
                        "regret": regret,
                        "cost": cost,
                        "optimal_cost": best,
                    }
                    meta = {
                        **base,
                        "T": h,
                        "experiment": self.name,
                        "algorithm": label,
                        "wall_seconds_per_round": seconds,
                    }
                    save_records(paths[h], columns, meta)
                    progress.advance(label, 1)
                new += len(horizons)
            records = [load_records(paths[h]) for h in horizons]
            reg = np.stack([r[0]["regret"] for r in records], axis=1)  # (S, len(horizons))
            hs = np.asarray(horizons, float)
            curves[label] = {"Reg / sqrt(T)": reg / np.sqrt(hs), "Reg / T": reg / hs}
            finite = np.isfinite(reg).all(axis=1)
            mean_by_T = np.nanmean(np.where(np.isfinite(reg), reg, np.nan), axis=0)
            summary[label] = {
                "regret": _quartiles(reg[:, -1]),
                "reg_over_sqrt_T": _quartiles(reg[:, -1] / math.sqrt(horizons[-1])),
                "reg_over_T": _quartiles(reg[:, -1] / horizons[-1]),
                "by_T": {
                    "T": horizons,
                    "mean_regret": [float(v) for v in mean_by_T],
                    "median_regret": [float(v) for v in np.nanmedian(reg, axis=0)],
                    "iqr_reg_over_sqrt_T": [
                        float(v) for v in np.subtract(*np.nanpercentile(reg / np.sqrt(hs), [75, 25], axis=0))
                    ],
                },
                "seeds": S,
                "diverged": int((~finite).sum()),
                "wall_seconds_per_round": float(np.mean([r[1]["wall_seconds_per_round"] for r in records])),
                "note": "subroutine (a) alone = Algorithm 1's x^0",
            }
        # The paper's literal single-point setting: unconstrained (a box that never binds).
        literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained)"
        S_lit = min(seeds, opts["literal_seeds"])
        learner = BanditOCOMemory(
            eta=PAPER["eta"],
            delta=PAPER["delta"],
            x0=PAPER["x0"],
            half_width=HALF_WIDTH,
            law="truncated_gaussian",
            estimator="one_point",
        )
        base = {
            "learner": eqx.tree_pformat(learner, short_arrays=False),
            "problem": "unconstrained",
            "seeds": S_lit,
            "T": T,
        }
        progress.start(literal, 1)
        (cols, _), fresh = self._runs(
            literal, learner, _problem(1e12), T, range(S_lit), out, base, compute, progress
        )
        new, skipped = new + fresh, skipped + (not fresh)
        reg = cols["regret"]
        summary[literal] = {
            "diverged": int(np.sum(~np.isfinite(reg) | (np.abs(reg) > 1e6))),
            "runs": int(reg.size),
            "median_regret": float(np.nanmedian(reg)),
            "note": "the paper's literal one-point settings at the largest T; not plotted",
        }
        figure = band_figure(
            curves,
            ["Reg / sqrt(T)", "Reg / T"],
            out / f"{self.name}.png",
            title=f"{self.title} ({self.paper}; X = [-{opts['box']:g}, {opts['box']:g}])",
            band="quartiles",
            x=np.asarray(horizons),
            xlabel="T",
            logy=["Reg / sqrt(T)", "Reg / T"],
        )
        report = Report(self.name, summary, self.check_claims(summary), figure, skipped, new)
        atomic_write_json(
            out / "summary.json", {**report.to_json(), "T": T, "seeds": seeds, "options": options}
        )
        return report


def _two_vs_one(summary, laws, stat) -> tuple[str, bool]:
    parts, holds = [], True
    for law in laws:
        two, one = stat(summary[_label(law, "two_point")]), stat(summary[_label(law, "one_point")])
        parts.append(f"{LAWS[law]}: {two:.3g} vs {one:.3g}")
        holds &= two < one
    return "; ".join(parts), holds


def _horizon_two_vs_one(summary) -> tuple[str, bool]:
    text, holds = _two_vs_one(summary, ("gaussian", "truncated_gaussian"), lambda s: s["regret"]["mean"])
    return f"mean Reg at the largest T, two- vs one-point: {text}", holds


def _horizon_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    parts, holds = [], True
    for est in ("two_point", "one_point"):
        tg, g = summary[_label("truncated_gaussian", est)], summary[_label("gaussian", est)]
        iqr_tg = float(np.mean(tg["by_T"]["iqr_reg_over_sqrt_T"]))
        iqr_g = float(np.mean(g["by_T"]["iqr_reg_over_sqrt_T"]))
        parts.append(
            f"{POINTS[est]}: mean Reg {tg['regret']['mean']:.3g} vs {g['regret']['mean']:.3g}, "
            f"IQR of Reg/sqrt(T) {iqr_tg:.3g} vs {iqr_g:.3g}"
        )
        holds &= tg["regret"]["mean"] < g["regret"]["mean"] and iqr_tg < iqr_g
    return "truncated vs Gaussian: " + "; ".join(parts), holds


def _horizon_sublinear(summary) -> tuple[str, bool]:
    s = summary[_label("truncated_gaussian", "two_point")]["by_T"]
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
    Claim(
        "two-point feedback gives lower initialisation-phase regret than single-point", _horizon_two_vs_one
    ),
    Claim("truncated Gaussian smoothing beats Gaussian and fluctuates less", _horizon_truncated_vs_gaussian),
    Claim(
        "the initialisation phase has sublinear regret: Reg/T declines in T (Theorem 1)", _horizon_sublinear
    ),
)


class MemoryPredictionsWindow(_Paper002):
    """Fig. 2 of paper 002: ``log(Reg)`` of Algorithm 1 against the prediction window W at T = 20."""

    name = "memory-predictions-window"
    paper = "002 Fig. 2"
    title = "OCO with memory and limited predictions: log regret against the window W"
    default_T = 20
    default_seeds = 200
    configs = tuple((law, est) for law in LAWS for est in POINTS)
    algorithms = tuple(
        Algorithm(
            _label(law, est),
            lambda info, law=law, est=est: OCOMemoryLimitedPredictions(
                window=1, **PAPER, half_width=HALF_WIDTH, law=law, estimator=est
            ),
            "Algorithm 1, K = W layers (h = 2)",
        )
        for law, est in configs
    )

    def _learner(self, law, est, W, opts) -> OCOMemoryLimitedPredictions:
        params = {**PAPER, "half_width": HALF_WIDTH}
        if est == "one_point":
            params["delta_prime"] = opts["one_point_delta_prime"]
        return OCOMemoryLimitedPredictions(
            window=W, law=law, estimator=est, strict_window=opts["strict_window"], **params
        )

    def _collect(self, *, T, seeds, out, options, progress, compute) -> Report:
        opts = _options(options)
        windows = opts["windows"]
        Ws = np.asarray(windows, float)
        curves: dict[str, dict[str, np.ndarray]] = {}
        summary: dict[str, dict[str, Any]] = {}
        skipped = new = 0
        for law, est in self.configs:
            if law not in opts["laws"] or est not in opts["points"]:
                continue
            label = _label(law, est)
            problem = _problem(opts["box"])
            S = _seeds(law, seeds, opts["truncated_share"])
            progress.start(label, len(windows))
            regs, seconds = [], []
            for W in windows:
                learner = self._learner(law, est, W, opts)
                base = {
                    "learner": eqx.tree_pformat(learner, short_arrays=False),
                    "problem": eqx.tree_pformat(problem),
                    "seeds": S,
                    "T": T,
                    "W": W,
                }
                (cols, meta), fresh = self._runs(
                    label, learner, problem, T, range(S), out, base, compute, progress
                )
                new, skipped = new + fresh, skipped + (not fresh)
                regs.append(cols["regret"])
                seconds.append(meta["wall_seconds_per_round"])
            reg = np.stack(regs, axis=1)  # (S, len(windows))
            log_reg = np.log(reg)
            panel = f"log(Reg), {POINTS[est]}"
            curves.setdefault(LAWS[law], {})[panel] = log_reg
            med = np.nanmedian(log_reg, axis=0)
            slope, r2 = _linear_fit(Ws, med) if len(windows) >= 2 else (math.nan, math.nan)
            summary[label] = {
                "log_regret_first_W": _quartiles(log_reg[:, 0]),
                "log_regret_last_W": _quartiles(log_reg[:, -1]),
                "by_W": {
                    "W": windows,
                    "median_log_regret": [float(v) for v in med],
                    "mean_regret": [float(v) for v in np.nanmean(reg, axis=0)],
                    "iqr_log_regret": [
                        float(v) for v in np.subtract(*np.nanpercentile(log_reg, [75, 25], axis=0))
                    ],
                },
                "slope_per_W": slope,
                "r2": r2,
                "seeds": S,
                "diverged": int((~np.isfinite(reg)).sum()),
                "wall_seconds_per_round": float(np.mean(seconds)),
                "note": f"delta' = {self._learner(law, est, 1, opts).delta_prime:g}, X = [-{opts['box']:g}, "
                f"{opts['box']:g}]",
            }
        # The paper's literal single-point setting: unconstrained (a box that never binds), delta' = 1e-4.
        literal = f"{LAWS['truncated_gaussian']}, one-point (literal: unconstrained, delta' = 1e-4)"
        S_lit = min(seeds, opts["literal_seeds"])
        unconstrained = _problem(1e12)
        literal_windows = sorted({windows[0], windows[len(windows) // 2], windows[-1]})
        progress.start(literal, len(literal_windows))
        diverged, total = 0, 0
        for W in literal_windows:
            learner = OCOMemoryLimitedPredictions(
                window=W,
                **PAPER,
                half_width=HALF_WIDTH,
                law="truncated_gaussian",
                estimator="one_point",
                strict_window=opts["strict_window"],
            )
            base = {
                "learner": eqx.tree_pformat(learner, short_arrays=False),
                "problem": "unconstrained",
                "seeds": S_lit,
                "T": T,
                "W": W,
            }
            (cols, _), fresh = self._runs(
                literal, learner, unconstrained, T, range(S_lit), out, base, compute, progress
            )
            new, skipped = new + fresh, skipped + (not fresh)
            reg = cols["regret"]
            diverged += int(np.sum(~np.isfinite(reg) | (np.abs(reg) > 1e6)))
            total += reg.size
        summary[literal] = {
            "diverged": diverged,
            "runs": total,
            "note": "the paper's literal one-point settings; not plotted",
        }
        panels = [f"log(Reg), {POINTS[e]}" for e in POINTS]
        figure = band_figure(
            curves,
            panels,
            out / f"{self.name}.png",
            title=f"{self.title} ({self.paper}, T = {T})",
            band="quartiles",
            x=Ws,
            xlabel="W",
        )
        report = Report(self.name, summary, self.check_claims(summary), figure, skipped, new)
        atomic_write_json(
            out / "summary.json", {**report.to_json(), "T": T, "seeds": seeds, "options": options}
        )
        return report


def _mean_median_log(summary, law, est) -> float:
    return float(np.mean(summary[_label(law, est)]["by_W"]["median_log_regret"]))


def _window_two_vs_one(summary) -> tuple[str, bool]:
    text, holds = _two_vs_one(summary, tuple(LAWS), lambda s: float(np.mean(s["by_W"]["median_log_regret"])))
    return f"median log(Reg) averaged over W, two- vs one-point: {text}", holds


def _window_truncated_vs_gaussian(summary) -> tuple[str, bool]:
    tg, g = summary[_label("truncated_gaussian", "two_point")], summary[_label("gaussian", "two_point")]
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
    s = summary[_label("truncated_gaussian", "two_point")]
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
)

MEMORY_PREDICTIONS_HORIZON = register(MemoryPredictionsHorizon())
MEMORY_PREDICTIONS_WINDOW = register(MemoryPredictionsWindow())

"""Shared plumbing of paper 002's experiments (:mod:`ocokit.experiments.paper002`): settings, options, stored runs.

The paper's scalar example (d = 1, h = 2, ``x0 = 0.5``, ``eta_t = 0.2 / t``, ``alpha = 0.05``, ``delta = 0.2``,
``delta' = 1e-4``), its three smoothing laws and two feedback kinds, the options both experiments accept,
and the base class that stores one Parquet file per configuration, measures the paper's literal
single-point setting and writes the figure and ``summary.json``.
"""

from __future__ import annotations

import json
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
from ocokit.engine import split_key, sweep
from ocokit.experiments._base import AbstractExperiment, Report, SilentProgress
from ocokit.plotting import band_figure
from ocokit.problems import QuadraticWithMemory
from ocokit.results import atomic_write_json, load_records, run_path, save_records
from ocokit.sets import Box

PAPER = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-4, "x0": 0.5}
HALF_WIDTH = 2.0  # the experiments' truncation [-2, 2] ("slightly modify Definition 1")
LAWS = {"gaussian": "Gaussian", "truncated_gaussian": "truncated Gaussian", "rademacher": "Bernoulli"}
POINTS = {"two_point": "two-point", "one_point": "one-point"}
DIVERGED = 1e6  # |Reg| above this (or non-finite) counts as a diverged run of the literal setting
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


def label(law: str, estimator: str) -> str:
    """The configuration's label, e.g. ``"truncated Gaussian, two-point"``."""
    return f"{LAWS[law]}, {POINTS[estimator]}"


def parse_options(options: Mapping[str, str] | None) -> dict[str, Any]:
    """The experiments' ``--option key=value`` settings, parsed and checked (module doc of ``paper002``)."""
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


def num_seeds(law: str, seeds: int, share: float) -> int:
    """Runs of a law: the truncated Gaussian gets ``share`` of them (the paper's 50 against 200)."""
    return max(1, round(seeds * share)) if law == "truncated_gaussian" else seeds


def make_problem(box: float) -> QuadraticWithMemory:
    """The paper's problem (d = 1, h = 2, ``x0 = 0.5``) on ``X = [-box, box]``."""
    return QuadraticWithMemory(Box(-box, box, dim=1), memory=2, x0=PAPER["x0"])


def quartiles(values: np.ndarray) -> dict[str, float]:
    """Mean, std, median and quartiles of the finite entries (nan if none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": math.nan, "std": math.nan, "median": math.nan, "q25": math.nan, "q75": math.nan}
    q25, q50, q75 = np.percentile(v, [25, 50, 75])
    return {"mean": float(v.mean()), "std": float(v.std()), "median": float(q50), "q25": float(q25), "q75": float(q75)}


def iqr(values: np.ndarray) -> list[float]:
    """Interquartile range of each column (nan entries ignored)."""
    return [float(v) for v in np.subtract(*np.nanpercentile(values, [75, 25], axis=0))]


@eqx.filter_jit
def optimal_costs(problem: QuadraticWithMemory, keys: jax.Array, T: int) -> jax.Array:
    """``C_T(x*)`` of the first T rounds of each run key (the engine's rounds, eq. 2 on horizon T)."""

    def one(key):
        env_key = split_key(key)[0]
        episode = problem.episode(env_key, T)
        ts = jnp.arange(1, T + 1, dtype=jnp.int32)
        data = jax.vmap(lambda t: problem.round_data(episode, jax.random.fold_in(env_key, t), t))(ts)
        return problem.total_cost(data["A"], data["B"], episode["x_star"])

    return jax.vmap(one)(keys)


def run_keys(seed_ids: Sequence[int]) -> jax.Array:
    """The engine's run keys of integer seeds."""
    return jnp.stack([jax.random.PRNGKey(int(s)) for s in seed_ids])


def linear_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of y on x and the coefficient of determination R^2."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc**2).sum())
    resid = y - y.mean() - slope * xc
    r2 = 1.0 - float((resid**2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-300))
    return slope, r2


def literal_finite(summary: Mapping[str, Any]) -> tuple[str, bool]:
    """The claim that the paper's literal single-point setting (on R) gives finite regret."""
    key = next(k for k in summary if "literal" in k)  # StopIteration if absent: not measured
    s = summary[key]
    return (
        f"{s['diverged']}/{s['runs']} runs diverged (|Reg| > {DIVERGED:g} or non-finite; median Reg "
        f"{s['median_regret']:.3g}); the one-point curves shown use {s['plotted_setting']}",
        s["diverged"] == 0,
    )


class Paper002Experiment(AbstractExperiment):
    """Shared plumbing: stored runs, the literal single-point measurement, the figure and ``plot``."""

    def plot(self, out: Path) -> Path:
        """Redraw the figure and summary from the runs stored under ``out`` (computes nothing)."""
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
            raise ValueError(f"run {path.name} of {self.name!r} is not stored under {path.parent}; run it first")
        return False

    def _runs(self, name, learner, problem, T, seed_ids, out, base, compute, progress):
        """Final dynamic regret of ``learner`` on seeds ``seed_ids`` (one stored file; nan if non-finite).

        Returns ``((columns, metadata), computed_now)``.
        """
        path = run_path(out, self.name, name, base)
        if self._stored(path, compute):
            progress.advance(name, 1)
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
        meta = {**base, "experiment": self.name, "algorithm": name, "wall_seconds_per_round": seconds}
        save_records(path, columns, meta)
        progress.advance(name, 1)
        return load_records(path), True

    def _literal(self, name, learners, T, seeds, out, compute, progress, plotted_setting):
        """The paper's literal single-point setting on R (a box that never binds), ``learners[W]`` each.

        Returns the summary entry (runs, diverged runs, median regret; not plotted) and the counts of new
        and skipped stored runs.
        """
        progress.start(name, len(learners))
        regrets, new = [], 0
        for W, learner in learners.items():
            base = {"learner": eqx.tree_pformat(learner, short_arrays=False), "problem": "unconstrained"}
            base.update({"seeds": seeds, "T": T} if W is None else {"seeds": seeds, "T": T, "W": W})
            (cols, _), fresh = self._runs(name, learner, make_problem(1e12), T, range(seeds), out, base, compute,
                                          progress)  # fmt: skip
            regrets.append(cols["regret"])
            new += fresh
        reg = np.concatenate(regrets)
        entry = {
            "diverged": int(np.sum(~np.isfinite(reg) | (np.abs(reg) > DIVERGED))),
            "runs": int(reg.size),
            "median_regret": float(np.median(np.where(np.isfinite(reg), reg, np.inf))),  # non-finite: +inf
            "plotted_setting": plotted_setting,
            "note": "the paper's literal one-point settings (x_t in R); not plotted",
        }
        return entry, new, len(learners) - new

    def _finish(self, summary, curves, panels, out, T, seeds, options, skipped, new, *, setting, literal,
                **figure) -> Report:  # fmt: skip
        """Draw the figure (quartile bands), evaluate the claims and write ``summary.json``.

        The title names the experiment, ``setting`` and, when the paper's literal single-point setting
        (summary entry ``literal``) diverged, that the single-point curves are shown on the box instead.
        """
        lit = summary[literal]
        title = f"{self.title} ({self.paper})\n{setting}"
        if lit["diverged"]:
            title += f"; one-point on R (paper) diverged in {lit['diverged']}/{lit['runs']} runs: shown on the box"
        path = band_figure(curves, panels, out / f"{self.name}.png", band="quartiles", title=title, **figure)
        report = Report(self.name, summary, self.check_claims(summary), path, skipped, new)
        atomic_write_json(out / "summary.json", {**report.to_json(), "T": T, "seeds": seeds, "options": options})
        return report

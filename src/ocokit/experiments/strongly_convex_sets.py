"""Wan and Zhang (AAAI 2021; projection-free online learning over strongly convex sets): regret exponents.

The paper has no experiments; ``strongly-convex-sets`` checks its theorems' exponents as log-log slopes of the mean
static regret against T: linear losses ([`OnlineLinear`][ocokit.problems.OnlineLinear]) over the l2 and l_1.5 balls
(strongly convex) and the l1 ball (a polytope), OFW with line search (Thm 1: O(T^{2/3})) against Hazan-Kale's OFW
(O(T^{3/4})); strongly convex quadratic losses ([`OnlineQuadratic`][ocokit.problems.OnlineQuadratic]) over the l2
and l1 balls, SC-OFW (Thm 2: O(sqrt T) over strongly convex sets, Thm 3: O(T^{2/3}) on any set). The grid is
``T / 2^k``, ``k < points``, one axis per setting, played as prefixes of one run of T rounds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np

from ocokit.algorithms import OFW, SCOFW, OFWLineSearch, ProblemInfo
from ocokit.harness import Algorithm, Claim, Experiment, Option, Summary, register
from ocokit.papers import cite
from ocokit.problems import OnlineLinear, OnlineQuadratic
from ocokit.problems._base import AbstractProblem
from ocokit.sets import L1Ball, L2Ball, LpBall
from ocokit.studies import Cell, Fit, Plot, Runs, Sweep, exponent_at_most, exponent_below

NAME = "strongly-convex-sets"
WAN_ZHANG = cite("001")
"""The paper as users read it (Wan and Zhang, AAAI 2021)."""


def _ofw_with_thm1_eta(info: ProblemInfo) -> OFW:
    """Ablation: the decaying step of Hazan-Kale with OFW-LS's larger ``eta = D / (2 G (T+2)^{2/3})``."""
    return OFW.from_theory(info, eta=float(OFWLineSearch.from_theory(info).eta))


ALGORITHMS = (
    Algorithm("OFW-LS", OFWLineSearch.from_theory, f"{WAN_ZHANG}, Algorithm 1, eta = D / (2 G (T+2)^{{2/3}})"),
    Algorithm("OFW", OFW.from_theory, "Hazan-Kale OFW, eta = D / (2 G T^{3/4}), sigma_t = min(1, 2/sqrt t)"),
    Algorithm("OFW, Thm-1 eta", _ofw_with_thm1_eta,
              "ablation: Hazan-Kale's decaying step with OFW-LS's eta (no theorem)"),
    Algorithm("SC-OFW", SCOFW.from_theory, f"{WAN_ZHANG}, Algorithm 2, lam = the losses' strong convexity"),
)  # fmt: skip
THEOREMS = {"OFW-LS": OFWLineSearch, "OFW": OFW, "SC-OFW": SCOFW}
"""Label -> the class whose theorem bounds its regret ([`regret_bound`][ocokit.algorithms.AbstractLearner.regret_bound];
the ablation has none)."""
LEARNERS = {a.label: a for a in ALGORITHMS}
"""Legend label -> the algorithm, its factory giving the theorems' parameters for the horizon in ``info``."""


@dataclasses.dataclass(frozen=True)
class _Setting:
    """One panel: a set and a loss family, the learners run on it and the exponent each theorem gives."""

    key: str
    title: str
    family: str  # "linear" or "quadratic": one figure each
    make_problem: Callable[[int], AbstractProblem]
    theory: Mapping[str, float | None]  # learner label -> theorem's exponent (None: no theorem)


_LIN, _QUAD = (lambda K: OnlineLinear(K, drift=1.0, noise=1.0)), (lambda K: OnlineQuadratic(K, lam=1.0, offset=2.0, noise=1.0))  # fmt: skip  # noqa: E501
_OFW = {"OFW-LS": 2 / 3, "OFW": 3 / 4, "OFW, Thm-1 eta": None}
_POLY = "l1 ball (polytope)"
SETTINGS: tuple[_Setting, ...] = (
    _Setting("l2-linear", "l2 ball", "linear", lambda d: _LIN(L2Ball(d, radius=1.0)), _OFW),
    _Setting("lp-linear", "l1.5 ball", "linear", lambda d: _LIN(LpBall(d, radius=1.0, p=1.5)), _OFW),
    _Setting("l1-linear", _POLY, "linear", lambda d: _LIN(L1Ball(d, radius=1.0)), {**_OFW, "OFW-LS": None}),
    _Setting("l2-quadratic", "l2 ball", "quadratic", lambda d: _QUAD(L2Ball(d, radius=1.0)), {"SC-OFW": 1 / 2, "OFW-LS": 2 / 3}),  # noqa: E501
    _Setting("l1-quadratic", _POLY, "quadratic", lambda d: _QUAD(L1Ball(d, radius=1.0)), {"SC-OFW": 2 / 3, "OFW-LS": None}),  # noqa: E501
)  # fmt: skip
_S = {s.key: s for s in SETTINGS}
TOLERANCE = 0.05
"""A claimed exponent a holds if the fitted slope is at most a + TOLERANCE (the theorems are upper bounds)."""


def horizons(T: int, points: int) -> list[int]:
    """The grid ``round(T / 2^k)``, k = points-1..0, of distinct horizons >= 8 (largest first is T)."""
    grid = sorted({max(8, round(T / 2**k)) for k in range(points)})
    if len(grid) < 3:
        raise ValueError(f"T and points must give >= 3 distinct horizons >= 8 for a fit, got {grid}")
    return grid


def _bounds_hold(summary: Summary) -> tuple[str, bool]:
    ratios = {f"{a} | {_S[k].title}, {_S[k].family}": max(v["mean"]) for a, entry in summary.items()
              for k, v in entry.get("regret_over_bound", {}).items() if np.isfinite(v["mean"]).all()}  # fmt: skip
    if not ratios:
        raise KeyError("regret_over_bound")
    worst = max(ratios, key=ratios.get)
    return f"largest regret / bound {ratios[worst]:.4f} ({worst}), {len(ratios)} runs", ratios[worst] < 1.0


def _fits(*settings: str) -> tuple[str, ...]:
    return tuple(f"regret_exponent_{k}" for k in settings)


CLAIMS = (
    *(Claim(f"OFW with line search: regret O(T^{{2/3}}) over the {b} ball ({WAN_ZHANG}, Thm 1)",
            exponent_at_most("OFW-LS", 2 / 3, f"regret_exponent_{k}", tolerance=TOLERANCE))
      for k, b in (("l2-linear", "l2"), ("lp-linear", "l_1.5"))),
    Claim(f"classic OFW: regret O(T^{{3/4}}) on every set (Hazan 2016, as recalled in {WAN_ZHANG})",
          exponent_at_most("OFW", 3 / 4, *_fits("l2-linear", "lp-linear", "l1-linear"), tolerance=TOLERANCE)),
    Claim("with the theorems' parameters, over strongly convex sets exponent(OFW-LS) < exponent(OFW)",
          exponent_below("OFW-LS", "OFW", *_fits("l2-linear", "lp-linear"))),
    Claim(f"every regret stays below its theorem's explicit bound ({WAN_ZHANG}, Thms 1-3; Hazan 2016 Thm 7.3)",
          _bounds_hold),
    Claim(f"SC-OFW: regret O(sqrt T) over the l2 ball for strongly convex losses ({WAN_ZHANG}, Thm 2)",
          exponent_at_most("SC-OFW", 1 / 2, "regret_exponent_l2-quadratic", tolerance=TOLERANCE)),
    Claim(f"SC-OFW: regret O(T^{{2/3}}) over any convex set, here the l1 ball ({WAN_ZHANG}, Thm 3)",
          exponent_at_most("SC-OFW", 2 / 3, "regret_exponent_l1-quadratic", tolerance=TOLERANCE)),
)  # fmt: skip


def _learner(algo: Algorithm, cell: Cell, ctx) -> object:
    theory = _S[cell.axis].theory
    return LEARNERS[algo.label].make(ProblemInfo.of(cell.problem, cell.T)) if algo.label in theory else None


def _measure(runs: Runs) -> dict[str, np.ndarray]:
    """Static regret at the cell's horizon, and over its theorem's explicit bound (nan: no theorem)."""
    theorem = THEOREMS.get(runs.label)
    bound = None if theorem is None else theorem.regret_bound(ProblemInfo.of(runs.cell.problem, runs.cell.T))
    regret = runs.regret()
    return {"regret": regret, "regret_over_bound": regret / (math.nan if bound is None else bound)}


def _plot(family: str, what: str) -> Plot:
    panels = tuple((s.title, "regret", s.key) for s in SETTINGS if s.family == family)
    title = f"static regret at horizon T, {what} ({{paper}})"
    return Plot(f"-{family}", title, panels, kwargs={"logy": [p[0] for p in panels]})


def _grid(ctx) -> list[Cell]:
    grid = horizons(ctx.T, ctx.options["points"])
    chosen = [s for s in SETTINGS if s.key in ctx.options["settings"]]
    return [Cell(s.key, Tb, s.make_problem(ctx.options["dim"]), Tb) for s in chosen for Tb in grid]


STRONGLY_CONVEX_SETS = register(Experiment(
    name=NAME, paper="001 (no experiments in the paper: its theorems' exponents)", claims=CLAIMS,
    title="Regret exponents of projection-free OFW over strongly convex sets", default_T=4000, default_seeds=5,
    algorithms=ALGORITHMS,
    study=Sweep(grid=_grid, learner=_learner, measure=_measure, prefix=True,
                fits=tuple(Fit("regret", s.key) for s in SETTINGS),
                plots=(_plot("linear", "linear losses"), _plot("quadratic", "strongly convex losses"))),
    options=(Option("dim", int, 10, "dimension d of every set", low=1),
             Option("points", int, 6, "horizons in the grid T / 2^k", low=1),
             Option("settings", list, list(_S), "setting keys to run (or all)", choices=tuple(_S))),
))  # fmt: skip

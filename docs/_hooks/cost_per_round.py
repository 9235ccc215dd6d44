"""The cost per round on each algorithm page: the learner's oracle calls and time per round, measured at build time.

Imported by ``docs/_hooks/pages.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.ocokit")

ROOT = Path(__file__).resolve().parents[2]

COST_T = 100
"""Rounds of the cost measurement on each algorithm page (tiny: the build stays fast; compilation excluded)."""


def _reference_case(cls: type):
    """The learner suite's first (learner, problem) pair for ``cls`` (``tests/learner_cases.py``), or ``None``."""
    import sys

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from tests.learner_cases import CASES
    except ImportError as err:
        log.info("cost per round: tests/learner_cases.py not importable (%s)", err)
        return None
    build = CASES.get(cls)
    cases = build() if build is not None else []
    return cases[0] if cases else None


def measure_cost(cls: type) -> str:
    """One line: the learner's oracle calls and wall time per round on its reference problem, measured now.

    The run is played twice at ``T = COST_T`` in float64 (as the command line runs); the second, already
    compiled, is timed. Nothing is cached: every build measures again, on the machine that builds.
    """
    import time

    import jax

    import ocokit

    with jax.enable_x64(True):  # the case is built in float64 too
        case = _reference_case(cls)
        if case is None:
            return "Not measured: the learner suite (`tests/learner_cases.py`) has no case for this learner."
        learner, problem = case
        ocokit.run(learner, problem, COST_T, comparators=False)  # compiles
        start = time.perf_counter()
        traj = jax.block_until_ready(ocokit.run(learner, problem, COST_T, comparators=False))
        seconds = (time.perf_counter() - start) / COST_T
    calls = traj.diagnostics.get("oracle_calls")
    shape = "x".join(str(n) for n in getattr(problem.domain, "shape", ()) or ("?",))
    where = f"`{type(problem).__name__}`, decisions of shape {shape}, {COST_T} rounds"
    oracle = (
        f"oracle calls per round **{float(calls.mean()):.3g}** (mean of the learner's `oracle_calls` diagnostic: "
        "its LMO, projection or inner-solver steps) and "
        if calls is not None
        else ""
    )
    return (
        f"Measured when this page was built: {oracle}time per round **{seconds * 1e6:.3g} µs** in the compiled scan "
        f"(compilation excluded), on the learner suite's first case for it ({where}; CPU of the machine that "
        "built the docs). Sizes and hardware change the time; the oracle count follows the docstring below."
    )

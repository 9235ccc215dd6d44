"""Golden trajectories: refactors keep every learner's decisions and every experiment's numbers.

``tests/golden/learners.json`` and ``experiments.json`` were written by ``python -m tests.golden.generate``
on the main branch before the core-contracts refactor; a change that is *meant* to move numbers
regenerates them and says why in its commit. Compared to 1e-12 (relative to each array's scale).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from .golden import generate
from .learner_cases import cases

GOLDEN = Path(__file__).resolve().parent / "golden"
LEARNERS = json.loads((GOLDEN / "learners.json").read_text())
EXPERIMENTS = json.loads((GOLDEN / "experiments.json").read_text())
TOL = 1e-12


def _close(got, want, where):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != golden {want.shape}"
    scale = 1.0 + (np.nanmax(np.abs(want)) if want.size and np.isfinite(want).any() else 0.0)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * scale, err_msg=where, equal_nan=True)


def _compare(got, want, where):
    if isinstance(want, dict):
        assert set(got) == set(want), f"{where}: keys {sorted(got)} != golden {sorted(want)}"
        for k in want:
            _compare(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list) and want and all(isinstance(v, dict | str) for v in want):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _compare(g, w, f"{where}[{i}]")
    elif isinstance(want, float | int | list) and not isinstance(want, bool):
        _close(got, want, where)
    else:
        assert got == want, f"{where}: {got!r} != golden {want!r}"


def test_every_suite_case_has_a_golden_trajectory():
    assert sorted(case_id for case_id, _, _ in cases()) == sorted(LEARNERS)


@pytest.mark.parametrize(("case_id", "learner", "problem"), cases(), ids=[c[0] for c in cases()])
def test_learner_trajectory_matches_golden(case_id, learner, problem):
    _compare(generate.learner_record(learner, problem), LEARNERS[case_id], case_id)


@pytest.mark.parametrize("spec", generate.EXPERIMENTS, ids=[e[0] for e in generate.EXPERIMENTS])
def test_experiment_summary_matches_golden(spec):
    name, *rest = spec
    _compare(generate.experiment_summary(name, *rest), EXPERIMENTS[name], name)

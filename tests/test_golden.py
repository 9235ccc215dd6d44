"""Golden values: refactors keep every learner's decisions and every experiment's numbers.

``tests/golden/learners.json`` and ``experiments.json`` were written by ``python -m tests.golden.generate``
on the main branch before the core-contracts refactor; a change that is *meant* to move numbers
regenerates them and says why in its commit. Compared to 1e-12 (relative to each array's scale). The
learners' trajectories are checked by the learner suite on the run it already compiles
(``tests/algorithms/test_learner_suite.py::test_trajectory_matches_golden``); the experiments here.
"""

import pytest

from .golden import generate
from .learner_cases import cases


def test_every_suite_case_has_a_golden_trajectory():
    assert sorted(case_id for case_id, _, _ in cases()) == sorted(generate.golden("learners"))


@pytest.mark.parametrize("spec", generate.EXPERIMENTS, ids=[e[0] for e in generate.EXPERIMENTS])
def test_experiment_summary_matches_golden(spec):
    name, *rest = spec
    generate.compare(generate.experiment_summary(name, *rest), generate.golden("experiments")[name], name)

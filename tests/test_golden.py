"""Golden values: refactors keep every learner's decisions and every experiment's numbers.

``tests/golden/learners.json`` and ``experiments.json`` are written by ``python -m tests.golden.generate`` under the
library's own compile options; a change that is *meant* to move numbers regenerates them and says why in its
commit. Compared at each learner's and experiment's tolerance (``generate.TOLERANCES``: 1e-12 of each array's scale
unless justified there). The learners' trajectories are checked by the learner suite on the run it already compiles
(``tests/algorithms/test_learner_suite.py::test_trajectory_matches_golden``); the experiments here.
"""

import json

import pytest

from ocokit import experiments

from .golden import generate
from .learner_cases import cases


def test_every_suite_case_has_a_golden_trajectory():
    assert sorted(case_id for case_id, _, _ in cases()) == sorted(generate.golden("learners"))


@pytest.mark.parametrize("spec", generate.EXPERIMENTS, ids=[e[0] for e in generate.EXPERIMENTS])
@pytest.mark.integration
def test_experiment_summary_matches_golden_and_plot_recomputes_nothing(spec, tmp_path):
    name, *rest = spec
    summary = generate.experiment_summary(name, *rest, folder=tmp_path)
    generate.compare(summary, generate.golden("experiments")[name], name, generate.tolerance(name))
    out = tmp_path / "out"
    before = _files(out)
    figure = experiments.get(name).plot(out)  # redraws from the stored runs: no new run, nothing rewritten
    assert figure.is_file() and figure.parent == out
    after = _files(out)
    assert sorted(after) == sorted(before), "plot added or removed files"
    changed = [p for p in before if p.suffix != ".png" and after[p] != before[p]]
    assert not changed, f"plot rewrote {changed}"  # summary.json and every run, byte for byte and untouched
    generate.compare(generate.numbers(json.loads((out / "summary.json").read_text())["algorithms"]), summary, name)


def _files(out):
    """Every file under ``out``: its bytes and modification time."""
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}

"""One compile for every horizon: T is data in the engine's programs (issue 45), counted with JAX's compilation log.

A run at a second horizon of the same learner and problem compiles nothing, unless the problem's episode has
T-long shapes (a T-permutation, a T-round offline optimum: its start and blocks compile for that T); with
comparators, only the best fixed point in hindsight (which holds all T rounds) compiles per horizon.
"""

import jax
import pytest

import ocokit
from ocokit import experiments
from ocokit.problems import TimeVaryingRegression

from .helpers import count_compiles
from .learner_cases import SUITE_T, cases

ENGINE = ("_begin", "_blocks", "_hindsight")


def _episode_shapes(problem, T):
    shapes = jax.eval_shape(lambda k: problem.episode(k, T), jax.random.key(0))
    return jax.tree.map(lambda s: (s.shape, s.dtype), shapes)


@pytest.mark.parametrize(("case_id", "learner", "problem"), [pytest.param(*case, id=case[0]) for case in cases()])
def test_a_second_horizon_compiles_nothing(case_id, learner, problem):
    first = ocokit.run(learner, problem, SUITE_T, 3, comparators=False, throw=False)
    with count_compiles(*ENGINE) as log:
        second = ocokit.run(learner, problem, SUITE_T + 17, 3, comparators=False, throw=False)
        second.loss.block_until_ready()
    if _episode_shapes(problem, SUITE_T) == _episode_shapes(problem, SUITE_T + 17):
        assert log.all == [], f"{case_id}: a second horizon compiled {log.all}"
    else:  # the episode's shapes depend on T: the start and the blocks compile for it, nothing else
        assert sorted(log.all) == ["jit(_begin)", "jit(_blocks)"], log.all
    assert first.loss.shape == (SUITE_T,) and second.loss.shape == (SUITE_T + 17,)


def test_with_comparators_only_the_best_fixed_point_compiles_per_horizon():
    problem, learner = TimeVaryingRegression(), ocokit.algorithms.OGD(eta=0.01)
    ocokit.run(learner, problem, 20, 0)
    ocokit.sweep(learner, problem, 20, 2)
    with count_compiles(*ENGINE) as log:
        ocokit.run(learner, problem, 33, 0).loss.block_until_ready()
        ocokit.sweep(learner, problem, 33, 2).loss.block_until_ready()
    assert log.all == ["jit(_hindsight)", "jit(_hindsight_many)"]


def test_the_gradual_variation_study_compiles_each_learner_once(tmp_path):
    # Three horizons (4, 8, 16) and the V-axis: every learner's blocks compile once whatever T, unless its
    # structure depends on T (none of this study's learners at these sizes).
    options = {"horizons": "3", "ratio": "2", "drifts": "0,1"}
    with count_compiles("_blocks_many") as log:
        experiments.get("gradual-variation").run(T=16, seeds=2, out=tmp_path, options=options)
    # MirrorProx (both of its rows: one class, one structure), YuNeelyWei and OGD (COLDQ is not run on a ball)
    assert log.count == 3, log.all

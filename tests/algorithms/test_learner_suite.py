"""The shared learner suite, generated from the registry (river's check_estimator, optax's table).

Every learner exported from :mod:`ocokit.algorithms` has small (learner, problem) cases in
``tests/learner_cases.py``. Each pair is checked for: decisions in K, a state whose tree, shapes and dtypes
survive an update, no lookahead (changing round t's data leaves x_1..x_t unchanged), and numeric hyperparameters
stored as array leaves (so a grid never recompiles). Every check reads the same two vmapped runs, compiled once per
case; that a vmapped run equals separate runs is the engine's own test (tests/test_engine.py).
"""

import equinox as eqx
import jax
import numpy as np
import pytest

import ocokit
from ocokit.algorithms import ProblemInfo
from ocokit.feedback import PREDICTIONS, FeedbackKind, make_feedback, problem_lookahead

from ..golden import generate
from ..helpers import Perturbed, count_compiles
from ..learner_cases import CASES as LEARNER_CASES
from ..learner_cases import LEARNERS, cases

T = 30

_ALL = cases()  # one object per case: the runs below are cached by identity
CASES = [pytest.param(learner, problem, id=case_id) for case_id, learner, problem in _ALL]


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.__name__)
def test_every_learner_has_test_cases_and_a_docstring(cls):
    assert cls in LEARNER_CASES, f"{cls.__name__} must have cases in tests/learner_cases.py to join the suite"
    assert len(LEARNER_CASES[cls]()) >= 1
    assert cls.__doc__ and len(cls.__doc__.strip()) > 80
    assert isinstance(cls.feedback, FeedbackKind)


_CACHE: dict = {}


def _nudge(leaf):
    if isinstance(leaf, float) or (eqx.is_array(leaf) and jax.numpy.issubdtype(leaf.dtype, jax.numpy.floating)):
        return leaf * (1 + 1e-3)
    return leaf


def _nudged(learner):
    """The learner with every floating-point hyperparameter (array leaf or Python float) moved by 1e-3."""
    return jax.tree.map(_nudge, learner, is_leaf=eqx.is_array)


def _runs(learner, problem):
    """Vmapped runs per case over seeds 3 and 4, sharing one compilation: the game itself, the game whose
    rounds from T // 2 on are redrawn (:class:`Perturbed` with ``t0`` an array leaf), and the game itself
    played by the learner with nudged hyperparameters (whose compile count is recorded)."""
    key = id(learner), id(problem)
    if key not in _CACHE:
        swept, perturbed = (
            ocokit.sweep(learner, Perturbed(problem, t0), T, [3, 4], record_decisions=True, comparators=False)
            for t0 in (T + 1, T // 2)
        )
        nudged, unperturbed = _nudged(learner), Perturbed(problem, T + 1)
        with count_compiles("_sweep_chunk") as log:
            again = ocokit.sweep(nudged, unperturbed, T, [5, 6], record_decisions=True, comparators=False)
            again.loss.block_until_ready()
        _CACHE[key] = swept, perturbed, log.count
    return _CACHE[key]


GOLDEN = generate.golden("learners")


@pytest.mark.parametrize(("case_id", "learner", "problem"), [pytest.param(*case, id=case[0]) for case in _ALL])
def test_trajectory_matches_golden(case_id, learner, problem):
    # Seed 3 is the first run of the suite's sweep: the golden trajectory of tests/golden/learners.json, at its
    # learner's tolerance; a chaotic learner's statistics over several seeds instead (generate.CHAOTIC).
    name = type(learner).__name__
    if name in generate.CHAOTIC:
        runs = ocokit.sweep(learner, problem, T, list(generate.STAT_SEEDS), record_decisions=True, comparators=False)
        generate.compare({"statistics": generate.statistics(runs)}, GOLDEN[case_id], case_id, generate.STAT_TOL)
        return
    swept, _, _ = _runs(learner, problem)
    generate.compare(generate.record(swept, 0), GOLDEN[case_id], case_id, generate.tolerance(name))


@pytest.mark.parametrize(("learner", "problem"), CASES)
def test_decisions_stay_in_the_set(learner, problem):
    swept, _, _ = _runs(learner, problem)
    inside = jax.vmap(jax.vmap(lambda x: problem.domain.contains(x, atol=1e-6)))(swept.decisions)
    bad = np.argwhere(~np.asarray(inside))
    assert bad.size == 0, f"decision of round {bad[0, 1] + 1} (seed index {bad[0, 0]}) outside K"


@pytest.mark.parametrize(("learner", "problem"), CASES)
def test_state_keeps_its_tree_shapes_and_dtypes(learner, problem):
    key = jax.random.PRNGKey(0)
    info = ProblemInfo.of(problem, T)
    state = learner.init(info, key)
    data = problem.round_data(problem.episode(key, T), key, 1)
    x = learner.decide(state)
    arg = jax.numpy.repeat(x[None], info.memory, axis=0) if info.memory > 1 else x
    loss, cons = problem.loss(data, arg), problem.constraints(data, x)
    fb = make_feedback(type(learner).feedback, problem, data, loss, cons, episode=None, env_key=key, t=1)
    before = jax.eval_shape(lambda: state)
    after = jax.eval_shape(lambda: learner.update(state, x, fb))
    assert jax.tree.structure(before) == jax.tree.structure(after)
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        assert (a.shape, a.dtype) == (b.shape, b.dtype)


@pytest.mark.parametrize(("learner", "problem"), CASES)
def test_no_lookahead(learner, problem):
    swept, perturbed, _ = _runs(learner, problem)
    # Rounds 1..t0-1 are identical in both games and x_1..x_t0 are decided before round t0's data exists
    # (x_s, with predictions of W rounds ahead, before round s + W's), so both must agree up to there.
    t0 = T // 2
    decided = t0
    if type(learner).feedback is PREDICTIONS:
        window = problem_lookahead(problem)
        if window is None:
            pytest.skip("a prediction oracle without a window may look at every round")
        decided = t0 - window - 1
    for s in range(2):
        np.testing.assert_allclose(swept.decisions[s, :decided], perturbed.decisions[s, :decided], rtol=1e-9)
        np.testing.assert_allclose(swept.loss[s, : decided - 1], perturbed.loss[s, : decided - 1], rtol=1e-9)
    assert not np.allclose(swept.loss[0], perturbed.loss[0]), "the perturbation must change the game"


@pytest.mark.parametrize(("learner", "problem"), CASES)
def test_new_numbers_compile_nothing(learner, problem):
    # optax's test_utils.log_compilations: new hyperparameter values and new seeds reuse the compiled run.
    _, _, compiles = _runs(learner, problem)
    assert compiles == 0, f"a second sweep with new hyperparameter values compiled {compiles} programs"


@pytest.mark.parametrize(("learner", "problem"), CASES)
def test_numeric_hyperparameters_are_array_leaves(learner, problem):
    del problem
    static = eqx.filter(learner, eqx.is_array, inverse=True)
    scalars = [
        jax.tree_util.keystr(path)
        for path, leaf in jax.tree_util.tree_leaves_with_path(static)
        if isinstance(leaf, float)
    ]
    assert not scalars, f"Python floats {scalars} are static: a grid over them recompiles; use hyperparameter()"

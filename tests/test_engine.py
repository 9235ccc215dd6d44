"""The engine: run / sweep / stack / Session, common random numbers, non-finite detection, bad input."""

import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import OGD
from ocokit.engine import NonFiniteError
from ocokit.feedback import PREDICTIONS
from ocokit.problems import TimeVaryingRegression

from .helpers import NaNAt, count_compiles, quadratic_problem
from .learner_cases import CASES, cases


def _python_loop(learner, problem, T, key):
    """The same game stepped round by round from Python: the slow reference of the scan."""
    env_key, learner_key = ocokit.engine.split_key(key)
    info = ocokit.algorithms.ProblemInfo.of(problem, T)
    state = learner.init(info, learner_key)
    episode = problem.episode(env_key, T)
    losses, cons = [], []
    for t in range(1, T + 1):
        x = learner.decide(state)
        data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
        losses.append(float(problem.loss(data, x)))
        cons.append(np.asarray(problem.constraints(data, x)))
        fb = ocokit.feedback.make_feedback(type(learner).feedback, problem, data, losses[-1], cons[-1])
        state = learner.update(state, x, fb)
    return np.array(losses), np.array(cons)


def test_scan_matches_python_loop():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    key = jax.random.PRNGKey(3)
    traj = ocokit.run(learner, problem, 25, key, comparators=False)
    losses, cons = _python_loop(learner, problem, 25, key)
    np.testing.assert_allclose(traj.loss, losses, rtol=1e-10)
    np.testing.assert_allclose(traj.constraints, cons, rtol=1e-10, atol=1e-12)


def test_common_random_numbers_same_rounds_for_every_learner():
    problem = TimeVaryingRegression()
    a = ocokit.run(OGD(eta=0.01), problem, 10, 7, record_decisions=True, comparators=False)
    b = ocokit.run(OGD(eta=0.05), problem, 10, 7, record_decisions=True, comparators=False)
    # round 1 is played from the same start point by both, so it costs the same
    assert float(a.loss[0]) == float(b.loss[0])
    assert not np.allclose(a.loss, b.loss)
    again = ocokit.run(OGD(eta=0.01), problem, 10, 7, comparators=False)
    np.testing.assert_array_equal(a.loss, again.loss)


def test_sweep_equals_separate_runs_and_chunking_is_invisible():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.02)
    swept = ocokit.sweep(learner, problem, 15, [0, 1, 2, 3, 4], chunk_size=2, comparators=False)
    for s in range(5):
        np.testing.assert_allclose(
            swept.loss[s], ocokit.run(learner, problem, 15, s, comparators=False).loss, rtol=1e-12
        )


def test_sweep_over_a_stacked_grid():
    problem = TimeVaryingRegression()
    etas = [0.005, 0.01, 0.03]
    grid = ocokit.stack([OGD(eta=e) for e in etas])
    out = ocokit.sweep(grid, problem, 12, 2, batched_learner=True, chunk_size=4)
    assert out.loss.shape == (3, 2, 12) and out.first_bad_round.shape == (3, 2)
    env = ocokit.comparators(problem, 12, 2)  # the environment: once per seed, shared by the grid
    for b, e in enumerate(etas):
        np.testing.assert_array_equal(out.comparator_loss[b], env["comparator_loss"])
        np.testing.assert_array_equal(out.optimum_loss[b], env["optimum_loss"])
        for s in range(2):
            single = ocokit.run(OGD(eta=e), problem, 12, s, comparators=False)
            np.testing.assert_allclose(out.loss[b, s], single.loss, rtol=1e-12)
            np.testing.assert_allclose(out.constraints[b, s], single.constraints, rtol=1e-12, atol=1e-14)


def test_comparators_can_be_skipped():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    full = ocokit.run(learner, problem, 10, 3)
    bare = ocokit.run(learner, problem, 10, 3, comparators=False)
    assert full.comparator_loss is not None and full.optimum_loss is not None
    assert bare.comparator_loss is None and bare.optimum_loss is None
    np.testing.assert_allclose(bare.loss, full.loss, rtol=1e-12)  # the same game, compiled differently
    swept = ocokit.sweep(learner, problem, 10, 2, comparators=False)
    assert swept.optimum_loss is None and swept.loss.shape == (2, 10)


def test_stack_rejects_different_static_fields():
    with pytest.raises(ValueError, match="static"):
        ocokit.stack([OGD(eta=0.1), OGD(eta=0.1, decay="inverse_sqrt")])
    with pytest.raises(ValueError, match="non-empty"):
        ocokit.stack([])


def test_non_finite_loss_stops_with_the_round_index():
    problem = NaNAt(ocokit.sets.Box(-1.0, 1.0, dim=2), bad=7)
    with pytest.raises(NonFiniteError, match="non-finite loss at round 7"):
        ocokit.run(OGD(eta=0.1), problem, 20)
    traj = ocokit.run(OGD(eta=0.1), problem, 20, throw=False)
    assert int(traj.first_bad_round) == 7 and int(traj.bad_quantity) == 0
    with pytest.raises(NonFiniteError, match="round 7"):
        ocokit.sweep(OGD(eta=0.1), problem, 20, 2)


def test_rounds_are_the_same_whatever_T_and_the_block_size(monkeypatch):
    # Round t's data is a pure function of (environment key, t): the engine draws rounds in blocks, and
    # neither the horizon nor the block size (1 for a short run, 250, 7) changes a number.
    problem, learner = TimeVaryingRegression(), OGD(eta=0.02, decay="inverse_sqrt")
    short = ocokit.run(learner, problem, 100, 3, record_decisions=True)  # short: drawn round by round
    monkeypatch.setattr(ocokit.engine._rounds, "BLOCK_FROM_T", 1)
    long = ocokit.run(learner, problem, 1000, 3, record_decisions=True)  # 4 blocks of 250 rounds
    monkeypatch.setattr(ocokit.engine._rounds, "BLOCK_ROUNDS", 7)  # 143 blocks of 7 rounds; the last 4 pad past T
    small_blocks = ocokit.run(learner, problem, 997, 3, record_decisions=True, comparators=False)
    for other in (long, small_blocks):
        for field in ("loss", "constraints", "decisions"):
            np.testing.assert_allclose(getattr(other, field)[:100], getattr(short, field), rtol=0, atol=1e-13)
    # the per-round optimum too (comparator_loss: the best point over T rounds, which depends on T)
    np.testing.assert_allclose(long.optimum_loss[:100], short.optimum_loss, rtol=0, atol=1e-13)
    np.testing.assert_allclose(small_blocks.loss, long.loss[:997], rtol=1e-12)


def test_non_finite_round_is_named_in_any_block_and_padding_rounds_never_count(monkeypatch):
    monkeypatch.setattr(ocokit.engine._rounds, "BLOCK_FROM_T", 1)
    monkeypatch.setattr(ocokit.engine._rounds, "BLOCK_ROUNDS", 3)  # T = 10: 4 blocks of 3 rounds, 2 past T
    box = ocokit.sets.Box(-1.0, 1.0, dim=2)
    with pytest.raises(NonFiniteError, match="non-finite loss at round 8"):
        ocokit.run(OGD(eta=0.1), NaNAt(box, bad=8), 10)
    traj = ocokit.run(OGD(eta=0.1), NaNAt(box, bad=11), 10)  # rounds 11 and 12 are drawn, played, dropped
    assert traj.loss.shape == (10,) and int(traj.first_bad_round) == -1 and np.all(np.isfinite(traj.loss))


def test_session_observe_many_equals_observe_and_names_a_bad_round():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    traj = ocokit.run(learner, problem, 12, 5, comparators=False)
    env_key = ocokit.engine.split_key(jax.random.PRNGKey(5))[0]
    datas = jax.vmap(lambda t: problem.round_data(None, jax.random.fold_in(env_key, t), t))(jnp.arange(1, 13))
    session = ocokit.Session(learner, problem, horizon=12, key=5)
    first = session.observe(jax.tree.map(lambda a: a[0], datas))
    burst = session.observe_many(jax.tree.map(lambda a: a[1:9], datas))
    rest = session.observe_many(jax.tree.map(lambda a: a[9:], datas))
    assert session.t == 12 and burst["loss"].shape == (8,) and rest["constraints"].shape == (3, 2)
    losses = np.concatenate([np.atleast_1d(first["loss"]), burst["loss"], rest["loss"]])
    np.testing.assert_allclose(losses, traj.loss, rtol=1e-12)
    nan_session = ocokit.Session(OGD(eta=0.1), NaNAt(ocokit.sets.Box(-1.0, 1.0, dim=2), bad=3), horizon=5)
    nan_session.observe(jnp.asarray(1.0))
    with pytest.raises(NonFiniteError, match="non-finite loss at round 3"):
        nan_session.observe_many(jnp.asarray([1.0, jnp.nan, 1.0]))


@pytest.mark.parametrize("T", [0, -3, 2.5])
def test_bad_horizon(T):
    with pytest.raises(ValueError, match="T must be an integer >= 1"):
        ocokit.run(OGD(eta=0.1), TimeVaryingRegression(), T)


def test_bad_learner_and_problem():
    with pytest.raises(ValueError, match="learner must be"):
        ocokit.run(object(), TimeVaryingRegression(), 5)
    with pytest.raises(ValueError, match="problem must be"):
        ocokit.run(OGD(eta=0.1), object(), 5)


def test_session_matches_run():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    traj = ocokit.run(learner, problem, 8, 5)
    session = ocokit.Session(learner, problem, horizon=8, key=5)
    env_key = ocokit.engine.split_key(session.key)[0]
    for t in range(1, 9):
        session.decide()
        out = session.observe(problem.round_data(None, jax.random.fold_in(env_key, t), t))
        assert out["loss"] == pytest.approx(float(traj.loss[t - 1]), rel=1e-12)


def _first_case_of_each_learner() -> list[tuple[str, object, object]]:
    first = {}
    for case_id, learner, problem in cases():
        first.setdefault(type(learner), (case_id, learner, problem))
    return [c for c in first.values() if type(c[1]).feedback is not PREDICTIONS]  # Session takes no lookahead


@pytest.mark.parametrize(
    "case",  # six learners in the unit tier, every learner in the integration tier
    [pytest.param(c, id=c[0], marks=() if i < 6 else pytest.mark.integration)
     for i, c in enumerate(_first_case_of_each_learner())],
)  # fmt: skip
def test_session_plays_every_learner_as_run_does(case):
    """Decision by decision and loss by loss (the Session packs its state into a few buffers per call)."""
    _, learner, problem = case
    T = 5
    traj = ocokit.run(learner, problem, T, 3, record_decisions=True, comparators=False, throw=False)
    session = ocokit.Session(learner, problem, horizon=T, key=3)
    env_key = ocokit.engine.split_key(session.key)[0]
    episode = problem.episode(env_key, T)
    for t in range(1, T + 1):
        x = session.decide()
        out = session.observe(problem.round_data(episode, jax.random.fold_in(env_key, t), t))
        np.testing.assert_allclose(x, traj.decisions[t - 1], rtol=1e-12, atol=1e-12, err_msg=f"round {t}")
        np.testing.assert_allclose(out["loss"], traj.loss[t - 1], rtol=1e-12, atol=1e-12, err_msg=f"round {t}")
        np.testing.assert_allclose(out["constraints"], traj.constraints[t - 1], rtol=1e-12, atol=1e-12)
    # the unpacked state is the learner's state: its tree, shapes and dtypes
    initial = learner.init(ocokit.algorithms.ProblemInfo.of(problem, T), jax.random.PRNGKey(0))
    kinds = lambda tree: jax.tree.map(lambda a: (a.shape, a.dtype), tree)  # noqa: E731
    assert kinds(session.state) == kinds(initial)


def test_session_rounds_take_the_state_types_the_rounds_return():
    """A weakly typed leaf of ``init`` that ``update`` makes strongly typed crosses strongly typed from the start
    (as ``lax.scan`` promotes it), so the round compiles once; one that changes dtype is an error."""
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    info = ocokit.algorithms.ProblemInfo.of(problem, 4)
    first = jax.tree.leaves(jax.eval_shape(learner.init, info, jax.random.key(0)))
    session = ocokit.Session(learner, problem, horizon=4, key=0)
    env_key = ocokit.engine.split_key(session.key)[0]
    with count_compiles("_play") as counted:
        for t in range(1, 5):
            session.observe(problem.round_data(None, jax.random.fold_in(env_key, t), t))
    assert counted.count <= 1  # compiled once (or not at all: another test of this process compiled it)
    steady = jax.tree.leaves(session.state)
    assert any(a.weak_type and not b.weak_type for a, b in zip(first, steady, strict=True)), "no promoted leaf"

    class _GrowsWide(OGD):
        def update(self, state, x, feedback):
            return jax.tree.map(lambda a: a.astype(jnp.float32) if a.dtype == jnp.float64 else a, state)

    with pytest.raises(ValueError, match=r"a round changes a leaf of the learner's state from float64"):
        ocokit.Session(_GrowsWide(eta=0.01), problem, horizon=4)


def test_session_raises_on_non_finite_with_round():
    problem = NaNAt(ocokit.sets.Box(-1.0, 1.0, dim=2), bad=3)
    session = ocokit.Session(OGD(eta=0.1), problem, horizon=5)
    session.observe(jnp.asarray(1.0))
    session.observe(jnp.asarray(1.0))
    with pytest.raises(NonFiniteError, match="round 3"):
        session.observe(jnp.asarray(jnp.nan))


def test_custom_problem_round_robin_data_and_validation():
    problem = quadratic_problem(n_rounds=4)
    traj = ocokit.run(OGD(eta=0.1), problem, 9, record_decisions=True)
    assert traj.constraints.shape == (9, 1)
    box = ocokit.sets.Box(-1.0, 1.0, dim=2)
    with pytest.raises(ValueError, match="exactly one of data"):
        ocokit.problems.CustomProblem(domain=box, loss=lambda d, x: x.sum())
    with pytest.raises(ValueError, match="scalar"):
        ocokit.problems.CustomProblem(domain=box, loss=lambda d, x: x, data=jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="domain must be"):
        ocokit.problems.CustomProblem(domain="box", loss=lambda d, x: x.sum(), data=jnp.ones(3))
    sampled = ocokit.problems.CustomProblem(
        domain=box, loss=lambda d, x: jnp.sum((x - d) ** 2), sampler=lambda k, t: jax.random.normal(k, (2,))
    )
    assert ocokit.run(OGD(eta=0.1), sampled, 5).constraints.shape == (5, 0)


class _Counter(ocokit.algorithms.AbstractLearner):
    """Plays x_t = [t / 10] whatever it observes: a fixed sequence for checking what the engine passes."""

    feedback = ocokit.feedback.FULL_INFORMATION
    needs = ocokit.algorithms.Needs(memory=True)  # it plays the memory problem below

    def init(self, info, key):
        return jnp.asarray(1.0)

    def decide(self, state):
        return jnp.array([state / 10])

    def update(self, state, x, feedback):
        return state + 1.0


class _Memory2(ocokit.problems.AbstractProblem):
    """f_t(x_{t-1}, x_t) = x_{t-1} - 2 x_t: a loss with memory h = 2."""

    domain: ocokit.sets.Box

    @property
    def num_constraints(self):
        return 0

    def memory(self):
        return 2

    def round_data(self, episode, key, t):
        return None

    def loss(self, data, xs):
        return xs[0, 0] - 2.0 * xs[1, 0]

    def constraints(self, data, x):
        return jnp.zeros((0,))


def test_memory_window_is_passed_oldest_first():
    traj = ocokit.run(_Counter(), _Memory2(ocokit.sets.Box(-1.0, 1.0, dim=1)), 4)
    # before round 1 the window is filled with x_1; then (x_{t-1}, x_t)
    expected = [0.1 - 0.2, 0.1 - 0.4, 0.2 - 0.6, 0.3 - 0.8]
    np.testing.assert_allclose(traj.loss, expected, rtol=1e-12)


def test_comparators_computed_once_then_attached_equal_the_runs_own():
    problem = TimeVaryingRegression()
    env = ocokit.comparators(problem, 10, [4, 5], chunk_size=1)
    assert set(env) == {"comparator_loss", "optimum_loss"} and env["optimum_loss"].shape == (2, 10)
    grid = ocokit.stack([OGD(eta=0.01), OGD(eta=0.03)])
    bare = ocokit.sweep(grid, problem, 10, [4, 5], batched_learner=True, comparators=False)
    attached = ocokit.with_comparators(bare, env)
    for s, seed in enumerate([4, 5]):
        own = ocokit.run(OGD(eta=0.03), problem, 10, seed)
        np.testing.assert_allclose(attached.comparator_loss[1, s], own.comparator_loss, rtol=1e-12)
        np.testing.assert_allclose(attached.optimum_loss[1, s], own.optimum_loss, rtol=1e-12)
    with pytest.raises(ValueError, match="unknown comparator entries"):
        ocokit.with_comparators(bare, {"regret": env["optimum_loss"]})


class _CountedOptima(TimeVaryingRegression):
    """Fig. 1's problem counting how many programs trace its per-round optimum."""

    def round_optimum(self, data):
        _TRACED.append(1)
        return super().round_optimum(data)


_TRACED = []


def test_every_learner_shares_the_comparators_program_of_a_problem_and_horizon(monkeypatch):
    # The comparators depend on the seed alone: run and sweep compute them in their own program, traced and compiled
    # once per problem and T, not once per learner (on Fig. 1 that program is most of a run's compile time).
    monkeypatch.setattr(ocokit._checks, "runs_fit", lambda *args: None)  # its memory estimate traces them too
    problem = _CountedOptima()
    first = ocokit.run(OGD(eta=0.01), problem, 11, 2)
    traced = len(_TRACED)
    assert traced > 0
    other = ocokit.run(ocokit.algorithms.Constant(), problem, 11, 2)
    swept = ocokit.sweep(OGD(eta=0.02), problem, 11, [2])
    assert len(_TRACED) == traced  # neither the second learner's program nor the sweep's traced the comparators
    np.testing.assert_array_equal(other.optimum_loss, first.optimum_loss)
    np.testing.assert_array_equal(swept.comparator_loss[0], first.comparator_loss)
    nothing = ocokit.run(OGD(eta=0.01), quadratic_problem(), 5)  # a problem without comparators
    assert nothing.comparator_loss is None and nothing.optimum_loss is None


def test_a_grid_keeps_the_round_counter_unbatched_so_block_branches_stay_branches():
    # BFW-TVC updates only at a block's end, behind ``lax.cond`` on its round counter. Were the grid axis
    # pushed onto that counter, vmap would turn the branch into a select that runs the inner Frank-Wolfe
    # loop every round (16x slower tuning on FilmTrust).
    learner, problem = CASES[ocokit.algorithms.BFWTVC]()[1]
    doubled = eqx.tree_at(lambda lrn: lrn.beta, learner, learner.beta * 2)
    grid = ocokit.stack([learner, doubled])
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])

    def branches(lrn, batched):  # conditionals in the program sweep compiles (a select is not one)
        program = jax.make_jaxpr(lambda k: ocokit.engine._game._sweep_chunk(lrn, problem, 9, k, False, batched))
        return str(program(keys)).count(" cond[")

    assert branches(learner, False) >= 1
    assert branches(grid, True) == branches(learner, False)
    out = ocokit.sweep(grid, problem, 9, 2, batched_learner=True, comparators=False)
    np.testing.assert_allclose(out.loss[1, 1], ocokit.run(doubled, problem, 9, 1, comparators=False).loss, rtol=1e-12)


class _BlowsUp(ocokit.algorithms.AbstractLearner):
    """Plays ``[0, 0]`` until round ``bad``, then ``[value, 0]``; its state counts the rounds."""

    feedback = ocokit.feedback.FULL_INFORMATION
    bad: int = 4
    value: float = float("inf")

    def init(self, info, key):
        return jnp.asarray(1, jnp.int32)

    def decide(self, state):
        return jnp.stack([jnp.where(state >= self.bad, self.value, 0.0), jnp.asarray(0.0)])

    def update(self, state, x, feedback):
        return state + 1


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_decision_with_finite_losses_is_named(value):
    # The loss and the constraints ignore x, so only the decision check can see the bad value.
    problem = ocokit.problems.CustomProblem(
        domain=ocokit.sets.Box(-1.0, 1.0, dim=2), loss=lambda d, x: d, data=jnp.ones(6)
    )
    with pytest.raises(NonFiniteError, match="non-finite decision at round 4"):
        ocokit.run(_BlowsUp(value=value), problem, 6)
    huge = ocokit.run(_BlowsUp(value=1e308), problem, 6)  # finite however large: x - x never overflows
    assert int(huge.first_bad_round) == -1
    session = ocokit.Session(_BlowsUp(value=value), problem, horizon=6)
    for _ in range(3):
        assert np.all(np.isfinite(session.decide()))
        session.observe(jnp.asarray(1.0))
    assert not np.all(np.isfinite(session.decide()))
    with pytest.raises(NonFiniteError, match="non-finite decision at round 4"):
        session.observe(jnp.asarray(1.0))


def _weighted_distance(data, x):
    return data["weight"] * jnp.sum((x - data["target"]) ** 2)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=4))
def test_seeds_become_the_keys_jax_gives(seeds):
    from ocokit import _checks

    expected = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in seeds])
    np.testing.assert_array_equal(_checks.keys(seeds), expected)
    np.testing.assert_array_equal(_checks.key(seeds[0]), expected[0])


def test_compiler_options_reach_the_compiled_program_and_bad_ones_are_named():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    plain = ocokit.run(learner, problem, 9, 2, comparators=False)
    loop = ocokit.run(
        learner, problem, 9, 2, comparators=False, compiler_options={"xla_cpu_use_fusion_emitters": False}
    )
    np.testing.assert_allclose(loop.loss, plain.loss, rtol=1e-12)  # the same game, compiled otherwise
    swept = ocokit.sweep(
        learner, problem, 9, [2], comparators=False, compiler_options={"xla_cpu_use_fusion_emitters": False}
    )
    np.testing.assert_array_equal(swept.loss[0], loop.loss)
    with pytest.raises(Exception, match="xla_no_such_option"):  # XLA itself names an option it does not know
        ocokit.run(learner, problem, 9, 2, comparators=False, compiler_options={"xla_no_such_option": True})
    with pytest.raises(ValueError, match="compiler_options must be a dict"):
        ocokit.run(learner, problem, 9, 2, compiler_options=["xla_cpu_use_fusion_emitters"])


def test_session_refuses_round_data_of_another_shape_and_keeps_the_callers_arrays():
    problem, learner = TimeVaryingRegression(dim=3), OGD(eta=0.01)
    session = ocokit.Session(learner, problem, horizon=4, key=0)
    env_key = ocokit.engine.split_key(session.key)[0]
    data = problem.round_data(None, jax.random.fold_in(env_key, 1), 1)
    name = sorted(data)[-1]
    shape = tuple(data[name].shape)
    for bad in (data[name][:1], data[name][0], jnp.ones((2, *shape))):
        wrong = {**data, name: bad}
        with pytest.raises(ValueError, match=rf"round data leaf \d must have shape {re.escape(str(shape))}, got"):
            session.observe(wrong)
    with pytest.raises(ValueError, match="round data must have the structure"):
        session.observe(np.ones(3))
    with pytest.raises(ValueError, match="must be of dtype float64, got complex128"):
        session.observe({**data, name: data[name] + 1j})
    with pytest.raises(ValueError, match="round data must have the structure"):
        session.observe_many(np.ones(3))  # not three rounds of scalar data
    ragged = {k: jnp.stack([v] * (2 if k == name else 3)) for k, v in data.items()}
    with pytest.raises(ValueError, match="datas must stack every leaf"):
        session.observe_many(ragged)
    assert session.t == 0  # nothing refused was played
    state = learner.init(session.info, jax.random.PRNGKey(1))
    session.observe(data)
    session.observe(data)  # the carry is donated round after round; the caller's data and learner stay valid
    assert np.all(np.isfinite(np.asarray(data[name]))) and np.isfinite(float(learner.eta))
    assert jax.tree.structure(session.state) == jax.tree.structure(state) and session.t == 2

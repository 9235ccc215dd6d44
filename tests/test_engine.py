"""The engine: run / sweep / stack / Session, common random numbers, non-finite detection, bad input."""

import re
import threading

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocokit
from ocokit.algorithms import OFWTVC, OGD, ProblemInfo
from ocokit.engine import NonFiniteError
from ocokit.feedback import PREDICTIONS
from ocokit.problems import OnlineMatrixCompletion, TimeVaryingRegression, synthetic_low_rank_ratings

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
    traj = ocokit.run(learner, problem, 25, key)
    losses, cons = _python_loop(learner, problem, 25, key)
    np.testing.assert_allclose(traj.loss, losses, rtol=1e-10)
    np.testing.assert_allclose(traj.constraints, cons, rtol=1e-10, atol=1e-12)


def test_common_random_numbers_same_rounds_for_every_learner():
    problem = TimeVaryingRegression()
    a = ocokit.run(OGD(eta=0.01), problem, 10, 7, record_decisions=True)
    b = ocokit.run(OGD(eta=0.05), problem, 10, 7, record_decisions=True)
    # round 1 is played from the same start point by both, so it costs the same
    assert float(a.loss[0]) == float(b.loss[0])
    assert not np.allclose(a.loss, b.loss)
    again = ocokit.run(OGD(eta=0.01), problem, 10, 7)
    np.testing.assert_array_equal(a.loss, again.loss)


def test_sweep_equals_separate_runs_and_chunking_is_invisible():
    problem, learner = TimeVaryingRegression(), OGD(eta=0.02)
    swept = ocokit.sweep(learner, problem, 15, [0, 1, 2, 3, 4], chunk_size=2)
    for s in range(5):
        np.testing.assert_allclose(swept.loss[s], ocokit.run(learner, problem, 15, s).loss, rtol=1e-12)


def test_sweep_over_a_stacked_grid():
    problem = TimeVaryingRegression()
    etas = [0.005, 0.01, 0.03]
    grid = ocokit.stack([OGD(eta=e) for e in etas])
    out = ocokit.sweep(grid, problem, 12, 2, batched_learner=True, chunk_size=4)
    assert out.loss.shape == (3, 2, 12) and out.first_bad_round.shape == (3, 2)
    for b, e in enumerate(etas):
        for s in range(2):
            single = ocokit.run(OGD(eta=e), problem, 12, s)
            np.testing.assert_allclose(out.loss[b, s], single.loss, rtol=1e-12)
            np.testing.assert_allclose(out.constraints[b, s], single.constraints, rtol=1e-12, atol=1e-14)
            # the environment is computed once per seed and shared by the grid
            np.testing.assert_allclose(out.comparator_loss[b, s], single.comparator_loss, rtol=1e-12)
            np.testing.assert_allclose(out.optimum_loss[b, s], single.optimum_loss, rtol=1e-12)


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
    monkeypatch.setattr(ocokit.engine, "_BLOCK_FROM_T", 1)
    long = ocokit.run(learner, problem, 1000, 3, record_decisions=True)  # 4 blocks of 250 rounds
    monkeypatch.setattr(ocokit.engine, "_BLOCK_ROUNDS", 7)  # 143 blocks of 7 rounds; the last 4 pad past T
    small_blocks = ocokit.run(learner, problem, 997, 3, record_decisions=True)
    for other in (long, small_blocks):
        for field in ("loss", "constraints", "decisions", "optimum_loss"):  # comparator_loss: best over T rounds
            np.testing.assert_allclose(getattr(other, field)[:100], getattr(short, field), rtol=0, atol=1e-13)
    np.testing.assert_allclose(small_blocks.loss, long.loss[:997], rtol=1e-12)


@pytest.mark.parametrize("vectorised", [False, True])
def test_rounds_drawn_up_front_are_the_rounds_drawn_round_by_round(monkeypatch, vectorised):
    # A sweep whose rounds are small draws them all before playing, in a program of its own (a short run's
    # mapped over the rounds, a long one's vectorised over them): bit for bit the rounds the scan would draw
    # one at a time from (environment key, t).
    if vectorised:
        monkeypatch.setattr(ocokit.engine, "_BLOCK_FROM_T", 1)
    problem, T = TimeVaryingRegression(), 30
    keys = ocokit.engine._as_keys([3, 4])
    upfront = jax.jit(ocokit.engine._rounds_impl, static_argnums=1)(problem, T, keys)
    for s, key in enumerate(keys):
        env_key, _ = ocokit.engine.split_key(key)
        episode = problem.episode(env_key, T)
        for t in (1, 17, T):
            data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
            for name, value in data.items():
                np.testing.assert_array_equal(upfront[name][s, t - 1], value)


def test_a_sweep_plays_the_same_game_with_its_rounds_drawn_up_front_or_in_the_scan(monkeypatch):
    problem, learner = TimeVaryingRegression(), OGD(eta=0.02)
    assert ocokit.engine._draws_upfront(problem, 40, 3)
    upfront = ocokit.sweep(learner, problem, 40, [0, 1, 2], record_decisions=True)
    monkeypatch.setattr(ocokit.engine, "UPFRONT_BYTES", 0)
    assert not ocokit.engine._draws_upfront(problem, 40, 3)
    in_scan = ocokit.sweep(learner, problem, 40, [0, 1, 2], record_decisions=True)
    for field in ("loss", "constraints", "decisions", "comparator_loss", "optimum_loss"):
        np.testing.assert_allclose(getattr(upfront, field), getattr(in_scan, field), rtol=1e-12, atol=1e-13)


def test_learners_swept_on_one_game_share_the_compiled_draw_of_its_rounds():
    problem = TimeVaryingRegression(dim=7, rows=3)  # a shape no other test sweeps: nothing compiled yet
    with count_compiles("_rounds_impl") as counted:
        ocokit.sweep(OGD(eta=0.01), problem, 25, 2, comparators=False)
        first = counted.count
        ocokit.sweep(OGD(eta=0.01, decay="inverse_sqrt"), problem, 25, [5, 6], comparators=False)
    assert (first, counted.count) == (1, 1)  # the second learner's sweep compiled its own program only


def test_non_finite_round_is_named_in_any_block_and_padding_rounds_never_count(monkeypatch):
    monkeypatch.setattr(ocokit.engine, "_BLOCK_FROM_T", 1)
    monkeypatch.setattr(ocokit.engine, "_BLOCK_ROUNDS", 3)  # T = 10: 4 blocks of 3 rounds, 2 past T
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


@pytest.mark.parametrize("case", _first_case_of_each_learner(), ids=lambda c: c[0])
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


def test_a_layout_packs_arrays_into_one_buffer_per_dtype_and_back_exactly():
    """Values, dtypes and weak types survive inside and outside a compiled program; typed keys cross alone."""
    leaves = [
        jnp.arange(6.0).reshape(2, 3),
        jnp.asarray(2.5),  # weakly typed
        jnp.asarray([1, 2], jnp.int32),
        jnp.asarray(np.float32(0.1)),
        jnp.zeros((0, 4)),
        jnp.asarray([True, False]),
        jax.random.key(7),
        jnp.asarray(np.uint32(4294967295)),
        jnp.asarray([7.0, 8.0]),
    ]
    layout = ocokit.engine._Layout.of(leaves)
    buffers = layout.pack(leaves)
    assert len(buffers) == 7  # f64, weak f64, i32, f32, bool, u32 and the key alone
    through_a_program = jax.jit(lambda b: layout.pack(layout.unpack(b)))(buffers)
    for back in (layout.unpack(buffers), layout.unpack(through_a_program)):
        assert len(back) == len(leaves)
        for a, b in zip(leaves, back, strict=True):
            assert (a.dtype, a.shape) == (b.dtype, b.shape)
            if jax.dtypes.issubdtype(a.dtype, jax.dtypes.extended):
                a, b = jax.random.key_data(a), jax.random.key_data(b)
            assert a.weak_type == b.weak_type
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_session_rounds_take_the_state_types_the_rounds_return():
    """A weakly typed leaf of ``init`` that ``update`` makes strongly typed crosses strongly typed from the start
    (as ``lax.scan`` promotes it), so the round compiles once; one that changes dtype is an error."""
    problem, learner = TimeVaryingRegression(), OGD(eta=0.01)
    info = ocokit.algorithms.ProblemInfo.of(problem, 4)
    first = jax.tree.leaves(jax.eval_shape(learner.init, info, jax.random.key(0)))
    session = ocokit.Session(learner, problem, horizon=4, key=0)
    env_key = ocokit.engine.split_key(session.key)[0]
    for t in range(1, 5):
        session.observe(problem.round_data(None, jax.random.fold_in(env_key, t), t))
    assert session._round._cache_size() == 1
    steady = session._carry_layout.kinds
    assert any(a.weak_type and not weak for a, (_, weak) in zip(first, steady, strict=False)), "no promoted leaf"

    class _GrowsWide(OGD):
        def update(self, state, x, feedback):
            return jax.tree.map(lambda a: a.astype(jnp.float32) if a.dtype == jnp.float64 else a, state)

    with pytest.raises(ValueError, match=r"a round changes leaf \d+ of the learner's state from float64"):
        ocokit.Session(_GrowsWide(eta=0.01), problem, horizon=4)


class _DictStatic(TimeVaryingRegression):
    """Fig. 1's problem with a dict-valued static field: its structure cannot be hashed."""

    notes: dict = eqx.field(static=True)

    def __init__(self):
        super().__init__()
        self.notes = {"source": "test"}


def test_session_of_an_unhashable_structure_is_built_for_itself_and_plays_the_same():
    plain, odd = TimeVaryingRegression(), _DictStatic()
    with pytest.raises(TypeError):
        hash(eqx.partition(odd, eqx.is_array)[1])  # what a Session keys its round program on
    sessions = [ocokit.Session(OGD(eta=0.01), p, horizon=3, key=0) for p in (plain, odd)]
    env_key = ocokit.engine.split_key(sessions[0].key)[0]
    for t in range(1, 4):
        data = plain.round_data(None, jax.random.fold_in(env_key, t), t)
        losses = [s.observe(data) for s in sessions]
        np.testing.assert_array_equal(*(np.asarray(s.decide()) for s in sessions))
        for name in ("loss", "constraints"):
            np.testing.assert_array_equal(losses[0][name], losses[1][name])


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


def test_comparators_in_background_equal_comparators_and_compile_only_in_the_caller():
    problem, seeds = TimeVaryingRegression(dim=3), [4, 5, 6, 7, 8]
    with count_compiles("_comparators_impl") as counted:
        futures = ocokit.engine.comparators_in_background(problem, 11, seeds, chunk_size=2)
        assert counted.count == 1 and counted.threads == {threading.get_ident()}  # compiled before it returned
        chunks = [future.result() for future in futures]
        again = [f.result() for f in ocokit.engine.comparators_in_background(problem, 11, seeds, chunk_size=2)]
    assert counted.count == 1  # the threads ran the program compiled here: nothing else compiled it
    assert [chunk["optimum_loss"].shape for chunk in chunks] == [(2, 11), (2, 11), (1, 11)]
    short = ocokit.comparators(problem, 11, seeds, chunk_size=2)
    for name in ("comparator_loss", "optimum_loss"):
        assert isinstance(chunks[0][name], np.ndarray)
        np.testing.assert_array_equal(np.concatenate([chunk[name] for chunk in chunks]), short[name])
        np.testing.assert_array_equal(np.concatenate([chunk[name] for chunk in again]), short[name])
    typed = jax.random.split(jax.random.key(3), 3)  # typed keys, as comparators takes them
    got = [f.result() for f in ocokit.engine.comparators_in_background(problem, 11, typed, chunk_size=2)]
    want = ocokit.comparators(problem, 11, typed, chunk_size=2)
    np.testing.assert_array_equal(np.concatenate([g["optimum_loss"] for g in got]), want["optimum_loss"])
    with pytest.raises(ValueError, match="workers"):
        ocokit.engine.comparators_in_background(problem, 11, seeds, workers=0)
    lent = ocokit.engine.comparators_in_background(problem, 11, seeds, chunk_size=2, workers=1)
    lent.compute_here()  # returns once every chunk is taken, by its one thread or by the caller: the same numbers
    np.testing.assert_array_equal(np.concatenate([f.result()["optimum_loss"] for f in lent]), short["optimum_loss"])


def test_background_comparators_lend_the_caller_the_chunks_no_thread_has_taken():
    holding, release, ran = threading.Event(), threading.Event(), {}

    def run(chunk, keep):  # a chunk's "values": its number, keep times; chunk 3 fails
        ran[chunk] = threading.get_ident()
        if chunk == 0:
            holding.set()  # the thread holds chunk 0 until released
            assert release.wait(30)
        if chunk == 3:
            raise RuntimeError("chunk 3 failed")
        return {"values": np.full(keep, chunk)}

    futures = ocokit.engine.BackgroundComparators(run, [(0, 2), (1, 2), (2, 2), (3, 1)])
    thread = threading.Thread(target=futures.compute_here)
    thread.start()
    assert holding.wait(30)
    assert futures[2].cancel()  # not taken yet: cancelled, so skipped
    futures.compute_here()  # takes chunks 1 and 3 while the thread still holds chunk 0
    assert ran == {0: thread.ident, 1: threading.get_ident(), 3: threading.get_ident()}
    assert not futures[0].done() and futures[1].result()["values"].tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="chunk 3 failed"):  # an error goes to its chunk's future
        futures[3].result()
    release.set()
    thread.join(30)
    assert futures[0].result()["values"].tolist() == [0, 0] and futures[2].cancelled()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=5))
def test_seeds_become_the_keys_jax_gives_bit_for_bit_without_running_jax(seeds):
    expected = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in seeds])
    host = ocokit.engine._as_keys(seeds)
    assert isinstance(host, np.ndarray) and host.dtype == np.uint32  # computed by NumPy: nothing compiled
    np.testing.assert_array_equal(host, expected)
    np.testing.assert_array_equal(ocokit.engine._as_key(seeds[0]), expected[0])


def test_seeds_are_left_to_jax_where_its_seeding_differs():
    names = ("jax_random_seed_offset", "jax_default_prng_impl", "jax_enable_x64")
    saved = {name: getattr(jax.config, name) for name in names}
    try:
        jax.config.update("jax_random_seed_offset", 1)
        assert ocokit.engine._host_keys([3]) is None
        np.testing.assert_array_equal(ocokit.engine._as_keys([3])[0], jax.random.PRNGKey(3))
        jax.config.update("jax_random_seed_offset", 0)
        jax.config.update("jax_default_prng_impl", "rbg")  # another generator: its keys have another shape
        assert ocokit.engine._host_keys([3]) is None and ocokit.engine._as_keys(2).shape == (2, 4)
        jax.config.update("jax_default_prng_impl", "threefry2x32")
        jax.config.update("jax_enable_x64", False)  # 32-bit mode: JAX truncates the seed first
        assert ocokit.engine._host_keys([3]) is None
    finally:
        for name, value in saved.items():
            jax.config.update(name, value)


def test_a_grid_keeps_the_round_counter_unbatched_so_block_branches_stay_branches():
    # BFW-TVC updates only at a block's end, behind ``lax.cond`` on its round counter. Were the grid axis
    # pushed onto that counter, vmap would turn the branch into a select that runs the inner Frank-Wolfe
    # loop every round (16x slower tuning on FilmTrust).
    learner, problem = CASES[ocokit.algorithms.BFWTVC]()[1]
    doubled = eqx.tree_at(lambda lrn: lrn.beta, learner, learner.beta * 2)
    grid = ocokit.stack([learner, doubled])
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])

    def branches(lrn, batched):  # conditionals in the program sweep compiles (a select is not one)
        program = jax.make_jaxpr(lambda k: ocokit.engine._sweep_chunk(lrn, problem, 9, k, False, True, batched))
        return str(program(keys)).count(" cond[")

    assert branches(learner, False) >= 1
    assert branches(grid, True) == branches(learner, False)
    out = ocokit.sweep(grid, problem, 9, 2, batched_learner=True)
    np.testing.assert_allclose(out.loss[1, 1], ocokit.run(doubled, problem, 9, 1).loss, rtol=1e-12)


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


def test_memory_estimate_is_remembered_per_problem_structure(monkeypatch):
    # run() estimates memory from shapes (jax.eval_shape) before compiling; a problem of the same structure and
    # shapes, whatever its numbers (here a dict of round data), reuses the estimate instead of tracing again.
    box = ocokit.sets.Box(-1.0, 1.0, dim=2)

    def problem(n, scale):
        data = {"target": scale * jnp.ones((n, 2)), "weight": jnp.ones(n)}
        return ocokit.problems.CustomProblem(domain=box, loss=_weighted_distance, data=data)

    problems = problem(6, 1.0), problem(6, 2.0), problem(7, 1.0)  # built (and checked) before counting
    traced = []
    eval_shape = jax.eval_shape
    monkeypatch.setattr(jax, "eval_shape", lambda *a, **k: traced.append(1) or eval_shape(*a, **k))
    monkeypatch.setattr(ocokit.engine, "_FOOTPRINTS", {})
    counts = []
    for p in problems:
        ocokit.run(OGD(eta=0.1), p, 5, comparators=False)
        counts.append(len(traced))
    assert counts[0] > 0  # estimated
    assert counts[1] == counts[0]  # other numbers: remembered
    assert counts[2] > counts[1]  # other shapes: estimated anew


def test_a_footprint_with_comparators_serves_the_sweeps_after_it_without_tracing(monkeypatch):
    # An experiment starts its comparators (footprint with them) before its learners' sweeps (footprint without).
    traced = []
    eval_shape = jax.eval_shape
    monkeypatch.setattr(jax, "eval_shape", lambda *a, **k: traced.append(1) or eval_shape(*a, **k))
    monkeypatch.setattr(ocokit.engine, "_FOOTPRINTS", {})
    footprint = ocokit.engine._footprint
    with_env = footprint(TimeVaryingRegression(dim=3), 9, True)
    first = len(traced)
    assert first > 0 and with_env[2] is True and with_env[1] > 0
    assert footprint(TimeVaryingRegression(dim=3), 9, False) == (*with_env[:2], False)
    assert len(traced) == first  # remembered
    without = footprint(TimeVaryingRegression(dim=4), 9, False)  # the other order: the comparators traced when asked
    second = len(traced)
    assert without[2] is False and second > first
    assert footprint(TimeVaryingRegression(dim=4), 9, True) == (*without[:2], True)
    third = len(traced)
    assert third > second
    assert footprint(TimeVaryingRegression(dim=4), 9, True) == (*without[:2], True) and len(traced) == third


def _weighted_distance(data, x):
    return data["weight"] * jnp.sum((x - data["target"]) ** 2)


def _large_game():
    """A game whose decision has one entry more than ``engine.SMALL_DECISION``: it compiles with ``_LARGE_GAME``."""
    dim = ocokit.engine.SMALL_DECISION + 1
    return ocokit.problems.CustomProblem(
        domain=ocokit.sets.Box(0.0, 1.0, dim=dim), loss=lambda d, x: jnp.sum((x - d) ** 2), data=jnp.zeros((1, dim))
    )


def test_short_sweeps_compile_without_fusion_emitters_when_asked_and_keep_their_numbers():
    engine = ocokit.engine
    small, T, S = TimeVaryingRegression(), 40, 3
    large = _large_game()
    assert engine.short_sweeps() == 0  # the library's default: every sweep with its game's options
    assert engine._sweep_options(small, 1) == engine._game_options(small)
    with pytest.raises(ValueError, match="rounds must be an integer >= 0, got -1"):
        engine.compile_short_sweeps(-1)
    learner = ocokit.algorithms.COLDQ.from_theory(ocokit.algorithms.ProblemInfo.of(small, T))
    engine.compile_short_sweeps(T * S)  # reset after the test (conftest's _library_compile_options)
    assert engine._sweep_options(large, 1) == engine._game_options(large)  # a large game's own, however short
    assert engine._sweep_options(small, T * S + 1) == engine._game_options(small)
    if not engine._cpu_knows(tuple((dict(engine._SMALL_GAME) | engine._SHORT_SWEEP).items())):
        pytest.skip("this backend's XLA lacks one of these options")
    assert dict(engine._sweep_options(small, T * S)) == dict(engine._SMALL_GAME) | engine._SHORT_SWEEP
    with count_compiles("_sweep_chunk") as counted:
        short = ocokit.sweep(learner, small, T, S)  # T S rounds in all: compiled cheaply
        engine.compile_short_sweeps(T * S - 1)
        default = ocokit.sweep(learner, small, T, S)  # the same sweep, now too long for it
    assert counted.count == 2  # two programs: the options are part of what is compiled
    for got, want in zip(jax.tree.leaves(short), jax.tree.leaves(default), strict=True):
        scale = float(jnp.max(jnp.abs(want))) if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * (1.0 + scale))


def test_small_games_compile_without_ynnpack_fusions_and_large_games_keep_them():
    engine = ocokit.engine
    small = ocokit.problems.TimeVaryingRegression()
    large = _large_game()
    assert engine._usable({"xla_no_such_option": True}) == ()  # an XLA that lacks an option: its defaults
    assert engine._game_options(large) == engine._usable(engine._LARGE_GAME)  # YNNPACK kept
    if not engine._cpu_knows(tuple(engine._SMALL_GAME.items())):
        pytest.skip("this backend's XLA has no YNNPACK fusion option")
    options = engine._game_options(small)
    assert options == tuple(engine._SMALL_GAME.items())
    matrices = ocokit.problems.CustomProblem(  # a matrix-matrix product per round: XLA's default calls YNNPACK
        domain=ocokit.sets.Box(-1.0, 1.0, dim=20),
        loss=lambda d, x: jnp.sum((x.reshape(2, 10) @ x.reshape(2, 10).T - d) ** 2),
        data=jax.random.normal(jax.random.PRNGKey(1), (9, 2, 2)),
    )
    game = (OGD(eta=0.01), matrices, 9, jax.random.PRNGKey(0), True, False)
    default = eqx.filter_jit(engine._run).lower(*game).compile()
    chosen = engine._compiled(engine._run, options).jitted.lower(*game).compile()
    assert "__ynn_fusion" in default.compiled.as_text()  # XLA's default hands the round's dots to YNNPACK
    assert "__ynn_fusion" not in chosen.compiled.as_text()
    np.testing.assert_allclose(chosen(*game).decisions, default(*game).decisions, rtol=1e-13, atol=1e-13)


def test_large_games_write_each_new_decision_over_the_old_one():
    """A large game's round records what it reads of ``x_t`` (its loss, its finiteness) apart from the update;
    with ``_LARGE_GAME`` XLA still writes ``x_{t+1}`` over ``x_t`` instead of copying ``x_t`` first each round."""
    engine = ocokit.engine
    if not engine._cpu_knows(tuple(engine._LARGE_GAME.items())):
        pytest.skip("this backend's XLA has no region-analysis copy insertion option")
    problem = OnlineMatrixCompletion(synthetic_low_rank_ratings(257, 256, n_obs=3000, step=1.0), radius=50.0)
    assert not engine._small_game(problem)
    game = (OFWTVC.from_theory(ProblemInfo.of(problem, 9)), problem, 9, jax.random.PRNGKey(0), False, False)
    default = eqx.filter_jit(engine._run).lower(*game).compile()
    chosen = engine._compiled(engine._run, engine._game_options(problem)).jitted.lower(*game).compile()

    def copies(compiled):  # copies of a 257 x 256 matrix: the first carry's, and the round's copy of x_t
        return len(re.findall(r"\[257,256\]\{1,0\} copy\(", compiled.compiled.as_text()))

    assert copies(chosen) == copies(default) - 1
    got, want = chosen(*game), default(*game)
    for name in ("loss", "constraints"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))

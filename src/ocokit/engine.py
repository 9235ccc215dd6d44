"""Running learners against problems: one compiled ``lax.scan`` per run, ``vmap`` for sweeps.

``run`` plays T rounds of the online game inside a single ``jax.lax.scan`` and returns a
:class:`Trajectory` of per-round quantities. ``sweep`` vmaps the same compiled code over seeds and over a
batch of learners (a hyperparameter grid made with :func:`stack`), in chunks of bounded memory.
``Session`` steps one round at a time against a live stream.

Randomness: a run's key is split into an environment key (round data, via ``fold_in(env_key, t)``) and a
learner key. Runs given the same key face identical rounds, whatever the learner (common random numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.feedback import PREDICTIONS, FeedbackKind, make_feedback
from ocokit.problems._base import AbstractProblem

_QUANTITIES = ("loss", "constraints", "decision")


class NonFiniteError(FloatingPointError):
    """A loss, constraint value or decision became non-finite during a run."""


class Trajectory(eqx.Module):
    """Per-round record of one run (leading axis: rounds; batched runs add leading axes).

    Attributes:
        loss: ``f_t(x_t)``, shape ``(T,)``.
        constraints: ``g_t(x_t)``, shape ``(T, N)``.
        diagnostics: the learner's per-round diagnostics (e.g. ``"oracle_calls"``, ``"queue"``).
        comparator_loss: ``f_t(x*)`` of the best fixed feasible point, or ``None``.
        optimum_loss: ``f_t(x_t*)`` of the per-round constrained optimum, or ``None``.
        decisions: ``x_t`` if recorded, else ``None``.
        first_bad_round: first 1-based round with a non-finite quantity, ``-1`` if none.
        bad_quantity: index into ``("loss", "constraints", "decision")`` of that quantity, ``-1`` if none.
    """

    loss: Float[Array, " T"]
    constraints: Float[Array, "T N"]
    diagnostics: dict[str, Array]
    comparator_loss: Float[Array, " T"] | None
    optimum_loss: Float[Array, " T"] | None
    decisions: Array | None
    first_bad_round: Int[Array, ""]
    bad_quantity: Int[Array, ""]

    @property
    def horizon(self) -> int:
        """Number of rounds T."""
        return self.loss.shape[-1]


def split_key(key: PRNGKeyArray) -> tuple[PRNGKeyArray, PRNGKeyArray]:
    """The (environment, learner) keys of a run's key."""
    return jax.random.fold_in(key, 0), jax.random.fold_in(key, 1)


def _check_compatible(learner: AbstractLearner, problem: AbstractProblem, T: int) -> None:
    _checks.positive_int("T", T)
    if not isinstance(learner, AbstractLearner):
        raise ValueError(f"learner must be an ocokit AbstractLearner, got {type(learner).__name__}")
    if not isinstance(problem, AbstractProblem):
        raise ValueError(f"problem must be an ocokit AbstractProblem, got {type(problem).__name__}")
    if not isinstance(getattr(type(learner), "feedback", None), FeedbackKind):
        raise ValueError(f"{type(learner).__name__} declares no feedback kind (a FeedbackKind class attribute)")


def _window(history: Array, x: Array) -> Array:
    return jnp.concatenate([history[1:], x[None]], axis=0)


def _initial_history(problem: AbstractProblem, x0: Array, h: int) -> Array | None:
    """The carried history before round 1: the problem's declared ``initial_history()``, else ``x_1`` repeated.

    ``initial_history()`` returns the fixed decisions ``x_{2-h}, ..., x_0`` (shape ``(h - 1, *x.shape)``,
    oldest first) of a problem whose costs start from a given initial condition (paper 002: ``x_t = x_0``
    for ``t <= 0``), or ``None`` (the default).
    """
    if h <= 1:
        return None
    past = problem.initial_history()
    if past is None:
        return jnp.repeat(x0[None], h, axis=0)
    past = jnp.broadcast_to(jnp.asarray(past, x0.dtype), (h - 1, *x0.shape))
    return jnp.concatenate([past[:1], past], axis=0)


def _before_round_one(learner: AbstractLearner, problem: AbstractProblem, state, episode, env_key):
    """A learner whose feedback kind looks ahead (``PREDICTIONS``) absorbs round 0's feedback first."""
    if type(learner).feedback is not PREDICTIONS:
        return state
    feedback = make_feedback(PREDICTIONS, problem, None, None, None, episode=episode, env_key=env_key, t=0)
    return learner.prepare(state, feedback)


def _comparator_losses(problem: AbstractProblem, data, x_star, h: int, comparators: bool) -> dict[str, Array]:
    """Round data's losses at the best fixed point and at the round's own constrained optimum."""
    env = {}
    if x_star is not None:
        env["comparator_loss"] = problem.loss(data, jnp.repeat(x_star[None], h, axis=0) if h > 1 else x_star)
    x_opt = problem.round_optimum(data) if comparators else None
    if x_opt is not None:
        env["optimum_loss"] = problem.loss(data, x_opt)
    return env


def _comparators_one(problem: AbstractProblem, T: int, key: PRNGKeyArray) -> dict[str, Array]:
    env_key, _ = split_key(key)
    episode = problem.episode(env_key, T)
    x_star = problem.best_fixed(episode, env_key, T)
    h = problem.memory()

    def body(_, t):
        data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
        return None, _comparator_losses(problem, data, x_star, h, True)

    return jax.lax.scan(body, None, jnp.arange(1, T + 1, dtype=jnp.int32))[1]


@eqx.filter_jit
def _comparators_chunk(problem, T, keys):
    return jax.vmap(lambda key: _comparators_one(problem, T, key))(keys)


def comparators(
    problem: AbstractProblem, T: int, keys: PRNGKeyArray | Sequence[int] | int, *, chunk_size: int = 64
) -> dict[str, Array]:
    """The comparators' per-round losses of S seeds' games, without playing any learner.

    What :func:`run` and :func:`sweep` compute with ``comparators=True`` (they depend on the seed only):
    compute them once with this function, run every learner with ``comparators=False``, and attach them
    with :func:`with_comparators`. An experiment comparing several learners on costly comparators (a QP
    per round) saves all but one of those solves.

    Returns:
        ``{"comparator_loss": (S, T), "optimum_loss": (S, T)}``, each present only if the problem defines
        that comparator (``best_fixed``, ``round_optimum``).

    Example:
        >>> import ocokit
        >>> problem, learner = ocokit.problems.TimeVaryingRegression(), ocokit.algorithms.OGD(eta=0.01)
        >>> env = ocokit.comparators(problem, 20, 3)
        >>> traj = ocokit.with_comparators(ocokit.sweep(learner, problem, 20, 3, comparators=False), env)
        >>> traj.optimum_loss.shape
        (3, 20)
    """
    _checks.positive_int("T", T)
    _checks.positive_int("chunk_size", chunk_size)
    keys = _as_keys(keys)
    S = keys.shape[0]
    size = min(chunk_size, S)
    pieces = []
    for start in range(0, S, size):
        idx = np.arange(start, start + size) % S
        keep = min(size, S - start)
        pieces.append(jax.tree.map(lambda a, k=keep: a[:k], _comparators_chunk(problem, T, keys[idx])))
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *pieces)


def with_comparators(traj: Trajectory, env: dict[str, Array]) -> Trajectory:
    """``traj`` with the comparator losses of :func:`comparators` (broadcast over any grid axis)."""
    fields = ("comparator_loss", "optimum_loss")
    unknown = set(env) - set(fields)
    if unknown:
        raise ValueError(f"unknown comparator entries {sorted(unknown)}; expected some of {fields}")
    values = {k: jnp.broadcast_to(env[k], traj.loss.shape) if k in env else None for k in fields}
    return eqx.tree_at(
        lambda tr: (tr.comparator_loss, tr.optimum_loss),
        traj,
        (values["comparator_loss"], values["optimum_loss"]),
        is_leaf=lambda x: x is None,
    )


def _run(
    learner: AbstractLearner,
    problem: AbstractProblem,
    T: int,
    key: PRNGKeyArray,
    record_decisions: bool,
    comparators: bool = True,
):
    """One game of T rounds of one learner."""
    env_key, learner_key = split_key(key)
    info = ProblemInfo.of(problem, T)
    h = info.memory
    kind = type(learner).feedback
    episode = problem.episode(env_key, T)
    x_star = problem.best_fixed(episode, env_key, T) if comparators else None

    def play(carry, data, t):
        """Round ``t``: decide, suffer, observe, update."""
        state, history, bad_round, bad_what = carry
        x = learner.decide(state)
        window = _window(history, x) if h > 1 else None
        loss = problem.loss(data, window if h > 1 else x)
        cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
        feedback = make_feedback(kind, problem, data, loss, cons, episode=episode, env_key=env_key, t=t)
        new_state = learner.update(state, x, feedback)
        out = {"loss": loss, "constraints": cons, "diagnostics": learner.diagnostics(new_state)}
        if record_decisions:
            out["decision"] = x
        finite = jnp.stack([jnp.isfinite(loss), jnp.all(jnp.isfinite(cons)), jnp.all(jnp.isfinite(x))])
        is_new_bad = (bad_round < 0) & ~jnp.all(finite)
        bad_what = jnp.where(is_new_bad, jnp.argmin(finite).astype(jnp.int32), bad_what)
        bad_round = jnp.where(is_new_bad, t, bad_round)
        return (new_state, window if h > 1 else history, bad_round, bad_what), out

    def body(carry, t):
        data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
        carry, out = play(carry, data, t)
        return carry, (out, _comparator_losses(problem, data, x_star, h, comparators))

    state = _before_round_one(learner, problem, learner.init(info, learner_key), episode, env_key)
    minus_one = jnp.asarray(-1, dtype=jnp.int32)
    carry0 = (state, _initial_history(problem, learner.decide(state), h), minus_one, minus_one)
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    (_, _, bad_round, bad_what), (out, env) = jax.lax.scan(body, carry0, ts)
    return Trajectory(
        loss=out["loss"],
        constraints=out["constraints"],
        diagnostics=out["diagnostics"],
        comparator_loss=env.get("comparator_loss"),
        optimum_loss=env.get("optimum_loss"),
        decisions=out.get("decision"),
        first_bad_round=bad_round,
        bad_quantity=bad_what,
    )


def _run_grid(
    learner: AbstractLearner,
    problem: AbstractProblem,
    T: int,
    key: PRNGKeyArray,
    record_decisions: bool,
    comparators: bool = True,
):
    """A whole stacked grid of learners playing the same game: :func:`_run` vmapped over the grid axis.

    Only what depends on a learner is batched: ``vmap`` leaves the environment's work (drawing the round
    data, the comparators) unbatched, so it is done once per round and shared by the grid, and it keeps
    state that no learner's numbers touch (a round counter) unbatched through the scan, so a learner's
    ``lax.cond`` on it stays a real branch instead of running both sides.
    """
    params, static = eqx.partition(learner, eqx.is_array)
    return jax.vmap(lambda p: _run(eqx.combine(p, static), problem, T, key, record_decisions, comparators))(params)


_run_jit = eqx.filter_jit(_run)


def _raise_if_bad(traj: Trajectory, label: str = "") -> None:
    rounds = np.asarray(traj.first_bad_round).reshape(-1)
    whats = np.asarray(traj.bad_quantity).reshape(-1)
    bad = np.flatnonzero(rounds >= 0)
    if bad.size:
        i = bad[0]
        where = f" (run {i} of the batch)" if rounds.size > 1 else ""
        raise NonFiniteError(
            f"{label}non-finite {_QUANTITIES[whats[i]]} at round {rounds[i]}{where}; "
            "pass throw=False to get the trajectory anyway"
        )


def run(
    learner: AbstractLearner,
    problem: AbstractProblem,
    T: int,
    key: PRNGKeyArray | int = 0,
    *,
    record_decisions: bool = False,
    comparators: bool = True,
    throw: bool = True,
) -> Trajectory:
    """Play ``T`` rounds of ``learner`` against ``problem`` in one compiled ``lax.scan``.

    Args:
        learner: any :class:`~ocokit.algorithms.AbstractLearner`.
        problem: any :class:`~ocokit.problems.AbstractProblem`.
        T: number of rounds, ``>= 1`` (static: a new T compiles anew).
        key: a PRNG key or an integer seed; the same key gives the same rounds to every learner.
        record_decisions: also return every decision ``x_t`` (memory ``T * dim``).
        comparators: compute the best fixed point and the per-round optimum (``comparator_loss``,
            ``optimum_loss``: static and dynamic regret). ``False`` skips that work, which for problems
            whose comparators are solved numerically can cost more than the learner itself.
        throw: raise :class:`NonFiniteError` naming the round if anything becomes non-finite; with
            ``False`` the trajectory is returned and ``first_bad_round`` tells.

    Returns:
        The :class:`Trajectory`.

    Example:
        >>> import jax.numpy as jnp, ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> traj = ocokit.run(ocokit.algorithms.OGD(eta=0.01), problem, T=50, key=0)
        >>> traj.loss.shape, traj.constraints.shape
        ((50,), (50, 2))
    """
    _check_compatible(learner, problem, T)
    key = jax.random.PRNGKey(key) if isinstance(key, int) else key
    traj = _run_jit(learner, problem, T, key, record_decisions, comparators)
    if throw:
        _raise_if_bad(traj)
    return traj


def stack(learners: Sequence[AbstractLearner]) -> AbstractLearner:
    """One learner whose array leaves carry a leading batch axis: a hyperparameter grid for :func:`sweep`.

    All learners must be of the same class with the same static fields (only numeric values differ).
    """
    if not learners:
        raise ValueError("learners must be a non-empty sequence")
    statics = {eqx.tree_pformat(eqx.filter(lrn, eqx.is_array, inverse=True)) for lrn in learners}
    if len(statics) != 1:
        raise ValueError("learners must share their class and static fields to be stacked; only numbers may differ")
    arrays = [eqx.filter(lrn, eqx.is_array) for lrn in learners]
    static = eqx.filter(learners[0], eqx.is_array, inverse=True)
    return eqx.combine(jax.tree.map(lambda *xs: jnp.stack(xs), *arrays), static)


def _as_keys(keys: PRNGKeyArray | Sequence[int] | int) -> PRNGKeyArray:
    """A batch of PRNG keys from a count S (seeds ``0..S-1``), a list of seeds, or keys."""
    if isinstance(keys, int):
        _checks.positive_int("keys", keys)
        keys = list(range(keys))
    if isinstance(keys, list | tuple | range):
        keys = jnp.stack([jax.random.PRNGKey(int(s)) for s in keys])
    return keys


def _batched(learner: AbstractLearner) -> int | None:
    leaves = jax.tree.leaves(eqx.filter(learner, eqx.is_array))
    sizes = {leaf.shape[0] if leaf.ndim else None for leaf in leaves}
    return None if sizes in ({None}, set()) else sizes.pop() if len(sizes) == 1 else -1


def sweep(
    learner: AbstractLearner,
    problem: AbstractProblem,
    T: int,
    keys: PRNGKeyArray | Sequence[int] | int,
    *,
    batched_learner: bool = False,
    chunk_size: int = 64,
    record_decisions: bool = False,
    comparators: bool = True,
    throw: bool = True,
) -> Trajectory:
    """Many runs of the same compiled code, vmapped: over seeds, and over a learner grid.

    Each seed's environment (round data, comparators) is computed once and shared by every learner of a
    grid, so a grid of B learners costs far less than B independent sweeps when drawing the rounds is
    expensive.

    Args:
        learner: a learner, or with ``batched_learner=True`` a stack of B learners (:func:`stack`).
        problem: the problem (shared by all runs).
        T: number of rounds.
        keys: S seeds: an int (seeds ``0..S-1``), a list of ints, or a batch of PRNG keys.
        batched_learner: whether ``learner`` carries a leading grid axis of size B.
        chunk_size: about this many runs (seeds times grid points, at least one seed) are vmapped at once
            (bounded memory); the last chunk is padded to the same size so nothing recompiles.
        record_decisions, comparators, throw: as in :func:`run`.

    Returns:
        A :class:`Trajectory` with leading axes ``(S, ...)``, or ``(B, S, ...)`` for a batched learner.
        Run ``(b, s)`` uses seed ``s``: every grid point faces the same rounds.
    """
    _check_compatible(learner, problem, T)
    _checks.positive_int("chunk_size", chunk_size)
    keys = _as_keys(keys)
    S = keys.shape[0]
    per_chunk = chunk_size
    if batched_learner:
        B = _batched(learner)
        if B is None or B < 1:
            raise ValueError("batched_learner=True needs learner leaves with one shared leading axis (see stack)")
        per_chunk = max(1, chunk_size // B)
    size = min(per_chunk, S)
    pieces = []
    for start in range(0, S, size):
        idx = np.arange(start, start + size) % S  # pad the last chunk by wrapping around
        out = _sweep_chunk(learner, problem, T, keys[idx], record_decisions, comparators, batched_learner)
        keep = min(size, S - start)
        pieces.append(jax.tree.map(lambda a, k=keep: a[:k], out))
    traj = jax.tree.map(lambda *xs: jnp.concatenate(xs), *pieces)
    if batched_learner:  # (S, B, ...) -> (B, S, ...)
        traj = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), traj)
    if throw:
        _raise_if_bad(traj)
    return traj


@eqx.filter_jit
def _sweep_chunk(learner, problem, T, keys, record_decisions, comparators, grid):
    run_one = _run_grid if grid else _run
    return jax.vmap(lambda key: run_one(learner, problem, T, key, record_decisions, comparators))(keys)


class Session:
    """Step a learner one round at a time against a live stream (deployment, interactive use).

    ``decide()`` returns the decision to play; ``observe(data)`` takes that round's data in the format
    of ``problem.round_data`` (for :class:`~ocokit.problems.CustomProblem`, one entry of its data),
    evaluates loss and constraints at the played point and updates the learner. Each call is compiled
    once; a non-finite value raises :class:`NonFiniteError` naming the round.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> session = ocokit.Session(ocokit.algorithms.OGD(eta=0.01), problem, horizon=10, key=0)
        >>> x = session.decide()
        >>> data = problem.round_data(None, ocokit.engine.split_key(session.key)[0], 1)
        >>> sorted(session.observe(data))
        ['constraints', 'loss']
    """

    def __init__(self, learner: AbstractLearner, problem: AbstractProblem, *, horizon: int, key=0):
        _check_compatible(learner, problem, horizon)
        self.learner, self.problem = learner, problem
        self.key = jax.random.PRNGKey(key) if isinstance(key, int) else key
        self.info = ProblemInfo.of(problem, horizon)
        self.state = eqx.filter_jit(learner.init)(self.info, split_key(self.key)[1])
        self.t = 0
        self._x = None
        self._history = None
        self._decide = eqx.filter_jit(lambda lrn, s: lrn.decide(s))
        self._step = eqx.filter_jit(_session_step)

    def decide(self) -> np.ndarray:
        """The decision to play this round (the same until ``observe`` is called)."""
        self._x = self._decide(self.learner, self.state)
        if self._history is None and self.info.memory > 1:
            self._history = _initial_history(self.problem, self._x, self.info.memory)
        return np.asarray(self._x)

    def observe(self, data: Any) -> dict[str, np.ndarray]:
        """Absorb this round's data; returns the loss and constraint values at the played point."""
        if self._x is None:
            self.decide()
        self.t += 1
        self.state, self._history, loss, cons = self._step(
            self.learner, self.problem, self.state, self._x, self._history, data
        )
        loss, cons = np.asarray(loss), np.asarray(cons)
        for name, value in (("loss", loss), ("constraints", cons), ("decision", np.asarray(self._x))):
            if not np.all(np.isfinite(value)):
                raise NonFiniteError(f"non-finite {name} at round {self.t}")
        self._x = None
        return {"loss": loss, "constraints": cons}


def _session_step(learner, problem, state, x, history, data):
    window = _window(history, x) if history is not None else None
    loss = problem.loss(data, window if history is not None else x)
    cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
    feedback = make_feedback(type(learner).feedback, problem, data, loss, cons)
    return learner.update(state, x, feedback), window, loss, cons

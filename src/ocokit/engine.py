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
from ocokit.feedback import PREDICTIONS, make_feedback
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
    if not hasattr(type(learner), "feedback"):
        raise ValueError(f"{type(learner).__name__} declares no feedback kind")


def _window(history: Array, x: Array) -> Array:
    return jnp.concatenate([history[1:], x[None]], axis=0)


def _initial_history(problem: AbstractProblem, x0: Array, h: int) -> Array | None:
    """The carried history before round 1: ``problem.initial_history()`` if defined, else ``x_1`` repeated.

    ``initial_history()`` (optional) returns the fixed decisions ``x_{2-h}, ..., x_0`` (shape
    ``(h - 1, *x.shape)``, oldest first) of a problem whose costs start from a given initial condition
    (paper 002: ``x_t = x_0`` for ``t <= 0``), or ``None``.
    """
    if h <= 1:
        return None
    past = problem.initial_history() if hasattr(problem, "initial_history") else None
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


def _run(learner: AbstractLearner, problem: AbstractProblem, T: int, key: PRNGKeyArray, record_decisions: bool):
    env_key, learner_key = split_key(key)
    info = ProblemInfo.of(problem, T)
    h = info.memory
    episode = problem.episode(env_key, T)
    x_star = problem.best_fixed(episode, env_key, T)
    state = _before_round_one(learner, problem, learner.init(info, learner_key), episode, env_key)
    x0 = learner.decide(state)
    history = _initial_history(problem, x0, h)

    def as_loss_argument(window, x):
        return window if h > 1 else x

    def body(carry, t):
        state, history, bad_round, bad_what = carry
        x = learner.decide(state)
        data = problem.round_data(episode, jax.random.fold_in(env_key, t), t)
        window = _window(history, x) if h > 1 else None
        loss = problem.loss(data, as_loss_argument(window, x))
        cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
        feedback = make_feedback(
            type(learner).feedback, problem, data, loss, cons, episode=episode, env_key=env_key, t=t
        )
        new_state = learner.update(state, x, feedback)
        out = {"loss": loss, "constraints": cons, "diagnostics": learner.diagnostics(new_state)}
        if x_star is not None:
            star_arg = jnp.repeat(x_star[None], h, axis=0) if h > 1 else x_star
            out["comparator_loss"] = problem.loss(data, star_arg)
        x_opt = problem.round_optimum(data)
        if x_opt is not None:
            out["optimum_loss"] = problem.loss(data, x_opt)
        if record_decisions:
            out["decision"] = x
        finite = jnp.stack([jnp.isfinite(loss), jnp.all(jnp.isfinite(cons)), jnp.all(jnp.isfinite(x))])
        first_new = bad_round < 0
        is_bad = ~jnp.all(finite)
        bad_what = jnp.where(first_new & is_bad, jnp.argmin(finite).astype(jnp.int32), bad_what)
        bad_round = jnp.where(first_new & is_bad, t, bad_round)
        return (new_state, window if h > 1 else history, bad_round, bad_what), out

    minus_one = jnp.asarray(-1, dtype=jnp.int32)
    carry0 = (state, history, minus_one, minus_one)
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    (_, _, bad_round, bad_what), out = jax.lax.scan(body, carry0, ts)
    return Trajectory(
        loss=out["loss"],
        constraints=out["constraints"],
        diagnostics=out["diagnostics"],
        comparator_loss=out.get("comparator_loss"),
        optimum_loss=out.get("optimum_loss"),
        decisions=out.get("decision"),
        first_bad_round=bad_round,
        bad_quantity=bad_what,
    )


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
    throw: bool = True,
) -> Trajectory:
    """Play ``T`` rounds of ``learner`` against ``problem`` in one compiled ``lax.scan``.

    Args:
        learner: any :class:`~ocokit.algorithms.AbstractLearner`.
        problem: any :class:`~ocokit.problems.AbstractProblem`.
        T: number of rounds, ``>= 1`` (static: a new T compiles anew).
        key: a PRNG key or an integer seed; the same key gives the same rounds to every learner.
        record_decisions: also return every decision ``x_t`` (memory ``T * dim``).
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
    traj = _run_jit(learner, problem, T, key, record_decisions)
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
    throw: bool = True,
) -> Trajectory:
    """Many runs of the same compiled code, vmapped: over seeds, and over a learner grid.

    Args:
        learner: a learner, or with ``batched_learner=True`` a stack of B learners (:func:`stack`).
        problem: the problem (shared by all runs).
        T: number of rounds.
        keys: S seeds: an int (seeds ``0..S-1``), a list of ints, or a batch of PRNG keys.
        batched_learner: whether ``learner`` carries a leading grid axis of size B.
        chunk_size: at most this many runs are vmapped at once (bounded memory); the last chunk is padded
            to the same size so nothing recompiles.
        record_decisions, throw: as in :func:`run`.

    Returns:
        A :class:`Trajectory` with leading axes ``(S, ...)``, or ``(B, S, ...)`` for a batched learner.
        Run ``(b, s)`` uses seed ``s``: every grid point faces the same rounds.
    """
    _check_compatible(learner, problem, T)
    _checks.positive_int("chunk_size", chunk_size)
    if isinstance(keys, int):
        _checks.positive_int("keys", keys)
        keys = list(range(keys))
    if isinstance(keys, list | tuple | range):
        keys = jnp.stack([jax.random.PRNGKey(int(s)) for s in keys])
    S = keys.shape[0]
    if batched_learner:
        B = _batched(learner)
        if B is None or B < 1:
            raise ValueError("batched_learner=True needs learner leaves with one shared leading axis (see stack)")
        params, static = eqx.partition(learner, eqx.is_array)
        flat_params = jax.tree.map(lambda p: jnp.repeat(p, S, axis=0), params)
        flat_keys = jnp.tile(keys, (B, 1))
    else:
        B = None
        params, static = eqx.partition(learner, eqx.is_array)
        flat_params = jax.tree.map(lambda p: jnp.broadcast_to(p, (S, *p.shape)), params)
        flat_keys = keys
    n = flat_keys.shape[0]
    size = min(chunk_size, n)
    pieces = []
    for start in range(0, n, size):
        idx = np.arange(start, start + size) % n  # pad the last chunk by wrapping around
        chunk_params = jax.tree.map(lambda p, i=idx: p[i], flat_params)
        out = _sweep_chunk(chunk_params, static, problem, T, flat_keys[idx], record_decisions)
        keep = min(size, n - start)
        pieces.append(jax.tree.map(lambda a, k=keep: a[:k], out))
    traj = jax.tree.map(lambda *xs: jnp.concatenate(xs), *pieces)
    if B is not None:
        traj = jax.tree.map(lambda a: a.reshape(B, S, *a.shape[1:]), traj)
    if throw:
        _raise_if_bad(traj)
    return traj


@eqx.filter_jit
def _sweep_chunk(params, static, problem, T, keys, record_decisions):
    def one(p, key):
        return _run(eqx.combine(p, static), problem, T, key, record_decisions)

    return jax.vmap(one)(params, keys)


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

"""The game: one learner against one problem for T rounds in compiled blocks of rounds ([`run`][ocokit.run]),
vmapped over seeds and over a grid of learners ([`sweep`][ocokit.sweep], [`stack`][ocokit.stack]), and the report
of a run that stops being finite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine._comparators import comparator_losses
from ocokit.engine._programs import in_chunks, options, program
from ocokit.engine._rounds import block_size, blocks_per_call, initial_history, play_blocks, split_key, window
from ocokit.feedback import FeedbackKind, before_round_one, make_feedback
from ocokit.problems._base import AbstractProblem
from ocokit.trajectory import QUANTITIES, NonFiniteError, Trajectory


def check_compatible(learner: AbstractLearner, problem: AbstractProblem) -> None:
    """One line naming the culprit if ``learner`` or ``problem`` is not an ocokit one, or if the learner's declared
    needs ([`Needs.mismatch`][ocokit.algorithms.Needs.mismatch]: memory, decision set, decision shape) rule the
    problem out."""
    if not isinstance(learner, AbstractLearner):
        raise ValueError(f"learner must be an ocokit AbstractLearner, got {type(learner).__name__}")
    if not isinstance(problem, AbstractProblem):
        raise ValueError(f"problem must be an ocokit AbstractProblem, got {type(problem).__name__}")
    if not isinstance(getattr(type(learner), "feedback", None), FeedbackKind):
        raise ValueError(f"{type(learner).__name__} declares no feedback kind (a FeedbackKind class attribute)")
    why = type(learner).needs.mismatch(problem)
    if why is not None:
        raise ValueError(f"{type(learner).__name__} cannot play {type(problem).__name__}: {why}")


def first_bad(loss: np.ndarray, cons: np.ndarray, x_finite: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first_bad_round, bad_quantity)`` from a run's records (rounds on the last axis of ``loss``; any leading
    batch axes): the first 1-based round whose loss, constraints or decision is non-finite and which of the three
    (``-1, -1`` if none).

    Computed once on the host, vectorised over the whole trajectory, rather than carried round by round: the
    round body only records whether the decision was finite (loss and constraints are recorded anyway).
    """
    finite = (np.isfinite(loss), np.all(np.isfinite(cons), axis=-1), np.asarray(x_finite, bool))
    bad = ~(finite[0] & finite[1] & finite[2])
    first = np.argmax(bad, axis=-1)[..., None]
    found = np.take_along_axis(bad, first, axis=-1)[..., 0]
    what = np.argmin(np.stack([np.take_along_axis(f, first, axis=-1)[..., 0] for f in finite], axis=-1), axis=-1)
    return np.where(found, first[..., 0] + 1, -1).astype(np.int32), np.where(found, what, -1).astype(np.int32)


def all_finite(x: Array) -> Array:
    """Whether every entry of ``x`` is finite, as one fused reduction over ``x``.

    ``x - x`` is 0 where ``x`` is finite and NaN where it is infinite or NaN, so the sum is 0 or NaN, exactly
    (no overflow); ``jnp.all(jnp.isfinite(x))`` would write a boolean array and reduce it apart.
    """
    return jnp.isfinite(jnp.sum(x - x))


def _begin(learner: AbstractLearner | None, problem: AbstractProblem, T: int | Array, key: PRNGKeyArray):
    """Before round 1: the game's environment ``(env_key, episode)`` and the learner's carry ``(state, history)``.

    ``T`` is data (a traced integer) unless the problem's episode or the learner's ``init`` needs it static
    (`horizon_call`): it reaches them only through ``episode(env_key, T)`` and ``ProblemInfo.horizon``.
    """
    env_key, learner_key = split_key(key)
    episode = problem.episode(env_key, T)
    if learner is None:  # the comparators alone
        return (env_key, episode), None
    info = ProblemInfo.of(problem, T)
    kind = type(learner).feedback
    state = learner.init(info, learner_key)
    state = learner.prepare(state, before_round_one(kind, problem, episode, env_key))
    return (env_key, episode), (state, initial_history(problem, learner.decide(state), info.memory))


def _hindsight(problem: AbstractProblem, T: int, key: PRNGKeyArray) -> Array | None:
    """The best fixed point of the run of ``key`` (``None`` if the problem defines none): its own program, the
    one compiled per horizon (``best_fixed`` holds every round; T is static)."""
    env_key = split_key(key)[0]
    return problem.best_fixed(problem.episode(env_key, T), env_key, T)


def _hindsight_many(problem: AbstractProblem, T: int, keys: PRNGKeyArray) -> Array | None:
    """`_hindsight` vmapped over the seeds' keys."""
    return jax.vmap(lambda key: _hindsight(problem, T, key))(keys)


def _blocks(learner, problem, T, game, x_star, carry, first, count, B, record_decisions, optimum):
    """``count`` blocks of B rounds of one game from round ``first`` (`play_blocks`; T and ``first`` traced):
    the carry after them and their per-round records.

    The round body holds the game's arithmetic and little else: the non-finite bookkeeping is done once on
    the records after the run (`first_bad`).
    """
    env_key, episode = game
    h = problem.memory()
    kind = None if learner is None else type(learner).feedback

    def play(carry, round_):
        """Round ``t``: decide, suffer, observe, update (nothing without a learner: the comparators alone)."""
        if learner is None:
            return carry, {}
        state, history = carry
        data, t = round_
        x = learner.decide(state)
        played = window(history, x) if h > 1 else None
        loss = problem.loss(data, played if h > 1 else x)
        cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
        feedback = make_feedback(kind, problem, data, loss, cons, episode=episode, env_key=env_key, t=t)
        new_state = learner.update(state, x, feedback)
        out = {"loss": loss, "constraints": cons, "diagnostics": learner.diagnostics(new_state)}
        out["x_finite"] = all_finite(x)
        if record_decisions:
            out["decision"] = x
        return (new_state, played if h > 1 else history), out

    def environment(data):
        return comparator_losses(problem, data, x_star, h, optimum)

    return play_blocks(problem, episode, env_key, T, first, carry, play, environment, count, B)


def _grid(fn, learner: AbstractLearner, *args: Any, game_out: bool = False, in_axes: Any = None) -> Any:
    """``fn(learner, *args)`` vmapped over a stacked grid of learners (the leading axis of its array leaves).

    Only what depends on a learner is batched: ``vmap`` leaves the environment's work (drawing the round
    data, the comparators) unbatched, so it is done once per round and shared by the grid, and it keeps
    state that no learner's numbers touch (a round counter) unbatched within a compiled call, so a learner's
    ``lax.cond`` on it stays a real branch instead of running both sides. ``in_axes``: those of ``args``
    (default: none batched); ``game_out``: the first output, the game's environment, stays unbatched.
    """
    params, static = eqx.partition(learner, eqx.is_array)
    axes = (0, *(in_axes or (None,) * len(args)))
    return jax.vmap(lambda p, *a: fn(eqx.combine(p, static), *a), in_axes=axes, out_axes=(None, 0) if game_out else 0)(
        params, *args
    )


def _begin_many(learner, problem, T, keys, grid):
    """`_begin` vmapped over the seeds' keys (and the learner grid)."""

    def one(key):
        return _grid(_begin, learner, problem, T, key, game_out=True) if grid else _begin(learner, problem, T, key)

    return jax.vmap(one)(keys)


def _blocks_many(learner, problem, T, game, x_star, carry, first, count, B, record_decisions, optimum, grid, axes):
    """`_blocks` vmapped over the seeds (``game``, ``x_star``, the carry) and the learner grid (the carry), each
    carry leaf on the axes `_shared` gives it (``axes``: its seed and grid axes, ``0`` or ``None``, in order)."""
    tree = jax.tree.structure(carry)
    seed_axes = jax.tree.unflatten(tree, [s for s, _ in axes])
    grid_axes = jax.tree.unflatten(tree, [g for _, g in axes])
    rest = (count, B, record_decisions, optimum)

    def one(game, x_star, carry):
        if grid:
            return _grid(
                lambda lrn, *a: _blocks(lrn, *a, *rest),
                learner,
                *(problem, T, game, x_star, carry, first),
                in_axes=(None, None, None, None, grid_axes, None),
            )
        return _blocks(learner, problem, T, game, x_star, carry, first, *rest)

    return jax.vmap(one, in_axes=(0, 0, seed_axes))(game, x_star, carry)


def _shared(carry: Any, grid: bool) -> tuple[Any, tuple[tuple[int | None, int | None], ...]]:
    """A sweep's carry between two compiled calls: each leaf equal over the seeds (over the grid) kept once, and
    every leaf's (seed, grid) axes (``0`` or ``None``).

    What no run's numbers touch (a round counter) then stays unbatched in the next call, as it does within one,
    so a learner's ``lax.cond`` on it stays a real branch (``vmap`` runs both sides of a batched one). The
    numbers are the same either way: a value equal over the runs is the same value, held once.
    """
    leaves, tree = jax.tree.flatten(carry)
    kept, axes = [], []
    for leaf in leaves:
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):  # a key per run
            kept.append(leaf)
            axes.append((0, 0 if grid else None))
            continue
        a = np.asarray(leaf)
        seed = None if np.array_equal(a, a[:1].repeat(a.shape[0], axis=0)) else 0
        a = a[0] if seed is None else a
        along = 0 if seed is None else 1
        same = grid and np.array_equal(a, a.take([0], axis=along).repeat(a.shape[along], axis=along))
        kept.append(a.take(0, axis=along) if same else a)
        axes.append((seed, None if same or not grid else 0))
    return jax.tree.unflatten(tree, kept), tuple(axes)


def horizon_call(fn: Callable[[int | Array], Any], T: int) -> Any:
    """``fn(T)`` with T as data (a traced integer: one compiled program for every horizon), or with T static
    where a shape or a Python value depends on it (a problem's T-long episode, a learner's T-sized structure:
    tracing then fails with a ``TypeError``, and that program is compiled per horizon)."""
    try:
        return fn(jnp.asarray(T, jnp.int32))
    except TypeError:
        return fn(T)


def _drive(learner, problem, T, keys, opts, record_decisions, comparators, batch, data_bytes):
    """The trajectory of the runs of ``keys`` (one key with ``batch=None``; else a chunk, ``"seeds"`` or
    ``"grid"``), on the host: the start, the best fixed point, then the compiled blocks call after call
    (``data_bytes``: one round's data, from `runs_fit`, for the block size)."""
    many, grid = batch is not None, batch == "grid"
    start = program(_begin_many if many else _begin, opts)
    extra = (grid,) if many else ()
    game, carry = horizon_call(lambda T_: start(learner, problem, T_, keys, *extra), T)
    x_star = None
    if comparators and eqx.filter_eval_shape(_hindsight, problem, T, keys[0] if many else keys) is not None:
        x_star = program(_hindsight_many if many else _hindsight, opts)(problem, T, keys)
    B = block_size(data_bytes)
    runs = (keys.shape[0] if many else 1) * (_grid_size(learner) if grid else 1)
    count = blocks_per_call(B, runs * _round_bytes(problem, record_decisions))
    blocks = program(_blocks_many if many else _blocks, opts)
    pieces, T_ = [], jnp.asarray(T, jnp.int32)
    for first in range(1, T + 1, count * B):
        shared = _shared(carry, grid) if many else ()
        carry, records = blocks(
            *(learner, problem, T_, game, x_star, shared[0] if many else carry, jnp.asarray(first, jnp.int32)),
            *(count, B, record_decisions, comparators, *extra, *shared[1:]),
        )
        pieces.append(jax.tree.map(np.asarray, records))
    axis = (1 if many else 0) + (1 if grid else 0)  # the rounds' axis: after the seeds' and the grid's
    rounds = (slice(None),) * axis + (slice(T),)  # a view: the rounds past T dropped without a copy

    def joined(*xs):
        return (xs[0] if len(xs) == 1 else np.concatenate(xs, axis=axis))[rounds]

    return jax.tree.map(joined, *pieces)


def _round_bytes(problem: AbstractProblem, record_decisions: bool) -> int:
    """About the bytes of one run's records per round: the loss, the constraints, the comparators, a few
    diagnostics and the decision if recorded (at 8 bytes a number)."""
    entries = int(np.prod(problem.domain.shape)) if record_decisions else 0
    return 8 * (16 + 2 * problem.num_constraints + entries)


def _trajectory(out: dict, env: dict) -> Trajectory:
    """The [`Trajectory`][ocokit.Trajectory] of host records, on the device."""
    bad_round, bad_what = first_bad(out["loss"], out["constraints"], out["x_finite"])
    put = lambda a: None if a is None else jax.device_put(a)  # noqa: E731
    return Trajectory(
        loss=put(out["loss"]),
        constraints=put(out["constraints"]),
        diagnostics=jax.tree.map(put, out["diagnostics"]),
        comparator_loss=put(env.get("comparator_loss")),
        optimum_loss=put(env.get("optimum_loss")),
        decisions=put(out.get("decision")),
        first_bad_round=put(bad_round),
        bad_quantity=put(bad_what),
    )


def raise_if_bad(traj: Trajectory, label: str = "") -> None:
    """[`NonFiniteError`][ocokit.NonFiniteError] naming the first bad round (and run of a batch) of ``traj``, if any."""
    rounds = np.asarray(traj.first_bad_round).reshape(-1)
    whats = np.asarray(traj.bad_quantity).reshape(-1)
    bad = np.flatnonzero(rounds >= 0)
    if bad.size:
        i = bad[0]
        where = f" (run {i} of the batch)" if rounds.size > 1 else ""
        raise NonFiniteError(
            f"{label}non-finite {QUANTITIES[whats[i]]} at round {rounds[i]}{where}; "
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
    compiler_options: Mapping[str, Any] | None = None,
) -> Trajectory:
    """Play ``T`` rounds of ``learner`` against ``problem``: compiled blocks of rounds, the learner's state carried
    from one compiled call to the next.

    Args:
        learner: any [`AbstractLearner`][ocokit.algorithms.AbstractLearner].
        problem: any [`AbstractProblem`][ocokit.problems.AbstractProblem].
        T: number of rounds, ``>= 1``. T is data: a run at another horizon compiles nothing new, unless the
            problem's episode or the learner's structure depends on T (its compiled start, and its blocks when the
            episode's or the state's shapes do), or for the best fixed point (``comparators``), one small program
            per horizon.
        key: a PRNG key or an integer seed; the same key gives the same rounds to every learner.
        record_decisions: also return every decision ``x_t`` (memory ``T * dim``).
        comparators: compute the best fixed point and the per-round optimum (``comparator_loss``,
            ``optimum_loss``: static and dynamic regret). ``False`` skips that work, which for problems
            whose comparators are solved numerically can cost more than the learner itself.
        throw: raise [`NonFiniteError`][ocokit.NonFiniteError] naming the round if anything becomes non-finite; with
            ``False`` the trajectory is returned and ``first_bad_round`` tells.
        compiler_options: XLA options of the compiled program, e.g. ``{"xla_cpu_use_fusion_emitters": False}``
            (default: XLA's own; ocokit sets none).

    Returns:
        The [`Trajectory`][ocokit.Trajectory].

    Example:
        >>> import jax.numpy as jnp, ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> traj = ocokit.run(ocokit.algorithms.OGD(eta=0.01), problem, T=50, key=0)
        >>> traj.loss.shape, traj.constraints.shape
        ((50,), (50, 2))
    """
    T = _checks.horizon(T)
    check_compatible(learner, problem)
    key = _checks.key(key)
    data_bytes = _checks.runs_fit("run", problem, T, 1, 1, record_decisions, comparators)
    opts = options(compiler_options)
    traj = _trajectory(*_drive(learner, problem, T, key, opts, record_decisions, comparators, None, data_bytes))
    if throw:
        raise_if_bad(traj)
    return traj


def stack(learners: Sequence[AbstractLearner]) -> AbstractLearner:
    """One learner whose array leaves carry a leading batch axis: a hyperparameter grid for [`sweep`][ocokit.sweep].

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


def _grid_size(learner: AbstractLearner) -> int | None:
    """The shared leading axis of a stacked learner's arrays (``None``: no arrays or none batched; -1: mixed)."""
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
    compiler_options: Mapping[str, Any] | None = None,
) -> Trajectory:
    """Many runs of the same compiled code, vmapped: over seeds, and over a learner grid.

    Each seed's environment (round data, comparators) is computed once and shared by every learner of a
    grid, so a grid of B learners costs far less than B independent sweeps when drawing the rounds is
    expensive.

    Args:
        learner: a learner, or with ``batched_learner=True`` a stack of B learners ([`stack`][ocokit.stack]).
        problem: the problem (shared by all runs).
        T: number of rounds.
        keys: S seeds: an int (seeds ``0..S-1``), a list of ints, or a batch of PRNG keys.
        batched_learner: whether ``learner`` carries a leading grid axis of size B.
        chunk_size: about this many runs (seeds times grid points, at least one seed) are vmapped at once
            (bounded memory); the last chunk is padded to the same size so nothing recompiles.
        record_decisions, comparators, throw, compiler_options: as in [`run`][ocokit.run].

    Returns:
        A [`Trajectory`][ocokit.Trajectory] with leading axes ``(S, ...)``, or ``(B, S, ...)`` for a batched learner.
        Run ``(b, s)`` uses seed ``s``: every grid point faces the same rounds.
    """
    T = _checks.horizon(T)
    check_compatible(learner, problem)
    _checks.positive_int("chunk_size", chunk_size)
    S = _checks.count_keys(keys)
    per_chunk, B = chunk_size, 1
    if batched_learner:
        B = _grid_size(learner)
        if B is None or B < 1:
            raise ValueError("batched_learner=True needs learner leaves with one shared leading axis (see stack)")
        per_chunk = max(1, chunk_size // B)
    size = min(per_chunk, S)
    data_bytes = _checks.runs_fit("sweep", problem, T, S * B, size * B, record_decisions, comparators)
    opts, batch = options(compiler_options), "grid" if batched_learner else "seeds"

    def chunk_of(chunk):
        return _drive(learner, problem, T, chunk, opts, record_decisions, comparators, batch, data_bytes)

    out, env = in_chunks(chunk_of, _checks.keys(keys), size)
    if batched_learner:  # (S, B, ...) -> (B, S, ...)
        out, env = jax.tree.map(lambda a: np.swapaxes(a, 0, 1), (out, env))
    traj = _trajectory(out, env)
    if throw:
        raise_if_bad(traj)
    return traj

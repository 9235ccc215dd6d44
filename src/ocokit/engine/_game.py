"""The game: one learner against one problem for T rounds in one compiled ``lax.scan`` ([`run`][ocokit.run]), vmapped
over
seeds and over a grid of learners ([`sweep`][ocokit.sweep], [`stack`][ocokit.stack]), and the report of a run that stops
being finite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine._comparators import attached_comparators
from ocokit.engine._programs import in_chunks, options, program
from ocokit.engine._rounds import initial_history, scan_rounds, split_key, window
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


def first_bad(loss: Array, cons: Array, x_finite: Array) -> tuple[Array, Array]:
    """``(first_bad_round, bad_quantity)`` from a run's records: the first 1-based round whose loss,
    constraints or decision is non-finite and which of the three (``-1, -1`` if none).

    Computed once, vectorised over the whole trajectory after the scan, rather than carried round by round:
    the scan body only records whether the decision was finite (loss and constraints are recorded anyway).
    """
    finite = jnp.stack([jnp.isfinite(loss), jnp.all(jnp.isfinite(cons), axis=-1), x_finite], axis=-1)
    bad = ~jnp.all(finite, axis=-1)
    first = jnp.argmax(bad)
    found = bad[first]
    bad_round = jnp.where(found, first + 1, -1).astype(jnp.int32)
    bad_what = jnp.where(found, jnp.argmin(finite[first]), -1).astype(jnp.int32)
    return bad_round, bad_what


def all_finite(x: Array) -> Array:
    """Whether every entry of ``x`` is finite, as one fused reduction over ``x``.

    ``x - x`` is 0 where ``x`` is finite and NaN where it is infinite or NaN, so the sum is 0 or NaN, exactly
    (no overflow); ``jnp.all(jnp.isfinite(x))`` would write a boolean array and reduce it apart.
    """
    return jnp.isfinite(jnp.sum(x - x))


def _run(
    learner: AbstractLearner,
    problem: AbstractProblem,
    T: int,
    key: PRNGKeyArray,
    record_decisions: bool,
) -> Trajectory:
    """One game of T rounds of one learner, its rounds drawn by `scan_rounds`.

    The round body holds the game's arithmetic and little else: the non-finite bookkeeping is done once on
    the records after the scan (`first_bad`); the comparators, which depend on the seed alone, are their own
    program (`comparators`), compiled once per problem and horizon for every learner.
    """
    env_key, learner_key = split_key(key)
    info = ProblemInfo.of(problem, T)
    h = info.memory
    kind = type(learner).feedback
    episode = problem.episode(env_key, T)

    def play(carry, round_):
        """Round ``t``: decide, suffer, observe, update."""
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

    state = learner.init(info, learner_key)
    state = learner.prepare(state, before_round_one(kind, problem, episode, env_key))
    carry0 = (state, initial_history(problem, learner.decide(state), h))
    out, _ = scan_rounds(problem, episode, env_key, T, carry0, play, lambda data: {})
    bad_round, bad_what = first_bad(out["loss"], out["constraints"], out["x_finite"])
    return Trajectory(
        loss=out["loss"],
        constraints=out["constraints"],
        diagnostics=out["diagnostics"],
        comparator_loss=None,
        optimum_loss=None,
        decisions=out.get("decision"),
        first_bad_round=bad_round,
        bad_quantity=bad_what,
    )


def _run_grid(learner: AbstractLearner, *game: Any) -> Trajectory:
    """A whole stacked grid of learners playing the same game: `_run` vmapped over the grid axis
    (``game``: the rest of `_run`'s arguments, passed through).

    Only what depends on a learner is batched: ``vmap`` leaves the environment's work (drawing the round
    data) unbatched, so it is done once per round and shared by the grid, and it keeps
    state that no learner's numbers touch (a round counter) unbatched through the scan, so a learner's
    ``lax.cond`` on it stays a real branch instead of running both sides.
    """
    params, static = eqx.partition(learner, eqx.is_array)
    return jax.vmap(lambda p: _run(eqx.combine(p, static), *game))(params)


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
    """Play ``T`` rounds of ``learner`` against ``problem`` in one compiled ``lax.scan``.

    Args:
        learner: any [`AbstractLearner`][ocokit.algorithms.AbstractLearner].
        problem: any [`AbstractProblem`][ocokit.problems.AbstractProblem].
        T: number of rounds, ``>= 1`` (static: a new T compiles anew).
        key: a PRNG key or an integer seed; the same key gives the same rounds to every learner.
        record_decisions: also return every decision ``x_t`` (memory ``T * dim``).
        comparators: compute the best fixed point and the per-round optimum (``comparator_loss``,
            ``optimum_loss``: static and dynamic regret) with [`comparators`][ocokit.comparators]' program, compiled
            once per problem and T and shared by every learner. ``False`` skips that work, which for problems
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
    _checks.runs_fit("run", problem, T, 1, 1, record_decisions, comparators)
    opts = options(compiler_options)
    traj = program(_run, opts)(learner, problem, T, key, record_decisions)
    if throw:
        raise_if_bad(traj)
    return attached_comparators(traj, problem, T, key[None], opts, 1, one=True) if comparators else traj


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
    _checks.runs_fit("sweep", problem, T, S * B, size * B, record_decisions, comparators)
    opts = options(compiler_options)
    compiled = program(_sweep_chunk, opts)

    def chunk_of(chunk):
        return compiled(learner, problem, T, chunk, record_decisions, batched_learner)

    keys = _checks.keys(keys)
    traj = in_chunks(chunk_of, keys, size)
    if batched_learner:  # (S, B, ...) -> (B, S, ...)
        traj = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), traj)
    if throw:
        raise_if_bad(traj)
    return attached_comparators(traj, problem, T, keys, opts, min(chunk_size, S), one=False) if comparators else traj


def _sweep_chunk(learner, problem, T, keys, record_decisions, grid):
    run_one = _run_grid if grid else _run
    return jax.vmap(lambda key: run_one(learner, problem, T, key, record_decisions))(keys)

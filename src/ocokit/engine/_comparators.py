"""The comparators: each round's loss at the best fixed feasible point and at the round's own constrained optimum
(static and dynamic regret). They depend on the seed alone, never on the learner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.engine._programs import Options, in_chunks, options, program
from ocokit.engine._rounds import scan_rounds, split_key
from ocokit.problems._base import AbstractProblem
from ocokit.trajectory import Trajectory

FIELDS = ("comparator_loss", "optimum_loss")


def comparator_losses(problem: AbstractProblem, data, x_star, h: int, optimum: bool) -> dict[str, Array]:
    """Round data's losses at the best fixed point ``x_star`` (if any) and, with ``optimum``, at the round's own
    constrained optimum (if the problem defines it)."""
    env = {}
    if x_star is not None:
        env["comparator_loss"] = problem.loss(data, jnp.repeat(x_star[None], h, axis=0) if h > 1 else x_star)
    x_opt = problem.round_optimum(data) if optimum else None
    if x_opt is not None:
        env["optimum_loss"] = problem.loss(data, x_opt)
    return env


def _comparators_one(problem: AbstractProblem, T: int, key: PRNGKeyArray) -> dict[str, Array]:
    env_key, _ = split_key(key)
    episode = problem.episode(env_key, T)
    x_star = problem.best_fixed(episode, env_key, T)
    h = problem.memory()

    def environment(data):
        return comparator_losses(problem, data, x_star, h, True)

    return scan_rounds(problem, episode, env_key, T, None, lambda carry, _: (carry, None), environment)[1]


def _comparators_chunk(problem, T, keys):
    return jax.vmap(lambda key: _comparators_one(problem, T, key))(keys)


def comparators(
    problem: AbstractProblem,
    T: int,
    keys: PRNGKeyArray | Sequence[int] | int,
    *,
    chunk_size: int = 64,
    compiler_options: Mapping[str, Any] | None = None,
) -> dict[str, Array]:
    """The comparators' per-round losses of S seeds' games, without playing any learner.

    What [`run`][ocokit.run] and [`sweep`][ocokit.sweep] compute with ``comparators=True`` (they depend on the seed
    only): compute them once with this function, run every learner with ``comparators=False``, and attach them
    with [`with_comparators`][ocokit.with_comparators]. An experiment comparing several learners on costly comparators
    (a QP per round)
    saves all but one of those solves.

    Args:
        problem: the problem.
        T: number of rounds.
        keys: S seeds: an int (seeds ``0..S-1``), a list of ints, or a batch of PRNG keys.
        chunk_size: at most this many seeds are computed at once (bounded memory).
        compiler_options: XLA options of the compiled program (default: XLA's own).

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
    T = _checks.horizon(T)
    _checks.positive_int("chunk_size", chunk_size)
    S = _checks.count_keys(keys)
    _checks.runs_fit("comparators", problem, T, S, min(chunk_size, S), False, True)
    return _computed(problem, T, _checks.keys(keys), options(compiler_options), min(chunk_size, S))


def _computed(problem: AbstractProblem, T: int, keys: PRNGKeyArray, opts: Options, size: int) -> dict[str, Array]:
    """`comparators` of checked arguments (for a problem that defines neither comparator, a program that XLA
    reduces to nothing, returning ``{}``)."""
    compiled = program(_comparators_chunk, opts)
    return in_chunks(lambda chunk: compiled(problem, T, chunk), keys, size)


def attached_comparators(
    traj: Trajectory, problem: AbstractProblem, T: int, keys: PRNGKeyArray, opts: Options, size: int, *, one: bool
) -> Trajectory:
    """``traj`` with its comparators, computed by `comparators`' program (so every learner shares its compile):
    what ``sweep`` (the runs of the batch ``keys``) and ``run`` (``one``: a single run, ``keys`` its key alone in a
    batch of one) return with ``comparators=True``."""
    env = _computed(problem, T, keys, opts, size)
    return with_comparators(traj, {k: v[0] for k, v in env.items()} if one else env)


def with_comparators(traj: Trajectory, env: Mapping[str, Any]) -> Trajectory:
    """``traj`` with the comparator losses of [`comparators`][ocokit.comparators] (broadcast over any grid axis)."""
    unknown = set(env) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown comparator entries {sorted(unknown)}; expected some of {FIELDS}")
    values = {k: _broadcast(env[k], traj.loss.shape) if k in env else None for k in FIELDS}
    return eqx.tree_at(
        lambda tr: (tr.comparator_loss, tr.optimum_loss),
        traj,
        (values["comparator_loss"], values["optimum_loss"]),
        is_leaf=lambda x: x is None,
    )


def _broadcast(values: Any, shape: tuple[int, ...]) -> Array:
    """``values`` broadcast to ``shape``: host arrays on the host (no program compiled), device arrays by JAX."""
    if isinstance(values, np.ndarray):
        return jax.device_put(np.broadcast_to(values, shape))
    return jnp.broadcast_to(values, shape)

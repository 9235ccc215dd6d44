"""Drawing a game's rounds: a run's keys, the carried history of a game with memory, and the scan over rounds.

Randomness: a run's key is split into an environment key (round data, via ``fold_in(env_key, t)``) and a
learner key. Runs given the same key face identical rounds, whatever the learner (common random numbers).
A run draws its rounds in blocks (the per-round draw vmapped over B rounds; `play_blocks`), with the same
numbers: round t's data depends on the environment key and t only, never on T or B. B depends on the round data's
shapes alone, so T is data: every horizon plays the same compiled blocks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray

from ocokit.problems._base import AbstractProblem, rounds_at

BLOCK_ROUNDS = 256
"""At most this many rounds are drawn at once (the engine's block size B, not a user knob)."""
BLOCK_BYTES = 2**22
"""...and at most about this many bytes of round data (4 MiB): a problem with large rounds (matrix completion's
dense ``P_t``) draws fewer rounds per block, so a block stays in cache and memory stays bounded."""
CALL_ROUNDS = 2**14
"""A compiled call plays at most this many rounds (whole blocks), its carry passed on to the next call..."""
CALL_BYTES = 2**26
"""...and records at most about this many bytes (64 MiB; recorded decisions of a large set make calls shorter)."""


def split_key(key: PRNGKeyArray) -> tuple[PRNGKeyArray, PRNGKeyArray]:
    """The (environment, learner) keys of a run's key."""
    return jax.random.fold_in(key, 0), jax.random.fold_in(key, 1)


def window(history: Array, x: Array) -> Array:
    """The last ``h`` decisions after playing ``x``: ``history`` shifted by one, ``x`` last."""
    return jnp.concatenate([history[1:], x[None]], axis=0)


def initial_history(problem: AbstractProblem, x0: Array, h: int) -> Array | None:
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


def block_size(data_bytes: int) -> int:
    """The rounds B of a block, from the bytes of one round's data (``jax.eval_shape``; 0 if unknown): at most
    `BLOCK_ROUNDS` rounds and `BLOCK_BYTES` bytes of round data. Never from T, so every horizon plays the same
    compiled blocks."""
    return min(BLOCK_ROUNDS, max(1, BLOCK_BYTES // max(1, data_bytes)))


def blocks_per_call(B: int, round_bytes: int) -> int:
    """The blocks of B rounds one compiled call plays: at most `CALL_ROUNDS` rounds and about `CALL_BYTES` bytes
    of records (``round_bytes`` per round, every run of the call together); at least one block."""
    return max(1, min(CALL_ROUNDS, CALL_BYTES // max(1, round_bytes)) // B)


def play_blocks(
    problem: AbstractProblem, episode, env_key: PRNGKeyArray, T, first, carry, play, environment, count: int, B: int
):
    """Rounds ``first .. first + count B - 1`` in ``count`` blocks of B: ``play(carry, (data, t)) -> (carry, out)``
    in order, and ``environment(data)`` (the comparator losses: they depend on the round alone); returns the
    carry and the per-round records, ``(count B, ...)`` each.

    T and ``first`` are data (traced): one compiled program plays every horizon. Each block draws its rounds at
    once, vectorised (`rounds_at`: the per-round draw's numbers, whatever T and B), plays them in an inner scan
    and computes ``environment`` vmapped over the block (a batch of per-round optima). A block that starts past T
    is skipped (``lax.cond`` on T alone, a real branch under ``vmap``: the carry passes unchanged, the records
    are zeros); the rounds past T of the last block played are played, never reported (the carry after round T
    is never read).
    """

    def played(carry, ts):
        datas = rounds_at(problem, episode, env_key, ts)
        carry, out = jax.lax.scan(play, carry, (datas, ts))
        return carry, (out, jax.vmap(environment, axis_size=B)(datas))

    def block(carry, ts):
        def skipped(carry, ts):
            return carry, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(played, carry, ts)[1])

        return jax.lax.cond(ts[0] <= T, played, skipped, carry, ts)

    ts = first + jnp.arange(count * B, dtype=jnp.int32).reshape(count, B)
    carry, records = jax.lax.scan(block, carry, ts)
    return carry, jax.tree.map(lambda a: a.reshape(count * B, *a.shape[2:]), records)

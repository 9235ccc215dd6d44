"""Drawing a game's rounds: a run's keys, the carried history of a game with memory, and the scan over rounds.

Randomness: a run's key is split into an environment key (round data, via ``fold_in(env_key, t)``) and a
learner key. Runs given the same key face identical rounds, whatever the learner (common random numbers).
A long run draws its rounds in blocks (the per-round draw vmapped over B rounds; `scan_rounds`), with
the same numbers: round t's data depends on the environment key and t only, never on T or B.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Int, PRNGKeyArray

from ocokit._checks import _nbytes
from ocokit.problems._base import AbstractProblem, round_at, rounds_at

BLOCK_ROUNDS = 256
"""At most this many rounds are drawn at once (the engine's block size B, not a user knob)."""
BLOCK_BYTES = 2**22
"""...and at most about this many bytes of round data (4 MiB): a problem with large rounds (matrix completion's
dense ``P_t``) draws fewer rounds per block, so a block stays in cache and memory stays bounded."""
BLOCK_FROM_T = 4096
"""Runs shorter than this draw round by round (B = 1, one plain scan): XLA compiles a draw vectorised over a
block about twice as slowly on the CPU, which a short run, dominated by compiling, never earns back."""


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


def blocks(problem: AbstractProblem, episode, env_key: PRNGKeyArray, T: int) -> tuple[int, int]:
    """How a run of T rounds is cut into blocks: ``(number of blocks, rounds per block B)``.

    B is at most `BLOCK_ROUNDS` rounds and `BLOCK_BYTES` bytes of round data (from shapes only,
    ``jax.eval_shape``), then evened out over the blocks, so the rounds past T that pad the last block are fewer
    than the number of blocks (under 1/B of the run; a run of T <= B rounds is one exact block). A run shorter
    than `BLOCK_FROM_T` rounds is T blocks of one round. The numbers never depend on B: round t's data
    is drawn from ``(env_key, t)`` alone.
    """
    if T < BLOCK_FROM_T:
        return T, 1
    shapes = jax.eval_shape(problem.round_data, episode, env_key, jnp.asarray(1, jnp.int32))
    cap = min(BLOCK_ROUNDS, T, max(1, BLOCK_BYTES // max(1, _nbytes(shapes))))
    count = -(-T // cap)
    return count, -(-T // count)


def block_rounds(count: int, B: int) -> Int[Array, "blocks B"]:
    """The 1-based rounds of each block, one block per row (the last block may run past T)."""
    return jnp.arange(1, count * B + 1, dtype=jnp.int32).reshape(count, B)


def scan_rounds(problem: AbstractProblem, episode, env_key: PRNGKeyArray, T: int, carry, play, environment):
    """Rounds 1..T: ``play(carry, (data, t)) -> (carry, out)`` in order, and ``environment(data)`` (the
    comparator losses: they depend on the round alone); returns their per-round records, ``(T, ...)`` each.

    An outer scan over blocks of B rounds (`blocks`): each block draws its rounds at once, vectorised
    (`rounds_at`: the per-round draw's numbers, whatever T and B), plays them in an
    inner scan and computes ``environment`` vmapped over the block (a batch of per-round optima). Rounds past T
    in the last block are played, never reported. With B = 1, one plain scan that draws each round in its body.
    """
    count, B = blocks(problem, episode, env_key, T)
    if B == 1:

        def one(carry, t):
            data = round_at(problem, episode, env_key, t)
            carry, out = play(carry, (data, t))
            return carry, (out, environment(data))

        return jax.lax.scan(one, carry, jnp.arange(1, T + 1, dtype=jnp.int32))[1]

    def block(carry, ts):
        datas = rounds_at(problem, episode, env_key, ts)
        carry, out = jax.lax.scan(play, carry, (datas, ts))
        return carry, (out, jax.vmap(environment, axis_size=B)(datas))

    records = jax.lax.scan(block, carry, block_rounds(count, B))[1]
    return jax.tree.map(lambda a: a.reshape(a.shape[0] * a.shape[1], *a.shape[2:])[:T], records)

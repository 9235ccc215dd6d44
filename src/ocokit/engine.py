"""Running learners against problems: one compiled ``lax.scan`` per run, ``vmap`` for sweeps.

``run`` plays T rounds of the online game inside a single ``jax.lax.scan`` and returns a
:class:`Trajectory` of per-round quantities. ``sweep`` vmaps the same compiled code over seeds and over a
batch of learners (a hyperparameter grid made with :func:`stack`), in chunks of bounded memory.
``Session`` steps one round at a time against a live stream.

Randomness: a run's key is split into an environment key (round data, via ``fold_in(env_key, t)``) and a
learner key. Runs given the same key face identical rounds, whatever the learner (common random numbers).
A long run draws its rounds in blocks (the per-round draw vmapped over B rounds; :func:`_scan_rounds`),
with the same numbers: round t's data depends on the environment key and t only, never on T or B. A sweep
whose rounds are small enough draws all of them before playing, in a program of its own that every learner
on the same game shares (:data:`UPFRONT_BYTES`), again with the same numbers.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit import _checks, _executables
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.feedback import PREDICTIONS, FeedbackKind, make_feedback
from ocokit.problems._base import AbstractProblem, all_rounds, round_at, rounds_at

_QUANTITIES = ("loss", "constraints", "decision")
_MAX_T = 2**31 - 1  # rounds are counted in int32
_SEEDS = (-(2**63), 2**63 - 1)  # what jax.random.PRNGKey accepts
_KEYS_RULE = "a number of seeds (an integer >= 1), a non-empty list of integer seeds or a batch of PRNG keys"


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


def _check_compatible(learner: AbstractLearner, problem: AbstractProblem, T: Any, name: str = "T") -> int:
    """Validate the entry arguments; returns ``T`` as a Python ``int`` (any integer type is accepted)."""
    T = _checks.integer(name, T, 1, _MAX_T)
    if not isinstance(learner, AbstractLearner):
        raise ValueError(f"learner must be an ocokit AbstractLearner, got {type(learner).__name__}")
    if not isinstance(problem, AbstractProblem):
        raise ValueError(f"problem must be an ocokit AbstractProblem, got {type(problem).__name__}")
    if not isinstance(getattr(type(learner), "feedback", None), FeedbackKind):
        raise ValueError(f"{type(learner).__name__} declares no feedback kind (a FeedbackKind class attribute)")
    return T


def _nbytes(tree: Any) -> int:
    return sum(int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree))


def _check_memory(
    what: str,
    problem: AbstractProblem,
    T: int,
    runs: int,
    chunk: int,
    decisions: bool,
    env: bool,
    upfront: bool = False,
):
    """Refuse up front a call that would not fit in memory (instead of allocating until XLA fails).

    The estimate, from shapes only (``jax.eval_shape``; nothing is compiled): the result holds ``runs`` x T
    rounds of records (the loss, the N constraint values, the two comparator losses if computed, the
    decision if recorded; not the learner's diagnostics); each of the ``chunk`` runs computed at once also
    holds its episode and, for the comparators, five times its round data per round (``best_fixed`` stacks
    every round's data; drawing it vmapped over the rounds peaks at about 4.4 times the data's size for
    :class:`~ocokit.problems.TimeVaryingRegression`), and with ``upfront`` every round's data once more (the
    rounds drawn before playing: :func:`_draws_upfront`).
    """
    itemsize = 8 if jax.config.jax_enable_x64 else 4
    values = 1 + problem.num_constraints + (2 if env else 0) + (int(np.prod(problem.domain.shape)) if decisions else 0)
    episode, data, held = _footprint(problem, T, env)
    records = float(T) * values * itemsize
    per_run = records + (5.0 if held else 0.0) * T * data + (float(T) * data if upfront else 0.0) + episode
    nbytes = runs * records + chunk * per_run
    reduce = "use a smaller T" + (", fewer seeds per call or a smaller chunk_size" if runs > 1 else "")
    reduce += " (or record_decisions=False)" if decisions else ""
    _checks.fits_in_memory(f"{what} of {runs} run(s) x T = {T} rounds", nbytes, reduce)


_FOOTPRINTS: dict[Any, tuple[int, int, bool | None]] = {}


def _footprint(problem: AbstractProblem, T: int, env: bool) -> tuple[int, int, bool]:
    """Bytes of ``problem``'s episode and of one round's data, from shapes only, and (with ``env``) whether
    its comparators hold every round's data (``best_fixed`` or ``round_optimum`` defined; ``False`` without
    ``env``). A problem whose episode or rounds cannot be traced abstractly (host code) counts 0 bytes.

    ``jax.eval_shape`` traces the episode and the round (milliseconds; with ``env``, the comparators too: tens of
    milliseconds for an interior-point QP), so the result is remembered per problem structure (its pytree structure
    with the static fields, and its leaves' shapes, not the numbers) and T, the comparators' part once asked for: an
    experiment that starts its comparators first traces nothing for its learners' sweeps.
    """
    leaves, structure = jax.tree.flatten(problem)  # the structure holds the static fields; dicts of arrays hash
    shapes = tuple((np.shape(a), str(getattr(a, "dtype", type(a).__name__))) for a in leaves)
    cache_key = (structure, shapes, T, jax.config.jax_enable_x64)
    try:
        found = _FOOTPRINTS.get(cache_key)
    except TypeError:  # a structure that cannot be hashed (a dict-valued static field): not remembered
        cache_key, found = None, None
    if found is None or (env and found[2] is None):
        known = found  # a fresh process reads what another one traced (the CLI's program folder)
        found = tuple(
            _executables.remembered(
                _trace_footprint, (problem, T, env), lambda: _trace_footprint(problem, T, env, known)
            )
        )
        if cache_key is not None:
            if len(_FOOTPRINTS) >= 256:
                _FOOTPRINTS.clear()
            _FOOTPRINTS[cache_key] = found
    episode, data, held = found
    return episode, data, bool(env and held)


def _trace_footprint(
    problem: AbstractProblem, T: int, env: bool, known: tuple[int, int, bool | None] | None
) -> tuple[int, int, bool | None]:
    """:func:`_footprint`'s values, traced (``known``: the bytes already traced, without the comparators);
    whether the comparators hold every round's data is ``None`` when not asked for (``env`` false)."""
    key, t = _as_key(0), jax.ShapeDtypeStruct((), jnp.int32)
    try:
        episode = jax.eval_shape(lambda k: problem.episode(k, T), key)
        if known is None:
            known = (
                _nbytes(episode),
                _nbytes(jax.eval_shape(lambda ep, t: problem.round_data(ep, key, t), episode, t)),
            )
        if not env:
            return known[0], known[1], None
        # only problems that define a comparator hold rounds' data for it
        optimum = jax.eval_shape(lambda ep, t: problem.round_optimum(problem.round_data(ep, key, t)), episode, t)
        held = optimum is not None or jax.eval_shape(lambda ep: problem.best_fixed(ep, key, T), episode) is not None
        return known[0], known[1], held
    except Exception:  # a problem whose episode cannot be traced abstractly (host code): estimated without it
        return 0, 0, False


def _as_key(key: Any) -> PRNGKeyArray:
    """One run's key: an integer seed (any integer type) or a PRNG key."""
    if isinstance(key, jax.Array | np.ndarray) and _is_key_batch(key, single=True):
        return key
    try:
        seed = _checks.integer("key", key, *_SEEDS)
    except ValueError:
        rule = "an integer seed in [-2**63, 2**63 - 1] or a PRNG key (jax.random.PRNGKey(seed))"
        raise ValueError(f"key must be {rule}, got {key!r}") from None
    return _seed_keys([seed])[0]


def _is_key_batch(keys: Any, single: bool = False) -> bool:
    """Whether ``keys`` is a PRNG key (``single``) or a batch of them: typed keys, or raw uint32 pairs."""
    typed = jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
    ndim = keys.ndim - (0 if typed else 1)
    shaped = typed or (keys.dtype == np.uint32 and keys.ndim >= 1 and keys.shape[-1] == 2)
    return shaped and ndim == (0 if single else 1)


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


_BLOCK_ROUNDS = 256
"""At most this many rounds are drawn at once (the engine's block size B, not a user knob)."""
_BLOCK_BYTES = 2**22
"""...and at most about this many bytes of round data (4 MiB): a problem with large rounds (matrix
completion's dense ``P_t``) draws fewer rounds per block, so a block stays in cache and memory stays bounded."""
_BLOCK_FROM_T = 4096
"""Runs shorter than this draw round by round (B = 1, one plain scan): XLA compiles a draw vectorised over a
block about twice as slowly on the CPU (about 1-2 s more for a Fig. 1 run), which a short run, dominated by
compiling, never earns back (at d = 10 the block draw saves about 5 us per round and run)."""


def _blocks(problem: AbstractProblem, episode, env_key: PRNGKeyArray, T: int) -> tuple[int, int]:
    """How a run of T rounds is cut into blocks: ``(number of blocks, rounds per block B)``.

    B is at most :data:`_BLOCK_ROUNDS` rounds and :data:`_BLOCK_BYTES` bytes of round data (from shapes
    only, ``jax.eval_shape``), then evened out over the blocks, so the rounds past T that pad the last
    block are fewer than the number of blocks (under 1/B of the run; a run of T <= B rounds is one exact
    block). A run shorter than :data:`_BLOCK_FROM_T` rounds is T blocks of one round. The numbers never
    depend on B: round t's data is drawn from ``(env_key, t)`` alone.
    """
    if T < _BLOCK_FROM_T:
        return T, 1
    shapes = jax.eval_shape(problem.round_data, episode, env_key, jnp.asarray(1, jnp.int32))
    cap = min(_BLOCK_ROUNDS, T, max(1, _BLOCK_BYTES // max(1, _nbytes(shapes))))
    blocks = -(-T // cap)
    return blocks, -(-T // blocks)


def _block_rounds(blocks: int, B: int) -> Int[Array, "blocks B"]:
    """The 1-based rounds of each block, one block per row (the last block may run past T)."""
    return jnp.arange(1, blocks * B + 1, dtype=jnp.int32).reshape(blocks, B)


UPFRONT_BYTES = 2**26
"""A sweep's chunk of runs whose round data take at most this many bytes in all (64 MiB) draws every round
before playing (:func:`_draws_upfront`)."""


def _draws_upfront(problem: AbstractProblem, T: int, runs: int) -> bool:
    """Whether a chunk of ``runs`` runs of T rounds draws all its rounds before playing (:func:`_rounds_impl`):
    when their data, from shapes only (:func:`_footprint`), take at most :data:`UPFRONT_BYTES`.

    The rounds are then drawn by a program of their own, vectorised over the seeds, and the learner's program
    reads them: the draw (for a small game, about half of what XLA compiles for a learner's run) is compiled
    once for every learner played on the same game, shape and chunk, instead of once per learner. The numbers
    of the rounds are the very ones drawn round by round (a test checks them bit for bit); a learner's
    arithmetic, compiled apart from the draw, may differ in the last bits.
    """
    data = _footprint(problem, T, False)[1]
    return 0 < float(runs) * T * data <= UPFRONT_BYTES


def _rounds_impl(problem: AbstractProblem, T: int, keys: PRNGKeyArray):
    """Rounds 1..T of each key's game, stacked on axes ``(S, T, ...)``: the per-round draw mapped over the
    rounds (a scan) for a run shorter than :data:`_BLOCK_FROM_T` rounds, as its scan would draw them, else
    vectorised over them (:func:`~ocokit.problems._base.all_rounds`), as its blocks would.

    The scan compiles in about half the time (0.6 against 1.2 s for Fig. 1's rounds, T = 1000, 10 seeds) and
    runs in about twice (14 against 7 ms): a short run is dominated by compiling.
    """

    def one(key):
        env_key, _ = split_key(key)
        episode = problem.episode(env_key, T)
        if T < _BLOCK_FROM_T:
            ts = jnp.arange(1, T + 1, dtype=jnp.int32)
            return jax.lax.map(lambda t: round_at(problem, episode, env_key, t), ts)
        return all_rounds(problem, episode, env_key, T)

    return jax.vmap(one)(keys)


def _scan_rounds(
    problem: AbstractProblem, episode, env_key: PRNGKeyArray, T: int, carry, play, environment, rounds=None
):
    """Rounds 1..T: ``play(carry, (data, t)) -> (carry, out)`` in order, and ``environment(data)`` (the
    comparator losses: they depend on the round alone); returns their per-round records, ``(T, ...)`` each.

    An outer scan over blocks of B rounds (:func:`_blocks`): each block draws its rounds at once, vectorised
    (:func:`~ocokit.problems._base.rounds_at`: the per-round draw's numbers, whatever T and B), plays them in an
    inner scan and computes ``environment`` vmapped over the block (a batch of per-round optima). Rounds past T
    in the last block are played, never reported. With B = 1, one plain scan that draws each round in its body.
    Given ``rounds`` (every round's data, drawn before: :func:`_rounds_impl`), one plain scan over them.
    """
    if rounds is not None:

        def given(carry, round_):
            carry, out = play(carry, round_)
            return carry, (out, environment(round_[0]))

        return jax.lax.scan(given, carry, (rounds, jnp.arange(1, T + 1, dtype=jnp.int32)))[1]
    blocks, B = _blocks(problem, episode, env_key, T)
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

    return _unblock(jax.lax.scan(block, carry, _block_rounds(blocks, B))[1], T)


def _unblock(tree: Any, T: int) -> Any:
    """Per-round records of shape ``(blocks, B, ...)`` as ``(T, ...)``: blocks joined, padding rounds dropped."""
    return jax.tree.map(lambda a: a.reshape(a.shape[0] * a.shape[1], *a.shape[2:])[:T], tree)


def _first_bad(loss: Array, cons: Array, x_finite: Array) -> tuple[Array, Array]:
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


def _all_finite(x: Array) -> Array:
    """Whether every entry of ``x`` is finite, as one fused reduction over ``x``.

    ``x - x`` is 0 where ``x`` is finite and NaN where it is infinite or NaN, so the sum is 0 or NaN, exactly
    (no overflow). ``jnp.all(jnp.isfinite(x))`` gives the same answer but writes a boolean array and reduces
    it as a window (at matrix completion's 943 x 1682 decisions, about 15% of a Frank-Wolfe round on the
    CPU); ``x * 0`` would materialise a matrix of zeros for XLA's dot.
    """
    return jnp.isfinite(jnp.sum(x - x))


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

    def environment(data):
        return _comparator_losses(problem, data, x_star, h, True)

    return _scan_rounds(problem, episode, env_key, T, None, lambda carry, _: (carry, None), environment)[1]


_QUICK_COMPILE = {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False}
"""XLA options of the comparators' program on the CPU. The comparators solve a small QP per round (interior
point, hundreds of small kernels): on paper 003's Fig. 1 (T = 1000, 20 seeds) XLA's default compiles the program in
9.2 s and runs it in 1.3 s, these options in 3.1 s and 1.4 s, the optimum losses equal to 2e-13 relative (the
solver's tolerance is 1e-13). The learners' programs keep XLA's default levels, which run their rounds faster."""

_SMALL_GAME = {"xla_cpu_experimental_ynn_fusion_type": ""}
"""XLA options of a small game's learner programs (``run``, ``sweep``, ``Session``; :data:`SMALL_DECISION`) on the
CPU: no YNNPACK fusions.

XLA's CPU backend hands each ``dot`` to the YNNPACK library by default, a call whose fixed cost exceeds a small
product's arithmetic (COLDQ's round multiplies 2 x 10 by 10 x 2); without it XLA emits the product inline.
Measured in one process on paper 003's Fig. 1 (T = 20000): COLDQ's round 4.9 -> 3.6 us, OGD's unchanged; the
golden summaries of every small game agree to 1e-12. A matrix-completion round (943 x 1682 matrix-vector
products) is faster with YNNPACK (17.5 against 20.9 elementwise passes per OFW-TVC round), so large games
keep it (:data:`_LARGE_GAME`), as does the comparators' program (:data:`_QUICK_COMPILE`): its interior-point
steps, batched over seeds, run slower without YNNPACK (1.31 against 1.12 s with its own options, Fig. 1,
T = 1000, 20 seeds, best of three in one process)."""

SMALL_DECISION = 65536
"""A game whose decision has at most this many entries compiles with :data:`_SMALL_GAME`, a larger one with
:data:`_LARGE_GAME`."""

_LARGE_GAME = {"xla_cpu_copy_insertion_use_region_analysis": True}
"""XLA options of a large game's learner programs (more than :data:`SMALL_DECISION` entries) on the CPU: copy
insertion by region analysis, so that a round writes the new decision over the old one.

The round body records what it reads of the played decision ``x_t`` (the loss, the finiteness check) in
computations the learner's update does not depend on. XLA's default copy insertion then cannot prove that those
reads come before the update writes ``x_{t+1}`` into the loop's buffer, and copies ``x_t`` every round (a read and
a write of the whole matrix); its region analysis can, and keeps no copy. Measured in one process (OFW-TVC on
MovieLens-100k, 943 x 1682, ``benchmarks/projection_free.py``): the round 1.00-1.18x faster in four runs (18.1
against 15.4 ms in one; BFW-TVC's on FilmTrust 1.27x with ``--filmtrust``), the same numbers bit for bit, the same
compile time."""

_SHORT_SWEEP = {"xla_cpu_use_fusion_emitters": False}
"""XLA options added to a short sweep's programs on a small game when :func:`compile_short_sweeps` asks for it (the
CLI does): XLA's older loop emitter instead of its MLIR fusion emitters, which compile each fused kernel through
a pipeline of their own.

A tier, as in a JIT: a program that runs briefly is compiled cheaply. Measured by ``benchmarks/startup.py`` in
fresh processes on paper 003's Fig. 1 (its five learners swept over 20 seeds of T = 1000 in chunks of 10, the
rounds drawn up front; two script runs): XLA compiled for 4.74-5.11 s with its defaults and 2.50-2.88 s with this
option, and the same sweeps called again took 481-498 against 581-645 ms (within the noise of a 2-core machine).
The losses and constraint values agree to 6.3e-16 of their scale. An iterative oracle with a tolerance turns
such rounding differences into differences of its own tolerance's order: BFW-TVC's and SCBFW-TVC's trajectories on
the learner suite's small nuclear-norm game move by up to 2.5e-8 relative. Hence off in the library, whose
``sweep`` equals ``run`` run by run to 1e-12 (and ``run`` and :class:`Session` never use it)."""

SHORT_SWEEP_ROUNDS = 2**17
"""The CLI's bound (:func:`compile_short_sweeps`): compiling without fusion emitters saves about 0.4 s a program on
Fig. 1 (2.2-2.4 s for its five learners and their draw), which a sweep of at most 2^17 rounds in all would lose only
if its rounds ran 3 us slower each."""

_short_sweeps = 0


def compile_short_sweeps(rounds: int) -> None:
    """From now on, compile a sweep on a small game (:data:`SMALL_DECISION`) whose runs play at most ``rounds``
    rounds in all (T times the runs: seeds times grid points) with :data:`_SHORT_SWEEP` added (0: never, the
    library's default). ``ocokit run`` sets :data:`SHORT_SWEEP_ROUNDS`, where a first invocation is mostly
    compiling; its numbers then agree with the library's to rounding (see :data:`_SHORT_SWEEP`)."""
    global _short_sweeps
    _short_sweeps = _checks.integer("rounds", rounds, 0, None)


def short_sweeps() -> int:
    """The bound set by :func:`compile_short_sweeps` (0: off)."""
    return _short_sweeps


@functools.cache
def _cpu_knows(options: tuple[tuple[str, Any], ...]) -> bool:
    """Whether the default backend is the CPU and its XLA accepts ``options`` (an unknown option raises), as a
    probe compile finds (once per machine and versions when the CLI keeps programs: :func:`_executables.remembered`)."""
    if jax.default_backend() != "cpu":
        return False
    return _executables.remembered(_probe_options, (options,), lambda: _probe_options(options))


def _probe_options(options: tuple[tuple[str, Any], ...]) -> bool:
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(options)).lower(1.0).compile()
    except jax.errors.JaxRuntimeError:  # an XLA without one of these options: its defaults
        return False
    return True


def _usable(options: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``options`` as name-value pairs if the default backend is the CPU and its XLA knows them, else none."""
    pairs = tuple(options.items())
    return pairs if pairs and _cpu_knows(pairs) else ()


@functools.cache
def _compiled(fn, options: tuple[tuple[str, Any], ...] = ()) -> _executables.Program:
    """``eqx.filter_jit(fn)`` with the XLA ``options`` (name-value pairs, from :func:`_usable`), its executables
    kept on disk when the CLI asks for it (:mod:`ocokit._executables`)."""
    return _executables.Program(fn, options)


def _small_game(problem: AbstractProblem) -> bool:
    """Whether ``problem``'s decision has at most :data:`SMALL_DECISION` entries."""
    return math.prod(problem.domain.shape) <= SMALL_DECISION


def _game_options(problem: AbstractProblem) -> tuple[tuple[str, Any], ...]:
    """The XLA options of the learner programs of ``problem``'s game: :data:`_SMALL_GAME` for a small decision,
    :data:`_LARGE_GAME` for a large one (each where usable)."""
    return _usable(_SMALL_GAME if _small_game(problem) else _LARGE_GAME)


def _sweep_options(problem: AbstractProblem, rounds: int) -> tuple[tuple[str, Any], ...]:
    """The XLA options of a sweep's programs (its draw and its play) over ``rounds`` rounds in all: the game's
    (:func:`_game_options`), with :data:`_SHORT_SWEEP` added for a short sweep on a small game
    (:func:`compile_short_sweeps`; where usable)."""
    options = _game_options(problem)
    if options and _small_game(problem) and rounds <= _short_sweeps:
        return _usable(dict(options) | _SHORT_SWEEP) or options
    return options


def _comparators_impl(problem, T, keys):
    return jax.vmap(lambda key: _comparators_one(problem, T, key))(keys)


def _comparators_chunk(problem, T, keys):
    return _compiled(_comparators_impl, _usable(_QUICK_COMPILE))(problem, T, keys)


def _key_chunks(keys: PRNGKeyArray, size: int) -> list[tuple[PRNGKeyArray, int]]:
    """The keys in chunks of ``size`` consecutive keys, the last padded by wrapping around (every chunk has one
    shape: one compiled program), each with how many of its keys are real."""
    S = keys.shape[0]
    return [
        (keys if size == S else keys[np.arange(start, start + size) % S], min(size, S - start))  # one chunk: no gather
        for start in range(0, S, size)
    ]


def _in_chunks(fn, keys: PRNGKeyArray, size: int):
    """``fn`` on the keys in chunks of ``size`` (:func:`_key_chunks`), its outputs concatenated over the keys and
    trimmed to their number."""
    pieces = [jax.tree.map(lambda a, k=keep: a[:k], fn(chunk)) for chunk, keep in _key_chunks(keys, size)]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *pieces)


def comparators(
    problem: AbstractProblem, T: int, keys: PRNGKeyArray | Sequence[int] | int, *, chunk_size: int = 64
) -> dict[str, Array]:
    """The comparators' per-round losses of S seeds' games, without playing any learner.

    What :func:`run` and :func:`sweep` compute with ``comparators=True`` (they depend on the seed only):
    compute them once with this function, run every learner with ``comparators=False``, and attach them
    with :func:`with_comparators`. An experiment comparing several learners on costly comparators (a QP
    per round) saves all but one of those solves.

    :func:`comparators_in_background` computes the same numbers in threads while the caller goes on.

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
    T = _checks.integer("T", T, 1, _MAX_T)
    _checks.positive_int("chunk_size", chunk_size)
    S = _count_keys(keys)
    _check_memory("comparators", problem, T, S, min(chunk_size, S), False, True)
    keys = _as_keys(keys)
    return _in_chunks(lambda chunk: _comparators_chunk(problem, T, chunk), keys, min(chunk_size, S))


def comparators_in_background(
    problem: AbstractProblem,
    T: int,
    keys: PRNGKeyArray | Sequence[int] | int,
    *,
    chunk_size: int = 64,
    workers: int = 2,
) -> list[concurrent.futures.Future]:
    """:func:`comparators` computed in ``workers`` threads while the caller goes on (playing learners, say).

    The keys are cut into chunks of ``chunk_size`` consecutive keys (the last padded by wrapping around, as
    :func:`comparators` does); each chunk is one future, resolving to ``{name: (n, T)}`` NumPy arrays for its
    ``n`` keys, with the numbers :func:`comparators` gives. The chunks' program is compiled (or loaded) in the
    calling thread before this returns, so the threads only run it: XLA never compiles in two threads at once.
    Their arithmetic runs outside Python's lock, on the cores the caller leaves idle (a per-round QP solved by
    interior point runs on one core). An exception raised in a thread is raised by its future's ``result()``. The
    futures come as a :class:`BackgroundComparators`, a list whose
    :meth:`~ocokit.engine.BackgroundComparators.compute_here` lends the calling thread to the chunks no thread has
    taken (when the caller has nothing else to do).

    Example:
        >>> import ocokit
        >>> from ocokit.engine import comparators_in_background
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> futures = comparators_in_background(problem, 20, 5, chunk_size=2)
        >>> [future.result()["optimum_loss"].shape for future in futures]
        [(2, 20), (2, 20), (1, 20)]
    """
    T = _checks.integer("T", T, 1, _MAX_T)
    _checks.positive_int("chunk_size", chunk_size)
    _checks.positive_int("workers", workers)
    S = _count_keys(keys)
    size = min(chunk_size, S)
    _check_memory("comparators", problem, T, S, min(size * workers, S), False, True)
    chunks = _key_chunks(_as_keys(keys), size)  # gathered here (a gather compiles): the threads only run the program
    program = _compiled(_comparators_impl, _usable(_QUICK_COMPILE))
    program.prepare(problem, T, chunks[0][0])

    def run(chunk: Array, keep: int) -> dict[str, np.ndarray]:
        return {name: np.asarray(values)[:keep] for name, values in program(problem, T, chunk).items()}

    futures = BackgroundComparators(run, chunks)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocokit-comparators")
    for _ in range(min(workers, len(chunks))):
        pool.submit(futures.compute_here)
    pool.shutdown(wait=False)  # the threads end when no chunk is left
    return futures


class BackgroundComparators(list[concurrent.futures.Future]):
    """The futures of :func:`comparators_in_background`, one per chunk of keys, in order.

    Its threads take the chunks in order, one at a time; :meth:`compute_one` and :meth:`compute_here` lend them the
    calling thread. A future cancelled before a thread takes its chunk is skipped (``Future.cancel``)."""

    def __init__(self, run: Callable[[Array, int], dict[str, np.ndarray]], chunks: Sequence[tuple[Array, int]]):
        super().__init__(concurrent.futures.Future() for _ in chunks)
        self._run = run  # (keys, how many are real) -> the chunk's values
        self._queue = collections.deque(zip(chunks, self, strict=True))  # (chunk, its future): not taken yet

    def compute_one(self) -> bool:
        """Compute in the calling thread the first chunk no thread has taken yet, beside the threads; ``False`` when
        every chunk is taken. Its values (or its error) go to its future; an interrupt ends the future and is raised.
        """
        while True:
            try:
                (chunk, keep), future = self._queue.popleft()  # atomic: each chunk is taken once
            except IndexError:
                return False
            if future.set_running_or_notify_cancel():  # False: cancelled, skipped
                try:
                    future.set_result(self._run(chunk, keep))
                except BaseException as error:
                    future.set_exception(error)
                    if not isinstance(error, Exception):
                        raise
                return True

    def compute_here(self) -> None:
        """Compute in the calling thread, one after another, the chunks no thread has taken yet, until every chunk
        is taken (what the threads do; a caller with nothing else to do lends its thread)."""
        while self.compute_one():
            pass


def with_comparators(traj: Trajectory, env: dict[str, Array]) -> Trajectory:
    """``traj`` with the comparator losses of :func:`comparators` (broadcast over any grid axis)."""
    fields = ("comparator_loss", "optimum_loss")
    unknown = set(env) - set(fields)
    if unknown:
        raise ValueError(f"unknown comparator entries {sorted(unknown)}; expected some of {fields}")
    values = {k: _broadcast(env[k], traj.loss.shape) if k in env else None for k in fields}
    return eqx.tree_at(
        lambda tr: (tr.comparator_loss, tr.optimum_loss),
        traj,
        (values["comparator_loss"], values["optimum_loss"]),
        is_leaf=lambda x: x is None,
    )


def _broadcast(values: Any, shape: tuple[int, ...]) -> Array:
    """``jnp.broadcast_to(values, shape)``; host values are broadcast on the host and moved as they are, which compiles
    nothing (``jnp`` on a NumPy array compiles a conversion the first time in a process)."""
    if isinstance(values, np.ndarray):
        return jax.device_put(np.broadcast_to(values, shape))
    return jnp.broadcast_to(values, shape)


def _run(
    learner: AbstractLearner,
    problem: AbstractProblem,
    T: int,
    key: PRNGKeyArray,
    record_decisions: bool,
    comparators: bool = True,
    rounds=None,
):
    """One game of T rounds of one learner, played by :func:`_scan_rounds` (rounds drawn in blocks, or
    ``rounds``, drawn before: :func:`_rounds_impl` for this key).

    The round body holds the game's arithmetic and little else: the non-finite bookkeeping is done once on
    the records after the scan (:func:`_first_bad`).
    """
    env_key, learner_key = split_key(key)
    info = ProblemInfo.of(problem, T)
    h = info.memory
    kind = type(learner).feedback
    episode = problem.episode(env_key, T)
    x_star = problem.best_fixed(episode, env_key, T) if comparators else None

    def play(carry, round_):
        """Round ``t``: decide, suffer, observe, update."""
        state, history = carry
        data, t = round_
        x = learner.decide(state)
        window = _window(history, x) if h > 1 else None
        loss = problem.loss(data, window if h > 1 else x)
        cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
        feedback = make_feedback(kind, problem, data, loss, cons, episode=episode, env_key=env_key, t=t)
        new_state = learner.update(state, x, feedback)
        out = {"loss": loss, "constraints": cons, "diagnostics": learner.diagnostics(new_state)}
        out["x_finite"] = _all_finite(x)
        if record_decisions:
            out["decision"] = x
        return (new_state, window if h > 1 else history), out

    def environment(data):
        return _comparator_losses(problem, data, x_star, h, comparators)

    state = _before_round_one(learner, problem, learner.init(info, learner_key), episode, env_key)
    carry0 = (state, _initial_history(problem, learner.decide(state), h))
    out, env = _scan_rounds(problem, episode, env_key, T, carry0, play, environment, rounds)
    bad_round, bad_what = _first_bad(out["loss"], out["constraints"], out["x_finite"])
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


def _run_grid(learner: AbstractLearner, *game: Any) -> Trajectory:
    """A whole stacked grid of learners playing the same game: :func:`_run` vmapped over the grid axis
    (``game``: the rest of :func:`_run`'s arguments, passed through).

    Only what depends on a learner is batched: ``vmap`` leaves the environment's work (drawing the round
    data, the comparators) unbatched, so it is done once per round and shared by the grid, and it keeps
    state that no learner's numbers touch (a round counter) unbatched through the scan, so a learner's
    ``lax.cond`` on it stays a real branch instead of running both sides.
    """
    params, static = eqx.partition(learner, eqx.is_array)
    return jax.vmap(lambda p: _run(eqx.combine(p, static), *game))(params)


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
    T = _check_compatible(learner, problem, T)
    key = _as_key(key)
    _check_memory("run", problem, T, 1, 1, record_decisions, comparators)
    traj = _compiled(_run, _game_options(problem))(learner, problem, T, key, record_decisions, comparators)
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


def _count_keys(keys: Any) -> int:
    """The number S of runs ``keys`` asks for, after checking it (one line naming ``keys`` otherwise)."""
    if isinstance(keys, int | np.integer) and not isinstance(keys, bool):
        return _checks.integer("keys", keys, 1)
    if isinstance(keys, jax.Array | np.ndarray) and _is_key_batch(keys):
        if keys.shape[0] < 1:
            raise ValueError(f"keys must be {_KEYS_RULE}, got an empty batch of keys")
        return int(keys.shape[0])
    if isinstance(keys, list | tuple | range) or (isinstance(keys, np.ndarray | jax.Array) and keys.ndim == 1):
        if len(keys) == 0:
            raise ValueError(f"keys must be {_KEYS_RULE}, got an empty {type(keys).__name__}")
        if getattr(keys, "dtype", None) == np.uint32 and len(keys) == 2:
            raise ValueError(f"keys must be {_KEYS_RULE}, got one PRNG key (use jax.random.split(key, S))")
        for i, seed in enumerate(keys if not isinstance(keys, range) else (keys[0], keys[-1])):
            try:
                _checks.integer("seed", seed, *_SEEDS)
            except ValueError as err:
                raise ValueError(f"keys[{i}] must be an integer seed in [-2**63, 2**63 - 1], got {seed!r}") from err
        return len(keys)
    raise ValueError(f"keys must be {_KEYS_RULE}, got {keys!r}")


def _as_keys(keys: PRNGKeyArray | Sequence[int] | int) -> PRNGKeyArray:
    """A batch of PRNG keys from a count S (seeds ``0..S-1``), a list of seeds, or keys."""
    _count_keys(keys)
    if isinstance(keys, int | np.integer):
        keys = range(int(keys))
    if isinstance(keys, list | tuple | range) or not _is_key_batch(keys):
        keys = _seed_keys([int(s) for s in keys])
    return keys


def _seed_keys(seeds: Sequence[int]) -> PRNGKeyArray:
    """``jax.random.PRNGKey(seed)`` for each seed, stacked: made by NumPy where :func:`_host_keys` can, else by
    JAX."""
    host = _host_keys(seeds)
    return host if host is not None else jnp.stack([jax.random.PRNGKey(s) for s in seeds])


def _host_keys(seeds: Sequence[int]) -> np.ndarray | None:
    """``jax.random.PRNGKey(seed)`` for each seed, bit for bit, computed by NumPy (no JAX operation: each would
    compile a small program in a fresh process), or ``None`` where JAX's own seeding is needed.

    Under ``jax_enable_x64`` with the default ``threefry2x32`` generator and no seed offset, a seed's raw key is
    its 64 bits as two ``uint32`` words, high word first (``jax._src.random.threefry2x32.threefry_seed``); any
    other configuration returns ``None``.
    """
    config = jax.config
    if not config.jax_enable_x64 or config.jax_default_prng_impl != "threefry2x32" or config.jax_random_seed_offset:
        return None
    bits = np.asarray(seeds, dtype=np.int64).reshape(-1).view(np.uint64)
    return np.stack([bits >> np.uint64(32), bits & np.uint64(0xFFFFFFFF)], axis=-1).astype(np.uint32)


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
    expensive. A chunk whose rounds take little memory (:data:`UPFRONT_BYTES`) draws them all before playing,
    in a program of its own that XLA compiles once for every learner swept on the same game and chunk shape.

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
    T = _check_compatible(learner, problem, T)
    _checks.positive_int("chunk_size", chunk_size)
    S = _count_keys(keys)
    per_chunk, B = chunk_size, 1
    if batched_learner:
        B = _batched(learner)
        if B is None or B < 1:
            raise ValueError("batched_learner=True needs learner leaves with one shared leading axis (see stack)")
        per_chunk = max(1, chunk_size // B)
    size = min(per_chunk, S)
    upfront = _draws_upfront(problem, T, size)
    _check_memory("sweep", problem, T, S * B, size * B, record_decisions, comparators, upfront)
    keys, options = _as_keys(keys), _sweep_options(problem, T * S * B)

    def chunk_of(chunk):
        rounds = _compiled(_rounds_impl, options)(problem, T, chunk) if upfront else None
        play = _compiled(_sweep_chunk, options)
        return play(learner, problem, T, chunk, record_decisions, comparators, batched_learner, rounds)

    traj = _in_chunks(chunk_of, keys, size)
    if batched_learner:  # (S, B, ...) -> (B, S, ...)
        traj = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), traj)
    if throw:
        _raise_if_bad(traj)
    return traj


def _sweep_chunk(learner, problem, T, keys, record_decisions, comparators, grid, rounds=None):
    run_one = _run_grid if grid else _run
    return jax.vmap(lambda key, r: run_one(learner, problem, T, key, record_decisions, comparators, r))(keys, rounds)


class Session:
    """Step a learner one round at a time against a live stream (deployment, interactive use).

    ``decide()`` returns the decision to play; ``observe(data)`` takes that round's data in the format
    of ``problem.round_data`` (for :class:`~ocokit.problems.CustomProblem`, one entry of its data),
    evaluates loss and constraints at the played point and updates the learner; ``observe_many(datas)``
    absorbs a burst of rounds (each leaf stacked on a leading axis) at once. A non-finite loss, constraint
    value or decision raises :class:`NonFiniteError` naming the round (the state has then absorbed it).

    Design: one compiled call per round. ``observe`` runs the round's loss, constraints, feedback and
    update *and the next decision* in a single program whose learner, problem and state stay on the
    device; the host receives one vector ``[f_t, g_t, bad, x_{t+1}]`` (``bad``: which of the loss, the
    constraints and the decision was non-finite, or -1), in one transfer, which is also what the next
    ``decide()`` returns. ``observe_many`` runs the same round body in a ``lax.scan`` over the burst (a burst
    of a new length compiles once). The programs are compiled once per learner and problem structure,
    shared by every session of that structure (numbers are arguments). Every array that crosses a call adds
    to its cost (about half a microsecond each on a 2-core CPU), so the learner's and problem's arrays cross
    as one buffer per dtype, and so do the state, the carried history and the decision (:class:`_Layout`, set
    up once, at construction); only the round's data crosses as given. The carry is laid out for the types
    the rounds return (:func:`_steady_layout`), so the round compiles once.

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
        horizon = _check_compatible(learner, problem, horizon, "horizon")
        self.learner, self.problem = learner, problem
        self.key = _as_key(key)
        self.info = ProblemInfo.of(problem, horizon)
        params, static = eqx.partition((learner, problem), eqx.is_array)
        carry = _session_start(learner, problem, self.info, split_key(self.key)[1])  # (state, history, x)
        # packed once: a round passes a few buffers (no Python pytree flattening per round)
        params, params_def = jax.tree.flatten(params)
        carry, self._carry_def = jax.tree.flatten(carry)
        x = carry[-1]  # the decision to play, until observe (the last leaf of (state, history, x))
        self._n = problem.num_constraints
        params_layout = _Layout.of(params)
        structure = (static, params_def, params_layout, self._carry_def)
        layout = _cached(_steady_layout, *structure, _Layout.of(carry), horizon)
        self._carry_layout = layout
        self._params, self._carry = params_layout.pack(params), _compiled_pack(layout)(carry)
        self._x = x
        self._round, self._rounds = _cached(_session_programs, *structure, layout, _game_options(problem))
        self._x_host: np.ndarray | None = None
        self._out: np.ndarray | None = None  # the last round's host vector [f_t, g_t, bad, x_{t+1}]
        self._x_shape, self._x_dtype = tuple(x.shape), np.dtype(x.dtype)
        self.t = 0

    @property
    def state(self) -> Any:
        """The learner's current state."""
        carry = _compiled_unpack(self._carry_layout)(self._carry)  # compiled once per layout
        return jax.tree.unflatten(self._carry_def, carry)[0]

    def decide(self) -> np.ndarray:
        """The decision to play this round (the same until ``observe`` is called)."""
        if self._x_host is None:
            if self._out is None:  # before the first round, or after a burst
                self._x_host = np.asarray(self._x)
            else:  # x_{t+1} came with the last round's vector: no transfer
                x = self._out[self._n + 2 :]
                if x.dtype != self._x_dtype:
                    x = x.astype(self._x_dtype)
                self._x_host = x if x.shape == self._x_shape else x.reshape(self._x_shape)
        return self._x_host

    def observe(self, data: Any) -> dict[str, np.ndarray]:
        """Absorb this round's data; returns the loss and constraint values at the played point."""
        self._carry, out = self._round(self._params, self._carry, data)
        self._out = out = np.asarray(out)  # [f_t, g_t (N), bad, x_{t+1}]: the round's one transfer
        self._x_host = None
        self.t += 1
        n = self._n
        if out[n + 1] >= 0:
            raise NonFiniteError(f"non-finite {_QUANTITIES[int(out[n + 1])]} at round {self.t}")
        return {"loss": out[0], "constraints": out[1 : n + 1]}

    def observe_many(self, datas: Any) -> dict[str, np.ndarray]:
        """Absorb a burst of n rounds at once, in one compiled scan; the same numbers as n ``observe`` calls.

        Args:
            datas: the n rounds' data, each leaf of ``round_data``'s format stacked on a leading axis of n.

        Returns:
            ``{"loss": (n,), "constraints": (n, N)}``, the values at the decisions played in those rounds.
        """
        self._carry, self._x, reports = self._rounds(self._params, self._carry, datas)
        self._x_host = self._out = None
        reports = np.asarray(reports)  # one row [f_t, g_t (N), bad] per round
        before, n = self.t, self._n
        self.t += reports.shape[0]
        bad = np.flatnonzero(reports[:, n + 1] >= 0)
        if bad.size:
            i = int(bad[0])
            raise NonFiniteError(f"non-finite {_QUANTITIES[int(reports[i, n + 1])]} at round {before + 1 + i}")
        return {"loss": reports[:, 0], "constraints": reports[:, 1 : n + 1]}


class _Layout(eqx.Module):
    """Where each array of a flat list lives when the list crosses a ``jit`` call as a few 1-D buffers.

    Arrays of the same dtype and weak type (the type of a Python scalar's array, which JAX promotes
    differently) are raveled and concatenated, in list order, into one buffer; a slice of a weakly typed
    buffer is weakly typed again, so the round trip is exact, types included. A typed PRNG key crosses on its
    own (``alone``). :meth:`pack` and :meth:`unpack` run inside the compiled programs (slices and reshapes
    that XLA folds into their uses).
    """

    shapes: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    kinds: tuple[tuple[Any, bool], ...] = eqx.field(static=True)  # (dtype, weakly typed) of each array
    alone: tuple[bool, ...] = eqx.field(static=True)
    groups: tuple[tuple[Any, bool], ...] = eqx.field(static=True)  # the buffers' kinds, in order of first appearance

    @classmethod
    def of(cls, leaves: Sequence[Any]) -> _Layout:
        """The layout of ``leaves`` (arrays, or their ``jax.ShapeDtypeStruct``)."""
        alone = tuple(jax.dtypes.issubdtype(a.dtype, jax.dtypes.extended) for a in leaves)
        weak = (not key and bool(getattr(a, "weak_type", False)) for a, key in zip(leaves, alone, strict=True))
        kinds = tuple(zip((a.dtype for a in leaves), weak, strict=True))
        groups = tuple(dict.fromkeys(k for k, a in zip(kinds, alone, strict=True) if not a))
        return cls(tuple(tuple(np.shape(a)) for a in leaves), kinds, alone, groups)

    def pack(self, leaves: Sequence[Any]) -> tuple[Any, ...]:
        """The buffers: one per kind of :attr:`groups`, then each array that crosses alone; ``ValueError`` if an array
        is not of the dtype and shape of the layout (a Session's state must keep those of its first round)."""
        for i, (a, (dtype, _), shape) in enumerate(zip(leaves, self.kinds, self.shapes, strict=True)):
            if a.dtype != dtype or tuple(np.shape(a)) != shape:
                raise ValueError(
                    f"array {i} of the state is {a.dtype}{list(np.shape(a))} where its layout has {dtype}{list(shape)}:"
                    " a round must keep the dtypes and shapes of the first (data of round_data's dtypes and shapes)"
                )
        kept = list(zip(leaves, self.kinds, self.alone, strict=True))
        buffers = [jnp.concatenate([jnp.ravel(a) for a, k, alone in kept if k == g and not alone]) for g in self.groups]
        return (*buffers, *(a for a, _, alone in kept if alone))

    def unpack(self, buffers: Sequence[Any]) -> list[Any]:
        """The arrays packed into ``buffers``."""
        packed = dict(zip(self.groups, buffers, strict=False))
        apart = iter(buffers[len(self.groups) :])
        offsets, leaves = dict.fromkeys(self.groups, 0), []
        for shape, kind, alone in zip(self.shapes, self.kinds, self.alone, strict=True):
            if alone:
                leaves.append(next(apart))
                continue
            size, start = math.prod(shape), offsets[kind]
            offsets[kind] = start + size
            leaves.append(packed[kind][start : start + size].reshape(shape))
        return leaves


def _cached(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` through ``fn``'s cache (``functools.lru_cache``), or computed afresh for ``args`` that cannot be
    hashed (a learner or problem with a dict-valued static field): a Session's structure-keyed parts."""
    try:
        hash(args)
    except TypeError:
        return fn.__wrapped__(*args)
    return fn(*args)


@functools.cache
def _compiled_pack(layout: _Layout):
    """``layout.pack`` of a session's first carry, compiled once per layout; a weakly typed leaf that rounds return
    strongly typed (:func:`_steady_layout`) is made strongly typed first, as ``lax.scan`` does with such a carry."""

    def pack(leaves):
        leaves = [a if getattr(a, "weak_type", False) == weak else a.astype(dtype) for a, (dtype, weak) in
                  zip(leaves, layout.kinds, strict=True)]  # fmt: skip
        return layout.pack(leaves)

    return jax.jit(pack)


@functools.lru_cache(maxsize=32)
def _steady_layout(static, params_def, params_layout, carry_def, first: _Layout, horizon: int) -> _Layout:
    """The layout of the carry ``(state, history, x)`` a :class:`Session`'s round returns, found by tracing one round
    on data of ``round_data``'s shape (``jax.eval_shape``: nothing runs); ``first`` is the layout of the carry
    ``init`` gives.

    They differ only in weak types: a weakly typed leaf of ``init`` (a decision built from a Python scalar, say) that
    the update makes strongly typed. Every round after the first receives the round's layout, so a session's
    buffers are laid out by it from the start (``lax.scan`` promotes such a carry the same way). A round that changes
    a leaf's shape or dtype is an error, as in ``lax.scan``.
    """

    def abstract(layout: _Layout) -> list[jax.ShapeDtypeStruct]:
        return [jax.ShapeDtypeStruct(s, k[0], weak_type=k[1]) for s, k in zip(layout.shapes, layout.kinds, strict=True)]

    def round_(params, carry, key):
        problem = eqx.combine(params, static)[1]
        data = problem.round_data(problem.episode(key, horizon), key, 1)
        return _session_play(static, params, *carry, data)[:3]

    params = jax.tree.unflatten(params_def, abstract(params_layout))
    carry = jax.tree.unflatten(carry_def, abstract(first))
    out = jax.tree.leaves(jax.eval_shape(round_, params, carry, jax.random.PRNGKey(0)))
    layout = _Layout.of(out)
    changed = [i for i, (a, b) in enumerate(zip(first.shapes, layout.shapes, strict=True)) if a != b]
    changed += [i for i, (a, b) in enumerate(zip(first.kinds, layout.kinds, strict=True)) if a[0] != b[0]]
    if changed:
        i = min(changed)
        raise ValueError(
            f"a round changes leaf {i} of the learner's state from {first.kinds[i][0]}{list(first.shapes[i])} to "
            f"{layout.kinds[i][0]}{list(layout.shapes[i])}; update must keep the shapes and dtypes init gives"
        )
    return layout


@functools.cache
def _compiled_unpack(layout: _Layout):
    """``layout.unpack``, compiled (a slice of a device array outside a program would compile one per slice)."""
    return jax.jit(layout.unpack)


@eqx.filter_jit
def _session_start(learner, problem, info, key):
    """The learner's state, the carried history (``None`` without memory) and the first decision."""
    state = learner.init(info, key)
    x = learner.decide(state)
    return state, _initial_history(problem, x, info.memory), x


def _session_play(static, params, state, history, x, data):
    """One round at the played ``x``: update, the next decision, and the round's report.

    The report is one vector ``[f_t(x_t), g_t(x_t), finite(loss), finite(constraints), finite(x_t)]`` (in the
    wider dtype of the loss and the constraints) so that the host fetches one array per round.
    """
    learner, problem = eqx.combine(params, static)
    window = _window(history, x) if history is not None else None
    loss = problem.loss(data, window if history is not None else x)
    cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
    state = learner.update(state, x, make_feedback(type(learner).feedback, problem, data, loss, cons))
    finite = jnp.stack([jnp.isfinite(loss), jnp.all(jnp.isfinite(cons)), _all_finite(x)])
    dtype = jnp.result_type(loss, cons)
    report = jnp.concatenate([loss.astype(dtype)[None], cons.astype(dtype), finite.astype(dtype)])
    return state, window if history is not None else None, learner.decide(state), report


@functools.lru_cache(maxsize=32)
def _session_programs(static, params_def, params_layout, carry_def, carry_layout, options=()):
    """The compiled round and burst of one learner-and-problem structure (its numbers are arguments), compiled
    with the XLA ``options`` of the game (:func:`_game_options`).

    Looked up once per session (the structure is hashed here, not on every round) and shared by every
    session of that structure. The programs take the learner's and problem's arrays and the carry
    ``(state, history, x)`` packed by their :class:`_Layout`, so a round is one fast-path ``jit`` dispatch
    with a few arguments and no Python pytree work. ``play`` returns the packed carry and the round's one
    host vector ``[f_t, g_t, bad, x_{t+1}]`` (:func:`_coded`), ``rounds`` the packed carry, the next decision and
    one row ``[f_t, g_t, bad]`` per round.
    """

    def step(params, carry, data):
        state, history, x = carry
        state, history, x, report = _session_play(static, params, state, history, x, data)
        return (state, history, x), _coded(report)

    def unpacked(params, carry):
        params = jax.tree.unflatten(params_def, params_layout.unpack(params))
        return params, jax.tree.unflatten(carry_def, carry_layout.unpack(carry))

    def packed(carry):
        return carry_layout.pack(jax.tree.leaves(carry))

    def play(params, carry, data):
        carry, report = step(*unpacked(params, carry), data)
        x = carry[-1]
        dtype = jnp.promote_types(report.dtype, x.dtype)  # wide enough for both: the host gets both exactly
        return packed(carry), jnp.concatenate([report.astype(dtype), x.ravel().astype(dtype)])

    def rounds(params, carry, datas):
        params, carry = unpacked(params, carry)
        carry, reports = jax.lax.scan(lambda c, data: step(params, c, data), carry, datas)
        return packed(carry), carry[-1], reports

    return jax.jit(play, compiler_options=dict(options)), jax.jit(rounds, compiler_options=dict(options))


def _coded(report: Array) -> Array:
    """A round's report ``[f_t, g_t, finite flags x 3]`` as ``[f_t, g_t, bad]``: ``bad`` indexes the first
    non-finite quantity of ``_QUANTITIES`` (loss, constraints, decision), or is -1; the host reads one number."""
    flags = report[-3:]
    bad = jnp.where(jnp.all(flags == 1), -1, jnp.argmin(flags)).astype(report.dtype)
    return jnp.concatenate([report[:-3], bad[None]])

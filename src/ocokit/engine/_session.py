"""``Session``: a learner stepped one round at a time against a live stream (deployment, interactive use)."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine import _checkpoint
from ocokit.engine._game import all_finite, check_compatible
from ocokit.engine._programs import Options, options
from ocokit.engine._rounds import initial_history, split_key, window
from ocokit.feedback import make_feedback
from ocokit.problems._base import AbstractProblem
from ocokit.trajectory import QUANTITIES, NonFiniteError

DUPLICATES = ("error", "ignore")
"""What a [`Session`][ocokit.Session] does with a round index already observed: refuse it, or skip it."""


class Session:
    """Step a learner one round at a time against a live stream (deployment, interactive use).

    ``decide()`` returns the decision to play; ``observe(data)`` takes that round's data in the format
    of ``problem.round_data`` (for [`CustomProblem`][ocokit.problems.CustomProblem], one entry of its data),
    evaluates loss and constraints at the played point and updates the learner; ``observe_many(datas)``
    absorbs a burst of rounds (each leaf stacked on a leading axis) at once. A non-finite loss, constraint
    value or decision raises [`NonFiniteError`][ocokit.NonFiniteError] naming the round (the state has then absorbed
    it).
    Round data of another structure or shape than the problem's rounds is refused in one line naming the leaf.

    A round is one compiled call: the loss, the constraints, the feedback, the update and the next decision, its
    carried state donated to the call (updated in place). The programs are compiled once per learner and problem
    structure and shared by every session of that structure (their numbers are arguments); the same numbers as
    [`run`][ocokit.run] over the same rounds (to rounding: a round compiled alone may round the last bit of a
    float apart from the same round inside ``run``'s scan).

    **Checkpoints.** [`save`][ocokit.Session.save] writes the session's whole state (the learner's state, the carried
    history of a
    problem with memory, the next decision, the rounds played ``t``, the key) to one file, atomically: a process
    killed at any moment leaves the previous checkpoint or the new one, never half of one.
    [`restore`][ocokit.Session.restore] continues
    from it, and so does a session made with ``checkpoint=path`` when the file exists, which also saves every
    ``every`` rounds on its own. The file records the ocokit, jax and equinox versions and a fingerprint of the
    learner's and the problem's configuration: restoring into another learner, problem, horizon, key or ocokit
    version is a one-line ``ValueError`` naming what differs. A session saved and restored at any rounds, any number
    of times, makes the decisions of one that never stopped, bit for bit.

    **Exactly-once rounds.** ``observe(data, round=t)`` and ``observe_many(datas, first_round=t)`` take the 1-based
    index of the (first) round the data belongs to, and the session checks it against the next round, ``t + 1``
    (after a restore, the saved round + 1): a gap is a ``ValueError`` naming the rounds never observed; a round
    already observed is a ``ValueError`` too, or with ``duplicates="ignore"`` it is skipped and ``observe`` returns
    ``None`` (its values were returned when it was first observed; a burst returns the rounds it played, ``None``
    if none). Without an index, data is taken as the next round.

    Args:
        learner: any [`AbstractLearner`][ocokit.algorithms.AbstractLearner].
        problem: any [`AbstractProblem`][ocokit.problems.AbstractProblem].
        horizon: the horizon ``T`` the learner is told (its theory parameters may use it), ``>= 1``.
        key: a PRNG key or an integer seed, split as [`run`][ocokit.run] splits it (`split_key`).
        checkpoint: a file to resume from when it exists, and to save to every ``every`` rounds.
        every: with ``checkpoint``, save after each call that leaves ``every`` or more rounds unsaved (a burst
            is saved once, at its end); ``>= 1``, default 1 (every round).
        duplicates: ``"error"`` (default) or ``"ignore"``: what a round index already observed does.
        compiler_options: XLA options of the compiled rounds, as in [`run`][ocokit.run].

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> session = ocokit.Session(ocokit.algorithms.OGD(eta=0.01), problem, horizon=10, key=0)
        >>> x = session.decide()
        >>> data = problem.round_data(None, ocokit.engine.split_key(session.key)[0], 1)
        >>> sorted(session.observe(data, round=1))
        ['constraints', 'loss']

        Saved after round 1, restored elsewhere (another process, after a crash), it goes on from round 2:

        >>> import pathlib, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = pathlib.Path(folder.name) / "controller.ckpt"
        >>> session.save(path)
        >>> again = ocokit.Session.restore(path, ocokit.algorithms.OGD(eta=0.01), problem, horizon=10, key=0)
        >>> again.t, bool((again.decide() == session.decide()).all())
        (1, True)
        >>> again.observe(data, round=1)
        Traceback (most recent call last):
        ...
        ValueError: round 1 was already observed: the next round is 2 (duplicates='ignore' skips replayed rounds)
        >>> ocokit.Session.restore(path, ocokit.algorithms.OGD(eta=0.1), problem, horizon=10, key=0)
        Traceback (most recent call last):
        ...
        ValueError: checkpoint .../controller.ckpt was saved with another learner (OGD with another eta)
        >>> folder.cleanup()
    """

    def __init__(
        self,
        learner: AbstractLearner,
        problem: AbstractProblem,
        *,
        horizon: int,
        key=0,
        checkpoint: str | os.PathLike | None = None,
        every: int = 1,
        duplicates: str = "error",
        compiler_options: Mapping[str, Any] | None = None,
    ):
        horizon = _checks.horizon(horizon, "horizon")
        check_compatible(learner, problem)
        _checks.positive_int("every", every)
        if checkpoint is None and every != 1:
            raise ValueError(f"every={every} needs checkpoint=<file> to save to")
        _checks.one_of("duplicates", duplicates, DUPLICATES)
        self.duplicates = duplicates
        self.learner, self.problem = learner, problem
        self.key = _checks.key(key)
        self.info = ProblemInfo.of(problem, horizon)
        self._round, self._burst, start = _programs(options(compiler_options))
        carry = start(learner, problem, self.info, split_key(self.key)[1])
        self._data = _round_shapes(problem, horizon)
        if self._data is not None:  # the carry as the rounds return it (weak types made strong): one compile
            steady = jax.eval_shape(_play, (learner, problem, self._data), carry)[0]
            carry = jax.tree.map(_as_steady, carry, steady)
        self._carry = carry
        self._x: np.ndarray | None = None
        self.t = 0
        self._config: dict[str, Any] | None = None
        self._checkpoint = None if checkpoint is None else Path(checkpoint)
        self._every, self._saved = every, 0
        if self._checkpoint is not None and self._checkpoint.exists():
            self._resume(_checkpoint.read(self._checkpoint))
        elif self._checkpoint is not None:
            _checkpoint.sweep(self._checkpoint)

    @classmethod
    def restore(
        cls,
        path: str | os.PathLike,
        learner: AbstractLearner,
        problem: AbstractProblem,
        *,
        horizon: int | None = None,
        key=None,
        duplicates: str = "error",
        compiler_options: Mapping[str, Any] | None = None,
    ) -> Session:
        """The session saved at ``path`` ([`save`][ocokit.Session.save]), continuing from the round it had played.

        Args:
            path: the checkpoint file.
            learner, problem: the learner and problem it was saved with (the same configuration).
            horizon, key: the ones it was saved with; ``None`` (default) takes them from the file.
            duplicates, compiler_options: as for a new session.

        Returns:
            A session whose next round is the saved one + 1; it does not save on its own (for that, make it as
            ``Session(..., checkpoint=path, every=k)``, which resumes from the file as well).

        Raises:
            ValueError: one line, if the file is not a checkpoint, is truncated or damaged, or was saved with
                another learner, problem, horizon, key or ocokit version (naming which).
        """
        saved = _checkpoint.read(Path(path))
        horizon = saved.horizon if horizon is None else horizon
        key = saved.key if key is None else key
        session = cls(
            learner, problem, horizon=horizon, key=key, duplicates=duplicates, compiler_options=compiler_options
        )
        session._resume(saved)
        return session

    def save(self, path: str | os.PathLike) -> None:
        """Write the session's whole state to ``path``, atomically (a temporary file in the same folder, flushed to
        disk, renamed over ``path``): a process killed meanwhile leaves ``path`` as it was."""
        _checkpoint.write(Path(path), self._configuration(), self.t, self._carry)
        if self._checkpoint is not None and Path(path) == self._checkpoint:
            self._saved = self.t

    def _configuration(self) -> dict[str, Any]:
        """What a checkpoint of this session records and must match (computed once)."""
        if self._config is None:
            self._config = _checkpoint.configuration(self.learner, self.problem, self.info.horizon, self.key)
        return self._config

    def _resume(self, saved: _checkpoint.Checkpoint) -> None:
        """Continue from ``saved``, refused in one line if it belongs to another configuration."""
        differs = _checkpoint.mismatch(saved, self._configuration())
        if differs is not None:
            raise ValueError(differs)
        self._carry = _checkpoint.restore_carry(saved, self._carry)
        self._x = None
        self.t = self._saved = saved.round

    @property
    def state(self) -> Any:
        """The learner's current state: its arrays are the session's own, donated to the next round (reused in
        place), so copy them (``jax.tree.map(jnp.copy, session.state)``) to keep them past ``observe``."""
        return self._carry[0]

    def decide(self) -> np.ndarray:
        """The decision to play this round (the same until ``observe`` is called)."""
        if self._x is None:
            self._x = np.asarray(self._carry[2])
        return self._x

    def observe(self, data: Any, round: int | None = None) -> dict[str, np.ndarray] | None:
        """Absorb this round's data; returns the loss and constraint values at the played point.

        Args:
            data: the round's data, in the format of ``problem.round_data``.
            round: the 1-based index of the round ``data`` belongs to, checked against the next round
                ``t + 1`` (a gap or, unless ``duplicates="ignore"``, a round already observed is a ``ValueError``);
                ``None`` takes ``data`` as the next round.

        Returns:
            ``{"loss": (), "constraints": (N,)}``, or ``None`` for a round already observed that is ignored.
        """
        if self._already_observed(round, 1):
            return None
        data = self._checked(data, ())
        self._carry, report = self._round((self.learner, self.problem, data), self._carry)
        out = {name: values[0] for name, values in self._advance(np.asarray(report)[None]).items()}
        self._autosave()
        return out

    def observe_many(self, datas: Any, first_round: int | None = None) -> dict[str, np.ndarray] | None:
        """Absorb a burst of n rounds at once, in one compiled scan; the same numbers as n ``observe`` calls.

        Args:
            datas: the n rounds' data, each leaf of ``round_data``'s format stacked on a leading axis of n.
            first_round: the 1-based index of the burst's first round, checked as ``observe``'s ``round`` (with
                ``duplicates="ignore"``, the rounds already observed are dropped from the burst's start).

        Returns:
            ``{"loss": (m,), "constraints": (m, N)}``, the values at the decisions played in the m rounds absorbed
            (m = n unless rounds were ignored), or ``None`` if every round was ignored.
        """
        n = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in jax.tree.leaves(datas)}
        if len(n) != 1 or None in n:
            raise ValueError(f"datas must stack every leaf of the round data on one leading axis, got {datas!r}")
        n = n.pop()
        seen = self._already_observed(first_round, n)
        if seen == n:
            return None
        datas = self._checked(datas, (n,))
        if seen:
            datas = jax.tree.map(lambda leaf: leaf[seen:], datas)
        self._carry, reports = self._burst((self.learner, self.problem, datas), self._carry)
        out = self._advance(np.asarray(reports))
        self._autosave()
        return out

    def _already_observed(self, first: int | None, n: int) -> int:
        """How many of the ``n`` rounds from ``first`` on were already observed and are to be ignored (0 without an
        index); one line naming the rounds for a gap, or for rounds already observed unless they are ignored."""
        if first is None:
            return 0
        first = _checks.integer("round", first, 1)
        after = self.t + 1
        if first > after:
            missing = _rounds(after, first - 1)
            raise ValueError(f"{missing} never observed: the next round is {after}, got round {first}")
        seen = min(after - first, n)
        if seen and self.duplicates == "error":
            again = _rounds(first, first + seen - 1)
            raise ValueError(
                f"{again} already observed: the next round is {after} (duplicates='ignore' skips replayed rounds)"
            )
        return seen

    def _autosave(self) -> None:
        """Save to the session's checkpoint once ``every`` rounds or more are unsaved."""
        if self._checkpoint is not None and self.t - self._saved >= self._every:
            self.save(self._checkpoint)

    def _advance(self, reports: np.ndarray) -> dict[str, np.ndarray]:
        """Count the rounds of ``reports`` (rows ``[f_t, g_t, bad]``) and raise on the first bad one."""
        self._x = None
        before, n = self.t, self.problem.num_constraints
        self.t += reports.shape[0]
        bad = np.flatnonzero(reports[:, n + 1] >= 0)
        if bad.size:
            i = int(bad[0])
            raise NonFiniteError(f"non-finite {QUANTITIES[int(reports[i, n + 1])]} at round {before + 1 + i}")
        return {"loss": reports[:, 0], "constraints": reports[:, 1 : n + 1]}

    def _checked(self, data: Any, lead: tuple[int, ...]) -> Any:
        """``data`` as arrays of the problem's round data (``lead``: the burst's axis), or one line naming the leaf
        whose structure, shape or kind of number differs."""
        if self._data is None:  # a problem whose rounds cannot be traced abstractly: taken as given
            return data
        want, want_def = jax.tree.flatten(self._data)
        got, got_def = jax.tree.flatten(data)
        if got_def != want_def:
            raise ValueError(f"round data must have the structure of the problem's rounds {want_def}, got {got_def}")
        out = []
        for i, (leaf, spec) in enumerate(zip(got, want, strict=True)):
            leaf = leaf if isinstance(leaf, jax.Array | np.ndarray) else np.asarray(leaf)
            shape, dtype, got_dtype = (*lead, *spec.shape), np.dtype(spec.dtype), np.dtype(leaf.dtype)
            if tuple(np.shape(leaf)) != shape:
                raise ValueError(f"round data leaf {i} must have shape {shape}, got shape {tuple(np.shape(leaf))}")
            if not np.can_cast(got_dtype, dtype, "same_kind"):
                raise ValueError(f"round data leaf {i} must be of dtype {dtype}, got {got_dtype}")
            same = got_dtype == dtype  # host data stays on the host: the round's call moves it, no extra dispatch
            out.append(leaf if same else leaf.astype(dtype) if isinstance(leaf, jax.Array) else np.asarray(leaf, dtype))
        return jax.tree.unflatten(want_def, out)


def _rounds(first: int, last: int) -> str:
    """``"round 3 was"`` or ``"rounds 3-5 were"``."""
    return f"round {first} was" if first == last else f"rounds {first}-{last} were"


def _round_shapes(problem: AbstractProblem, horizon: int) -> Any:
    """The shapes and dtypes of ``problem``'s round data (``jax.eval_shape``), or ``None`` where they cannot be
    traced abstractly (host code)."""
    key = jax.random.PRNGKey(0)
    try:
        return jax.eval_shape(lambda k: problem.round_data(problem.episode(k, horizon), k, 1), key)
    except Exception:  # host code in the episode or the rounds
        return None


def _as_steady(leaf: Any, steady: Any) -> Any:
    """``leaf`` with the type a round returns for it: a weakly typed leaf of ``init`` that the update makes strongly
    typed, strongly typed from the start (as ``lax.scan`` promotes its carry); a changed shape or dtype is an error,
    as in ``lax.scan``."""
    if not isinstance(leaf, jax.Array):
        return leaf
    if leaf.shape != steady.shape or leaf.dtype != steady.dtype:
        raise ValueError(
            f"a round changes a leaf of the learner's state from {leaf.dtype}{list(leaf.shape)} to "
            f"{steady.dtype}{list(steady.shape)}; update must keep the shapes and dtypes init gives"
        )
    return jnp.asarray(leaf, leaf.dtype) if leaf.weak_type and not steady.weak_type else leaf


def _start(learner, problem, info, key):
    """The carry before round 1: the learner's state, the carried history (``None`` without memory) and ``x_1``."""
    state = learner.init(info, key)
    x = learner.decide(state)
    carry = state, initial_history(problem, x, info.memory), x
    return jax.tree.map(lambda a: jnp.array(a, copy=True), carry)  # fresh buffers, never the learner's: donated


def _play(game, carry) -> tuple[Any, Array]:
    """One round at the played ``x``: the carry after it and the round's report ``[f_t, g_t, bad]`` (``bad`` indexes
    the first non-finite quantity of ``QUANTITIES`` or is -1), one vector for one transfer."""
    learner, problem, data = game
    state, history, x = carry
    played = window(history, x) if history is not None else None
    loss = problem.loss(data, played if history is not None else x)
    cons = jnp.atleast_1d(problem.constraints(data, x)).reshape(problem.num_constraints)
    state = learner.update(state, x, make_feedback(type(learner).feedback, problem, data, loss, cons))
    finite = jnp.stack([jnp.isfinite(loss), jnp.all(jnp.isfinite(cons)), all_finite(x)])
    dtype = jnp.result_type(loss, cons)
    bad = jnp.where(jnp.all(finite), -1, jnp.argmin(finite)).astype(dtype)
    report = jnp.concatenate([loss.astype(dtype)[None], cons.astype(dtype), bad[None]])
    return (state, played, learner.decide(state)), report


def _play_many(game, carry) -> tuple[Any, Array]:
    """`_play` over a burst of rounds (``game``'s data stacked on a leading axis), in one ``lax.scan``."""
    learner, problem, datas = game
    return jax.lax.scan(lambda c, data: _play((learner, problem, data), c), carry, datas)


@functools.cache
def _programs(compiler_options: Options) -> tuple[Any, Any, Any]:
    """The round, the burst (each donating the carry, its second argument) and the start, with ``compiler_options``."""
    jit = functools.partial(eqx.filter_jit, compiler_options=dict(compiler_options) or None)
    return jit(_play, donate="all-except-first"), jit(_play_many, donate="all-except-first"), jit(_start)

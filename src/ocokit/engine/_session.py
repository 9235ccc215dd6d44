"""``Session``: a learner stepped one round at a time against a live stream (deployment, interactive use)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo
from ocokit.engine._game import all_finite, check_compatible
from ocokit.engine._programs import Options, options
from ocokit.engine._rounds import initial_history, split_key, window
from ocokit.feedback import make_feedback
from ocokit.problems._base import AbstractProblem
from ocokit.trajectory import QUANTITIES, NonFiniteError


class Session:
    """Step a learner one round at a time against a live stream (deployment, interactive use).

    ``decide()`` returns the decision to play; ``observe(data)`` takes that round's data in the format
    of ``problem.round_data`` (for :class:`~ocokit.problems.CustomProblem`, one entry of its data),
    evaluates loss and constraints at the played point and updates the learner; ``observe_many(datas)``
    absorbs a burst of rounds (each leaf stacked on a leading axis) at once. A non-finite loss, constraint
    value or decision raises :class:`~ocokit.NonFiniteError` naming the round (the state has then absorbed it).
    Round data of another structure or shape than the problem's rounds is refused in one line naming the leaf.

    A round is one compiled call: the loss, the constraints, the feedback, the update and the next decision, its
    carried state donated to the call (updated in place). The programs are compiled once per learner and problem
    structure and shared by every session of that structure (their numbers are arguments); the same numbers as
    :func:`~ocokit.run` over the same rounds.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression()
        >>> session = ocokit.Session(ocokit.algorithms.OGD(eta=0.01), problem, horizon=10, key=0)
        >>> x = session.decide()
        >>> data = problem.round_data(None, ocokit.engine.split_key(session.key)[0], 1)
        >>> sorted(session.observe(data))
        ['constraints', 'loss']
    """

    def __init__(
        self,
        learner: AbstractLearner,
        problem: AbstractProblem,
        *,
        horizon: int,
        key=0,
        compiler_options: Mapping[str, Any] | None = None,
    ):
        horizon = _checks.horizon(horizon, "horizon")
        check_compatible(learner, problem)
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

    @property
    def state(self) -> Any:
        """The learner's current state."""
        return self._carry[0]

    def decide(self) -> np.ndarray:
        """The decision to play this round (the same until ``observe`` is called)."""
        if self._x is None:
            self._x = np.asarray(self._carry[2])
        return self._x

    def observe(self, data: Any) -> dict[str, np.ndarray]:
        """Absorb this round's data; returns the loss and constraint values at the played point."""
        data = self._checked(data, ())
        self._carry, report = self._round((self.learner, self.problem, data), self._carry)
        return {name: values[0] for name, values in self._advance(np.asarray(report)[None]).items()}

    def observe_many(self, datas: Any) -> dict[str, np.ndarray]:
        """Absorb a burst of n rounds at once, in one compiled scan; the same numbers as n ``observe`` calls.

        Args:
            datas: the n rounds' data, each leaf of ``round_data``'s format stacked on a leading axis of n.

        Returns:
            ``{"loss": (n,), "constraints": (n, N)}``, the values at the decisions played in those rounds.
        """
        n = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in jax.tree.leaves(datas)}
        if len(n) != 1 or None in n:
            raise ValueError(f"datas must stack every leaf of the round data on one leading axis, got {datas!r}")
        datas = self._checked(datas, (n.pop(),))
        self._carry, reports = self._burst((self.learner, self.problem, datas), self._carry)
        return self._advance(np.asarray(reports))

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
            out.append(jnp.asarray(leaf, dtype))
        return jax.tree.unflatten(want_def, out)


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
    """:func:`_play` over a burst of rounds (``game``'s data stacked on a leading axis), in one ``lax.scan``."""
    learner, problem, datas = game
    return jax.lax.scan(lambda c, data: _play((learner, problem, data), c), carry, datas)


@functools.cache
def _programs(compiler_options: Options) -> tuple[Any, Any, Any]:
    """The round, the burst (each donating the carry, its second argument) and the start, with ``compiler_options``."""
    jit = functools.partial(eqx.filter_jit, compiler_options=dict(compiler_options) or None)
    return jit(_play, donate="all-except-first"), jit(_play_many, donate="all-except-first"), jit(_start)

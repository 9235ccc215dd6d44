"""Blocked projection-free OGD with a linear optimisation oracle (LOO): Garber and Kretzu 2022 and 2024.

The building blocks (spec ``baselines.md`` §1, read in the paper, tag [P]):

* :func:`separating_hyperplane_fw` (SH-FW, Algorithm 2): Frank-Wolfe on ``1/2 ||x - y||^2`` from a
  feasible start, stopped by the gap ``<x - y, x - v> <= eps`` or by ``||x - y||^2 <= 3 eps``; it runs
  through the shared :func:`ocokit.algorithms._fw.inner_frank_wolfe` with the set's warm-started LMO.
* :func:`close_infeasible_projection` (Algorithm 3): SH-FW calls and pull steps ``y <- y - gamma (y - x)``
  until ``||x - y||^2 <= 3 eps``; returns ``(x, y)`` with ``x`` in K and ``y`` an infeasible projection.
* The blocked chain of Algorithms 4 and 9: gradients are summed over a block of ``K_b`` rounds, one
  close infeasible projection per block; the paper pipelines it (the projection of block m's point is
  played in block m + 2); ``pipelined=False`` plays it in block m + 1.

Learners: :class:`LOOBOGD` (Alg. 4, full information) and :class:`LOOBBGD` (Alg. 9, bandit). The
*reconstructed* constrained versions :class:`~ocokit.algorithms.LPM` and :class:`~ocokit.algorithms.LBPM`
(G&K 2024, Algs. 4 and 5) run the same chain and are in :mod:`ocokit.algorithms._lpm`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, ProblemInfo, hyperparameter
from ocokit.algorithms._fw import inner_frank_wolfe
from ocokit.feedback import BANDIT, FULL_INFORMATION, FeedbackKind, sample_unit_sphere
from ocokit.sets import AbstractSet


def _sq(a: Array) -> Array:
    return jnp.vdot(a.ravel(), a.ravel()).real


def _optional_leaf() -> Any:
    """A numeric field that may be ``None`` (a default computed from other parameters or from K)."""
    return eqx.field(default=None, converter=lambda v: v if v is None else jnp.asarray(v))


def _int_leaf(value: Any) -> Array:
    """An integer hyperparameter (the block size) as an int32 leaf; a non-integer raises ``ValueError``."""
    arr = jnp.asarray(value)
    if not isinstance(value, jax.core.Tracer) and not jnp.issubdtype(arr.dtype, jnp.integer):
        if not bool(jnp.all(arr == jnp.round(arr))):
            raise ValueError(f"block_size must be an integer >= 1, got {value}")
    return arr.astype(jnp.int32)


# --------------------------------------------------------------------------------------------------
# Algorithms 2 and 3 of G&K 2022.


def separating_hyperplane_fw(
    domain: AbstractSet, y: Array, x1: Array, lmo_state: Any, *, eps: Any, max_iter: int, active: Any = True
) -> tuple[Array, Any, Int[Array, ""]]:
    """SH-FW (G&K 2022, Algorithm 2; spec ``baselines.md`` §1.3): FW on ``1/2 ||x - y||^2`` from ``x1 in K``.

    Iteration i: ``v_i = LOO(x_i - y)``; stop with ``x_i`` if ``<x_i - y, x_i - v_i> <= eps`` or
    ``||x_i - y||^2 <= 3 eps``; else ``x_{i+1} = x_i + sigma_i (v_i - x_i)`` with the exact line search
    ``sigma_i = clip(<y - x_i, v_i - x_i> / ||v_i - x_i||^2, 0, 1)``. Lemma 6: at most
    ``ceil(27 R^2/eps - 2)`` iterations; the output satisfies ``||x - y||^2 <= ||x1 - y||^2`` and either
    ``||x - y||^2 <= 3 eps`` or ``(y - z)^T (y - x) > 2 eps`` for all z in K. ``active=False``: returns
    ``x1`` with no call (see :func:`~ocokit.algorithms._fw.inner_frank_wolfe`).

    Returns:
        ``(x, lmo_state, loo_calls)``.
    """
    thr = 3.0 * eps
    x, lmo_state, calls, _ = inner_frank_wolfe(
        domain,
        lambda x: x - y,
        x1,
        lmo_state,
        beta=1.0,
        gap_tol=eps,
        max_iter=max_iter,
        stop=lambda x: _sq(x - y) <= thr,
        active=active,
    )
    return x, lmo_state, calls


def close_infeasible_projection(
    domain: AbstractSet,
    x0: Array,
    y0: Array,
    lmo_state: Any,
    *,
    eps: Any,
    radius: Any,
    max_outer: int,
    max_fw: int,
    active: Any = True,
) -> tuple[Array, Array, Any, Int[Array, ""]]:
    """Close infeasible projection via a LOO (G&K 2022, Algorithm 3; spec ``baselines.md`` §1.4).

    ``y_1 = c + (y0 - c) / max(1, ||y0 - c|| / R)`` (projection onto the ball ``B(c, R)`` that contains
    K, with ``c = K.center()``); return ``(x0, y_1)`` if ``||x0 - y0||^2 <= 3 eps``; else repeat
    ``x_i = SH-FW(K, eps, x_{i-1}, y_i)`` and, while ``||x_i - y_i||^2 > 3 eps``, pull
    ``y_{i+1} = y_i - gamma (y_i - x_i)`` with ``gamma = 2 eps / ||x0 - y0||^2`` (Lemma 7). Lemma 7: the
    output has ``x in K``, ``||x - y||^2 <= 3 eps`` and ``||y - z||^2 <= ||y0 - z||^2`` for every z in K.

    Args:
        domain: the set K.
        x0: a feasible warm start.
        y0: the point to project.
        lmo_state: the set's warm-start LMO state.
        eps: the tolerance epsilon > 0.
        radius: R with K inside ``B(K.center(), R)``.
        max_outer, max_fw: safety caps on the outer loop and on each SH-FW run (static).
        active: when false the call is a no-op returning ``(x0, y0)`` with zero LOO calls (lets a blocked
            learner call it every round under ``vmap`` without ``lax.cond`` running both branches).

    Returns:
        ``(x, y, lmo_state, loo_calls)``.
    """
    c = domain.center().astype(y0.dtype)
    dist = jnp.sqrt(_sq(y0 - c))
    y1 = c + (y0 - c) / jnp.maximum(1.0, dist / radius)
    d0 = _sq(x0 - y0)
    thr = 3.0 * eps
    gamma = 2.0 * eps / jnp.where(d0 > 0, d0, 1.0)
    active = jnp.asarray(active)
    done0 = (d0 <= thr) | ~active

    def cond(carry):
        _, _, _, _, iters, done = carry
        return (~done) & (iters < max_outer)

    def body(carry):
        x, y, state, calls, iters, done = carry
        live = ~done & (iters < max_outer)  # false only under vmap, for a member that has stopped
        x_new, state, k = separating_hyperplane_fw(domain, y, x, state, eps=eps, max_iter=max_fw, active=live)
        far = _sq(x_new - y) > thr
        y_new = jnp.where(far, y - gamma * (y - x_new), y)
        return x_new, y_new, state, calls + k, iters + 1, ~far

    zero = jnp.asarray(0, jnp.int32)
    x, y, lmo_state, calls, _, _ = jax.lax.while_loop(cond, body, (x0, y1, lmo_state, zero, zero, done0))
    y = jnp.where(active, y, y0)
    return x, y, lmo_state, calls


# --------------------------------------------------------------------------------------------------
# The blocked chain shared by the four learners.


class _Block(eqx.Module):
    """The blocked OGD-without-feasibility chains of Algorithms 4 and 9 (and of the reconstructions)."""

    x: Float[Array, "..."]  # x_{m-1}: the feasible point played in the current block m
    x_next: Float[Array, "..."]  # x_m, already projected, played in block m + 1 (pipelined only)
    y: Float[Array, "..."]  # y_t: the running infeasible iterate of the current chain
    y_next: Float[Array, "..."]  # y~_m: the start of the next block's chain (pipelined only)
    t: Int[Array, ""]  # rounds absorbed so far
    lmo_state: Any  # the set's warm-start LMO state
    oracle_calls: Int[Array, ""]  # LOO calls made by the last update (0 inside a block)


def _block_init(domain: AbstractSet, dtype: Any) -> _Block:
    x0 = domain.center().astype(dtype)  # x_0 = x_1 = y~_0 = y~_1: the centre of K
    zero = jnp.asarray(0, jnp.int32)
    return _Block(x=x0, x_next=x0, y=x0, y_next=x0, t=zero, lmo_state=domain.lmo_init(), oracle_calls=zero)


def _block_step(lrn: Any, block: _Block, grad: Array, domain: AbstractSet, eps: Any) -> tuple[_Block, Array]:
    """``y_{t+1} = y_t - eta grad_t``; at a block's end, one close infeasible projection.

    ``lrn`` gives ``eta``, ``block_size``, ``radius``, ``pipelined`` and the safety caps ``max_outer_iter`` and
    ``max_fw_iter``; ``eps`` is the tolerance of Algorithm 3.

    Returns:
        ``(block, end)`` with ``end`` true when round t closed a block.
    """
    eta, radius = lrn.eta, _radius(lrn.radius, domain)
    dtype = block.x.dtype
    y = (block.y - eta * grad).astype(dtype)
    t = block.t + 1
    end = (t % lrn.block_size) == 0
    xp, yp, lmo_state, calls = close_infeasible_projection(
        domain,
        block.x,
        y,
        block.lmo_state,
        eps=eps,
        radius=radius,
        max_outer=lrn.max_outer_iter,
        max_fw=lrn.max_fw_iter,
        active=end,
    )
    xp, yp = xp.astype(dtype), yp.astype(dtype)
    if lrn.pipelined:  # Alg. 4: x_{m+1} (from block m) is played in block m + 2; block m + 1 plays x_m
        new = _Block(
            x=jnp.where(end, block.x_next, block.x),
            x_next=jnp.where(end, xp, block.x_next),
            y=jnp.where(end, block.y_next, y),
            y_next=jnp.where(end, yp, block.y_next),
            t=t,
            lmo_state=lmo_state,
            oracle_calls=calls,
        )
    else:  # the projection of block m is played in block m + 1
        x = jnp.where(end, xp, block.x)
        y = jnp.where(end, yp, y)
        new = _Block(x=x, x_next=x, y=y, y_next=y, t=t, lmo_state=lmo_state, oracle_calls=calls)
    return new, end


def _radius(radius: Any, domain: AbstractSet) -> Any:
    """R with K inside ``B(center, R)``: the given one, else the diameter (valid since the centre is in K)."""
    return domain.diameter if radius is None else radius


def _blocks_theory(T: int, factor: float) -> int:
    return int(min(T, max(1, math.floor(factor * math.sqrt(T)))))


def _constant(info: ProblemInfo, name: str, who: str) -> float:
    value = float(getattr(info.constants, name))
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{who}.from_theory needs the problem constant {name} (> 0), got {value}")
    return value


def _full_info_theory(
    info: ProblemInfo, who: str, radius: Any, eta_c: float, eps_c: float, block_c: float
) -> dict[str, Any]:
    """Theorem 9 of G&K 2022 with its constants as arguments: ``eta``, ``eps``, ``K_b`` and ``R``."""
    for name, v in (("eta_constant", eta_c), ("eps_constant", eps_c), ("block_constant", block_c)):
        _checks.positive(name, v)
    T = info.horizon
    G = _constant(info, "grad_bound", who)
    R = float(_radius(radius, info.domain))
    return {
        "eta": eta_c * R / G * T**-0.75,
        "eps": eps_c * R**2 / math.sqrt(T),
        "block_size": _blocks_theory(T, block_c),
        "radius": R,
    }


def _bandit_theory(
    info: ProblemInfo, radius: Any, c: Any, eta_c: float, block_c: float | None, M: float
) -> dict[str, Any]:
    """Theorem 11 of G&K 2022 with its constants as arguments: ``eta``, ``delta``, ``K_b`` and ``R``."""
    T = info.horizon
    n = math.prod(info.domain.shape)
    R = float(_radius(radius, info.domain))
    r = float(info.domain.inner_radius)
    c = 20.0 * R * math.sqrt(n * M) if c is None else c
    block_c = 6.0 * n * M if block_c is None else block_c
    for name, v in (("c", c), ("eta_constant", eta_c), ("block_constant", block_c)):
        _checks.positive(name, v)
    return {
        "eta": eta_c * R / math.sqrt(n * M) * T**-0.75,
        "delta": min(c * T**-0.25, r / 2),
        "block_size": _blocks_theory(T, block_c),
        "radius": R,
    }


def _check_common(lrn: Any) -> None:
    """Validate the chain's fields; a bandit learner's ``delta`` and ``eps`` (optional there: ``delta^2 / 3``)."""
    _checks.positive("eta", lrn.eta)
    _checks.positive("block_size", lrn.block_size)
    if lrn.radius is not None:
        _checks.positive("radius", lrn.radius)
    _checks.positive_int("max_outer_iter", lrn.max_outer_iter)
    _checks.positive_int("max_fw_iter", lrn.max_fw_iter)
    bandit = lrn.feedback is BANDIT
    if bandit:
        _checks.positive("delta", lrn.delta)
    if not bandit or lrn.eps is not None:
        _checks.positive("eps", lrn.eps)


# --------------------------------------------------------------------------------------------------
# LOO-BOGD and LOO-BBGD (verified, [P]).


class _LOOBOGDState(eqx.Module):
    block: _Block
    domain: AbstractSet  # K, from the learner's info


class LOOBOGD(AbstractLearner):
    """LOO-BOGD: blocked online gradient descent with a linear optimisation oracle (G&K 2022, Algorithm 4).

    Update (rounds t of block m play the same feasible ``x_{m-1}``)::

        y_{t+1} = y_t - eta grad f_t(x_{m-1})                                  (every round)
        (x_{m+1}, y~_{m+1}) = Alg3(K, x_{m-1}, y_{mK_b+1}, eps);  y_{mK_b+1} <- y~_m  (end of block m)

    so block m + 1 plays ``x_m`` and ``x_{m+1}`` waits a block (the paper's pipelining: the projection
    "runs in parallel" with the next block). Algorithm 3 (:func:`close_infeasible_projection`) calls
    SH-FW, one LOO call per FW iteration. Starts at ``x_0 = x_1 = K.center()``.

    Source: G&K 2022 (COLT, PMLR 178), Algorithms 2-4; spec ``baselines.md`` §1.3-§1.5, read in the paper
    [P]. Guarantee (Theorem 9): with ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``,
    ``K_b = 5 T^{1/2}``, the adaptive regret on every interval is ``<= 20 G_f R (T^{1/2} + T^{3/4})`` and
    the total number of LOO calls is ``<= T``. Assumes ``K`` inside ``R B`` and ``||grad f_t|| <= G_f``
    on ``R B``.

    Args:
        eta: step size eta > 0.
        eps: tolerance epsilon > 0 of Algorithms 2-3.
        block_size: block length ``K_b``, an integer >= 1 (an int32 leaf, so grids of it vmap).
        radius: R > 0 with K inside ``B(K.center(), R)``; default ``None`` uses ``K.diameter`` (always valid).
        pipelined: ``True`` (default, the paper's Algorithm 4) or ``False``: play the projection of block m
            in block m + 1 (inferred in the spec to keep the guarantees up to constants).
        max_outer_iter, max_fw_iter: safety caps on Algorithm 3's loop and on each SH-FW run (static).

    Readings: ``x_0 = x_1 = K.center()``; the ball of Algorithm 3's first line is centred at ``K.center()``
    (the paper assumes ``0 in K`` and centres it at 0); ``||y_0||`` in that line is read as the input's norm.

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = LOOBOGD(eta=0.01, eps=0.1, block_size=4)
        >>> ocokit.run(learner, problem, T=20).loss.shape
        (20,)

    References:
        D. Garber and B. Kretzu. New projection-free algorithms for online convex optimization with adaptive
        regret guarantees. COLT 2022 (PMLR 178).
    """

    eta: Float[Array, ""] = hyperparameter()
    eps: Float[Array, ""] = hyperparameter()
    block_size: Int[Array, ""] = eqx.field(converter=_int_leaf)
    radius: Float[Array, ""] | None = _optional_leaf()
    pipelined: bool = eqx.field(static=True, default=True)
    max_outer_iter: int = eqx.field(static=True, default=1000)
    max_fw_iter: int = eqx.field(static=True, default=1000)
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _check_common(self)

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        radius: float | None = None,
        pipelined: bool = True,
        eta_constant: float = 1.0,
        eps_constant: float = 60.0,
        block_constant: float = 5.0,
    ) -> LOOBOGD:
        """Theorem 9: ``eta = (R/G_f) T^{-3/4}``, ``eps = 60 R^2 T^{-1/2}``, ``K_b = floor(5 T^{1/2})``.

        ``K_b`` is clipped to [1, T]; ``G_f`` is the problem constant ``grad_bound``; ``R`` defaults to
        ``K.diameter``. The constants 1, 60 and 5 can be changed (``eta_constant``, ``eps_constant``,
        ``block_constant``) keeping the exponents in T: Theorem 9's are made for the proof, and at
        ``T < 10^4`` its tolerance ``3 eps`` exceeds ``R^2``, so the played point barely moves.
        """
        return cls(
            pipelined=pipelined,
            **_full_info_theory(info, cls.__name__, radius, eta_constant, eps_constant, block_constant),
        )

    def init(self, info, key):
        del key
        return _LOOBOGDState(block=_block_init(info.domain, info.domain.center().dtype), domain=info.domain)

    def decide(self, state):
        return state.block.x

    def update(self, state, x, feedback):
        block, _ = _block_step(self, state.block, feedback.grad(x), state.domain, self.eps)
        return _LOOBOGDState(block=block, domain=state.domain)

    def diagnostics(self, state):
        return {"oracle_calls": state.block.oracle_calls}


class _BanditState(eqx.Module):
    block: _Block
    domain: AbstractSet  # K_{delta/r} = center + (1 - delta/r)(K - center)
    delta: Float[Array, ""]  # the smoothing radius actually used
    key: PRNGKeyArray
    u: Float[Array, "..."]  # u_t, uniform on the unit sphere, drawn before round t


def _bandit_init(domain: AbstractSet, delta: Any, key: Any) -> _BanditState:
    dtype = domain.center().dtype
    shrunk = domain.scaled(1.0 - delta / domain.inner_radius)
    key, sub = jax.random.split(key)
    return _BanditState(
        block=_block_init(shrunk, dtype),
        domain=shrunk,
        delta=jnp.asarray(delta, dtype),
        key=key,
        u=sample_unit_sphere(sub, domain.shape, dtype),
    )


def _bandit_play(state: _BanditState) -> Array:
    """The played point ``z_t = x_{m-1} + delta u_t`` (inside K since ``x_{m-1}`` is in the shrunk set)."""
    return state.block.x + state.delta * state.u


def _bandit_step(lrn: Any, state: _BanditState, value: Array) -> tuple[_BanditState, Array]:
    """One bandit round of the chain: the one-point estimate ``(n/delta) value u_t`` (Flaxman et al.) is the
    gradient of :func:`_block_step` over the shrunk set (``eps = delta^2 / 3`` unless ``lrn.eps`` is given),
    then ``u_{t+1}`` is drawn.

    Returns:
        ``(state, end)`` with ``end`` true when round t closed a block.
    """
    grad = (state.u.size / state.delta) * value * state.u
    eps = state.delta**2 / 3.0 if lrn.eps is None else lrn.eps
    block, end = _block_step(lrn, state.block, grad, state.domain, eps)
    key, sub = jax.random.split(state.key)
    u = sample_unit_sphere(sub, state.u.shape, state.u.dtype)
    return _BanditState(block=block, domain=state.domain, delta=state.delta, key=key, u=u), end


class LOOBBGD(AbstractLearner):
    """LOO-BBGD: blocked bandit gradient descent with a LOO (G&K 2022, Algorithm 9).

    Update (block m, round t; ``u_t`` uniform on the unit sphere S^{n-1})::

        play z_t = x_{m-1} + delta u_t;  observe f_t(z_t)
        g_t = (n / delta) f_t(z_t) u_t;  y_{t+1} = y_t - eta g_t
        end of block: (x_{m+1}, y~_{m+1}) = Alg3(K_{delta/r}, x_{m-1}, y_{mK_b+1}, eps = delta^2 / 3)

    with ``K_{delta/r} = c + (1 - delta/r)(K - c)``, ``c = K.center()`` and ``r = K.inner_radius``, so every
    ``z_t`` lies in K. Pipelined as :class:`LOOBOGD`.

    Source: G&K 2022, Algorithm 9; spec ``baselines.md`` §1.6 [P]. Guarantee (Theorem 11): with
    ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}``, ``delta = c T^{-1/4}`` (``c T^{-1/4} < r``), the
    expected adaptive regret is ``O(T^{3/4})`` and the expected number of LOO calls is ``O(T)``.

    Args:
        eta: step size > 0.
        delta: smoothing radius, ``0 < delta < r`` (r = the inner radius of K; checked by ``from_theory``).
        block_size: ``K_b``, an integer >= 1.
        eps: tolerance of Algorithm 3; default ``None`` uses Algorithm 9's ``delta^2 / 3``.
        radius, pipelined, max_outer_iter, max_fw_iter: as in :class:`LOOBOGD`.

    Readings: the "play" line of Algorithm 9 prints ``x~_{m-1}``; the only feasible points are ``x_{m-1}``, so
    ``z_t = x_{m-1} + delta u_t`` (inferred, spec §1.6). The LOO of the shrunk set is the set's own
    (``K.scaled``). Theorem 11's ``K_b`` exceeds T at practical sizes and is clipped to [1, T].

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.TimeVaryingRegression(dim=3)
        >>> learner = LOOBBGD(eta=0.001, delta=0.5, block_size=4)
        >>> ocokit.run(learner, problem, T=20).loss.shape
        (20,)

    References:
        D. Garber and B. Kretzu. New projection-free algorithms for online convex optimization with adaptive
        regret guarantees. COLT 2022 (PMLR 178).
    """

    eta: Float[Array, ""] = hyperparameter()
    delta: Float[Array, ""] = hyperparameter()
    block_size: Int[Array, ""] = eqx.field(converter=_int_leaf)
    eps: Float[Array, ""] | None = _optional_leaf()
    radius: Float[Array, ""] | None = _optional_leaf()
    pipelined: bool = eqx.field(static=True, default=True)
    max_outer_iter: int = eqx.field(static=True, default=1000)
    max_fw_iter: int = eqx.field(static=True, default=1000)
    feedback: ClassVar[FeedbackKind] = BANDIT

    def __check_init__(self):
        _check_common(self)

    @classmethod
    def from_theory(
        cls,
        info: ProblemInfo,
        *,
        c: float | None = None,
        radius: float | None = None,
        pipelined: bool = True,
        eta_constant: float = 1.0,
        block_constant: float | None = None,
    ) -> LOOBBGD:
        """Theorem 11: ``eta = (R/sqrt(nM)) T^{-3/4}``, ``K_b = 6 n M T^{1/2}``, ``delta = c T^{-1/4}``.

        ``M`` is the problem constant ``loss_bound``, ``n`` the dimension, ``R`` defaults to ``K.diameter``,
        ``c`` to Theorem 11's ``20 R sqrt(nM)``. ``delta`` is capped at ``r/2`` (the theorem needs
        ``c T^{-1/4} < r``; at practical T its constants violate this) and ``K_b`` is clipped to [1, T].
        ``eta_constant`` (1) and ``block_constant`` (``6 n M``) rescale ``eta`` and ``K_b``.
        """
        M = _constant(info, "loss_bound", cls.__name__)
        return cls(pipelined=pipelined, **_bandit_theory(info, radius, c, eta_constant, block_constant, M))

    def init(self, info, key):
        return _bandit_init(info.domain, self.delta, key)

    def decide(self, state):
        return _bandit_play(state)

    def update(self, state, x, feedback):
        del x
        state, _ = _bandit_step(self, state, feedback.loss)
        return state

    def diagnostics(self, state):
        return {"oracle_calls": state.block.oracle_calls}

"""Problems with memory and a prediction oracle (paper 002): quadratic costs of the last h decisions.

The cost of round t depends on the window ``x_{t-h+1:t}`` of the last h decisions (the engine passes it,
oldest first, with shape ``(h, d)``), histories before round 1 are a fixed initial condition
(``initial_history``), and a model ``l_k`` of each round's cost (``prediction``) is what a simulator returns
to a learner with ``PREDICTIONS`` feedback ([`ocokit.feedback.Predictions`][ocokit.feedback.Predictions]). The offline
optimum of the
whole horizon is computed once per run, so the engine's dynamic regret is exactly paper 002's eq. (3).

Reference: L. Ye, Z. Wang, Z.-W. Liu, M. Chi, X. Wang, H. Su, "Online Convex Optimization with Memory and Limited
Predictions", arXiv:2410.23574 (v1), 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray

from ocokit import _checks
from ocokit.problems._base import AbstractProblem, ProblemConstants
from ocokit.sets import AbstractSet

_MODEL_ERRORS = ("oscillating", "constant")
_DENSE_LIMIT = 4096  # free variables up to which the unconstrained optimum is a dense direct solve


def _haar_orthogonal(key: PRNGKeyArray, n: int, dtype: Any) -> Array:
    """A Haar-distributed orthogonal ``n x n`` matrix: Gram-Schmidt (twice) on a Gaussian matrix's columns.

    Equals the Q factor of a QR with a positive diagonal of R (the Haar recipe), written with matrix
    products only so that it compiles small inside every round's data.
    """
    G = jax.random.normal(key, (n, n), dtype=dtype)
    Q = jnp.zeros((n, n), dtype)
    for i in range(n):
        v = G[:, i]
        v = v - Q @ (Q.T @ v)
        v = v - Q @ (Q.T @ v)
        Q = Q.at[:, i].set(v / jnp.linalg.norm(v))
    return Q


def random_quadratic(key: PRNGKeyArray, n: int, mu: float, beta: float, b_scale: float) -> tuple[Array, Array]:
    """``(A, B)``: ``A = Q diag(lam) Q^T`` with Q Haar-orthogonal ``n x n`` and ``lam_i ~ U[mu, beta]``,
    ``B_i ~ U[-b_scale, b_scale]`` (ocokit's reading of Ye et al.'s unspecified generator, Sec. 5)."""
    dtype = jnp.result_type(float)
    q = _haar_orthogonal(key, n, dtype)
    v = jax.random.uniform(jax.random.fold_in(key, 1), (2 * n,), dtype=dtype)  # one draw: few RNG ops to compile
    lam = mu + (beta - mu) * v[:n]
    A = (q * lam[None, :]) @ q.T
    B = b_scale * (2.0 * v[n:] - 1.0)
    return 0.5 * (A + A.T), B


class QuadraticWithMemory(AbstractProblem):
    """Online quadratic costs with memory h and a prediction model (Ye et al., Sec. 5, Assumption 3).

    Cost of round t, with ``w = vec(x_{t-h+1}, ..., x_t)`` in ``R^{hd}`` and ``x_t = x0`` for ``t <= 0``::

        f_t(x_{t-h+1:t}) = 1/2 w^T A_t w + B_t^T w,        C_T(x) = sum_{t=1}^T f_t(x_{t-h+1:t})   (eq. 1)

    ``(A_t, B_t)`` come from ``sampler(key_t, t)`` with ``key_t = fold_in(env_key, t)``; the default is
    `random_quadratic` (``A_t`` with eigenvalues uniform in ``[mu, beta]``, so every f_t is
    ``beta``-smooth and ``mu``-strongly convex on ``R^{hd}``: Assumption 1(a, b); ``B_t`` uniform in
    ``[-b_scale, b_scale]^{hd}``). The paper (Sec. 5) only says "randomly generate positive definite A_t and
    B_t" (B_t is a vector); this generator is ocokit's reading, with ``[mu, beta] = [5, 10]`` consistent with
    the paper's ``eta_t = 1/(t mu)`` and ``alpha = 1/(beta h)``.

    Comparator: the offline optimum ``x* = argmin_{x in X^T} C_T(x)`` (eq. 2), with the same fixed history,
    is computed once per run in ``episode`` (a dense direct solve for the unconstrained optimum when
    ``T d <= 4096``, then projected gradient on ``X^T`` with step ``1 / L`` until the step is below
    ``solver_tol``).
    ``round_optimum`` returns its window ``x*_{t-h+1:t}``, so the engine's dynamic regret is
    ``R = C_T(x) - C_T(x*)`` (eq. 3) exactly, not a sum of per-round minima.

    Prediction model (Assumption 3, ``|l_k - f_k| <= phi``): ``l_k(w) = f_k(w) + phi e_k(w)`` with
    ``e_k(w) = sin(error_frequency <c_k, w> + b_k)`` with a random unit ``c_k`` and phase ``b_k``
    (``model_error="oscillating"``: bounded, differs between
    query points, so it does not cancel in two-point differences) or ``e_k = s_k`` in ``[-1, 1]``
    (``"constant"``: one offset per round, which cancels). ``phi = 0`` (the paper's experiments) gives
    ``l_k = f_k``.

    Args:
        domain: the decision set X (shape ``(d,)``).
        memory: the memory length h >= 1 (static).
        x0: the initial condition ``x0`` in X (history before round 1); default ``domain.center()``.
        mu, beta: eigenvalue range of the default generator, ``0 < mu <= beta``.
        b_scale: half-width of the linear terms' range, >= 0.
        sampler: optional ``sampler(key, t) -> (A, B)`` with ``A`` of shape ``(hd, hd)`` symmetric positive
            definite and ``B`` of shape ``(hd,)``; replaces the default generator.
        constants: known constants when ``sampler`` is given (default: ``mu``/``beta`` of the generator).
        phi: model-error bound, >= 0. model_error: ``"oscillating"`` or ``"constant"``.
        error_frequency: frequency of the oscillating error, > 0.
        prediction_window: the window W of rounds a simulator predicts (``None``: no limit), >= 1.
        strict_window: answer rounds ``now .. now + W - 1`` (the paper's stated window) instead of
            ``now .. now + W`` (what Algorithm 1's pseudo-code queries for layer 0: ``l_k`` up to
            ``k = t + K(h - 1)``, which is ``t + W`` whenever ``(h - 1)`` divides W).
        solver_tol: stopping tolerance of the offline solver (relative step length), > 0.
        solver_max_iter: cap on the offline solver's iterations (static).

    Example:
        >>> import jax, ocokit
        >>> problem = QuadraticWithMemory(ocokit.sets.Box(-5.0, 5.0, dim=1), memory=2, x0=0.5)
        >>> episode = problem.episode(jax.random.PRNGKey(0), 20)
        >>> episode["x_star"].shape, problem.memory()
        ((20, 1), 2)
    """

    domain: AbstractSet
    x0: Array
    h: int = eqx.field(static=True)
    mu: float = eqx.field(static=True)
    beta: float = eqx.field(static=True)
    b_scale: float = eqx.field(static=True)
    sampler: Callable[[Any, Any], tuple[Array, Array]] | None = eqx.field(static=True)
    known_constants: ProblemConstants | None
    phi: float = eqx.field(static=True)
    model_error: str = eqx.field(static=True)
    error_frequency: float = eqx.field(static=True)
    prediction_window: int | None = eqx.field(static=True)
    strict_window: bool = eqx.field(static=True)
    solver_tol: float = eqx.field(static=True)
    solver_max_iter: int = eqx.field(static=True)

    def __init__(
        self,
        domain: AbstractSet,
        memory: int = 2,
        x0: Any = None,
        *,
        mu: float = 5.0,
        beta: float = 10.0,
        b_scale: float = 1.0,
        sampler: Callable[[Any, Any], tuple[Array, Array]] | None = None,
        constants: ProblemConstants | None = None,
        phi: float = 0.0,
        model_error: str = "oscillating",
        error_frequency: float = 50.0,
        prediction_window: int | None = None,
        strict_window: bool = False,
        solver_tol: float = 1e-12,
        solver_max_iter: int = 20000,
    ):
        if not isinstance(domain, AbstractSet):
            raise ValueError(f"domain must be an ocokit set (ocokit.sets), got {type(domain).__name__}")
        if len(domain.shape) != 1:
            raise ValueError(f"domain must hold vectors (shape (d,)), got shape {domain.shape}")
        _checks.positive_int("memory", memory)
        _checks.positive("mu", mu)
        _checks.positive("beta", beta)
        if beta < mu:
            raise ValueError(f"beta must be >= mu = {mu}, got {beta}")
        _checks.nonnegative("b_scale", b_scale)
        _checks.nonnegative("phi", phi)
        _checks.one_of("model_error", model_error, _MODEL_ERRORS)
        _checks.positive("error_frequency", error_frequency)
        if prediction_window is not None:
            _checks.positive_int("prediction_window", prediction_window)
        if sampler is not None and not callable(sampler):
            raise ValueError("sampler must be a callable (key, t) -> (A, B)")
        _checks.positive("solver_tol", solver_tol)
        _checks.positive_int("solver_max_iter", solver_max_iter)
        x0 = domain.center() if x0 is None else jnp.broadcast_to(jnp.asarray(x0, jnp.result_type(float)), domain.shape)
        if not bool(domain.contains(x0, atol=1e-9)):
            raise ValueError(f"x0 must lie in the domain, got {x0}")
        self.domain, self.x0, self.h = domain, x0, int(memory)
        self.mu, self.beta, self.b_scale, self.sampler = float(mu), float(beta), float(b_scale), sampler
        self.known_constants = constants
        self.phi, self.model_error, self.error_frequency = float(phi), model_error, float(error_frequency)
        self.prediction_window, self.strict_window = prediction_window, bool(strict_window)
        self.solver_tol, self.solver_max_iter = float(solver_tol), int(solver_max_iter)
        n = self.h * self.dim
        A, B = jax.eval_shape(self._sample, jax.random.PRNGKey(0), jnp.asarray(1, jnp.int32))
        if A.shape != (n, n) or B.shape != (n,):
            raise ValueError(f"sampler must return A of shape {(n, n)} and B of shape {(n,)}, got {A.shape}, {B.shape}")

    @property
    def dim(self) -> int:
        """The decision dimension d."""
        return self.domain.shape[0]

    num_constraints: ClassVar[int] = 0

    def memory(self) -> int:
        return self.h

    def initial_history(self) -> Array:
        """The fixed decisions ``x_{2-h}, ..., x_0`` (all equal to ``x0``), shape ``(h - 1, d)``."""
        return jnp.broadcast_to(self.x0, (self.h - 1, self.dim))

    def constants(self) -> ProblemConstants:
        if self.known_constants is not None:
            return self.known_constants
        if self.sampler is not None:
            return ProblemConstants()
        return ProblemConstants(strong_convexity=self.mu, smoothness=self.beta)

    # ------------------------------------------------------------------ data
    def _sample(self, key: PRNGKeyArray, t: Array) -> tuple[Array, Array]:
        if self.sampler is not None:
            A, B = self.sampler(key, t)
            return jnp.asarray(A), jnp.asarray(B)
        return random_quadratic(key, self.h * self.dim, self.mu, self.beta, self.b_scale)

    def episode(self, key: PRNGKeyArray, T: int) -> dict[str, Array]:
        """The offline optimum ``x*`` (eq. 2) of this run's T rounds, and its history-padded copy."""
        ts = jnp.arange(1, T + 1, dtype=jnp.int32)
        A, B = jax.vmap(lambda t: self._sample(jax.random.fold_in(key, t), t))(ts)
        x_star = self.offline_optimum(A, B)
        return {"x_star": x_star, "padded": jnp.concatenate([self.initial_history(), x_star], axis=0)}

    def round_data(self, episode: Any, key: PRNGKeyArray, t: Array) -> dict[str, Array]:
        A, B = self._sample(key, t)
        if episode is None:  # no offline optimum available (e.g. a bare oracle in a shape check)
            window = jnp.full((self.h, self.dim), jnp.nan, dtype=B.dtype)
        else:
            start = jnp.clip(t - 1, 0, episode["padded"].shape[0] - self.h)
            window = jax.lax.dynamic_slice_in_dim(episode["padded"], start, self.h, axis=0)
        return {"A": A, "B": B, "x_star": window, "key": key}

    # ------------------------------------------------------------------ costs
    def loss(self, data: Any, x: Array) -> Array:
        """``f_t = 1/2 w^T A_t w + B_t^T w``, ``w = vec(x)``, x the window ``(h, d)`` (``(d,)`` if h = 1)."""
        w = jnp.reshape(x, (-1,))
        return 0.5 * w @ (data["A"] @ w) + data["B"] @ w

    def prediction_lookahead(self) -> int | None:
        """``W`` rounds past the coming one (the reach of Algorithm 1's pseudo-code), or ``W - 1``
        with ``strict_window`` (the window the paper's text and eq. (4) state); ``None``: no limit."""
        if self.prediction_window is None:
            return None
        return self.prediction_window - 1 if self.strict_window else self.prediction_window

    def prediction(self, data: Any, x: Array) -> Array:
        """The model ``l_t = f_t + phi e_t`` of Assumption 3 (``|l_t - f_t| <= phi``), at a window."""
        value = self.loss(data, x)
        if self.phi == 0.0:
            return value
        w = jnp.reshape(x, (-1,))
        ke = jax.random.fold_in(data["key"], 0x5EED)  # the error model's own stream, drawn from round t's key
        u = jax.random.uniform(ke, (w.size + 2,), dtype=w.dtype, minval=-1.0, maxval=1.0)
        if self.model_error == "constant":
            return value + self.phi * u[0]
        c = u[:-2] / jnp.linalg.norm(u[:-2])
        return value + self.phi * jnp.sin(self.error_frequency * (c @ w) + math.pi * u[-1])

    def constraints(self, data: Any, x: Array) -> Array:
        return jnp.zeros((0,), dtype=jnp.result_type(x))

    def round_optimum(self, data: Any) -> Array:
        """The window ``x*_{t-h+1:t}`` of the offline optimum (eq. 2), so dynamic regret is eq. (3)."""
        return data["x_star"] if self.h > 1 else data["x_star"][0]

    # ------------------------------------------------------------------ offline optimum
    def total_cost(self, A: Array, B: Array, xs: Array) -> Array:
        """``C_T(x)`` (eq. 1) of decisions ``xs`` ``(T, d)``; stacked ``A (T, hd, hd)``, ``B (T, hd)``."""
        T = xs.shape[0]
        padded = jnp.concatenate([self.initial_history().astype(xs.dtype), xs], axis=0)
        idx = jnp.arange(T)[:, None] + jnp.arange(self.h)[None, :]
        w = padded[idx].reshape(T, -1)
        return jnp.sum(0.5 * jnp.einsum("ti,tij,tj->t", w, A, w) + jnp.einsum("ti,ti->t", B, w))

    def offline_optimum(self, A: Array, B: Array) -> Array:
        """``argmin_{x in X^T} C_T(x)`` with the fixed history (eq. 2), shape ``(T, d)``."""
        T, d, h = A.shape[0], self.dim, self.h
        hist = self.initial_history().astype(A.dtype)
        L = h * jnp.max(jnp.linalg.norm(A, axis=(1, 2)))  # Frobenius >= spectral: a smoothness bound of C_T
        project = jax.vmap(self.domain.project)
        if T * d <= _DENSE_LIMIT:
            n_hist = (h - 1) * d
            blocks = (jnp.arange(T)[:, None] + jnp.arange(h)[None, :]) * d
            idx = (blocks[:, :, None] + jnp.arange(d)[None, None, :]).reshape(T, h * d)
            n = (T + h - 1) * d
            P = jnp.zeros((n, n), A.dtype).at[idx[:, :, None], idx[:, None, :]].add(A)
            q = jnp.zeros((n,), A.dtype).at[idx].add(B)
            P_ff, P_fh = P[n_hist:, n_hist:], P[n_hist:, :n_hist]
            rhs = q[n_hist:] + P_fh @ hist.reshape(-1)
            start = project(-jnp.linalg.solve(P_ff, rhs).reshape(T, d))
        else:
            start = jnp.broadcast_to(self.domain.project(self.x0.astype(A.dtype)), (T, d))
        grad = jax.grad(lambda xs: self.total_cost(A, B, xs))

        def cond(carry):
            _, it, step = carry
            return (it < self.solver_max_iter) & (step > self.solver_tol)

        def body(carry):
            x, it, _ = carry
            x_new = project(x - grad(x) / L)
            step = jnp.linalg.norm(x_new - x) / (1.0 + jnp.linalg.norm(x))
            return x_new, it + 1, step

        init = (start, jnp.asarray(0, jnp.int32), jnp.asarray(jnp.inf, A.dtype))
        x, _, _ = jax.lax.while_loop(cond, body, init)
        return x

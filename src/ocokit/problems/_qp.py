"""Online quadratic and linear programming with fixed linear constraints (paper 003, Section 6.2, Figs. 2-3).

Also home of `solve_qp`, the small dense convex-QP solver (primal-dual interior point) kept for what no
structure covers (the fallback of the active-set comparators, `solve_box_affine_qp`), and `polygon_qp`, the
exact planar solver of the QP and LP's comparators.

Reference: J. Wang, B. Yan and Y. Liu, "Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
Dynamics of Both Loss and Constraint", AAAI 2025 (paper 003), Section 6.2 and Appendix L.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.problems._base import AbstractProblem, ProblemConstants, all_rounds
from ocokit.sets import Box

# --------------------------------------------------------------------------------------------------
# A small dense QP solver (used by comparators and per-round subproblems; jit- and vmap-safe).


def _default_tol(dtype) -> float:
    return 1e-13 if jnp.finfo(dtype).bits == 64 else 1e-5


def solve_qp(
    P: Float[Array, "n n"],
    q: Float[Array, " n"],
    G: Float[Array, "m n"],
    h: Float[Array, " m"],
    *,
    tol: float | None = None,
    max_iter: int = 100,
) -> tuple[Float[Array, " n"], Int[Array, ""]]:
    """``argmin_x 1/2 x^T P x + q^T x`` s.t. ``G x <= h``, by a primal-dual interior-point method.

    Mehrotra's predictor-corrector on the KKT system ``P x + q + G^T z = 0``, ``G x + s = h``,
    ``s * z = 0``, ``s, z >= 0``, with the reduced Newton matrix ``P + G^T diag(z/s) G`` factored by
    Cholesky. ``P`` must be positive semidefinite and ``P + G^T G`` positive definite (true whenever the
    rows of ``G`` include a box ``-l <= x <= u``). The objective and each row of ``G`` are rescaled to unit
    size first, so tolerances are relative. A ``lax.while_loop`` stops when the scaled primal and dual
    residuals are below ``max(tol, 1e-2 sqrt(eps))`` and the duality measure ``s^T z / m`` is below
    ``tol`` (default ``1e-13`` in float64, ``1e-5`` in float32; also when ``s^T z / m < 1e-6 tol`` with
    the primal residual small, a dual residual stalled at rounding level), or after ``max_iter``
    iterations; under
    ``vmap`` every problem of the batch stops at its own iterate. The returned point is strictly interior
    (``G x < h``) up to ``tol``.

    Args:
        P: the quadratic term, shape ``(n, n)``, positive semidefinite.
        q: the linear term, shape ``(n,)``.
        G: the inequality matrix, shape ``(m, n)``.
        h: the right-hand side, shape ``(m,)``.
        tol: the stopping tolerance.
        max_iter: the iteration cap.

    Returns:
        ``(x, iterations)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from ocokit.problems._qp import solve_qp
        >>> x, _ = solve_qp(jnp.eye(2), -jnp.ones(2), jnp.concatenate([jnp.eye(2), -jnp.eye(2)]),
        ...                 jnp.array([0.5, 2.0, 0.0, 0.0]))
        >>> [round(float(v), 6) for v in x]
        [0.5, 1.0]
    """
    dtype = jnp.result_type(P, q, G, h, float)
    P, q, G, h = (jnp.asarray(a, dtype) for a in (P, q, G, h))
    n, m = q.shape[0], h.shape[0]
    tol = _default_tol(dtype) if tol is None else tol
    obj_scale = jnp.maximum(1.0, jnp.maximum(jnp.max(jnp.abs(P)), jnp.max(jnp.abs(q))))
    P, q = P / obj_scale, q / obj_scale
    row = jnp.max(jnp.abs(G), axis=1)
    row = jnp.where(row > 1e-8 * jnp.max(row), row, 1.0)  # (near-)zero rows are left unscaled
    G, h = G / row[:, None], h / row
    eye = jnp.eye(n, dtype=dtype)
    reg = 1e3 * jnp.finfo(dtype).eps

    def factor(w):
        M = P + G.T @ (w[:, None] * G)
        return jax.scipy.linalg.cho_factor(M + reg * (jnp.diag(jnp.diag(M)) + eye), lower=True)

    # Initial point (as in CVXOPT's coneqp): minimise 1/2 x'Px + q'x + 1/2 ||Gx - h||^2, then shift s, z > 0.
    x = jax.scipy.linalg.cho_solve(factor(jnp.ones(m, dtype)), -q + G.T @ h)
    s = h - G @ x
    s = s + jnp.maximum(0.0, 1.0 - jnp.min(s))
    z = jnp.ones(m, dtype)

    def residuals(x, s, z):
        rd = P @ x + q + G.T @ z
        rp = G @ x + s - h
        return rd, rp, jnp.dot(s, z) / m

    def max_step(v, dv):
        ratio = jnp.where(dv < 0, -v / jnp.where(dv < 0, dv, -1.0), jnp.inf)
        return jnp.minimum(1.0, jnp.min(ratio))

    res_tol = max(tol, 1e-2 * float(jnp.finfo(dtype).eps) ** 0.5)  # residuals floor at rounding level

    def done(x, s, z):
        rd, rp, mu = residuals(x, s, z)
        primal = jnp.max(jnp.abs(rp)) <= res_tol * (1.0 + jnp.max(jnp.abs(h)))
        converged = (jnp.max(jnp.abs(rd)) <= res_tol) & (mu <= tol)
        return primal & (converged | (mu <= 1e-6 * tol))  # the second: a stalled dual residual

    def body(carry):
        x, s, z, k = carry
        rd, rp, mu = residuals(x, s, z)
        chol = factor(z / s)

        def direction(rc):
            dx = jax.scipy.linalg.cho_solve(chol, -rd - G.T @ ((z * rp - rc) / s))
            ds = -rp - G @ dx
            dz = (-rc - z * ds) / s
            return dx, ds, dz

        _, dsa, dza = direction(s * z)
        a_aff = jnp.minimum(max_step(s, dsa), max_step(z, dza))
        mu_aff = jnp.dot(s + a_aff * dsa, z + a_aff * dza) / m
        sigma = jnp.clip(mu_aff / mu, 0.0, 1.0) ** 3
        dx, ds, dz = direction(s * z + dsa * dza - sigma * mu)
        a = 0.99 * jnp.minimum(max_step(s, ds), max_step(z, dz))
        return x + a * dx, s + a * ds, z + a * dz, k + 1

    def cond(carry):
        x, s, z, k = carry
        return (k < max_iter) & ~done(x, s, z)

    x, s, z, k = jax.lax.while_loop(cond, body, (x, s, z, jnp.asarray(0, jnp.int32)))
    return x, k


def _box_rows(lower: Array, upper: Array) -> tuple[Array, Array]:
    """``G, h`` of the box ``lower <= x <= upper``."""
    eye = jnp.eye(lower.shape[0], dtype=jnp.result_type(lower, float))
    return jnp.concatenate([eye, -eye]), jnp.concatenate([upper, -lower])


def polygon_qp(p: Array, q: Float[Array, " 2"], G: Float[Array, "m 2"], h: Float[Array, " m"]) -> Array:
    """``argmin_x p/2 ||x||^2 + q^T x`` s.t. ``G x <= h`` in the plane (``p >= 0``), exactly, by enumeration.

    The minimiser over a bounded nonempty polygon is, for ``p > 0`` (a projection of ``c = -q/p``), ``c``
    itself, the projection of ``c`` onto one edge's line, or a vertex; for ``p = 0`` (a linear program) a
    vertex. All candidates (``c``, the ``m`` line projections and the ``m (m - 1) / 2`` pairwise line
    intersections) are computed in closed form, the infeasible ones discarded (tolerance ``1e-9``
    relative), and the best kept. No iteration: cheap to compile, exact to rounding.
    """
    dtype = jnp.result_type(p, q, G, h, float)
    G, h, q = G.astype(dtype), h.astype(dtype), q.astype(dtype)
    m = h.shape[0]
    positive = p > 0
    c = -q / jnp.where(positive, p, 1.0)
    norms = jnp.sum(G * G, axis=1)
    on_lines = c[None, :] - ((G @ c - h) / jnp.where(norms > 0, norms, 1.0))[:, None] * G
    i, j = jnp.triu_indices(m, k=1)
    det = G[i, 0] * G[j, 1] - G[i, 1] * G[j, 0]
    ok = jnp.abs(det) > 1e-12 * jnp.sqrt(norms[i] * norms[j])
    safe = jnp.where(ok, det, 1.0)
    vertices = jnp.stack([(h[i] * G[j, 1] - h[j] * G[i, 1]) / safe, (G[i, 0] * h[j] - G[j, 0] * h[i]) / safe], 1)
    candidates = jnp.concatenate([c[None, :], on_lines, vertices])
    usable = jnp.concatenate([positive[None], jnp.broadcast_to(positive, (m,)) & (norms > 0), ok])
    slack = 1e-9 * (1.0 + jnp.abs(h))
    feasible = usable & jnp.all(candidates @ G.T <= (h + slack)[None, :], axis=1)
    values = 0.5 * p * jnp.sum(candidates**2, axis=1) + candidates @ q
    return candidates[jnp.argmin(jnp.where(feasible, values, jnp.inf))]


# --------------------------------------------------------------------------------------------------
# The problems.

_POSITIVE_WINDOWS = ((1501, 1999), (3501, 3999))


class _AbstractFixedConstraintProgram(AbstractProblem):
    """Shared data of the online QP and LP of paper 003, Section 6.2 (theta_t schedule, fixed A, b).

    Args:
        horizon: the T the constants (gradient bound) are computed for (the paper's 5000); the run's
            own T sets the permutation length.
        positive_windows: inclusive slot windows where ``theta^2`` is drawn from ``U(0, 1)``.
    """

    constraint_structure: ClassVar[str] = "affine"

    domain: Box
    horizon: int = eqx.field(static=True)
    positive_windows: tuple[tuple[int, int], ...] = eqx.field(static=True)

    def __init__(self, horizon: int = 5000, positive_windows=_POSITIVE_WINDOWS):
        _checks.positive_int("horizon", horizon)
        self.domain = Box(0.0, 1.0, dim=2)
        self.horizon = horizon
        self.positive_windows = tuple((int(a), int(b)) for a, b in positive_windows)

    num_constraints: ClassVar[int] = 3

    def episode(self, key, T):
        kp, ka, kb = jax.random.split(key, 3)
        mu = jax.random.permutation(kp, jnp.arange(1, T + 1, dtype=jnp.int32))
        A = jax.random.uniform(ka, (3, 2), minval=0.1, maxval=0.5)
        b = jax.random.uniform(kb, (3,), minval=0.0, maxval=0.3)
        return {"mu": mu, "A": A, "b": b}

    def theta_components(self, episode, key, t) -> tuple[Array, Array, Array]:
        """``(theta_t^1, theta_t^2, theta_t^3)`` of round ``t`` (their sum is ``theta_t``)."""
        k1, k2 = jax.random.split(key)
        tf = jnp.asarray(t, jnp.result_type(float))
        theta1 = (2.0 * jax.random.uniform(k1, (2,)) - 1.0) * tf**0.1
        positive = jnp.zeros((), bool)
        for lo, hi in self.positive_windows:
            positive = positive | ((t >= lo) & (t <= hi))
        theta2 = jax.random.uniform(k2, (2,)) - jnp.where(positive, 0.0, 1.0)
        mu_t = episode["mu"][(t - 1) % episode["mu"].shape[0]]
        theta3 = jnp.where(mu_t % 2 == 0, 1.0, -1.0) * jnp.ones(2)
        return theta1, theta2, theta3

    def round_data(self, episode, key, t):
        theta1, theta2, theta3 = self.theta_components(episode, key, t)
        return {"theta": theta1 + theta2 + theta3, "A": episode["A"], "b": episode["b"]}

    def constraints(self, data, x):
        return data["A"] @ x - data["b"]

    def affine_constraints(self, data) -> tuple[Array, Array]:
        """``(A, b)`` with ``g(x) = A x - b`` (fixed over rounds)."""
        return data["A"], data["b"]

    @abc.abstractmethod
    def _quadratic(self, theta: Array, rounds: Array | int) -> tuple[Array, Array]:
        """``(p, q)`` of ``sum_t f_t(x) = p/2 ||x||^2 + q'x + const`` for ``theta = sum_t theta_t``."""

    def _minimise(self, p, q, A, b):
        G, h = _box_rows(self.domain.lower, self.domain.upper)
        x = polygon_qp(p, q, jnp.concatenate([A, G]), jnp.concatenate([b, h]))
        return jnp.clip(x, self.domain.lower, self.domain.upper)

    def round_optimum(self, data):
        p, q = self._quadratic(data["theta"], 1)
        return self._minimise(p, q, data["A"], data["b"])

    def best_fixed(self, episode, env_key, T):
        data = all_rounds(self, episode, env_key, T)
        p, q = self._quadratic(data["theta"].sum(axis=0), T)
        return self._minimise(p / T, q / T, episode["A"], episode["b"])

    def _theta_bound(self) -> float:
        return 2**0.5 * (self.horizon**0.1 + 2.0)


class OnlineQuadraticProgram(_AbstractFixedConstraintProgram):
    """Online quadratic programming under fixed linear constraints (Wang, Yan and Liu, AAAI 2025, Fig. 2).

    ``f_t(x) = ||x - theta_t||^2 + 20 <theta_t, x>``, ``g(x) = A x - b`` (N = 3), ``K = [0, 1]^2``, with
    ``theta_t = theta_t^1 + theta_t^2 + theta_t^3`` per coordinate j:

    * ``theta_t^{1,j} ~ U(-t^{1/10}, t^{1/10})``;
    * ``theta_t^{2,j} ~ U(0, 1)`` for t in ``[1501, 1999] u [3501, 3999]`` (``positive_windows``) and
      ``U(-1, 0)`` otherwise (the paper's ``[1, 1500] u [2000, 3500] u [4000, 5000]``, integer slots);
    * ``theta_t^{3,j} = (-1)^{mu_t}`` on both coordinates, ``(mu_1, ..., mu_T)`` a random permutation of
      ``1..T`` drawn once per episode, so exactly ``floor(T/2)`` slots get +1.

    ``A`` (entries ``U(0.1, 0.5)``, 3 x 2) and ``b`` (``U(0, 0.3)``) are drawn once per episode; ``0`` is
    always feasible. Comparators: ``round_optimum`` (a 2-variable QP per round) and ``best_fixed`` (the
    QP of the aggregated loss ``T ||x||^2 + 18 <sum_t theta_t, x>``), both exact by
    `polygon_qp` (enumeration of the polygon's candidate points).

    Args:
        horizon: the T the constants (gradient bound) are computed for (the paper's 5000); the run's
            own T sets the permutation length.
        positive_windows: inclusive slot windows where ``theta^2`` is drawn from ``U(0, 1)``.

    Example:
        >>> import jax, ocokit
        >>> problem = ocokit.problems.OnlineQuadraticProgram()
        >>> episode = problem.episode(jax.random.PRNGKey(0), 10)
        >>> problem.round_data(episode, jax.random.PRNGKey(1), 1)["theta"].shape
        (2,)
    """

    def loss(self, data, x):
        theta = data["theta"]
        d = x - theta
        return jnp.dot(d, d) + 20.0 * jnp.dot(theta, x)

    def _quadratic(self, theta, rounds):
        return jnp.asarray(2.0 * rounds, jnp.result_type(theta, float)), 18.0 * theta

    def constants(self) -> ProblemConstants:
        th = self._theta_bound()
        return ProblemConstants(
            grad_bound=2 * 2**0.5 + 18 * th,
            loss_bound=(2**0.5 + th) ** 2 + 20 * th * 2**0.5,
            constraint_bound=1.0,
            constraint_grad_bound=0.5 * 2**0.5,
            strong_convexity=2.0,
            smoothness=2.0,
        )


class OnlineLinearProgram(_AbstractFixedConstraintProgram):
    """Online linear programming under fixed linear constraints (Wang, Yan and Liu, AAAI 2025, Fig. 3).

    ``f_t(x) = <theta_t, x>`` with the ``theta_t`` schedule, ``A``, ``b`` and ``K = [0, 1]^2`` of
    [`OnlineQuadraticProgram`][ocokit.problems.OnlineQuadraticProgram] ("rest unchanged"). The per-round optimum is an
    LP whose minimiser may
    be a face; its value ``f_t(x_t*)`` is unique (the interior-point solver returns a point of that face).

    Args:
        horizon: the T the constants are computed for (default 5000).
        positive_windows: as in [`OnlineQuadraticProgram`][ocokit.problems.OnlineQuadraticProgram].

    Example:
        >>> import jax, ocokit
        >>> problem = ocokit.problems.OnlineLinearProgram()
        >>> problem.num_constraints
        3
    """

    def loss(self, data, x):
        return jnp.dot(data["theta"], x)

    def _quadratic(self, theta, rounds):
        del rounds
        return jnp.zeros((), jnp.result_type(theta, float)), theta

    def constants(self) -> ProblemConstants:
        th = self._theta_bound()
        return ProblemConstants(
            grad_bound=th,
            loss_bound=th * 2**0.5,
            constraint_bound=1.0,
            constraint_grad_bound=0.5 * 2**0.5,
            strong_convexity=0.0,
            smoothness=0.0,
        )

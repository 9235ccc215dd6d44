"""Time-varying regression with time-varying linear constraints (paper 003, section 6.1, Fig. 1).

Reference: J. Wang, B. Yan and Y. Liu, "Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
Dynamics of Both Loss and Constraint", AAAI 2025 (paper 003), Section 6.1 and Appendix L.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from ocokit import _checks
from ocokit.problems._active_set import solve_box_affine_qp
from ocokit.problems._base import AbstractProblem, ProblemConstants, all_rounds
from ocokit.sets import Box


class TimeVaryingRegression(AbstractProblem):
    """Online least squares under fresh random linear constraints each round (Wang, Yan and Liu, Sec. 6.1).

    Round t draws ``H_t`` with i.i.d. ``U(-1, 1)`` entries (``rows x dim``), ``y_t = H_t 1 + eps_t`` with
    ``eps_t ~ N(0, I)``, ``A_t`` with i.i.d. ``U(0, 1)`` entries (``N x dim``) and ``b_t ~ U(0, 1)^N``:

        f_t(x) = 1/2 ||H_t x - y_t||^2,    g_t(x) = A_t x - b_t,    K = [0, upper]^dim.

    The unconstrained target ``1`` is infeasible (``A_t 1 ~ dim/2 >> b_t``) while ``0`` is always
    feasible, so the constraints bind. Defaults are the paper's: dim = 10, rows = 4, N = 2, upper = 5.

    Comparators: ``round_optimum`` solves ``min 1/2 ||H_t x - y_t||^2`` s.t. ``A_t x <= b_t``, ``x in K``
    inside the compiled scan (a ``dim``-variable QP over a box with N rows); ``best_fixed``
    solves the aggregated QP ``min 1/2 x'(sum_t H_t'H_t)x - (sum_t H_t'y_t)'x`` subject to all ``T N``
    constraints ``A_t x <= b_t`` and the box, once per run. Both by the primal active-set method
    `solve_box_affine_qp`, from ``x = 0`` (feasible: ``A_t >= 0``, ``b_t >= 0``).
    Since ``H_t'H_t`` has rank ``rows < dim``, the per-round minimiser may not be unique; its value is.

    Args:
        dim: decision dimension p.
        rows: rows of ``H_t``.
        num_constraints_: N, rows of ``A_t``.
        upper: the box's upper bound.
    """

    constraint_structure: ClassVar[str] = "affine"

    domain: Box
    rows: int = eqx.field(static=True)
    n_constraints: int = eqx.field(static=True)
    upper: float = eqx.field(static=True)

    def __init__(self, dim: int = 10, rows: int = 4, num_constraints: int = 2, upper: float = 5.0):
        for name, v in (("dim", dim), ("rows", rows), ("num_constraints", num_constraints)):
            _checks.positive_int(name, v)
        _checks.positive("upper", upper)
        self.domain = Box(0.0, upper, dim=dim)
        self.rows, self.n_constraints, self.upper = rows, num_constraints, float(upper)

    @property
    def num_constraints(self) -> int:
        return self.n_constraints

    @property
    def dim(self) -> int:
        return self.domain.shape[0]

    def round_data(self, episode, key, t):
        # two draws per round (one uniform block, one normal block): RNG dominates a sweep's cost
        r, d, n = self.rows, self.dim, self.n_constraints
        ku, kn = jax.random.split(key)
        u = jax.random.uniform(ku, (r * d + n * d + n,))
        H = 2.0 * u[: r * d].reshape(r, d) - 1.0
        A = u[r * d : r * d + n * d].reshape(n, d)
        b = u[r * d + n * d :]
        y = H.sum(axis=1) + jax.random.normal(kn, (r,))
        return {"H": H, "y": y, "A": A, "b": b}

    def loss(self, data, x):
        r = data["H"] @ x - data["y"]
        return 0.5 * jnp.dot(r, r)

    def constraints(self, data, x):
        return data["A"] @ x - data["b"]

    def affine_constraints(self, data):
        """``(A_t, b_t)`` with ``g_t(x) = A_t x - b_t``."""
        return data["A"], data["b"]

    def _solve(self, P, q, A, b):
        lower, upper = self.domain.lower, self.domain.upper
        return solve_box_affine_qp(P, q, A, b, lower, upper, jnp.zeros_like(lower)).x

    def round_optimum(self, data):
        H, y = data["H"], data["y"]
        return self._solve(H.T @ H, -H.T @ y, data["A"], data["b"])

    def best_fixed(self, episode, env_key, T):
        data = all_rounds(self, episode, env_key, T)
        P = jnp.einsum("tri,trj->ij", data["H"], data["H"]) / T
        q = -jnp.einsum("tri,tr->i", data["H"], data["y"]) / T
        A = data["A"].reshape(T * self.n_constraints, self.dim)
        b = data["b"].reshape(T * self.n_constraints)
        return self._solve(P, q, A, b)

    def constants(self) -> ProblemConstants:
        d, u = self.dim, self.upper
        resid = self.rows**0.5 * (d * u + d + 4.0)  # ||H x - y|| with |eps| <= 4 w.h.p.
        return ProblemConstants(
            grad_bound=resid * (self.rows * d) ** 0.5,
            loss_bound=0.5 * resid**2,
            constraint_bound=d * u,
            constraint_grad_bound=d**0.5,
        )

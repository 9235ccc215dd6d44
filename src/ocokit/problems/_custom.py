"""A problem built from user functions: the shortest way to plug a new loss and constraint into ocokit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.extend.core as jex
import jax.numpy as jnp
import numpy as np

from ocokit import _checks
from ocokit.problems._base import AbstractProblem, ProblemConstants
from ocokit.sets import AbstractSet


class CustomProblem(AbstractProblem):
    """An online problem from a user's ``loss(data, x)``, ``constraints(data, x)`` and round data.

    Round data comes either from ``data``, a pytree of arrays whose leading axis indexes rounds (round t
    reads entry ``(t - 1) % len``), or from ``sampler(key, t)``, a pure function of a PRNG key and the
    1-based round. Exactly one of the two must be given. Functions must be written with ``jax.numpy``.

    Args:
        domain: the decision set K.
        loss: ``loss(data, x) -> scalar``, convex in x.
        constraints: ``constraints(data, x) -> (N,)``; omit for an unconstrained problem.
        data: per-round data stacked along a leading axis.
        sampler: ``sampler(key, t) -> data`` for a random environment.
        constants: known constants ([`ProblemConstants`][ocokit.problems.ProblemConstants]) for theory-driven learner
            parameters.
        constraint_structure: ``"auto"`` (default) declares ``"affine"`` when the constraints' Jacobian provably
            does not depend on x (its traced computation reads no x: exact, never a numerical guess; a
            piecewise-linear ``max`` is not affine), else ``"general"``; or give ``"affine"`` / ``"general"``.
            Solvers use it: COLDQ's per-round hinge prox is a closed-form dual for affine constraints.

    Example:
        >>> import jax.numpy as jnp, ocokit
        >>> problem = ocokit.problems.CustomProblem(
        ...     domain=ocokit.sets.Box(-1.0, 1.0, dim=2),
        ...     loss=lambda c, x: jnp.sum((x - c) ** 2),
        ...     constraints=lambda c, x: jnp.array([x.sum() - 0.5]),
        ...     data=jnp.ones((10, 2)),
        ... )
        >>> float(ocokit.run(ocokit.algorithms.OGD(eta=0.1), problem, T=10).constraints.max()) > 0
        True
    """

    domain: AbstractSet
    loss_fn: Callable[[Any, Any], Any] = eqx.field(static=True)
    constraints_fn: Callable[[Any, Any], Any] | None = eqx.field(static=True)
    sampler: Callable[[Any, Any], Any] | None = eqx.field(static=True)
    data: Any
    n_constraints: int = eqx.field(static=True)
    known_constants: ProblemConstants
    structure: str = eqx.field(static=True)

    def __init__(
        self, *, domain, loss, constraints=None, data=None, sampler=None, constants=None, constraint_structure="auto"
    ):
        if constraint_structure not in ("auto", "affine", "general"):
            raise ValueError(
                f"constraint_structure must be one of ['auto', 'affine', 'general'], got {constraint_structure!r}"
            )
        if not isinstance(domain, AbstractSet):
            raise ValueError(f"domain must be an ocokit set (ocokit.sets), got {type(domain).__name__}")
        if (data is None) == (sampler is None):
            raise ValueError("give exactly one of data (per-round arrays) or sampler (key, t) -> data")
        if not callable(loss) or (constraints is not None and not callable(constraints)):
            raise ValueError("loss and constraints must be callables (data, x) -> value")
        if data is not None:
            data = _checks.round_data_arrays(data)
        self.domain, self.loss_fn, self.constraints_fn = domain, loss, constraints
        self.sampler, self.data = sampler, data
        self.known_constants = constants if constants is not None else ProblemConstants()
        example = self._example_data()
        x0 = domain.center()
        value = _checks.real_array_result("loss(data, x)", "a scalar", jax.eval_shape(loss, example, x0))
        if value.shape != ():
            raise ValueError(f"loss(data, x) must return a scalar, got shape {value.shape}")
        if constraints is None:
            self.n_constraints = 0
        else:
            result = jax.eval_shape(constraints, example, x0)
            shape = _checks.real_array_result("constraints(data, x)", "a vector (N,)", result).shape
            if len(shape) > 1:
                raise ValueError(f"constraints(data, x) must return a vector (N,), got shape {shape}")
            self.n_constraints = int(np.prod(shape)) if shape else 1
        _checks.nonnegative("num_constraints", self.n_constraints)
        if constraint_structure == "auto":
            affine = constraints is not None and _jacobian_reads_no_x(constraints, example, x0)
            constraint_structure = "affine" if affine else "general"
        self.structure = constraint_structure

    @property
    def constraint_structure(self) -> str:  # type: ignore[override]
        """``"affine"`` or ``"general"``: given, or found by ``constraint_structure="auto"`` (class doc)."""
        return self.structure

    def _example_data(self):
        if self.sampler is not None:
            return jax.eval_shape(self.sampler, jax.random.PRNGKey(0), jnp.asarray(1, jnp.int32))
        return jax.tree.map(lambda a: a[0], self.data)

    @property
    def num_constraints(self) -> int:
        return self.n_constraints

    def round_data(self, episode, key, t):
        if self.sampler is not None:
            return self.sampler(key, t)
        n = jax.tree.leaves(self.data)[0].shape[0]
        return jax.tree.map(lambda a: a[(t - 1) % n], self.data)

    def loss(self, data, x):
        return self.loss_fn(data, x)

    def constraints(self, data, x):
        if self.constraints_fn is None:
            return jnp.zeros((0,), dtype=jnp.result_type(x))
        return jnp.reshape(self.constraints_fn(data, x), (self.n_constraints,))

    def constants(self) -> ProblemConstants:
        return self.known_constants


def _jacobian_reads_no_x(fn: Callable[[Any, Any], Any], data: Any, x: Any) -> bool:
    """Whether the traced Jacobian of ``fn(data, .)`` at ``x`` has no data path from ``x``: then it is the same
    at every x and ``fn`` is affine in x. Conservative (a primitive with any x-dependent input counts as
    x-dependent), so it never calls a non-affine function affine."""
    x = jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x, float))
    jaxpr = jax.make_jaxpr(lambda data, x: jax.jacfwd(lambda y: jnp.ravel(fn(data, y)))(x))(data, x).jaxpr
    tainted = {jaxpr.invars[-1]}  # x (the data's leaves come first and may flow into the Jacobian)
    for eqn in jaxpr.eqns:
        if any(isinstance(v, jex.Var) and v in tainted for v in eqn.invars):
            tainted.update(eqn.outvars)
    return not any(isinstance(v, jex.Var) and v in tainted for v in jaxpr.outvars)

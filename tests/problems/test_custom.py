"""CustomProblem finds the structure of a user's constraints exactly, so the fast solver is the default."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ocokit
from ocokit.algorithms._hinge_prox import AffineSolver, DeclaredSolver, SmoothSolver
from ocokit.problems import CustomProblem
from ocokit.sets import Box

D = 6
A = np.random.default_rng(0).standard_normal((3, D))


def _problem(constraints, **kwargs):
    data = kwargs.pop("data", {"c": jnp.ones((4, D))}) if "sampler" not in kwargs else None
    return CustomProblem(
        domain=Box(-1.0, 1.0, dim=D), loss=lambda d, x: jnp.sum(x**2), constraints=constraints, data=data, **kwargs
    )


@pytest.mark.parametrize(
    ("constraints", "structure"),
    [
        (lambda d, x: jnp.asarray(A) @ x - 1.0, "affine"),
        (lambda d, x: jnp.array([d["c"] @ x - 1.0]), "affine"),  # the slope may come from the round's data
        (lambda d, x: jnp.array([jnp.sum(x) - 1.0, -x[0]]), "affine"),
        (lambda d, x: jnp.array([x @ x - 1.0]), "general"),
        (lambda d, x: jnp.maximum(x, 0.0)[:2] - 1.0, "general"),  # piecewise linear: affine on each piece only
        (lambda d, x: jnp.abs(x[:2]) - 1.0, "general"),
        (lambda d, x: jnp.array([jnp.exp(x[0]) - 2.0]), "general"),
        (None, "general"),
    ],
)
def test_the_structure_is_found_exactly(constraints, structure):
    assert _problem(constraints).constraint_structure == structure


def test_a_sampled_environment_is_read_from_shapes_and_a_declared_structure_wins():
    sampled = _problem(lambda d, x: jnp.array([d @ x]), sampler=lambda key, t: jax.random.normal(key, (D,)))
    assert sampled.constraint_structure == "affine"
    declared = _problem(lambda d, x: jnp.asarray(A) @ x - 1.0, constraint_structure="general")
    assert declared.constraint_structure == "general"
    with pytest.raises(ValueError, match="constraint_structure must be one of"):
        _problem(None, constraint_structure="linear")


def test_coldq_picks_the_closed_form_solver_for_detected_affine_constraints_and_agrees_with_the_general_one():
    found, general = (
        _problem(lambda d, x: jnp.asarray(A) @ x - 0.2, constraint_structure=s) for s in ("auto", "general")
    )
    assert DeclaredSolver().resolve(found.constraint_structure, found.domain) == AffineSolver()
    assert DeclaredSolver().resolve(general.constraint_structure, general.domain) == SmoothSolver()
    fast, slow = (ocokit.run(ocokit.algorithms.COLDQ.from_theory(ocokit.algorithms.ProblemInfo.of(p, 20)), p, 20)
                  for p in (found, general))  # fmt: skip
    np.testing.assert_allclose(fast.loss, slow.loss, rtol=1e-5, atol=1e-7)

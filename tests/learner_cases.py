"""The learner suite's cases: small (learner, problem) pairs for every exported learner.

Test fixtures live here, not in ``src/`` (River's pattern: the suite owns its problems). ``CASES`` maps each
learner class to a function returning its cases; case ids are ``ClassName-i``. A learner exported from
:mod:`ocokit.algorithms` without an entry fails ``tests/algorithms/test_learner_suite.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ocokit import algorithms as A
from ocokit.algorithms import AbstractLearner, ProblemInfo
from ocokit.problems import (
    CustomProblem,
    DriftingAllocation,
    DriftingQuadratic,
    OnlineLinear,
    OnlineQuadratic,
    ProblemConstants,
    QuadraticWithMemory,
    TimeVaryingRegression,
)
from ocokit.sets import Box, L2Ball

from .helpers import assumption

SUITE_T = 30
"""The horizon the suite plays (and that theory constructors of the cases assume)."""

LEARNERS = sorted(
    (
        getattr(A, name)
        for name in A.__all__
        if inspect.isclass(getattr(A, name))
        and issubclass(getattr(A, name), AbstractLearner)
        and not inspect.isabstract(getattr(A, name))
    ),
    key=lambda c: c.__name__,
)


# --------------------------------------------------------------------------------------------------
# Small problems (built without comparators, so that a case compiles quickly).


def regression_rounds():
    """The rounds of a small Fig. 1 problem of paper 003 (§6.1): ``K = [0, 5]^4``, ``N = 2``."""
    regression = TimeVaryingRegression(dim=4, rows=3)
    return CustomProblem(
        domain=regression.domain,
        loss=lambda d, x: 0.5 * jnp.sum((d["H"] @ x - d["y"]) ** 2),
        constraints=lambda d, x: d["A"] @ x - d["b"],
        sampler=lambda key, t: regression.round_data(None, key, t),
        constants=ProblemConstants(constraint_bound=20.0),  # |A x - b| <= 4 * 5 on K
    )


def ball_problem():
    """A small problem with a non-linear convex constraint (for the smooth solver's case)."""

    def sampler(key, t):
        return jax.random.uniform(key, (3,), minval=-1.0, maxval=1.0)

    return CustomProblem(
        domain=Box(-1.0, 1.0, dim=3),
        loss=lambda c, x: jnp.sum((x - 2.0 * c) ** 2),
        constraints=lambda c, x: jnp.array([jnp.sum((x - 0.3 * c) ** 2) - 0.25, jnp.sum(x) - 0.5]),
        sampler=sampler,
    )


def fixed_program_rounds(quadratic: bool):
    """A small online QP (``quadratic=True``) or LP of paper 003 §6.2-§6.3: ``K = [0, 1]^2``, fixed ``A, b``.

    ``theta_t`` is ``U(-2, 2)^2`` (not the paper's schedule, which needs an episode).
    """
    Am = jnp.array([[0.3, 0.2], [0.1, 0.45], [0.25, 0.25]])
    b = jnp.array([0.1, 0.2, 0.15])

    def loss(theta, x):
        return jnp.sum((x - theta) ** 2) + 20.0 * jnp.dot(theta, x) if quadratic else jnp.dot(theta, x)

    return CustomProblem(
        domain=Box(0.0, 1.0, dim=2),
        loss=loss,
        constraints=lambda theta, x: Am @ x - b,
        sampler=lambda key, t: jax.random.uniform(key, (2,), minval=-2.0, maxval=2.0),
        constants=ProblemConstants(constraint_bound=1.0),
    )


def job_rounds():
    """A small job-scheduling problem (paper 003 §6.4): 2 regions x 3 centres, ``K = [0, 50]^6``,
    ``g_t(x) = lambda_t - sum_i 4 ln(1 + 4 x_i)`` with ``lambda_t ~ Poisson(40)``."""

    def sampler(key, t):
        kc, kl = jax.random.split(key)
        prices = jax.random.uniform(kc, (2,), minval=20.0, maxval=60.0)
        return {"c": jnp.repeat(prices, 3), "lam": jax.random.poisson(kl, 40.0).astype(prices.dtype)}

    return CustomProblem(
        domain=Box(0.0, 50.0, dim=6),
        loss=lambda d, x: jnp.dot(d["c"], x),
        constraints=lambda d, x: jnp.reshape(d["lam"] - 4.0 * jnp.sum(jnp.log1p(4.0 * x)), (1,)),
        sampler=sampler,
    )


def blocked_problem(dim: int = 3, constrained: bool = True):
    """A linear-plus-quadratic loss on ``[-1, 1]^dim`` with one randomly scaled budget (blocked LOO chain)."""

    def sampler(key, t):
        k1, k2 = jax.random.split(key)
        c = jnp.array([1.0, -0.5, 0.25])[:dim] + 0.3 * jax.random.normal(k1, (dim,))
        s = jax.random.uniform(k2, (), minval=0.5, maxval=1.5)
        return {"c": c, "s": s}

    return CustomProblem(
        domain=Box(-1.0, 1.0, dim=dim),
        loss=lambda d, x: jnp.dot(d["c"], x) + 0.5 * jnp.sum(x**2),
        constraints=(lambda d, x: d["s"] * jnp.array([jnp.sum(x) - 0.5])) if constrained else None,
        sampler=sampler,
    )


def ball_linear_problem():
    """A linear loss on the unit l2 ball with one noisy linear constraint (OPDP)."""

    def sampler(key, t):
        k1, k2 = jax.random.split(key)
        return {
            "c": jnp.array([1.0, -0.5, 0.3]) + 0.3 * jax.random.normal(k1, (3,)),
            "a": jnp.array([1.0, 1.0, 0.0]) + 0.2 * jax.random.normal(k2, (3,)),
        }

    return CustomProblem(
        domain=L2Ball(3, radius=1.0),
        loss=lambda d, x: jnp.dot(d["c"], x),
        constraints=lambda d, x: jnp.array([jnp.dot(d["a"], x) - 0.2]),
        sampler=sampler,
    )


def tvc_cases(build: Callable[[ProblemInfo], list]) -> list:
    """Each learner of ``build(info)`` on a small regression with 2 constraints (the TVC family)."""
    problem = TimeVaryingRegression(dim=4, rows=3, num_constraints=2)
    return [(learner, problem) for learner in build(ProblemInfo.of(problem, SUITE_T))]


# --------------------------------------------------------------------------------------------------
# The cases of each learner.


def _mirror_prox():
    ball = DriftingQuadratic(dim=3, drift=0.3)
    consts = assumption(ball)
    return [
        (A.MirrorProx(gamma=2.0, eta=0.25, **consts, known_constraints=ball.fixed_constraints), ball),
        (A.MirrorProx(gamma=1.0, eta=0.1, L_f=50.0, L_g=0.0, G=20.0, H=3.0), TimeVaryingRegression(dim=3, rows=2)),
    ]


def _simplex_mirror_prox():
    problem = DriftingAllocation(dim=5, drift=0.3)
    consts = assumption(problem, "linf")
    known = problem.fixed_constraints
    return [
        (A.SimplexMirrorProx(gamma=1.5, eta=0.5, nu=1 / 30, **consts, known_constraints=known), problem),
        (A.SimplexMirrorProx(gamma=0.5, eta=2.0, nu=0.2, **consts), problem),
    ]


def _memory_problems():
    return (
        QuadraticWithMemory(Box(-5.0, 5.0, dim=1), memory=2, x0=0.5),
        QuadraticWithMemory(Box(-1.0, 1.0, dim=2), memory=3, mu=1.0, beta=2.0),
    )


def _bandit_memory():
    one, two = _memory_problems()
    return [
        (A.BanditOCOMemory(eta=0.2, delta=0.2, x0=0.5, half_width=2.0), one),
        (A.BanditOCOMemory(eta=0.5, delta=0.1, law="rademacher", estimator="one_point", init_perturb="last"), two),
    ]


def _memory_predictions():
    # The suite's no-lookahead check forbids any use of later rounds, so these cases use the strict one-round
    # window (K = 0 layers: x_t depends on rounds < t only). Cases with K >= 1 use the predictions of rounds
    # t..t+W by design and are checked in tests/algorithms/test_memory_predictions.py.
    one, two = _memory_problems()
    common = {"eta": 0.2, "alpha": 0.05, "delta": 0.2, "delta_prime": 1e-3, "strict_window": True}
    return [
        (A.OCOMemoryLimitedPredictions(window=1, x0=0.5, half_width=2.0, **common), one),
        (A.OCOMemoryLimitedPredictions(window=1, law="rademacher", estimator="one_point", **common), two),
    ]


def _sinha_vaze():
    regression = TimeVaryingRegression(dim=4, rows=3, num_constraints=2)
    theory = A.SinhaVaze.from_theory(ProblemInfo.of(regression, SUITE_T), multi="max")
    return [
        (A.SinhaVaze(V=1.0, beta=0.05, lam=0.5, D=10.0), regression_rounds()),
        (theory, regression),
        (A.SinhaVaze(V=2.0, beta=1.0, alpha=1.0, variant="strongly_convex"), OnlineQuadratic(Box(-1.0, 1.0, dim=3))),
    ]


def _yuan_lamperski():
    rounds = regression_rounds()
    return [
        (A.YuanLamperski.from_theory(ProblemInfo.of(rounds, SUITE_T)), rounds),
        (A.YuanLamperski(beta=0.1, eta_p=0.5, first_update="penalised"), fixed_program_rounds(quadratic=True)),
    ]


def _ofw(cls):
    return lambda: [(cls(eta=0.1), OnlineLinear(Box(-1.0, 1.0, dim=3)))]


CASES: dict[type, Callable[[], list]] = {
    A.BFWTVC: lambda: tvc_cases(
        lambda info: [A.BFWTVC.from_theory(info), A.BFWTVC.from_theory(info, block=3, beta=0.1, phi="linear")]
    ),
    A.SCBFWTVC: lambda: tvc_cases(
        lambda info: [
            A.SCBFWTVC.from_theory(info, alpha_f=1.0),
            A.SCBFWTVC.from_theory(info, alpha_f=1.0, theory="statement", block=4, inner_steps=2, surrogate="literal"),
        ]
    ),
    A.COLDQ: lambda: [
        (A.COLDQ(eta=1.0 / SUITE_T, gamma=0.5 * SUITE_T, solver="affine"), regression_rounds()),
        (A.COLDQ(eta=1.0 / SUITE_T, gamma=0.1 * SUITE_T, alpha0=2.0, solver="smooth"), ball_problem()),
    ],
    A.COLDQExpert: lambda: [
        (
            A.COLDQExpert(
                num_experts=3, kappa=SUITE_T**-0.5, eta=SUITE_T**-1.5, gamma=0.5 * SUITE_T**1.5, solver="affine"
            ),
            regression_rounds(),
        )
    ],
    A.YuNeelyWei: lambda: [(A.YuNeelyWei(V=5.0, alpha=100.0), TimeVaryingRegression(dim=4, rows=3, num_constraints=2))],
    A.SinhaVaze: _sinha_vaze,
    A.YuanLamperski: _yuan_lamperski,
    A.LOOBOGD: lambda: [
        (A.LOOBOGD(eta=0.05, eps=0.02, block_size=3), blocked_problem(constrained=False)),
        (A.LOOBOGD(eta=0.05, eps=0.02, block_size=4, pipelined=False), blocked_problem()),
    ],
    A.LOOBBGD: lambda: [
        (A.LOOBBGD(eta=0.01, delta=0.3, block_size=3), blocked_problem(constrained=False)),
        (A.LOOBBGD(eta=0.01, delta=0.3, block_size=4, pipelined=False), blocked_problem()),
    ],
    A.LPM: lambda: [
        (A.LPM(eta=0.05, eps=0.02, block_size=3, mu=0.05, dual_reg=1.0), blocked_problem()),
        (A.LPM(eta=0.01, eps=0.02, block_size=4, V=5.0, dual_rule="dpp_queue", pipelined=True), blocked_problem()),
    ],
    A.LBPM: lambda: [
        (A.LBPM(eta=0.01, delta=0.3, block_size=3, mu=0.05, dual_reg=1.0), blocked_problem()),
        (A.LBPM(eta=0.002, delta=0.3, block_size=4, V=5.0, dual_rule="dpp_queue", pipelined=True), blocked_problem()),
    ],
    A.BanditOCOMemory: _bandit_memory,
    A.OCOMemoryLimitedPredictions: _memory_predictions,
    A.Hedge: lambda: [
        (A.Hedge(eta=0.5), DriftingAllocation(dim=4, drift=0.5)),
        (A.Hedge(eta=1.0, nu=0.1, decay="inverse_sqrt"), DriftingAllocation(dim=4, drift=0.5)),
    ],
    A.MirrorProx: _mirror_prox,
    A.SimplexMirrorProx: _simplex_mirror_prox,
    A.OFW: _ofw(A.OFW),
    A.OFWLineSearch: _ofw(A.OFWLineSearch),
    A.SCOFW: lambda: [(A.SCOFW(lam=1.0), OnlineQuadratic(Box(-1.0, 1.0, dim=3), lam=1.0))],
    A.Constant: lambda: [(A.Constant(), TimeVaryingRegression(dim=3))],
    A.OGD: lambda: [
        (A.OGD(eta=0.01), TimeVaryingRegression()),
        (A.OGD(eta=0.5, decay="inverse_sqrt"), TimeVaryingRegression(dim=3)),
    ],
    A.OPDP: lambda: [
        (A.OPDP(eta=0.05, V=2.0), ball_linear_problem()),
        (A.OPDP(eta=0.05, mu=0.1, dual_reg=1.0, dual_rule="lagrangian", hinge=True), ball_linear_problem()),
    ],
    A.RECOO: lambda: [
        (A.RECOO(alpha=0.5, solver="affine"), regression_rounds()),
        (A.RECOO(alpha=0.5, queue_uses="previous", solver="affine"), regression_rounds()),
        (A.RECOO(alpha=0.7, solver="smooth"), job_rounds()),
    ],
    A.Yi2021: lambda: [
        (A.Yi2021(alpha0=100.0, gamma0=2.5, solver="affine"), fixed_program_rounds(quadratic=True)),
        (A.Yi2021(alpha0=2.0, gamma0=1.0, gamma_rule="code", solver="affine"), fixed_program_rounds(quadratic=False)),
    ],
    A.Yi2023: lambda: [
        (A.Yi2023(alpha=3.0, gamma=0.1, beta=5.0), regression_rounds()),
        (A.Yi2023(alpha=3.0, gamma=0.1, beta=5.0, dual_step="beta"), regression_rounds()),
        (A.Yi2023(alpha=1.0, gamma=1.0, beta=1.0), job_rounds()),
    ],
    A.OFWTVC: lambda: tvc_cases(
        lambda info: [
            A.OFWTVC.from_theory(info),
            A.OFWTVC.from_theory(info, beta=0.05, phi="linear", sum_index="lagged", doubling="observed"),
        ]
    ),
    A.SCOFWTVC: lambda: tvc_cases(
        lambda info: [A.SCOFWTVC.from_theory(info, alpha_f=1.0), A.SCOFWTVC(beta=0.1, gamma=1.0, alpha_f=0.5)]
    ),
}


def cases() -> list[tuple[str, AbstractLearner, object]]:
    """``(case_id, learner, problem)`` for every case of every learner with an entry in :data:`CASES`."""
    return [
        (f"{cls.__name__}-{i}", learner, problem)
        for cls in LEARNERS
        if cls in CASES
        for i, (learner, problem) in enumerate(CASES[cls]())
    ]

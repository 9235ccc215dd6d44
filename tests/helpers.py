"""Shared test fixtures: small problems and wrappers used across the suites."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from hypothesis import strategies as st

import ocokit
from ocokit.problems import AbstractProblem

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's Chromium, which the browser tests drive through playwright (never playwright's own download)."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
"""Its launch arguments in the browser tests (the docs site's and the bench's HTML page)."""


class Perturbed(AbstractProblem):
    """``problem`` with every round from ``t0`` on redrawn from another key (to test for lookahead).

    ``t0`` is an array leaf, so wrappers with different ``t0`` share one compilation (``t0 > T``: the
    game of ``problem`` itself). Every declared problem feature is forwarded to ``problem``.
    """

    domain: Any
    inner: AbstractProblem
    t0: Any

    def __init__(self, inner: AbstractProblem, t0: int):
        self.domain, self.inner, self.t0 = inner.domain, inner, jnp.asarray(t0, jnp.int32)

    @property
    def num_constraints(self) -> int:
        return self.inner.num_constraints

    def episode(self, key, T):
        return self.inner.episode(key, T)

    def round_data(self, episode, key, t):
        other = self.inner.round_data(episode, jax.random.fold_in(key, 12345), t)
        same = self.inner.round_data(episode, key, t)
        return jax.tree.map(lambda a, b: jnp.where(t >= self.t0, a, b), other, same)

    def loss(self, data, x):
        return self.inner.loss(data, x)

    def constraints(self, data, x):
        return self.inner.constraints(data, x)

    def constants(self):
        return self.inner.constants()

    def memory(self) -> int:
        return self.inner.memory()

    @property
    def constraint_structure(self) -> str:  # type: ignore[override]
        return self.inner.constraint_structure

    def affine_constraints(self, data):
        return self.inner.affine_constraints(data)

    def log_capacity_constraint(self, data):
        return self.inner.log_capacity_constraint(data)

    def initial_history(self):
        return self.inner.initial_history()

    def prediction(self, data, x):
        return self.inner.prediction(data, x)

    def prediction_lookahead(self):
        return self.inner.prediction_lookahead()

    def best_fixed(self, episode, env_key, T):
        return self.inner.best_fixed(episode, env_key, T)

    def round_optimum(self, data):
        return self.inner.round_optimum(data)


class NaNAt(AbstractProblem):
    """A quadratic whose loss is NaN from round ``bad`` on."""

    domain: Any
    bad: int = eqx.field(static=True)

    @property
    def num_constraints(self) -> int:
        return 1

    def round_data(self, episode, key, t):
        return jnp.where(t >= self.bad, jnp.nan, 1.0)

    def loss(self, data, x):
        return data * jnp.sum(x**2)

    def constraints(self, data, x):
        return jnp.array([jnp.sum(x) - 1.0])


def quadratic_problem(dim: int = 3, n_rounds: int = 40, seed: int = 0) -> ocokit.problems.CustomProblem:
    """``f_t(x) = ||x - c_t||^2`` with one linear constraint ``sum(x) <= 0.5`` over ``[-1, 1]^dim``."""
    centers = jax.random.uniform(jax.random.PRNGKey(seed), (n_rounds, dim), minval=-1.0, maxval=1.0)
    return ocokit.problems.CustomProblem(
        domain=ocokit.sets.Box(-1.0, 1.0, dim=dim),
        loss=lambda c, x: jnp.sum((x - c) ** 2),
        constraints=lambda c, x: jnp.array([jnp.sum(x) - 0.5]),
        data=centers,
    )


def register_test_experiment(name: str, title: str, study: Any, **fields: Any) -> None:
    """Register once an experiment of the tests' own (``paper="tests"``: kept off the docs and the figures)."""
    from ocokit import experiments

    if name not in experiments.names():
        experiments.register(experiments.Experiment(name=name, paper="tests", title=title, study=study, **fields))


def register_two_ogd(name: str, *, slow_label: str = "OGD-slow", chunk_size: int = 10) -> None:
    """Register once a tiny experiment of the tests' own: OGD at two step sizes on a 3-d time-varying regression
    (the command line, the store and the executors are tested on it, not on any one paper's algorithm)."""
    from ocokit import experiments
    from ocokit.algorithms import OGD
    from ocokit.problems import TimeVaryingRegression

    if name in experiments.names():
        return
    study = experiments.Comparison(
        make_problem=lambda T, data_dir, options: TimeVaryingRegression(dim=3),
        chunk_size=chunk_size,
    )
    algorithms = [
        experiments.Algorithm("OGD", lambda info: OGD(eta=0.05)),
        experiments.Algorithm(slow_label, lambda info: OGD(eta=0.01)),
    ]
    register_test_experiment(name, f"{name} test", study, algorithms=algorithms)


def binary_fractions(lo: int, hi: int) -> st.SearchStrategy[float]:
    """Hypothesis floats ``k / 8`` for integers ``lo <= k <= hi``: exact binary fractions, so the QP data handed to
    CVXPY has no subnormals and no rounding of its own."""
    return st.integers(lo, hi).map(lambda k: k / 8)


class CompileLog(logging.Handler):
    """Counts the programs named ``name`` that XLA compiles while installed (``jax.log_compiles`` messages).

    Eager helper ops (a key stack, a cast) compile once per process whatever ran before; only the named
    program (an engine function: ``_sweep_chunk``, ``_play``) is counted.
    """

    def __init__(self, name: str):
        super().__init__(level=logging.DEBUG)
        self.prefix, self.count = f"Compiling jit({name}", 0

    def emit(self, record):
        if record.getMessage().startswith(self.prefix):
            self.count += 1


@contextlib.contextmanager
def count_compiles(name: str) -> Iterator[CompileLog]:
    """A :class:`CompileLog` of ``name`` installed on JAX's logger, with compile logging on, for the block."""
    log, logger = CompileLog(name), logging.getLogger("jax")
    logger.addHandler(log)
    try:
        with jax.log_compiles(True):
            yield log
    finally:
        logger.removeHandler(log)


class BoxLike(ocokit.sets.AbstractSet):
    """A set of another class than :class:`~ocokit.sets.Box` that plays the box ``box`` by delegation: the base of
    test sets that change one capability of a box (declaring its bounds, counting warm LMO calls)."""

    box: ocokit.sets.Box

    @property
    def shape(self):
        return self.box.shape

    def lmo(self, direction):
        return self.box.lmo(direction)

    def project(self, x):
        return self.box.project(x)

    def contains(self, x, atol=1e-8):
        return self.box.contains(x, atol)

    @property
    def diameter(self):
        return self.box.diameter

    @property
    def inner_radius(self):
        return self.box.inner_radius

    def center(self):
        return self.box.center()

    def scaled(self, s):
        return type(self)(self.box.scaled(s))


def assumption(problem, norm: str = "l2") -> dict[str, float]:
    """Assumption 2.1's ``L_f, L_g, G, H`` (Qiu and Wei 2020) of ``problem``, from its declared constants in the
    dual ``norm``: the keywords of the mirror-prox learners' constructors."""
    c = problem.constants() if norm == "l2" else problem.constants_in(norm)
    return {"L_f": c.smoothness, "L_g": c.constraint_smoothness, "G": c.constraint_sum_bound,
            "H": c.constraint_grad_sum_bound}  # fmt: skip


def host_rounds(problem, T: int, seed: int) -> list:
    """The data of rounds 1..T of ``ocokit.run(..., seed)`` (episode-free problems), as NumPy arrays: what a slow
    reference loop replays."""
    import numpy as np

    env_key = ocokit.engine.split_key(jax.random.PRNGKey(seed))[0]
    return [
        jax.tree.map(np.asarray, problem.round_data(None, jax.random.fold_in(env_key, t), t)) for t in range(1, T + 1)
    ]


def two_round_toy():
    """Spec baselines.md §10.1's two-round timing toy: ``f_t(x) = x``, ``g_t(x) = a_t x - b_t`` on [-10, 10], with
    ``g_1 = x + 1`` and ``g_2 = 2 x + 3``; returns ``(problem, data)``."""
    from ocokit.problems import CustomProblem
    from ocokit.sets import Box

    data = {"a": jnp.array([1.0, 2.0]), "b": jnp.array([-1.0, -3.0])}
    problem = CustomProblem(
        domain=Box(-10.0, 10.0, dim=1),
        loss=lambda d, x: x[0],
        constraints=lambda d, x: jnp.array([d["a"] * x[0] - d["b"]]),
        data=data,
    )
    return problem, data


def play_by_hand(learner, problem, data, record) -> tuple[list[float], list[float]]:
    """``learner`` stepped by hand through the rounds of ``data`` (init, decide, update): the decisions
    ``x_1..x_{T+1}`` and ``record(learner, state)`` after each update (a queue, a multiplier)."""
    from ocokit.algorithms import ProblemInfo

    T = len(jax.tree.leaves(data)[0])
    state = learner.init(ProblemInfo.of(problem, T), jax.random.PRNGKey(0))
    xs, recorded = [], []
    for t in range(T):
        x = learner.decide(state)
        state = learner.update(
            state, x, ocokit.feedback.FullInformation(problem, jax.tree.map(lambda a, t=t: a[t], data))
        )
        xs.append(float(x[0]))
        recorded.append(float(record(learner, state)))
    return [*xs, float(learner.decide(state)[0])], recorded


def watch_page(page, failures: list[str], console: bool = True) -> None:
    """Record on ``failures`` every failed response or request, page error and (``console``) console error of a
    playwright ``page``."""
    page.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: failures.append(f"failed {r.url}"))
    if console:
        page.on("console", lambda m: failures.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda err: failures.append(f"page error: {err}"))

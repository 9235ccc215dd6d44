"""What a learner sees after playing, and the gradient estimators built on it (written once, here).

Feedback kinds (a learner declares one as its class attribute ``feedback``):

* ``FULL_INFORMATION``: ``f_t`` and ``g_t`` as functions: values, gradients and Jacobians anywhere
  ([`FullInformation`][ocokit.feedback.FullInformation]).
* ``BANDIT``: the values ``f_t(x_t)`` and ``g_t(x_t)`` at the played point only ([`Bandit`][ocokit.feedback.Bandit]).
* ``ZEROTH_ORDER``: values of ``f_t`` and ``g_t`` at points the learner picks, no gradients (two-point
  feedback; [`ZerothOrder`][ocokit.feedback.ZerothOrder]). A learner counts its own queries in its state.
* ``PREDICTIONS``: a prediction oracle ([`Predictions`][ocokit.feedback.Predictions]): values of a model ``l_k`` of the
  costs of
  upcoming rounds ``k``, at windows the learner picks, within a look-ahead window (Ye et al., arXiv 2024). Such a
  learner also gets the oracle of round 0 before round 1 ([`before_round_one`][ocokit.feedback.before_round_one],
  through ``AbstractLearner.prepare``).

Gradient estimators (one-point sphere, two-point, smoothing laws) take a loss-value function and a key,
so every zeroth-order or bandit learner reuses the same code. Smoothing directions come from one sampler,
[`sample_direction`][ocokit.feedback.sample_direction], with the laws of `SMOOTHING_LAWS` (uniform on the sphere,
Gaussian,
truncated Gaussian of Ye et al.'s Definition 1, Rademacher/Bernoulli);
[`direction_variance`][ocokit.feedback.direction_variance] gives the
per-coordinate second moment ``E[u_i^2]`` that scales the estimators' expectation.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ocokit.problems._base import AbstractProblem, round_at


class FeedbackKind(enum.Enum):
    """The information a learner receives after each round."""

    FULL_INFORMATION = "full-information"
    BANDIT = "bandit"
    ZEROTH_ORDER = "zeroth-order"
    PREDICTIONS = "predictions"


FULL_INFORMATION = FeedbackKind.FULL_INFORMATION
BANDIT = FeedbackKind.BANDIT
ZEROTH_ORDER = FeedbackKind.ZEROTH_ORDER
PREDICTIONS = FeedbackKind.PREDICTIONS


class _RoundFunctions(eqx.Module):
    """Round t's loss and constraints as functions of x, with the constraints' declared structure.

    The problem and the round's data are private: a learner sees the round only through these methods.
    """

    _problem: AbstractProblem
    _data: Any

    def loss(self, x: Float[Array, "..."]) -> Float[Array, ""]:
        """``f_t(x)``."""
        return self._problem.loss(self._data, x)

    def constraints(self, x: Float[Array, "..."]) -> Float[Array, " N"]:
        """``g_t(x)``."""
        return self._problem.constraints(self._data, x)

    @property
    def num_constraints(self) -> int:
        """Number N of constraint functions."""
        return self._problem.num_constraints

    @property
    def constraint_structure(self) -> str:
        """The declared structure of ``g_t`` (`constraint_structure`)."""
        return self._problem.constraint_structure

    def affine_constraints(self) -> tuple[Array, Array]:
        """``(A_t, b_t)`` with ``g_t(x) = A_t x - b_t`` (for the ``"affine"`` structure)."""
        return self._problem.affine_constraints(self._data)

    def log_capacity_constraint(self) -> tuple[Array, Array, Array]:
        """``(d, s, r)`` with ``g_t(x) = d - sum_i s_i ln(1 + r_i x_i)`` (for the ``"log_capacity"`` structure)."""
        return self._problem.log_capacity_constraint(self._data)


class ZerothOrder(_RoundFunctions):
    """Values of round t's loss and constraints at any query point (no gradients).

    For a problem with memory, ``loss`` takes the stacked window of the last h decisions.
    """


class FullInformation(_RoundFunctions):
    """Round t's loss and constraints as functions: values, gradients and Jacobians anywhere."""

    def grad(self, x: Float[Array, "..."]) -> Float[Array, "..."]:
        """``grad f_t(x)``."""
        return jax.grad(self.loss)(x)

    def value_and_grad(self, x: Float[Array, "..."]) -> tuple[Float[Array, ""], Float[Array, "..."]]:
        """``(f_t(x), grad f_t(x))``."""
        return jax.value_and_grad(self.loss)(x)

    def constraints_jacobian(self, x: Float[Array, "..."]) -> Float[Array, "N ..."]:
        """``J g_t(x)``, shape ``(N, *x.shape)``."""
        return jax.jacrev(self.constraints)(x)


class Bandit(eqx.Module):
    """The values ``f_t(x_t)`` and ``g_t(x_t)`` at the played point only."""

    loss: Float[Array, ""]
    constraints: Float[Array, " N"]


def problem_lookahead(problem: AbstractProblem) -> int | None:
    """How many rounds past the coming one ``problem``'s simulator predicts (``None``: no limit).

    The problem's declared [`prediction_lookahead`][ocokit.problems.AbstractProblem.prediction_lookahead].
    """
    return problem.prediction_lookahead()


class Predictions(eqx.Module):
    """A prediction oracle: values of a model ``l_k`` of round k's cost at windows the learner picks.

    Built by the engine after round ``t`` (and once before round 1, with ``t = 0``) for a learner whose
    feedback kind is ``PREDICTIONS``; it serves the coming round ``now = t + 1``. Round k's data is
    ``problem.round_data(episode, fold_in(env_key, k), k)``, the very data the engine uses at round k, and
    ``l_k(w) = problem.prediction(data_k, w)`` (Ye et al., Assumption 3: ``|l_k - f_k| <= phi_k``; by
    default the exact ``f_k``). A window ``w`` has shape
    ``(h, *domain.shape)``, oldest decision first (``h = problem.memory()``).

    The window of rounds is enforced here: a query for round ``k`` is answered only if
    ``now <= k <= now + lookahead``; any other query returns ``nan``. Such a value is flagged, never
    silent: it propagates to the decision and the engine stops the run naming the round. ``lookahead`` is
    the problem's ([`problem_lookahead`][ocokit.feedback.problem_lookahead]; ``None`` = no limit), narrowed by a learner
    with
    [`restrict`][ocokit.feedback.Predictions.restrict] to the window its own reading allows.

    The simulator (problem, episode, environment key) is private: a learner sees only
    [`predict`][ocokit.feedback.Predictions.predict],
    [`value_and_grad`][ocokit.feedback.Predictions.value_and_grad],
    [`available`][ocokit.feedback.Predictions.available], ``now`` and ``lookahead``.

    Attributes:
        now: the 1-based round about to be played.
        lookahead: the largest ``k - now`` answered (static), or ``None``.
    """

    _problem: AbstractProblem
    _episode: Any
    _env_key: PRNGKeyArray
    now: Array
    lookahead: int | None = eqx.field(static=True, default=None)

    @classmethod
    def of(cls, problem: AbstractProblem, episode: Any, env_key: Any, t: Any) -> Predictions:
        """The oracle built after round ``t`` (``t = 0``: before round 1), serving round ``t + 1``."""
        if env_key is None or t is None:
            raise ValueError(
                "PREDICTIONS feedback needs the round context (episode, env_key, t) to simulate upcoming "
                "rounds; ocokit.run and ocokit.sweep provide it, Session does not"
            )
        return cls(problem, episode, env_key, jnp.asarray(t, jnp.int32) + 1, problem_lookahead(problem))

    def restrict(self, lookahead: int) -> Predictions:
        """The same oracle answering at most ``lookahead`` rounds ahead (never wider than the problem's)."""
        if isinstance(lookahead, bool) or not isinstance(lookahead, int) or lookahead < 0:
            raise ValueError(f"lookahead must be an integer >= 0, got {lookahead!r}")
        new = lookahead if self.lookahead is None else min(lookahead, self.lookahead)
        return Predictions(self._problem, self._episode, self._env_key, self.now, new)

    def available(self, k: Array) -> Array:
        """Whether round ``k`` lies in the window ``now <= k <= now + lookahead``."""
        ok = k >= self.now
        return ok if self.lookahead is None else ok & (k <= self.now + self.lookahead)

    def _model(self, k: Array, window: Array) -> Array:
        data = round_at(self._problem, self._episode, self._env_key, k)
        memory = self._problem.memory()

        def one(w):
            return self._problem.prediction(data, w if memory > 1 else w[0])

        batch = window.shape[: window.ndim - 1 - len(self._problem.domain.shape)]
        flat = window.reshape((-1, *window.shape[len(batch) :]))
        return jax.vmap(one)(flat).reshape(batch)

    def predict(self, k: Array, window: Array) -> Array:
        """``l_k(window)``, or ``nan`` if ``k`` is outside the window.

        ``window`` has shape ``(h, *domain.shape)``, or ``(p, h, *domain.shape)`` for p query windows of the
        same round (one simulation of round k's data, values of shape ``(p,)``).
        """
        value = self._model(k, window)
        return jnp.where(self.available(k), value, jnp.nan)

    def value_and_grad(self, k: Array, window: Array) -> tuple[Array, Array]:
        """``(l_k(window), grad l_k(window))``; ``nan`` outside the window.

        First-order predictions are outside the setting of Ye et al. (values only, its Remark 1): this is the
        full-information reference (Li, Qu and Li's receding-horizon gradient setting) used for reductions
        and tests.
        """
        value, grad = jax.value_and_grad(self._model, argnums=1)(k, window)
        ok = self.available(k)
        return jnp.where(ok, value, jnp.nan), jnp.where(ok, grad, jnp.nan)


def make_feedback(
    kind: FeedbackKind,
    problem: AbstractProblem,
    data: Any,
    loss: Any,
    constraints: Any,
    *,
    episode: Any = None,
    env_key: Any = None,
    t: Any = None,
):
    """The feedback object of ``kind`` for one round (used by the engine and by ``Session``).

    ``episode``, ``env_key`` and the 1-based round ``t`` are the round's context, for feedback kinds
    that look beyond the current round (predictions of upcoming rounds); ``Session`` passes ``None``, so
    ``PREDICTIONS`` raises ``ValueError`` there.
    """
    if kind is PREDICTIONS:
        return Predictions.of(problem, episode, env_key, t)
    del episode, env_key, t
    if kind is FULL_INFORMATION:
        return FullInformation(problem, data)
    if kind is ZEROTH_ORDER:
        return ZerothOrder(problem, data)
    if kind is BANDIT:
        return Bandit(loss, constraints)
    raise ValueError(f"unknown feedback kind {kind!r}; expected one of {[k.value for k in FeedbackKind]}")


def before_round_one(kind: FeedbackKind, problem: AbstractProblem, episode: Any, env_key: Any) -> Predictions | None:
    """The feedback of ``kind`` available before round 1, which the engine hands to ``AbstractLearner.prepare``
    for every learner: the prediction oracle of the first window for ``PREDICTIONS`` (built after "round 0"),
    ``None`` for the other kinds (nothing is known before playing)."""
    return Predictions.of(problem, episode, env_key, 0) if kind is PREDICTIONS else None


# --------------------------------------------------------------------------------------------------
# Sampling laws and gradient estimators.


def sample_unit_sphere(key: PRNGKeyArray, shape: tuple[int, ...], dtype=None) -> Float[Array, "..."]:
    """A point drawn uniformly from the unit sphere ``{u : ||u||_F = 1}`` of arrays of ``shape``."""
    g = jax.random.normal(key, shape, dtype=dtype or jnp.result_type(float))
    return g / jnp.linalg.norm(g.ravel())


def one_point_sphere_estimate(
    value: Float[Array, ""], u: Float[Array, "..."], delta: Float[Array, ""]
) -> Float[Array, "..."]:
    """Flaxman et al.'s one-point estimator ``(n / delta) f(x + delta u) u`` of ``grad f_hat_delta(x)``.

    ``value`` is the loss observed at the played point ``x + delta u``, ``u`` uniform on the unit sphere
    and ``n`` the dimension; unbiased for the gradient of the ball-smoothed loss (Flaxman, Kalai,
    McMahan, SODA 2005, Lemma 1).
    """
    return (u.size / delta) * value * u


def two_point_quotient(plus: Array, minus: Array, delta: Array) -> Array:
    """The central difference quotient ``(f(x + delta u) - f(x - delta u)) / (2 delta)`` from the two values.

    The scalar that multiplies the direction in [`two_point_estimate`][ocokit.feedback.two_point_estimate], for callers
    that evaluate the
    two query points themselves (e.g. in one batched oracle call).
    """
    return (plus - minus) / (2.0 * delta)


def two_point_estimate(
    loss: Callable[[Array], Array],
    x: Float[Array, "..."],
    u: Float[Array, "..."],
    delta: Float[Array, ""],
    scale: Float[Array, ""] | float = 1.0,
) -> Float[Array, "..."]:
    """Symmetric two-point estimator ``scale (f(x + delta u) - f(x - delta u)) / (2 delta) u``.

    With ``u`` uniform on the sphere use ``scale = n``; with Gaussian-type smoothing directions
    (``sample_direction``) use ``scale = 1`` (Nesterov and Spokoiny 2017).
    """
    return scale * two_point_quotient(loss(x + delta * u), loss(x - delta * u), delta) * u


SMOOTHING_LAWS = ("gaussian", "rademacher", "sphere", "truncated_gaussian")
"""Laws of [`sample_direction`][ocokit.feedback.sample_direction] (``"bernoulli"`` is accepted for ``"rademacher"``)."""

_LAW_ALIASES = {"bernoulli": "rademacher"}
_HALF_WIDTH_REQUIRED = "half_width is required for the truncated_gaussian law (truncated_gaussian_half_width)"


def smoothing_law(law: str) -> str:
    """The canonical name of a smoothing law; ``ValueError`` listing the valid names otherwise."""
    name = _LAW_ALIASES.get(law, law)
    if name not in SMOOTHING_LAWS:
        raise ValueError(f"law must be one of {sorted((*SMOOTHING_LAWS, *_LAW_ALIASES))}, got {law!r}")
    return name


def truncated_gaussian_half_width(d: int, h: int = 1) -> float:
    """Definition 1 of Ye et al. (arXiv 2024): coordinates truncated to ``[-a, a]``, ``a = (2 d^2 (2h - 1))^(-1/4)``.

    ``d`` is the decision dimension and ``h`` the memory; then ``||u||^4 <= 1 / (2 (2h - 1))``, the bound
    the proofs of Theorems 1-2 use. The paper's experiments use ``a = 2`` instead (Sec. 5).
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    if isinstance(h, bool) or not isinstance(h, int) or h < 1:
        raise ValueError(f"h must be an integer >= 1, got {h!r}")
    return (2.0 * d * d * (2 * h - 1)) ** -0.25


def truncated_gaussian_moments(half_width: Any) -> tuple[Array, Array, Array]:
    """``(kappa, E[u^2], E[u^4])`` of N(0, 1) truncated to ``[-a, a]`` (``a = half_width``), in closed form.

    With ``phi`` the standard normal density and ``kappa = Phi(a) - Phi(-a) = erf(a / sqrt 2)``:
    ``E[u^2] = 1 - 2 a phi(a) / kappa`` and ``E[u^4] = 3 E[u^2] - 2 a^3 phi(a) / kappa`` (by parts).
    """
    a = jnp.asarray(half_width, dtype=jnp.result_type(float))
    kappa = jax.lax.erf(a / math.sqrt(2.0))
    density = jnp.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
    second = 1.0 - 2.0 * a * density / kappa
    fourth = 3.0 * second - 2.0 * a**3 * density / kappa
    return kappa, second, fourth


def sample_truncated_gaussian(key: PRNGKeyArray, shape: tuple[int, ...], half_width: Any, dtype: Any = None) -> Array:
    """Independent N(0, 1) coordinates truncated to ``[-a, a]``, by inverse CDF (exact for any ``a > 0``).

    ``u_i = Phi^{-1}(Phi(-a) + U_i (Phi(a) - Phi(-a)))`` with ``U_i`` uniform on (0, 1) (Ye et al.,
    Definition 1; the truncation is a box per coordinate, not a ball), computed as
    ``sqrt(2) erfinv(kappa (2 U_i - 1))`` with ``kappa = erf(a / sqrt 2)`` (``Phi^{-1}(q) = sqrt 2 erfinv(2q - 1)``).
    """
    dtype = dtype or jnp.result_type(float)
    a = jnp.asarray(half_width, dtype=dtype)
    kappa = jax.lax.erf(a / math.sqrt(2.0))
    uniform = jax.random.uniform(key, shape, dtype=dtype, minval=-1.0, maxval=1.0)
    u = math.sqrt(2.0) * jax.lax.erf_inv(kappa * uniform)
    return jnp.clip(u, -a, a)


def sample_direction(
    key: PRNGKeyArray, shape: tuple[int, ...], law: str, *, half_width: Any = None, dtype: Any = None
) -> Array:
    """A random smoothing direction of ``shape`` drawn from ``law`` (one of `SMOOTHING_LAWS`).

    * ``"sphere"``: uniform on the unit sphere ([`sample_unit_sphere`][ocokit.feedback.sample_unit_sphere]); pair with
      ``scale = n`` in the
      estimators.
    * ``"gaussian"``: i.i.d. N(0, 1) coordinates (Nesterov and Spokoiny 2017; exact Stein identity).
    * ``"truncated_gaussian"``: i.i.d. N(0, 1) truncated to ``[-half_width, half_width]``
      ([`sample_truncated_gaussian`][ocokit.feedback.sample_truncated_gaussian]; Ye et al.'s Definition 1 with
      ``truncated_gaussian_half_width``, or
      the experiments' ``half_width = 2``). ``half_width`` is required and may be a traced array.
    * ``"rademacher"`` (alias ``"bernoulli"``): i.i.d. +-1 with probability 1/2 each (Ye et al., Sec. 5).

    With a Gaussian-type law, the two-point estimator's mean is ``E[u u^T] grad f = direction_variance *
    grad f`` for a quadratic f (exactly), so it is unbiased only when that variance is 1.
    """
    law = smoothing_law(law)
    dtype = dtype or jnp.result_type(float)
    if law == "sphere":
        return sample_unit_sphere(key, shape, dtype)
    if law == "gaussian":
        return jax.random.normal(key, shape, dtype=dtype)
    if law == "rademacher":
        return jax.random.rademacher(key, shape, dtype=dtype)
    if half_width is None:
        raise ValueError(_HALF_WIDTH_REQUIRED)
    return sample_truncated_gaussian(key, shape, half_width, dtype)


def direction_variance(law: str, shape: tuple[int, ...], *, half_width: Any = None) -> Array:
    """Per-coordinate second moment ``E[u_i^2]`` of [`sample_direction`][ocokit.feedback.sample_direction] (``E[u u^T] =
    this * I``).

    1 for Gaussian and Rademacher, ``1 / n`` on the sphere (``n`` = number of entries of ``shape``), and
    ``1 - 2 a phi(a) / kappa`` for the truncated Gaussian
    ([`truncated_gaussian_moments`][ocokit.feedback.truncated_gaussian_moments]).
    """
    law = smoothing_law(law)
    if law in ("gaussian", "rademacher"):
        return jnp.asarray(1.0, dtype=jnp.result_type(float))
    if law == "sphere":
        return jnp.asarray(1.0 / math.prod(shape), dtype=jnp.result_type(float))
    if half_width is None:
        raise ValueError(_HALF_WIDTH_REQUIRED)
    return truncated_gaussian_moments(half_width)[1]


def one_point_estimate(value: Array, u: Array, delta: Array, scale: Array | float = 1.0) -> Array:
    """One-point estimator ``scale * f(x + delta u) / delta * u`` for any smoothing law.

    With ``u`` on the sphere and ``scale = n`` this is
    [`one_point_sphere_estimate`][ocokit.feedback.one_point_sphere_estimate] (Flaxman et al.);
    with Gaussian-type directions use ``scale = 1`` (Ye et al.'s single-point variant, Sec. 5).
    """
    return scale * value / delta * u

"""Mirror geometries (Bregman prox steps) and Hedge, the entropic online mirror descent learner.

A mirror geometry is a distance-generating function omega on a simple set X_0, its Bregman divergence
``D(x, y) = omega(x) - omega(y) - <grad omega(y), x - y>`` and the prox step

    P(y, h, alpha) = argmin_{x in X_0} <h, x> + alpha D(x, y)

(``alpha`` is an inverse step size). Two are written here, once, for every learner to reuse:

* [`EuclideanGeometry`][ocokit.algorithms.EuclideanGeometry]: ``omega = 1/2 ||x||_2^2``, so ``D = 1/2 ||x - y||_2^2``
  and
  ``P(y, h, alpha) = Pi_{X_0}(y - h / alpha)``, a projected gradient step through the set's own
  ``project`` (balls, boxes, the simplex, any [`AbstractSet`][ocokit.sets.AbstractSet]).
* [`EntropicGeometry`][ocokit.algorithms.EntropicGeometry]: the negative entropy ``omega = sum_i x_i log x_i`` on the
  probability simplex,
  so ``D`` is the KL divergence and ``P`` is the multiplicative-weights step
  ``x_i proportional to y_i exp(-h_i / alpha)``, computed in log space. `mix_uniform` is the
  uniform mixing ``(1 - nu) x + nu / d`` that keeps a KL prox centre away from the boundary (paper 004,
  Algorithm 2, Line 3).

[`Hedge`][ocokit.algorithms.Hedge] (exponentiated gradient) is the entropic online mirror descent learner built on the
same
step; projected OGD ([`OGD`][ocokit.algorithms.OGD]) is its Euclidean counterpart.

Reference (paper 004): S. Qiu and X. Wei, "Beyond O(sqrt(T)) Regret for Constrained Online Optimization: Gradual
Variations and Mirror Prox", preprint, June 2020 (Section 2's Bregman setup, Assumption 2.3, Algorithm 2).
"""

from __future__ import annotations

import abc
import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.algorithms._base import AbstractLearner, Needs, ProblemInfo, hyperparameter
from ocokit.feedback import FULL_INFORMATION, FeedbackKind
from ocokit.sets import AbstractSet, Simplex

_DECAYS = ("constant", "inverse_sqrt")


def euclidean_prox(domain: AbstractSet, center: Array, h: Array, alpha: Any) -> Array:
    """``argmin_{x in X_0} <h, x> + (alpha / 2) ||x - center||_2^2 = Pi_{X_0}(center - h / alpha)``."""
    return domain.project(center - h / alpha).astype(center.dtype)


def entropic_prox(domain: Simplex, center: Array, h: Array, alpha: Any) -> Array:
    """``argmin_{x in Delta} <h, x> + alpha KL(x, center)``: ``x_i ~ center_i exp(-h_i / alpha)``.

    On a simplex ``o + r Delta`` (``offset`` o, ``radius`` r) the step acts on ``(x - o) / r``. Computed in
    log space (``z = log(center - o) - h / alpha``, ``x = o + r softmax(z)``), so large ``h / alpha`` never
    overflows; a zero entry of the centre stays zero.
    """
    dtype = center.dtype
    o, r = domain.offset.astype(dtype), domain.radius.astype(dtype)
    u = jnp.maximum(center - o, 0.0)
    safe = jnp.where(u > 0, u, 1.0)
    z = jnp.where(u > 0, jnp.log(safe), -jnp.inf) - h / alpha
    return (o + r * jax.nn.softmax(z)).astype(dtype)


def mix_uniform(domain: AbstractSet, x: Array, nu: Any) -> Array:
    """``(1 - nu) x + nu c``, ``c = domain.center()`` (uniform ``r / d`` on a simplex; paper 004 Alg. 2)."""
    return ((1 - nu) * x + nu * domain.center()).astype(x.dtype)


def kl_divergence(x: Array, y: Array) -> Array:
    """``sum_i x_i log(x_i / y_i)``, ``0 log 0 = 0`` (points of one simplex; ``inf`` if ``y_i = 0 < x_i``)."""
    safe_x = jnp.where(x > 0, x, 1.0)
    return jnp.sum(jnp.where(x > 0, x * (jnp.log(safe_x) - jnp.log(y)), 0.0))


class AbstractMirrorGeometry(eqx.Module):
    """A distance-generating function omega on a simple set X_0: its Bregman divergence and prox step.

    * ``prox(domain, center, h, alpha)``: ``argmin_{x in X_0} <h, x> + alpha D(x, center)``, in closed form.
    * ``divergence(x, y)``: ``D(x, y)``.
    * ``norm`` / ``dual_norm``: the norm ``||.||`` in which omega is ``modulus``-strongly convex, and its dual
      (the norms of the constants L_f, L_g, H and of the gradient variation).
    * ``divergence_bound(domain)``: R^2 with ``D(x, y) <= R^2`` on X_0 (``inf`` when unbounded); ``bounded``
      tells statically whether it is finite on every compact domain (Assumption 2.3 of Qiu and Wei, arXiv 2020).
    * ``check_domain(domain)``: ``ValueError`` when the geometry does not apply to ``domain``.

    Geometries have no fields: they are structural choices, stored as static fields of a learner.
    """

    name: ClassVar[str]
    bounded: ClassVar[bool]

    @abc.abstractmethod
    def prox(self, domain: AbstractSet, center: Array, h: Array, alpha: Any) -> Array:
        """``argmin_{x in X_0} <h, x> + alpha D(x, center)``."""

    @abc.abstractmethod
    def divergence(self, x: Array, y: Array) -> Float[Array, ""]:
        """The Bregman divergence ``D(x, y)``."""

    @abc.abstractmethod
    def norm(self, v: Array) -> Float[Array, ""]:
        """The primal norm ``||v||``."""

    @abc.abstractmethod
    def dual_norm(self, v: Array) -> Float[Array, ""]:
        """The dual norm ``||v||_*``."""

    @abc.abstractmethod
    def modulus(self, domain: AbstractSet) -> Any:
        """rho: ``<x - y, grad omega(x) - grad omega(y)> >= rho ||x - y||^2`` on ``domain``."""

    @abc.abstractmethod
    def divergence_bound(self, domain: AbstractSet) -> Any:
        """R^2 with ``D(x, y) <= R^2`` for all ``x, y`` in ``domain`` (``inf`` if unbounded)."""

    def check_domain(self, domain: AbstractSet) -> None:
        """Raise ``ValueError`` if the geometry's prox step is not available on ``domain``."""
        del domain


class EuclideanGeometry(AbstractMirrorGeometry):
    """``omega(x) = 1/2 ||x||_2^2``: ``D(x, y) = 1/2 ||x - y||_2^2``, modulus 1 w.r.t. l2 (self-dual).

    prox: ``Pi_{X_0}(y - h / alpha)`` through ``domain.project`` (exact for balls, boxes and the simplex).
    ``R^2 = diameter^2 / 2`` (``2 r^2`` for a ball of radius r, ``||u - l||^2 / 2`` for a box, 1 for the
    probability simplex): the bound ``D <= R^2`` on X_0 of Qiu and Wei's Assumption 2.3.
    """

    name: ClassVar[str] = "euclidean"
    bounded: ClassVar[bool] = True

    def prox(self, domain, center, h, alpha):
        return euclidean_prox(domain, center, h, alpha)

    def divergence(self, x, y):
        return 0.5 * jnp.sum((x - y) ** 2)

    def norm(self, v):
        return jnp.linalg.norm(jnp.ravel(v))

    def dual_norm(self, v):
        return jnp.linalg.norm(jnp.ravel(v))

    def modulus(self, domain):
        del domain
        return 1.0

    def divergence_bound(self, domain):
        return 0.5 * domain.diameter**2


class EntropicGeometry(AbstractMirrorGeometry):
    """The negative entropy ``omega(x) = sum_i x_i log x_i`` on a simplex: ``D = KL``, l1 / l_inf norms.

    prox: the multiplicative-weights step of `entropic_prox`, O(d). On ``o + r Delta`` the
    divergence is ``sum_i u_i log(u_i / v_i)`` of ``u = x - o``, ``v = y - o``, with modulus ``1 / r``
    w.r.t. l1 (Pinsker). Unbounded near the boundary (``R^2 = inf``; Qiu and Wei, Remark 2.4), hence the
    uniform mixing of `mix_uniform` in Algorithm 2. Only for ``Simplex(capped=False)``; the entropy
    sign of Qiu and Wei (``omega = -sum x log x``, the concave entropy) is a typo; its KL formula is right.
    """

    name: ClassVar[str] = "entropic"
    bounded: ClassVar[bool] = False

    def prox(self, domain, center, h, alpha):
        return entropic_prox(domain, center, h, alpha)

    def divergence(self, x, y):
        return kl_divergence(x, y)

    def norm(self, v):
        return jnp.sum(jnp.abs(v))

    def dual_norm(self, v):
        return jnp.max(jnp.abs(v))

    def modulus(self, domain):
        return 1.0 / domain.radius

    def divergence_bound(self, domain):
        del domain
        return math.inf

    def check_domain(self, domain):
        if not isinstance(domain, Simplex) or domain.capped:
            raise ValueError(
                f"the entropic geometry needs the probability simplex ocokit.sets.Simplex(capped=False), "
                f"got {type(domain).__name__}{' (capped)' if isinstance(domain, Simplex) else ''}"
            )


# --------------------------------------------------------------------------------------------------
# Hedge: entropic online mirror descent.


class _HedgeState(eqx.Module):
    x: Float[Array, " d"]  # x_t, the decision to play
    t: Int[Array, ""]  # rounds absorbed so far
    domain: Simplex  # X, from the learner's info


class Hedge(AbstractLearner):
    r"""Hedge / exponentiated gradient: online mirror descent with the negative entropy on the simplex.

    Update (after playing ``x_t`` and seeing ``f_t``), with ``eta_t = eta`` or ``eta / sqrt(t)``:

    \[
    x_{t+1} = (1 - \nu)\, P_{KL}\big(x_t, \eta_t \nabla f_t(x_t), 1\big) + \nu / d, \qquad
    P_{KL}(y, h, 1)_i = \frac{y_i\, e^{-h_i}}{\sum_j y_j\, e^{-h_j}},
    \]

    starting from the uniform point. ``nu = 0`` is the classic algorithm; ``nu > 0`` mixes with the
    uniform distribution (fixed share), as Algorithm 2 of Qiu and Wei (arXiv 2020) does for its prox centre. The
    long-term constraints are ignored: Hedge is the entropic baseline of the ``simplex-mirror-prox`` experiment, as
    [`OGD`][ocokit.algorithms.OGD] is the Euclidean one. The prox step is `entropic_prox`.

    Guarantee: with the negative entropy 1-strongly convex w.r.t. l1 (Pinsker) and ``nu = 0``, the mirror
    descent bound gives ``Regret(T) <= ln(d) / eta + (eta / 2) sum_t ||grad f_t(x_t)||_inf^2``, so the
    constant ``eta = sqrt(2 ln d / T) / F`` of [`from_theory`][ocokit.algorithms.Hedge.from_theory] gives ``Regret(T) <=
    F sqrt(2 T ln d)``
    when ``||grad f_t||_inf <= F`` (the online mirror descent bound for the entropic regulariser; Kivinen and
    Warmuth 1997, Shalev-Shwartz 2012).

    Args:
        eta: step size, > 0 (the inverse of the prox weight alpha).
        nu: uniform mixing weight in ``[0, 1)`` (default 0).
        decay: ``"constant"`` (default) or ``"inverse_sqrt"`` (``eta_t = eta / sqrt(t)``; static).

    Example:
        >>> import jax.numpy as jnp, ocokit
        >>> problem = ocokit.problems.CustomProblem(
        ...     domain=ocokit.sets.Simplex(3), loss=lambda c, x: c @ x, data=jnp.array([[1.0, 0.0, 2.0]]))
        >>> traj = ocokit.run(Hedge(eta=0.5), problem, T=20, record_decisions=True)
        >>> int(traj.decisions[-1].argmax())
        1

    References:
        J. Kivinen and M. K. Warmuth. Exponentiated gradient versus gradient descent for linear predictors.
        Information and Computation 132(1), 1997. S. Shalev-Shwartz. Online learning and online convex
        optimization. Foundations and Trends in Machine Learning 4(2), 2012.
    """

    eta: Float[Array, ""] = hyperparameter()
    nu: Float[Array, ""] = hyperparameter(default=0.0)
    decay: str = eqx.field(static=True, default="constant")
    feedback: ClassVar[FeedbackKind] = FULL_INFORMATION

    def __check_init__(self):
        _checks.positive("eta", self.eta)
        arr = _checks._concrete(self.nu)
        if arr is not None and not (arr.min() >= 0 and arr.max() < 1):
            raise ValueError(f"nu must be in [0, 1), got {arr if arr.ndim else arr.item()}")
        _checks.one_of("decay", self.decay, _DECAYS)

    needs: ClassVar[Needs] = Needs(constants=("grad_bound",), sets=(Simplex,))

    @classmethod
    def from_theory(cls, info: ProblemInfo, **overrides: Any) -> Hedge:
        """``eta = sqrt(2 ln d / T) / F``, F bounding ``||grad f_t||_inf`` (regret ``<= F sqrt(2 T ln d)``).

        Args:
            info: the problem's information (the domain must be a simplex).
            **overrides: ``grad_bound``, F (default ``info.constants.grad_bound``, an l2 bound, hence also an
                l_inf one), or any other constructor argument (``nu``, ``decay``, or ``eta`` itself).
        """
        EntropicGeometry().check_domain(info.domain)
        info = info.giving(overrides)
        F = info.require("grad_bound", "Hedge.from_theory")
        d = info.domain.shape[0]
        eta = math.sqrt(2 * math.log(d) / info.horizon) / F
        return cls.build({"eta": eta}, overrides)

    def init(self, info, key):
        del key
        EntropicGeometry().check_domain(info.domain)
        return _HedgeState(x=info.domain.center(), t=jnp.asarray(0, jnp.int32), domain=info.domain)

    def decide(self, state):
        return state.x

    def update(self, state, x, feedback):
        domain = state.domain
        t = state.t + 1
        step = self.eta if self.decay == "constant" else self.eta / jnp.sqrt(t.astype(x.dtype))
        y = entropic_prox(domain, x, step * feedback.grad(x), 1.0)
        return _HedgeState(x=mix_uniform(domain, y, self.nu), t=t, domain=domain)

    def diagnostics(self, state):
        return {"oracle_calls": jnp.asarray(1, jnp.int32)}

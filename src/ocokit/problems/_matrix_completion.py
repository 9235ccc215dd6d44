"""Online matrix completion over a trace-norm ball with random trace constraints (paper 000, Experiments)."""

from __future__ import annotations

import math
import os
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ocokit import _checks
from ocokit.datasets import Ratings, load_filmtrust, load_movielens
from ocokit.problems._base import AbstractProblem, ProblemConstants
from ocokit.sets import NuclearNormBall

SAMPLINGS = ("all", "entry", "minibatch")
"""Which observed entries enter round t's loss: all of O (default), one sampled entry, or a sampled mini-batch."""
CONSTANT_RULES = ("data", "worst_case")
"""How [`OnlineMatrixCompletion`][ocokit.problems.OnlineMatrixCompletion] computes its constants: measured on the
instance, or bounds from rho."""


def synthetic_low_rank_ratings(
    m: int,
    n: int,
    *,
    rank: int = 5,
    n_obs: int | None = None,
    low: float = 1.0,
    high: float = 5.0,
    step: float | None = None,
    noise: float = 0.0,
    seed: int = 0,
) -> Ratings:
    """Observed entries of a random rank-``rank`` ``m x n`` matrix with values in ``[low, high]``.

    ``M = U V^T`` with standard Gaussian factors, mapped affinely onto ``[low, high]`` (its min to ``low``
    and max to ``high``), plus ``N(0, noise^2)`` noise, clipped to ``[low, high]`` and rounded to multiples
    of ``step`` above ``low`` when ``step`` is given (1 for MovieLens-like stars, 0.5 for FilmTrust-like).
    ``n_obs`` distinct entries (default ``ceil(0.06 m n)``, MovieLens' density) are sampled uniformly
    without replacement.

    Returns:
        A [`ocokit.datasets.Ratings`][ocokit.datasets.Ratings] (``source = "synthetic"``), usable wherever a loaded
        dataset is.
    """
    for name, v in (("m", m), ("n", n), ("rank", rank)):
        _checks.positive_int(name, v)
    _checks.greater_than("high - low", high - low, 0.0)
    _checks.nonnegative("noise", noise)
    n_obs = math.ceil(0.06 * m * n) if n_obs is None else n_obs
    _checks.positive_int("n_obs", n_obs)
    if n_obs > m * n:
        raise ValueError(f"n_obs must be <= m n = {m * n}, got {n_obs}")
    rng = np.random.default_rng(seed)
    full = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    span = full.max() - full.min()
    full = low + (high - low) * (full - full.min()) / (span if span > 0 else 1.0)
    flat = rng.choice(m * n, size=n_obs, replace=False)
    users, items = np.divmod(flat, n)
    values = np.clip(full[users, items] + noise * rng.standard_normal(n_obs), low, high)
    if step is not None:
        _checks.positive("step", step)
        values = low + step * np.round((values - low) / step)
    return Ratings(users, items, values, m, n, f"synthetic(m={m}, n={n}, rank={rank}, seed={seed})")


class OnlineMatrixCompletion(AbstractProblem):
    """Online matrix completion with time-varying trace constraints (Wang, Wan and Zhang, AAAI 2025, "Experiments").

    The target ``M in R^{m x n}`` is observed on a set O of entries (a ratings matrix). Round t:

        f_t(X) = sum_{(i,j) in O_t} (X_ij - M_ij)^2 / 2,     g_t(X) = Tr(P_t X),     K = {X : ||X||_* <= rho},

    with ``P_t`` uniform on ``[-1, 1]^{m x n}``, fresh each round (drawn inside the compiled run from round t's
    key and never stored for all rounds). ``O_t`` is, by ``sampling``:

    * ``"all"`` (default): the whole of O every round, the paper's formula (its f_t sums over O). This is the
      only reading under which the methods learn at reachable horizons: with one sampled entry per round the
      gradients are 1-sparse and nothing generalises to unseen entries (on a 200 x 300 synthetic stand-in
      up to T = 5000, every method's cumulative loss stays within 0.99-1.02 of playing X = 0), while with
      the whole of O every method's loss falls well below X = 0's (MovieLens, T = 1000: SCOFW-TVC 0.07 of
      it). Then f_t is the same every round and the time variation is in the constraint ``P_t``;
    * ``"entry"``: one entry of O drawn uniformly with replacement (the paper's text: "the learner receives
      a sampled data (i, j)"; the style of Hazan and Kale 2012);
    * ``"minibatch"``: ``batch_size`` entries drawn uniformly with replacement (loss summed over them).

    Constants (the paper states none), by ``constants``:

    * ``"data"`` (default), measured on the instance where the methods move, the segment from their start
      ``X = 0`` to a completion of the data (``P_O X = M_O``), along which ``||grad f_t||`` falls linearly:
      ``grad_bound = ||grad f_t(0)||_F`` (``||M_O||_F`` for ``"all"``, ``batch_size max|M|`` per sample)
      and ``loss_bound = f_t(0)``; for ``P_t`` as drawn, ``constraint_grad_bound = sqrt(m n / 3)``
      (``E ||P_t||_F^2 = m n / 3``; ``||P_t||_F`` concentrates there) and ``constraint_bound =
      rho (sqrt(m) + sqrt(n)) / sqrt(3)`` (``|Tr(P_t X)| <= ||P_t||_op ||X||_*``, with the spectral norm
      of an i.i.d. matrix of variance 1/3 at ``(sqrt(m) + sqrt(n)) / sqrt(3)``, Bai-Yin);
    * ``"worst_case"``: bounds over all of K from rho alone: ``||grad f_t|| <= rho + ||M_O||_F``
      (``batch_size (rho + max|M|)`` per sample), ``|f_t| <= (rho + ||M_O||_F)^2 / 2``,
      ``||grad g_t||_F <= sqrt(m n)``, ``|g_t| <= rho sqrt(m n)``.

    Both: ``D = 2 rho``, ``r = rho / sqrt(min(m, n))`` (the set's). f_t is not strongly convex in X (only
    along the observed entries): ``strong_convexity = 0``; the paper runs its strongly convex methods without
    giving alpha_f, and the experiments use alpha_f = 1, the curvature along the observed entries.

    Args:
        ratings: the observed entries ([`ocokit.datasets.load_movielens`][ocokit.datasets.load_movielens],
            ``load_filmtrust`` or
            [`synthetic_low_rank_ratings`][ocokit.problems.synthetic_low_rank_ratings]).
        radius: rho, the trace-norm radius (paper: ``10^4``).
        sampling: one of `SAMPLINGS` (default ``"all"``).
        constants: ``"data"`` (default) or ``"worst_case"``, see above.
        batch_size: entries per round for ``"minibatch"`` (``>= 1``).
        lmo_tol, lmo_max_iter: tolerance and step cap of the set's warm-started Lanczos LMO.

    Attributes:
        observed: with ``sampling="all"``, the m x n matrix holding M on O and NaN elsewhere, from which the
            loss's gradient is one elementwise expression ([`loss`][ocokit.problems.OnlineMatrixCompletion.loss]);
            ``None`` otherwise. It is built from
            ``users``, ``items`` and ``ratings`` here: a copy with other ratings must be constructed anew.

    Example:
        >>> from ocokit.problems import OnlineMatrixCompletion, synthetic_low_rank_ratings
        >>> problem = OnlineMatrixCompletion(synthetic_low_rank_ratings(6, 5, n_obs=12), radius=10.0)
        >>> problem.domain.shape, problem.num_constraints
        ((6, 5), 1)

    References:
        Y. Wang, Y. Wan, L. Zhang. Revisiting Projection-Free Online Learning with Time-Varying Constraints.
        AAAI 2025. E. Hazan, S. Kale. Projection-free online learning. ICML 2012.
    """

    domain: NuclearNormBall
    users: Int[Array, " n_obs"]
    items: Int[Array, " n_obs"]
    ratings: Float[Array, " n_obs"]
    observed: Float[Array, "m n"] | None
    sampling: str = eqx.field(static=True)
    constant_rule: str = eqx.field(static=True)
    batch_size: int = eqx.field(static=True)
    rho: float = eqx.field(static=True)
    rating_max: float = eqx.field(static=True)
    ratings_norm: float = eqx.field(static=True)
    source: str = eqx.field(static=True)

    def __init__(
        self,
        ratings: Ratings,
        *,
        radius: float = 1e4,
        sampling: str = "all",
        batch_size: int = 1,
        constants: str = "data",
        lmo_tol: float = 1e-6,
        lmo_max_iter: int = 300,
    ):
        if not isinstance(ratings, Ratings):
            raise ValueError(f"ratings must be an ocokit.datasets.Ratings, got {type(ratings).__name__}")
        _checks.one_of("sampling", sampling, SAMPLINGS)
        _checks.one_of("constants", constants, CONSTANT_RULES)
        _checks.positive_int("batch_size", batch_size)
        if sampling != "minibatch" and batch_size != 1:
            raise ValueError(f"batch_size must be 1 with sampling={sampling!r}, got {batch_size} (use 'minibatch')")
        _checks.positive("radius", radius)
        values = np.asarray(ratings.ratings, dtype=float)
        if values.size == 0:
            raise ValueError("ratings must hold at least one observed entry")
        self.domain = NuclearNormBall((ratings.n_users, ratings.n_items), radius, tol=lmo_tol, max_iter=lmo_max_iter)
        self.users = jnp.asarray(ratings.users, dtype=jnp.int32)
        self.items = jnp.asarray(ratings.items, dtype=jnp.int32)
        self.ratings = jnp.asarray(values)
        self.observed = None
        if sampling == "all":  # M on O and NaN elsewhere: the loss gradient as one elementwise expression
            observed = np.full((ratings.n_users, ratings.n_items), np.nan, dtype=self.ratings.dtype)
            observed[np.asarray(ratings.users), np.asarray(ratings.items)] = values
            self.observed = jnp.asarray(observed)
        self.sampling, self.batch_size, self.constant_rule = sampling, int(batch_size), constants
        self.rho = float(radius)
        self.rating_max = float(np.max(np.abs(values)))
        self.ratings_norm = float(np.linalg.norm(values))
        self.source = ratings.source

    @classmethod
    def from_movielens(cls, path: str | os.PathLike | None = None, **kwargs) -> OnlineMatrixCompletion:
        """MovieLens-100k (943 x 1682, the paper's full-information data), ``path`` or ``$OCOKIT_DATA``."""
        return cls(load_movielens(path), **kwargs)

    @classmethod
    def from_filmtrust(cls, path: str | os.PathLike | None = None, **kwargs) -> OnlineMatrixCompletion:
        """FilmTrust (1508 x 2071, the paper's bandit data) from ``path`` or ``$OCOKIT_DATA``."""
        return cls(load_filmtrust(path), **kwargs)

    num_constraints: ClassVar[int] = 1

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)``."""
        return self.domain.shape

    def round_data(self, episode, key, t):
        """Round t's data ``{"PT": P_t^T, "index": the sampled entries}``, a pure function of round t's key.

        ``key`` is split in two (``jax.random.split``). The first half draws the sampled entries of O
        (``jax.random.randint``; no ``"index"`` for ``sampling="all"``). The second gives two 32-bit words
        ``(s_0, s_1)`` (``jax.random.bits``) that key a counter-based hash for the dense ``P_t^T`` (m x n):
        entry ``(i, j)`` takes the last word ``w`` of ``pcg4d(i, j, s_0, s_1)`` (Jarzynski and Olano 2020:
        an LCG step on each word, a round of cross multiplications, a 16-bit xorshift, a second round), and
        its top 23 bits become a float32 by the exponent trick, ``bits(2^30 | w >> 9) - 3``: uniform on the
        grid ``{-1 + k 2^-22 : 0 <= k < 2^23}`` of ``[-1, 1)``, i.i.d. over entries and rounds, then cast to
        the ratings' dtype. 32-bit integer and float32 arithmetic only: the same numbers with or without
        ``jax_enable_x64``. Tests pin the stream (the first entries for a fixed key) and check it (every bit
        fair; neighbours in a row, in a column and in consecutive rounds uncorrelated).

        Why a hash: drawing P_t with threefry (``jax.random.uniform``) cost about 15 elementwise passes over
        the m x n matrix on a CPU at MovieLens-100k's size, about 40% of an OFW-TVC round; the hash costs
        about one to two, and being elementwise in ``(i, j)`` it is recomputed inside the fused passes that
        use P_t (the gradient sums) rather than read back (``benchmarks/projection_free.py``).

        References:
            M. Jarzynski, M. Olano. Hash Functions for GPU Rendering. Journal of Computer Graphics
            Techniques 9(3), 2020 (``pcg4d``, the multidimensional hash of their quality and speed study).
        """
        del episode, t
        k_entries, k_p = jax.random.split(key)
        s0, s1 = jax.random.bits(k_p, (2,), jnp.uint32)
        u32 = jnp.uint32
        i, j = (jax.lax.broadcasted_iota(u32, self.shape, axis) for axis in (0, 1))
        a, b, c, w = (v * u32(1664525) + u32(1013904223) for v in (i, j, s0, s1))  # pcg4d: the LCG step
        for last in (False, True):
            a = a + b * w
            b = b + c * a
            c = c + a * b
            w = w + b * c
            if not last:
                a, b, c, w = (v ^ (v >> u32(16)) for v in (a, b, c, w))
        unit = jax.lax.bitcast_convert_type((w >> u32(9)) | u32(0x40000000), jnp.float32)  # in [2, 4)
        data = {"PT": (unit - 3.0).astype(self.ratings.dtype)}
        if self.sampling != "all":
            data["index"] = jax.random.randint(k_entries, (self.batch_size,), 0, self.ratings.shape[0])
        return data

    def loss(self, data, x):
        """``f_t(X) = sum_{(i,j) in O_t} (X_ij - M_ij)^2 / 2``, summed in the order of the observed entries.

        With ``sampling="all"`` its derivative is the elementwise ``where((i, j) in O, X - M, 0)``
        (a custom JVP): the same numbers as differentiating the sum over O, which scatters the
        residuals into a zero matrix, in one pass that XLA fuses into the learner's own (the gradient sums).
        """
        if self.sampling == "all":
            return _observed_squares(x, self.users, self.items, self.ratings, self.observed)
        i = data["index"]
        return _squares(x, self.users[i], self.items[i], self.ratings[i])[0]

    def constraints(self, data, x):
        return jnp.sum(data["PT"] * x)[None]

    def zero_loss(self) -> float:
        """The (expected) loss per round of playing ``X = 0``: ``||M_O||^2 / 2``, or a sample's mean share of it."""
        r = np.asarray(self.ratings)
        return 0.5 * float(r @ r if self.sampling == "all" else self.batch_size * np.mean(r * r))

    def constants(self) -> ProblemConstants:
        m, n = self.shape
        if self.sampling == "all":
            data, slope = self.ratings_norm, 1.0  # ||grad f_t(0)|| and the loss's curvature
        else:
            data, slope = self.batch_size * self.rating_max, float(self.batch_size)
        if self.constant_rule == "data":
            return ProblemConstants(
                grad_bound=data,
                loss_bound=0.5 * data * (data / slope),
                constraint_bound=self.rho * (math.sqrt(m) + math.sqrt(n)) / math.sqrt(3.0),
                constraint_grad_bound=math.sqrt(m * n / 3.0),
                strong_convexity=0.0,
                smoothness=slope,
            )
        grad = data + slope * self.rho
        return ProblemConstants(
            grad_bound=grad,
            loss_bound=0.5 * grad * (grad / slope),
            constraint_bound=self.rho * math.sqrt(m * n),
            constraint_grad_bound=math.sqrt(m * n),
            strong_convexity=0.0,
            smoothness=slope,
        )


def _squares(x: Array, users: Array, items: Array, values: Array) -> tuple[Array, Array]:
    """``(sum_k (x[users_k, items_k] - values_k)^2 / 2, the residuals)``."""
    residual = x[users, items] - values
    return 0.5 * jnp.sum(residual * residual), residual


@jax.custom_jvp
def _observed_squares(x: Array, users: Array, items: Array, values: Array, observed: Array) -> Array:
    """The loss over all of O: ``sum_k (x[users_k, items_k] - values_k)^2 / 2``; ``observed`` is M on O, NaN off it.

    Its JVP (so its gradient) in ``x`` is the dense ``where(isnan(observed), 0, x - observed)``: the
    derivative of the sum is the residuals scattered into a zero matrix, and on O both are ``X_ij - M_ij``,
    computed the same way, so the gradient is the same bit for bit (the entries of O are distinct). Written
    elementwise, it joins the fused pass of the learner that consumes it instead of a zero matrix written and
    a scatter into it each round. ``values`` has its derivative (minus the residuals); ``observed`` only
    encodes O and M for the gradient and has none.
    """
    return _squares(x, users, items, values)[0]


@_observed_squares.defjvp
def _observed_squares_jvp(primals, tangents):
    x, users, items, values, observed = primals
    dx, _, _, dvalues, _ = tangents
    loss, residual = _squares(x, users, items, values)
    grad = jnp.where(jnp.isnan(observed), jnp.zeros((), x.dtype), x - observed.astype(x.dtype))
    return loss, jnp.sum(grad * dx) - jnp.sum(residual * dvalues)

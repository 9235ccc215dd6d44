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

SAMPLINGS = ("entry", "minibatch", "all")
"""Which observed entries enter round t's loss: one sampled entry, a sampled mini-batch, or all of O."""


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
        A :class:`ocokit.datasets.Ratings` (``source = "synthetic"``), usable wherever a loaded dataset is.
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
    """Online matrix completion with time-varying trace constraints (paper 000, section "Experiments").

    The target ``M in R^{m x n}`` is observed on a set O of entries (a ratings matrix). Round t:

        f_t(X) = sum_{(i,j) in O_t} (X_ij - M_ij)^2 / 2,     g_t(X) = Tr(P_t X),     K = {X : ||X||_* <= rho},

    with ``P_t`` uniform on ``[-1, 1]^{n x m}``, fresh each round. ``P_t`` is drawn inside the compiled run
    from round t's key (as its transpose, ``g_t(X) = <P_t^T, X>_F``: one elementwise pass for the value and
    the gradient ``P_t^T``; in float32 precision, then cast) and never stored for all rounds. ``O_t`` is,
    by ``sampling``:

    * ``"entry"`` (default): one entry of O drawn uniformly with replacement. The paper's text says "the
      learner receives a sampled data (i, j)", while its formula sums over O (which would make f_t the same
      every round); ocokit reads it as one sampled entry per round, in the style of Hazan and Kale 2012;
    * ``"minibatch"``: ``batch_size`` entries drawn uniformly with replacement (loss summed over them);
    * ``"all"``: the whole of O every round (the literal formula; then f_t is the same every round).

    Constants (not stated in the paper; derived here): ``D = 2 rho``, ``r = rho / sqrt(min(m, n))`` (the set's),
    ``||grad g_t||_F <= sqrt(m n)``, ``|g_t| <= rho sqrt(m n)``; per sampled entry
    ``||grad f_t|| <= rho + max|M|`` and ``|f_t| <= (rho + max|M|)^2 / 2`` (times ``batch_size`` for a
    mini-batch; ``rho + ||M_O||_F`` in place of ``rho + max|M|`` for ``"all"``). f_t is not strongly convex
    in X (only along the sampled entries): ``strong_convexity = 0``; the paper runs its strongly convex
    methods anyway without giving alpha_f; ocokit uses alpha_f = 1, the curvature along the observed entries.

    Args:
        ratings: the observed entries (:func:`ocokit.datasets.load_movielens`, ``load_filmtrust`` or
            :func:`synthetic_low_rank_ratings`).
        radius: rho, the trace-norm radius (paper: ``10^4``).
        sampling: one of :data:`SAMPLINGS`.
        batch_size: entries per round for ``"minibatch"`` (``>= 1``).
        lmo_tol, lmo_max_iter: tolerance and step cap of the set's warm-started Lanczos LMO.

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
    sampling: str = eqx.field(static=True)
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
        sampling: str = "entry",
        batch_size: int = 1,
        lmo_tol: float = 1e-6,
        lmo_max_iter: int = 300,
    ):
        if not isinstance(ratings, Ratings):
            raise ValueError(f"ratings must be an ocokit.datasets.Ratings, got {type(ratings).__name__}")
        _checks.one_of("sampling", sampling, SAMPLINGS)
        _checks.positive_int("batch_size", batch_size)
        if sampling == "entry" and batch_size != 1:
            raise ValueError(f"batch_size must be 1 with sampling='entry', got {batch_size} (use 'minibatch')")
        _checks.positive("radius", radius)
        values = np.asarray(ratings.ratings, dtype=float)
        if values.size == 0:
            raise ValueError("ratings must hold at least one observed entry")
        self.domain = NuclearNormBall((ratings.n_users, ratings.n_items), radius, tol=lmo_tol, max_iter=lmo_max_iter)
        self.users = jnp.asarray(ratings.users, dtype=jnp.int32)
        self.items = jnp.asarray(ratings.items, dtype=jnp.int32)
        self.ratings = jnp.asarray(values)
        self.sampling, self.batch_size = sampling, int(batch_size)
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
        del episode, t
        k_entries, k_p = jax.random.split(key)
        # float32 draws (half the random bits of float64; the RNG dominates a round's cost at 943 x 1682)
        PT = jax.random.uniform(k_p, self.shape, jnp.float32, minval=-1.0, maxval=1.0).astype(self.ratings.dtype)
        data = {"PT": PT}
        if self.sampling != "all":
            data["index"] = jax.random.randint(k_entries, (self.batch_size,), 0, self.ratings.shape[0])
        return data

    def _observed(self, data):
        if self.sampling == "all":
            return self.users, self.items, self.ratings
        i = data["index"]
        return self.users[i], self.items[i], self.ratings[i]

    def loss(self, data, x):
        users, items, values = self._observed(data)
        residual = x[users, items] - values
        return 0.5 * jnp.sum(residual * residual)

    def constraints(self, data, x):
        return jnp.sum(data["PT"] * x)[None]

    def constants(self) -> ProblemConstants:
        m, n = self.shape
        if self.sampling == "all":
            grad, smooth = self.rho + self.ratings_norm, 1.0
        else:
            grad, smooth = self.batch_size * (self.rho + self.rating_max), float(self.batch_size)
        return ProblemConstants(
            grad_bound=grad,
            loss_bound=0.5 * grad * (self.rho + (self.ratings_norm if self.sampling == "all" else self.rating_max)),
            constraint_bound=self.rho * math.sqrt(m * n),
            constraint_grad_bound=math.sqrt(m * n),
            strong_convexity=0.0,
            smoothness=smooth,
        )

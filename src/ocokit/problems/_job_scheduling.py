"""Online job scheduling across data centres (paper 003, Section 6.3, Fig. 4; Yu, Neely and Wei 2017 style).

Reference: J. Wang, B. Yan and Y. Liu, "Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with
Dynamics of Both Loss and Constraint", AAAI 2025 (paper 003), Section 6.3 and Appendix L.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ocokit import _checks
from ocokit.datasets import ELECTRICITY_REGIONS, ENV_VAR, load_electricity_prices, load_nyiso_5min
from ocokit.problems._base import AbstractProblem, ProblemConstants, all_rounds
from ocokit.sets import Box

SLOTS_PER_HOUR = 12
MAY_FIRST_HOUR = 2880
"""Hour index of 2023-05-01 00:00 UTC in the hourly price files (the paper's data start on May 1)."""
HOURS_PER_YEAR = 8760
PRICE_SOURCES = ("auto", "real", "synthetic", "nyiso")
"""The price sources of [`JobScheduling.from_source`][ocokit.problems.JobScheduling.from_source]."""
"""Rows of a full year (2023) of hourly prices."""

_BISECTIONS = 100


def _bisect_decreasing(phi, lo, hi, iterations: int = _BISECTIONS):
    """The bracket end ``hi`` after bisecting a non-increasing ``phi`` with ``phi(lo) > 0 >= phi(hi)``."""

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        positive = phi(mid) > 0
        return jnp.where(positive, mid, lo), jnp.where(positive, hi, mid)

    return jax.lax.fori_loop(0, iterations, body, (lo, hi))[1]


class JobScheduling(AbstractProblem):
    """Power allocation across data centres under a service-quality constraint (Wang, Yan and Liu, Sec. 6.3).

    ``R`` regions with ``centres_per_region`` data centres each (the paper: 10 x 10 = 100). Round t (a
    five-minute slot) has region prices ``p_t`` (each centre takes its region's price, ``c_t`` in
    ``R^{100}``) and ``lambda_t ~ Poisson(arrival_rate)`` arriving jobs (the paper: 2500):

        f_t(x) = <c_t, x>,    g_t(x) = lambda_t - sum_i h(x_i),    h(x) = 4 ln(1 + 4 x),    K = [0, 1000]^100.

    The logarithm is natural (with ``log10`` the capacity ``100 h(1000) ~ 1441 < 2500`` would make every
    slot infeasible). ``[g_t(x_t)]_+`` is the number of delayed jobs. Prices come from a ``(slots, R)``
    matrix (5-minute rows; round t reads row ``(t - 1) % slots``): build it with
    [`from_electricity_prices`][ocokit.problems.JobScheduling.from_electricity_prices] (real hourly prices of 10
    regions, each hour held over 12 slots; the
    stand-in for the paper's NYISO data), [`from_nyiso`][ocokit.problems.JobScheduling.from_nyiso] (a NYISO real-time
    5-minute zonal export, the
    paper's source), or [`synthetic`][ocokit.problems.JobScheduling.synthetic] (a clearly labelled diurnal curve plus
    noise; ``price_source``
    says which).

    Comparators (water-filling, exact up to a 100-step bisection on the multiplier): ``round_optimum``
    solves ``min <c_t, x>`` s.t. ``sum_i h(x_i) >= lambda_t``, ``x in K``; ``best_fixed`` the same with
    ``sum_t c_t`` and ``max_t lambda_t`` (one fixed allocation feasible in every slot).
    [`log_capacity_constraint`][ocokit.problems.JobScheduling.log_capacity_constraint] exposes the structure of ``g_t``
    to the per-round solvers of COLDQ
    and RECOO.

    Args:
        prices: ``(slots, R)`` price matrix (USD/MWh); negative prices are allowed.
        centres_per_region: data centres per region.
        arrival_rate: the Poisson mean of ``lambda_t``.
        upper: the box's upper bound (power cap per centre).
        capacity_scale, capacity_rate: ``a, b`` of ``h(x) = a ln(1 + b x)`` (the paper: 4, 4).
        price_source: a label for the price data (``"synthetic"`` for the fallback).

    Example:
        >>> import ocokit
        >>> problem = ocokit.problems.JobScheduling.synthetic(num_slots=288)
        >>> problem.domain.shape, problem.num_constraints, problem.price_source
        ((100,), 1, 'synthetic diurnal (not real data)')
    """

    constraint_structure: ClassVar[str] = "log_capacity"

    domain: Box
    prices: Float[Array, "slots regions"]
    centres_per_region: int = eqx.field(static=True)
    arrival_rate: float = eqx.field(static=True)
    capacity_scale: float = eqx.field(static=True)
    capacity_rate: float = eqx.field(static=True)
    upper: float = eqx.field(static=True)
    price_source: str = eqx.field(static=True)
    max_abs_price: float = eqx.field(static=True)

    def __init__(
        self,
        prices,
        *,
        centres_per_region: int = 10,
        arrival_rate: float = 2500.0,
        upper: float = 1000.0,
        capacity_scale: float = 4.0,
        capacity_rate: float = 4.0,
        price_source: str = "user",
    ):
        prices_np = np.asarray(prices, dtype=float)
        if prices_np.ndim != 2 or prices_np.shape[0] < 1 or prices_np.shape[1] < 1:
            raise ValueError(f"prices must be a (slots, regions) matrix, got shape {prices_np.shape}")
        if not np.all(np.isfinite(prices_np)):
            raise ValueError("prices must be finite")
        _checks.positive_int("centres_per_region", centres_per_region)
        for name, v in (
            ("arrival_rate", arrival_rate),
            ("upper", upper),
            ("capacity_scale", capacity_scale),
            ("capacity_rate", capacity_rate),
        ):
            _checks.positive(name, v)
        self.prices = jnp.asarray(prices_np)
        self.centres_per_region = centres_per_region
        self.domain = Box(0.0, float(upper), dim=prices_np.shape[1] * centres_per_region)
        self.upper = float(upper)
        self.arrival_rate = float(arrival_rate)
        self.capacity_scale, self.capacity_rate = float(capacity_scale), float(capacity_rate)
        self.price_source = str(price_source)
        self.max_abs_price = float(np.max(np.abs(prices_np)))

    # ----------------------------------------------------------------------------------------------
    # Constructors.

    @classmethod
    def from_electricity_prices(
        cls,
        path: str | os.PathLike | None = None,
        *,
        regions: Sequence[str] = ELECTRICITY_REGIONS,
        start_hour: int = MAY_FIRST_HOUR,
        num_slots: int = 2880,
        **kwargs,
    ) -> JobScheduling:
        """Real hourly prices ([`ocokit.datasets.load_electricity_prices`][ocokit.datasets.load_electricity_prices]),
        one region per region.

        Hours ``start_hour, start_hour + 1, ...`` (default 2023-05-01 00:00 UTC, as the paper's May 1-10
        window; wrapping around the year) are each held over 12 five-minute slots, giving ``num_slots``
        rows (2880 = ten days). Each file must hold the window's hours (the whole year, 8760 rows, when
        the window wraps around it).

        Raises:
            FileNotFoundError: no data location was given (``path`` is None and ``$OCOKIT_DATA`` unset),
                so a caller may fall back to [`synthetic`][ocokit.problems.JobScheduling.synthetic].
            ValueError: a location was given but a file is missing there, malformed (naming the file and
                line) or short of the window's hours (naming the file and the hours it lacks).
        """
        _checks.positive_int("num_slots", num_slots)
        start_hour = _checks.integer("start_hour", start_hour, 0, HOURS_PER_YEAR - 1)
        needed = start_hour + math.ceil(num_slots / SLOTS_PER_HOUR)
        needed = needed if needed <= HOURS_PER_YEAR else HOURS_PER_YEAR  # a window past the year wraps around
        try:
            hourly = load_electricity_prices(regions, path, hours=needed)
        except FileNotFoundError as err:
            if path is None and not os.environ.get(ENV_VAR):
                raise
            raise ValueError(f"job-scheduling prices: {err}") from None
        hours = (start_hour + np.arange(math.ceil(num_slots / SLOTS_PER_HOUR))) % hourly.shape[0]
        slots = np.repeat(hourly[hours], SLOTS_PER_HOUR, axis=0)[:num_slots]
        label = f"hourly day-ahead prices 2023 ({', '.join(regions)}) from hour {start_hour}, held 12 slots"
        return cls(slots, price_source=label, **kwargs)

    @classmethod
    def from_nyiso(
        cls,
        path: str | os.PathLike,
        *,
        zones: Sequence[str] | None = None,
        num_slots: int | None = None,
        **kwargs,
    ) -> JobScheduling:
        """A NYISO real-time 5-minute zonal LBMP export
        ([`ocokit.datasets.load_nyiso_5min`][ocokit.datasets.load_nyiso_5min]).

        One region per zone (the paper used 10 New York zones, 2017-05-01 to 05-10: 2880 slots);
        ``num_slots`` keeps the first rows.
        """
        prices, names = load_nyiso_5min(path, zones)
        if num_slots is not None:
            _checks.positive_int("num_slots", num_slots)
            prices = prices[:num_slots]
        return cls(prices, price_source=f"NYISO 5-minute LBMP ({', '.join(names)})", **kwargs)

    @classmethod
    def from_source(
        cls,
        source: str = "auto",
        num_slots: int = 2880,
        *,
        path: str | os.PathLike | None = None,
        start_hour: int = MAY_FIRST_HOUR,
        nyiso_path: str | os.PathLike | None = None,
        **kwargs,
    ) -> JobScheduling:
        """The prices of ``source`` (one of `PRICE_SOURCES`): ``"real"``
        ([`from_electricity_prices`][ocokit.problems.JobScheduling.from_electricity_prices] at ``path`` or
        ``$OCOKIT_DATA``), ``"synthetic"`` ([`synthetic`][ocokit.problems.JobScheduling.synthetic]), ``"nyiso"``
        ([`from_nyiso`][ocokit.problems.JobScheduling.from_nyiso] of ``nyiso_path``), or ``"auto"``: the real prices
        when a data location is given, else the labelled synthetic fallback (``price_source`` says which)."""
        _checks.one_of("source", source, PRICE_SOURCES)
        if source == "nyiso":
            if nyiso_path is None:
                raise ValueError("prices from 'nyiso' need nyiso_path=<NYISO 5-minute LBMP csv>")
            return cls.from_nyiso(nyiso_path, num_slots=num_slots, **kwargs)
        if source == "synthetic":
            return cls.synthetic(num_slots=num_slots, **kwargs)
        try:
            return cls.from_electricity_prices(path, start_hour=start_hour, num_slots=num_slots, **kwargs)
        except FileNotFoundError:
            if source == "real":
                raise
            return cls.synthetic(num_slots=num_slots, **kwargs)

    @classmethod
    def synthetic(cls, num_slots: int = 2880, *, regions: int = 10, seed: int = 0, **kwargs) -> JobScheduling:
        """A synthetic fallback: a diurnal price curve per region plus noise (NOT real data).

        Region r has price ``m_r (1 + 0.35 sin(2 pi (tau / 288 - phi_r))) + 3 N(0, 1)`` at slot ``tau``,
        with mean ``m_r ~ U(20, 60)`` USD/MWh and phase ``phi_r ~ U(0, 1)`` (NumPy seed ``seed``).
        """
        _checks.positive_int("num_slots", num_slots)
        _checks.positive_int("regions", regions)
        rng = np.random.default_rng(seed)
        mean, phase = rng.uniform(20.0, 60.0, regions), rng.uniform(0.0, 1.0, regions)
        tau = np.arange(num_slots)[:, None]
        prices = mean * (1.0 + 0.35 * np.sin(2 * np.pi * (tau / 288.0 - phase))) + 3.0 * rng.normal(
            size=(num_slots, regions)
        )
        return cls(prices, price_source="synthetic diurnal (not real data)", **kwargs)

    # ----------------------------------------------------------------------------------------------
    # The game.

    num_constraints: ClassVar[int] = 1

    @property
    def num_regions(self) -> int:
        """Number R of price regions."""
        return self.prices.shape[1]

    def round_data(self, episode, key, t):
        row = self.prices[(t - 1) % self.prices.shape[0]]
        c = jnp.repeat(row, self.centres_per_region)
        lam = jax.random.poisson(key, self.arrival_rate).astype(c.dtype)
        return {"c": c, "lam": lam}

    def capacity(self, x: Float[Array, " d"]) -> Float[Array, ""]:
        """Service capacity ``sum_i a ln(1 + b x_i)``."""
        return self.capacity_scale * jnp.sum(jnp.log1p(self.capacity_rate * x))

    def loss(self, data, x):
        return jnp.dot(data["c"], x)

    def constraints(self, data, x):
        return jnp.reshape(data["lam"] - self.capacity(x), (1,))

    # ----------------------------------------------------------------------------------------------
    # Comparators and the per-round solver.

    def _water_filling(self, c, lam):
        """``argmin <c, x>`` s.t. ``capacity(x) >= lam``, ``x in K`` (KKT: ``c_i = mu a b / (1 + b x_i)``)."""
        a, b, U = self.capacity_scale, self.capacity_rate, self.upper
        positive = c > 0
        safe_c = jnp.where(positive, c, 1.0)

        def x_of(mu):
            return jnp.where(positive, jnp.clip((mu * a * b / safe_c - 1.0) / b, 0.0, U), U)

        mu_hi = jnp.max(jnp.where(positive, c * (1.0 + b * U) / (a * b), 0.0)) + 1.0
        mu = _bisect_decreasing(lambda m: lam - self.capacity(x_of(m)), jnp.zeros_like(mu_hi), mu_hi)
        mu = jnp.where(lam - self.capacity(x_of(0.0)) <= 0, 0.0, mu)
        return x_of(mu)

    def round_optimum(self, data):
        return self._water_filling(data["c"], data["lam"])

    def best_fixed(self, episode, env_key, T):
        data = all_rounds(self, episode, env_key, T)
        return self._water_filling(data["c"].sum(axis=0), data["lam"].max())

    def log_capacity_constraint(self, data) -> tuple[Array, float, float]:
        """``(d, s, r)`` with ``g_t(x) = d - sum_i s ln(1 + r x_i)``: ``(lambda_t, a, b)``.

        The structure the exact per-round solver of COLDQ / RECOO uses
        (`solve_log_capacity`).
        """
        return data["lam"], self.capacity_scale, self.capacity_rate

    def constants(self) -> ProblemConstants:
        d = self.domain.shape[0]
        cap_max = d * self.capacity_scale * math.log1p(self.capacity_rate * self.upper)
        spread = 6.0 * math.sqrt(self.arrival_rate)  # |lambda_t - rate| <= spread w.p. ~1 - 1e-9
        return ProblemConstants(
            grad_bound=self.max_abs_price * math.sqrt(d),
            loss_bound=self.max_abs_price * d * self.upper,
            constraint_bound=max(self.arrival_rate + spread, cap_max - self.arrival_rate + spread),
            constraint_grad_bound=self.capacity_scale * self.capacity_rate * math.sqrt(d),
            strong_convexity=0.0,
            smoothness=0.0,
        )

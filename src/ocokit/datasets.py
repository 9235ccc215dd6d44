"""Loaders for the real data the papers use: MovieLens-100k, FilmTrust and electricity prices.

Data is never shipped with ocokit. Every loader takes a ``path`` (the file, or the folder holding the
dataset's folder), or else reads the ``OCOKIT_DATA`` environment variable (a folder laid out as
``ml-100k/u.data``, ``filmtrust/ratings.txt``, ``electricity-prices-2023/<REGION>.csv``). Malformed files
raise ``ValueError`` naming the file and line; a missing file raises ``FileNotFoundError`` saying where
it looked and how to point ocokit at it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ENV_VAR = "OCOKIT_DATA"

CHECKSUMS = {
    "ml-100k/u.data": "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
    "filmtrust/ratings.txt": "eed85fd763c0fb9a2cce25b8b27eeb855d6d9b01bec7f8fff548602ce0a6deaa",
}
"""SHA-256 of the canonical files; a mismatch is reported by :func:`verify` (not an error: subsets are fine)."""

ELECTRICITY_REGIONS = (
    "US-NY-NYIS",
    "US-CAL-CISO",
    "US-MIDA-PJM",
    "US-TEX-ERCO",
    "CA-ON",
    "DE-LU",
    "FR",
    "ES",
    "NL",
    "JP-TK",
)


def resolve(relative: str, path: str | os.PathLike | None = None) -> Path:
    """The file ``relative`` (e.g. ``"ml-100k/u.data"``) from ``path`` or ``$OCOKIT_DATA``.

    ``path`` may be the file itself or a folder containing ``relative``.
    """
    candidates = []
    if path is not None:
        p = Path(path).expanduser()
        candidates += [p] if p.is_file() else [p / relative, p / Path(relative).name]
    elif os.environ.get(ENV_VAR):
        candidates.append(Path(os.environ[ENV_VAR]).expanduser() / relative)
    for c in candidates:
        if c.is_file():
            return c
    where = ", ".join(str(c) for c in candidates) or f"nowhere (no path given and ${ENV_VAR} unset)"
    raise FileNotFoundError(
        f"dataset file {relative!r} not found; looked in {where}. Pass path=... or set {ENV_VAR} to the folder "
        f"that holds {relative}"
    )


def verify(relative: str, file: Path) -> bool:
    """Whether ``file`` has the canonical SHA-256 of ``relative`` (True when none is known)."""
    expected = CHECKSUMS.get(relative)
    return expected is None or hashlib.sha256(Path(file).read_bytes()).hexdigest() == expected


@dataclasses.dataclass(frozen=True)
class Ratings:
    """Observed entries of a users x items ratings matrix (0-based indices).

    Attributes:
        users, items: index arrays of the observed entries, shape ``(n_obs,)``.
        ratings: the observed values, shape ``(n_obs,)``.
        n_users, n_items: the matrix size.
        source: the file read.
    """

    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray
    n_users: int
    n_items: int
    source: str

    def dense(self) -> np.ndarray:
        """The ``n_users x n_items`` matrix with zeros where unobserved."""
        m = np.zeros((self.n_users, self.n_items))
        m[self.users, self.items] = self.ratings
        return m


def _read_triples(file: Path, sep: str | None, min_cols: int) -> np.ndarray:
    rows = []
    with open(file) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.split(sep)
            if len(parts) < min_cols:
                raise ValueError(f"{file}:{lineno}: expected at least {min_cols} fields, got {len(parts)}: {line!r}")
            try:
                rows.append([float(parts[0]), float(parts[1]), float(parts[2])])
            except ValueError as err:
                raise ValueError(f"{file}:{lineno}: non-numeric field in {line.strip()!r}") from err
    if not rows:
        raise ValueError(f"{file}: no ratings found")
    arr = np.asarray(rows)
    if np.any(arr[:, :2] < 1) or np.any(arr[:, :2] != np.round(arr[:, :2])):
        raise ValueError(f"{file}: user and item ids must be positive integers (1-based)")
    return arr


def _ratings(arr: np.ndarray, file: Path, shape: tuple[int, int] | None) -> Ratings:
    users, items = arr[:, 0].astype(int) - 1, arr[:, 1].astype(int) - 1
    n_users, n_items = shape or (int(users.max()) + 1, int(items.max()) + 1)
    return Ratings(users, items, arr[:, 2], n_users, n_items, str(file))


def load_movielens(path: str | os.PathLike | None = None) -> Ratings:
    """MovieLens-100k ``u.data`` (tab-separated ``user item rating timestamp``): 943 x 1682, ratings 1-5."""
    file = resolve("ml-100k/u.data", path)
    arr = _read_triples(file, "\t", 3)
    if np.any((arr[:, 2] < 1) | (arr[:, 2] > 5)):
        raise ValueError(f"{file}: MovieLens ratings must lie in [1, 5]")
    return _ratings(arr, file, None)


def load_filmtrust(path: str | os.PathLike | None = None) -> Ratings:
    """FilmTrust ``ratings.txt`` (space-separated ``user item rating``): 1508 x 2071, ratings 0.5-4."""
    file = resolve("filmtrust/ratings.txt", path)
    arr = _read_triples(file, None, 3)
    if np.any((arr[:, 2] < 0) | (arr[:, 2] > 5)):
        raise ValueError(f"{file}: FilmTrust ratings must lie in [0.5, 4]")
    return _ratings(arr, file, None)


def load_electricity_prices(
    regions: Sequence[str] = ELECTRICITY_REGIONS, path: str | os.PathLike | None = None
) -> np.ndarray:
    """Hourly day-ahead prices (USD/MWh) of 2023, shape ``(hours, len(regions))``.

    Each region is a CSV ``Datetime (UTC),Datetime (Local),Price (USD/MWh)`` named ``<REGION>.csv`` in
    ``electricity-prices-2023/``; rows are aligned by position (8760 hours each). Missing prices are
    filled with the previous hour's.
    """
    columns = []
    for region in regions:
        file = resolve(f"electricity-prices-2023/{region}.csv", path if path is None or Path(path).is_dir() else None)
        with open(file, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None or len(header) < 3 or "price" not in header[-1].lower():
                raise ValueError(f"{file}: expected header 'Datetime (UTC),Datetime (Local),Price (USD/MWh)'")
            values = []
            for lineno, row in enumerate(reader, 2):
                if not row:
                    continue
                cell = row[-1].strip()
                try:
                    values.append(float(cell) if cell else np.nan)
                except ValueError as err:
                    raise ValueError(f"{file}:{lineno}: price {cell!r} is not a number") from err
        col = np.asarray(values)
        if col.size == 0 or np.all(np.isnan(col)):
            raise ValueError(f"{file}: no prices")
        for i in range(col.size):  # forward fill (then backward for a leading gap)
            if np.isnan(col[i]) and i > 0:
                col[i] = col[i - 1]
        col[np.isnan(col)] = col[~np.isnan(col)][0]
        columns.append(col)
    n = min(c.size for c in columns)
    return np.stack([c[:n] for c in columns], axis=1)


def load_nyiso_5min(path: str | os.PathLike, zones: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """NYISO real-time 5-minute zonal LBMP export (``Time Stamp,Name,PTID,LBMP ($/MWHr),...``).

    Returns the ``(slots, zones)`` price matrix (slots in file order of time stamps) and the zone names
    (``zones`` in that order, or every zone in the file sorted). This is the data of paper 003's Fig. 4.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"NYISO price file {file} not found")
    table: dict[str, dict[str, float]] = {}
    with open(file, newline="") as fh:
        reader = csv.DictReader(fh)
        need = {"Time Stamp", "Name", "LBMP ($/MWHr)"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise ValueError(f"{file}: expected NYISO columns {sorted(need)}, got {reader.fieldnames}")
        for lineno, row in enumerate(reader, 2):
            try:
                table.setdefault(row["Time Stamp"], {})[row["Name"]] = float(row["LBMP ($/MWHr)"])
            except (TypeError, ValueError) as err:
                raise ValueError(f"{file}:{lineno}: bad LBMP value {row.get('LBMP ($/MWHr)')!r}") from err
    names = list(zones) if zones is not None else sorted({z for r in table.values() for z in r})
    stamps = list(table)
    try:
        prices = np.array([[table[s][z] for z in names] for s in stamps])
    except KeyError as err:
        raise ValueError(f"{file}: zone {err} missing at some time stamp") from err
    return prices, names

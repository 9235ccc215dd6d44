"""Loaders for the real data the papers use: MovieLens-100k, FilmTrust and electricity prices.

Data is never shipped with ocokit. Every loader takes a ``path`` (the file, or the folder holding the
dataset's folder), or else reads the ``OCOKIT_DATA`` environment variable (a folder laid out as
``ml-100k/u.data``, ``filmtrust/ratings.txt``, ``electricity-prices-2023/<REGION>.csv``). Malformed files
(not UTF-8 text, missing or non-numeric fields, NaN or infinite values, ids out of range) raise
``ValueError`` naming the file and line; a missing file raises ``FileNotFoundError`` saying where it looked
and how to point ocokit at it.

Duplicated (user, item) pairs in a ratings file: the last rating in the file wins. The pair keeps one entry,
at the line of its last rating; the earlier lines of the pair are dropped (FilmTrust's ``ratings.txt`` has
three such pairs, all of user 308, so it loads as 35,494 ratings from 35,497 lines).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ENV_VAR = "OCOKIT_DATA"

CHECKSUMS = {
    "ml-100k/u.data": "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
    "filmtrust/ratings.txt": "eed85fd763c0fb9a2cce25b8b27eeb855d6d9b01bec7f8fff548602ce0a6deaa",
}
"""SHA-256 of the canonical files; a mismatch is reported by [`verify`][ocokit.datasets.verify] (not an error: subsets
are fine)."""

MAX_DENSE_ENTRIES = 2**28
"""Largest ``n_users x n_items`` a ratings file may imply (2 GiB as a dense float64 matrix, which the
matrix-completion problems build): a larger id is rejected by the loader, naming the file and line."""

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
        f"dataset file {relative!r} not found; looked in {where}. Give the folder that holds {relative}: "
        f"--data FOLDER on the command line, path=... in Python, or the {ENV_VAR} environment variable"
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


def _read_text(file: Path, newline: str | None = None) -> io.StringIO:
    """The file's text (UTF-8); ``ValueError`` naming the file and the line of the first undecodable byte."""
    raw = Path(file).read_bytes()
    try:
        return io.StringIO(raw.decode("utf-8"), newline=newline)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(f"{file}:{line}: not UTF-8 text (byte {raw[err.start]:#04x} at offset {err.start})") from None


def _read_triples(file: Path, sep: str | None, min_cols: int) -> np.ndarray:
    rows, lines = [], []
    for lineno, line in enumerate(_read_text(file), 1):
        if not line.strip():
            continue
        parts = line.split(sep)
        if len(parts) < min_cols:
            raise ValueError(f"{file}:{lineno}: expected at least {min_cols} fields, got {len(parts)}: {line!r}")
        try:
            row = [float(parts[0]), float(parts[1]), float(parts[2])]
        except ValueError as err:
            raise ValueError(f"{file}:{lineno}: non-numeric field in {line.strip()!r}") from err
        for name, value in (("user", row[0]), ("item", row[1])):
            if not (math.isfinite(value) and value >= 1 and value == round(value)):
                raise ValueError(f"{file}:{lineno}: {name} ids must be positive integers (1-based), got {value:g}")
            if value > MAX_DENSE_ENTRIES:
                raise ValueError(
                    f"{file}:{lineno}: {name} id {value:.10g} is over the limit of {MAX_DENSE_ENTRIES} ids"
                )
        if not math.isfinite(row[2]):
            raise ValueError(f"{file}:{lineno}: rating {parts[2].strip()!r} is not a finite number")
        rows.append(row)
        lines.append(lineno)
    if not rows:
        raise ValueError(f"{file}: no ratings found")
    arr = np.asarray(rows)
    n_users, n_items = int(arr[:, 0].max()), int(arr[:, 1].max())
    if n_users * n_items > MAX_DENSE_ENTRIES:
        col = 0 if n_users >= n_items else 1
        lineno = lines[int(np.argmax(arr[:, col]))]
        raise ValueError(
            f"{file}:{lineno}: {('user', 'item')[col]} id {int(arr[:, col].max())} makes a {n_users} x {n_items} "
            f"ratings matrix, over the limit of {MAX_DENSE_ENTRIES} entries (ocokit.datasets.MAX_DENSE_ENTRIES)"
        )
    return arr


def _ratings(arr: np.ndarray, file: Path, shape: tuple[int, int] | None) -> Ratings:
    """The ratings of ``arr`` (rows ``user item rating``, 1-based ids); a duplicated pair keeps its last row."""
    users, items = arr[:, 0].astype(np.int64) - 1, arr[:, 1].astype(np.int64) - 1
    n_users, n_items = shape or (int(users.max()) + 1, int(items.max()) + 1)
    pairs = users * n_items + items
    _, last = np.unique(pairs[::-1], return_index=True)  # each pair's first row from the end: its last row
    keep = np.sort(pairs.size - 1 - last)  # file order
    return Ratings(users[keep], items[keep], arr[keep, 2], n_users, n_items, str(file))


def load_movielens(path: str | os.PathLike | None = None) -> Ratings:
    """MovieLens-100k ``u.data`` (tab-separated ``user item rating timestamp``): 943 x 1682, ratings 1-5.

    A (user, item) pair rated on several lines keeps its last rating, at that line (the canonical file has
    no duplicates).
    """
    file = resolve("ml-100k/u.data", path)
    arr = _read_triples(file, "\t", 3)
    if np.any((arr[:, 2] < 1) | (arr[:, 2] > 5)):
        raise ValueError(f"{file}: MovieLens ratings must lie in [1, 5]")
    return _ratings(arr, file, None)


def load_filmtrust(path: str | os.PathLike | None = None) -> Ratings:
    """FilmTrust ``ratings.txt`` (space-separated ``user item rating``): 1508 x 2071, ratings 0.5-4.

    A (user, item) pair rated on several lines keeps its last rating, at that line: the canonical file's
    35,497 lines hold three duplicated pairs (user 308 with items 12, 207 and 235), so it loads as 35,494
    ratings.
    """
    file = resolve("filmtrust/ratings.txt", path)
    arr = _read_triples(file, None, 3)
    if np.any((arr[:, 2] < 0.5) | (arr[:, 2] > 4)):
        raise ValueError(f"{file}: FilmTrust ratings must lie in [0.5, 4]")
    return _ratings(arr, file, None)


def load_electricity_prices(
    regions: Sequence[str] = ELECTRICITY_REGIONS, path: str | os.PathLike | None = None, *, hours: int = 1
) -> np.ndarray:
    """Hourly day-ahead prices (USD/MWh) of 2023, shape ``(hours, len(regions))``.

    Each region is a CSV ``Datetime (UTC),Datetime (Local),Price (USD/MWh)`` named ``<REGION>.csv`` in
    ``electricity-prices-2023/`` under the folder ``path`` (or ``$OCOKIT_DATA``); rows are aligned by
    position (8760 hours each). An empty price cell is missing and filled with the previous hour's; a
    non-numeric, NaN or infinite price is a ``ValueError`` naming the file and line, and so is a file with
    fewer than ``hours`` rows (naming the hours it lacks).
    """
    if path is not None and not Path(path).expanduser().is_dir():
        raise FileNotFoundError(
            f"data folder {path} not found (or not a folder); it must hold electricity-prices-2023/"
        )
    columns = []
    for region in regions:
        file = resolve(f"electricity-prices-2023/{region}.csv", path)
        reader = csv.reader(_read_text(file, newline=""))
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
            if cell and not math.isfinite(values[-1]):
                raise ValueError(
                    f"{file}:{lineno}: price {cell!r} is not a finite number (leave a missing price empty)"
                )
        col = np.asarray(values)
        if col.size == 0 or np.all(np.isnan(col)):
            raise ValueError(f"{file}: no prices")
        if col.size < hours:
            raise ValueError(
                f"{file}: {col.size} hourly prices, {hours} needed (lacks hours {col.size} to {hours - 1})"
            )
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
    (``zones`` in that order, or every zone in the file sorted). This is the data of Fig. 4 of Wang, Yan and Liu
    (AAAI 2025).
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

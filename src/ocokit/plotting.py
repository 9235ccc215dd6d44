"""Paper-style figures: one panel per metric against t, the mean over seeds with a band.

Curves are told apart by colour, line style and markers (so that overlapping curves, and prints in grey, stay
readable), and the legend says what the line and the band are. The file format and resolution are the
path's suffix and 120 dpi unless [`figure_output`][ocokit.plotting.figure_output] says otherwise (``ocokit plot
DIR --format pdf --dpi 300``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

LABELS = {
    "cumulative_loss": "accumulated loss",
    "time_average_loss": "time-averaged loss",
    "static_regret": "static regret",
    "dynamic_regret": "dynamic regret",
    "hard_violation": "hard violation (CCV)",
    "time_average_hard_violation": "time-averaged hard violation",
    "soft_violation": "soft violation",
    "long_term_violation": "long-term violation",
    "squared_violation": "squared violation",
    "cumulative_oracle_calls": "cumulative oracle calls",
}


FORMATS = ("png", "pdf", "svg")
"""The file formats a figure can be written in."""
DEFAULT_DPI = 120
_OUTPUT: contextvars.ContextVar[tuple[str | None, int | None]] = contextvars.ContextVar("output", default=(None, None))
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_MARKS_PER_CURVE = 8


@contextlib.contextmanager
def figure_output(format: str | None = None, dpi: int | None = None) -> Iterator[None]:
    """Within the block, figures are written as ``format`` (png, pdf or svg; the path's suffix is changed to it)
    at ``dpi`` dots per inch (raster formats and the rasterised parts of vector ones). ``None`` keeps the default.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")
    if dpi is not None and not (isinstance(dpi, int) and 10 <= dpi <= 2400):
        raise ValueError(f"dpi must be an integer in [10, 2400], got {dpi!r}")
    token = _OUTPUT.set((format, dpi))
    try:
        yield
    finally:
        _OUTPUT.reset(token)


def band_figure(
    curves: Mapping[str, Mapping[str, np.ndarray]],
    panels: Sequence[str],
    path: Path,
    *,
    title: str = "",
    band: str = "std",
    x: np.ndarray | None = None,
    xlabel: str = "t",
    logy: Sequence[str] = (),
) -> Path:
    """Draw ``curves[algorithm][metric]`` (shape ``(seeds, T)``) as mean with a band, one panel a metric.

    Args:
        curves: per algorithm, per metric, an array of shape ``(seeds, points)``.
        panels: the metrics to draw, left to right.
        path: the file to write (atomically); its suffix is the format unless
            [`figure_output`][ocokit.plotting.figure_output] sets one.
        title: the figure's title.
        band: ``"std"`` (mean +- one sample standard deviation over the seeds, ddof = 1) or ``"quartiles"``
            (median with the 25-75% band); the legend's title says which, and over how many seeds.
        x: the horizontal coordinates (default ``1..points``).
        xlabel: the horizontal axis label.
        logy: panels drawn with a logarithmic vertical axis.
    """
    from matplotlib.figure import Figure  # not pyplot: no global backend or figure registry to touch

    from ocokit.results import atomic_write_bytes

    if band not in ("std", "quartiles"):
        raise ValueError(f"band must be one of ['quartiles', 'std'], got {band!r}")
    chosen, dpi = _OUTPUT.get()
    path = Path(path) if chosen is None else Path(path).with_suffix(f".{chosen}")
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt not in FORMATS:
        raise ValueError(f"figure format must be one of {list(FORMATS)}, got {path.name!r}")
    fig = Figure(figsize=(4.6 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)
    seeds: set[int] = set()
    for ax, metric in zip(axes[0], panels, strict=True):
        for i, (label, per_metric) in enumerate(curves.items()):
            if metric not in per_metric:
                continue
            y = np.atleast_2d(np.asarray(per_metric[metric], dtype=float))
            seeds.add(y.shape[0])
            xs = np.arange(1, y.shape[-1] + 1) if x is None else np.asarray(x)
            if band == "std":
                spread = y.std(0, ddof=1) if y.shape[0] > 1 else np.zeros(y.shape[-1])
                mid, lo, hi = y.mean(0), y.mean(0) - spread, y.mean(0) + spread
                if metric in logy:  # on a log axis the band stops at the lowest seed, never at or below 0
                    lo = np.maximum(lo, y.min(0))
            else:
                lo, mid, hi = np.percentile(y, [25, 50, 75], axis=0)
            style, marker = _STYLES[i % len(_STYLES)], _MARKERS[i % len(_MARKERS)]
            every = max(1, len(xs) // _MARKS_PER_CURVE)
            (line,) = ax.plot(xs, mid, label=label, lw=1.6, ls=style, marker=marker, ms=4,
                              markevery=(i * every // max(1, len(curves)), every))  # fmt: skip
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(LABELS.get(metric, metric.replace("_", " ")))
        if metric in logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    _legend(axes[0], band_caption(band, sorted(seeds)))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi or DEFAULT_DPI)
    atomic_write_bytes(path, buf.getvalue())
    return path


def band_caption(band: str, seeds: Sequence[int]) -> str:
    """What a figure's line and band are, e.g. ``"line: mean, band: ± 1 sample s.d., over 20 seeds"``."""
    counts = sorted(set(seeds))
    many = f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else str(counts[0]) if counts else "0"
    if counts == [1]:
        return "one seed: no band"
    what = "line: mean, band: ± 1 sample s.d." if band == "std" else "line: median, band: 25-75%"
    return f"{what}, over {many} seeds"


def _legend(axes, caption: str) -> None:
    """One legend, titled by the band's meaning, on the first panel that has labelled lines (a panel can be empty
    when no curve has its metric)."""
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, title=caption, title_fontsize=7)
            return

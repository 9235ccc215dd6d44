"""Paper-style figures: one panel per metric against t, the mean over seeds with a band."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
        path: the PNG to write (atomically).
        title: the figure's title.
        band: ``"std"`` (mean +- one standard deviation) or ``"quartiles"`` (median with 25-75% band).
        x: the horizontal coordinates (default ``1..points``).
        xlabel: the horizontal axis label.
        logy: panels drawn with a logarithmic vertical axis.
    """
    from matplotlib.figure import Figure  # not pyplot: no global backend or figure registry to touch

    from ocokit.results import atomic_write_bytes

    if band not in ("std", "quartiles"):
        raise ValueError(f"band must be one of ['quartiles', 'std'], got {band!r}")
    fig = Figure(figsize=(4.6 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, metric in zip(axes[0], panels, strict=True):
        for label, per_metric in curves.items():
            if metric not in per_metric:
                continue
            y = np.atleast_2d(np.asarray(per_metric[metric], dtype=float))
            xs = np.arange(1, y.shape[-1] + 1) if x is None else np.asarray(x)
            if band == "std":
                mid, lo, hi = y.mean(0), y.mean(0) - y.std(0), y.mean(0) + y.std(0)
                if metric in logy:  # on a log axis the band stops at the lowest seed, never at or below 0
                    lo = np.maximum(lo, y.min(0))
            else:
                lo, mid, hi = np.percentile(y, [25, 50, 75], axis=0)
            (line,) = ax.plot(xs, mid, label=label, lw=1.6)
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(LABELS.get(metric, metric.replace("_", " ")))
        if metric in logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    _legend(axes[0])
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    atomic_write_bytes(Path(path), buf.getvalue())
    return Path(path)


def _legend(axes) -> None:
    """One legend, on the first panel that has labelled lines (a panel can be empty when no curve has its metric)."""
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
            return

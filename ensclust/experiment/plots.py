"""PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from ensclust.experiment.report import METRIC_NAMES
from ensclust.experiment.store import atomic_write_bytes


def plot_sweep(frame: pd.DataFrame, param: str, metrics, path, *, title: str = "", log_x: bool = False) -> Path:
    """Metric vs parameter: one panel per metric, one line per dataset, mean with a +- std band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = list(metrics)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        sub = frame[frame["metric"] == metric]
        for dataset, grp in sub.groupby("dataset", sort=False):
            x = grp[param].to_numpy(dtype=float)
            y = grp["mean"].to_numpy(dtype=float)
            s = np.nan_to_num(grp["std"].to_numpy(dtype=float))
            ax.plot(x, y, marker="o", markersize=3, label=str(dataset))
            ax.fill_between(x, y - s, y + s, alpha=0.15)
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(param)
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_png(fig, path)


def save_png(fig, path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` atomically and close it; fixed metadata, so the same data give the same bytes."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)

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


def plot_tables(tables, path, *, title: str = "") -> Path:
    """The result tables as bars: one panel per metric, a group of bars per dataset (one per method, in
    table order) with the std over repetitions as error bars; † marks a method significantly worse than
    the best of its dataset (the tables' paired t-test)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(tables), 1, figsize=(max(6.0, 1.2 + 0.35 * len(tables[0].methods)
                                                           * len(tables[0].datasets)), 2.8 * len(tables)),
                             squeeze=False)
    for ax, table in zip(axes[:, 0], tables, strict=True):
        methods, datasets = table.methods, table.datasets
        width = 0.8 / max(1, len(methods))
        colors = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(methods), 2)))
        for j, method in enumerate(methods):
            cells = [table.cells.get((method, d)) for d in datasets]
            mean = np.array([np.nan if c is None else c.row.mean for c in cells], dtype=float)
            std = np.nan_to_num(np.array([np.nan if c is None else c.row.std for c in cells], dtype=float))
            x = np.arange(len(datasets)) + (j - (len(methods) - 1) / 2) * width
            ax.bar(x, mean, width, yerr=std, capsize=1.5, color=colors[j], label=method,
                   hatch="//" if cells and cells[0] is not None and cells[0].row.pseudo else None)
            for xi, mi, si, c in zip(x, mean, std, cells, strict=True):
                if c is not None and c.worse and not np.isnan(mi):
                    ax.text(xi, mi + si + 0.01, "†", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(np.arange(len(datasets)), datasets)
        ax.set_ylabel(METRIC_NAMES.get(table.metric, table.metric))
        ax.set_ylim(0, 1.08)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=min(6, len(tables[0].methods)), loc="lower left",
                      bbox_to_anchor=(0, 1.02), frameon=False)
    if title:
        fig.suptitle(title, y=1.0)
    fig.tight_layout()
    return save_png(fig, path)

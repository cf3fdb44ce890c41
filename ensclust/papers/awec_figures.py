"""AWEC paper Fig. 4: mean NMI of AWEC-S / AWEC-H over the lambda x gamma grid, one heat map per data set.

Reads the finished cells of an ``ensclust run`` results directory (``cells/*.json``, so it also works on a
run that is still going or was interrupted) and averages the metric over the repetitions of every grid point.

    ensclust paper awec-fig4 RESULTS_DIR --out results/awec_fig4/fig4_nmi.png [--metric nmi]

Writes the PNG and a long CSV next to it (dataset, method, lambda, gamma, mean, n_reps).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.plots import save_png
from ensclust.experiment.store import atomic_write_text


def grid_means(results_dir, metric: str = "nmi", methods=("AWEC-S", "AWEC-H")) -> pd.DataFrame:
    """Mean of ``metric`` over repetitions for every (dataset, method, lambda, gamma) of finished cells."""
    rows = []
    for path in sorted(Path(results_dir, "cells").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") != "ok" or rec.get("method") not in methods:
            continue
        params = json.loads(rec.get("params") or "{}")
        if "lambda" not in params or "gamma" not in params:
            continue
        rows.append({"dataset": rec["dataset"], "method": rec["method"], "lambda": float(params["lambda"]),
                     "gamma": float(params["gamma"]), "rep": rec["rep"], "score": rec["metrics"].get(metric)})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["dataset", "method", "lambda", "gamma", "mean", "n_reps"])
    out = frame.groupby(["dataset", "method", "lambda", "gamma"], as_index=False).agg(
        mean=("score", "mean"), n_reps=("score", "size"))
    return out


def plot_heatmaps(means: pd.DataFrame, path, metric: str = "NMI", min_reps: int = 1) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = means[means["n_reps"] >= min_reps]
    datasets = list(dict.fromkeys(means["dataset"]))
    methods = list(dict.fromkeys(means["method"]))
    fig, axes = plt.subplots(len(methods), len(datasets), figsize=(3.2 * len(datasets), 2.9 * len(methods)),
                             squeeze=False)
    for i, method in enumerate(methods):
        for j, ds in enumerate(datasets):
            ax = axes[i][j]
            sub = means[(means["dataset"] == ds) & (means["method"] == method)]
            if sub.empty:
                ax.axis("off")
                continue
            lams = sorted(sub["lambda"].unique())
            gams = sorted(sub["gamma"].unique())
            grid = np.full((len(lams), len(gams)), np.nan)
            for _, r in sub.iterrows():
                grid[lams.index(r["lambda"]), gams.index(r["gamma"])] = r["mean"]
            im = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
            ax.set_xticks(range(len(gams)))
            ax.set_xticklabels([f"{g:g}" for g in gams], fontsize=7)
            ax.set_yticks(range(len(lams)))
            ax.set_yticklabels([f"{v:g}" for v in lams], fontsize=7)
            ax.set_xlabel("gamma", fontsize=8)
            ax.set_ylabel("lambda", fontsize=8)
            ax.set_title(f"{method} - {ds}", fontsize=8)
            for (a, b), v in np.ndenumerate(grid):
                if np.isfinite(v):
                    ax.text(b, a, f"{v:.2f}", ha="center", va="center", fontsize=6, color="w")
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(f"AWEC {metric} over the lambda x gamma grid (mean over runs; paper Fig. 4)", fontsize=10)
    fig.tight_layout()
    save_png(fig, path, dpi=110)


def write_fig4(results_dirs, out, metric: str = "nmi") -> tuple[Path, int]:
    """The heat maps of the finished grid cells of ``results_dirs`` as the PNG ``out`` and a long CSV beside
    it; returns ``(out, number of grid cells)``."""
    means = pd.concat([grid_means(d, metric) for d in results_dirs], ignore_index=True)
    if means.empty:
        raise UserError("no finished AWEC grid cells found in " + ", ".join(map(str, results_dirs)))
    out = Path(out)
    atomic_write_text(out.with_suffix(".csv"), means.to_csv(index=False, float_format="%.4f", lineterminator="\n"))
    plot_heatmaps(means, out, metric.upper())
    return out, len(means)

"""ACMK paper figures from the runner's data: Fig. 2 (ACC of every base clustering before and after the
refinement) and Fig. 4 (ACC / NMI of ACMK-KM and ACMK-SC against lambda).

Command line (after ``ensclust run acmk_small``)::

    ensclust paper acmk-fig4 results/acmk_small
    ensclust paper acmk-fig2 results/acmk_fig2_refinement acmk_small [...] [--lambda 1]

Fig. 2 re-runs ACMK-KM (lambda = 1, the spec's default; the paper does not say which lambda its Fig. 2
used) on the first repetition's ensemble of every data set, i.e. exactly the base results the table run
used, and scores the refined partitions G^(m) that the method exposes as ``refined_members_``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.plots import save_png
from ensclust.experiment.store import atomic_write_text, ensure_dir


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def lambda_frame(results_dir) -> pd.DataFrame:
    """Mean and std over repetitions of every ``... Fig4`` cell (one row per dataset, variant, lambda)."""
    rows = []
    for path in sorted(Path(results_dir, "cells").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") != "ok" or not re.search(r"Fig4$", rec["method"]):
            continue
        lam = json.loads(rec["params"]).get("lambda")
        rows.append({"dataset": rec["dataset"], "method": rec["method"].replace(" Fig4", ""), "lambda": lam,
                     "rep": rec["rep"], **rec["metrics"]})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    agg = frame.groupby(["dataset", "method", "lambda"]).agg(
        acc=("acc", "mean"), acc_std=("acc", "std"), nmi=("nmi", "mean"), nmi_std=("nmi", "std"),
        n=("rep", "count")).reset_index()
    return agg


def figure4(results_dir, out=None) -> Path:
    plt = _plt()
    frame = lambda_frame(results_dir)
    if frame.empty:
        raise UserError(f"{results_dir}: no finished '... Fig4' cells")
    out = Path(out or Path(results_dir) / "fig4_lambda.png")
    datasets = list(dict.fromkeys(frame["dataset"]))
    fig, axes = plt.subplots(2, len(datasets), figsize=(3.6 * len(datasets), 6), squeeze=False)
    for j, ds in enumerate(datasets):
        for i, metric in enumerate(("acc", "nmi")):
            ax = axes[i, j]
            for method, sub in frame[frame["dataset"] == ds].groupby("method"):
                sub = sub.sort_values("lambda")
                ax.errorbar(sub["lambda"], sub[metric], yerr=sub[f"{metric}_std"], marker="o", capsize=2,
                            label=method)
            ax.set_xscale("log")
            ax.set_title(ds if i == 0 else "")
            ax.set_xlabel("lambda")
            ax.set_ylabel(metric.upper())
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("ACMK: clustering results w.r.t. lambda (cf. paper Fig. 4; mean +- std over repetitions)")
    fig.tight_layout()
    save_png(fig, out, dpi=120)
    atomic_write_text(out.with_suffix(".csv"), frame.to_csv(index=False))
    return out


def figure2(config_paths, out_dir, lam: float = 1.0) -> Path:
    from ensclust.experiment.config import load_config
    from ensclust.experiment.runner import prepare_dataset
    from ensclust.methods import get_method
    from ensclust.metrics import acc

    plt = _plt()
    out_dir = ensure_dir(out_dir)  # an unwritable --out is a one-line error before any solve
    rows, curves = [], {}
    jobs = [(config, ds) for config in map(load_config, config_paths) for ds in config.datasets]
    for config, ds in jobs:
        ctx = prepare_dataset(config, ds.label)
        members = ctx.members[:, ctx.draws[0]]
        X = ctx.X.toarray() if hasattr(ctx.X, "toarray") else np.asarray(ctx.X)
        est = get_method("acmk-km", **{"lambda": lam})
        est.fit(members, ctx.n_clusters, X=X, random_state=0)
        for m in range(est.initial_members_.shape[1]):
            rows.append({"dataset": ds.label, "base": m + 1, "acc_before": acc(ctx.y, est.initial_members_[:, m]),
                         "acc_after": acc(ctx.y, est.refined_members_[:, m]),
                         "n_iter": est.diagnostics_["n_iter"], "lambda": lam})
        curves[ds.label] = est.diagnostics_
        print(ds.label, "done", flush=True)
    frame = pd.DataFrame(rows)
    atomic_write_text(out_dir / "fig2_refinement.csv", frame.to_csv(index=False))
    datasets = list(dict.fromkeys(frame["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.6 * len(datasets), 3.2), squeeze=False)
    for j, ds in enumerate(datasets):
        sub = frame[frame["dataset"] == ds]
        ax = axes[0, j]
        x = np.arange(len(sub))
        ax.bar(x - 0.2, sub["acc_before"], 0.4, color="tab:blue", label="original")
        ax.bar(x + 0.2, sub["acc_after"], 0.4, color="tab:red", label="refined")
        ax.set_xticks(x, sub["base"])
        ax.set_title(ds, fontsize=9)
        ax.set_ylabel("ACC")
        lo = min(sub["acc_before"].min(), sub["acc_after"].min())
        ax.set_ylim(max(0.0, lo - 0.1), min(1.0, max(sub["acc_before"].max(), sub["acc_after"].max()) + 0.05))
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"ACMK: ACC of each base result before and after refinement (cf. paper Fig. 2; lambda={lam:g})")
    fig.tight_layout()
    path = save_png(fig, out_dir / "fig2_refinement.png", dpi=120)
    # the same runs give the objective curves (cf. paper Fig. 3): objA (Eq. 7 with the ADMM copy A), obj6 (Eq. 6)
    fig, axes = plt.subplots(1, len(curves), figsize=(3.6 * len(curves), 3.0), squeeze=False)
    for j, (label, diag) in enumerate(curves.items()):
        ax = axes[0, j]
        it = np.arange(1, len(diag["objective"]) + 1)
        ax.plot(it, diag["objective"], label="objA (Eq. 7)")
        ax.plot(it, diag["obj6"], "--", label="obj6 (Eq. 6)")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("iteration")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"ACMK objective per ADMM iteration (cf. paper Fig. 3; lambda={lam:g})")
    fig.tight_layout()
    save_png(fig, out_dir / "fig3_objective.png", dpi=120)
    objective = pd.DataFrame([{"dataset": k, "iteration": i + 1, "objA": a, "obj6": b, "r1": r1, "r2": r2}
                              for k, d in curves.items()
                              for i, (a, b, r1, r2) in enumerate(zip(d["objective"], d["obj6"], d["r1"], d["r2"],
                                                                     strict=True))])
    atomic_write_text(out_dir / "fig3_objective.csv", objective.to_csv(index=False))
    return path


"""AWEC Fig. 3: the average-rank comparison of several methods over several data sets (Friedman test,
Iman-Davenport correction, Nemenyi critical difference; the statistics are in
:mod:`ensclust.experiment.stats`) as CSV / Markdown tables and a critical-difference plot.

Missing scores are handled explicitly: by default a data set with any missing score is dropped from the
test and reported in ``dropped`` (spec: ECPCS-HC is N/A on D13, so D13 is dropped).

Command line::

    ensclust paper friedman TABLE.csv [TABLE2.csv ...] --out DIR [--metric ARI] [--methods A,B,...]

reads long CSVs with columns ``metric,method,dataset,mean`` (the paper-table format, or an
``ensclust compare`` output via ``--column ours_mean``) and writes ``friedman_<metric>.csv/.md/.png``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ensclust.experiment.plots import save_png
from ensclust.experiment.stats import FriedmanResult, friedman_nemenyi
from ensclust.experiment.store import atomic_write_text


def plot_ranks(result: FriedmanResult, path, title: str = "") -> None:
    """Average ranks (dots) with +-CD/2 intervals (bars): overlapping bars = not significantly different
    (the layout of the paper's Fig. 3, MATLAB ``multcompare`` style)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(result.average_ranks.items(), key=lambda kv: kv[1], reverse=True)
    half = result.critical_difference / 2.0
    fig, ax = plt.subplots(figsize=(6.5, 0.38 * len(rows) + 1.4))
    best = min(r for _, r in rows)
    for i, (_method, r) in enumerate(rows):
        color = "tab:blue" if r - best <= result.critical_difference else "tab:gray"
        ax.plot([r - half, r + half], [i, i], color=color, lw=2)
        ax.plot(r, i, "o", color=color)
    ax.axvline(best + half, color="tab:red", ls=":", lw=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([m for m, _ in rows])
    ax.set_xlabel(f"average rank (lower is better); Nemenyi CD = {result.critical_difference:.2f}, "
                  f"N = {result.n_datasets}")
    ax.set_title(title or "Friedman test")
    fig.tight_layout()
    save_png(fig, path, dpi=120)


def scores_from_long(frame: pd.DataFrame, metric: str, *, column: str = "mean", methods=None,
                     datasets=None) -> pd.DataFrame:
    """Pivot a long table (metric, method, dataset, <column>) to data sets x methods for one metric."""
    sub = frame[frame["metric"].astype(str).str.lower() == metric.lower()].copy()
    # empty cells (e.g. "missing" rows of a comparison) must not shadow a value from another file
    sub[column] = pd.to_numeric(sub[column], errors="coerce")
    sub = sub.dropna(subset=[column])
    table = sub.pivot_table(index="dataset", columns="method", values=column, aggfunc="first")
    table = table.apply(pd.to_numeric, errors="coerce")
    if methods:
        table = table.reindex(columns=list(methods))
    if datasets:
        table = table.reindex(index=list(datasets))
    return table


def write_report(result: FriedmanResult, out_dir, stem: str, title: str = "") -> list[Path]:
    out = Path(out_dir)
    table = result.table()
    csv_path, md_path, png_path = out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.png"
    atomic_write_text(csv_path, table.to_csv(index=False, lineterminator="\n", float_format="%.4f"))
    lines = [f"# {title or stem}", "", result.summary(), "", "| method | average rank | diff to best | "
             "significantly worse than best |", "|---|---|---|---|"]
    for _, r in table.iterrows():
        lines.append(f"| {r['method']} | {r['average_rank']:.3f} | {r['diff_to_best']:.3f} | "
                     f"{'yes' if r['significantly_worse_than_best'] else 'no'} |")
    lines += ["", f"Data sets used: {', '.join(result.datasets)}", ""]
    atomic_write_text(md_path, "\n".join(lines))
    plot_ranks(result, png_path, title)
    return [csv_path, md_path, png_path]


def run_friedman(tables, out_dir, *, metrics=None, column: str = "mean", methods=None, datasets=None,
                 missing: str = "drop-datasets", alpha: float = 0.05, prefix: str = "friedman",
                 title: str = "") -> list[tuple[FriedmanResult, list[Path]]]:
    """Test every metric of the long CSVs ``tables`` (default: every metric present) and write
    ``<prefix>_<metric>.csv/.md/.png`` into ``out_dir``; returns ``(result, paths)`` per metric."""
    frame = pd.concat([pd.read_csv(t, dtype=str, keep_default_na=False) for t in tables], ignore_index=True)
    if column != "mean" and column in frame.columns:
        frame = frame.rename(columns={column: "_score"}).rename(columns={"_score": "mean"})
    done = []
    for metric in metrics or sorted(frame["metric"].unique()):
        table = scores_from_long(frame, metric, methods=methods, datasets=datasets)
        result = friedman_nemenyi(table, alpha=alpha, missing=missing)
        stem = f"{prefix}_{metric.lower().replace(' ', '_')}"
        done.append((result, write_report(result, out_dir, stem, f"{title} {metric}".strip())))
    return done

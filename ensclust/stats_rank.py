"""Average-rank comparison of several methods over several data sets: Friedman test, Iman-Davenport
correction and the Nemenyi critical difference (Demsar, JMLR 2006), with a critical-difference plot.

Used for the AWEC paper's Fig. 3 (spec awec.md section 4, "Significance"): per metric, rank the methods on
each data set (1 = best, ties get the average rank), average the ranks over data sets, test whether the
average ranks differ (Friedman chi^2, Iman-Davenport F) and report the Nemenyi critical difference
``CD = q_alpha * sqrt(k (k + 1) / (6 N))`` (q_alpha = studentized range quantile / sqrt(2)). Two methods whose
average ranks differ by less than CD are not significantly different.

Missing scores are handled explicitly: by default a data set with any missing score is dropped from the
test and reported in ``dropped`` (spec: ECPCS-HC is N/A on D13, so D13 is dropped).

Command line::

    python -m ensclust.stats_rank TABLE.csv [TABLE2.csv ...] --out DIR [--metric ARI] [--methods A,B,...]

reads long CSVs with columns ``metric,method,dataset,mean`` (the paper-table format, or an
``ensclust compare`` output via ``--column ours_mean``) and writes ``friedman_<metric>.csv/.md/.png``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Critical value q_alpha of the two-tailed Nemenyi test for k methods (Demsar 2006, Table 5a)."""
    if k < 2:
        raise ValueError("the Nemenyi test needs at least two methods")
    return float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf) / math.sqrt(2.0))


def rank_rows(scores: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Rank each row (data set) of an N x k score matrix: 1 = best, ties share the average rank."""
    data = -scores if higher_is_better else scores
    return np.vstack([stats.rankdata(row, method="average") for row in data])


@dataclass
class FriedmanResult:
    methods: list
    datasets: list
    average_ranks: dict
    chi2: float
    chi2_pvalue: float
    iman_davenport_f: float
    iman_davenport_pvalue: float
    critical_difference: float
    alpha: float
    dropped: list = field(default_factory=list)

    @property
    def n_datasets(self) -> int:
        return len(self.datasets)

    def table(self) -> pd.DataFrame:
        """Methods sorted by average rank, with the CD and whether each differs from the best method."""
        rows = sorted(self.average_ranks.items(), key=lambda kv: kv[1])
        best = rows[0][1]
        return pd.DataFrame({
            "method": [m for m, _ in rows],
            "average_rank": [r for _, r in rows],
            "diff_to_best": [r - best for _, r in rows],
            "significantly_worse_than_best": [bool(r - best > self.critical_difference) for _, r in rows],
        })

    def summary(self) -> str:
        return (f"Friedman over N={self.n_datasets} data sets, k={len(self.methods)} methods: chi2={self.chi2:.3f} "
                f"(p={self.chi2_pvalue:.3g}), Iman-Davenport F={self.iman_davenport_f:.3f} "
                f"(p={self.iman_davenport_pvalue:.3g}); Nemenyi CD(alpha={self.alpha})={self.critical_difference:.3f}"
                + (f"; dropped data sets with missing scores: {', '.join(self.dropped)}" if self.dropped else ""))


def friedman_nemenyi(scores: pd.DataFrame, *, alpha: float = 0.05, higher_is_better: bool = True,
                     missing: str = "drop-datasets") -> FriedmanResult:
    """Friedman test + Nemenyi CD on a data-set x method score table (rows = data sets, columns = methods).

    ``missing``: "drop-datasets" (default) removes data sets with any missing score and lists them in
    ``dropped``; "drop-methods" removes methods with any missing score instead; "error" raises.
    """
    table = scores.apply(pd.to_numeric, errors="coerce")
    dropped: list = []
    if table.isna().any().any():
        if missing == "drop-datasets":
            bad = table.index[table.isna().any(axis=1)]
            dropped = [str(b) for b in bad]
            table = table.drop(index=bad)
        elif missing == "drop-methods":
            bad = table.columns[table.isna().any(axis=0)]
            dropped = [f"method {b}" for b in bad]
            table = table.drop(columns=bad)
        else:
            raise ValueError("missing scores in the table")
    N, k = table.shape
    if N < 2 or k < 2:
        raise ValueError(f"need at least 2 data sets and 2 methods with complete scores, got {N} x {k}")
    ranks = rank_rows(table.to_numpy(dtype=float), higher_is_better)
    R = ranks.mean(axis=0)
    chi2 = 12.0 * N / (k * (k + 1)) * (np.sum(R**2) - k * (k + 1) ** 2 / 4.0)
    chi2_p = float(stats.chi2.sf(chi2, k - 1))
    denom = N * (k - 1) - chi2
    if denom > 0:
        ff = (N - 1) * chi2 / denom
        ff_p = float(stats.f.sf(ff, k - 1, (k - 1) * (N - 1)))
    else:  # identical rankings on every data set
        ff, ff_p = math.inf, 0.0
    cd = nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * N))
    return FriedmanResult(methods=[str(c) for c in table.columns], datasets=[str(i) for i in table.index],
                          average_ranks={str(m): float(r) for m, r in zip(table.columns, R, strict=True)},
                          chi2=float(chi2), chi2_pvalue=chi2_p, iman_davenport_f=float(ff),
                          iman_davenport_pvalue=ff_p, critical_difference=float(cd), alpha=alpha, dropped=dropped)


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
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    out.mkdir(parents=True, exist_ok=True)
    table = result.table()
    csv_path, md_path, png_path = out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.png"
    table.to_csv(csv_path, index=False, lineterminator="\n", float_format="%.4f")
    lines = [f"# {title or stem}", "", result.summary(), "", "| method | average rank | diff to best | "
             "significantly worse than best |", "|---|---|---|---|"]
    for _, r in table.iterrows():
        lines.append(f"| {r['method']} | {r['average_rank']:.3f} | {r['diff_to_best']:.3f} | "
                     f"{'yes' if r['significantly_worse_than_best'] else 'no'} |")
    lines += ["", f"Data sets used: {', '.join(result.datasets)}", ""]
    md_path.write_text("\n".join(lines))
    plot_ranks(result, png_path, title)
    return [csv_path, md_path, png_path]


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tables", nargs="+", help="long CSVs with metric,method,dataset and a score column")
    ap.add_argument("--out", required=True)
    ap.add_argument("--metric", action="append", help="metric(s) to test (default: every metric present)")
    ap.add_argument("--column", default="mean", help="score column (paper CSV: mean; compare output: ours_mean)")
    ap.add_argument("--methods", default=None, help="comma-separated subset/order of methods")
    ap.add_argument("--datasets", default=None, help="comma-separated subset of data sets")
    ap.add_argument("--missing", default="drop-datasets", choices=("drop-datasets", "drop-methods"))
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--prefix", default="friedman")
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    frame = pd.concat([pd.read_csv(t, dtype=str, keep_default_na=False) for t in args.tables], ignore_index=True)
    if args.column != "mean" and args.column in frame.columns:
        frame = frame.rename(columns={args.column: "_score"}).rename(columns={"_score": "mean"})
    metrics = args.metric or sorted(frame["metric"].unique())
    methods = args.methods.split(",") if args.methods else None
    datasets = args.datasets.split(",") if args.datasets else None
    for metric in metrics:
        table = scores_from_long(frame, metric, methods=methods, datasets=datasets)
        result = friedman_nemenyi(table, alpha=args.alpha, missing=args.missing)
        stem = f"{args.prefix}_{metric.lower().replace(' ', '_')}"
        paths = write_report(result, args.out, stem, f"{args.title} {metric}".strip())
        print(result.summary())
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

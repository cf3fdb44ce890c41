"""Result tables: one per metric, methods as rows, datasets as columns, "mean ± std" over repetitions.

Marking rule (the same in CSV, Markdown and LaTeX):

1. Only consensus methods compete. The base-clustering statistics (``km-avg`` / ``km-best``) are shown but
   never bold, underlined or tested.
2. **Bold** = the highest mean of the column after rounding to the displayed number of decimals
   (``decimals``, default 3); all methods tied at that value are bold. Underlined = the next distinct
   rounded value (the second best).
3. Significance: per dataset and metric, the method with the highest (unrounded) mean is compared with
   every other method by a two-sided t-test on the repetition scores; by default a **paired** t-test
   (``scipy.stats.ttest_rel``; the repetitions share their ensembles, so repetition r of one method is
   paired with repetition r of the other). A method whose difference to the best has p < ``alpha``
   (default 0.05) is marked with a dagger (†): it is significantly worse than the best. The p-values are
   stored in the table CSV (``p_vs_best``). ``ttest: student`` / ``welch`` in the config use unpaired
   tests (equal / unequal variances) instead. Fewer than two paired repetitions: no test, no mark.
4. Missing cells (never run, or all repetitions failed) print as "--"; cells where some repetitions
   failed show the mean over the finished ones and the table CSV records ``n`` and ``n_failed``.
5. A superscript c (ᶜ) marks a cell where some fits behind it returned a different number of clusters
   than asked (cells.csv ``n_clusters_found`` vs ``n_clusters``); the caption lists the range found and
   the table CSV records it (``n_clusters_found``).

Captions state the metric, the number of repetitions, the NMI normalisation, the tuning policy of each
tuned method and the values it chose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ensclust.experiment.config import ExperimentConfig
from ensclust.experiment.stats import pvalue
from ensclust.experiment.store import ResultStore, atomic_write_text
from ensclust.experiment.tuning import Row, summarize

METRIC_NAMES = {"acc": "ACC", "nmi": "NMI", "ari": "ARI", "fscore": "F-score", "fmeasure": "F-measure",
                "purity": "Purity"}
DAGGER = "†"
OTHER_K = "ᶜ"  # some fits returned a different number of clusters than asked


@dataclass
class Cell:
    row: Row
    mark: str = ""  # "best" | "second" | ""
    p_vs_best: float = math.nan
    worse: bool = False  # significantly worse than the best
    is_best: bool = False  # the method the others are tested against
    other_k: tuple | None = None  # (min found, max found, asked) when some fits missed the asked k


@dataclass
class Table:
    metric: str
    datasets: list
    methods: list
    cells: dict  # (method, dataset) -> Cell
    caption: str


def _rounded(x: float, decimals: int) -> float:
    return round(x, decimals)


def mark_column(cells: list[Cell], decimals: int, ttest: str, alpha: float) -> None:
    """Apply the marking rule of the module docstring to the cells of one dataset column."""
    competing = [c for c in cells if not c.row.pseudo and not math.isnan(c.row.mean)]
    if not competing:
        return
    levels = sorted({_rounded(c.row.mean, decimals) for c in competing}, reverse=True)
    for c in competing:
        r = _rounded(c.row.mean, decimals)
        if r == levels[0]:
            c.mark = "best"
        elif len(levels) > 1 and r == levels[1]:
            c.mark = "second"
    best = max(competing, key=lambda c: c.row.mean)  # first in row order on exact ties
    best.is_best = True
    for c in competing:
        if c is best:
            continue
        p = pvalue(best.row.values, c.row.values, ttest)
        c.p_vs_best = p
        c.worse = (not math.isnan(p)) and p < alpha and c.row.mean < best.row.mean


def _clusters_found(cells_frame: pd.DataFrame) -> dict:
    """(dataset, method, point, rep) -> (asked, found) for the finished fits that report how many they found."""
    if "n_clusters_found" not in cells_frame.columns:
        return {}
    frame = cells_frame[(cells_frame["status"] == "ok") & cells_frame["n_clusters_found"].notna()
                        & cells_frame["n_clusters"].notna()]
    return {(d, m, int(p), int(r)): (int(a), int(f)) for d, m, p, r, a, f in
            zip(frame["dataset"], frame["method"], frame["point"], frame["rep"], frame["n_clusters"],
                frame["n_clusters_found"], strict=True)}


def _other_k(row: Row, found: dict) -> tuple | None:
    """(min found, max found, asked) over the fits behind ``row`` when any of them missed the asked k."""
    pairs = [found[key] for key in ((row.dataset, row.method_spec, p, r) for p, r in row.used) if key in found]
    if not any(a != f for a, f in pairs):
        return None
    values = [f for _, f in pairs]
    return min(values), max(values), pairs[0][0]


def build_tables(config: ExperimentConfig, cells_frame: pd.DataFrame) -> list[Table]:
    rows = summarize(config, cells_frame)
    found = _clusters_found(cells_frame)
    tables = []
    reps = config.ensemble["repetitions"]
    for metric in config.metrics:
        mrows = [r for r in rows if r.metric == metric]
        methods = list(dict.fromkeys(r.method for r in mrows))
        datasets = [d.label for d in config.datasets]
        cells = {(r.method, r.dataset): Cell(r, other_k=None if r.pseudo else _other_k(r, found)) for r in mrows}
        for ds in datasets:
            mark_column([cells[(m, ds)] for m in methods if (m, ds) in cells], config.decimals, config.ttest,
                        config.alpha)
        text = caption(config, metric, mrows, reps)
        other = [c for c in cells.values() if c.other_k is not None and not math.isnan(c.row.mean)]
        if other:
            ranges = "; ".join(f"{c.row.method} on {c.row.dataset}: {_k_range(c.other_k)} found, "
                               f"{c.other_k[2]} asked" for c in other)
            text += f" {OTHER_K}: some fits returned a different number of clusters than asked ({ranges})."
        tables.append(Table(metric, datasets, methods, cells, text))
    return tables


def _k_range(other_k: tuple) -> str:
    lo, hi, _ = other_k
    return f"{lo}..{hi}" if lo != hi else f"{lo}"


def caption(config: ExperimentConfig, metric: str, rows: list[Row], reps: int) -> str:
    name = METRIC_NAMES.get(metric, metric)
    extra = f", NMI normalised by the {config.nmi_average} mean of the entropies" if metric == "nmi" else ""
    parts = [f"{name} (mean ± std over {reps} repetitions{extra}) - {config.name}."]
    test = {"paired": "paired t-test", "student": "two-sample t-test", "welch": "Welch t-test"}[config.ttest]
    parts.append(f"Bold: best, underlined: second best; {DAGGER}: significantly worse than the best "
                 f"({test}, p < {config.alpha:g}). Base-clustering rows are not ranked.")
    tuning = []
    for method in config.methods:
        if method.is_pseudo:
            continue
        mrows = [r for r in rows if r.method_spec == method.label]
        if method.tuning == "fixed":
            p = mrows[0].params if mrows else ""
            tuning.append(f"{method.label}: fixed ({p or 'defaults'})")
        elif method.tuning == "each":
            tuning.append(f"{method.label}: every grid point shown")
        elif method.tuning == "average":
            tuning.append(f"{method.label}: {mrows[0].params if mrows else 'average over its grid'}, "
                          f"per repetition (no oracle)")
        else:
            chosen = "; ".join(f"{r.dataset}: {r.params}" for r in mrows)
            tuning.append(f"{method.label}: {mrows[0].policy if mrows else method.tuning} "
                          f"(ground-truth oracle) [{chosen}]")
    if tuning:
        parts.append("Tuning - " + "; ".join(tuning) + ".")
    fewer = [f"{m.label}: first {m.repetitions}" for m in config.methods
             if m.repetitions is not None and m.repetitions < reps]
    if fewer:
        parts.append("Rows run on fewer repetitions - " + "; ".join(fewer) + ".")
    return " ".join(parts)


# -- formatting -----------------------------------------------------------------------------------------------
def _num(x: float, decimals: int) -> str:
    return "--" if x is None or math.isnan(x) else f"{x:.{decimals}f}"


def _cell_text(c: Cell | None, decimals: int) -> tuple[str, str]:
    """(mean ± std text, suffix mark)"""
    if c is None or math.isnan(c.row.mean):
        return "--", ""
    text = _num(c.row.mean, decimals)
    if not math.isnan(c.row.std):
        text += f" ± {_num(c.row.std, decimals)}"
    return text, (DAGGER if c.worse else "") + (OTHER_K if c.other_k is not None else "")


def table_csv(table: Table, decimals: int) -> str:
    out = []
    for m in table.methods:
        for ds in table.datasets:
            c = table.cells.get((m, ds))
            if c is None:
                continue
            r = c.row
            out.append({"metric": table.metric, "method": m, "dataset": ds, "mean": r.mean, "std": r.std,
                        "n": r.n, "n_failed": r.n_failed, "policy": r.policy, "params": r.params,
                        "mark": c.mark, "best": c.is_best, "p_vs_best": c.p_vs_best,
                        "significantly_worse": c.worse, "base_statistic": r.pseudo,
                        "n_clusters_found": "" if c.other_k is None else _k_range(c.other_k),
                        "text": _cell_text(c, decimals)[0] + _cell_text(c, decimals)[1],
                        "caption": table.caption})
    frame = pd.DataFrame(out)
    return frame.to_csv(index=False, lineterminator="\n")


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def table_markdown(table: Table, decimals: int) -> str:
    head = "| Method | " + " | ".join(_md_escape(d) for d in table.datasets) + " |"
    sep = "|---|" + "---|" * len(table.datasets)
    lines = [f"**{METRIC_NAMES.get(table.metric, table.metric)}.** {_md_escape(table.caption)}", "", head, sep]
    for m in table.methods:
        cols = []
        for ds in table.datasets:
            c = table.cells.get((m, ds))
            text, mark = _cell_text(c, decimals)
            if c is not None and c.mark == "best":
                text = f"**{text}**"
            elif c is not None and c.mark == "second":
                text = f"<u>{text}</u>"
            cols.append(text + mark)
        lines.append(f"| {_md_escape(m)} | " + " | ".join(cols) + " |")
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "±": r"$\pm$", "†": r"$^\dagger$", "ᶜ": r"$^{c}$", "α": r"$\alpha$", "λ": r"$\lambda$", "θ": r"$\theta$"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def table_latex(table: Table, decimals: int) -> str:
    cols = "l" + "c" * len(table.datasets)
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small",
             rf"\caption{{{latex_escape(table.caption)}}}",
             rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
             "Method & " + " & ".join(latex_escape(d) for d in table.datasets) + r" \\", r"\midrule"]
    for m in table.methods:
        cols_text = []
        for ds in table.datasets:
            c = table.cells.get((m, ds))
            if c is None or math.isnan(c.row.mean):
                cols_text.append("--")
                continue
            text = _num(c.row.mean, decimals)
            if not math.isnan(c.row.std):
                text += rf" $\pm$ {_num(c.row.std, decimals)}"
            if c.mark == "best":
                text = rf"\textbf{{{text}}}"
            elif c.mark == "second":
                text = rf"\underline{{{text}}}"
            if c.worse:
                text += r"$^\dagger$"
            if c.other_k is not None:
                text += r"$^{c}$"
            cols_text.append(text)
        lines.append(latex_escape(m) + " & " + " & ".join(cols_text) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def latex_document(tables: list[Table], decimals: int) -> str:
    body = "\n".join(table_latex(t, decimals) for t in tables)
    return ("\\documentclass{article}\n\\usepackage[margin=1.5cm,landscape]{geometry}\n\\usepackage{booktabs}\n"
            "\\usepackage[T1]{fontenc}\n\\begin{document}\n" + body + "\\end{document}\n")


def timing_summary(config: ExperimentConfig, cells_frame: pd.DataFrame, timing: pd.DataFrame) -> pd.DataFrame:
    """Wall time and peak memory behind every table row (the cells the row's numbers come from).

    The rows are those of the tune metric (``tune_metric``, or the first metric with ``per-metric``), so
    a tuned method reports the time of its chosen grid point(s), not of the whole grid search.
    """
    metric = config.metrics[0] if config.tune_metric == "per-metric" else config.tune_metric
    rows = [r for r in summarize(config, cells_frame) if r.metric == metric]
    method_of = {m.label: m for m in config.methods}
    index = {}
    for t in timing.itertuples(index=False):
        index[(t.dataset, t.method, int(t.point), int(t.rep))] = t
    ok = {(d, m, int(p), int(r)) for d, m, p, r, s in zip(cells_frame["dataset"], cells_frame["method"],
                                                          cells_frame["point"], cells_frame["rep"],
                                                          cells_frame["status"], strict=True) if s == "ok"}
    out = []
    for r in rows:
        times, mems = [], []
        for point, rep in r.used:
            key = (r.dataset, r.method_spec, point, rep)
            t = index.get(key)
            if t is None or key not in ok:
                continue
            if t.time_s is not None and not pd.isna(t.time_s):
                times.append(float(t.time_s))
            if t.peak_mem_mb is not None and not pd.isna(t.peak_mem_mb):
                mems.append(float(t.peak_mem_mb))
        arr = pd.Series(times, dtype=float)
        out.append({"method": r.method, "dataset": r.dataset, "time_s": arr.mean() if len(arr) else math.nan,
                    "time_s_std": arr.std(ddof=config.std_ddof) if len(arr) > config.std_ddof else math.nan,
                    "peak_mem_mb": max(mems) if mems else math.nan, "n_cells": len(times),
                    "policy": r.policy, "params": r.params,
                    "base_statistic": method_of.get(r.method_spec) is not None and method_of[r.method_spec].is_pseudo})
    return pd.DataFrame(out, columns=["method", "dataset", "time_s", "time_s_std", "peak_mem_mb", "n_cells",
                                      "policy", "params", "base_statistic"])


def timing_markdown(config: ExperimentConfig, summary: pd.DataFrame) -> str:
    datasets = [d.label for d in config.datasets]
    lines = [f"# {config.name}: wall time of the fit (s, mean over repetitions) and peak memory (MB)", "",
             "Time is the wall-clock time of fit_predict; memory is the peak of the fit, largest over the "
             "repetitions, as each cell's mem_method in cells.csv says: rss-peak-increase = rise of the process's "
             "peak resident set during the fit (all allocations, C libraries included); tracemalloc-peak = "
             "Python and NumPy allocations only. Measured on a shared machine: compare rows of the same run only.",
             "",
             "| Method | " + " | ".join(_md_escape(d) for d in datasets) + " |", "|---|" + "---|" * len(datasets)]
    for method in dict.fromkeys(summary["method"]):
        cols = []
        for ds in datasets:
            sub = summary[(summary["method"] == method) & (summary["dataset"] == ds)]
            if not len(sub) or pd.isna(sub["time_s"].iloc[0]):
                cols.append("--")
                continue
            row = sub.iloc[0]
            mem = "" if pd.isna(row["peak_mem_mb"]) else f" ({row['peak_mem_mb']:.1f} MB)"
            cols.append(f"{row['time_s']:.4g}{mem}")
        lines.append(f"| {_md_escape(method)} | " + " | ".join(cols) + " |")
    return "\n".join(lines) + "\n"


def write_reports(results_dir, *, config: ExperimentConfig | None = None, formats=None, quiet: bool = False,
                  echo=None) -> list[Path]:
    """Rebuild the tables of ``results_dir`` from cells.csv + experiment.json; returns the written files.

    cells.csv (and timing.csv) are first rebuilt from ``cells/*.json`` when cells.csv is missing or older
    than the newest cell file, e.g. after a run was killed with SIGKILL
    (:meth:`~ensclust.experiment.store.ResultStore.ensure_aggregates`).
    """
    store = ResultStore(results_dir)
    config = config or store.load_config()
    root = Path(results_dir)
    written = [root / "cells.csv", root / "timing.csv"] if store.ensure_aggregates(config) else []
    cells = store.load_cells()
    tables = build_tables(config, cells)
    formats = list(formats or config.outputs)
    if "csv" in formats:
        for t in tables:
            path = root / f"table_{t.metric}.csv"
            atomic_write_text(path, table_csv(t, config.decimals))
            written.append(path)
    if "markdown" in formats:
        path = root / "tables.md"
        atomic_write_text(path, f"# {config.name}\n\n" + "\n".join(table_markdown(t, config.decimals) for t in tables))
        written.append(path)
    if "latex" in formats:
        path = root / "tables.tex"
        atomic_write_text(path, latex_document(tables, config.decimals))
        written.append(path)
    if "png" in formats:
        from ensclust.experiment.plots import plot_tables

        written.append(plot_tables(tables, root / "tables.png", title=config.name))
    timing = store.load_timing()
    if timing is not None and len(timing):
        # separate files: times differ from run to run, the tables above are deterministic
        summary = timing_summary(config, cells, timing)
        atomic_write_text(root / "timing_table.csv", summary.to_csv(index=False, lineterminator="\n"))
        atomic_write_text(root / "timing.md", timing_markdown(config, summary))
        written += [root / "timing_table.csv", root / "timing.md"]
    if not quiet:
        import click

        out = echo or click.echo
        for t in tables:
            out(table_markdown(t, config.decimals))
        out("wrote " + ", ".join(str(p) for p in written))
    return written

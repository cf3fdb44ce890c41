"""Reports: bold / second / t-test daggers on a constructed case, LaTeX and Markdown structure, compare."""

import io
import math

import pandas as pd
import pytest

from ensclust.experiment.compare import compare, summary_line
from ensclust.experiment.config import load_config_text
from ensclust.experiment.report import build_tables, latex_document, table_csv, table_markdown
from ensclust.experiment.stats import pvalue
from ensclust.experiment.store import records_to_frame

CONFIG = """name: constructed
datasets:
  - {name: iris, label: D1}
  - {name: wine, label: D_2 & co}
ensemble: {repetitions: 5}
methods:
  - {name: km-best, label: KM-best, scope: ensemble}
  - {name: eac-al, label: Best}
  - {name: eac-sl, label: Worse}
  - {name: eac-cl, label: Close}
metrics: [ari]
"""

VALUES = {
    "KM-best": [0.99, 0.99, 0.99, 0.99, 0.99],  # a base statistic: never ranked even when higher
    "Best": [0.90, 0.92, 0.91, 0.95, 0.93],
    "Worse": [0.50, 0.52, 0.49, 0.55, 0.51],  # consistently lower: paired p << 0.05
    "Close": [0.91, 0.90, 0.93, 0.92, 0.935],  # noisy small difference: p > 0.05
}


def constructed():
    cfg = load_config_text(CONFIG, "c.yaml")
    records = []
    for ds in ("D1", "D_2 & co"):
        for method, vals in VALUES.items():
            for rep, v in enumerate(vals):
                records.append({"dataset": ds, "method": method, "method_name": "x", "point": 0, "params": "{}",
                                "rep": rep, "status": "ok", "metrics": {"ari": v}})
    return cfg, records_to_frame(cfg, records)


def test_ttest_marks_constructed_case():
    cfg, cells = constructed()
    (table,) = build_tables(cfg, cells)
    best, worse, close, km = (table.cells[(m, "D1")] for m in ("Best", "Worse", "Close", "KM-best"))
    assert best.mark == "best" and best.is_best and not best.worse
    assert close.mark == "second" and not close.worse and close.p_vs_best > 0.05
    assert worse.mark == "" and worse.worse and worse.p_vs_best < 0.05
    assert km.mark == "" and not km.worse and math.isnan(km.p_vs_best)
    from scipy.stats import ttest_rel

    assert worse.p_vs_best == pytest.approx(ttest_rel(VALUES["Best"], VALUES["Worse"]).pvalue)
    md = table_markdown(table, 3)
    assert "| Best | **0.922 ± 0.019** |" in md
    assert "<u>0.919 ± 0.014</u>" in md and "0.514 ± 0.023†" in md
    assert "KM-best | 0.990 ± 0.000 |" in md


def test_rounded_ties_are_all_bold():
    cfg, cells = constructed()
    cells.loc[cells["method"] == "Close", "ari"] = cells.loc[cells["method"] == "Best", "ari"].to_numpy() + 1e-6
    (table,) = build_tables(cfg, cells)
    assert table.cells[("Best", "D1")].mark == "best" and table.cells[("Close", "D1")].mark == "best"
    assert table.cells[("Worse", "D1")].mark == "second"


def test_pvalue_kinds():
    a = {0: 1.0, 1: 2.0, 2: 3.0}
    assert pvalue(a, a) == 1.0
    assert pvalue(a, {0: 0.5, 1: 1.5, 2: 2.5}) == 0.0  # constant non-zero difference
    assert math.isnan(pvalue({0: 1.0}, {0: 2.0}))
    assert math.isnan(pvalue(a, {5: 1.0, 6: 2.0}))  # no shared repetitions
    assert 0 < pvalue(a, {0: 1.5, 1: 1.9, 2: 3.4}, "welch") < 1


def test_pvalue_rounding_level_differences():
    """Differences that are constant up to the last bits (the same score computed twice) are constant: no
    t statistic of rounding noise, no SciPy precision warning (the case met in the committed EC-CMS cells)."""
    import warnings

    import numpy as np

    x = {0: 0.45091694, 1: 0.45199569, 2: 0.45091694}
    y = {r: v - 0.0377562 for r, v in x.items()}
    y[1] = float(np.nextafter(y[1], 1.0))               # one ulp: the differences agree up to rounding only
    assert len({x[r] - y[r] for r in x}) > 1
    noise = {r: v + (2e-17 if r == 1 else 0.0) for r, v in x.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pvalue(x, y) == 0.0                      # consistently better
        assert pvalue(x, {r: v * (1 + 1e-15) for r, v in x.items()}) == 1.0    # equal up to rounding
        assert pvalue(x, noise) == 1.0


def test_latex_structure():
    cfg, cells = constructed()
    tex = latex_document(build_tables(cfg, cells), 3)
    assert tex.startswith("\\documentclass") and "\\usepackage{booktabs}" in tex
    assert tex.count("\\begin{document}") == 1 and tex.rstrip().endswith("\\end{document}")
    for token in ("\\toprule", "\\midrule", "\\bottomrule", "\\begin{tabular}{lcc}", "\\caption{"):
        assert token in tex
    assert "Method & D1 & D\\_2 \\& co \\\\" in tex
    assert "Best & \\textbf{0.922 $\\pm$ 0.019} & \\textbf{0.922 $\\pm$ 0.019} \\\\" in tex
    assert "\\underline{0.919 $\\pm$ 0.014}" in tex and "0.514 $\\pm$ 0.023$^\\dagger$" in tex
    body = tex.split("\\midrule")[1].split("\\bottomrule")[0]
    assert body.count("\\\\") == 4  # one line per method
    assert "±" not in tex and "†" not in tex  # all non-ASCII marks converted


PAPER = """table,metric,method,dataset,mean,std,bold,param
T,ARI,Best,D1,0.900,0.020,,
T,ARI,Worse,D1,0.700,0.010,,
T,NMI,Best,D1,0.800,0.050,,
T,ARI,Best,D9,0.500,,,
T,ARI,LWEA,D1,0.600,,,
T,ARI,Fancy,D1,0.600,,,
T,time_s,Best,D1,1.5,,,
T,instances,,D1,150,,,
"""


def test_compare_matches_and_lists_missing(tmp_path):
    import io

    cfg, cells = constructed()
    paper = pd.read_csv(io.StringIO(PAPER), dtype=str, keep_default_na=False)
    result = compare(cfg, cells, paper)
    assert len(result) == len(paper)  # every paper cell appears
    assert "not a clustering score" in result["reason"].iloc[-1]
    row = result[(result["method"] == "Best") & (result["dataset"] == "D1") & (result["metric"] == "ARI")].iloc[0]
    assert row["status"] == "compared" and row["diff"] == pytest.approx(0.922 - 0.9)
    assert row["within_paper_std"] == "no"
    reasons = dict(zip(result["method"] + "/" + result["dataset"] + "/" + result["metric"], result["reason"],
                       strict=True))
    assert reasons["Best/D1/NMI"] == "metric nmi not in config"
    assert reasons["Best/D9/ARI"] == "dataset not in config"
    assert reasons["LWEA/D1/ARI"] == "method not in config"
    assert reasons["Fancy/D1/ARI"].startswith("method not in config and no registered method")
    assert reasons["Best/D1/time_s"] == "run time: no timing.csv in the results"
    line = summary_line(result)
    assert line.startswith("2 cells compared; mean |diff| ") and "6 missing" in line and "[Fancy]" in line


def test_timing_summary_and_time_comparison():
    import io

    from ensclust.experiment.report import timing_summary

    cfg, cells = constructed()
    timing = cells[["dataset", "method", "point", "rep"]].copy()
    timing["time_s"] = [0.1 * (1 + r) for r in timing["rep"]]  # reps 0..4 -> mean 0.3
    timing["peak_mem_mb"] = 2.0 + timing["rep"]
    timing["mem_method"] = "tracemalloc-peak"
    summary = timing_summary(cfg, cells, timing)
    row = summary[(summary["method"] == "Best") & (summary["dataset"] == "D1")].iloc[0]
    assert row["time_s"] == pytest.approx(0.3) and row["peak_mem_mb"] == 6.0 and row["n_cells"] == 5
    paper = pd.read_csv(io.StringIO("table,metric,method,dataset,mean,std,bold,param\nT,time_s,Best,D1,1.5,,,\n"),
                        dtype=str, keep_default_na=False)
    result = compare(cfg, cells, paper, timing).iloc[0]
    assert result["status"] == "compared" and result["diff"] == pytest.approx(0.3 - 1.5)


def test_bar_chart_of_the_tables_is_deterministic(tmp_path):
    from ensclust.experiment.plots import plot_tables

    cfg, cells = constructed()
    tables = build_tables(cfg, cells)
    a = plot_tables(tables, tmp_path / "a.png", title="constructed").read_bytes()
    b = plot_tables(tables, tmp_path / "b.png", title="constructed").read_bytes()
    assert a[:8] == b"\x89PNG\r\n\x1a\n" and a == b
    tables[0].cells[("Worse", "D1")].row.mean = 0.1  # the picture shows the numbers
    assert plot_tables(tables, tmp_path / "c.png", title="constructed").read_bytes() != a


def test_cells_with_another_number_of_clusters_carry_a_mark_explained_in_the_caption():
    cfg, cells = constructed()
    cells["n_clusters"] = 3
    cells["n_clusters_found"] = 3
    other = (cells["method"] == "Worse") & (cells["dataset"] == "D1")
    cells.loc[other, "n_clusters_found"] = [15, 3, 37, 20, 3]
    (table,) = build_tables(cfg, cells)
    assert table.cells[("Worse", "D1")].other_k == (3, 37, 3)
    assert all(c.other_k is None for key, c in table.cells.items() if key != ("Worse", "D1"))
    assert "ᶜ: some fits returned a different number of clusters than asked (Worse on D1: 3..37 found, 3 asked)." \
        in table.caption
    md = table_markdown(table, 3)
    assert "0.514 ± 0.023†ᶜ |" in md and md.count("ᶜ") == 2  # the cell and the caption
    assert r"$^\dagger$$^{c}$" in latex_document([table], 3)
    csv = pd.read_csv(io.StringIO(table_csv(table, 3)))
    assert csv.loc[(csv["method"] == "Worse") & (csv["dataset"] == "D1"), "n_clusters_found"].item() == "3..37"
    cells["n_clusters_found"] = 3  # every fit found what was asked: no mark, no caption note
    (table,) = build_tables(cfg, cells)
    assert "ᶜ" not in table_markdown(table, 3)

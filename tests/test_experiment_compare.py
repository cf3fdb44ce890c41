"""``compare_to`` with one or several paper tables: validation, output files, the CLI and the summary index."""

import pandas as pd
import pytest

from ensclust.errors import UserError
from ensclust.experiment.compare import INDEX_TITLE, run_compare
from ensclust.experiment.config import compare_targets, load_config_text
from ensclust.experiment.store import ResultStore, records_to_frame
from ensclust.experiment.summary import render
from ensclust.testing import invoke_cli as invoke

CONFIG = """name: multi
datasets:
  - {name: iris, label: D1}
ensemble: {repetitions: 2}
methods:
  - {name: eac-al, label: Best}
metrics: [ari, nmi]
"""

PAPER_ARI = "table,metric,method,dataset,mean,std,bold,param\nT2,ARI,Best,D1,0.90,0.05,,\nT2,ARI,Other,D1,0.5,,,\n"
PAPER_NMI = "table,metric,method,dataset,mean,std,bold,param\nT3,NMI,Best,D1,0.70,,,\n"


def config_error(text):
    with pytest.raises(UserError) as info:
        load_config_text(text, "cfg.yaml")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_compare_to_string_or_list():
    assert load_config_text(CONFIG + "compare_to: a/t2.csv\n", "c.yaml").compare_to == "a/t2.csv"
    cfg = load_config_text(CONFIG + "compare_to: [a/t2.csv, a/t3.csv]\n", "c.yaml")
    assert cfg.compare_to == ["a/t2.csv", "a/t3.csv"] and compare_targets(cfg) == ["a/t2.csv", "a/t3.csv"]
    assert compare_targets(load_config_text(CONFIG, "c.yaml")) == []


@pytest.mark.parametrize("tail, expected", [
    ("compare_to:\n  - a/t2.csv\n  - 3\n", "cfg.yaml:10: compare_to[1]: must be a paper table CSV path"),
    ("compare_to: [a/t2.csv, {x: 1}]\n", "cfg.yaml:8: compare_to[1]: must be a paper table CSV path"),
    ("compare_to: []\n", "cfg.yaml:8: compare_to: must be a paper table CSV path or a non-empty list"),
    ("compare_to: 5\n", "cfg.yaml:8: compare_to: must be a paper table CSV path (a non-empty string), got 5"),
    ("compare_to: [a/t2.csv, b/t2.csv]\n", "compare_to[1]: file name stem 't2' repeats compare_to[0]"),
])
def test_compare_to_validation_errors(tail, expected):
    assert expected in config_error(CONFIG + tail)


@pytest.fixture
def results(tmp_path):
    """A results folder (experiment.json + cells.csv) with known scores, and two paper tables."""
    (tmp_path / "t2_ari.csv").write_text(PAPER_ARI)
    (tmp_path / "t3_nmi.csv").write_text(PAPER_NMI)

    def make(compare_to):
        cfg = load_config_text(CONFIG + f"compare_to: {compare_to}\n", "c.yaml")
        root = tmp_path / "results" / "multi"
        store = ResultStore(root)
        store.save_config(cfg)
        records = [{"dataset": "D1", "method": "Best", "method_name": "eac-al", "point": 0, "params": "{}",
                    "rep": rep, "status": "ok", "metrics": {"ari": 0.9 + 0.02 * rep, "nmi": 0.8}} for rep in (0, 1)]
        (root / "cells.csv").write_text(records_to_frame(cfg, records).to_csv(index=False, lineterminator="\n"))
        return root

    return tmp_path, make


def test_one_entry_list_writes_the_single_table_files(results):
    tmp_path, make = results
    root = make(f"'{tmp_path / 't2_ari.csv'}'")
    [single] = run_compare(root)
    as_string = {p.name: p.read_text() for p in single.paths}
    root = make(f"['{tmp_path / 't2_ari.csv'}']")
    [listed] = run_compare(root)
    assert sorted(as_string) == ["comparison.csv", "comparison.md"]
    assert {p.name: p.read_text() for p in listed.paths} == as_string
    assert not list(root.glob("comparison_*"))
    frame = pd.read_csv(root / "comparison.csv")
    assert list(frame["status"]) == ["compared", "missing"] and frame["diff"].iloc[0] == pytest.approx(0.01)


def test_several_tables_write_one_comparison_each_and_an_index(results):
    tmp_path, make = results
    root = make(f"['{tmp_path / 't2_ari.csv'}', '{tmp_path / 't3_nmi.csv'}']")
    (root / "comparison.csv").write_text("stale single-table comparison\n")
    comparisons = run_compare(root)
    assert [c.stem for c in comparisons] == ["t2_ari", "t3_nmi"]
    ari = pd.read_csv(root / "comparison_t2_ari.csv")
    nmi = pd.read_csv(root / "comparison_t3_nmi.csv")
    assert list(ari["metric"]) == ["ARI", "ARI"] and ari["ours_mean"].iloc[0] == pytest.approx(0.91)
    assert list(nmi["metric"]) == ["NMI"] and nmi["diff"].iloc[0] == pytest.approx(0.1)
    assert (root / "comparison_t3_nmi.md").read_text().startswith(f"# Comparison: {root} vs {tmp_path / 't3_nmi.csv'}")
    index = (root / "comparison.md").read_text()
    assert index.startswith(INDEX_TITLE)
    for c in comparisons:
        assert f"[comparison_{c.stem}.md](comparison_{c.stem}.md)" in index and c.line.replace("|", "\\|") in index
    assert not (root / "comparison.csv").exists()  # the stale single-table file is gone
    # the results index lists the per-table comparisons, not the index file
    text = render(tmp_path / "results")
    assert "[comparison_t2_ari.md]" in text and "[comparison_t3_nmi.md]" in text and "[comparison.md]" not in text
    # an explicit paper file still writes the single-table files
    [explicit] = run_compare(root, str(tmp_path / "t3_nmi.csv"))
    assert [p.name for p in explicit.paths] == ["comparison.csv", "comparison.md"]
    assert pd.read_csv(root / "comparison.csv").equals(nmi)


def test_cli_repeated_paper_and_errors(results, capsys):
    tmp_path, make = results
    root = str(make(f"'{tmp_path / 't2_ari.csv'}'"))
    code, out, err = invoke(capsys, "compare", root, "-q", "--paper", str(tmp_path / "t2_ari.csv"),
                            "--paper", str(tmp_path / "t3_nmi.csv"))
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("t2_ari: 1 cells compared") and lines[1].startswith("t3_nmi: ")
    assert (tmp_path / "results" / "multi" / "comparison_t3_nmi.md").exists()
    code, out, _ = invoke(capsys, "compare", root, "-q")  # the config's single compare_to: the old file names
    assert code == 0 and out.startswith("1 cells compared")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "t2_ari.csv").write_text(PAPER_ARI)
    code, _, err = invoke(capsys, "compare", root, "--paper", str(tmp_path / "t2_ari.csv"),
                          "--paper", str(tmp_path / "other" / "t2_ari.csv"))
    assert code == 2 and err.startswith("ensclust: error: ") and "share the file name 't2_ari'" in err


@pytest.mark.parametrize("generic_first", [True, False])
def test_row_mapped_to_the_param_wins_over_a_generic_row(tmp_path, generic_first):
    """Paper rows per filter order (param k=1) must match the config row mapped to k=1, not the generic row of
    the same paper name, whichever comes first in the config (the ACMK Yale comparison used to pick the generic one)."""
    generic = "  - {name: eac-al, label: Best}\n"
    mapped = "  - {name: eac-sl, label: Best (k=1), paper_method: Best, paper_param: 'k=1'}\n"
    paper = tmp_path / "t4.csv"
    paper.write_text("table,metric,method,dataset,mean,std,bold,param\nT4,ARI,Best,D1,0.5,,,k=1\n")
    text = (CONFIG.replace(generic, generic + mapped if generic_first else mapped + generic)
            + f"compare_to: '{paper}'\n")
    cfg = load_config_text(text, "cfg.yaml")
    root = tmp_path / "results" / "multi"
    store = ResultStore(root)
    store.save_config(cfg)
    records = [{"dataset": "D1", "method": label, "method_name": name, "point": 0, "params": "{}", "rep": rep,
                "status": "ok", "metrics": {"ari": value, "nmi": 0.8}}
               for label, name, value in (("Best", "eac-al", 0.9), ("Best (k=1)", "eac-sl", 0.4)) for rep in (0, 1)]
    (root / "cells.csv").write_text(records_to_frame(cfg, records).to_csv(index=False, lineterminator="\n"))
    [comparison] = run_compare(root)
    frame = pd.read_csv(root / "comparison.csv")
    assert frame["ours_label"].tolist() == ["Best (k=1)"] and frame["ours_mean"].iloc[0] == pytest.approx(0.4)


def test_paper_path_shown_the_same_on_every_machine(tmp_path, monkeypatch):
    """The comparison files name a paper table by its place under ../shared/paper_tables, whatever folder
    (ENSCLUST_PAPER_TABLES, ENSCLUST_DATA's sibling) it was found in; a table elsewhere keeps its own path."""
    from ensclust.experiment.compare import paper_display_path

    tables = tmp_path / "elsewhere" / "paper_tables"
    (tables / "acmk").mkdir(parents=True)
    csv = tables / "acmk" / "table2_acc.csv"
    csv.write_text("table,metric,method,dataset,mean\n")
    monkeypatch.setenv("ENSCLUST_PAPER_TABLES", str(tables))
    assert paper_display_path(csv) == "../shared/paper_tables/acmk/table2_acc.csv"
    own = tmp_path / "mine.csv"
    own.write_text("")
    assert paper_display_path(own) == str(own)

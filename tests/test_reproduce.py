"""ensclust reproduce: manifests, assembly of a paper table from several experiments, tiers, dry-run
estimates, the scorecard and a user's method added to a table (--with). A toy paper on built-in data."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from ensclust.papers.manifest import PAPERS, config_dir, load_manifest, parse_manifest
from ensclust.testing import assert_user_error, invoke_cli

TOY_MANIFEST = """
paper: toy
title: Toy paper
paper_tables: toy
repetitions: 5
authors_pools: [Wine]
tables:
  - table: table1_ari
    title: "Table 1: ARI"
    sources:
      - {config: toy_a, tier: quick, protocol: "3 runs"}
      - {config: toy_b}
causes:
  - {dataset: Wine, cause: "toy cause on Wine"}
"""

CONFIG = """name: {name}
seed: 0
datasets:
{datasets}
pool: {{generator: kmeans, k: c, size: 10}}
ensemble: {{mode: random, size: 5, repetitions: {reps}, seed: 1}}
methods:
{methods}
metrics: [ari, nmi]
compare_to: toy/table1_ari.csv
"""

PAPER = """table,metric,method,dataset,mean,std,bold,param
table1,ARI,KM,Iris,0.60,0.05,,
table1,ARI,KM,Wine,0.30,,,
table1,ARI,EAC,Iris,0.70,0.01,,
table1,ARI,EAC,Wine,0.40,,,
table1,ARI,LWEA,Iris,0.50,,,
table1,ARI,HGPA,Iris,0.30,,,
table1,ARI,EAC,Moons,0.90,,,
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    manifests, tables = tmp_path / "manifests", tmp_path / "paper_tables" / "toy"
    manifests.mkdir()
    tables.mkdir(parents=True)
    (manifests / "toy.yaml").write_text(TOY_MANIFEST)
    (manifests / "toy_a.yaml").write_text(CONFIG.format(
        name="toy_a", reps=3, datasets="  - {name: iris, label: Iris}\n  - {name: wine, label: Wine}",
        methods="  - {name: km-avg, label: KM}\n  - {name: eac-al, label: EAC}"))
    (manifests / "toy_b.yaml").write_text(CONFIG.format(
        name="toy_b", reps=5, datasets="  - {name: iris, label: Iris}",
        methods="  - {name: eac-al, label: EAC}\n  - {name: lwea, label: LWEA}"))
    (tables / "table1_ari.csv").write_text(PAPER)
    monkeypatch.setenv("ENSCLUST_MANIFESTS", str(manifests))
    monkeypatch.setenv("ENSCLUST_PAPER_TABLES", str(tmp_path / "paper_tables"))
    # the cost model also reads the records under ./results (the project's, by default): run from tmp_path so
    # that the working tree's own results (e.g. results/demo after `make demo`) do not price the toy's fits
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_dry_run_lists_the_tier_configs_without_running(toy, capsys):
    results = toy / "results"
    code, out, _ = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--dry-run", "--results", str(results))
    assert code == 0
    assert "toy_a" in out and "toy_b" not in out
    assert "total (1 configs)" in out
    code, out, _ = invoke_cli(capsys, "reproduce", "toy", "--dry-run", "--results", str(results))
    row = next(line for line in out.splitlines() if line.startswith("toy_b"))
    assert row.split()[1:4] == ["10", "0", "10"]  # planned, finished, pending: 2 methods x 5 repetitions
    assert not results.exists()  # nothing ran


def test_dry_run_from_scratch_prices_the_finished_fits_too(toy, capsys):
    results = toy / "results"
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--results", str(results), "--quiet")
    assert code == 0, err
    _, out, _ = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--dry-run", "--results", str(results))
    row = next(line for line in out.splitlines() if line.startswith("toy_a")).split()
    assert row[3] == "0" and row[4:6] == ["0", "s"]  # everything finished: nothing pending, nothing to price
    _, out, _ = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--dry-run", "--from-scratch",
                           "--results", str(results))
    assert "from scratch" in out.splitlines()[0]
    row = next(line for line in out.splitlines() if line.startswith("toy_a")).split()
    assert row[1] == row[2] == row[3] and "recorded" in " ".join(row[6:])  # every fit priced, from its own record
    # the registry names of the methods that carry the estimate
    by_method = next(line for line in out.splitlines() if line.startswith("largest by method: "))
    names = [part.split()[0] for part in by_method.removeprefix("largest by method: ").split(", ")]
    assert set(names) == {"eac-al", "km-avg"}
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--from-scratch", "--results", str(results))
    assert code == 2 and "--from-scratch goes with --dry-run" in err


def test_dry_run_marks_estimates_from_wall_time_only_records(toy, capsys):
    """Records without a CPU time (runs from before cpu_s was recorded) price their rows as ``recorded-wall``
    and the total says how much of it comes from them."""
    results = toy / "results"
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--results", str(results), "--quiet")
    assert code == 0, err
    _, out, _ = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--dry-run", "--from-scratch",
                           "--results", str(results))
    assert "recorded-wall" not in out and "wall-time-only" not in out
    timing = next(results.glob("toy_a/timing.csv"))
    frame = pd.read_csv(timing)
    frame["cpu_s"] = np.nan
    frame.to_csv(timing, index=False)
    _, out, _ = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--dry-run", "--from-scratch",
                           "--results", str(results))
    row = next(line for line in out.splitlines() if line.startswith("toy_a"))
    assert "6 recorded-wall" in row      # the 2 other fits are the pseudo-method rows (scored, not timed)
    assert "of it from wall-time-only records" in out.splitlines()[-1]
    assert "power-law model" not in out  # every row has its own records


def test_dry_run_total_says_how_much_is_extrapolated_by_the_model(toy, capsys):
    """Rows never fitted anywhere at their size are priced by the per-method power law; the total names that
    share, since a solve on microclusters can cost far more than n and m predict."""
    results = toy / "results"
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--results", str(results), "--quiet")
    assert code == 0, err
    # the fits become records of another experiment at twice the size: toy_a has no record of its own and no
    # fit of its methods exists at its n, so its rows are priced by the law
    (results / "toy_a").rename(results / "elsewhere")
    for cells in results.glob("*/cells.csv"):
        frame = pd.read_csv(cells)
        frame["n"] = frame["n"] * 2
        frame.to_csv(cells, index=False)
    _, out, _ = invoke_cli(capsys, "reproduce", "toy", "--tier", "quick", "--dry-run", "--results", str(results))
    row = next(line for line in out.splitlines() if line.startswith("toy_a"))
    assert " model" in row
    assert "of it from the power-law model" in out.splitlines()[-1]


def test_reproduce_assembles_the_table_with_provenance(toy, capsys):
    results = toy / "results"
    code, out, err = invoke_cli(capsys, "reproduce", "toy", "--results", str(results), "--quiet")
    assert code == 0, err
    frame = pd.read_csv(results / "papers" / "toy" / "table1_ari.csv", keep_default_na=False)
    cell = {(r.method, r.dataset): r for r in frame.itertuples(index=False)}
    eac = cell[("EAC", "Iris")]
    assert eac.source == "toy_a" and eac.also.startswith("toy_b (")  # the preference decides, visibly
    assert set(eac.marks.split()) == {"r3", "t"}  # 3 of the paper's 5 repetitions; trimmed protocol
    assert cell[("LWEA", "Iris")].source == "toy_b" and cell[("LWEA", "Iris")].marks == ""
    assert "p" in cell[("EAC", "Wine")].marks.split()  # generated pool where the authors' exists
    assert cell[("KM", "Iris")].marks == "t"  # a pool statistic: no repetition mark
    assert cell[("HGPA", "Iris")].status == "missing" and "method not in config" in cell[("HGPA", "Iris")].reason
    assert cell[("EAC", "Moons")].reason == "no contributing config covers this data set"
    for r in frame[frame["status"] == "compared"].itertuples(index=False):
        tolerance = 0.05 if (r.method, r.dataset) == ("KM", "Iris") else 0.01 if r.method == "EAC" and \
            r.dataset == "Iris" else 0.02
        assert float(r.tolerance) == pytest.approx(tolerance)
        assert r.within == ("yes" if float(r.abs_diff) <= tolerance else "no")
        if r.within == "no" and r.dataset == "Wine":
            assert r.cause == "toy cause on Wine"
    md = (results / "papers" / "toy" / "table1_ari.md").read_text()
    assert "| Method | Iris | Wine | Moons |" in md  # the paper's columns, in its order
    assert "(0.7000)" in md and "<sup>" in md and "trimmed protocol: 3 runs" in md
    assert "\\begin{tabular}" in (results / "papers" / "toy" / "table1_ari.tex").read_text()
    card = (results / "REPRODUCTION.md").read_text()
    assert "| [toy](papers/toy/README.md) | 7 |" in card
    code, out, _ = invoke_cli(capsys, "reproduce", "--status", "--results", str(results))
    assert code == 0 and any(line.startswith("toy") and "7 result cells" in line for line in out.splitlines())


def test_reproduce_is_deterministic(toy, capsys):
    outputs = []
    for name in ("r1", "r2"):
        invoke_cli(capsys, "reproduce", "toy", "--results", str(toy / name), "--quiet")
        outputs.append({p.name: p.read_bytes() for p in (toy / name / "papers" / "toy").iterdir()})
        outputs[-1]["cells_a"] = (toy / name / "toy_a" / "cells.csv").read_bytes()
    assert outputs[0] == outputs[1]


def test_with_adds_a_users_method_under_the_tables_protocol(toy, capsys):
    results = toy / "results"
    invoke_cli(capsys, "reproduce", "toy", "--results", str(results), "--quiet")
    code, out, err = invoke_cli(capsys, "reproduce", "toy", "--table", "1", "--with", "eac-sl", "--label", "Mine",
                                "--results", str(results), "--quiet")
    assert code == 0, err
    frame = pd.read_csv(results / "papers" / "toy" / "table1_ari--with-Mine.csv", keep_default_na=False)
    mine = frame[frame["method"] == "Mine (yours)"]
    assert list(mine["dataset"]) == ["Iris", "Wine", "Moons"]
    iris = mine[mine["dataset"] == "Iris"].iloc[0]
    assert iris["source"] == "toy_a--with-Mine" and int(iris["ours_n"]) == 3  # toy_a's 3 repetitions
    assert not math.isnan(float(iris["ours_mean"]))
    assert mine[mine["dataset"] == "Moons"].iloc[0]["status"] == "missing"
    # the base rows are the assembled table's, unchanged
    base = (results / "papers" / "toy" / "table1_ari.csv").read_text().splitlines()
    assert (results / "papers" / "toy" / "table1_ari--with-Mine.csv").read_text().splitlines()[: len(base)] == base
    assert "Mine (yours)" in (results / "papers" / "toy" / "table1_ari--with-Mine.md").read_text()


def test_bad_input_is_one_line(toy, capsys):
    assert_user_error(invoke_cli(capsys, "reproduce", "tyo", "--dry-run"), "unknown paper 'tyo'", "did you mean 'toy'")
    assert_user_error(invoke_cli(capsys, "reproduce", "toy", "--table", "9", "--dry-run"), "unknown table")
    assert_user_error(invoke_cli(capsys, "reproduce", "toy", "--with", "lwea"), "--with needs --table")
    assert_user_error(invoke_cli(capsys, "reproduce", "toy", "--table", "1", "--with", "nosuch", "--dry-run"),
                      "unknown method 'nosuch'")
    assert_user_error(invoke_cli(capsys, "reproduce"), "missing PAPER")


def test_manifest_validation_names_the_entry():
    with pytest.raises(Exception, match="tables\\[0\\].sources\\[0\\].*unknown key 'tierr'"):
        parse_manifest({"paper": "x", "title": "x", "tables": [{"table": "t", "sources": [
            {"config": "c", "tierr": "quick"}]}]}, "m.yaml")


@pytest.mark.parametrize("paper", PAPERS)
def test_builtin_manifests_cover_every_config_that_compares(paper):
    """Every source config exists under its own name, and every config comparing with one of the paper's
    tables is a source of that table (no result folder left out of the assembled tables)."""
    manifest = load_manifest(paper)
    for spec in manifest.tables:
        for source in spec.sources:
            data = yaml.safe_load((config_dir() / f"{source.config}.yaml").read_text())
            assert data["name"] == source.config
    for path in sorted(config_dir().glob("*.yaml")):
        targets = yaml.safe_load(path.read_text()).get("compare_to") or []
        for target in [targets] if isinstance(targets, str) else targets:
            folder, stem = target.split("/")[0], target.split("/")[-1].removesuffix(".csv")
            if folder != manifest.paper_tables:
                continue
            assert path.stem in [s.config for s in manifest.table(stem).sources], (path.stem, stem)


OFFSET_MANIFEST = """
paper: toyoff
title: Toy paper with offsets
paper_tables: toyoff
repetitions: 3
tables:
  - table: table1_offsets
    title: "Table 1: offsets"
    offsets: {marker: "offset vs default", reference: "absolute value at default"}
    sources:
      - {config: toyoff_a}
"""

OFFSET_PAPER = """table,metric,method,dataset,mean,std,bold,param
table1,ARI,LW,Iris,0.5,,,theta=0.4;absolute value at default
table1,ARI,LW,Iris,+0.01,,,theta=0.2;offset vs default
table1,ARI,LW,Iris,-0.02,,,theta=0.8;offset vs default
table1,ARI,LW,Iris,0.5,,,theta=0.4;again;absolute value at default
"""


def _reproduce_offsets(tmp_path, monkeypatch, capsys, manifest: str, config: str, paper: str) -> pd.DataFrame:
    """Run the toy offsets paper (manifest, one config 'toyoff_a', its paper CSV); the assembled table."""
    manifests, tables = tmp_path / "m", tmp_path / "t" / "toyoff"
    manifests.mkdir()
    tables.mkdir(parents=True)
    (manifests / "toyoff.yaml").write_text(manifest)
    (manifests / "toyoff_a.yaml").write_text(config)
    (tables / "table1_offsets.csv").write_text(paper)
    monkeypatch.setenv("ENSCLUST_MANIFESTS", str(manifests))
    monkeypatch.setenv("ENSCLUST_PAPER_TABLES", str(tmp_path / "t"))
    code, _, err = invoke_cli(capsys, "reproduce", "toyoff", "--results", str(tmp_path / "r"), "--quiet")
    assert code == 0, err
    return pd.read_csv(tmp_path / "r" / "papers" / "toyoff" / "table1_offsets.csv", keep_default_na=False)


def test_offset_cells_are_our_offsets_from_the_reference(tmp_path, monkeypatch, capsys):
    config = CONFIG.replace("compare_to: toy/table1_ari.csv", "compare_to: toyoff/table1_offsets.csv").format(
        name="toyoff_a", reps=3, datasets="  - {name: iris, label: Iris}",
        methods='  - {name: lwea, label: LW, params: {theta: 0.4},'
                ' paper_param: "theta=0.4;absolute value at default"}\n'
                "  - {name: lwea, label: LWT, grid: {theta: [0.2, 0.8]}, tuning: each}")
    frame = _reproduce_offsets(tmp_path, monkeypatch, capsys, OFFSET_MANIFEST, config, OFFSET_PAPER)
    tables_csv = pd.read_csv(tmp_path / "r" / "toyoff_a" / "table_ari.csv")
    mean = dict(zip(tables_csv["method"], tables_csv["mean"], strict=True))
    assert list(frame["status"]) == ["compared"] * 4
    assert frame["ours_mean"][0] == pytest.approx(mean["LW"])
    assert frame["ours_mean"][1] == pytest.approx(mean["LWT [theta=0.2]"] - mean["LW"])
    assert frame["ours_mean"][2] == pytest.approx(mean["LWT [theta=0.8]"] - mean["LW"])
    assert frame["ours_mean"][3] == pytest.approx(mean["LW"])  # a repeated reference cell
    assert frame["diff"][1] == pytest.approx(frame["ours_mean"][1] - 0.01)


PLUGIN = '''
import numpy as np
from ensclust.methods import ConsensusMethod, Param


class FirstMember(ConsensusMethod):
    """Returns the first member's labels folded onto n_clusters (a deliberately simple plug-in)."""

    name = "first-member"
    params = {"shift": Param(0, type="int", low=0, doc="added to every label before folding")}

    def _fit(self, members, n_clusters, X, rng):
        return (np.asarray(members)[:, 0] + self.shift) % n_clusters
'''


def test_with_runs_a_plugin_from_a_users_file(toy, capsys):
    plugin = toy / "first_member.py"
    plugin.write_text(PLUGIN)
    results = toy / "results"
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--table", "1", "--with", f"{plugin}:FirstMember",
                              "--param", "shift=1", "--results", str(results), "--quiet")
    assert code == 0, err
    frame = pd.read_csv(results / "papers" / "toy" / "table1_ari--with-FirstMember.csv", keep_default_na=False)
    mine = frame[frame["method"] == "FirstMember (yours)"]
    assert set(mine[mine["status"] == "ours only"]["dataset"]) == {"Iris", "Wine"}
    config = yaml.safe_load((results / "toy_a--with-FirstMember" / "experiment.json").read_text())
    assert config["methods"][0]["params"] == {"shift": 1}


def test_new_failed_cells_exit_3_and_recorded_ones_do_not(toy, capsys):
    # n_clusters above the data size fails every fit of toy_b's Iris cells; a second run resumes, the failures
    # are already recorded with their reason (as in committed results), and the tier no longer fails on them
    config = (toy / "manifests" / "toy_b.yaml").read_text()
    (toy / "manifests" / "toy_b.yaml").write_text(config.replace("{name: iris, label: Iris}",
                                                                 "{name: iris, label: Iris, n_clusters: 500}"))
    results = toy / "results"
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--results", str(results), "--quiet")
    assert code == 3
    assert "toy_b: 10 cells failed in this run; first: Iris/" in err
    assert (results / "REPRODUCTION.md").exists()  # the scorecard is still written
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--results", str(results), "--quiet")
    assert code == 0, err


RELATIVE_PAPER = """table,metric,method,dataset,mean,std,bold,param
table1,ARI,EC,Iris,0.5,,,gamma2=1;absolute value at default
table1,ARI,EC,Iris,+0.01,,,gamma2=0.01;offset vs default
table1,C_fro_relative_change,EC,Iris,0.05,,,gamma2=0.01;|(||C||_F - ||C_default||_F)| / ||C_default||_F
table1,C_fro_relative_change,EC,Iris,0,,,gamma2=1;|(||C||_F - ||C_default||_F)| / ||C_default||_F
"""


def test_relative_change_cells_use_the_recorded_consensus_norm(tmp_path, monkeypatch, capsys):
    # EC-CMS Table III's ||C||_F row: |norm at the setting - norm at the default| / norm at the default,
    # from the consensus_fro the runner records (the Frobenius norm of the fitted method's consensus matrix)
    manifest = OFFSET_MANIFEST.replace('reference: "absolute value at default"}',
                                       'reference: "absolute value at default", relative: "/ ||C_default||_F"}')
    config = CONFIG.replace("compare_to: toy/table1_ari.csv", "compare_to: toyoff/table1_offsets.csv")
    config = config.replace("metrics: [ari, nmi]", "metrics: [ari, consensus_fro]").format(
        name="toyoff_a", reps=2, datasets="  - {name: iris, label: Iris}",
        methods='  - {name: eccms, label: EC, params: {max_iter: 20}, paper_param: "gamma2=1;absolute value at default"}\n'
                "  - {name: eccms, label: ECG, grid: {gamma2: [0.01]}, params: {max_iter: 20}, tuning: each}\n"
                "  - {name: km-avg, label: KM}")
    frame = _reproduce_offsets(tmp_path, monkeypatch, capsys, manifest, config, RELATIVE_PAPER)
    norms = pd.read_csv(tmp_path / "r" / "toyoff_a" / "table_consensus_fro.csv")
    norm = dict(zip(norms["method"], norms["mean"], strict=True))
    assert norm["EC"] > 1 and math.isnan(norm["KM"])  # a base-clustering row has no consensus matrix
    assert list(frame["status"]) == ["compared"] * 4
    assert frame["ours_mean"][2] == pytest.approx(abs(norm["ECG [gamma2=0.01]"] - norm["EC"]) / norm["EC"], rel=1e-3)
    assert frame["ours_mean"][3] == 0.0 and frame["within"][3] == "yes"  # the reference setting itself
    cells = pd.read_csv(tmp_path / "r" / "toyoff_a" / "cells.csv")
    assert (cells.loc[cells["method"] == "EC", "consensus_fro"] > 1).all()


def test_consensus_fro_is_the_frobenius_norm_of_the_consensus_matrix():
    import numpy as np
    from scipy import sparse

    from ensclust.metrics import consensus_fro

    class Fitted:
        consensus_matrix_ = np.array([[1.0, 0.5], [0.5, 1.0]])

    assert consensus_fro(Fitted()) == pytest.approx(np.sqrt(2.5))
    Fitted.consensus_matrix_ = sparse.csr_matrix(Fitted.consensus_matrix_)
    assert consensus_fro(Fitted()) == pytest.approx(np.sqrt(2.5))
    Fitted.consensus_matrix_ = None
    assert math.isnan(consensus_fro(Fitted()))


def test_cost_estimate_prices_a_shared_solve_once(tmp_path):
    """RSEC-H and RSEC-Z (one solve_group) on the same ensemble: the second of each pair is priced as the
    post-processing only; another method with the same parameters is priced in full."""
    from ensclust.experiment.config import load_config_text
    from ensclust.papers.cost import SHARED_SOLVE_COST_S, CostModel, estimate_config

    cfg = load_config_text(CONFIG.format(
        name="shared", reps=3, datasets="  - {name: iris, label: Iris}",
        methods="  - {name: rsec-h, label: RSEC-H}\n  - {name: rsec-z, label: RSEC-Z}\n"
                "  - {name: trce, label: TRCE}"), "shared.yaml")
    model = CostModel(tmp_path, tmp_path)
    model._laws = {"rsec-h": (0.0, 1.0, 0.0), "rsec-z": (0.0, 1.0, 0.0), "trce": (0.0, 1.0, 0.0)}  # t = n
    est = estimate_config(cfg, tmp_path, model)
    assert est.pending == 9
    assert dict(est.cells) == {"model": 6, "shared solve": 3}
    assert est.seconds["model"] == pytest.approx(6 * 150) and est.seconds["shared solve"] == 3 * SHARED_SOLVE_COST_S
    # where the sharing row has run, its own recorded post-processing time prices it (capped at the constant)
    model._same_row = {("shared", "Iris", "RSEC-Z"): 0.02}
    model._wall_only_row = {("shared", "Iris", "RSEC-Z"): False}
    est = estimate_config(cfg, tmp_path, model)
    assert est.seconds["shared solve"] == pytest.approx(3 * 0.02)
    model._same_row = {("shared", "Iris", "RSEC-Z"): 40.0}
    assert estimate_config(cfg, tmp_path, model).seconds["shared solve"] == 3 * SHARED_SOLVE_COST_S


def test_deviations_of_a_data_set_whose_base_row_deviates_are_put_down_to_the_pool():
    """The base row measures the pool: where it deviates by more than 0.05 (same data set and metric, in any
    table of the paper), the other rows' open deviations get the pool cause; recorded causes, within cells,
    other data sets and the base row itself are left alone."""
    from ensclust.papers.assemble import COLUMNS, attribute_to_pool
    from ensclust.papers.manifest import parse_manifest

    def frame(rows):
        out = pd.DataFrame([dict(dict.fromkeys(COLUMNS, ""), **r) for r in rows], columns=COLUMNS)
        return out

    def row(table, metric, method, dataset, ours, paper, cause="", param=""):
        diff = ours - paper
        return {"table": table, "metric": metric, "method": method, "dataset": dataset, "param": param,
                "ours_mean": ours, "paper_mean": paper, "diff": diff, "abs_diff": abs(diff), "status": "compared",
                "within": "yes" if abs(diff) <= 0.02 else "no", "cause": cause,
                "cause_kind": "recorded" if cause else ""}

    t2 = frame([row("t2", "NMI", "KM", "A", 0.50, 0.60), row("t2", "NMI", "EAC", "A", 0.55, 0.70),
                row("t2", "NMI", "LWEA", "A", 0.55, 0.70, cause="known"), row("t2", "NMI", "PTA", "A", 0.70, 0.71),
                row("t2", "NMI", "KM", "B", 0.60, 0.62), row("t2", "NMI", "EAC", "B", 0.50, 0.70),
                row("t2", "ACC", "KM", "A", 0.60, 0.61), row("t2", "ACC", "EAC", "A", 0.50, 0.70)])
    t4 = frame([row("t4", "nmi", "ACMK", "A", 0.40, 0.70, param="k=2")])  # no base row in this table
    frames = {"t2": t2, "t4": t4}
    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "base_row": "KM"}, "toy.yaml")
    attribute_to_pool(manifest, frames)
    kinds = list(t2["cause_kind"])
    assert kinds == ["", "pool", "recorded", "", "", "", "", ""]
    assert "KM row is -0.100 off here (ours 0.500, paper 0.600)" in t2.loc[1, "cause"]
    assert t2.loc[2, "cause"] == "known"
    assert t4.loc[0, "cause_kind"] == "pool"  # found through the metric alias, the table without a base row
    # no base_row in the manifest: nothing is attributed
    plain = {"t2": frame([row("t2", "NMI", "KM", "A", 0.50, 0.60), row("t2", "NMI", "EAC", "A", 0.55, 0.70)])}
    attribute_to_pool(parse_manifest({"paper": "toy", "title": "toy", "tables": []}, "toy.yaml"), plain)
    assert list(plain["t2"]["cause_kind"]) == ["", ""]


def test_deviations_within_the_run_to_run_spread_are_put_down_to_it():
    from scipy.stats import ttest_ind_from_stats

    from ensclust.papers.assemble import COLUMNS, attribute_to_spread

    def row(ours, ours_std, n, paper, paper_std, cause=""):
        return dict(dict.fromkeys(COLUMNS, ""), table="t", metric="ARI", method="M", dataset="D",
                    ours_mean=ours, ours_std=ours_std, ours_n=n, paper_mean=paper, paper_std=paper_std,
                    diff=ours - paper, abs_diff=abs(ours - paper), status="compared", within="no", cause=cause,
                    cause_kind="recorded" if cause else "")

    frame = pd.DataFrame([row(0.427, 0.087, 20, 0.477, 0.110),      # 0.05 apart, stds ~0.1: not significant
                          row(0.430, 0.015, 20, 0.522, 0.021),      # 0.09 apart, small stds: significant
                          row(0.427, 0.087, 1, 0.477, 0.110),       # one run of ours: no test
                          row(0.427, 0.087, 20, 0.477, math.nan),   # no std printed: one-sample test, p < 0.05
                          row(0.427, 0.087, 20, 0.477, 0.110, cause="known"),
                          row(0.490, 0.087, 20, 0.477, 0.110),      # below the minimum difference
                          row(0.437, 0.087, 10, 0.477, math.nan)],  # no std printed: one-sample test, p >= 0.05
                         columns=COLUMNS)
    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "repetitions": 20}, "toy.yaml")
    attribute_to_spread(manifest, {"t": frame}, 0.02)
    assert list(frame["cause_kind"]) == ["spread", "", "", "", "recorded", "", "spread"]
    assert "one-sample t-test" in frame.loc[6, "cause"] and "no std printed" in frame.loc[6, "cause"]
    p = ttest_ind_from_stats(0.427, 0.087, 20, 0.477, 0.110, 20, equal_var=False).pvalue
    assert p > 0.05 and f"p = {p:.2f}" in frame.loc[0, "cause"] and "over 20" in frame.loc[0, "cause"]
    assert ttest_ind_from_stats(0.430, 0.015, 20, 0.522, 0.021, 20, equal_var=False).pvalue < 0.05
    assert frame.loc[4, "cause"] == "known"


def test_deviations_our_own_grid_brackets_are_put_down_to_the_setting(monkeypatch):
    """A deviation whose row, run over a parameter grid (in its source config or a sensitivity config), has
    point means bracketing the paper's value (within the tolerance) gets the setting cause; one grid point only,
    a value outside the range, or a recorded cause leave it alone. Sensitivity configs run in the full tier."""
    from ensclust.papers import assemble
    from ensclust.papers.assemble import COLUMNS, attribute_to_setting
    from ensclust.papers.manifest import parse_manifest

    grids = {
        "main": pd.DataFrame({"dataset": ["A", "A", "A", "B"], "method": ["TRCE (default)", "TRCE (default)",
                                                                            "DREC", "DREC"],
                              "params": ["g=1", "g=2", "{}", "{}"], "ari": [0.30, 0.50, 0.9, 0.9],
                              "runs": [10, 10, 10, 10]}),
        "sens": pd.DataFrame({"dataset": ["A", "A"], "method": ["DREC", "DREC"], "params": ["l=1", "l=2"],
                              "ari": [0.10, 0.20], "runs": [3, 2]}),
    }
    monkeypatch.setattr(assemble, "_point_means", lambda root, config, cache: grids.get(config))

    def row(method, label, dataset, paper, ours, cause="", tolerance=0.02):
        within = "yes" if abs(ours - paper) <= tolerance else "no"
        return dict(dict.fromkeys(COLUMNS, ""), table="t2", metric="ARI", method=method, dataset=dataset,
                    ours_dataset=dataset, ours_label=label, source="main", paper_mean=paper, ours_mean=ours,
                    diff=ours - paper, abs_diff=abs(ours - paper), tolerance=tolerance, within=within,
                    status="compared", cause=cause, cause_kind="recorded" if cause else "")

    frame = pd.DataFrame([row("TRCE", "TRCE (default)", "A", 0.41, 0.30),   # bracketed by the main grid
                          row("TRCE", "TRCE (default)", "A", 0.60, 0.50),   # above its range + tolerance
                          row("DREC", "DREC", "A", 0.21, 0.90),             # one main point; sensitivity brackets
                          row("DREC", "DREC", "B", 0.50, 0.90),             # one point only: open
                          row("TRCE", "TRCE (default)", "A", 0.41, 0.30, cause="known"),
                          # within the paper's (wide) std but more than 0.05 off: still a deviation to explain
                          row("TRCE", "TRCE (default)", "A", 0.62, 0.55, tolerance=0.2),
                          row("TRCE", "TRCE (default)", "A", 0.62, 0.58, tolerance=0.2)],  # 0.04: no deviation
                         columns=COLUMNS)
    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "sensitivity": ["sens"]}, "toy.yaml")
    attribute_to_setting(manifest, {"t2": frame})
    assert list(frame["cause_kind"]) == ["setting", "", "setting", "", "recorded", "setting", ""]
    assert "2 parameter points of main (>= 10 runs each) our mean ranges 0.300..0.500" in frame.loc[0, "cause"]
    assert "of sens (>= 2 runs each)" in frame.loc[2, "cause"]
    # what was ruled out stays with the open deviation (the scorecard's "checked" column); one point rules out nothing
    assert frame.loc[1, "reason"] == "not the setting: over the 2 points of main ours ranges 0.300..0.500"
    assert frame.loc[3, "reason"] == "" and frame.loc[0, "reason"] == ""
    assert manifest.configs("full") == ["sens"] and manifest.configs("quick") == []


def test_a_tables_own_sensitivity_grid_explains_only_that_tables_rows(monkeypatch):
    """A grid listed under one table (rows of the same label mean another computation in another table, e.g.
    EC-CMS's "Proposed" on EAC's matrix in Table VI and on PTA's in Table VII) brackets that table's deviations
    only; the table's sensitivity configs join the full tier."""
    from ensclust.papers import assemble
    from ensclust.papers.assemble import COLUMNS, attribute_to_setting
    from ensclust.papers.manifest import parse_manifest

    grid = pd.DataFrame({"dataset": ["A", "A"], "method": ["Proposed", "Proposed"], "params": ["a=1", "a=2"],
                         "ari": [0.10, 0.30], "runs": [20, 20]})
    monkeypatch.setattr(assemble, "_point_means", lambda root, config, cache: grid if config == "grid6" else None)
    monkeypatch.setattr(assemble, "_data_reading", lambda root, config, label, cache: {})

    def frame(table):
        return pd.DataFrame([dict(dict.fromkeys(COLUMNS, ""), table=table, metric="ARI", method="Proposed",
                                  dataset="A", ours_dataset="A", ours_label="Proposed", source="main",
                                  paper_mean=0.2, ours_mean=0.6, diff=0.4, abs_diff=0.4, tolerance=0.02,
                                  within="no", status="compared")], columns=COLUMNS)

    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [
        {"table": "t6", "sources": ["main"], "sensitivity": ["grid6"]},
        {"table": "t7", "sources": ["main7"]}]}, "toy.yaml")
    frames = {"t6": frame("t6"), "t7": frame("t7")}
    attribute_to_setting(manifest, frames)
    assert frames["t6"].loc[0, "cause_kind"] == "setting" and "of grid6" in frames["t6"].loc[0, "cause"]
    assert frames["t7"].loc[0, "cause_kind"] == ""
    assert manifest.configs("full") == ["main", "main7", "grid6"] and manifest.configs("quick") == []
    from ensclust.errors import UserError

    with pytest.raises(UserError, match="sensitivty"):
        parse_manifest({"paper": "toy", "title": "toy", "tables": [{"table": "t6", "sensitivty": ["g"]}]}, "t.yaml")


def test_a_sensitivity_grid_on_another_reading_of_the_data_set_explains_nothing(monkeypatch, tmp_path):
    """The same data set label under another preprocessing or pool (e.g. Tr11 as unit rows of counts vs log
    tf-idf) feeds the methods other inputs: its grid must not bracket the source's cell."""
    from ensclust.papers import assemble
    from ensclust.papers.assemble import COLUMNS, attribute_to_setting
    from ensclust.papers.manifest import parse_manifest

    grid = pd.DataFrame({"dataset": ["A", "A"], "method": ["DREC", "DREC"], "params": ["l=1", "l=2"],
                         "ari": [0.10, 0.30], "runs": [3, 3]})
    monkeypatch.setattr(assemble, "_point_means", lambda root, config, cache: grid if config == "sens" else None)
    readings = {"main": {"preprocess": "tfidf_log"}, "sens": {"preprocess": "l2"}}
    monkeypatch.setattr(assemble, "_data_reading", lambda root, config, label, cache: readings.get(config))

    def frame():
        return pd.DataFrame([dict(dict.fromkeys(COLUMNS, ""), table="t2", metric="ARI", method="DREC", dataset="A",
                                  ours_dataset="A", ours_label="DREC", source="main", paper_mean=0.2, ours_mean=0.6,
                                  diff=0.4, abs_diff=0.4, tolerance=0.02, within="no", status="compared")],
                            columns=COLUMNS)

    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "sensitivity": ["sens"]}, "toy.yaml")
    other = frame()
    attribute_to_setting(manifest, {"t2": other})
    assert other.loc[0, "cause_kind"] == ""
    readings["sens"] = {"preprocess": "tfidf_log"}   # the same reading: its grid brackets 0.2
    same = frame()
    attribute_to_setting(manifest, {"t2": same})
    assert same.loc[0, "cause_kind"] == "setting"
    monkeypatch.undo()
    assert assemble._data_reading(tmp_path, "no_such_config", "A", None) is None


def test_a_cause_can_name_the_metric_it_explains():
    # EC-CMS Table III: one metric of the table deviates (||C||_F's relative change) while the score offsets match
    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "causes": [
        {"table": "table3*", "metric": "C_fro_relative_change", "cause": "which C is not stated"},
        {"table": "table3*", "dataset": "Wine", "cause": "any metric on Wine"}]}, "toy.yaml")
    assert manifest.cause_of("table3_x", "UMIST", "Proposed", "C_fro_relative_change") == "which C is not stated"
    assert manifest.cause_of("table3_x", "UMIST", "Proposed", "ARI") == ""
    assert manifest.cause_of("table3_x", "Wine", "Proposed", "ARI") == "any metric on Wine"
    assert manifest.cause_of("table3_x", "Wine", "Proposed") == "any metric on Wine"   # metric not given
    with pytest.raises(Exception, match="metrc"):
        parse_manifest({"paper": "toy", "title": "toy", "tables": [], "causes": [
            {"metrc": "ARI", "cause": "typo"}]}, "toy.yaml")


def test_cells_of_a_since_revised_method_are_marked_until_rerun(toy, capsys, monkeypatch):
    # a revision of a method's code makes its stored cells stale: the tables still show them (nothing is lost),
    # marked "o", and the next run of the config recomputes exactly those cells and drops the mark
    from ensclust.methods import get_method_class

    results = toy / "results"
    assert invoke_cli(capsys, "reproduce", "toy", "--results", str(results), "--quiet")[0] == 0
    monkeypatch.setattr(get_method_class("lwea"), "revision", 7)
    code, _, err = invoke_cli(capsys, "reproduce", "toy", "--assemble-only", "--results", str(results), "--quiet")
    assert code == 0, err
    frame = pd.read_csv(results / "papers" / "toy" / "table1_ari.csv", keep_default_na=False)
    cell = {(r.method, r.dataset): r for r in frame.itertuples(index=False)}
    assert "o" in cell[("LWEA", "Iris")].marks.split()
    assert "o" not in cell[("EAC", "Iris")].marks.split()      # other methods keep their cells unmarked
    assert "o: computed by an older revision" in (results / "papers" / "toy" / "table1_ari.md").read_text()
    assert invoke_cli(capsys, "reproduce", "toy", "--results", str(results), "--quiet")[0] == 0
    frame = pd.read_csv(results / "papers" / "toy" / "table1_ari.csv", keep_default_na=False)
    assert "o" not in frame[frame["method"] == "LWEA"]["marks"].iloc[0].split()


def test_scorecard_lists_every_deviation_without_a_cause():
    """The 12 largest deviations are shown with their causes; below them, every deviation above 0.05 that has
    none (the fidelity to-do list), whatever its size, with the experiment it comes from."""
    from ensclust.papers.assemble import COLUMNS
    from ensclust.papers.manifest import parse_manifest
    from ensclust.papers.reproduce import LARGEST_SHOWN, scorecard_markdown

    rows = []
    for i in range(LARGEST_SHOWN + 3):
        explained = i % 2 == 0
        diff = 0.5 - 0.01 * i
        rows.append(dict(dict.fromkeys(COLUMNS, ""), table="t2", metric="NMI", method=f"M{i}", dataset="A",
                         ours_mean=0.2 + diff, paper_mean=0.2, diff=diff, abs_diff=diff, status="compared",
                         within="no", cause="known" if explained else "",
                         cause_kind="recorded" if explained else "", source="toy_config"))
    rows.append(dict(dict.fromkeys(COLUMNS, ""), table="t2", metric="NMI", method="Small", dataset="A",
                     ours_mean=0.23, paper_mean=0.2, diff=0.03, abs_diff=0.03, status="compared", within="no"))
    frames = {"t2": pd.DataFrame(rows, columns=COLUMNS)}
    manifest = parse_manifest({"paper": "toy", "title": "Toy paper",
                               "tables": [{"table": "t2", "title": "T2", "sources": [{"config": "toy_config"}]}]},
                              "toy.yaml")
    text = scorecard_markdown({"toy": (manifest, frames)})
    expected = [f"M{i}" for i in range(1, LARGEST_SHOWN + 3, 2)]
    open_part = text.split(f"Not yet explained ({len(expected)}):")[1]
    listed = [line.split("|")[3].strip() for line in open_part.splitlines() if line.startswith("| t2")]
    assert listed == expected                                             # the smallest ones too
    assert "toy_config" in open_part and "Small" not in text              # below 0.05: not a deviation


def test_deviations_other_draws_of_the_generated_pool_bracket_are_put_down_to_the_pool_draw(monkeypatch):
    """A deviation on a generated pool gets the pool-draw cause when the row, rerun with the same protocol on
    other draws (pool seed) of the same data reading and pool spec, has tabled values (under the row's own
    policy: fixed, best mean, best per repetition) bracketing the paper's value; another pool spec, another row
    protocol or a value outside the range leave it open."""
    from ensclust.experiment.config import load_config_text
    from ensclust.papers import assemble
    from ensclust.papers.assemble import COLUMNS, attribute_to_pool_draw
    from ensclust.papers.manifest import parse_manifest

    head = ("seed: 0\npool: {source: generate, k: c, size: 10}\nensemble: {mode: random, size: 5, repetitions: 3}\n"
            "tune_metric: per-metric\nmetrics: [ari]\n")
    oracles = ("  - {name: drec, label: DREC, grid: {lambda: [1, 10]}, tuning: oracle-best-mean}\n"
               "  - {name: trce, label: TRCE, grid: {gamma: [1, 10]}, tuning: oracle-per-repetition}\n")
    main = load_config_text("name: main\n" + head + "datasets:\n  - {name: iris, label: A}\n"
                            "methods:\n  - {name: eccms, label: ECCMS}\n" + oracles + "  - {name: lwea, label: LWEA}\n",
                            "main.yaml")
    draws = load_config_text(
        "name: draws\n" + head + "datasets:\n  - {name: iris, label: A1, pool: {seed: 1}}\n"
        "  - {name: iris, label: A2, pool: {seed: 2}}\n  - {name: iris, label: A9, pool: {seed: 9, size: 50}}\n"
        "methods:\n  - {name: eccms, label: ECCMS}\n" + oracles +
        "  - {name: lwea, label: LWEA, grid: {theta: [0.4, 0.8]}}\n",
        "draws.yaml")
    # per (data set, row): the ARI of points 0 and 1 in repetitions 0..2
    runs = {("A1", "ECCMS"): [[0.35] * 3], ("A2", "ECCMS"): [[0.46] * 3], ("A9", "ECCMS"): [[0.60] * 3],
            ("A1", "DREC"): [[0.1] * 3, [0.52] * 3], ("A2", "DREC"): [[0.2] * 3, [0.3] * 3],
            ("A1", "TRCE"): [[0.1, 0.9, 0.1], [0.5, 0.1, 0.5]], ("A2", "TRCE"): [[0.2] * 3, [0.3, 0.1, 0.1]],
            ("A1", "LWEA"): [[0.1] * 3, [0.9] * 3], ("A2", "LWEA"): [[0.1] * 3, [0.9] * 3]}
    cells = pd.DataFrame([{"dataset": d, "method": m, "point": p, "rep": r, "status": "ok", "ari": v}
                          for (d, m), points in runs.items() for p, reps in enumerate(points)
                          for r, v in enumerate(reps)])
    from ensclust.experiment.report import build_tables

    loaded = {"main": (main, cells.iloc[0:0], None, None), "draws": (draws, cells, None, build_tables(draws, cells))}
    monkeypatch.setattr(assemble, "load_experiment", lambda root, name, cache=None: loaded.get(name))

    def row(label, paper, ours):
        return dict(dict.fromkeys(COLUMNS, ""), table="t2", metric="ARI", method=label, dataset="A",
                    ours_dataset="A", ours_label=label, source="main", paper_mean=paper, ours_mean=ours,
                    diff=ours - paper, abs_diff=abs(ours - paper), tolerance=0.02, within="no", status="compared")

    frame = pd.DataFrame([row("ECCMS", 0.45, 0.30),    # draws 0.30 (the table's), 0.35, 0.46: bracketed
                          row("ECCMS", 0.50, 0.30),    # above 0.46 + 0.02 (A9 is another pool spec: not a draw)
                          row("DREC", 0.50, 0.30),     # oracle row: each draw's best point, 0.52 and 0.30
                          row("DREC", 0.15, 0.30),     # ... so a point below (0.1) does not bracket 0.15
                          row("TRCE", 0.62, 0.30),     # best per repetition: A1 (0.5 + 0.9 + 0.5) / 3 = 0.633
                          row("LWEA", 0.50, 0.30)],    # the draws config runs LWEA over a grid, the table not
                         columns=COLUMNS)
    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "pool_draws": ["draws"]}, "toy.yaml")
    attribute_to_pool_draw(manifest, {"t2": frame})
    assert list(frame["cause_kind"]) == ["pool draw", "", "pool draw", "", "pool draw", ""]
    assert frame.loc[1, "reason"] == "not the pool draw: over 3 draws ours ranges 0.300..0.460"
    assert "over 3 draws of the generated pool (the table's and 2 more, draws) our mean ranges 0.300..0.460" \
        in frame.loc[0, "cause"]
    assert "ranges 0.233..0.633" in frame.loc[4, "cause"]   # A2: (0.3 + 0.2 + 0.2) / 3
    assert manifest.configs("full") == ["draws"]


def test_a_row_averaged_over_its_grid_is_not_bracketed_by_its_own_points(monkeypatch):
    """A row with tuning ``average`` (e.g. ACMK-GF over the v bases) reports the mean over its grid points: they
    are its parts, not alternative settings, so they must not put its deviation down to the setting; a
    sensitivity config's grid of the same row still may."""
    from ensclust.papers import assemble
    from ensclust.papers.assemble import COLUMNS, attribute_to_setting
    from ensclust.papers.manifest import parse_manifest

    grids = {"main": pd.DataFrame({"dataset": ["A", "A"], "method": ["GF", "GF"], "params": ["m=0", "m=1"],
                                   "ari": [0.20, 0.60], "runs": [10, 10]}),
             "sens": pd.DataFrame({"dataset": ["A", "A"], "method": ["GF", "GF"], "params": ["n=1", "n=10"],
                                   "ari": [0.38, 0.40], "runs": [10, 10]})}
    monkeypatch.setattr(assemble, "_point_means", lambda root, config, cache: grids.get(config))
    averaged = {"main"}
    monkeypatch.setattr(assemble, "_averaged_row", lambda root, config, labels, cache: config in averaged)

    def frame(paper):
        return pd.DataFrame([dict(dict.fromkeys(COLUMNS, ""), table="t6", metric="ARI", method="GF", dataset="A",
                                  ours_dataset="A", ours_label="GF", source="main", paper_mean=paper, ours_mean=0.4,
                                  diff=0.4 - paper, abs_diff=abs(0.4 - paper), tolerance=0.02, within="no",
                                  status="compared")], columns=COLUMNS)

    manifest = parse_manifest({"paper": "toy", "title": "toy", "tables": [], "sensitivity": ["sens"]}, "toy.yaml")
    low = frame(0.30)  # inside the main grid's 0.20..0.60, outside the sensitivity grid's 0.38..0.40
    attribute_to_setting(manifest, {"t6": low})
    assert low.loc[0, "cause_kind"] == "" and "over the 2 points of sens" in low.loc[0, "reason"]
    assert "of main" not in low.loc[0, "reason"]
    averaged.add("sens")  # an averaged row of a sensitivity config is no grid of settings either
    low = frame(0.39)
    attribute_to_setting(manifest, {"t6": low})
    assert low.loc[0, "cause_kind"] == "" and low.loc[0, "reason"] == ""
    averaged.clear()  # the same grid as alternative settings brackets it
    low = frame(0.30)
    attribute_to_setting(manifest, {"t6": low})
    assert low.loc[0, "cause_kind"] == "setting" and "of main" in low.loc[0, "cause"]


def test_an_imported_pool_is_read_by_its_file_not_by_generator_defaults():
    """Two configs on the same pool file see the same members whatever generator keys their top-level ``pool:``
    block or the defaults leave beside ``source: file`` (the setting check compares readings); generated pools
    still differ by every key."""
    from ensclust.papers.assemble import _pool_reading

    a = {"source": "file", "file": "pools/x.mat", "generator": "kmeans", "k": [2, "sqrt"], "size": 100}
    b = {"source": "file", "file": "pools/x.mat", "generator": "kmeans", "k": "c", "size": 100}
    assert _pool_reading(a) == _pool_reading(b) == {"source": "file", "file": "pools/x.mat"}
    assert _pool_reading({**a, "first": 20}) != _pool_reading(a)
    assert _pool_reading({**a, "file": "pools/y.mat"}) != _pool_reading(a)
    generated = {"source": "generate", "generator": "kmeans", "k": [2, "sqrt"], "size": 100}
    assert _pool_reading(generated) != _pool_reading({**generated, "k": "c"})


def test_a_grid_row_of_the_same_computation_brackets_under_another_label(monkeypatch):
    """A table's row and a sensitivity grid's row are the same computation when they run the same registry method
    with the same fixed parameters (the grid varies the rest), whatever their labels: EC-CMS Table VII's "PTA" row
    and the "PTA-AL" row of the grid over PTA's K. Another method or other fixed parameters are not."""
    from ensclust.experiment.config import load_config_text
    from ensclust.papers import assemble

    head = ("name: {name}\ndatasets:\n  - {{name: iris}}\npool: {{generator: kmeans, k: c, size: 20}}\n"
            "ensemble: {{mode: random, size: 5, repetitions: 2, seed: 1}}\nmetrics: [ari]\nmethods:\n")
    configs = {
        "main": load_config_text(head.format(name="main") + (
            "  - {name: pta-al, label: PTA}\n"
            "  - {name: eccms, label: Proposed, params: {alpha: 0.8, lambda: 0.4, ca: eac}}\n"), "main.yaml"),
        "grid": load_config_text(head.format(name="grid") + (
            "  - {name: pta-al, label: PTA-AL, grid: {K: [7, 20]}}\n"
            "  - {name: ptgp, label: PTGP, grid: {K: [7, 20]}}\n"
            "  - {name: eccms, label: On PTA, params: {ca: pta}, grid: {alpha: [0.7, 0.8]}}\n"
            "  - {name: eccms, label: On EAC, params: {ca: eac}, grid: {alpha: [0.7, 0.8], lambda: [0.1, 0.4]}}\n"),
            "grid.yaml"),
    }
    monkeypatch.setattr(assemble, "load_experiment",
                        lambda root, name, cache=None: (configs[name], None, None, None) if name in configs else None)
    assert assemble._same_computation("r", "main", "PTA", "grid", None) == {"PTA-AL"}
    assert assemble._same_computation("r", "main", "Proposed", "grid", None) == {"On EAC"}
    assert assemble._same_computation("r", "main", "PTA", "missing", None) == set()

"""Every experiment CLI command end to end (in-process through ensclust.cli.main, so exit codes and the
one-line error policy are exercised)."""

import numpy as np
import pandas as pd
import pytest

from ensclust.testing import assert_user_error
from ensclust.testing import invoke_cli as invoke

CONFIG = """name: clidemo
seed: 0
datasets:
  - name: blobs
    label: Blobs
    params: {n_samples: 60, centers: 3, random_state: 0}
pool: {generator: kmeans, k: c, size: 6}
ensemble: {mode: random, size: 4, repetitions: 3, seed: 1}
methods:
  - {name: km-avg, label: KM-avg}
  - {name: eac-al, label: EAC}
  - {name: eac-cl, label: EAC-CL}
metrics: [ari, nmi]
compare_to: PAPER
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paper = tmp_path / "paper.csv"
    paper.write_text("table,metric,method,dataset,mean,std,bold,param\nT,ARI,EAC,Blobs,0.9,0.1,,\n"
                     "T,ARI,PTA-AL,Blobs,0.8,,,\nT,NMI,EAC,Blobs,0.9,,,\n")
    (tmp_path / "cfg.yaml").write_text(CONFIG.replace("PAPER", str(paper)))
    return tmp_path


def test_run_report_compare(workdir, capsys):
    code, out, err = invoke(capsys, "run", "cfg.yaml", "--quiet")
    assert code == 0, err
    root = workdir / "results" / "clidemo"
    assert (root / "tables.tex").exists() and (root / "table_ari.csv").exists()
    assert "7 cells, 0 failed" in err  # 1 pool cell + 2 methods x 3 repetitions
    code, out, _ = invoke(capsys, "run", "cfg.yaml")  # rerun: everything skipped, tables printed
    assert code == 0 and "| EAC |" in out
    (root / "tables.md").unlink()
    code, out, _ = invoke(capsys, "report", str(root), "--format", "md", "--quiet")
    assert code == 0 and (root / "tables.md").exists() and out == ""
    code, out, _ = invoke(capsys, "compare", str(root))
    assert code == 0
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("2 cells compared; mean |diff|") and "1 missing" in summary and "[PTA-AL]" in summary
    comparison = pd.read_csv(root / "comparison.csv")
    assert len(comparison) == 3 and (root / "comparison.md").exists()


def test_run_user_errors(workdir, capsys):
    (workdir / "bad.yaml").write_text(CONFIG.replace("eac-cl", "eac-cx"))
    assert_user_error(invoke(capsys, "run", "bad.yaml"), "bad.yaml:12: methods[2].name: unknown method 'eac-cx'")
    assert_user_error(invoke(capsys, "run", "missing.yaml"), "config file not found")
    assert_user_error(invoke(capsys, "run", "cfg.yaml", "--jobs", "0"), "--jobs must be >= 1")
    assert_user_error(invoke(capsys, "run", "cfg.yaml", "--scheduler", "tcp://x:1"), "--scheduler needs")
    assert_user_error(invoke(capsys, "run"), "Missing argument")
    assert_user_error(invoke(capsys, "report", "nowhere"), "no such results folder")
    (workdir / "empty").mkdir()
    assert_user_error(invoke(capsys, "report", "empty"), "not a results folder")
    assert_user_error(invoke(capsys, "compare", "nowhere"), "no such results folder")


def test_report_and_compare_errors_after_run(workdir, capsys):
    assert invoke(capsys, "run", "cfg.yaml", "-q")[0] == 0
    root = str(workdir / "results" / "clidemo")
    assert_user_error(invoke(capsys, "report", root, "--format", "pdf"), "unknown format 'pdf'")
    assert_user_error(invoke(capsys, "compare", root, "--paper", "nope.csv"), "paper table 'nope.csv' not found")
    (workdir / "notpaper.csv").write_text("a,b\n1,2\n")
    assert_user_error(invoke(capsys, "compare", root, "--paper", "notpaper.csv"), "not a paper table")


def test_sweep(workdir, capsys):
    code, out, err = invoke(capsys, "sweep", "--method", "lwea", "--param", "theta=0.2:0.6:0.4", "-d", "iris",
                            "-r", "2", "--ensemble-size", "4")
    assert code == 0, err
    root = workdir / "results" / "sweep_lwea_theta"
    frame = pd.read_csv(root / "sweep.csv")
    assert sorted(set(frame["theta"])) == [0.2, 0.6] and set(frame["metric"]) == {"acc", "nmi", "ari"}
    assert (frame["n"] == 2).all()
    assert (root / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_user_error(invoke(capsys, "sweep", "-m", "lwea", "-p", "theta"), "--param 'theta' must look like")
    assert_user_error(invoke(capsys, "sweep", "-m", "lweaa", "-p", "theta=0:1:0.5"), "unknown method 'lweaa'")
    assert_user_error(invoke(capsys, "sweep", "-m", "lwea", "-p", "thet=0:1:0.5"), "unknown parameter")
    assert_user_error(invoke(capsys, "sweep", "-m", "lwea", "-p", "theta=0.1", "-r", "0"), "--repetitions must be")


def test_consensus(workdir, capsys):
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    members = np.column_stack([np.where(rng.random(60) < 0.1, rng.integers(0, 3, 60), y) for _ in range(8)])
    np.savetxt(workdir / "pool.csv", members, fmt="%d", delimiter=",")
    code, out, err = invoke(capsys, "consensus", "--pool", "pool.csv", "--first", "6", "--n-clusters", "3",
                            "--method", "eac-al", "--param", "dtype=float64", "--out", "labels.txt")
    assert code == 0, err
    labels = np.loadtxt(workdir / "labels.txt", dtype=int)
    assert labels.shape == (60,) and len(np.unique(labels)) == 3
    from ensclust.metrics import ari

    assert ari(y, labels) == 1.0
    assert "6 members -> 3 clusters" in out
    assert_user_error(invoke(capsys, "consensus", "--pool", "pool.csv", "-k", "3", "-m", "eac-al", "--param",
                             "dtype=float16", "--out", "x.txt"), "float16")
    assert_user_error(invoke(capsys, "consensus", "--pool", "pool.csv", "-k", "3", "-m", "eac", "--out", "x.txt"),
                      "unknown method 'eac'")
    assert_user_error(invoke(capsys, "consensus", "--pool", "pool.csv", "-k", "3", "-m", "eac-al", "--first", "99",
                             "--out", "x.txt"), "--first 99")
    assert_user_error(invoke(capsys, "consensus", "--pool", "pool.csv", "-m", "eac-al", "--out", "x.txt"),
                      "--n-clusters")


def test_bench(workdir, capsys):
    bench = workdir / "bench"
    bench.mkdir()
    (bench / "a.yaml").write_text(
        "- method: eac-al\n  dataset: iris\n  pool: {generator: kmeans, k: c, size: 5}\n  ensemble_size: 5\n"
        "  goal: tiny\n"
        "- method: eac-sl\n  pool: {source: file, file: pools/absent_pool.mat}\n  ensemble_size: 5\n")
    code, out, err = invoke(capsys, "bench", "--benchmarks", str(bench), "--out", "b", "--data-dir", str(workdir))
    assert code == 0, err
    frame = pd.read_csv(workdir / "b" / "bench.csv")
    assert list(frame["status"]) == ["ok", "skipped"]
    ok = frame.iloc[0]
    assert ok["n"] == 150 and ok["M"] == 5 and ok["time_s"] > 0 and ok["peak_mb"] > 10 and ok["goal"] == "tiny"
    assert 2 <= ok["n_timed"] <= 7  # a millisecond fit is repeated and the median reported
    assert 0 < ok["cpu_s"] < 10 * ok["time_s"] + 0.05  # CPU time of the same calls (a few BLAS threads at most)
    assert "| eac-al | {} | iris | 150 | 5 |" in (workdir / "b" / "bench.md").read_text()
    code, out, _ = invoke(capsys, "bench", "--benchmarks", str(bench), "--out", "b2", "--quick", "--only", "eac-al")
    assert code == 0 and len(pd.read_csv(workdir / "b2" / "bench.csv")) == 1
    assert_user_error(invoke(capsys, "bench", "--benchmarks", str(bench), "--only", "lwea"), "unknown benchmarked")
    (bench / "b.yaml").write_text("- method: eac-al\n  dataset: iris\n  parms: {}\n")
    assert_user_error(invoke(capsys, "bench", "--benchmarks", str(bench)), "b.yaml:3: [0].parms: unknown key")


@pytest.mark.parametrize("command", ["run", "report", "compare", "sweep", "consensus", "bench", "methods"])
def test_help_has_examples(capsys, command):
    code, out, _ = invoke(capsys, command, "--help")
    assert code == 0 and "Examples:" in out and f"ensclust {command}" in out


def test_run_subset_and_dry_run(workdir, capsys):
    code, out, _ = invoke(capsys, "run", "cfg.yaml", "--dry-run")
    assert code == 0 and "7 cells planned" in out and "7 to run" in out
    assert not (workdir / "results" / "clidemo").exists()  # a dry run writes nothing
    code, _, err = invoke(capsys, "run", "cfg.yaml", "-q", "--method", "EAC")
    assert code == 0 and "3 cells, 0 failed" in err
    code, _, err = invoke(capsys, "run", "cfg.yaml", "-q", "--method", "KM-avg")
    assert code == 0 and "4 cells, 0 failed" in err  # earlier EAC cells are kept in cells.csv
    code, out, _ = invoke(capsys, "run", "cfg.yaml", "--dry-run")
    assert "3 to run" in out
    assert_user_error(invoke(capsys, "run", "cfg.yaml", "--method", "EAC-AL"), "unknown method label 'EAC-AL'")
    assert_user_error(invoke(capsys, "run", "cfg.yaml", "--dataset", "blobs"), "unknown dataset label 'blobs'")


def test_runner_shares_one_awec_solve_per_cell_pair_through_its_own_cache():
    """The runner owns the cache (one per data set, passed as memory=): AWEC-S reuses AWEC-H's solve, a method
    built outside the runner does not (no process-global memo), and the labels are those of a fresh fit."""
    import json

    from ensclust.experiment.runner import DatasetContext, labels_sha256, run_cell
    from ensclust.methods import get_method
    from ensclust.testing import planted_ensemble

    members, y = planted_ensemble(n=60, c=3, m=8, random_state=0)
    ctx = DatasetContext(label="planted", X=None, y=y, n_clusters=3, members=members, draws=[np.arange(8)],
                         metrics=["nmi"], nmi_average="arithmetic", std_ddof=1, memory="off")
    records = []
    for name in ("awec-h", "awec-s"):
        cell = {"dataset": "planted", "method": name, "method_name": name, "point": 0,
                "params": json.dumps({"gamma": 50}), "rep": 0, "seed": 7, "fingerprint": name}
        records.append(run_cell(ctx, cell))
    assert [r["status"] for r in records] == ["ok", "ok"], records
    assert (ctx.cache.hits, ctx.cache.misses) == (1, 1)
    fresh = get_method("awec-s", gamma=50)
    labels = fresh.fit_predict(members, 3, random_state=7)
    assert not fresh.diagnostics_["solve_cached"]
    assert records[1]["labels_sha256"] == labels_sha256(labels)
    # a context shipped to a worker leaves its cache behind (the worker starts an empty one)
    import pickle

    blob = pickle.dumps(ctx)
    assert b"SolveCache" not in blob
    assert len(pickle.loads(blob).cache) == 0 and len(ctx.cache) == 1

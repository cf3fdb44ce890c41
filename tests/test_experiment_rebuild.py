"""``ensclust report`` / ``compare`` after a run that died without writing cells.csv (e.g. ``kill -9``)."""

import os

import pytest

from ensclust.experiment.store import ResultStore
from ensclust.testing import invoke_cli as invoke

CONFIG = """name: killed
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
metrics: [ari, nmi]
compare_to: PAPER
"""


@pytest.fixture
def finished_run(tmp_path, monkeypatch, capsys):
    """A tiny finished run; returns (results folder, cells.csv bytes, timing.csv bytes, table bytes)."""
    monkeypatch.chdir(tmp_path)
    paper = tmp_path / "paper.csv"
    paper.write_text("table,metric,method,dataset,mean,std,bold,param\nT,ARI,EAC,Blobs,0.9,,,\n")
    (tmp_path / "cfg.yaml").write_text(CONFIG.replace("PAPER", str(paper)))
    code, _, err = invoke(capsys, "run", "cfg.yaml", "--quiet")
    assert code == 0, err
    root = tmp_path / "results" / "killed"
    assert len(list((root / "cells").glob("*.json"))) == 4  # 1 pool cell + 3 repetitions
    return root, (root / "cells.csv").read_bytes(), (root / "timing.csv").read_bytes(), \
        (root / "table_ari.csv").read_bytes()


def test_report_rebuilds_missing_cells_csv(finished_run, capsys):
    root, cells_csv, timing_csv, table = finished_run
    for name in ("cells.csv", "timing.csv", "table_ari.csv"):
        (root / name).unlink()  # what a SIGKILL before the end of the run leaves: only cells/*.json
    code, out, err = invoke(capsys, "report", str(root), "--quiet")
    assert code == 0, err
    assert (root / "cells.csv").read_bytes() == cells_csv  # exactly the file the run would have written
    assert (root / "timing.csv").read_bytes() == timing_csv
    assert (root / "table_ari.csv").read_bytes() == table


def test_report_rebuilds_cells_csv_older_than_a_cell(finished_run, capsys):
    root, cells_csv, _, _ = finished_run
    partial = b"".join(cells_csv.splitlines(keepends=True)[:2])  # header + the first cell only
    (root / "cells.csv").write_bytes(partial)
    newest = max(p.stat().st_mtime_ns for p in (root / "cells").glob("*.json"))
    os.utime(root / "cells.csv", ns=(newest - 10**9, newest - 10**9))
    assert ResultStore(root).aggregates_stale()
    code, out, err = invoke(capsys, "report", str(root))
    assert code == 0, err
    assert (root / "cells.csv").read_bytes() == cells_csv and "cells.csv" in out.splitlines()[-1]
    assert not ResultStore(root).aggregates_stale()


def test_newer_cells_csv_is_left_alone_and_stale_cells_are_ignored(finished_run, capsys):
    root, cells_csv, _, _ = finished_run
    store = ResultStore(root)
    # a cell file outside the plan (e.g. of a method since removed from the config) is not read
    stray = next((root / "cells").glob("*__r000.json"))
    (root / "cells" / ("Blobs__Old__0000000000__r000.json")).write_text(stray.read_text())
    (root / "cells.csv").unlink()
    code, _, err = invoke(capsys, "compare", str(root), "--quiet")  # compare rebuilds as well
    assert code == 0, err
    assert (root / "cells.csv").read_bytes() == cells_csv
    # cells.csv newer than every cell file: not touched, even when it lists fewer cells
    partial = b"".join(cells_csv.splitlines(keepends=True)[:2])
    (root / "cells.csv").write_bytes(partial)
    assert not store.aggregates_stale() and not store.ensure_aggregates(store.load_config())
    assert (root / "cells.csv").read_bytes() == partial


def test_no_cell_files_keeps_the_clear_error(tmp_path, capsys):
    from ensclust.experiment.config import load_config_text

    root = tmp_path / "empty"
    store = ResultStore(root)
    store.save_config(load_config_text(CONFIG.replace("PAPER", "p.csv"), "c.yaml"))
    assert not store.aggregates_stale()
    code, _, err = invoke(capsys, "report", str(root))
    assert code == 2 and "no cells.csv" in err


def test_overlapping_runs_keep_each_others_cells(tmp_path, monkeypatch, capsys):
    """Two runs of one experiment, one per method, overlapping in time: the one that ends last must still
    list the other's cells in cells.csv (it used to write only the cells it had planned to compute)."""
    from ensclust.experiment import runner

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.yaml").write_text(CONFIG.replace("compare_to: PAPER\n", ""))
    real_run_cell = runner.run_cell
    started = []

    def run_cell_with_a_second_run_inside(ctx, cell):
        if not started:  # while the EAC run computes its first cell, a KM-avg run starts and finishes
            started.append(True)
            code, _, err = invoke(capsys, "run", "cfg.yaml", "--quiet", "--method", "KM-avg")
            assert code == 0, err
        return real_run_cell(ctx, cell)

    monkeypatch.setattr(runner, "run_cell", run_cell_with_a_second_run_inside)
    code, _, err = invoke(capsys, "run", "cfg.yaml", "--quiet", "--method", "EAC")
    assert code == 0, err
    cells = ResultStore(tmp_path / "results" / "killed").load_cells()
    assert sorted(cells["method"].unique()) == ["EAC", "KM-avg"]
    assert len(cells) == 4  # KM-avg is one pool-level cell, EAC has 3 repetitions

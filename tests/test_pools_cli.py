"""CLI: ``ensclust data list|info`` and ``ensclust pool build|show|import``."""

from __future__ import annotations

import numpy as np
import scipy.io
from click.testing import CliRunner

from ensclust.cli import cli


def _run(args, **kw):
    result = CliRunner().invoke(cli, args, catch_exceptions=False, **kw)
    assert result.exit_code == 0, result.output
    return result.output


def test_data_list_statuses(tmp_path):
    # an empty data folder: every file is missing, pool-only entries say so
    out = _run(["data", "list", "--data-dir", str(tmp_path)])
    assert "ecoli" in out and "missing" in out and "pool-only" in out
    assert "44 missing" in out and "18 missing" not in out and "pools missing" in out


def test_data_list_mismatch(tmp_path, monkeypatch):
    monkeypatch.setenv("ENSCLUST_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    data.mkdir()
    scipy.io.savemat(data / "ecoli.mat", {"X": np.zeros((4, 2)), "Y": np.array([1, 2, 1, 2])})
    out = _run(["data", "list", "--data-dir", str(data), "--paper", "eccms", "--no-pools"])
    line = next(ln for ln in out.splitlines() if ln.startswith("ecoli"))
    assert "MISMATCH" in line
    assert "appendicitis" not in out and "usps" in out  # --paper filter


def test_data_list_shared(data_dir):
    out = _run(["data", "list", "--data-dir", str(data_dir)])
    assert "44 present" in out and "18 pools present" in out and "MISMATCH" not in out


def test_data_info_builtin_and_file(tmp_path):
    out = _run(["data", "info", "iris"])
    assert "n=150  d=4  c=3" in out and "[50, 50, 50]" in out
    path = tmp_path / "f.mat"
    scipy.io.savemat(path, {"fea": np.eye(6), "gnd": np.array([5, 5, 9, 9, 9, 7])})
    out = _run(["data", "info", str(path), "--preprocess", "l2"])
    assert "X=fea  y=gnd" in out and "original values 5, 7, 9" in out and "preprocess:  l2" in out


def test_pool_build_then_hit_and_show(tmp_path):
    cache = str(tmp_path / "cache")
    args = ["pool", "build", "iris", "--k", "2:5", "--size", "6", "--seed", "1", "--cache-dir", cache, "--no-progress"]
    assert "cache miss" in _run(args)
    assert "cache hit" in _run(args)
    out = _run(["pool", "show", "iris", "--k", "2:5", "--size", "6", "--seed", "1", "--cache-dir", cache, "--members"])
    assert "m=6" in out and "mean pairwise NMI" in out and "member   5" in out and "seed" in out


def test_pool_import_and_show_file(tmp_path):
    rng = np.random.default_rng(0)
    members = rng.integers(1, 4, size=(5, 40))  # m x n, 1-based
    path = tmp_path / "bc.mat"
    scipy.io.savemat(path, {"BCs": members, "truth": np.repeat([1, 2], 20)})
    out_file = tmp_path / "out.h5"
    out = _run(["pool", "import", str(path), "--out", str(out_file)])
    assert "n=40  m=5" in out and "truth:    c=2" in out and out_file.exists()
    again = _run(["pool", "show", str(out_file), "--no-pairwise"])
    assert "n=40  m=5" in again and "c=2" in again

"""Failure paths of the CLI, table-driven: every bad input gives its exit code (2 user error, 3 some cells
failed, 130 interrupted), exactly one line on stderr and no traceback. In-process through ensclust.cli.main,
except where a fresh interpreter is the point (which modules a command imports)."""

from __future__ import annotations

import importlib
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from ensclust.testing import assert_user_error
from ensclust.testing import invoke_cli as invoke

TINY = """name: tiny
seed: 0
datasets:
  - name: blobs
    label: Blobs
    params: {n_samples: 40, centers: 2, random_state: 0}
pool: {generator: kmeans, k: c, size: 4}
ensemble: {mode: random, size: 3, repetitions: 3, seed: 1}
methods:
  - {name: eac-al, label: EAC, params: {dtype: float64}}
metrics: [ari]
"""
FAILING = """name: failing
datasets:
  - {name: iris, n_clusters: 500}
pool: {generator: kmeans, k: c, size: 3}
ensemble: {size: 3, repetitions: 1}
methods:
  - {name: eac-al}
  - {name: lwea}
metrics: [ari]
"""
POOL = "0,1,0\n0,1,0\n1,0,1\n1,0,1\n"


def one_line(result, code: int, prefix: str, *fragments) -> str:
    """Exit ``code`` and exactly one stderr line starting with ``prefix`` that holds every fragment."""
    got, _, err = result
    assert got == code, result
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished tiny experiment (run once through the API); cases copy it before damaging it."""
    from ensclust.experiment.config import load_config_text
    from ensclust.experiment.runner import run_experiment

    root = tmp_path_factory.mktemp("finished")
    run_experiment(load_config_text(TINY, "tiny.yaml"), results_root=root, quiet=True,
                   cache_dir=str(root / "cache"))
    return root / "tiny"


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(TINY)
    (tmp_path / "pool.csv").write_text(POOL)
    (tmp_path / "afile").write_text("x\n")
    return tmp_path


def _results_copy(finished_run, tmp_path, damage=None, keep_cells=True) -> str:
    dest = tmp_path / "res"
    shutil.copytree(finished_run, dest)
    if not keep_cells:
        shutil.rmtree(dest / "cells")
    if damage:
        name, cut = damage
        path = dest / name
        path.write_bytes(cut(path.read_bytes()))
    return str(dest)


def _cut_mid_quote(data: bytes) -> bytes:
    """cells.csv cut inside the first quoted field (the params JSON is quoted)."""
    return data[: data.index(b'"', data.index(b"\n")) + 3]


# -- user errors (exit 2): (id, files to write, argv, fragments of the one line) -------------------------------
FILES = {
    "bad.yaml": "name: t\ndatasets: [iris\n",
    "badkey.yaml": "name: t\ndatasets:\n  - name: iris\nmethods:\n  - name: eac-al\nmetrix: [ari]\n",
    "baddata.yaml": "name: t\ndatasets:\n  - name: irsi\nmethods:\n  - name: eac-al\n",
    "badsize.yaml": "name: t\ndatasets:\n  - name: iris\nmethods:\n  - name: eac-al\nensemble: {size: 0}\n",
    "nan.csv": "a,b,label\n1,2,0\nnan,3,1\n4,5,1\n",
    "ragged_short.csv": "1,2,0\n3,4,1\n5,1\n6,7,0\n",
    "ragged_long.csv": "1,2,0\n3,4,1,9\n5,6,1\n",
    "truth.csv": "a,b,Truth\n" + POOL,
    "missing.csv": "0,1\n-1,1\n1,0\n1,-1\n",
}
USER_ERRORS = [
    ("run-results-unwritable", ["run", "tiny.yaml", "-q", "--results", "/proc/forbidden"],
     ["/proc/forbidden/tiny: cannot create the folder"]),
    ("run-results-is-a-file", ["run", "tiny.yaml", "-q", "--results", "afile"], ["afile/tiny: cannot create"]),
    ("sweep-results-unwritable", ["sweep", "-m", "eac-al", "-p", "dtype=[float64]", "-r", "1", "--ensemble-size",
                                  "2", "-q", "--results", "/proc/forbidden"], ["/proc/forbidden/sweep_eac-al_dtype"]),
    ("consensus-out-unwritable", ["consensus", "--pool", "pool.csv", "-k", "2", "-m", "eac-al", "--out",
                                  "/proc/x/o.txt"], ["/proc/x: cannot create the folder"]),
    ("consensus-out-under-a-file", ["consensus", "--pool", "pool.csv", "-k", "2", "-m", "eac-al", "--out",
                                    "afile/o.txt"], ["afile: cannot create the folder (a file of that name exists)"]),
    ("pool-import-out-unwritable", ["pool", "import", "pool.csv", "--out", "/proc/x/p.h5"],
     ["/proc/x: cannot create the folder"]),
    ("figure-out-unwritable", ["figure", "rcec-synthetic", "--out", "/proc/x", "--quiet"],
     ["/proc/x: cannot create the folder"]),
    ("consensus-truth-column", ["consensus", "--pool", "truth.csv", "-k", "2", "-m", "eac-al", "--out", "o.txt"],
     ["column 'Truth' looks like ground truth", "--y-key Truth", "--no-y"]),
    ("consensus-y-key-and-no-y", ["consensus", "--pool", "truth.csv", "-k", "2", "-m", "eac-al", "--y-key", "Truth",
                                  "--no-y", "--out", "o.txt"], ["exclude each other"]),
    ("consensus-missing-labels", ["consensus", "--pool", "missing.csv", "-k", "2", "-m", "eac-al", "--out", "o.txt"],
     ["missing.csv: member 0 (0-based column) has label -1 at 1 rows (and 1 other member(s))",
      "declare it (missing=-1, --missing -1)"]),
    ("pool-import-missing-labels", ["pool", "import", "missing.csv"], ["has label -1"]),
    ("consensus-missing-refused", ["consensus", "--pool", "missing.csv", "--missing", "-1", "-k", "2", "-m", "eac-sl",
                                   "--out", "o.txt"],
     ["method 'eac-sl' does not accept missing labels (2 of 8 entries are missing); methods that do: awec-h"]),
    ("data-list-no-such-dir", ["data", "list", "--data-dir", "/nonexistent"],
     ["data directory /nonexistent (--data-dir) does not exist"]),
    ("ragged-csv-short-row", ["data", "info", "ragged_short.csv"],
     ["ragged/inconsistent number of columns at line 3 (2 fields, the first row has 3)"]),
    ("ragged-csv-long-row", ["data", "info", "ragged_long.csv"], ["ragged/inconsistent number of columns at line 2"]),
    # bad inputs that were already handled: they must stay one line
    ("malformed-yaml", ["run", "bad.yaml"], ["bad.yaml:3:1: YAML syntax error"]),
    ("unknown-key", ["run", "badkey.yaml"], ["unknown key 'metrix' (did you mean 'metrics'?)"]),
    ("unknown-dataset", ["run", "baddata.yaml"], ["unknown dataset 'irsi' (did you mean 'iris'?)"]),
    ("out-of-range", ["run", "badsize.yaml"], ["ensemble.size: value 0 is out of range"]),
    ("nan-features", ["data", "info", "nan.csv"], ["the features contain 1 NaN/Inf values"]),
    ("fewer-points-than-clusters", ["consensus", "--pool", "pool.csv", "-k", "9", "-m", "eac-al", "--out", "o.txt"],
     ["n_clusters=9 must be between 1 and the number of points (4)"]),
    ("unknown-method", ["methods", "lweaa"], ["unknown method 'lweaa' (did you mean 'lwea'?)"]),
]


@pytest.mark.parametrize("argv, fragments", [c[1:] for c in USER_ERRORS], ids=[c[0] for c in USER_ERRORS])
def test_user_error_is_one_line_exit_2(work, capsys, argv, fragments):
    for name, text in FILES.items():
        (work / name).write_text(text)
    assert_user_error(invoke(capsys, *argv), *fragments)


REPORT_ERRORS = [
    ("cells-cut-mid-quote", ("cells.csv", _cut_mid_quote), True,
     ["cells.csv: corrupt or truncated cells.csv", "rebuild it from cells/"]),
    ("cells-cut-no-cells-dir", ("cells.csv", _cut_mid_quote), False,
     ["corrupt or truncated cells.csv", "rerun the experiment"]),
    ("cells-last-row-cut", ("cells.csv", lambda b: b[: b.rindex(b",ok,")]), False, ["row 4 is incomplete"]),
    ("experiment-json-cut", ("experiment.json", lambda b: b[: len(b) // 2]), True,
     ["experiment.json: corrupt or truncated experiment.json"]),
    ("timing-cut", ("timing.csv", lambda b: b[:10]), True, ["timing.csv: corrupt or truncated timing.csv"]),
    ("timing-binary", ("timing.csv", lambda b: b"\xff\xfe\x00garbage\n\x00\x01"), True, ["corrupt or truncated"]),
]


@pytest.mark.parametrize("damage, keep_cells, fragments", [c[1:] for c in REPORT_ERRORS],
                         ids=[c[0] for c in REPORT_ERRORS])
def test_report_on_damaged_results_is_one_line(finished_run, tmp_path, capsys, damage, keep_cells, fragments):
    res = _results_copy(finished_run, tmp_path, damage, keep_cells)
    assert_user_error(invoke(capsys, "report", res, "-q"), *fragments)


@pytest.mark.parametrize("name", ["cells.csv", "timing.csv"])
def test_resume_from_a_cut_committed_file_is_one_line_and_writes_nothing(finished_run, tmp_path, capsys,
                                                                         monkeypatch, name):
    # a results folder as committed (no cells/): the rerun resumes from cells.csv / timing.csv; a last row cut
    # short must not be resumed with missing values (it was a TypeError traceback)
    copy = _results_copy(finished_run, tmp_path, (name, lambda b: b[: b.rindex(b",", 0, len(b) - 2)]),
                         keep_cells=False)
    (tmp_path / "root").mkdir()
    res = shutil.move(copy, tmp_path / "root" / "tiny")     # the experiment's folder under a results root
    before = {p.name: p.read_bytes() for p in res.iterdir() if p.is_file()}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(TINY)
    assert_user_error(invoke(capsys, "run", "tiny.yaml", "-q", "--results", "root"),
                      f"{name}: corrupt or truncated {name} (line", "restore it")
    assert {p.name: p.read_bytes() for p in res.iterdir() if p.is_file()} == before
    assert not (res / "cells").exists()


def test_report_of_intact_copy_works(finished_run, tmp_path, capsys):
    res = _results_copy(finished_run, tmp_path)
    assert invoke(capsys, "report", res, "-q")[0] == 0


# -- failed cells (exit 3), interrupt (exit 130), warnings (exit 0, one line) ----------------------------------
def test_failed_cells_exit_3_with_first_failure_and_tables(work, capsys):
    (work / "failing.yaml").write_text(FAILING)
    line = one_line(invoke(capsys, "run", "failing.yaml", "-q"), 3, "ensclust: error: ",
                    "results/failing: 2 of 2 cells failed; first failure: iris/eac-al rep 0: UserError: "
                    "n_clusters=500 must be between 1 and the number of points (150)")
    assert "\n" not in line
    assert (work / "results" / "failing" / "tables.md").exists()  # the tables are still written
    code, out, err = invoke(capsys, "run", "failing.yaml")  # rerun (nothing to compute): same exit code
    assert code == 3 and "| eac-al | -- |" in out and "2 of 2 cells failed" in err


def test_ctrl_c_says_how_many_cells_are_stored(work, capsys, monkeypatch):
    from ensclust.experiment import runner

    real, calls = runner.run_cell, []

    def interrupted_third(ctx, cell):
        calls.append(cell)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(ctx, cell)

    monkeypatch.setattr(runner, "run_cell", interrupted_third)
    one_line(invoke(capsys, "run", "tiny.yaml", "-q"), 130, "ensclust: interrupted: ",
             "2 of 3 cells are stored; rerun the same command to resume")
    monkeypatch.setattr(runner, "run_cell", real)
    code, _, err = invoke(capsys, "run", "tiny.yaml", "-q")  # the rerun resumes
    assert code == 0 and "3 cells, 0 failed" in err


def test_corrupt_pool_cache_warning_is_one_line(work, capsys):
    argv = ("pool", "build", "iris", "--k", "c", "--size", "2", "--cache-dir", "pc", "--no-progress")
    assert invoke(capsys, *argv)[0] == 0
    (cached,) = (work / "pc").glob("*.h5")
    cached.write_bytes(b"not hdf5")
    result = invoke(capsys, *argv)
    one_line(result, 0, "ensclust: warning: pool cache ", "is corrupt or truncated", "rebuilding it")
    assert "cache rebuilt" in result[1]


def test_unwritable_pool_cache_is_a_warning(work, capsys):
    result = invoke(capsys, "pool", "build", "iris", "--k", "c", "--size", "2", "--cache-dir", "afile/pc",
                    "--no-progress")
    one_line(result, 0, "ensclust: warning: pool cache afile/pc/", "cannot be written")


def test_consensus_y_key_and_no_y(work, capsys):
    (work / "truth.csv").write_text("a,b,truth\n" + POOL)
    code, out, _ = invoke(capsys, "consensus", "--pool", "truth.csv", "-k", "2", "-m", "eac-al", "--y-key", "truth",
                          "--out", "o.txt")
    assert code == 0 and "2 members" in out and "ARI 1.0000" in out
    code, out, _ = invoke(capsys, "consensus", "--pool", "truth.csv", "-k", "2", "-m", "eac-al", "--no-y",
                          "--out", "o.txt")
    assert code == 0 and "3 members" in out and "ARI" not in out


# -- file modes ------------------------------------------------------------------------------------------------
@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_written_files_are_0644_under_umask_022(work, capsys, umask):
    assert invoke(capsys, "run", "tiny.yaml", "-q")[0] == 0
    root = work / "results" / "tiny"
    files = [root / "experiment.json", root / "cells.csv", root / "tables.md", *root.glob("cells/*.json"),
             *(work / "results" / "cache").rglob("*.h5")]
    assert len(files) > 5
    assert {str(p): _mode(p) for p in files} == {str(p): 0o644 for p in files}


def test_written_files_follow_the_umask(tmp_path, umask):
    from ensclust.experiment.store import atomic_write_text

    umask(0o027)
    atomic_write_text(tmp_path / "a.txt", "x")
    umask(0o002)
    atomic_write_text(tmp_path / "b.txt", "x")
    assert (_mode(tmp_path / "a.txt"), _mode(tmp_path / "b.txt")) == (0o640, 0o664)


# -- small fixes of the CLI surface ----------------------------------------------------------------------------
def test_bench_finds_the_benchmarks_outside_the_repository(work, capsys, monkeypatch):
    # the benchmarks/ of the repository are read (the unknown --only comes from them), not "no benchmark files"
    assert_user_error(invoke(capsys, "bench", "--only", "nosuch"), "unknown benchmarked method 'nosuch'")
    from ensclust.data import registry

    monkeypatch.setattr(registry, "REPO_ROOT", work / "elsewhere")
    assert_user_error(invoke(capsys, "bench"), "no benchmark files: looked in", "pass --benchmarks DIR")
    assert_user_error(invoke(capsys, "bench", "--benchmarks", "nowhere"), "nowhere: no such benchmarks folder")


def test_pool_build_cache_dir_holds_the_checksums(work, capsys, monkeypatch):
    monkeypatch.delenv("ENSCLUST_CACHE_DIR", raising=False)
    rng = np.random.default_rng(0)
    rows = [f"{a:.3f},{b:.3f},{i % 2}" for i, (a, b) in enumerate(rng.normal(size=(20, 2)))]
    (work / "d.csv").write_text("x1,x2,label\n" + "\n".join(rows) + "\n")
    assert invoke(capsys, "pool", "build", "d.csv", "--k", "c", "--size", "2", "--cache-dir", "pc",
                  "--no-progress")[0] == 0
    assert (work / "pc" / "sha256.json").exists() and not (work / "results").exists()


@pytest.mark.parametrize("argv", [["run"], ["sweep"], ["figure", "ensemble-size"]])
def test_data_dir_help_lists_the_whole_search_order(capsys, argv):
    code, out, _ = invoke(capsys, *argv, "--help")
    text = " ".join(out.split())
    assert code == 0 and "$ENSCLUST_DATA, then ./datasets when it holds data files, then ../shared/datasets" in text


def test_figure_help_shows_whole_summaries(capsys):
    code, out, _ = invoke(capsys, "figure", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "Metric vs ensemble size M (e.g. AWEC Fig. 5): run CONFIG once per M and plot every method." in text
    assert "RCEC Fig. 3: NMI as normal / anomalous / extremely anomalous partitions are added." in text


# -- lazy imports ----------------------------------------------------------------------------------------------
def _modules_after(*argv) -> set[str]:
    code = (f"import sys\nfrom ensclust.cli import main\ntry:\n    main({list(argv)!r})\nexcept SystemExit:\n"
            "    pass\nprint('MODULES', ' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.rsplit("MODULES ", 1)[1].split())


def test_help_imports_no_numerics_and_methods_name_one_method_module():
    from ensclust.cli.methods_cmd import METHOD_MODULES

    loaded = _modules_after("--help")
    assert not loaded & {"numpy", "scipy", "pandas", "sklearn", "ensclust.methods", "ensclust.data"}
    method_modules = {f"ensclust.methods.{m}" for m in METHOD_MODULES.values()}
    assert _modules_after("methods", "lwea") & method_modules == {"ensclust.methods.lwea"}


def test_command_and_method_indexes_match_the_code():
    import click

    from ensclust.cli import COMMAND_INDEX, cli, load_all_commands
    from ensclust.cli.methods_cmd import METHOD_MODULES
    from ensclust.methods import list_methods

    load_all_commands()
    assert set(cli.commands) == set(COMMAND_INDEX), "list every command in ensclust.cli.COMMAND_INDEX"
    for name, (module, summary) in COMMAND_INDEX.items():
        cmd = cli.commands[name]
        assert cmd in vars(importlib.import_module(f"ensclust.cli.{module}")).values(), name
        assert click.Command(name, help=summary).get_short_help_str(200) == cmd.get_short_help_str(200), name
    assert METHOD_MODULES == {n: c.__module__.rsplit(".", 1)[1] for n, c in list_methods().items()}

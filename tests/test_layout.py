"""Layering: ensclust/methods holds estimators and their kernels only; the paper-specific tables and figures
live in ensclust/papers and are run through ``ensclust paper``."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import ensclust
from ensclust.testing import assert_user_error
from ensclust.testing import invoke_cli as invoke

METHODS = Path(ensclust.__file__).resolve().parent / "methods"


def test_methods_import_nothing_from_the_experiment_layer():
    code = "import ensclust.methods, sys; print([m for m in sys.modules if m.startswith('ensclust.experiment')])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _command_lines(path: Path) -> list[str]:
    """What makes ``path`` a command line: an argparse/click import or an ``if __name__ == "__main__"`` block."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"imports {n}" for n in names if n.split(".")[0] in ("argparse", "click")]
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"):
            found.append("__main__ block")
    return found


def test_no_method_module_defines_a_command_line(tmp_path):
    offenders = {p.name: _command_lines(p) for p in sorted(METHODS.rglob("*.py"))}
    assert {k: v for k, v in offenders.items() if v} == {}
    # the check finds both kinds
    probe = tmp_path / "probe.py"
    probe.write_text("import argparse\n\nif __name__ == '__main__':\n    pass\n")
    assert _command_lines(probe) == ["imports argparse", "__main__ block"]


@pytest.mark.parametrize("old", ["ensclust.methods._eccms_paper", "ensclust.methods._acmk_figures",
                                 "ensclust.methods._awec_figures", "ensclust.stats_rank"])
def test_paper_scripts_left_the_method_package(old):
    with pytest.raises(ModuleNotFoundError):
        __import__(old)


@pytest.mark.parametrize("command", ["eccms-table9", "eccms-cpu", "eccms-floor", "eccms-table3", "acmk-fig4",
                                     "acmk-fig2", "awec-fig4", "friedman"])
def test_paper_commands_have_help(capsys, command):
    code, out, _ = invoke(capsys, "paper", command, "--help")
    assert code == 0 and "Examples:" in out and f"ensclust paper {command}" in out


def test_paper_commands_user_errors(tmp_path, capsys):
    (tmp_path / "run" / "cells").mkdir(parents=True)
    assert_user_error(invoke(capsys, "paper", "awec-fig4", str(tmp_path / "run"), "--out", str(tmp_path / "f.png")),
                      "no finished AWEC grid cells")
    assert_user_error(invoke(capsys, "paper", "acmk-fig4", str(tmp_path / "run")), "no finished '... Fig4' cells")
    assert_user_error(invoke(capsys, "paper", "eccms-table3", str(tmp_path / "run")), "no cells.csv")
    assert_user_error(invoke(capsys, "paper", "eccms-table9", str(tmp_path / "run"), "--out", str(tmp_path),
                             "--paper", str(tmp_path / "none.csv")), "paper table not found")


def test_paper_commands_unwritable_output_is_one_line(tmp_path, capsys):
    """An --out the system refuses (here: a folder under a file) is a user error, not a traceback: the paper
    commands write through the store's atomic writers."""
    from ensclust.papers.eccms_tables import FIXED_LABEL

    assert_user_error(invoke(capsys, "paper", "eccms-table9", str(tmp_path), "--out", str(tmp_path / "o")),
                      "no finished")
    import pandas as pd

    from ensclust.experiment.store import CELL_COLUMNS, TIMING_COLUMNS

    keys = {"dataset": "Ecoli", "method": FIXED_LABEL, "point": 0, "rep": 0}
    pd.DataFrame([{**dict.fromkeys(CELL_COLUMNS, ""), **keys, "status": "ok", "n": 336, "n_iter": 50}]
                 ).to_csv(tmp_path / "cells.csv", index=False)
    pd.DataFrame([{**dict.fromkeys(TIMING_COLUMNS, ""), **keys, "time_s": 0.2}]
                 ).to_csv(tmp_path / "timing.csv", index=False)
    (tmp_path / "file").write_text("x")
    paper = tmp_path / "t9.csv"
    paper.write_text("method,dataset,mean\nProposed,Ecoli,0.0862\n")
    assert_user_error(invoke(capsys, "paper", "eccms-table9", str(tmp_path), "--out", str(tmp_path / "file" / "out"),
                             "--paper", str(paper)), "cannot create the folder")

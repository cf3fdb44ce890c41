import json

from click.testing import CliRunner

from ensclust.cli import cli
from ensclust.experiment.summary import render


def test_summary_lists_experiments_and_comparison_lines(tmp_path):
    exp = tmp_path / "demo"
    exp.mkdir()
    (exp / "experiment.json").write_text(json.dumps({"description": "A demo", "source": "configs/demo.yaml"}))
    (exp / "cells.csv").write_text("a,b\n1,2\n3,4\n")
    (exp / "comparison.md").write_text("# Comparison\n\n3 cells compared; mean |diff| 0.0100\n")
    (tmp_path / "cache").mkdir()
    text = render(tmp_path)
    assert "## demo" in text and "A demo" in text and "2 finished cells" in text
    assert "3 cells compared; mean |diff| 0.0100" in text and "cache" not in text.split("## demo")[1]
    result = CliRunner().invoke(cli, ["summary", str(tmp_path)])
    assert result.exit_code == 0 and (tmp_path / "README.md").exists()


def test_summary_skips_a_single_table_comparison_left_beside_per_table_ones(tmp_path):
    exp = tmp_path / "spce"
    exp.mkdir()
    (exp / "comparison.md").write_text("# Comparison: old single table\n\n9 cells compared; stale-summary\n")
    (exp / "comparison_table2_ari.md").write_text("# Comparison: table 2\n\n9 cells compared; new\n")
    text = render(tmp_path)
    assert "(spce/comparison_table2_ari.md): 9 cells compared; new" in text
    assert "spce/comparison.md" not in text and "stale-summary" not in text

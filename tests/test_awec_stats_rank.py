"""Friedman / Nemenyi average-rank test (ensclust/experiment/stats.py) against Demsar (JMLR 2006) numbers, and
the AWEC Fig. 3 / Fig. 4 commands (ensclust paper friedman, ensclust paper awec-fig4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensclust.experiment.stats import friedman_nemenyi, nemenyi_q, rank_rows
from ensclust.testing import invoke_cli


def test_nemenyi_q_matches_demsar_table():
    for k, q in [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (10, 3.164)]:
        assert nemenyi_q(k) == pytest.approx(q, abs=1e-3)


def test_ranks_ties_average():
    r = rank_rows(np.array([[0.9, 0.5, 0.5], [0.1, 0.2, 0.3]]))
    np.testing.assert_allclose(r, [[1, 2.5, 2.5], [3, 2, 1]])


def test_consistent_ranking_closed_form():
    # every data set ranks A > B > C: R = (1, 2, 3); chi2 = 12N/(k(k+1)) (sum R^2 - k(k+1)^2/4) = 2N
    scores = pd.DataFrame({"A": [0.9] * 5, "B": [0.5] * 5, "C": [0.1] * 5}, index=list("abcde"))
    res = friedman_nemenyi(scores)
    assert res.average_ranks == {"A": 1.0, "B": 2.0, "C": 3.0}
    assert res.chi2 == pytest.approx(10.0)
    assert res.critical_difference == pytest.approx(2.343 * np.sqrt(3 * 4 / 30), abs=1e-3)
    assert res.table()["significantly_worse_than_best"].tolist() == [False, False, True]


def test_demsar_example_statistics():
    # Demsar 2006 section 3.2.2: N=14, k=4, average ranks 3.143, 2.000, 2.893, 1.964 -> chi2_F = 9.28,
    # F_F = 3.69, CD = 1.25. Build a score table with exactly those rank sums.
    ranks = np.array([[4, 3, 2, 1], [3, 2, 4, 1], [2, 3.5, 1, 3.5], [2, 3.5, 3.5, 1], [4, 1, 3, 2], [3.5, 1, 2, 3.5],
                      [4, 2, 3, 1], [2, 3.5, 3.5, 1], [3.5, 1, 2, 3.5], [4, 1, 3, 2], [4, 1, 3, 2], [4, 1, 3, 2],
                      [2, 1, 4, 3], [2, 3.5, 3.5, 1]])
    np.testing.assert_allclose(ranks.sum(axis=0), [44, 28, 40.5, 27.5])  # = 14 x (3.143, 2.000, 2.893, 1.964)
    res = friedman_nemenyi(pd.DataFrame(-ranks, columns=list("ABCD")))
    assert res.chi2 == pytest.approx(9.28, abs=0.01)
    assert res.iman_davenport_f == pytest.approx(3.69, abs=0.01)
    assert res.critical_difference == pytest.approx(1.25, abs=0.01)


def test_missing_scores_drop_dataset():
    scores = pd.DataFrame({"A": [0.9, 0.8, 0.7], "B": [0.5, np.nan, 0.4]}, index=["d1", "d2", "d3"])
    res = friedman_nemenyi(scores)
    assert res.dropped == ["d2"] and res.n_datasets == 2
    res2 = friedman_nemenyi(scores.assign(C=[0.1, 0.2, 0.3]), missing="drop-methods")
    assert res2.methods == ["A", "C"]
    with pytest.raises(ValueError):
        friedman_nemenyi(scores, missing="error")


def test_cli_writes_table_and_png(tmp_path, capsys):
    rows = []
    for d in range(6):
        for m, base in [("X", 0.8), ("Y", 0.6), ("Z", 0.4)]:
            rows.append({"table": "T", "metric": "ARI", "method": m, "dataset": f"D{d}", "mean": base + 0.01 * d,
                         "std": "", "bold": 0, "param": ""})
    path = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    code, out, err = invoke_cli(capsys, "paper", "friedman", str(path), "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert out.startswith("Friedman over N=6 data sets, k=3 methods") and "friedman_ari.png" in out
    out = pd.read_csv(tmp_path / "out" / "friedman_ari.csv")
    assert out["method"].tolist() == ["X", "Y", "Z"]
    assert (tmp_path / "out" / "friedman_ari.png").stat().st_size > 1000


def test_awec_fig4_heatmap_from_cells(tmp_path, capsys):
    import json

    from ensclust.papers.awec_figures import grid_means

    cells = tmp_path / "run" / "cells"
    cells.mkdir(parents=True)
    k = 0
    for lam in (0.1, 0.2):
        for gamma in (1, 5):
            for rep in range(2):
                rec = {"status": "ok", "method": "AWEC-H", "dataset": "D", "rep": rep,
                       "params": json.dumps({"lambda": lam, "gamma": gamma}),
                       "metrics": {"nmi": lam + gamma + rep}}
                (cells / f"c{k}.json").write_text(json.dumps(rec))
                k += 1
    means = grid_means(tmp_path / "run")
    assert len(means) == 4 and set(means["n_reps"]) == {2}
    assert means.set_index(["lambda", "gamma"]).loc[(0.2, 5.0), "mean"] == pytest.approx(5.7)
    code, out, err = invoke_cli(capsys, "paper", "awec-fig4", str(tmp_path / "run"), "--out", str(tmp_path / "fig.png"))
    assert code == 0, err
    assert "(4 grid cells)" in out
    assert (tmp_path / "fig.png").stat().st_size > 1000

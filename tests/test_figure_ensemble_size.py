"""``ensclust figure ensemble-size``: one run of a config per ensemble size, rows = the runner's table rows."""

import pandas as pd
import pytest

from ensclust.testing import assert_user_error
from ensclust.testing import invoke_cli as invoke

CONFIG = """name: tinysize
seed: 0
datasets:
  - name: blobs
    label: Blobs
    params: {n_samples: 60, centers: 3, random_state: 0}
  - {name: iris, label: Iris}
pool: {generator: kmeans, k: [2, 6], size: 12}
ensemble: {mode: randperm_per_run, size: SIZE, repetitions: 2, seed: 1}
methods:
  - {name: km-avg, label: KM, scope: ensemble}
  - {name: eac-al, label: EAC}
  - {name: lwea, label: LWEA}
metrics: [ari, nmi]
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.yaml").write_text(CONFIG.replace("SIZE", "3"))
    return tmp_path


def test_figure_rows_equal_run_and_rerun_resumes(workdir, capsys, monkeypatch):
    code, out, err = invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--sizes", "4,8", "--quiet")
    assert code == 0, err
    root = workdir / "results" / "tinysize"
    for name in ("ensemble_size.csv", "ensemble_size.md", "ensemble_size_ari.png", "ensemble_size_nmi.png"):
        assert (root / name).stat().st_size > 0, name
    assert (root / "m4" / "cells.csv").exists() and (root / "m8" / "cells.csv").exists()
    frame = pd.read_csv(root / "ensemble_size.csv")
    # 2 datasets x 3 methods x 2 sizes x 2 metrics, 2 repetitions each
    assert len(frame) == 24 and set(frame["M"]) == {4, 8} and (frame["n"] == 2).all()
    assert (frame.loc[frame["method"] == "KM", "pseudo"]).all()

    # the same config at each size through `ensclust run` gives the same table rows
    for size in (4, 8):
        (workdir / f"run{size}.yaml").write_text(CONFIG.replace("SIZE", str(size)))
        code, _, err = invoke(capsys, "run", f"run{size}.yaml", "--results", "plain", "--quiet")
        assert code == 0, err
        for metric in ("ari", "nmi"):
            table = pd.read_csv(workdir / "plain" / "tinysize" / f"table_{metric}.csv")
            ours = frame[(frame["M"] == size) & (frame["metric"] == metric)]
            merged = ours.merge(table, on=["dataset", "method"], suffixes=("", "_run"), validate="one_to_one")
            assert len(merged) == len(ours) == 6
            assert (merged["mean"] == merged["mean_run"]).all()
            assert ((merged["std"] == merged["std_run"]) | (merged["std"].isna() & merged["std_run"].isna())).all()
    # each size has its own ensembles (the KM rows average different members)
    km = frame[(frame["method"] == "KM") & (frame["metric"] == "ari")].set_index(["dataset", "M"])["mean"]
    assert km[("Iris", 4)] != km[("Iris", 8)]

    # rerun: every cell is read from the store, none is fitted again; same CSV bytes
    import ensclust.experiment.runner as runner

    calls = []
    original = runner.run_cell
    monkeypatch.setattr(runner, "run_cell", lambda ctx, cell: calls.append(cell) or original(ctx, cell))
    before = (root / "ensemble_size.csv").read_bytes()
    code, out, err = invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--sizes", "4,8")
    assert code == 0, err
    assert calls == []
    assert (root / "ensemble_size.csv").read_bytes() == before
    assert "EAC" in out and "wrote results/tinysize/ensemble_size.csv" in out
    # a new size runs only its own cells (3 methods x 2 datasets x 2 repetitions)
    code, _, err = invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--sizes", "4,8,6", "--metrics", "nmi",
                          "--out", "fig", "--quiet")
    assert code == 0, err
    assert len(calls) == 12
    small = pd.read_csv(workdir / "fig" / "ensemble_size.csv")
    assert set(small["metric"]) == {"nmi"} and set(small["M"]) == {4, 6, 8}
    assert (workdir / "fig" / "ensemble_size_nmi.png").exists() and not (workdir / "fig" / "ensemble_size_ari.png").exists()


def test_figure_bad_input_is_one_line_error(workdir, capsys):
    assert_user_error(invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--sizes", "4,13"),
                      "ensemble size 13", "pool of dataset 'Blobs' has 12")
    assert not (workdir / "results" / "tinysize").exists()  # checked before anything runs
    assert_user_error(invoke(capsys, "figure", "ensemble-size", "missing.yaml"), "missing.yaml", "not found")
    assert_user_error(invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--sizes", "4,x"), "'x' is not an integer")
    assert_user_error(invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--sizes", "0"), "must be >= 1")
    assert_user_error(invoke(capsys, "figure", "ensemble-size", "cfg.yaml", "--metrics", "acc"),
                      "--metrics: acc not computed")
    # modes that need size x repetitions members say so
    (workdir / "fresh.yaml").write_text(CONFIG.replace("SIZE", "3").replace("randperm_per_run", "fresh"))
    assert_user_error(invoke(capsys, "figure", "ensemble-size", "fresh.yaml", "--sizes", "7"),
                      "ensemble size 7 x 2 repetitions needs 14 members")

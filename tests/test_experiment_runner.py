"""The cell runner: store layout, determinism, resume after an interrupt, failing cells, tuning policies."""

import json

import numpy as np
import pandas as pd
import pytest

from ensclust.errors import UserError
from ensclust.experiment.config import load_config_text
from ensclust.experiment.runner import plan_cells, run_experiment
from ensclust.experiment.store import ResultStore
from ensclust.experiment.tuning import summarize
from ensclust.methods import ConsensusMethod, Param, list_methods, register
from ensclust.methods.eac import EACAverage

_INTERRUPT = {"after": None, "count": 0}


class _Interrupting(EACAverage):
    """EAC-AL that raises KeyboardInterrupt after a number of fits (simulates Ctrl-C half-way)."""

    name = "test-interrupt"

    def _fit(self, members, n_clusters, X, rng):
        _INTERRUPT["count"] += 1
        if _INTERRUPT["after"] is not None and _INTERRUPT["count"] > _INTERRUPT["after"]:
            raise KeyboardInterrupt
        return super()._fit(members, n_clusters, X, rng)


class _Failing(ConsensusMethod):
    """Fails on odd repetitions' ensembles when `fail` is set (checks that failures are recorded)."""

    name = "test-failing"
    params = {"fail": Param(True, type="bool"), "shift": Param(0.0, low=0.0, high=1.0)}
    randomized = True

    def _fit(self, members, n_clusters, X, rng):
        if self.fail and rng.random() < 0.5:
            raise ValueError("planned failure")
        labels = members[:, 0] % n_clusters
        self.diagnostics_ = {"n_iter": 3, "converged": True}
        return labels


_FIT_ORDER: list = []


class _Recording(ConsensusMethod):
    """Records (tag, number of members' distinct first-column labels) of every fit, in the order of the fits."""

    name = "test-recording"
    params = {"tag": Param("a", type="str")}

    def _fit(self, members, n_clusters, X, rng):
        _FIT_ORDER.append((self.tag, members[:, 0].tobytes()))
        return members[:, 0] % n_clusters


@pytest.fixture(autouse=True, scope="module")
def _test_methods():
    """Register the two test-only methods for this module and remove them afterwards, so that tests
    iterating over all registered methods elsewhere never see them."""
    import ensclust.methods as registry

    for cls in (_Interrupting, _Failing, _Recording):
        if cls.name not in list_methods():
            register(cls)
    yield
    for cls in (_Interrupting, _Failing, _Recording):
        registry._REGISTRY.pop(cls.name, None)


CONFIG = """name: {name}
seed: 3
datasets:
  - name: blobs
    label: Blobs
    params: {{n_samples: 60, centers: 3, random_state: 0}}
  - name: iris
    label: Iris
pool: {{generator: kmeans, k: c, size: 8}}
ensemble: {{mode: random, size: 5, repetitions: 3, seed: 1}}
methods:
  - name: km-avg
    label: KM-avg
  - name: km-best
    label: KM-best
    scope: ensemble
  - name: {method}
    label: EAC
metrics: [ari, nmi]
outputs: [csv, markdown, latex]
"""


def make_config(name="t", method="eac-al"):
    return load_config_text(CONFIG.format(name=name, method=method), f"{name}.yaml")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("pools"))


def run(cfg, root, cache, **kw):
    return run_experiment(cfg, results_root=root, cache_dir=cache, quiet=True, **kw)


def test_plan_and_store_layout(tmp_path, cache):
    cfg = make_config()
    cells = plan_cells(cfg)
    # KM-avg over the pool: 1 cell per dataset; KM-best per ensemble and EAC: 3 repetitions each
    assert len(cells) == 2 * (1 + 3 + 3)
    assert len({c["seed"] for c in cells}) == len(cells)
    root = run(cfg, tmp_path, cache)
    for name in ("experiment.json", "cells.csv", "timing.csv", "table_ari.csv", "table_nmi.csv", "tables.md",
                 "tables.tex"):
        assert (root / name).exists(), name
    frame = pd.read_csv(root / "cells.csv")
    assert len(frame) == len(cells) and (frame["status"] == "ok").all()
    eac = frame[frame["method"] == "EAC"]
    assert eac["labels_sha256"].str.len().eq(64).all() and (eac["n_clusters_found"] == 3).all()
    assert (eac["m"] == 5).all()
    pool_row = frame[(frame["method"] == "KM-avg") & (frame["dataset"] == "Iris")].iloc[0]
    assert pool_row["rep"] == -1 and pool_row["m"] == 8 and pool_row["ari_std"] > 0
    timing = pd.read_csv(root / "timing.csv")
    assert (timing.loc[timing["method"] == "EAC", "peak_mem_mb"] >= 0).all()  # rss: the rise may be 0 kB
    assert len(list((root / "cells").glob("*.json"))) == len(cells)


def test_determinism_two_runs_identical(tmp_path, cache):
    a = run(make_config(), tmp_path / "a", cache)
    b = run(make_config(), tmp_path / "b", cache)
    assert (a / "cells.csv").read_bytes() == (b / "cells.csv").read_bytes()
    for name in ("table_ari.csv", "tables.md", "tables.tex"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_cell_records_match_direct_computation(tmp_path, cache):
    """The stored ARI of a cell is the metric of the method run on that repetition's ensemble."""
    from ensclust.experiment.runner import labels_sha256, prepare_dataset
    from ensclust.methods import get_method
    from ensclust.metrics import ari

    cfg = make_config()
    root = run(cfg, tmp_path, cache)
    frame = pd.read_csv(root / "cells.csv")
    ctx = prepare_dataset(cfg, "Iris", cache_dir=cache)
    cell = next(c for c in plan_cells(cfg) if c["dataset"] == "Iris" and c["method"] == "EAC" and c["rep"] == 2)
    labels = get_method("eac-al").fit_predict(ctx.members[:, ctx.draws[2]], 3, random_state=cell["seed"])
    row = frame[(frame["dataset"] == "Iris") & (frame["method"] == "EAC") & (frame["rep"] == 2)].iloc[0]
    assert row["labels_sha256"] == labels_sha256(labels)
    assert row["ari"] == pytest.approx(ari(ctx.y, labels), abs=0)


def test_resume_after_interrupt_gives_same_tables(tmp_path, cache):
    reference = run(make_config("r", "test-interrupt"), tmp_path / "ref", cache)
    _INTERRUPT.update(after=2, count=0)
    try:
        with pytest.raises(KeyboardInterrupt):
            run(make_config("r", "test-interrupt"), tmp_path / "int", cache)
    finally:
        _INTERRUPT.update(after=None, count=0)
    partial = pd.read_csv(tmp_path / "int" / "r" / "cells.csv")
    total = len(plan_cells(make_config("r", "test-interrupt")))
    assert 0 < len(partial) < total  # the store holds exactly the finished cells
    assert not list((tmp_path / "int" / "r" / "cells").glob("*.tmp"))
    resumed = run(make_config("r", "test-interrupt"), tmp_path / "int", cache)
    assert _INTERRUPT["count"] == 6 - 2  # only the unfinished EAC cells ran again (2 of 6 were done)
    for name in ("cells.csv", "table_ari.csv", "table_nmi.csv", "tables.md"):
        assert (resumed / name).read_bytes() == (reference / name).read_bytes(), name


def test_rerun_skips_and_force_recomputes(tmp_path, cache):
    cfg = make_config("s", "test-interrupt")
    run(cfg, tmp_path, cache)
    _INTERRUPT.update(count=0)
    run(cfg, tmp_path, cache)
    assert _INTERRUPT["count"] == 0
    run(cfg, tmp_path, cache, force=True)
    assert _INTERRUPT["count"] == 6


def test_config_change_invalidates_cells(tmp_path, cache):
    cfg = make_config("c", "test-interrupt")
    run(cfg, tmp_path, cache)
    cfg.metrics = ["ari"]  # changes the fingerprint of every cell
    _INTERRUPT.update(count=0)
    run(cfg, tmp_path, cache)
    assert _INTERRUPT["count"] == 6


def test_failing_cells_are_recorded_and_run_continues(tmp_path, cache):
    cfg = make_config("f", "test-failing")
    root = run(cfg, tmp_path, cache)
    frame = pd.read_csv(root / "cells.csv", keep_default_na=False, na_values=[""])
    eac = frame[frame["method"] == "EAC"]
    failed = eac[eac["status"] == "failed"]
    ok = eac[eac["status"] == "ok"]
    assert len(failed) > 0 and len(ok) > 0  # with these seeds both happen
    assert failed["error"].str.contains("ValueError: planned failure").all()
    assert ok["n_iter"].eq(3).all() and ok["converged"].astype(str).eq("True").all()
    table = pd.read_csv(root / "table_ari.csv")
    eac_rows = table[table["method"] == "EAC"]
    assert (eac_rows["n"] + eac_rows["n_failed"] == 3).all()
    # --retry-failed reruns exactly the failed cells (same seeds -> same failures)
    run(cfg, tmp_path, cache, retry_failed=True)
    again = pd.read_csv(root / "cells.csv", keep_default_na=False, na_values=[""])
    assert list(again["status"]) == list(frame["status"])


GRID = """name: g
seed: 0
datasets:
  - name: iris
    label: Iris
pool: {generator: kmeans, k: [2, 6], size: 10}
ensemble: {mode: random, size: 4, repetitions: 4, seed: 2}
methods:
  - name: test-failing
    label: best-mean
    params: {fail: false}
    grid: {shift: [0.0, 0.5]}
    tuning: oracle-best-mean
  - name: lwea
    label: LWEA-mean
    grid: {theta: [0.1, 0.4, 0.9]}
    tuning: oracle-best-mean
  - name: lwea
    label: LWEA-rep
    grid: {theta: [0.1, 0.4, 0.9]}
    tuning: oracle-per-repetition
  - name: lwea
    label: LWEA
    grid: {theta: [0.1, 0.4, 0.9]}
    tuning: each
  - name: lwea
    label: LWEA-avg
    grid: {theta: [0.1, 0.4, 0.9]}
    tuning: average
metrics: [ari, nmi]
tune_metric: per-metric
outputs: [csv]
"""


def test_tuning_policies(tmp_path, cache):
    cfg = load_config_text(GRID, "g.yaml")
    root = run(cfg, tmp_path, cache)
    cells = ResultStore(root).load_cells()
    rows = {(r.method, r.metric): r for r in summarize(cfg, cells)}
    lwea = cells[cells["method"] == "LWEA-mean"]
    for metric in ("ari", "nmi"):
        means = lwea.groupby("point")[metric].mean()
        best = int(means.idxmax())
        assert rows[("LWEA-mean", metric)].mean == pytest.approx(means.max())
        assert rows[("LWEA-mean", metric)].params == f"theta={[0.1, 0.4, 0.9][best]:g}"
        per_rep = cells[cells["method"] == "LWEA-rep"].groupby("rep")[metric].max()
        assert rows[("LWEA-rep", metric)].mean == pytest.approx(per_rep.mean())
        assert rows[("LWEA-rep", metric)].params.startswith("per repetition: theta=")
        for i, theta in enumerate((0.1, 0.4, 0.9)):
            row = rows[(f"LWEA [theta={theta:g}]", metric)]
            assert row.mean == pytest.approx(lwea[lwea["point"] == i][metric].mean())
        # average: per repetition the mean over the three points (no oracle), then the mean over repetitions
        avg = cells[cells["method"] == "LWEA-avg"].groupby("rep")[metric].mean()
        assert len(avg) == cfg.ensemble["repetitions"]
        row = rows[("LWEA-avg", metric)]
        assert row.values == pytest.approx(avg.to_dict())
        assert row.mean == pytest.approx(avg.mean())
        assert row.std == pytest.approx(avg.std(ddof=cfg.std_ddof))
        assert row.params == "average over 3 grid points (theta=0.1 .. theta=0.9)"
        assert len(row.used) == 3 * len(avg)
    assert rows[("LWEA-rep", "ari")].mean >= rows[("LWEA-mean", "ari")].mean - 1e-12
    table = pd.read_csv(root / "table_ari.csv")
    assert set(table["policy"]) >= {"oracle-best-mean on ARI", "oracle-per-repetition on ARI", "each"}
    caption = table["caption"].iloc[0]
    assert "LWEA-mean: oracle-best-mean on ARI (ground-truth oracle) [Iris: theta=" in caption
    assert "best-mean: oracle-best-mean on ARI (ground-truth oracle) [Iris: shift=0]" in caption  # tie -> first
    assert "LWEA-avg: average over 3 grid points (theta=0.1 .. theta=0.9), per repetition (no oracle)" in caption
    # a repetition where one point failed is left out of the average (it would average other points)
    dropped = cells[~((cells["method"] == "LWEA-avg") & (cells["point"] == 1) & (cells["rep"] == 0))]
    partial = {(r.method, r.metric): r for r in summarize(cfg, dropped)}[("LWEA-avg", "ari")]
    assert 0 not in partial.values and partial.n == rows[("LWEA-avg", "ari")].n - 1


def test_a_row_tuned_by_another_takes_its_point(tmp_path, cache):
    # the ablation-table reading: a row reports the grid point another row's oracle chose, not its own best
    text = GRID.split("methods:")[0] + """methods:
  - {name: lwea, label: LWEA, grid: {theta: [0.1, 0.4, 0.9]}}
  - {name: lwgp, label: LWGP, grid: {theta: [0.1, 0.4, 0.9]}, tuned_by: LWEA}
metrics: [ari, nmi]
tune_metric: ari
outputs: [csv]
"""
    cfg = load_config_text(text, "tb.yaml")
    cells = ResultStore(run(cfg, tmp_path, cache)).load_cells()
    rows = {(r.method, r.metric): r for r in summarize(cfg, cells)}
    chosen = int(cells[cells["method"] == "LWEA"].groupby("point")["ari"].mean().idxmax())
    lwgp = cells[cells["method"] == "LWGP"]
    for metric in ("ari", "nmi"):
        row = rows[("LWGP", metric)]
        assert row.params == f"theta={[0.1, 0.4, 0.9][chosen]:g}"
        assert row.policy == "oracle-best-mean of LWEA on ARI"
        assert row.mean == pytest.approx(lwgp[lwgp["point"] == chosen][metric].mean())
    # the config's own checks: the named row exists, tunes itself, and has the same grid
    for bad, message in (("tuned_by: LWEAA}", "unknown row label 'LWEAA'"),
                         ("tuned_by: LWGP}", "unknown row label 'LWGP'")):
        with pytest.raises(UserError, match=message):
            load_config_text(text.replace("tuned_by: LWEA}", bad), "tb.yaml")
    with pytest.raises(UserError, match="tuned_by needs the grid of 'LWEA'"):
        load_config_text(text.replace("grid: {theta: [0.1, 0.4, 0.9]}, tuned_by", "grid: {theta: [0.1, 0.9]}, tuned_by"),
                         "tb.yaml")
    with pytest.raises(UserError, match="tuned_by needs tuning oracle-best-mean"):
        load_config_text(text.replace("tuned_by: LWEA}", "tuned_by: LWEA, tuning: oracle-per-repetition}"),
                         "tb.yaml")
    assert "tuned_by" not in json.loads(json.dumps(make_config().to_dict()))["methods"][0]


def test_joblib_jobs_same_as_serial(tmp_path, cache):
    a = run(make_config(), tmp_path / "serial", cache)
    b = run(make_config(), tmp_path / "jobs", cache, jobs=2)
    assert (a / "cells.csv").read_bytes() == (b / "cells.csv").read_bytes()


def test_cell_json_is_complete(tmp_path, cache):
    root = run(make_config(), tmp_path, cache)
    record = json.loads(next((root / "cells").glob("Iris__EAC__*__r000.json")).read_text())
    for key in ("labels_sha256", "metrics", "time_s", "peak_mem_mb", "mem_method", "n_iter", "converged",
                "n_clusters_found", "error", "seed", "fingerprint"):
        assert key in record
    assert record["mem_method"] == "rss-peak-increase" and np.isfinite(record["time_s"])


@pytest.mark.parametrize("mode, method_name", [("rss", "rss-peak-increase"), ("tracemalloc", "tracemalloc-peak")])
def test_memory_probe_sees_a_large_allocation(mode, method_name):
    """In a fresh interpreter: the RSS probe is process-wide; in the full suite (load 6) it once read 0 for the
    40 MB block, never when run alone (200 of 200 readings right), so whatever earlier tests leave running in
    the process (dask, joblib threads) is kept out of the measure."""
    import subprocess
    import sys

    script = ("import numpy as np\n"
              "from ensclust.experiment.runner import _MemoryProbe\n"
              f"probe = _MemoryProbe({mode!r})\n"
              "probe.start()\n"
              "block = np.ones(40 * 2**20 // 8)  # 40 MB, touched\n"
              "del block\n"
              "peak, name = probe.stop()\n"
              "print(peak, name)\n"
              "assert _MemoryProbe('off').stop() == (None, None)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    peak, name = float(out[0]), out[1]
    assert name == method_name and 35 <= peak < 200


def test_memory_off_leaves_memory_empty_and_bad_mode_is_a_user_error(tmp_path, cache):
    from ensclust.errors import UserError

    root = run_experiment(make_config(), results_root=tmp_path, cache_dir=cache, quiet=True, memory="off")
    record = json.loads(next((root / "cells").glob("Iris__EAC__*__r000.json")).read_text())
    assert record["peak_mem_mb"] is None and record["mem_method"] is None
    with pytest.raises(UserError, match="memory mode 'ram'"):
        run_experiment(make_config(), results_root=tmp_path / "x", cache_dir=cache, quiet=True, memory="ram")


def test_missing_data_skips_dataset_but_runs_the_others(tmp_path, cache, capsys):
    from ensclust.errors import UserError

    text = CONFIG.format(name="m", method="eac-al").replace(
        "  - name: iris\n    label: Iris\n", "  - {label: Gone, pool: {source: file, file: pools/absent.mat}}\n")
    cfg = load_config_text(text, "m.yaml")
    root = run_experiment(cfg, results_root=tmp_path, cache_dir=cache, quiet=True, data_dir=str(tmp_path))
    assert "dataset 'Gone' skipped (7 cells)" in capsys.readouterr().err
    frame = pd.read_csv(root / "cells.csv")
    assert set(frame["dataset"]) == {"Blobs"}
    assert "| Gone |" in (root / "tables.md").read_text() and " -- |" in (root / "tables.md").read_text()
    only_missing = load_config_text(text.replace(
        "  - name: blobs\n    label: Blobs\n    params: {n_samples: 60, centers: 3, random_state: 0}\n", ""), "m.yaml")
    only_missing.name = "m2"
    with pytest.raises(UserError, match="no dataset could be prepared"):
        run_experiment(only_missing, results_root=tmp_path, cache_dir=cache, quiet=True, data_dir=str(tmp_path))


def test_method_level_repetitions_runs_the_first_r_and_says_so(tmp_path, cache):
    text = CONFIG.format(name="few", method="eac-al") + ""
    text = text.replace("    label: EAC\n", "    label: EAC\n  - {name: eac-sl, label: 'EAC-SL (2 runs)', repetitions: 2}\n")
    cfg = load_config_text(text, "few.yaml")
    cells = plan_cells(cfg)
    assert sorted(c["rep"] for c in cells if c["method"] == "EAC-SL (2 runs)" and c["dataset"] == "Iris") == [0, 1]
    root = run(cfg, tmp_path, cache)
    table = pd.read_csv(root / "table_ari.csv")
    assert "Rows run on fewer repetitions - EAC-SL (2 runs): first 2." in table["caption"].iloc[0]
    bad = text.replace("repetitions: 2}", "repetitions: 0}")
    from ensclust.errors import UserError

    with pytest.raises(UserError, match="repetitions.*must be >= 1"):
        load_config_text(bad, "bad.yaml")


def test_oracle_over_an_incomplete_grid_says_so(tmp_path, cache):
    """A partial run (some grid points without a finished cell) must not look like a full oracle choice."""
    cfg = load_config_text(GRID, "g.yaml")
    cells = ResultStore(run(cfg, tmp_path, cache)).load_cells()
    full = {(r.method, r.metric): r for r in summarize(cfg, cells)}
    assert "incomplete" not in full[("LWEA-mean", "ari")].params
    assert "incomplete" not in full[("LWEA-rep", "ari")].params
    partial = cells[~(cells["method"].isin(["LWEA-mean", "LWEA-rep"]) & (cells["point"] == 2))]
    rows = {(r.method, r.metric): r for r in summarize(cfg, partial)}
    for label in ("LWEA-mean", "LWEA-rep"):
        assert rows[(label, "ari")].params.endswith("; grid incomplete: chosen among 2 of 3 points")


def test_reordered_grid_reuses_cells_under_the_new_point_index(tmp_path, cache):
    """Cells are found again by their parameters; after the grid values are reordered in the config a rerun
    reuses them, and they must carry the NEW point index (a stale index put two grid values on one point and
    the oracle read the wrong one)."""
    cfg = load_config_text(GRID, "g.yaml")
    root = run(cfg, tmp_path, cache)
    before = ResultStore(root).load_cells()
    reordered = load_config_text(GRID.replace("theta: [0.1, 0.4, 0.9]}\n    tuning: oracle-best-mean",
                                              "theta: [0.9, 0.1, 0.4]}\n    tuning: oracle-best-mean"), "g.yaml")
    after = ResultStore(run(reordered, tmp_path, cache)).load_cells()
    mean_rows = after[after["method"] == "LWEA-mean"]
    assert mean_rows.groupby("point")["params"].nunique().eq(1).all()   # one grid value per point
    assert mean_rows.groupby("params")["point"].first().to_dict() == {
        '{"theta":0.9}': 0, '{"theta":0.1}': 1, '{"theta":0.4}': 2}
    old = before[before["method"] == "LWEA-mean"].set_index(["params", "rep"])["ari"]
    assert mean_rows.set_index(["params", "rep"])["ari"].sort_index().equals(old.sort_index())  # reused, same values


def _drop_cell_files(root):
    """What a clone of the repository holds: cells.csv, timing.csv, experiment.json, but no cells/."""
    import shutil

    shutil.rmtree(root / "cells")


def test_committed_cells_csv_is_reused_without_cell_files(tmp_path, cache):
    cfg = make_config("k", "test-interrupt")
    root = run(cfg, tmp_path, cache)
    committed = {name: (root / name).read_bytes() for name in ("cells.csv", "timing.csv", "tables.md")}
    _drop_cell_files(root)
    _INTERRUPT.update(count=0)
    run(make_config("k", "test-interrupt"), tmp_path, cache)
    assert _INTERRUPT["count"] == 0  # every cell came from the committed cells.csv
    for name, data in committed.items():
        assert (root / name).read_bytes() == data, name
    assert len(list((root / "cells").glob("*.json"))) == len(plan_cells(cfg))  # stored as cell files now


def test_each_fit_records_its_numerical_environment(tmp_path, cache):
    """timing.csv names each fitted cell's environment id; environment.json says what the id stands for (BLAS
    kernels and threads, versions, CPU), also after a clone restored the cells from the committed CSV files."""
    from ensclust.experiment.environment import current_environment

    root = run(make_config("env", "test-interrupt"), tmp_path, cache, blas_threads=1)
    timing = pd.read_csv(root / "timing.csv")
    fitted = timing["method"] == "EAC"
    env_id, description = current_environment(1)
    assert (timing.loc[fitted, "env"] == env_id).all() and timing.loc[~fitted, "env"].isna().all()
    environments = json.loads((root / "environment.json").read_text())
    assert environments == {env_id: description}
    assert description["blas_threads"] == 1 and description["blas"] and description["numpy"] == np.__version__
    assert current_environment(2)[0] != env_id  # the thread count is part of the environment
    _drop_cell_files(root)
    run(make_config("env", "test-interrupt"), tmp_path, cache, force=False)
    assert json.loads((root / "environment.json").read_text()) == {env_id: description}
    assert (pd.read_csv(root / "timing.csv")["env"] == timing["env"]).sum() == fitted.sum()
    (root / "environment.json").write_text("[1, 2")
    with pytest.raises(UserError, match="corrupt or truncated environment.json"):
        run(make_config("env", "test-interrupt"), tmp_path, cache)


def test_committed_cells_are_not_reused_when_the_plan_changed(tmp_path, cache):
    root = run(make_config("p", "test-interrupt"), tmp_path, cache)
    _drop_cell_files(root)
    changed = make_config("p", "test-interrupt")
    changed.ensemble = {**changed.ensemble, "seed": 2}  # other draws: no committed row is valid
    _INTERRUPT.update(count=0)
    run(changed, tmp_path, cache)
    assert _INTERRUPT["count"] == 6


def test_committed_cells_survive_an_added_method(tmp_path, cache):
    root = run(make_config("a", "test-interrupt"), tmp_path, cache)
    _drop_cell_files(root)
    extended = make_config("a", "test-interrupt")
    extended.methods.append(load_config_text(CONFIG.format(name="a", method="eac-sl"), "b.yaml").methods[-1])
    extended.methods[-1].label = "EAC-SL"
    _INTERRUPT.update(count=0)
    run(extended, tmp_path, cache)
    assert _INTERRUPT["count"] == 0  # the EAC rows were reused, only the new row ran
    frame = pd.read_csv(root / "cells.csv")
    assert set(frame["method"]) == {"KM-avg", "KM-best", "EAC", "EAC-SL"}


def test_cells_run_repetition_by_repetition_within_a_data_set(tmp_path, cache):
    """Within a data set the runner runs every row's repetition r before any row's r + 1 (so the rows sharing a
    solve, e.g. RSEC-H / RSEC-Z, meet in the bounded cache), data set after data set; the tables do not depend
    on the order."""
    text = CONFIG.format(name="order", method="test-recording").replace(
        "    label: EAC\n", "    label: A\n    params: {tag: a}\n  - name: test-recording\n    label: B\n"
                           "    params: {tag: b}\n")
    cfg = load_config_text(text, "order.yaml")
    _FIT_ORDER.clear()
    run(cfg, tmp_path, cache)
    tags = [tag for tag, _ in _FIT_ORDER]
    assert tags == ["a", "b"] * 6  # 2 data sets x 3 repetitions, each a then b
    # each a/b pair saw the same ensemble (the same repetition), consecutive pairs different ones
    assert all(_FIT_ORDER[i][1] == _FIT_ORDER[i + 1][1] for i in range(0, 12, 2))
    assert _FIT_ORDER[0][1] != _FIT_ORDER[2][1]


def test_changed_inputs_recompute_the_stored_cells(tmp_path, monkeypatch):
    # A cell's fingerprint holds the pool spec, not the members: a generator (or data file, or draw) that now
    # gives other inputs is caught by the inputs digest the folder records per data set.
    import ensclust.pools as pools

    cfg = make_config("i", "test-interrupt")
    root = run(cfg, tmp_path, str(tmp_path / "cache1"))
    recorded = json.loads((root / "inputs.json").read_text())
    assert sorted(recorded) == ["Blobs", "Iris"]
    generate = pools.generate_members

    def reversed_members(*args, **kwargs):  # same spec and seed, other members: a changed generator
        members, ks, seeds = generate(*args, **kwargs)
        return members[:, ::-1].copy(), ks[::-1].copy(), seeds[::-1].copy()

    monkeypatch.setattr(pools, "generate_members", reversed_members)
    grown = load_config_text(CONFIG.format(name="i", method="test-interrupt")
                             + "  # one new method: the data sets are prepared again\n", "i.yaml")
    grown.methods.append(make_config("i", "eac-sl").methods[2])
    grown.methods[-1].label = "EAC-SL"
    # interrupted while recomputing: the old digests stay, so the next run checks again
    _INTERRUPT.update(count=0, after=2)
    with pytest.raises(KeyboardInterrupt):
        run(grown, tmp_path, str(tmp_path / "cache2"))
    assert json.loads((root / "inputs.json").read_text()) == recorded
    _INTERRUPT.update(count=0, after=None)
    run(grown, tmp_path, str(tmp_path / "cache2"))
    assert _INTERRUPT["count"] == 6  # every stored EAC cell of both data sets computed again
    now = json.loads((root / "inputs.json").read_text())
    assert sorted(now) == ["Blobs", "Iris"] and all(now[k] != recorded[k] for k in now)
    _INTERRUPT.update(count=0)
    run(grown, tmp_path, str(tmp_path / "cache2"), force=False)
    assert _INTERRUPT["count"] == 0


def test_more_repetitions_run_only_the_new_ones(tmp_path, cache):
    cfg = make_config("r", "test-interrupt")
    root = run(cfg, tmp_path, cache)
    first = pd.read_csv(root / "cells.csv")
    more = load_config_text(CONFIG.format(name="r", method="test-interrupt").replace("repetitions: 3",
                                                                                      "repetitions: 5"), "r.yaml")
    _INTERRUPT.update(count=0, after=None)
    run(more, tmp_path, cache)
    assert _INTERRUPT["count"] == 2 * 2  # repetitions 3 and 4 of EAC on both data sets, nothing else
    grown = pd.read_csv(root / "cells.csv")
    key = ["dataset", "method", "rep"]
    kept = first.merge(grown, on=key, suffixes=("", "_now"))
    assert len(kept) == len(first) and (kept["labels_sha256"].fillna("") == kept["labels_sha256_now"].fillna("")).all()
    assert len(grown) == len(first) + 2 * 2 * 2  # KM-best and EAC, two more repetitions, two data sets
    recorded = json.loads((root / "inputs.json").read_text())
    assert all(len(entry["draws"]) == 5 for entry in recorded.values())
    # back to 3, then 5 again: the cells of repetitions 3-4 are still valid (their draw digests are kept)
    run(cfg, tmp_path, cache)
    _INTERRUPT.update(count=0)
    run(more, tmp_path, cache)
    assert _INTERRUPT["count"] == 0


def test_a_folder_with_one_digest_per_data_set_keeps_its_cells(tmp_path, cache):
    # folders recorded before per-draw digests hold one string per data set (all of the run's draws in one
    # digest): their cells stay valid for the repetitions it covers
    from ensclust.experiment.runner import _legacy_digests, prepare_dataset

    cfg = make_config("l", "test-interrupt")
    root = run(cfg, tmp_path, cache)
    legacy = {}
    for label in ("Blobs", "Iris"):
        ctx = prepare_dataset(cfg, label, cache_dir=cache)
        legacy[label] = _legacy_digests(ctx.X, ctx.y, ctx.members, ctx.draws, ctx.n_clusters)[-1]
    (root / "inputs.json").write_text(json.dumps(legacy))
    more = load_config_text(CONFIG.format(name="l", method="test-interrupt").replace("repetitions: 3",
                                                                                      "repetitions: 4"), "l.yaml")
    _INTERRUPT.update(count=0, after=None)
    run(more, tmp_path, cache)
    assert _INTERRUPT["count"] == 2  # repetition 3 on both data sets
    assert all(isinstance(v, dict) for v in json.loads((root / "inputs.json").read_text()).values())
    (root / "inputs.json").write_text(json.dumps({label: "0" * 64 for label in legacy}))  # another pool
    more.methods.append(make_config("l", "eac-sl").methods[2])  # a new row, so the data sets are prepared
    more.methods[-1].label = "EAC-SL"
    _INTERRUPT.update(count=0)
    run(more, tmp_path, cache)
    assert _INTERRUPT["count"] == 2 * 4  # every EAC cell again


def test_corrupt_inputs_record_is_one_line_user_error(tmp_path, cache):
    from ensclust.errors import UserError

    root = run(make_config("k"), tmp_path, cache)
    (root / "inputs.json").write_text("{not json")
    cfg = make_config("k")
    cfg.metrics = ["ari"]
    with pytest.raises(UserError, match="corrupt or truncated inputs.json") as info:
        run(cfg, tmp_path, cache)
    assert "\n" not in str(info.value)


def test_inputs_digests_see_every_input():
    from scipy import sparse

    from ensclust.experiment.runner import inputs_digests

    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    y = rng.integers(0, 3, 30)
    members = rng.integers(0, 3, (30, 6)).astype(np.int32)
    draws = [np.arange(3), np.arange(3, 6)]
    base = inputs_digests(X, y, members, draws, 3)
    assert inputs_digests(X.copy(), y.copy(), members.copy(), [d.copy() for d in draws], 3) == base
    changed_members = members.copy()
    changed_members[5, 2] = (changed_members[5, 2] + 1) % 3
    X2 = X.copy()
    X2[0, 0] = np.nextafter(X2[0, 0], 2.0)
    variants = [inputs_digests(X2, y, members, draws, 3), inputs_digests(X, y[::-1], members, draws, 3),
                inputs_digests(X, y, changed_members, draws, 3), inputs_digests(X, y, members, draws, 4),
                inputs_digests(None, y, members, draws, 3), inputs_digests(X.astype(np.float32), y, members, draws, 3)]
    assert len({base["base"], *(v["base"] for v in variants)}) == len(variants) + 1
    assert all(v["draws"] == base["draws"] for v in variants)
    # each draw its own digest: swapping two draws swaps their digests, more draws keep the first ones
    assert inputs_digests(X, y, members, draws[::-1], 3)["draws"] == base["draws"][::-1]
    more = inputs_digests(X, y, members, draws + [np.arange(2, 5)], 3)
    assert more["base"] == base["base"] and more["draws"][:2] == base["draws"] and len(set(more["draws"])) == 3
    S = sparse.random(30, 4, density=0.3, random_state=1, format="csr")
    assert inputs_digests(S, y, members, draws, 3) == inputs_digests(S.tocsc(), y, members, draws, 3)
    assert inputs_digests(S, y, members, draws, 3) != inputs_digests(S * 2, y, members, draws, 3)


def test_recorded_digests_vouch_per_repetition():
    from ensclust.experiment.runner import _legacy_digests, inputs_digests, merged_record, still_valid

    rng = np.random.default_rng(1)
    X, y = rng.random((20, 3)), rng.integers(0, 2, 20)
    members = rng.integers(0, 2, (20, 8)).astype(np.int32)
    draws = [rng.permutation(8)[:4] for _ in range(4)]
    now = inputs_digests(X, y, members, draws, 2)
    old = inputs_digests(X, y, members, draws[:2], 2)  # recorded by a run with 2 repetitions
    valid = still_valid(old, now)
    assert [valid(r) for r in (-1, 0, 1, 2, 3)] == [True, True, True, False, False]
    changed = inputs_digests(X, y, members, [draws[0], draws[2], draws[2], draws[3]], 2)
    valid = still_valid(now, changed)  # only repetition 1's draw changed
    assert [valid(r) for r in (-1, 0, 1, 2, 3)] == [True, True, False, True, True]
    other = inputs_digests(X[::-1], y, members, draws, 2)
    assert not any(still_valid(now, other)(r) for r in (-1, 0, 3))
    assert still_valid(None, now)(3)
    # a folder recorded before per-draw digests holds one digest over its R draws: valid for r < R
    legacy = _legacy_digests(X, y, members, draws, 2)
    assert len(set(legacy)) == 4
    valid = still_valid(legacy[2], now, legacy=lambda: legacy)
    assert [valid(r) for r in (-1, 0, 2, 3)] == [True, True, True, False]
    assert not any(still_valid("0" * 64, now, legacy=lambda: legacy)(r) for r in (-1, 0))
    # lowering the repetitions keeps the digests of the dropped ones (raising them again reuses their cells)
    assert merged_record(now, old) == now and merged_record(now, other) == other
    assert merged_record(legacy[3], old) == old


def test_an_interrupted_forced_run_resumes_without_force(tmp_path, cache):
    cfg = make_config("f", "test-interrupt")
    root = run(cfg, tmp_path, cache)
    _INTERRUPT.update(count=0, after=2)
    with pytest.raises(KeyboardInterrupt):
        run(cfg, tmp_path, cache, force=True)
    owed = json.loads((root / "forced.json").read_text())
    assert len(owed) >= 4  # the 4 EAC cells not yet recomputed (and the pool statistics after them)
    _INTERRUPT.update(count=0, after=None)
    run(cfg, tmp_path, cache)  # no --force: the owed cells are computed, the recomputed ones are not
    assert _INTERRUPT["count"] == 4
    assert not (root / "forced.json").exists()
    _INTERRUPT.update(count=0)
    run(cfg, tmp_path, cache)
    assert _INTERRUPT["count"] == 0
    (root / "forced.json").write_text("[1, 2")
    with pytest.raises(UserError, match="corrupt or truncated forced.json"):
        run(cfg, tmp_path, cache)


PAIR_CONFIG = """name: pairs
seed: 3
datasets:
  - name: blobs
    label: Blobs
    params: {n_samples: 400, centers: 4, random_state: 0}
pool: {generator: kmeans, k: [2, 20], size: 10}
ensemble: {mode: random, size: 10, repetitions: 2, seed: 1}
methods:
  - {name: rsec-h, label: RSEC-H}
  - {name: rsec-z, label: RSEC-Z}
  - {name: eac-al, label: EAC}
metrics: [ari]
outputs: [csv]
"""


def test_solve_batches_keep_a_shared_solve_in_one_task():
    from ensclust.experiment.executors import _solve_batches

    ctx, other = object(), object()

    def cell(method, rep=0, params="{}"):
        return {"method_name": method, "dataset": "D", "rep": rep, "params": params}

    tasks = [(0, ctx, cell("rsec-h")), (1, ctx, cell("rsec-z")),           # one solve
             (2, ctx, cell("rsec-h", rep=1)), (3, ctx, cell("eac-al", rep=1)),  # no partner
             (4, ctx, cell("awec-h", params="a")), (5, ctx, cell("awec-s", params="b")),  # other parameters
             (6, ctx, cell("rsec-h", rep=2)), (7, other, cell("rsec-z", rep=2))]  # other context
    batches = list(_solve_batches(tasks))
    assert [[index for index, _ in cells] for _, cells in batches] == [[0, 1], [2], [3], [4], [5], [6], [7]]
    assert [batch_ctx for batch_ctx, _ in batches] == [ctx] * 6 + [other]


def test_joblib_runs_a_shared_solve_once(tmp_path, cache):
    """With worker processes the cells of one solve group (RSEC-H / RSEC-Z) still share their solve: the second
    one costs its k-means only (it cost a whole solve when each cell went to a worker on its own); the cells are
    those of the serial run."""
    cfg = load_config_text(PAIR_CONFIG, "pairs.yaml")
    serial = run(cfg, tmp_path / "serial", cache)
    jobs = run(cfg, tmp_path / "jobs", cache, jobs=2)
    assert (serial / "cells.csv").read_bytes() == (jobs / "cells.csv").read_bytes()
    cpu = pd.read_csv(jobs / "timing.csv").groupby("method")["cpu_s"].sum()
    assert cpu["RSEC-Z"] < 0.25 * cpu["RSEC-H"]

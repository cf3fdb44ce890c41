"""The Dask executor gives the same cells as the local path (LocalCluster started by the test)."""

import pytest

from ensclust.experiment.config import load_config_text
from ensclust.experiment.runner import run_experiment

distributed = pytest.importorskip("distributed")

CONFIG = """name: daskcheck
seed: 5
datasets:
  - name: blobs
    label: Blobs
    params: {n_samples: 60, centers: 3, random_state: 1}
  - name: iris
    label: Iris
pool: {generator: kmeans, k: [2, 5], size: 8}
ensemble: {mode: random, size: 5, repetitions: 3, seed: 1}
methods:
  - {name: km-avg, label: KM-avg}
  - {name: eac-al, label: EAC-AL}
  - {name: lwea, label: LWEA, grid: {theta: [0.2, 0.6]}}
metrics: [ari, nmi]
outputs: [csv, markdown]
"""


def test_dask_local_cluster_same_results(tmp_path):
    cache = str(tmp_path / "pools")
    cfg = load_config_text(CONFIG, "d.yaml")
    local = run_experiment(cfg, results_root=tmp_path / "local", cache_dir=cache, quiet=True)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        remote = run_experiment(cfg, results_root=tmp_path / "dask", cache_dir=cache, quiet=True, executor="dask",
                                scheduler=cluster.scheduler_address)
    for name in ("cells.csv", "table_ari.csv", "table_nmi.csv", "tables.md"):
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name


def test_dask_unreachable_scheduler_is_a_user_error(tmp_path, monkeypatch):
    from ensclust.errors import UserError
    from ensclust.experiment import executors

    monkeypatch.setattr(executors, "DASK_CONNECT_TIMEOUT", "1s")

    cfg = load_config_text(CONFIG, "d.yaml")
    with pytest.raises(UserError, match="cannot connect to the Dask scheduler"):
        run_experiment(cfg, results_root=tmp_path, cache_dir=str(tmp_path / "pools"), quiet=True,
                       executor="dask", scheduler="tcp://127.0.0.1:1")

"""Executors: the factory, and the Dask executor giving the same cells as the local path - on an in-process
LocalCluster, and on a real cluster (``dask scheduler`` + two ``dask worker`` processes in their own
empty working directories), including a worker killed with SIGKILL in the middle of a run."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ensclust.errors import UserError
from ensclust.experiment import executors
from ensclust.experiment.config import load_config_text
from ensclust.experiment.executors import DaskExecutor, JoblibExecutor, SerialExecutor, make_executor
from ensclust.experiment.runner import plan_cells, run_experiment

try:
    import distributed
except ImportError:  # the optional 'dask' extra
    distributed = None

needs_dask = pytest.mark.skipif(distributed is None, reason="needs dask[distributed] (pip install 'ensclust[dask]')")

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

REPORT_FILES = ("cells.csv", "table_ari.csv", "table_nmi.csv", "tables.md")


# -- the factory (no Dask needed) -------------------------------------------------------------------------
def test_make_executor_picks_one_strategy_per_option_set():
    from ensclust.cli.run_cmd import EXECUTORS

    assert EXECUTORS == executors.EXECUTORS
    assert isinstance(make_executor("local", 1, None), SerialExecutor)
    assert isinstance(make_executor("local", 3, None), JoblibExecutor) and make_executor("local", 3).jobs == 3
    dask = make_executor("dask", 2, "tcp://h:8786")
    assert isinstance(dask, DaskExecutor) and (dask.scheduler, dask.jobs) == ("tcp://h:8786", 2)
    with pytest.raises(UserError, match="--scheduler needs --executor dask"):
        make_executor("local", 1, "tcp://h:8786")
    with pytest.raises(UserError, match="--jobs must be >= 1"):
        make_executor("dask", 0, None)
    with pytest.raises(UserError, match="executor 'ray'"):
        make_executor("ray", 1, None)


def test_serial_executor_yields_every_index_with_its_record(tmp_path):
    """(JoblibExecutor: test_experiment_runner.py::test_joblib_jobs_same_as_serial.)"""
    from ensclust.experiment.runner import prepare_dataset

    cfg = load_config_text(CONFIG, "d.yaml")
    ctx = prepare_dataset(cfg, "Iris", cache_dir=str(tmp_path))
    cells = [c for c in plan_cells(cfg) if c["dataset"] == "Iris"]
    out = dict(SerialExecutor().map_unordered((10 + i, ctx, c) for i, c in enumerate(cells)))
    assert sorted(out) == [10 + i for i in range(len(cells))]
    assert all(out[10 + i]["fingerprint"] == c["fingerprint"] for i, c in enumerate(cells))


# -- Dask, in-process cluster -----------------------------------------------------------------------------
def _local_and_dask(cfg, tmp_path, *, n_workers=1, processes=False):
    """The experiment folders of a serial run and of a run on a local Dask cluster, sharing one pool cache."""
    cache = str(tmp_path / "pools")
    local = run_experiment(cfg, results_root=tmp_path / "local", cache_dir=cache, quiet=True)
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=processes,
                                  dashboard_address=None) as cluster:
        remote = run_experiment(cfg, results_root=tmp_path / "dask", cache_dir=cache, quiet=True, executor="dask",
                                scheduler=cluster.scheduler_address)
    return local, remote


@needs_dask
def test_dask_local_cluster_same_results(tmp_path):
    local, remote = _local_and_dask(load_config_text(CONFIG, "d.yaml"), tmp_path)
    for name in REPORT_FILES:
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name


@needs_dask
def test_dask_unreachable_scheduler_is_a_user_error(tmp_path, monkeypatch):
    monkeypatch.setattr(executors, "DASK_CONNECT_TIMEOUT", "1s")

    cfg = load_config_text(CONFIG, "d.yaml")
    with pytest.raises(UserError, match="cannot connect to the Dask scheduler"):
        run_experiment(cfg, results_root=tmp_path, cache_dir=str(tmp_path / "pools"), quiet=True,
                       executor="dask", scheduler="tcp://127.0.0.1:1")


@needs_dask
def test_dask_lost_dataset_context_is_scattered_again(tmp_path, monkeypatch):
    """The scheduler cancels the cells of a dataset whose scattered context was lost (its only holder
    died): they are resubmitted with the context scattered again, and the results are unchanged."""
    cfg = load_config_text(CONFIG, "d.yaml")
    cache = str(tmp_path / "pools")
    local = run_experiment(cfg, results_root=tmp_path / "local", cache_dir=cache, quiet=True)
    collect, retries = executors._DaskRun._collect, []

    def collect_after_losing_the_context(self, future):
        if not retries:
            retries.append("lost")
            label = self.in_flight[future].label
            self.client.cancel([self.datasets[label].future])  # what a dying holder does to its dependents
        return collect(self, future)

    retry = executors._DaskRun._retry

    def counting_retry(self, sub, reason):
        retries.append(reason)
        return retry(self, sub, reason)

    monkeypatch.setattr(executors._DaskRun, "_collect", collect_after_losing_the_context)
    monkeypatch.setattr(executors._DaskRun, "_retry", counting_retry)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        remote = run_experiment(cfg, results_root=tmp_path / "dask", cache_dir=cache, quiet=True, executor="dask",
                                scheduler=cluster.scheduler_address)
    assert "its dataset context was lost with a worker" in retries[1:]
    for name in REPORT_FILES:
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name


@needs_dask
def test_dask_without_workers_ends_with_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(executors, "DASK_NO_WORKER_TIMEOUT", 1.0)
    cfg = load_config_text(CONFIG, "d.yaml")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        start = time.monotonic()
        with pytest.raises(UserError, match=r"no Dask worker connected to .* for 1 s; the 0 cell\(s\) finished by then are stored; rerun") as err:
            run_experiment(cfg, results_root=tmp_path, cache_dir=str(tmp_path / "pools"), quiet=True,
                           executor="dask", scheduler=cluster.scheduler_address)
    assert time.monotonic() - start < 20
    assert "\n" not in str(err.value)


@needs_dask
def test_dask_cell_that_cannot_be_computed_ends_with_one_line_error_and_keeps_the_rest(tmp_path, monkeypatch):
    """A task that errs on the cluster (e.g. ``KilledWorker`` once its workers died too often) is not
    stored as a result: the other cells finish and are stored, the run ends with a one-line error, and
    a rerun computes only the missing cell."""
    from ensclust.experiment import runner

    cfg = load_config_text(CONFIG, "d.yaml")
    cache = str(tmp_path / "pools")
    local = run_experiment(cfg, results_root=tmp_path / "local", cache_dir=cache, quiet=True)
    run_cell = runner.run_cell

    def dies_on_one_cell(ctx, cell):
        if (cell["dataset"], cell["method"], cell["rep"]) == ("Iris", "EAC-AL", 1):
            raise RuntimeError("worker lost")
        return run_cell(ctx, cell)

    n_cells = len(plan_cells(cfg))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        monkeypatch.setattr(runner, "run_cell", dies_on_one_cell)
        with pytest.raises(UserError) as err:
            run_experiment(cfg, results_root=tmp_path / "dask", cache_dir=cache, quiet=True, executor="dask",
                           scheduler=cluster.scheduler_address)
        message = str(err.value)
        assert "\n" not in message
        assert message.startswith("1 cell(s) could not be computed on ")
        assert f"(e.g. Iris/EAC-AL rep 1: RuntimeError: worker lost); the {n_cells - 1} cell(s) finished" in message
        partial = tmp_path / "dask" / "daskcheck"
        assert len(list((partial / "cells").glob("*.json"))) == n_cells - 1
        assert len((partial / "cells.csv").read_text().splitlines()) == 1 + n_cells - 1
        monkeypatch.setattr(runner, "run_cell", run_cell)
        remote = run_experiment(cfg, results_root=tmp_path / "dask", cache_dir=cache, quiet=True, executor="dask",
                                scheduler=cluster.scheduler_address)
    for name in REPORT_FILES:
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name


# -- Dask, a real cluster of separate processes -----------------------------------------------------------
BIN = Path(sys.executable).parent
DELAY_ENV = "ENSCLUST_TEST_CELL_DELAY"

# A method module the workers preload (and the test imports): EAC-AL that first sleeps DELAY_ENV seconds.
SLOW_METHOD = f'''
import os
import time

from ensclust.methods import list_methods, register
from ensclust.methods.eac import EACAverage


class SlowEAC(EACAverage):
    name = "test-slow-eac"

    def _fit(self, members, n_clusters, X, rng):
        time.sleep(float(os.environ.get("{DELAY_ENV}", "0")))
        return super()._fit(members, n_clusters, X, rng)


if SlowEAC.name not in list_methods():
    register(SlowEAC)
'''

CLUSTER_CONFIG = """name: cluster
seed: 11
datasets:
  - {name: iris, label: Iris}
  - {name: wine, label: Wine}
pool: {generator: kmeans, k: [2, 6], size: 10}
ensemble: {mode: random, size: 6, repetitions: 3, seed: 4}
methods:
  - {name: km-avg, label: KM-avg}
  - {name: km-best, label: KM-best, scope: ensemble}
  - {name: eac-al, label: EAC-AL}
  - {name: lwea, label: LWEA, grid: {theta: [0.2, 0.6]}}
metrics: [ari, nmi]
outputs: [csv, markdown]
"""


class Cluster:
    """``dask scheduler`` and ``dask worker`` processes, each in its own session (torn down by group)."""

    def __init__(self, base: Path, n_workers: int = 2, preload=("ensclust.experiment.runner", "ensclust.methods"),
                 env_extra=None, wait=True):
        self.base, self.procs, self.worker_dirs, self.workers = base, [], [], []
        base.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ENSCLUST_DATA=str(base / "no-data-here"), **(env_extra or {}))
        env.pop("PYTHONPATH", None)
        sched_file = base / "scheduler.json"
        self._start([BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", sched_file], base, env, "scheduler")
        # the scheduler creates its file before it has written it: wait for the whole JSON, not for the file
        deadline = time.monotonic() + 60
        self.address = None
        while self.address is None:
            try:
                self.address = json.loads(sched_file.read_text())["address"]
            except (FileNotFoundError, json.JSONDecodeError, KeyError):
                if time.monotonic() > deadline or self.procs[0].poll() is not None:
                    raise RuntimeError("dask scheduler did not start: "
                                       + (base / "scheduler.log").read_text()[-2000:]) from None
                time.sleep(0.1)
        for k in range(n_workers):
            cwd = base / f"worker{k}-cwd"
            cwd.mkdir()
            self.worker_dirs.append(cwd)
            cmd = [BIN / "dask", "worker", self.address, "--nworkers", "1", "--nthreads", "1", "--no-nanny",
                   "--no-dashboard", "--host", "127.0.0.1", "--local-directory", base / f"worker{k}-scratch"]
            for module in preload:  # imported while the worker starts rather than by its first cell
                cmd += ["--preload", module]
            self.workers.append(self._start(cmd, cwd, env, f"worker{k}"))
        if wait:
            self.wait_ready()

    def wait_ready(self):
        with distributed.Client(self.address, timeout="30s") as client:
            client.wait_for_workers(len(self.workers), timeout=60)
            pids = set(client.run(os.getpid).values())
        assert pids == {p.pid for p in self.workers}  # the processes started here are the workers

    def _start(self, cmd, cwd, env, name):
        log = open(self.base / f"{name}.log", "wb")  # noqa: SIM115 - closed in close()
        proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        proc.log = log
        self.procs.append(proc)
        return proc

    def executed(self) -> int:
        """Tasks the live workers executed."""
        with distributed.Client(self.address, timeout="30s") as client:
            return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())

    def close(self):
        """SIGTERM to every process group started here, SIGKILL to what is left after a short grace."""
        for proc in reversed(self.procs):
            self._signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + 3
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait(timeout=10)
            proc.log.close()

    @staticmethod
    def _signal(proc, sig):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass


@pytest.fixture
def dask_cluster(tmp_path):
    """A factory of real clusters; every process it started is stopped after the test."""
    started = []

    def start(**kw):
        cluster = None
        try:
            cluster = Cluster(tmp_path / f"cluster{len(started)}", **kw)
        finally:
            if cluster is not None:
                started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.close()
    assert all(p.poll() is not None for c in started for p in c.procs)


def ensclust_cli(*args, cwd):
    proc = subprocess.run([str(BIN / "ensclust"), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@needs_dask
def test_real_cluster_cli_run_same_cells_and_workers_need_no_files(tmp_path, dask_cluster):
    t0 = time.monotonic()
    cluster = dask_cluster(wait=False)  # the run starts while the workers start (it waits for them)
    t1 = time.monotonic()
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    (client_dir / "cluster.yaml").write_text(CLUSTER_CONFIG)
    cfg = load_config_text(CLUSTER_CONFIG, "cluster.yaml")
    n_cells = len(plan_cells(cfg))
    assert 20 <= n_cells <= 40
    # relative --results: the results folder and the pool cache (R1/cache/pools) exist only under client_dir
    ensclust_cli("run", "cluster.yaml", "--executor", "dask", "--scheduler", cluster.address, "--results", "R1",
                 "--quiet", cwd=client_dir)
    t2 = time.monotonic()
    cluster.wait_ready()
    assert cluster.executed() >= n_cells  # the cells ran on the workers (not in the client process)
    for cwd in cluster.worker_dirs:
        assert list(cwd.iterdir()) == []  # no results/, no pool cache, nothing else
    local = run_experiment(cfg, results_root=client_dir / "R2", cache_dir=str(client_dir / "R1/cache/pools"),
                           quiet=True)
    for name in REPORT_FILES:
        assert (client_dir / "R1/cluster" / name).read_bytes() == (local / name).read_bytes(), name
    print(f"cluster start {t1 - t0:.1f} s, dask run {t2 - t1:.1f} s, local run {time.monotonic() - t2:.1f} s")


@needs_dask
def test_real_cluster_survives_a_killed_worker(tmp_path, dask_cluster, monkeypatch):
    import importlib.util

    import ensclust.methods as registry

    preload = tmp_path / "ensclust_slow_method.py"
    preload.write_text(SLOW_METHOD)
    monkeypatch.delenv(DELAY_ENV, raising=False)  # no delay in this process (the local reference run)
    spec = importlib.util.spec_from_file_location("ensclust_slow_method", preload)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    try:
        _run_with_a_killed_worker(tmp_path, dask_cluster, preload)
    finally:
        registry._REGISTRY.pop("test-slow-eac", None)


def _run_with_a_killed_worker(tmp_path, dask_cluster, preload):
    text = CLUSTER_CONFIG.replace("name: cluster", "name: killed").replace(
        "  - {name: eac-al, label: EAC-AL}\n",
        "  - {name: test-slow-eac, label: SLOW-A}\n  - {name: test-slow-eac, label: SLOW-B}\n")
    cfg = load_config_text(text, "killed.yaml")
    planned = plan_cells(cfg)
    n_slow = sum(c["method_name"] == "test-slow-eac" for c in planned)
    cluster = dask_cluster(preload=("ensclust.experiment.runner", preload), env_extra={DELAY_ENV: "0.4"})
    victim = cluster.workers[0]
    cells_dir = tmp_path / "R1" / "killed" / "cells"
    killed_at = []

    def kill_after_a_few_cells():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            stored = len(list(cells_dir.glob("*.json"))) if cells_dir.exists() else 0
            if stored >= 6:
                victim.send_signal(signal.SIGKILL)
                killed_at.append(stored)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_after_a_few_cells, daemon=True)
    killer.start()
    start = time.monotonic()
    try:
        root = run_experiment(cfg, results_root=tmp_path / "R1", cache_dir=str(tmp_path / "pools1"), quiet=True,
                              executor="dask", scheduler=cluster.address)
        rerun = False
    except UserError as exc:  # allowed: a clear one-line error, every finished cell kept, a rerun completes
        assert "\n" not in str(exc) and "rerun" in str(exc)
        root = run_experiment(cfg, results_root=tmp_path / "R1", cache_dir=str(tmp_path / "pools1"), quiet=True,
                              executor="dask", scheduler=cluster.address)
        rerun = True
    elapsed = time.monotonic() - start
    killer.join(timeout=5)
    assert killed_at and killed_at[0] < len(planned), "the worker was not killed during the run"
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert elapsed > n_slow * 0.4 / 2  # the slow cells really slept on the workers
    local = run_experiment(cfg, results_root=tmp_path / "R2", cache_dir=str(tmp_path / "pools2"), quiet=True)
    for name in REPORT_FILES:
        assert (root / name).read_bytes() == (local / name).read_bytes(), name
    assert len(list(cells_dir.glob("*.json"))) == len(planned)
    for cwd in cluster.worker_dirs:
        assert list(cwd.iterdir()) == []
    print(f"worker killed after {killed_at[0]} of {len(planned)} cells; run {elapsed:.1f} s; rerun: {rerun}")


@needs_dask
def test_dask_runs_a_shared_solve_once(tmp_path):
    """On Dask too the cells of one solve group travel as one task: RSEC-Z reuses RSEC-H's solve (it cost a
    whole solve when each cell was a task of its own), and the cells are those of the serial run."""
    import pandas as pd
    from test_experiment_runner import PAIR_CONFIG

    local, remote = _local_and_dask(load_config_text(PAIR_CONFIG, "p.yaml"), tmp_path, n_workers=2, processes=True)
    assert (local / "cells.csv").read_bytes() == (remote / "cells.csv").read_bytes()
    cpu = pd.read_csv(remote / "timing.csv").groupby("method")["cpu_s"].sum()
    assert cpu["RSEC-Z"] < 0.25 * cpu["RSEC-H"]

"""How the cells of an experiment are executed: serially, with joblib/loky processes, or on a Dask cluster.

An executor takes tasks ``(index, ctx, cell)`` (``ctx`` the prepared :class:`DatasetContext` of the cell's
dataset) and yields ``(index, record)`` as cells finish, in any order; ``record`` is what
:func:`ensclust.experiment.runner.run_cell` returns. Tasks are consumed lazily, so a dataset is prepared
only when its first cell is about to be submitted. Storing the records is the caller's job: everything a
task needs (features, ground truth, pool members, draws) travels with it, so Dask workers need neither
the data files, nor the results folder, nor the pool cache.

:func:`make_executor` picks the executor from the ``--executor`` / ``--jobs`` / ``--scheduler`` options.

Dask and dying workers: a task whose worker dies is rescheduled by the scheduler on another worker (up to
its ``distributed.scheduler.allowed-failures``, then it errs with ``KilledWorker``). A dataset context is
scattered once to one worker and copied to the others as they need it; when the only worker holding it
dies before the copy, the scheduler forgets it and cancels the cells depending on it: the context is then
scattered again and those cells resubmitted (at most ``DASK_RESUBMITS`` times per cell). Cells that still
cannot be computed, no worker connected for ``DASK_NO_WORKER_TIMEOUT`` seconds, or a lost scheduler end
the run with a one-line :class:`~ensclust.errors.UserError` after the finished cells were handed over (and
stored), so a rerun computes only the rest.

The cells sharing a solve (:func:`_solve_batches`) travel as one task in both parallel executors, so a pair
(RSEC-H / RSEC-Z, AWEC-H / AWEC-S, ACMK-KM / ACMK-SC) pays its solve once, as in a serial run.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass

from ensclust.errors import UserError
from ensclust.methods import solve_group

EXECUTORS = ("local", "dask")
DASK_CONNECT_TIMEOUT = "10s"
DASK_NO_WORKER_TIMEOUT = 120.0  # seconds without any connected worker before the run gives up
DASK_RESUBMITS = 3  # resubmissions of one cell whose dataset context was lost with a worker
DASK_MIN_IN_FLIGHT = 64  # tasks submitted ahead (at least twice the cluster's threads)
_POLL_S = 0.05


class Executor:
    """Runs tasks ``(index, ctx, cell)`` and yields ``(index, record)`` as the cells finish."""

    name = "executor"

    def map_unordered(self, tasks: Iterable[tuple]) -> Iterator[tuple[int, dict]]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _run_indexed(index: int, ctx, cell: dict) -> tuple[int, dict]:
    from ensclust.experiment.runner import run_cell

    return index, run_cell(ctx, cell)


class SerialExecutor(Executor):
    """One cell after the other in this process."""

    name = "serial"

    def map_unordered(self, tasks):
        for index, ctx, cell in tasks:
            yield _run_indexed(index, ctx, cell)


def _share_solve(a: dict, b: dict) -> bool:
    """Whether two cells run one deterministic solve: the same data set, ensemble and parameters, and methods of
    one ``solve_group`` (RSEC-H / RSEC-Z, AWEC-H / AWEC-S, ACMK-KM / ACMK-SC)."""
    group = solve_group(a["method_name"])
    return (group is not None and group == solve_group(b["method_name"]) and a["dataset"] == b["dataset"]
            and a["rep"] == b["rep"] and a["params"] == b["params"])


def _solve_batches(tasks: Iterable[tuple]) -> Iterator[tuple[object, list[tuple[int, dict]]]]:
    """Consecutive tasks that share a solve (:func:`_share_solve`, same context), as one batch each: the pair
    ``(ctx, [(index, cell), ...])`` that :func:`_run_cells` takes.

    A worker process receives a task's context without its solve cache and starts an empty one; a batch
    travels as one task, so its cells share one context and one cache: the second cell reuses the first one's
    solve as it does in the serial executor (the runner orders the cells of one ensemble and grid point next to
    each other). Results do not depend on the batching; the time of a pair's solve is paid once.
    """
    batch_ctx, cells = None, []
    for index, ctx, cell in tasks:
        if cells and not (ctx is batch_ctx and _share_solve(cells[-1][1], cell)):
            yield batch_ctx, cells
            cells = []
        batch_ctx = ctx
        cells.append((index, cell))
    if cells:
        yield batch_ctx, cells


def _run_cells(ctx, cells: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """One task of a parallel executor: the cells of one solve batch on their dataset context (on Dask, the
    scattered one)."""
    return [_run_indexed(index, ctx, cell) for index, cell in cells]


class JoblibExecutor(Executor):
    """``jobs`` joblib/loky worker processes on this machine; the cells sharing a solve run in one task."""

    name = "joblib"

    def __init__(self, jobs: int):
        self.jobs = int(jobs)

    def __repr__(self) -> str:
        return f"JoblibExecutor(jobs={self.jobs})"

    def map_unordered(self, tasks):
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=self.jobs, backend="loky", return_as="generator_unordered")
        for records in parallel(delayed(_run_cells)(ctx, cells) for ctx, cells in _solve_batches(tasks)):
            yield from records


@dataclass
class _Scattered:
    """A dataset context on the cluster: the local object (to scatter again), its future, open tasks."""

    ctx: object
    future: object = None
    open_tasks: int = 0


@dataclass
class _Submitted:
    """One task on the cluster: the cells ``(index, cell)`` of one solve batch of the data set ``label``."""

    cells: list
    label: str
    attempt: int = 0


class DaskExecutor(Executor):
    """Cells as tasks on a Dask cluster: the scheduler at ``scheduler`` (``tcp://host:8786``), or a local
    cluster of ``jobs`` single-threaded worker processes when no address is given. The cells sharing a solve
    go as one task (:func:`_solve_batches`)."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, jobs: int = 1):
        self.scheduler = scheduler
        self.jobs = int(jobs)

    def __repr__(self) -> str:
        return f"DaskExecutor(scheduler={self.scheduler!r}, jobs={self.jobs})"

    def _connect(self):
        try:
            from distributed import Client
        except ImportError:
            raise UserError("the Dask executor needs 'dask[distributed]' (pip install 'ensclust[dask]')") from None
        if self.scheduler:
            try:
                return Client(self.scheduler, timeout=DASK_CONNECT_TIMEOUT)
            except OSError as exc:
                raise UserError(f"cannot connect to the Dask scheduler at {self.scheduler}: {exc}") from None
        return Client(n_workers=max(1, self.jobs), threads_per_worker=1, processes=True)

    def map_unordered(self, tasks):
        client = self._connect()
        try:
            yield from _DaskRun(client, self.scheduler or "the local Dask cluster").run(_solve_batches(tasks))
        finally:
            client.close()


class _DaskRun:
    """One pass of a :class:`DaskExecutor` over its tasks (keeps a bounded number of tasks in flight)."""

    def __init__(self, client, where: str):
        from distributed import as_completed

        self.client, self.where = client, where
        self.done = as_completed()
        self.in_flight: dict[object, _Submitted] = {}
        self.datasets: dict[str, _Scattered] = {}
        self.current_label = None
        self.not_computed: list[tuple[_Submitted, str]] = []
        self.n_finished = 0
        self._threads, self._threads_checked = 0, float("-inf")
        self._no_worker_since = None

    # -- cluster state ------------------------------------------------------------------------------
    def _cluster_threads(self, max_age: float = 5.0) -> int:
        now = time.monotonic()
        if now - self._threads_checked >= max_age:
            self._threads_checked = now
            if self.client.status != "running":
                self._threads = 0
            else:
                try:
                    self._threads = sum(self.client.nthreads().values())
                except OSError:
                    self._threads = 0
        return self._threads

    def _check_alive(self) -> None:
        """Raise once no worker was connected (or the scheduler was unreachable) for too long."""
        if self._cluster_threads(max_age=1.0) > 0:
            self._no_worker_since = None
            return
        now = time.monotonic()
        if self._no_worker_since is None:
            self._no_worker_since = now
        elif now - self._no_worker_since >= DASK_NO_WORKER_TIMEOUT:
            what = ("no Dask worker connected to" if self.client.status == "running"
                    else "lost the connection to the Dask scheduler at")
            raise UserError(f"{what} {self.where} for {DASK_NO_WORKER_TIMEOUT:g} s; {self._stop_note()}")

    def _stop_note(self) -> str:
        return (f"the {self.n_finished} cell(s) finished by then are stored; rerun the same command to compute "
                "the rest")

    # -- submission -----------------------------------------------------------------------------------
    def _scattered(self, label: str):
        entry = self.datasets[label]
        while entry.future is None or entry.future.status != "finished":
            # scatter needs a worker: wait for one (bounded by DASK_NO_WORKER_TIMEOUT)
            if self._cluster_threads(max_age=0.5) > 0:
                try:
                    entry.future = self.client.scatter(entry.ctx, broadcast=False, hash=False)
                    break
                except TimeoutError:  # the workers left meanwhile
                    self._threads_checked = float("-inf")
            self._check_alive()
            time.sleep(0.2)
        return entry.future

    def _submit(self, sub: _Submitted) -> None:
        index, cell = sub.cells[0]
        key = f"ensclust-{cell['fingerprint']}-{index}-a{sub.attempt}"
        future = self.client.submit(_run_cells, self._scattered(sub.label), sub.cells, pure=False, key=key)
        self.in_flight[future] = sub
        self.done.add(future)

    def _add(self, ctx, cells: list[tuple[int, dict]]) -> None:
        label = ctx.label
        if label != self.current_label:
            self._release(self.current_label)
            self.current_label = label
        entry = self.datasets.setdefault(label, _Scattered(ctx))
        entry.ctx = ctx
        entry.open_tasks += 1
        self._submit(_Submitted(cells, label))

    def _close_task(self, sub: _Submitted) -> None:
        entry = self.datasets.get(sub.label)
        if entry is not None:
            entry.open_tasks -= 1
            if sub.label != self.current_label:
                self._release(sub.label)

    def _release(self, label) -> None:
        """Forget a dataset's context once none of its cells is open (keeps one context in memory)."""
        entry = self.datasets.get(label)
        if entry is not None and entry.open_tasks <= 0:
            del self.datasets[label]

    # -- the loop -------------------------------------------------------------------------------------
    def run(self, batches) -> Iterator[tuple[int, dict]]:
        """Submit the batches of :func:`_solve_batches` (a bounded number in flight); yield each cell's record."""
        exhausted = False
        try:
            while True:
                window = max(DASK_MIN_IN_FLIGHT, 2 * self._cluster_threads())
                while not exhausted and len(self.in_flight) < window:
                    batch = next(batches, None)
                    if batch is None:
                        exhausted = True
                        self._release(self.current_label)
                        self.current_label = None
                    else:
                        self._add(*batch)
                if exhausted and not self.in_flight:
                    break
                finished = self.done.next_batch(block=False)
                if not finished:
                    self._check_alive()
                    time.sleep(_POLL_S)
                    continue
                self._no_worker_since = None
                for future in finished:
                    yield from self._collect(future)
        finally:
            if self.in_flight and self.client.status == "running":
                try:  # Ctrl-C or an error: do not leave this run's cells queued on the cluster
                    self.client.cancel(list(self.in_flight))
                except Exception:  # noqa: BLE001 - the client is closed next anyway
                    pass
        if self.not_computed:
            sub, reason = self.not_computed[0]
            cell = sub.cells[0][1]
            rep = "pool" if cell["rep"] < 0 else f"rep {cell['rep']}"
            n_cells = sum(len(sub.cells) for sub, _ in self.not_computed)
            raise UserError(f"{n_cells} cell(s) could not be computed on {self.where} (e.g. "
                            f"{cell['dataset']}/{cell['method']} {rep}: {reason}); {self._stop_note()}")

    def _collect(self, future) -> list[tuple[int, dict]]:
        """The records of a finished task; [] when it was resubmitted, is awaited again or could not run."""
        sub = self.in_flight.pop(future)
        status = future.status
        if status == "finished":
            try:
                records = future.result(timeout=DASK_NO_WORKER_TIMEOUT)
            except TimeoutError:  # its result was lost with a worker and is being computed again
                return self._wait_again(future, sub)
            except CancelledError:  # ... or forgotten with its dataset context: compute it again
                return self._retry(sub, "its result was lost with a worker")
            self.n_finished += len(records)
            self._close_task(sub)
            return records
        if status == "cancelled":
            if self.client.status != "running":
                raise UserError(f"lost the connection to the Dask scheduler at {self.where}; {self._stop_note()}")
            # the dataset context was lost with the only worker holding it: scatter it again, resubmit
            return self._retry(sub, "its dataset context was lost with a worker")
        if status != "error":  # "lost" / "pending": its result was lost with a worker, Dask recomputes it
            return self._wait_again(future, sub)
        exc = future.exception()
        text = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
        self.not_computed.append((sub, text))
        self._close_task(sub)
        return []

    def _wait_again(self, future, sub: _Submitted) -> list:
        self.in_flight[future] = sub
        self.done.add(future)
        return []

    def _retry(self, sub: _Submitted, reason: str) -> list:
        if sub.attempt >= DASK_RESUBMITS:
            self.not_computed.append((sub, reason))
            self._close_task(sub)
            return []
        sub.attempt += 1
        self._submit(sub)
        return []


def make_executor(executor: str = "local", jobs: int = 1, scheduler: str | None = None) -> Executor:
    """The executor for ``--executor`` / ``--jobs`` / ``--scheduler``."""
    if executor not in EXECUTORS:
        from ensclust.errors import unknown_name_error

        raise unknown_name_error("executor", executor, EXECUTORS, "--executor")
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")
    if executor == "dask":
        return DaskExecutor(scheduler=scheduler, jobs=jobs)
    if scheduler:
        raise UserError("--scheduler needs --executor dask")
    return JoblibExecutor(jobs) if jobs > 1 else SerialExecutor()

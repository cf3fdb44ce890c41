"""The cell runner: plans dataset x method x parameter point x repetition cells, runs the missing ones
(serially, with joblib/loky processes, or on a Dask cluster: ``ensclust.experiment.executors``), and stores
every finished cell atomically.

Per cell we record the labels' sha256 (of the int32 label vector), every metric, the wall time of the fit,
the CPU time of the fit (``cpu_s``, this process's, all threads; the fit runs with ``blas_threads`` BLAS threads,
1 by default: on small matrices and a shared machine several BLAS threads cost up to 30x the CPU time of one,
and the floating-point order - so the bytes of an unconverged fit - would depend on the machine's core count), the peak memory of the fit (``memory=``: ``rss`` (default on Linux) = rise of the process's peak resident set
during the fit, read from /proc after resetting the peak - counts C libraries too and costs nothing;
``tracemalloc`` = peak of Python and NumPy allocations, slows allocation-heavy fits up to ~2.5x;
``off``; ``mem_method`` says which; it is left empty when another cell measures in the same process at the
same time, e.g. with a threaded Dask worker), ``n_iter`` / ``converged`` / ``n_clusters_found`` from the
method's ``diagnostics_``, and the error text if the fit failed. A failed cell does not stop the run.

Seeds: the cell seed is ``derive_seed(seed, dataset_label, rep, method_label, params_json)``, so a cell
gives the same labels whatever order or process it runs in. The pool is built with the master seed (so
configs that share a dataset and pool spec share the cached pool), the ensemble draws use
``ensemble.seed``. Every method of a repetition sees the same ensemble ``pool.members[:, draws[rep]]``.

Pseudo-methods ``km-avg`` / ``km-best`` are base-clustering statistics (``ensclust.metrics.member_scores``):
``scope: pool`` gives one cell (rep -1) holding the mean (with std over members) / the max over all pool
members; ``scope: ensemble`` gives one cell per repetition with the mean / max over that ensemble's members.

Reuse: a stored cell is reused while its fingerprint (``ensclust.experiment.plan``: the config's part) is
unchanged and, for every data set this run prepares, while the digests of the arrays it is computed from
(:func:`inputs_digests`, recorded per data set in ``inputs.json``: one of the features, truth, pool members and c,
one per repetition's draw) are unchanged; otherwise the cell is computed again. Neither depends on the number of
repetitions (the r-th draw does not, :mod:`ensclust.pools.draws`), so raising ``ensemble.repetitions`` runs only
the new repetitions.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
import tracemalloc
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from ensclust.core.cache import SolveCache
from ensclust.core.labels import MISSING_LABEL
from ensclust.errors import UserError
from ensclust.experiment.config import ExperimentConfig
from ensclust.experiment.environment import current_environment
from ensclust.experiment.executors import make_executor
from ensclust.experiment.plan import plan_cells  # noqa: F401  (re-exported: callers import it from here)
from ensclust.experiment.store import ResultStore

MEM_METHOD = "tracemalloc-peak"
MEMORY_MODES = ("rss", "tracemalloc", "off")


# -- data preparation (main process) --------------------------------------------------------------------
@dataclass
class DatasetContext:
    """Everything the cells of one dataset need: features, labels, the pool and the draws."""

    label: str
    X: object
    y: np.ndarray
    n_clusters: int
    members: np.ndarray  # the whole pool, n x m int32
    draws: list
    metrics: list
    nmi_average: str
    std_ddof: int
    memory: str = "rss"
    blas_threads: int = 1
    inputs: dict = field(default_factory=dict)  # inputs_digests of the arrays above
    #: result cache handed to the methods that take ``memory=`` (e.g. AWEC-H and AWEC-S share one solve per
    #: ensemble and parameter point); owned by this context, so it lives while the data set's cells run. A
    #: worker process receives the context without it and starts an empty one.
    cache: SolveCache = field(default_factory=SolveCache)

    def __getstate__(self):
        # A context shipped to a worker (joblib, Dask) travels without its cache: the worker starts an empty one
        # (see __setstate__), and nothing large or process-bound is pickled with every task.
        state = dict(self.__dict__)
        state.pop("cache", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.cache = SolveCache()


def prepare_dataset(config: ExperimentConfig, ds_label: str, data_dir=None, cache_dir="results/cache/pools",
                    progress: bool = False) -> DatasetContext:
    from ensclust.data import load_dataset
    from ensclust.pools import draw_ensembles, get_pool

    spec = config.dataset(ds_label)
    data_dir = data_dir or config.data_dir
    dataset = None
    if spec.name is not None:
        dataset = load_dataset(spec.name, data_dir=data_dir, preprocess=spec.preprocess, params=spec.params or None,
                               x_key=spec.x_key, y_key=spec.y_key)
    pool_spec = {k: v for k, v in spec.pool.items() if k != "first"}
    pool = get_pool(dataset, pool_spec, seed=config.seed, data_dir=data_dir, cache_dir=cache_dir, progress=progress)
    members = np.asarray(pool.members)
    first = spec.pool.get("first")
    if first:
        if first > members.shape[1]:
            raise UserError(f"dataset '{ds_label}': pool has {members.shape[1]} members, fewer than first={first}")
        members = members[:, :first]
    if pool.y is not None:
        y = np.asarray(pool.y)
    elif dataset is not None:
        y = np.asarray(dataset.y)
    else:
        raise UserError(f"dataset '{ds_label}': the pool file has no ground truth and no dataset is named")
    if y.shape[0] != members.shape[0]:
        raise UserError(f"dataset '{ds_label}': {y.shape[0]} labels but the pool has {members.shape[0]} rows")
    # c follows the ground truth actually used (the pool file's gt when it has one)
    n_clusters = spec.n_clusters or (int(np.unique(y).size) if pool.y is not None or dataset is None
                                     else dataset.n_clusters)
    ens = config.ensemble
    draws = draw_ensembles(members.shape[1], mode=ens["mode"], size=ens["size"], repetitions=ens["repetitions"],
                           seed=ens["seed"])
    X = dataset.X if dataset is not None else None
    draws = [np.asarray(d) for d in draws]
    return DatasetContext(label=ds_label, X=X, y=y, n_clusters=int(n_clusters), members=members,
                          draws=draws, metrics=list(config.metrics),
                          nmi_average=config.nmi_average, std_ddof=config.std_ddof,
                          inputs=inputs_digests(X, y, members, draws, int(n_clusters)))


def _hash_arrays(h, parts) -> None:
    """Feed (name, array) pairs into the sha256 ``h``: name, dtype, shape and bytes (sparse: canonical CSR)."""
    for name, arr in parts:
        if arr is None:
            continue
        if sparse.issparse(arr):
            arr = sparse.csr_matrix(arr, copy=True)  # canonical form: the same matrix gives the same bytes
            arr.sum_duplicates()
            arr.sort_indices()
            pieces = [arr.data, arr.indices, arr.indptr]
        else:
            pieces = [np.asarray(arr)]
        for piece in pieces:
            piece = np.ascontiguousarray(piece)
            h.update(f"{name}:{piece.dtype.str}:{piece.shape}".encode())
            h.update(piece.tobytes())


def _base_hash(X, y, members, n_clusters: int):
    h = hashlib.sha256(f"c={n_clusters}".encode())
    _hash_arrays(h, [("X", X), ("y", y), ("members", members)])
    return h


def inputs_digests(X, y, members, draws, n_clusters: int) -> dict:
    """sha256 digests of everything a data set's cells are computed from: ``base`` of the features, truth, pool
    members and c (all cells), ``draws`` one per repetition's draw (that repetition's cells).

    A cell's fingerprint holds the config (the pool *spec*, the data set's name), not these arrays; the digests
    are what notice that a data file, a preprocessing step, a pool generator or the draws now give other
    inputs, so that the cells stored from the old ones are recomputed (``inputs.json``, :func:`run_experiment`).
    Each draw has its own digest so that more repetitions leave the finished ones valid.
    """
    draw_digests = []
    for d in draws:
        h = hashlib.sha256()
        _hash_arrays(h, [("draw", d)])
        draw_digests.append(h.hexdigest())
    return {"base": _base_hash(X, y, members, n_clusters).hexdigest(), "draws": draw_digests}


def _legacy_digests(X, y, members, draws, n_clusters: int) -> list[str]:
    """The one-string digests folders recorded before :func:`inputs_digests`, one per number of repetitions:
    entry r - 1 hashes the inputs with the first r draws (the draws were hashed in order after the rest)."""
    h = _base_hash(X, y, members, n_clusters)
    out = []
    for i, d in enumerate(draws):
        _hash_arrays(h, [(f"draw{i}", d)])
        out.append(h.hexdigest())
    return out


def still_valid(recorded, current: dict, legacy=None):
    """Which stored cells of a data set the recorded digests still vouch for, given this run's: a function of the
    repetition (-1: the pool-level cells) returning True where the cell's inputs are unchanged.

    ``recorded``: the folder's entry for the data set (None: no record, everything stands; a dict of
    :func:`inputs_digests`: the base digest and the repetition's own draw digest must agree; or a string recorded
    before per-draw digests: valid up to the number of draws it covers, none when this run has fewer draws than
    it covers, since it cannot be checked then); ``current``: this run's
    :func:`inputs_digests`; ``legacy``: a callable returning :func:`_legacy_digests`, called only for a string.
    """
    if recorded is None:
        return lambda rep: True
    if isinstance(recorded, str):
        prefixes = legacy() if legacy is not None else []
        covered = next((r + 1 for r in range(len(prefixes) - 1, -1, -1) if prefixes[r] == recorded), 0)
        return lambda rep: covered > 0 and rep < covered
    if recorded.get("base") != current["base"]:
        return lambda rep: False
    old, new = recorded.get("draws", []), current["draws"]
    return lambda rep: rep < 0 or (rep < min(len(old), len(new)) and old[rep] == new[rep])


def merged_record(recorded, current: dict) -> dict:
    """The entry to record after a run that left no stale cell: this run's digests, followed by the recorded
    draw digests beyond its repetitions when the base agrees (cells of a run with more repetitions stay valid
    when the count is lowered and raised again)."""
    if isinstance(recorded, dict) and recorded.get("base") == current["base"]:
        extra = list(recorded.get("draws", []))[len(current["draws"]):]
        return {"base": current["base"], "draws": current["draws"] + extra}
    return current


# -- one cell (runs in a worker) --------------------------------------------------------------------------
_trace_lock = threading.Lock()
_trace_users = 0
_RSS_METHOD = "rss-peak-increase"


def _read_rss_kb() -> tuple[int, int]:
    """(current RSS, peak RSS) of this process in kB, from /proc/self/status."""
    cur = peak = 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1])
    return cur, peak


def _reset_peak_rss() -> int:
    """Reset this process's peak RSS to its current RSS (Linux: ``5`` into /proc/self/clear_refs); returns
    the current RSS in kB. Raises OSError where that is not possible."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _read_rss_kb()[0]


def rss_supported() -> bool:
    """Whether the ``rss`` memory mode works here (Linux lets a process reset its own peak RSS)."""
    try:
        _reset_peak_rss()
        return True
    except OSError:
        return False


class _MemoryProbe:
    """Peak memory of one fit; only one probe per process at a time (the measure is process-wide)."""

    def __init__(self, mode: str):
        self.mode, self.active, self._base_kb = mode, False, 0

    def start(self) -> None:
        global _trace_users
        if self.mode == "off":
            return
        with _trace_lock:
            if _trace_users or (self.mode == "tracemalloc" and tracemalloc.is_tracing()):
                return  # another cell (threaded worker) or the user is measuring: do not disturb
            if self.mode == "tracemalloc":
                tracemalloc.start()
            else:
                try:
                    self._base_kb = _reset_peak_rss()
                except OSError:
                    return
            _trace_users += 1
            self.active = True

    def stop(self) -> tuple[float | None, str | None]:
        """(peak MB, method name); (None, None) when this probe did not measure."""
        global _trace_users
        if not self.active:
            return None, None
        with _trace_lock:
            self.active = False
            _trace_users -= 1
            if self.mode == "tracemalloc":
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                return peak / 2**20, MEM_METHOD
            return max(0, _read_rss_kb()[1] - self._base_kb) / 1024, _RSS_METHOD


def labels_sha256(labels) -> str:
    return hashlib.sha256(np.ascontiguousarray(labels, dtype=np.int32).tobytes()).hexdigest()


def _json_safe(value):
    if isinstance(value, np.generic):
        return value.item()
    return value


def run_cell(ctx: DatasetContext, cell: dict) -> dict:
    """Run one cell and return its record (never raises for a failing method: the error is recorded)."""
    from ensclust.methods import get_method, get_method_class
    from ensclust.metrics import FIT_METRICS, evaluate, member_scores

    record = {k: cell[k] for k in ("dataset", "method", "method_name", "point", "params", "rep", "seed",
                                   "fingerprint")}
    record.update(status="ok", error=None, labels_sha256=None, n=int(ctx.members.shape[0]), m=None,
                  n_clusters=ctx.n_clusters, n_clusters_found=None, n_iter=None, converged=None,
                  metrics={}, metric_std={}, time_s=None, cpu_s=None, peak_mem_mb=None, mem_method=None)
    rep = cell["rep"]
    members = ctx.members if rep < 0 else ctx.members[:, ctx.draws[rep]]
    record["m"] = int(members.shape[1])
    params = json.loads(cell["params"])
    name = cell["method_name"]
    probe = _MemoryProbe(ctx.memory)
    start = time.perf_counter()
    try:
        if name in ("km-avg", "km-best"):
            scores = member_scores(members, ctx.y, ctx.metrics, ctx.nmi_average)
            for metric, values in scores.items():
                values = np.asarray(values, dtype=float)
                if name == "km-avg":
                    record["metrics"][metric] = float(values.mean())
                    if rep < 0 and values.size > ctx.std_ddof:
                        record["metric_std"][metric] = float(values.std(ddof=ctx.std_ddof))
                else:
                    record["metrics"][metric] = float(values.max())
            record["time_s"] = time.perf_counter() - start
            return record
        cls = get_method_class(name)
        if "memory" in cls.params and "memory" not in params:
            params = {**params, "memory": ctx.cache}  # a cache changes no result, only the time
        method = get_method(name, **params)
        X = ctx.X if cls.needs_features else None
        probe.start()
        start, cpu_start = time.perf_counter(), time.process_time()
        # pool members are relabelled 0..k-1, so -1 can only be a missing entry of an imported incomplete pool
        with _blas_limit(ctx.blas_threads):
            labels = method.fit_predict(members, ctx.n_clusters, X=X, random_state=cell["seed"],
                                        missing=MISSING_LABEL)
        record["time_s"] = time.perf_counter() - start
        # CPU seconds of this process during the fit (all its threads: BLAS included); on a shared machine
        # the wall time above also counts the time other jobs held the cores
        record["cpu_s"] = time.process_time() - cpu_start
        record["peak_mem_mb"], record["mem_method"] = probe.stop()
        diag = dict(method.diagnostics_ or {})
        record["n_clusters_found"] = _json_safe(diag.get("n_clusters_found", int(np.unique(labels).size)))
        record["n_iter"] = _json_safe(diag.get("n_iter"))
        converged = diag.get("converged")
        record["converged"] = None if converged is None else bool(converged)
        record["labels_sha256"] = labels_sha256(labels)
        record["env"], record["environment"] = current_environment(ctx.blas_threads)
        record["metrics"] = {k: float(v) for k, v in evaluate(ctx.y, labels, ctx.metrics, ctx.nmi_average).items()}
        record["metrics"].update({k: FIT_METRICS[k](method) for k in ctx.metrics if k in FIT_METRICS})
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a failing method is recorded, the run goes on
        record["status"] = "failed"
        text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        record["error"] = text[:500]
        record["time_s"] = time.perf_counter() - start
    finally:
        probe.stop()
    return record


# -- orchestration -------------------------------------------------------------------------------------------
def _blas_limit(threads: int):
    """A context limiting BLAS to ``threads`` threads in this process (no limit for 0)."""
    if threads <= 0:
        import contextlib

        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="blas")


def run_experiment(config: ExperimentConfig, *, results_root="results", jobs: int = 1, executor: str = "local",
                   scheduler: str | None = None, force: bool = False, retry_failed: bool = False,
                   quiet: bool = False, data_dir=None, cache_dir=None, write_reports: bool = True,
                   cell_filter=None, dry_run=False, memory: str | None = None, blas_threads: int = 1) -> Path:
    """Run every unfinished cell of ``config``; returns the results folder.

    ``force`` recomputes finished cells (the selected ones; until all are done ``forced.json`` lists the rest,
    so that an interrupted forced run resumes without ``force``), ``retry_failed`` recomputes only the failed
    ones. On Ctrl-C the finished cells stay stored (cells.csv is rewritten from them) and the interrupt
    propagates.
    ``cell_filter(cell) -> bool`` restricts which cells are computed (finished cells outside the filter
    still appear in cells.csv and the tables). ``dry_run`` only prints what would run (a callable is
    used instead of ``print``). ``memory`` is how each fit's peak memory is measured (module docstring;
    default ``rss`` where Linux supports it, else ``off``). ``blas_threads`` BLAS threads per fit (1; 0 = the
    library's default, all cores). ``executor`` / ``jobs`` / ``scheduler`` choose
    how cells run (:func:`ensclust.experiment.executors.make_executor`); datasets are prepared here and
    every record is stored here, whichever executor computed it.
    """
    from tqdm import tqdm

    if not isinstance(blas_threads, int) or blas_threads < 0:
        raise UserError(f"blas_threads must be an integer >= 0, got {blas_threads!r}")
    if memory not in (None, *MEMORY_MODES):
        from ensclust.errors import unknown_name_error

        raise unknown_name_error("memory mode", memory, MEMORY_MODES, "--memory")
    rss_ok = memory in (None, "rss") and rss_supported()
    if memory is None:
        memory = "rss" if rss_ok else "off"
    if memory == "rss" and not rss_ok:
        raise UserError("--memory rss needs Linux's /proc/self/clear_refs; use --memory tracemalloc or off")
    cell_executor = make_executor(executor, jobs, scheduler)
    root = Path(results_root) / config.name
    store = ResultStore(root)
    cache_dir = cache_dir or str(Path(results_root) / "cache" / "pools")
    planned = plan_cells(config)

    done: dict[int, dict] = {}
    pending = []
    # cells an interrupted --force run selected and did not recompute: still owed, with or without --force now
    owed = store.read_forced() & {cell["fingerprint"] for cell in planned}
    for i, cell in enumerate(planned):
        selected = cell_filter is None or cell_filter(cell)
        redo = selected and (force or cell["fingerprint"] in owed)
        record = None if redo else store.read_cell(cell)
        if record is not None and selected and retry_failed and record.get("status") != "ok":
            record = None
        if record is not None:
            done[i] = record  # cells outside the filter still count for the tables
        elif selected:
            pending.append((i, cell))
    # Run order (results do not depend on it: every cell has its own seed): data set by data set, and within
    # one, repetition by repetition and grid point by grid point, so that the cells sharing a solve (same
    # ensemble and parameters, e.g. RSEC-H / RSEC-Z, AWEC-H / AWEC-S) run one after the other and the data
    # set's bounded SolveCache still holds the solve when the second cell asks for it.
    first_seen = {}
    for cell in planned:
        first_seen.setdefault(cell["dataset"], len(first_seen))
    pending.sort(key=lambda item: (first_seen[item[1]["dataset"]], item[1]["rep"], item[1]["point"], item[0]))
    if dry_run:
        return _dry_run_report(config, planned, pending, echo=dry_run if callable(dry_run) else print)
    # A clone has the committed cells.csv but no cells/: store those cells as files while experiment.json
    # still holds the plan that gives them their fingerprints, then record the new config.
    store.persist_committed()
    store.save_config(config)
    recorded_inputs = store.read_inputs()
    if force:
        owed |= {cell["fingerprint"] for _, cell in pending}
    store.write_forced(owed)

    contexts: dict[str, DatasetContext] = {}
    failed_datasets: dict[str, str] = {}
    # Inputs check: a data set's stored cells are valid only for the inputs they were computed on. When a
    # data set is prepared (it has cells to compute) and its inputs digest differs from the recorded one, its
    # stored cells are computed again; the new digest is recorded once none of them is left (an interrupted
    # run leaves the old digest, so the next run checks again). Data sets with nothing to compute are not
    # prepared and not checked; a folder without inputs.json takes the digest of its first preparation.
    prepared_inputs: dict[str, dict] = {}
    stale_left: dict[str, set] = {}

    def stale_cells(ctx: DatasetContext) -> list[int]:
        label = ctx.label
        valid = still_valid(recorded_inputs.get(label), ctx.inputs, legacy=lambda: _legacy_digests(
            ctx.X, ctx.y, ctx.members, ctx.draws, ctx.n_clusters))
        stale = [i for i, cell in enumerate(planned) if cell["dataset"] == label and i in done
                 and not valid(cell["rep"])]
        for i in stale:
            del done[i]
        stale_left[label] = set(stale)
        if stale:
            bar.total += len(stale)
            bar.refresh()
            tqdm.write(f"ensclust: warning: dataset '{label}': its inputs (data, pool or draws) differ from those "
                       f"{len(stale)} of its stored cells were computed on; computing them again", file=sys.stderr)
        return stale

    def tasks():
        for i, cell in pending:
            label = cell["dataset"]
            if label in failed_datasets:
                continue
            if label not in contexts:
                contexts.clear()  # keep one dataset in memory at a time
                try:
                    ctx = contexts[label] = prepare_dataset(config, label, data_dir=data_dir, cache_dir=cache_dir,
                                                            progress=not quiet)
                    ctx.memory = memory
                    ctx.blas_threads = blas_threads
                except UserError as exc:
                    # missing data etc.: skip this dataset (nothing stored, so a later rerun computes it)
                    failed_datasets[label] = str(exc)
                    skipped = sum(1 for _, c in pending if c["dataset"] == label)
                    bar.update(skipped)
                    tqdm.write(f"ensclust: warning: dataset '{label}' skipped ({skipped} cells): {exc}",
                               file=sys.stderr)
                    continue
                prepared_inputs[label] = ctx.inputs
                for j in stale_cells(ctx):
                    yield j, ctx, planned[j]
            yield i, contexts[label], cell

    bar = tqdm(total=len(pending), disable=quiet or not pending, desc=config.name, unit="cell", leave=True)
    n_failed = 0

    def finish(i, record):
        nonlocal n_failed
        store.write_cell(record)
        done[i] = record
        stale_left.get(record["dataset"], set()).discard(i)
        if record["fingerprint"] in owed:
            owed.discard(record["fingerprint"])
            store.write_forced(owed)
        if record["status"] != "ok":
            n_failed += 1
        rep = "pool" if record["rep"] < 0 else f"r{record['rep']}"
        bar.set_postfix_str(f"{record['dataset']}/{record['method']} {rep} {record['status']}"
                            + (f" (failed: {n_failed})" if n_failed else ""), refresh=False)
        bar.update(1)

    try:
        if pending:
            with closing(cell_executor.map_unordered(tasks())) as finished:
                for i, record in finished:
                    finish(i, record)
    finally:
        bar.close()
        inputs = {**recorded_inputs, **{label: merged_record(recorded_inputs.get(label), digests)
                                        for label, digests in prepared_inputs.items() if not stale_left.get(label)}}
        if inputs != recorded_inputs:
            store.write_inputs(inputs)
        # Cells this run did not compute may have been finished meanwhile by another run of the same
        # experiment (e.g. one per method in two shells): read them back so cells.csv never drops them.
        records = store.read_planned(planned, known=done)
        if records:
            store.write_aggregates(config, records)
    if failed_datasets and len(failed_datasets) == len({c["dataset"] for _, c in pending}) and not done:
        raise UserError("no dataset could be prepared: " + "; ".join(failed_datasets.values()))
    if write_reports and records:
        from ensclust.experiment.report import write_reports as _write

        _write(root, config=config, quiet=quiet)
    return root


def _dry_run_report(config: ExperimentConfig, planned: list, pending: list, echo=print) -> Path:
    """Print the number of planned / finished / pending cells per dataset and method."""
    from collections import Counter

    total = Counter((c["dataset"], c["method"]) for c in planned)
    todo = Counter((c["dataset"], c["method"]) for _, c in pending)
    echo(f"{config.name}: {len(planned)} cells planned, {len(planned) - len(pending)} finished or not selected, "
         f"{len(pending)} to run")
    for (ds, method), n in total.items():
        points = len(config.method(method).points)
        echo(f"  {ds:<24} {method:<32} {n:>5} cells ({points} parameter point(s)), {todo.get((ds, method), 0)} to run")
    return Path(config.name)

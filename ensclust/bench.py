"""``ensclust bench``: time and memory of consensus methods, one fresh subprocess per entry.

Reads every ``benchmarks/*.yaml`` (a list of entries)::

    - method: lwea
      params: {theta: 0.4}
      dataset: digits          # built-in or registry name; omitted for a pool-only entry
      pool: {generator: kmeans, k: [2, "sqrt"], size: 20}   # or {source: file, file: pools/x.mat, first: 20}
      ensemble_size: 20        # the first M pool members are the ensemble
      goal: "< 5 s on ISOLET"  # free text shown in the table

Each entry runs in its own Python process (``python -m ensclust.bench --child``) so that its memory is
its own: the child loads the data and the pool (cached in results/cache/pools), then times
``fit_predict`` (wall clock, ``time.perf_counter``, and the process's CPU time, ``time.process_time``) with
random_state 0; fits under 1 s are repeated and the median reported (the first call pays one-time import and
thread-library scan costs). On a shared machine the wall time grows with the load; the CPU time of a
single-threaded fit (``OMP_NUM_THREADS=1``) does not, and is about the wall time the fit takes on an idle core
(with several BLAS threads it is their sum). Memory columns, both from the
child's ``resource.getrusage(RUSAGE_SELF).ru_maxrss``: ``peak_mb`` = the child's peak resident set size
over its whole life (interpreter + data + pool + fit), ``fit_delta_mb`` = how much the fit raised that
peak above the level reached before the fit (0 when the fit stayed below it, e.g. below the pool
generation's peak). Entries whose data is absent are listed as ``skipped``; a failing method as
``failed`` with its error; a child running longer than ``--timeout`` as ``timeout``.

``--quick`` runs only the entries on built-in datasets (no data files needed); ``--only METHOD`` filters by
method name.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from ensclust.errors import UserError, unknown_name_error

ENTRY_KEYS = ("method", "params", "dataset", "preprocess", "pool", "ensemble_size", "n_clusters", "goal")
COLUMNS = ["file", "method", "params", "dataset", "n", "M", "time_s", "cpu_s", "n_timed", "peak_mb", "fit_delta_mb", "ari",
           "labels_sha256", "load_avg", "goal", "status", "note"]


def find_bench_dir(bench_dir=None) -> Path:
    """``bench_dir`` (``--benchmarks``) when given, else ``./benchmarks`` when it exists, else the
    ``benchmarks/`` folder of the repository ensclust runs from, so ``ensclust bench`` works from any folder."""
    from ensclust.data.registry import REPO_ROOT

    if bench_dir is not None:
        path = Path(bench_dir)
        if not path.is_dir():
            raise UserError(f"{path}: no such benchmarks folder (--benchmarks)")
        return path
    tried = [Path("benchmarks"), REPO_ROOT / "benchmarks"]
    for path in tried:
        if path.is_dir() and any(path.glob("*.yaml")):
            return path
    raise UserError(f"no benchmark files: looked in {tried[0].resolve()} and {tried[1]}; "
                    "pass --benchmarks DIR (the folder with the benchmark *.yaml files)")


def load_entries(bench_dir=None) -> list[dict]:
    """All entries of ``bench_dir/*.yaml`` (default: :func:`find_bench_dir`), validated (one-line errors with
    file and line)."""
    from ensclust.experiment.config import BUILTIN_DATASETS, DEFAULT_POOL, _Validator, validate_pool
    from ensclust.experiment.yamlio import load_yaml_file
    from ensclust.methods import get_method_class

    bench_dir = find_bench_dir(bench_dir)
    files = sorted(bench_dir.glob("*.yaml"))
    if not files:
        raise UserError(f"{bench_dir}: no benchmark files (*.yaml)")
    entries = []
    for file in files:
        doc = load_yaml_file(file)
        v = _Validator(doc)
        if doc.data in (None, {}):
            continue
        if not isinstance(doc.data, list):
            raise v.err((), "a benchmark file is a list of entries (- method: ...)")
        for i, raw in enumerate(doc.data):
            entry = v.mapping(raw, (i,), ENTRY_KEYS)
            if "method" not in entry:
                raise v.err((i,), "missing key 'method'")
            cls = get_method_class(str(entry["method"]), where=v.where((i, "method")))
            params = entry.get("params") or {}
            if not isinstance(params, dict):
                raise v.err((i, "params"), "must be a mapping of parameter: value")
            cls.check_params(params, where=v.where((i, "params")))
            pool = {**DEFAULT_POOL, **validate_pool(v, entry.get("pool") or {}, (i, "pool"))}
            dataset = entry.get("dataset")
            if dataset is None and pool.get("source") != "file":
                raise v.err((i,), "an entry without 'dataset' needs a file pool")
            size = v.integer(entry.get("ensemble_size", pool.get("first") or pool.get("size") or 20),
                             (i, "ensemble_size"), low=1)
            entries.append({
                "file": file.name, "line": doc.line((i,)), "method": cls.name, "params": params,
                "dataset": None if dataset is None else str(dataset), "preprocess": entry.get("preprocess", "none"),
                "pool": pool, "ensemble_size": size, "n_clusters": entry.get("n_clusters"),
                "goal": str(entry.get("goal", "") or ""),
                "builtin": dataset is not None and str(dataset).lower() in BUILTIN_DATASETS,
            })
    return entries


def _child(entry: dict, data_dir, cache_dir) -> dict:
    """Runs inside the subprocess: load, build the pool, time one fit. Returns the measurement."""
    import resource

    import numpy as np

    from ensclust.methods import get_method
    from ensclust.metrics import ari

    def maxrss_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux

    out = {"status": "ok", "note": ""}
    try:
        from ensclust.data import load_dataset
        from ensclust.pools import get_pool

        dataset = None
        if entry["dataset"] is not None:
            dataset = load_dataset(entry["dataset"], data_dir=data_dir, preprocess=entry["preprocess"])
        spec = {k: v for k, v in entry["pool"].items() if k != "first"}
        pool = get_pool(dataset, spec, seed=0, data_dir=data_dir, cache_dir=cache_dir)
    except UserError as exc:
        return {"status": "skipped", "note": str(exc)}
    members = np.asarray(pool.members)
    size = entry["ensemble_size"]
    if size > members.shape[1]:
        return {"status": "failed", "note": f"pool has {members.shape[1]} members < ensemble_size {size}"}
    members = members[:, :size]
    y = pool.y if pool.y is not None else (dataset.y if dataset is not None else None)
    c = entry["n_clusters"] or (dataset.n_clusters if dataset is not None else int(np.unique(y).size))
    method = get_method(entry["method"], **entry["params"])
    X = dataset.X if (method.needs_features and dataset is not None) else None
    out.update(n=int(members.shape[0]), M=int(size))
    before = maxrss_mb()
    start, start_cpu = time.perf_counter(), time.process_time()
    try:
        labels = method.fit_predict(members, c, X=X, random_state=0)
    except Exception as exc:  # recorded, the bench goes on
        out.update(status="failed", note=f"{type(exc).__name__}: {exc}"[:300])
        return out
    first = time.perf_counter() - start
    cpu = [time.process_time() - start_cpu]
    peak = maxrss_mb()
    # Short fits are timed again: the first call in a fresh process also pays one-time costs (lazy imports,
    # threadpoolctl's scan of the loaded BLAS/OpenMP libraries, ~10-15 ms) that are not the method's. The
    # reported time is the median over all calls (the first included) while they add up to < 2 s, at most 7.
    times = [first]
    while first < 1.0 and len(times) < 7 and sum(times) < 2.0:
        again, again_cpu = time.perf_counter(), time.process_time()
        method.fit_predict(members, c, X=X, random_state=0)
        times.append(time.perf_counter() - again)
        cpu.append(time.process_time() - again_cpu)
    out["time_s"] = float(np.median(times))
    out["cpu_s"] = float(np.median(cpu))
    out["n_timed"] = len(times)
    out.update(peak_mb=peak, fit_delta_mb=max(0.0, peak - before))
    from ensclust.experiment.runner import labels_sha256

    out["labels_sha256"] = labels_sha256(labels)  # a speed-up must keep it (compare before / after)
    if y is not None:
        out["ari"] = float(ari(y, labels))
    return out


def run_bench(bench_dir=None, out_dir="results/bench", *, only=None, quick=False, timeout=1800.0,
              data_dir=None, cache_dir="results/cache/pools", echo=print) -> tuple[list[dict], list[Path]]:
    entries = load_entries(bench_dir)
    if only:
        names = {e["method"] for e in entries}
        wanted = {o.lower() for o in only}
        for o in wanted:
            if o not in names:
                raise unknown_name_error("benchmarked method", o, names, "--only")
        entries = [e for e in entries if e["method"] in wanted]
    if quick:
        entries = [e for e in entries if e["builtin"]]
    rows = []
    for entry in entries:
        row = {k: entry.get(k) for k in ("file", "method", "dataset", "goal")}
        row["params"] = json.dumps(entry["params"], sort_keys=True)
        # Other work on the machine inflates wall times: record the 1-minute load average at the start.
        row["load_avg"] = round(os.getloadavg()[0], 2)
        if row["dataset"] is None:
            row["dataset"] = Path(str(entry["pool"].get("file", ""))).stem
        payload = json.dumps({"entry": entry, "data_dir": data_dir, "cache_dir": cache_dir})
        env = dict(os.environ)
        try:
            proc = subprocess.run([sys.executable, "-m", "ensclust.bench", "--child"], input=payload, text=True,
                                  capture_output=True, timeout=timeout, env=env)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                result = {"status": "failed", "note": f"child exited {proc.returncode}: {err}"[:300]}
            else:
                result = json.loads(lines[-1])
        except subprocess.TimeoutExpired:
            result = {"status": "timeout", "note": f"longer than {timeout:g} s"}
        row.update(result)
        rows.append(row)
        t = row.get("time_s")
        echo(f"{row['method']:<12} {row['dataset']:<14} {row['status']:<8} "
             + (f"{t:8.3f} s  {row.get('peak_mb', math.nan):8.1f} MB" if t is not None else row.get("note", "")))
        # Rewrite the tables after every entry, so an interrupted benchmark keeps what it measured.
        paths = _write_tables(rows, out_dir, total=len(entries))
    if not rows:
        paths = _write_tables(rows, out_dir, total=0)
    return rows, paths


def _write_tables(rows, out_dir, total: int) -> list[Path]:
    import pandas as pd

    from ensclust.experiment.store import atomic_write_text

    out = Path(out_dir)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    csv_path, md_path = out / "bench.csv", out / "bench.md"
    atomic_write_text(csv_path, frame.to_csv(index=False, lineterminator="\n"))
    text = bench_markdown(frame)
    if len(rows) < total:
        text += f"\nPartial run: {len(rows)} of {total} entries measured (the run was interrupted).\n"
    atomic_write_text(md_path, text)
    return [csv_path, md_path]


def bench_markdown(frame) -> str:
    import platform

    lines = ["# ensclust benchmark", "",
             f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs. time = wall time "
             "of fit_predict (fits under 1 s: median of the (n) calls shown in brackets); CPU = its process CPU "
             "time (same calls; with one BLAS thread about the time on an idle core, whatever the load); peak MB = the subprocess's peak RSS (ru_maxrss); fit +MB = rise of that peak "
             "during the fit; load = the machine's 1-minute load average when the entry started (above the CPU "
             "count, other processes were competing and times are inflated accordingly).", "",
             "| method | params | dataset | n | M | time s | CPU s | peak MB | fit +MB | ARI | labels | load | goal | status |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def num(v, fmt):
        try:
            f = float(v)
        except (TypeError, ValueError):
            return ""
        return "" if math.isnan(f) else format(f, fmt)

    for _, r in frame.iterrows():
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r['note']}"
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in (
            r["method"], r["params"], r["dataset"], num(r["n"], ".0f"), num(r["M"], ".0f"), _time_cell(r, num),
            num(r["cpu_s"], ".3f"), num(r["peak_mb"], ".1f"), num(r["fit_delta_mb"], ".1f"), num(r["ari"], ".3f"),
            (r["labels_sha256"][:12] if isinstance(r["labels_sha256"], str) else ""), num(r["load_avg"], ".1f"),
            r["goal"] or "",
            status)) + " |")
    return "\n".join(lines) + "\n"


def _time_cell(row, num) -> str:
    text = num(row["time_s"], ".3f")
    try:
        runs = int(row.get("n_timed"))
    except (TypeError, ValueError):
        return text
    return f"{text} ({runs})" if text and runs > 1 else text


def _child_main() -> None:
    payload = json.loads(sys.stdin.read())
    result = _child(payload["entry"], payload["data_dir"], payload["cache_dir"])
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    if "--child" in sys.argv:
        _child_main()

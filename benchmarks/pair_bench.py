"""Before/after timing of benchmark entries: the code of two source trees, interleaved in one run, same load.

    git archive <before-commit> ensclust | tar -x -C /tmp/before
    python benchmarks/pair_bench.py --before /tmp/before --after . benchmarks/rsec.yaml [more.yaml] \
        [--only rsec-h] [--repeat 1] --out results/bench/rsec_s6/pairs.csv

Every fit runs in a fresh subprocess of this interpreter with ``PYTHONPATH`` = the tree (so ``ensclust`` is
imported from it; both read the pools from the after tree's pool cache), one BLAS thread, ``random_state=0``, the first ``ensemble_size`` members of the entry's pool (the same loading as
``ensclust bench``). For each entry the "before" and "after" fits alternate (before, after, before, ...), so
both see the same machine load. Recorded per fit: CPU time (process time of ``fit_predict``), wall time, peak
RSS of the subprocess (ru_maxrss), ARI against the truth, and a labels hash: SHA-1 of the labels renumbered
in order of first appearance (so equal partitions give equal hashes whatever the label values).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
FIELDS = ["entry", "method", "params", "dataset", "n", "M", "side", "repeat", "cpu_s", "wall_s", "peak_mb",
          "fit_mb", "ari", "n_labels", "labels_hash", "load_avg", "status", "note"]


def child(payload: dict) -> dict:
    import resource

    import numpy as np

    from ensclust.core.labels import relabel
    from ensclust.data import load_dataset
    from ensclust.methods import get_method
    from ensclust.metrics import ari
    from ensclust.pools import get_pool

    def rss_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    e = payload["entry"]
    data_dir = os.environ.get("ENSCLUST_DATA")
    ds = load_dataset(e["dataset"], data_dir=data_dir, preprocess=e.get("preprocess")) if e["dataset"] else None
    spec = {k: v for k, v in e["pool"].items() if k != "first"}
    pool = get_pool(ds, spec, seed=0, data_dir=data_dir, cache_dir=payload["cache_dir"])
    members = np.asarray(pool.members)[:, : e["ensemble_size"]]
    y = pool.y if pool.y is not None else ds.y
    c = e.get("n_clusters") or (ds.n_clusters if ds is not None else int(np.unique(y).size))
    method = get_method(e["method"], **e["params"])
    X = ds.X if (method.needs_features and ds is not None) else None
    before = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    labels = method.fit_predict(members, c, X=X, random_state=0)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    peak = rss_mb()
    lab = relabel(np.asarray(labels))
    return {"n": int(members.shape[0]), "M": int(members.shape[1]), "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "peak_mb": round(peak, 1), "fit_mb": round(max(peak - before, 0.0), 1), "ari": float(ari(y, lab)),
            "n_labels": int(np.unique(lab).size),
            "labels_hash": hashlib.sha1(lab.astype(np.int64).tobytes()).hexdigest()[:12], "status": "ok"}


def run_side(checkout: Path, entry: dict, timeout: float, cache_dir: Path) -> dict:
    env = dict(os.environ)
    env.update({v: "1" for v in THREAD_VARS})
    env["PYTHONPATH"] = str(checkout)
    payload = json.dumps({"entry": entry, "cache_dir": str(cache_dir)})
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child"],
                              input=payload, text=True, capture_output=True, timeout=timeout, env=env, cwd=checkout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "note": f"> {timeout:g} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": "failed", "note": f"exit {proc.returncode}: {err}"[:300]}
    return json.loads(lines[-1])


def main() -> None:
    if "--child" in sys.argv:
        sys.stdout.write(json.dumps(child(json.loads(sys.stdin.read()))) + "\n")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("yaml", nargs="+")
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--only", action="append")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--sides", default="before,after", help="which sides to run, in this order on repeat 0")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    import yaml

    entries = []
    for path in args.yaml:
        for i, e in enumerate(yaml.safe_load(Path(path).read_text())):
            if args.only and e["method"] not in args.only:
                continue
            e.setdefault("params", {})
            e.setdefault("dataset", None)
            e["ensemble_size"] = e.get("ensemble_size", e["pool"].get("first") or e["pool"].get("size") or 20)
            e["_name"] = f"{Path(path).stem}#{i}"
            entries.append(e)
    new = not args.out.exists()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        if new:
            w.writeheader()
        for e in entries:
            checkouts = {"before": args.before, "after": args.after}
            sides = [(side, checkouts[side]) for side in args.sides.split(",")]
            for r in range(args.repeat):
                for side, checkout in (sides if r % 2 == 0 else sides[::-1]):
                    row = {"entry": e["_name"], "method": e["method"], "params": json.dumps(e["params"], sort_keys=True),
                           "dataset": e["dataset"] or Path(str(e["pool"].get("file", ""))).stem, "side": side,
                           "repeat": r, "load_avg": round(os.getloadavg()[0], 2)}
                    row.update(run_side(checkout.resolve(), {k: v for k, v in e.items() if k != "_name"},
                                        args.timeout, args.after.resolve() / "results" / "cache" / "pools"))
                    w.writerow({k: row.get(k, "") for k in FIELDS})
                    fh.flush()
                    print(" ".join(f"{k}={row.get(k, '')}" for k in ("entry", "method", "dataset", "side", "cpu_s",
                                                                      "wall_s", "peak_mb", "ari", "labels_hash",
                                                                      "status", "note")), flush=True)


if __name__ == "__main__":
    main()

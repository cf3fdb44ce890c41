"""Time one ACMK solve (ADMM + final K-means of ACMK-KM) on a pendigits subsample, old vs new code in one run.

Usage (one BLAS thread, one heavy process at a time):

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/acmk_s6/bench_acmk.py \
        --n 1000 2000 --max-iter 50 --code new --code old=/tmp/old_acmk

``--code old=DIR`` imports ``DIR/acmk.py`` and ``DIR/_acmk_ops.py`` (e.g. written with
``git show main:ensclust/methods/acmk.py > DIR/acmk.py``) under a private package name, so both versions
run in the same process on the same data and members. Each (n, code) pair runs in a fresh subprocess, so
that the peak RSS (ru_maxrss) belongs to that solve alone. Prints one JSON line per solve.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import types


def _load_code(spec: str):
    """The ``acmk`` module of the current tree (``new``) or of a folder holding old copies (``old=DIR``)."""
    if spec == "new":
        import ensclust.methods.acmk as mod

        return mod
    name, folder = spec.split("=", 1)
    pkg = f"_acmk_{name}"
    sys.modules[pkg] = types.ModuleType(pkg)
    sys.modules[pkg].__path__ = [folder]
    for sub in ("_acmk_ops", "acmk"):
        src = open(os.path.join(folder, f"{sub}.py")).read()
        src = src.replace("from ensclust.methods._acmk_ops import", f"from {pkg}._acmk_ops import")
        modname = f"{pkg}.{sub}"
        m = types.ModuleType(modname)
        m.__file__ = os.path.join(folder, f"{sub}.py")
        sys.modules[modname] = m
        try:
            exec(compile(src, m.__file__, "exec"), m.__dict__)
        except ValueError as exc:  # re-registration of the method names: not needed for run_acmk
            if "already registered" not in str(exc):
                raise
    return sys.modules[f"{pkg}.acmk"]


def problem(n: int, members: int, seed: int):
    """A stratification-free random subsample of pendigits (raw features) and ``members`` K-means bases."""
    import numpy as np

    from ensclust.data import load_dataset
    from ensclust.pools.generate import generate_members

    ds = load_dataset("pendigits")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(ds.X.shape[0], size=min(n, ds.X.shape[0]), replace=False))
    X = np.asarray(ds.X, dtype=np.float64)[idx]
    y = np.asarray(ds.y)[idx]
    c = int(np.unique(y).size)
    labels, _, _ = generate_members(X, {"generator": "kmeans", "k": "c", "size": members}, n_clusters=c,
                                    seed=seed)
    return X, y, c, labels


def child(args):
    import resource

    import numpy as np

    from ensclust.core.spectral import kmeans_labels
    from ensclust.metrics import ari, nmi

    args.n, args.code = args.n[0], args.code[0]
    X, y, c, labels = problem(args.n, args.members, args.seed)
    mod = _load_code(args.code)
    kw = json.loads(args.params)
    t0, c0 = time.perf_counter(), time.process_time()
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        res = prof.runcall(mod.run_acmk, X, labels[:, :10], max_iter=args.max_iter, **kw)
    else:
        res = mod.run_acmk(X, labels[:, :10], max_iter=args.max_iter, **kw)
    emb = mod.apply_filter(res["W"], res["X"], 3)
    lab = kmeans_labels(emb, c, random_state=np.random.default_rng(0), n_init=10)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    h = res["history"]
    out = {"code": args.code.split("=")[0], "n": args.n, "max_iter": args.max_iter, "params": kw,
           "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
           "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
           "labels_hash": hashlib.sha256(np.ascontiguousarray(lab, dtype=np.int64).tobytes()).hexdigest()[:12],
           "refined_hash": hashlib.sha256(np.ascontiguousarray(res["labels"], dtype=np.int64).tobytes())
           .hexdigest()[:12],
           "ari": round(float(ari(y, lab)), 4), "nmi": round(float(nmi(y, lab)), 4),
           "n_iter": int(res["n_iter"]), "a_iter": sum(h["a_iter"]), "w_iter": sum(h["w_iter"]),
           "objA_last": h["objA"][-1], "r1_last": h["r1"][-1]}
    print(json.dumps(out), flush=True)
    if args.profile:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000])
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-iter", type=int, default=50)
    ap.add_argument("--code", action="append", default=None, help="new, or name=DIR with old acmk.py/_acmk_ops.py")
    ap.add_argument("--params", default="{}", help="JSON dict of extra run_acmk keywords")
    ap.add_argument("--profile", type=int, default=0, help="print the top N cProfile rows")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    for n in args.n:
        for code in args.code or ["new"]:
            cmd = [sys.executable, __file__, "--child", "--n", str(n), "--members", str(args.members),
                   "--seed", str(args.seed), "--max-iter", str(args.max_iter), "--code", code,
                   "--params", args.params, "--profile", str(args.profile)]
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()

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


def floor(n: int, d: int, labels, hist, *, k: int = 3) -> dict:
    """The work no implementation of the spec's iteration can skip, timed with this process's kernels.

    Per ADMM iteration, A-step: every accepted L-BFGS point needs the gradient's (k - 1) products with A^T, and
    the trial points of its line search need (A + tD)^k X: either k products per trial (direct) or, once per
    iteration, the k (k + 1) - 2 blocks of the polynomial in t (then every trial is free); the floor takes the
    cheaper of the two over the solve (from the totals, so it is an upper bound of the per-iteration minimum).
    Every W-step evaluation reads W, A, Lam1, S, V, Lam2 and writes the gradient once (7 n x n array
    touches); S3 and S5 need sym(W) [G_1..G_v] and W [G_1..G_v] (two products with the n x sum c_m indicator
    matrix) and S = B diag(alpha) B^T (one); S4/S6 read/write V, Lam1, Lam2 with W, A, C(W) (~12 touches).
    Returns the kernel times and the floor in CPU seconds for the whole solve.
    """
    import numpy as np

    rng = np.random.default_rng(0)
    M = rng.random((n, n), dtype=np.float32)
    M2 = rng.random((n, n), dtype=np.float32)
    Z = rng.random((n, d), dtype=np.float32)
    ks = labels.max(axis=0) + 1
    Bi = np.zeros((n, int(ks.sum())), dtype=np.float32)

    def t(f, r=3):
        f()
        c = time.process_time()
        for _ in range(r):
            f()
        return (time.process_time() - c) / r

    t_gemm = t(lambda: M @ Z)
    t_touch = t(lambda: np.add(M, M2, out=M)) / 3.0
    t_wide = t(lambda: M @ Bi)
    a_acc = np.array(hist["a_iter"]) + 1
    a_ev = np.array(hist["a_eval"])
    direct = a_ev * k + a_acc * (k - 1)
    poly = a_acc * (k * (k + 1) - 2 + k - 1)
    n_gemm = int(min(direct.sum(), poly.sum()))
    n_touch = int(np.sum(np.array(hist["w_eval"]) * 7 + 12))
    n_wide = 3 * len(hist["a_iter"])
    return {"t_gemm_nd": round(t_gemm, 5), "t_touch": round(t_touch, 5), "t_wide": round(t_wide, 5),
            "floor_gemm_nd": n_gemm, "floor_touch": n_touch, "floor_wide": n_wide,
            "floor_s": round(n_gemm * t_gemm + n_touch * t_touch + n_wide * t_wide, 2),
            "a_eval": int(np.sum(hist["a_eval"])), "w_eval": int(np.sum(hist["w_eval"])),
            "w_iter_max": int(np.max(hist["w_iter"]))}


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
    if "a_eval" in h:
        out.update(floor(args.n, X.shape[1], labels[:, :10], h, k=kw.get("k", 3)))
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

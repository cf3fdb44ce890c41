"""ECPCS-HC / ECPCS-MC: ensclust before (main), ensclust after (this branch) and py-cluster-ensemble ("PCE").

One run, interleaved: for every repetition, data set and method the three implementations run one after the
other (their order rotates with the repetition), each call in a fresh subprocess with one BLAS/OpenMP thread;
CPU s = ``time.process_time`` around the one fit call (fresh estimator), peak MB = the subprocess's
``ru_maxrss`` (interpreter + data + fit). Labels go back through a file; the parent computes the labels hash
(ensclust's ``labels_sha256``: SHA-256 of the int32 labels) and the ARI against the ground truth.
``--floor`` times the dense algebra of the new route alone on each data set's cluster graph: the full eigh of
the K x K walk, the SYRK + 2 GEMMs of the closed form, and the partial eigh of ``ncut_meta``.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /work/main/.venv/bin/python bench.py --reps 5 [--floor]

Environment: ensclust before = ``git archive main ensclust`` extracted to /tmp/ecpcs_before, after =
``git archive ecpcs-s8 ensclust`` extracted to /tmp/ecpcs_after, both with /work/main/.venv; PCE in its own venv /tmp/pce_venv (recipe:
/work/shared/notes/peers.md), torch replaced by stub modules (no consensus function uses it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("ENSCLUST_DATA", "/work/shared/datasets"))
PREPARED = Path(tempfile.gettempdir()) / "ecpcs_s8_pools"
IMPLS = {
    "before": ("/work/main/.venv/bin/python", "/tmp/ecpcs_before"),
    "after": ("/work/main/.venv/bin/python", "/tmp/ecpcs_after"),
    "pce": ("/tmp/pce_venv/bin/python", ""),
}
DATASETS = ("digits", "isolet", "usps")
METHODS = ("ecpcs-mc", "ecpcs-hc")
THREADS = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def prepare():
    """Members (n x 20, 0-based) and ground truth of each data set, saved once for every implementation."""
    PREPARED.mkdir(exist_ok=True)
    from scipy.io import loadmat

    from ensclust.data import load_dataset
    from ensclust.pools import get_pool

    for name in DATASETS:
        out = PREPARED / f"{name}.npz"
        if out.exists():
            continue
        if name == "digits":   # benchmarks/huang.yaml: K-means pool, k in [2, sqrt n], 20 members, seed 0
            ds = load_dataset("digits")
            pool = get_pool(ds, {"generator": "kmeans", "k": [2, "sqrt"], "size": 20}, seed=0, cache_dir=None)
            members, y = np.asarray(pool.members)[:, :20], np.asarray(ds.y)
        else:                  # EC-CMS pools, first 20 members
            m = loadmat(DATA / "pools" / f"eccms_{name}.mat")
            members, y = np.asarray(m["members"])[:, :20], np.asarray(m["gt"]).ravel()
        members = np.asarray(members, dtype=np.int64)
        members = members - members.min(axis=0, keepdims=True)
        np.savez(out, members=members, y=y)


def child(impl, method, name, out):
    """Runs in the subprocess: one fit, CPU time, peak RSS, labels to ``out``."""
    import resource

    d = np.load(PREPARED / f"{name}.npz")
    members, y = d["members"], d["y"]
    c = int(np.unique(y).size)
    if impl == "pce":
        import types

        for mod in ("torch", "torch.nn", "torch.optim", "torch.utils", "torch.utils.data",
                    "torch.utils.tensorboard"):
            sys.modules[mod] = types.ModuleType(mod)
        sys.modules["torch.utils.data"].Dataset = object
        sys.modules["torch.utils.data"].DataLoader = object
        sys.modules["torch.utils.tensorboard"].SummaryWriter = object
        sys.modules["torch.nn"].Module = object
        sys.modules["torch"].Tensor = type("Tensor", (), {})   # SciPy's array-API check looks it up
        import pce

        fn = getattr(pce.consensus, method.replace("-", "_"))
        start = time.process_time()
        labels_list, _ = fn(members, Y=None, nClusters=c, theta=20, nBase=members.shape[1], nRepeat=1)
        cpu = time.process_time() - start
        labels = np.asarray(labels_list[0]).ravel()
    else:
        from ensclust.methods import get_method

        est = get_method(method, t=20)
        start = time.process_time()
        labels = est.fit_predict(members, c, random_state=0)
        cpu = time.process_time() - start
    np.save(out, np.asarray(labels, dtype=np.int64))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"cpu_s": cpu, "peak_mb": peak}))


def floor(name):
    """CPU s of the new route's dense algebra alone on the data set's K x K cluster graph."""
    from scipy import linalg
    from scipy.linalg import get_blas_funcs

    from ensclust.core.labels import check_members
    from ensclust.methods.ecpcs import cluster_jaccard

    d = np.load(PREPARED / f"{name}.npz")
    c = int(np.unique(d["y"]).size)
    J = cluster_jaccard(check_members(d["members"]))
    K = J.shape[0]
    S = J.copy()
    np.fill_diagonal(S, 0)
    dd = S.sum(axis=1)
    A = S / np.sqrt(np.outer(dd, dd))
    t = time.process_time()
    lam, U = np.linalg.eigh(A)
    t_eigh = time.process_time() - t
    t = time.process_time()
    C = get_blas_funcs("syrk", (U,))(1.0, U, trans=1)
    Y = U @ C
    Y @ U.T
    t_gemm = time.process_time() - t
    t = time.process_time()
    linalg.eigh(A, subset_by_index=[K - c, K - 1], check_finite=False)
    t_part = time.process_time() - t
    return {"dataset": name, "K": K, "eigh_s": t_eigh, "syrk_2gemm_s": t_gemm, "partial_eigh_s": t_part}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--impls", nargs="*", default=list(IMPLS))
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--out", default=str(HERE / "runs.jsonl"))
    ap.add_argument("--child", nargs=4, metavar=("IMPL", "METHOD", "DATASET", "OUT"))
    ap.add_argument("--src", action="append", default=[], metavar="IMPL=DIR",
                    help="the folder holding an implementation's ensclust package (e.g. after=/tmp/main_src)")
    a = ap.parse_args()
    for spec in a.src:
        impl, path = spec.split("=", 1)
        IMPLS[impl] = (IMPLS[impl][0], path)
    if a.child:
        child(*a.child)
        return
    from ensclust.experiment.runner import labels_sha256
    from ensclust.metrics import ari

    prepare()
    if a.floor:
        with open(HERE / "floor.jsonl", "w") as f:
            for name in a.datasets:
                rows = [floor(name) for _ in range(3)]
                row = {k: (min(r[k] for r in rows) if k.endswith("_s") else rows[0][k]) for k in rows[0]}
                print(json.dumps(row), flush=True)
                f.write(json.dumps(row) + "\n")
        return
    env = {**os.environ, **THREADS, "ENSCLUST_DATA": str(DATA)}
    with open(a.out, "a") as f:
        for rep in range(a.reps):
            for name in a.datasets:
                y = np.load(PREPARED / f"{name}.npz")["y"]
                for method in a.methods:
                    order = a.impls[rep % len(a.impls):] + a.impls[:rep % len(a.impls)]
                    for impl in order:
                        py, path = IMPLS[impl]
                        lab_file = Path(tempfile.gettempdir()) / f"ecpcs_s8_{impl}.npy"
                        e = {**env, "PYTHONPATH": path} if path else {k: v for k, v in env.items()
                                                                         if k != "PYTHONPATH"}
                        wall = time.perf_counter()
                        p = subprocess.run([py, __file__, "--child", impl, method, name, str(lab_file)],
                                           env=e, capture_output=True, text=True, cwd="/tmp")
                        row = {"rep": rep, "dataset": name, "method": method, "impl": impl,
                               "wall_s": time.perf_counter() - wall}
                        if p.returncode != 0:
                            row["error"] = p.stderr[-500:]
                        else:
                            row.update(json.loads(p.stdout.strip().splitlines()[-1]))
                            labels = np.load(lab_file)
                            row["labels_sha256"] = labels_sha256(labels)
                            row["ari"] = float(ari(y, labels))
                        print(json.dumps(row), flush=True)
                        f.write(json.dumps(row) + "\n")
                        f.flush()


if __name__ == "__main__":
    main()

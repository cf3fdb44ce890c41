"""Per-iteration cost of RSEC (ensclust/methods/rsec.py) against its floor, on an authors' / generated pool.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ENSCLUST_DATA=... python results/bench/rsec_s6/floor.py \
        pools/eccms_ls.mat [n_iter=3] [first=20]     # or: pendigits (the K-means pool of robust_a.yaml)

(Revised with results/bench/rsec_s19: two floors brought up to date, the element-wise 4th power by two squarings
(``power_inplace``; ``** 4`` goes through libm's pow, slow on the near-zero entries) and the top-k eigenvectors
as the fastest of ARPACK, LAPACK's subset solver and the block inverse iteration of
``top_eigenpairs_dense`` from a random start.)

Runs ``n_iter`` iterations of the solver with every stage timed (CPU s, one BLAS thread), then times on the
same sizes the operations any implementation of this ALM on the microclusters has to do per iteration:
(a) the affinity W_z = (P P^T)^{o4} (one N^2 GEMM of inner dimension r_P, the number of kept eigenpairs of
W0, as measured in the run, plus the element-wise power), (b) the top-k eigenvectors of the normalised W_z
(the faster of ARPACK ``eigsh`` and LAPACK's subset solver ``eigh(subset_by_index)``; both are printed), (c) the stopping rule's max |S - SZ - E| (one N^2 GEMM of inner dimension
r = rank S: the residual has S's column space and no smaller form). The SVT of step 1 and the eigenpairs of
W0 are not in the floor (their size depends on the chosen form). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import numpy as np
from scipy import linalg
from scipy.sparse.linalg import eigsh

import ensclust.methods.rsec as R
from ensclust.core.dense import power_inplace
from ensclust.core.labels import check_members
from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import top_eigenpairs_dense
from ensclust.data import load_dataset
from ensclust.pools import get_pool

T = defaultdict(float)
info = defaultdict(list)


def timed(name, fn, note=None):
    def g(*a, **k):
        c0 = time.process_time()
        out = fn(*a, **k)
        T[name] += time.process_time() - c0
        if note:
            note(out, a, k)
        return out
    return g


def main():
    src = sys.argv[1]
    n_iter = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    data_dir = os.environ["ENSCLUST_DATA"]
    if src.endswith(".mat"):
        pool = get_pool(None, {"source": "file", "file": src}, seed=0, data_dir=data_dir,
                        cache_dir="results/cache/pools")
        y = pool.y
    else:
        ds = load_dataset(src, data_dir=data_dir)
        pool = get_pool(ds, {"generator": "kmeans", "k": [2, "sqrt"], "size": first}, seed=0, data_dir=data_dir,
                        cache_dir="results/cache/pools")
        y = ds.y
    members = check_members(np.asarray(pool.members)[:, :first])
    k = int(np.unique(y).size)
    micro = compute_microclusters(members)

    def note_lrr(out, a, kw):
        eig = kw.get("eig")
        vals = eig[0] if eig is not None else np.linalg.eigvalsh(a[0])
        mag = np.abs(vals)
        info["r_P"].append(int((mag > 1e-4 * mag.max()).sum()))

    R.svt_in_span = timed("svt_in_span", R.svt_in_span, lambda o, a, kw: info["R"].append(a[2].shape[1]))
    R._svt_factors = timed("svt_full", R._svt_factors)
    R.eig_in_span = timed("eig_in_span", R.eig_in_span)
    R.lrr_affinity = timed("lrr_affinity(W formation)", R.lrr_affinity, note_lrr)
    R.degree_embedding = timed("degree_embedding(top-k eigh)", R.degree_embedding)
    c0 = time.process_time()
    *_, diag = R.rsec_solve(members, k, lambda1=1.0, lambda2=0.1, max_iter=n_iter, tol=0.0)
    total = time.process_time() - c0
    T.pop("svt_full", None) if T.get("svt_full", 0) == 0 else None

    N = micro.n_micro
    K = int(micro.n_clusters_per_member.sum())
    Bt = micro.indicator().toarray() * np.sqrt(micro.sizes)[:, None]
    r = int(np.linalg.matrix_rank(Bt))
    r_P = int(np.median(info["r_P"]))
    rng = np.random.default_rng(0)
    P = rng.standard_normal((N, r_P))
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    c0 = time.process_time()
    W = power_inplace(P @ P.T, 4)
    t_w = time.process_time() - c0
    del P
    d = 1.0 / np.sqrt(W @ micro.sizes.astype(float))
    L = W * d[:, None] * d[None, :]
    del W
    c0 = time.process_time()
    eigsh(L, k=k, which="LA", v0=rng.standard_normal(N))
    t_arpack = time.process_time() - c0
    c0 = time.process_time()
    linalg.eigh(L, subset_by_index=[N - k, N - 1], check_finite=False)
    t_dense = time.process_time() - c0
    c0 = time.process_time()
    top_eigenpairs_dense(L, k, rng.standard_normal(N))
    t_block = time.process_time() - c0
    t_eig = min(t_arpack, t_dense, t_block)
    del L
    U = np.linalg.qr(rng.standard_normal((N, r)))[0]
    A = rng.standard_normal((r, N))
    c0 = time.process_time()
    float(np.abs(U @ A).max())
    t_res = time.process_time() - c0
    floor = t_w + t_eig + t_res
    per_iter = total / n_iter
    out = {"pool": src, "n": int(members.shape[0]), "n_micro": N, "K": K, "r": r, "k": k, "n_iter_run": n_iter,
           "rank_J": diag["rank_J"], "R_span": info["R"], "r_P": info["r_P"],
           "svt_in_span": diag["svt_in_span"], "eig_in_span": diag["eig_in_span"],
           "cpu_per_iter": round(per_iter, 2), "stages_per_iter": {k2: round(v / n_iter, 2) for k2, v in T.items()},
           "floor_per_iter": {"W=(PP^T)^4": round(t_w, 2), "top-k eigenvectors": round(t_eig, 2),
                              "(arpack, dense subset, block)": [round(t_arpack, 2), round(t_dense, 2),
                                                                    round(t_block, 2)],
                              "residual max": round(t_res, 2), "total": round(floor, 2)},
           "after_over_floor": round(per_iter / floor, 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

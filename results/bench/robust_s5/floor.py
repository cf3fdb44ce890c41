"""Floors of DREC and TRCE on the USPS pool (n = 11000, first 20 members): the operations that any
implementation of the same algorithm has to do, each timed alone in CPU seconds (one BLAS thread).

    OMP_NUM_THREADS=1 ENSCLUST_DATA=... .venv/bin/python results/bench/robust_s5/floor.py

DREC (spec robust_family.md section 2): the K x K eigendecomposition behind X^T X (rank K), the n_micro^2
affinity (P P^T)^4 (one GEMM of inner dimension r plus the element-wise power), the top-c eigenvectors of the
normalised affinity (ARPACK, as in the implementation) and the spec's 100 k-means restarts.
TRCE (section 3): the microcluster blocks are the smallest exact form (n_micro^2 dense values; C has its
union-of-co-clusters support). Per outer iteration: the n_micro^2 embedding distances (GEMM of inner
dimension c and one pass), one pass over the support of C (B = C / (rho dist + theta): a root finder needs at
least this one evaluation), two passes over n_micro^2 for the S-step (v = B - rho/(2 gamma) dist and
max(v - tau, 0)), one log pass and the sparse product with the indicator (KL terms), and one partial
eigensolve (c + 1 smallest eigenpairs of the sparse block Laplacian, shift-invert Lanczos, taken from the
timed fit itself). Times the iteration count of the fit.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
from scipy import sparse

from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import kmeans_labels, spectral_embedding
from ensclust.methods.drec import dense_representation, lrr_affinity
from ensclust.pools import get_pool


def cpu(f, repeat=1):
    best = np.inf
    for _ in range(repeat):
        c0 = time.process_time()
        out = f()
        best = min(best, time.process_time() - c0)
    return best, out


def main():
    data_dir = os.environ["ENSCLUST_DATA"]
    pool = get_pool(None, {"source": "file", "file": "pools/eccms_usps.mat"}, seed=0, data_dir=data_dir,
                    cache_dir="results/cache/pools")
    members = np.asarray(pool.members)[:, :20]
    c = int(np.unique(pool.y).size)
    micro = compute_microclusters(members)
    Xm = micro.indicator()
    nm, K = Xm.shape
    out = {"n": int(members.shape[0]), "n_micro": nm, "K": K, "c": c}

    # --- DREC
    t_eigk, _ = cpu(lambda: np.linalg.eigh((Xm.T @ Xm).toarray()))
    U, R, _ = dense_representation(Xm, 100.0)
    vals = np.linalg.eigvalsh(R @ R.T)
    r = int(np.sum(vals > 1e-8 * vals.max()))
    rng = np.random.default_rng(0)
    P = rng.standard_normal((nm, r))
    P /= np.linalg.norm(P, axis=1, keepdims=True)

    def affinity():
        L = P @ P.T
        np.power(L, 4, out=L)
        return L

    t_aff, _ = cpu(affinity)
    A = lrr_affinity(U, R)
    t_eigs, V = cpu(lambda: spectral_embedding(A, c, random_state=np.random.default_rng(0)))
    t_km, _ = cpu(lambda: kmeans_labels(V, c, random_state=np.random.default_rng(0), n_init=100))
    out["drec"] = {"rank_r": r, "eigh_KxK": t_eigk, "affinity_gemm_power": t_aff, "top_c_eigsh": t_eigs,
                   "kmeans_100": t_km, "floor": t_eigk + t_aff + t_eigs + t_km}

    # --- TRCE (per outer iteration)
    support = (Xm @ Xm.T).tocsr()
    nnz = support.nnz
    F = rng.standard_normal((nm, c)) / np.sqrt(nm)
    sq = np.einsum("ij,ij->i", F, F)

    def distances():
        D = F @ F.T
        D *= -2.0
        D += sq[:, None]
        D += sq[None, :]
        return D

    t_dist, D = cpu(distances)
    B = rng.random((nm, nm))
    t_v, V2 = cpu(lambda: B - 500.0 * D)
    tau = rng.random(nm)
    t_proj, _ = cpu(lambda: np.maximum(V2 - tau[:, None], 0.0))
    cvals = rng.random(nnz)
    a = rng.random(nnz)
    theta = rng.random(nm)
    rows = np.repeat(np.arange(nm), np.diff(support.indptr))
    t_b, bvals = cpu(lambda: cvals / (a + theta[rows]))
    t_kl, _ = cpu(lambda: (sparse.csr_matrix((np.log(bvals), support.indices, support.indptr), shape=(nm, nm))
                           @ Xm))
    per_iter = t_dist + t_b + t_v + t_proj + t_kl
    out["trce"] = {"support_nnz": int(nnz), "support_fraction": nnz / nm ** 2, "distances": t_dist,
                   "b_one_pass_support": t_b, "s_step_two_passes": t_v + t_proj, "kl_log_and_product": t_kl,
                   "per_iteration_without_eigensolve": per_iter}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

"""Attribute each ECPCS-MC label change (label_hashes.py, before vs after) to its cause.

For each changed (pool, seed): max |Z_new - Z_old| (closed-form vs step-by-step propagation), the gap of the
Ncut spectrum after the n_groups-th eigenvalue and the largest eigenvalue multiplicity among the kept ones, and
the labels hash of the six combinations {old Z, old Z summed in GEMM order (a rounding-only control),
new Z} x {full, partial eigh}, so that a change is attributed
to the propagation's rounding or to the eigensolver.
"""
import json
import sys

import numpy as np
import scipy.io as sio

from ensclust.core import pts
from ensclust.core.labels import check_members
from ensclust.core.spectral import discretize
from ensclust.experiment.runner import labels_sha256
from ensclust.methods import ecpcs, get_method
from ensclust.metrics import ari

POOLS = "/work/shared/datasets/pools/"
CASES = [
    ("umist", 4), ("umist", 6), ("umist", 9), ("spf", 2), ("spf", 5), ("caltech20", 0), ("texture", 0)]


def old_propagate(J, T, order="syrk"):
    """The propagation before this change: ``order="syrk"`` is its exact dense branch (P^t = P^{t-1} P by
    GEMM, IP += P^t (P^t)^T by SYRK, upper triangle mirrored); ``order="gemm"`` the same sums with
    ``Pt @ Pt.T`` (only the rounding differs: a control for how rounding alone moves the labels)."""
    from scipy.linalg import get_blas_funcs

    S = np.array(J, dtype=np.float64)
    np.fill_diagonal(S, 0.0)
    row_sum = S.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        P = np.where(row_sum[:, None] > 0, S / row_sum[:, None], 0.0)
    if order == "syrk":
        syrk = get_blas_funcs("syrk", (P,))
        IP = syrk(1.0, P)
        Pt = P
        for _ in range(T - 1):
            Pt = Pt @ P
            IP = syrk(1.0, Pt, beta=1.0, c=IP, overwrite_c=True)
        IP = np.triu(IP)
        IP += np.triu(IP, 1).T
    else:
        Pt, IP = P, P @ P.T
        for _ in range(T - 1):
            Pt = Pt @ P
            IP += Pt @ Pt.T
    iso = P.sum(axis=1) < 1e-9
    Z = pts.trajectory_cosine(IP, isolated=np.zeros(len(P), dtype=bool))
    Z[iso, :] = 0.0
    Z[:, iso] = 0.0
    return Z


def ncut_spectrum(W):
    W = np.array(W, dtype=np.float64)
    W[W < 1e-6] = 0.0
    n = len(W)
    abs_sum = np.abs(W).sum(axis=1)
    W[np.diag_indices(n)] += 0.5 * (abs_sum - W.sum(axis=1)) + 0.5
    dr = 1.0 / np.sqrt(abs_sum + 1.0 + np.finfo(float).eps)
    Pm = W * dr[:, None] * dr[None, :]
    return np.linalg.eigvalsh((Pm + Pm.T) / 2)[::-1]


def full_ncut(W, n_groups, *, random_state=None):
    # ncut_meta with the full decomposition (the code before this change)
    W = np.array(W, dtype=np.float64)
    W[W < 1e-6] = 0.0
    n = W.shape[0]
    abs_sum = np.abs(W).sum(axis=1)
    d = abs_sum + 1.0
    W[np.diag_indices(n)] += 0.5 * (abs_sum - W.sum(axis=1)) + 0.5
    dr = 1.0 / np.sqrt(d + np.finfo(float).eps)
    Pm = W * dr[:, None] * dr[None, :]
    _, vecs = np.linalg.eigh((Pm + Pm.T) / 2.0)
    V = vecs[:, ::-1][:, :n_groups] * dr[:, None]
    V *= np.sqrt(n) / np.linalg.norm(V, axis=0, keepdims=True)
    first = np.sign(V[0])
    V *= np.where(first != 0, -first, 1.0)[None, :]
    return discretize(V, random_state=random_state, max_iter=21)


def run(cases):
    partial_ncut = ecpcs.ncut_meta
    for name, s in cases:
        m = sio.loadmat(POOLS + f"eccms_{name}.mat")
        pool, y = np.asarray(m["members"]), np.asarray(m["gt"]).ravel()
        c = int(np.unique(y).size)
        cols = np.sort(np.random.default_rng(s).choice(pool.shape[1], 10, replace=False))
        members = check_members(pool[:, cols])
        J = ecpcs.cluster_jaccard(members)
        Zn, Zo, Zg = pts.propagate_similarity(J, 20), old_propagate(J, 20), old_propagate(J, 20, "gemm")
        lam = ncut_spectrum(Zn)
        k = min(c, len(J))
        out = {"pool": name, "seed": s, "K": len(J), "max_dZ": float(np.abs(Zn - Zo).max()),
               "max_dZ_control": float(np.abs(Zg - Zo).max()),
               "gap_after_k": float(lam[k - 1] - lam[k]), "min_gap_within_k": float(np.min(-np.diff(lam[:k])))}
        for zname, Z in (("oldZ", Zo), ("oldZ_gemm_order", Zg), ("newZ", Zn)):
            for ename, f in (("full", full_ncut), ("partial", partial_ncut)):
                ecpcs.cluster_similarity = lambda members, n_steps, Z=Z: Z
                ecpcs.ncut_meta = f
                lab = get_method("ecpcs-mc", t=20).fit_predict(members, c, random_state=s)
                out[f"{zname}+{ename}"] = [labels_sha256(lab)[:10], round(float(ari(y, lab)), 4)]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    run([tuple(json.loads(a)) for a in sys.argv[1:]] or CASES)

"""Stage CPU times of a PTA/PTGP fit with the paper's K = T rule, and the floor of such a fit.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ENSCLUST_DATA=... PYTHONPATH=. \
        python results/bench/pts_s7/floor.py pools/eccms_usps.mat [first=20]

Times (CPU s, one BLAS thread) every stage of ``ensclust.core.pts`` as PTA-AL/CL/SL and PTGP run it: the
microclusters, their co-association (MCA), the K-elite graph, the walk (the slow eigenpairs, the exact steps,
the rank-2r update) and the consumers. Then times the operations every implementation of this algorithm has
to do on the same sizes (the floor): microclusters + MCA, the per-row K-th largest selection over the MCA,
the first walk term P P^T, one pass writing the dense n_micro x n_micro similarity (every pair is read by
the linkage), the cosine, and the consumer itself (HAC on n_micro leaves; PTGP's Tcut). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import ensclust.core.pts as pts
from ensclust.core.hierarchy import hac_labels
from ensclust.core.labels import check_members
from ensclust.core.microclusters import compute_microclusters, microcluster_coassociation
from ensclust.core.tcut import tcut
from ensclust.pools import get_pool


def timed(out, name, fn, *a, **kw):
    t = time.process_time()
    r = fn(*a, **kw)
    out[name] = round(time.process_time() - t, 3)
    return r


def main():
    file = sys.argv[1]
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    pool = get_pool(None, {"source": "file", "file": file}, seed=0, data_dir=os.environ.get("ENSCLUST_DATA"),
                    cache_dir="results/cache/pools")
    members = check_members(np.asarray(pool.members)[:, :first])
    c = int(np.unique(pool.y).size)
    st, fl = {}, {}
    micro = timed(st, "microclusters", compute_microclusters, members)
    mca = timed(st, "mca", microcluster_coassociation, micro)
    K, T = pts.default_k_t(micro.n_micro, "paper")
    graph = timed(st, "elite_graph", pts.elite_neighbor_graph, mca, K)
    P, iso = timed(st, "transition", pts.transition_matrix, graph, micro.sizes)
    z = micro.sizes.astype(np.float64)
    stationary = np.asarray(graph @ z).ravel() * z
    dtype = np.float32 if micro.n_micro > pts.AUTO_FLOAT32_ABOVE else np.float64
    info = {"file": file, "n": int(members.shape[0]), "n_micro": int(micro.n_micro), "K": K, "T": T,
            "nnz_P": int(P.nnz), "nnz_per_row": round(P.nnz / micro.n_micro, 1), "dtype": np.dtype(dtype).name}
    split = timed(st, "walk_slow_eigenpairs_and_cross_terms", pts._slow_mode_tail, P, T, stationary,
                  np.finfo(dtype).eps)
    if split is not None:
        info.update({"exact_steps_s": int(split[0]), "eigenpairs_r": int(split[1].shape[1] // 2)})
    Pd = P.astype(dtype)
    G1 = timed(st, "walk_first_term_PPt", lambda: (Pd @ Pd.T).toarray())
    timed(st, "walk_one_exact_step", pts._walk_step, Pd, G1)
    IP = timed(st, "walk_total", pts.trajectory_inner_products, P, T, dtype=dtype, stationary=stationary)
    S = timed(st, "cosine", pts.trajectory_cosine, IP, iso)
    for link in ("average", "complete", "single"):
        timed(st, f"hac_{link}", hac_labels, S, c, linkage=link)
    Bm = micro.indicator()
    counts = np.asarray(Bm.sum(axis=0)).ravel()
    C = timed(st, "ptgp_graph", lambda: np.asarray(Bm.T @ S).T / counts[None, :])
    timed(st, "ptgp_tcut", tcut, C, c, random_state=0)
    # floor: what no implementation of PTS + its consumer can skip at these sizes
    fl["microclusters"] = st["microclusters"]
    fl["mca"] = st["mca"]
    A = np.array(mca, dtype=np.float64)
    pos = micro.n_micro - K
    t = time.process_time()
    np.partition(A, pos, axis=1)
    fl["kth_largest_per_row"] = round(time.process_time() - t, 3)
    del A
    fl["walk_first_term_PPt"] = st["walk_first_term_PPt"]
    t = time.process_time()
    out = np.empty_like(G1)
    np.copyto(out, G1)
    fl["one_dense_pass"] = round(time.process_time() - t, 3)
    fl["cosine"] = st["cosine"]
    for consumer in ("hac_average", "hac_complete", "hac_single"):
        fl[f"total_{consumer}"] = round(sum(v for k, v in fl.items() if not k.startswith("total"))
                                        + st[consumer], 3)
    fl["total_ptgp"] = round(sum(v for k, v in fl.items() if not k.startswith("total"))
                             + st["ptgp_graph"] + st["ptgp_tcut"], 3)
    print(json.dumps({"info": info, "stages_cpu_s": st, "floor_cpu_s": fl, "load_avg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()

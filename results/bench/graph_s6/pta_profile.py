"""Stage CPU times of PTA-AL/CL with the paper's K = T rule on the USPS pool (first 20 members), one BLAS thread.

Usage: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/graph_s6/pta_profile.py
"""
import time

import numpy as np

from ensclust.core import pts as P
from ensclust.core.hierarchy import hac_labels
from ensclust.core.labels import check_members
from ensclust.core.microclusters import compute_microclusters, microcluster_coassociation
from ensclust.pools import get_pool

pool = get_pool(None, {"source": "file", "file": "pools/eccms_usps.mat"}, seed=0, data_dir=None,
                cache_dir="results/cache/pools")
members = check_members(np.asarray(pool.members)[:, :20])
stages = {}


def stage(name, fn, *a, **kw):
    t = time.process_time()
    out = fn(*a, **kw)
    stages[name] = time.process_time() - t
    print(f"{name:28s} {stages[name]:8.2f} s CPU", flush=True)
    return out


mc = stage("microclusters", compute_microclusters, members)
mca = stage("MCA", microcluster_coassociation, mc)
K, T = P.default_k_t(mc.n_micro, "paper")
print(f"n_micro = {mc.n_micro}, K = T = {K}")
g = stage("elite neighbour graph", P.elite_neighbor_graph, mca, K)
print(f"nnz per row of the walk graph: {g.nnz / g.shape[0]:.1f}")
Pm, iso = stage("transition matrix", P.transition_matrix, g, mc.sizes)
IP = stage(f"sum_t P^t P^tT (T={T}, float32)", P.trajectory_inner_products, Pm, T, dtype=np.float32)
S = stage("cosine", P.trajectory_cosine, IP, iso)
stage("HAC average + cut", hac_labels, S, 10, linkage="average")
stage("HAC complete + cut", hac_labels, S, 10, linkage="complete")
print(f"total {sum(stages.values()):.2f} s CPU")

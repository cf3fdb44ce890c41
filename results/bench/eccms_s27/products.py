"""One C-update's products on the twin groups: the dense inverse (before) against the bordered form (after).

For every non-trivial component of H (first 20 members of an EC-CMS pool, given alpha), in the solver's dtype
(float32 above 4000 points): CPU time of S^-1 T with T a random k_b x k block, once with the dense inverse of S,
once with :class:`ensclust.core.spd_inverse.SpdInverse`; the multiply-adds per column of both; the largest
relative difference of the results. Run with one BLAS thread.

    python results/bench/eccms_s27/products.py pools/eccms_usps.mat 0.7
"""

import os
import sys
import time

import numpy as np

from ensclust.core.coassoc import coassociation
from ensclust.core.spd_inverse import SpdInverse, dense_spd_inverse
from ensclust.methods._eccms_solver import high_confidence_matrix, twin_grouping
from ensclust.methods.eccms import AUTO_FLOAT32_ABOVE
from ensclust.pools import get_pool

pool_file, alpha = sys.argv[1], float(sys.argv[2])
pool = get_pool(None, {"source": "file", "file": pool_file}, seed=0, data_dir=os.environ["ENSCLUST_DATA"],
                cache_dir="results/cache/pools")
members = np.asarray(pool.members)[:, :20]
n = members.shape[0]
dtype = np.float32 if n > AUTO_FLOAT32_ABOVE else np.float64
H = high_confidence_matrix(coassociation(members, dtype=np.float64, dense=False), alpha)
grouping = twin_grouping(H)
k = len(grouping.g)
g, deg = grouping.g, grouping.deg
rng = np.random.default_rng(0)
tot_dense = tot_border = cost_dense = cost_border = setup = 0.0
worst = 0.0
for s, e in zip(grouping.bounds[:-1], grouping.bounds[1:], strict=True):
    if e - s < 2:
        continue
    from scipy import sparse
    S = (sparse.diags(g[s:e] * (2.0 * deg[s:e] + 2.0)) - 2.0 * grouping.between[s:e, s:e]).tocsr()
    t0 = time.process_time()
    op = SpdInverse(S)
    setup += time.process_time() - t0
    if op.parts == 1 and e - s < 256:
        continue  # small blocks: the same dense product before and after
    T = rng.standard_normal((e - s, k)).astype(dtype)
    dense = dense_spd_inverse(S.toarray()).astype(dtype)
    t0 = time.process_time()
    ref = dense @ T
    tot_dense += time.process_time() - t0
    op32 = op.astype(dtype)
    t0 = time.process_time()
    out = op32.apply(T)
    tot_border += time.process_time() - t0
    cost_dense += float(e - s) ** 2
    cost_border += op.cost
    worst = max(worst, float(np.abs(out - ref).max() / np.abs(ref).max()))
    print(f"  component of {e - s} groups: {op.parts} parts, border {op.border}, "
          f"cost per column {op.cost / (e - s) ** 2:.3f} of dense", flush=True)
print(f"{pool_file} alpha {alpha}: n {n}, {k} groups, {dtype.__name__}; components of >= 256 groups: dense "
      f"{tot_dense:.2f} s, bordered {tot_border:.2f} s ({tot_dense / max(tot_border, 1e-9):.1f}x), multiply-adds "
      f"{cost_border / max(cost_dense, 1):.3f} of dense, set-up {setup:.2f} s, max rel diff {worst:.1e}")

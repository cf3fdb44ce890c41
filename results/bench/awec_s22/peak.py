"""Peak traced memory (tracemalloc: numpy buffers) per phase of an AWEC solve, in units of n x n float32 arrays."""
import sys, tracemalloc, hashlib, time
import numpy as np
from ensclust.pools import get_pool
from ensclust.methods import awec
n = int(sys.argv[1]); max_iter = int(sys.argv[2])
p = get_pool(None, {'source': 'file', 'file': 'pools/eccms_usps.mat'}, seed=0, data_dir=None, cache_dir='results/cache/pools')
m = np.asarray(p.members)[:, :20]
idx = np.sort(np.random.default_rng(0).choice(m.shape[0], n, replace=False)) if n < m.shape[0] else np.arange(m.shape[0])
m = m[idx]
unit = n * n * 4
phases = []
def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        cur, peak = tracemalloc.get_traced_memory(); tracemalloc.reset_peak()
        phases.append(("  (before " + name + ")", 0, round(peak / unit, 2), 0))
        r = f(*a, **k)
        cur2, peak2 = tracemalloc.get_traced_memory()
        phases.append((name, round(cur / unit, 2), round(peak2 / unit, 2), round(cur2 / unit, 2)))
        tracemalloc.reset_peak()
        return r
    setattr(mod, name, g)
for nm in ("coassociation", "knn_weights", "connection_matrices", "update_Z", "_smallest_eigvecs", "_alpha_update", "solve_awec"):
    wrap(awec, nm)
tracemalloc.start()
params = {k: v.default for k, v in awec._PARAMS.items()}
params.update({"dtype": "float32", "eigensolver": "lobpcg", "lambda": 0.1, "gamma": 50, "max_iter": max_iter})
solve = {k: v for k, v in params.items() if k not in awec._NOT_SOLVE_PARAMS}
t = time.process_time()
out = awec._solve_topology(m.astype(np.int64), 10, solve)
cur, peak = tracemalloc.get_traced_memory()
print("n", n, "cpu", round(time.process_time() - t, 1), "overall peak (n^2 f32 units)", round(peak / unit, 2),
      "S hash", hashlib.sha256(np.ascontiguousarray(out["S"]).tobytes()).hexdigest()[:16])
for ph in phases:
    print("%-22s before %6.2f  peak-in %6.2f  after %6.2f" % ph)

import sys, time, cProfile, pstats, resource, hashlib
import numpy as np
from ensclust.pools import get_pool
from ensclust.methods import get_method
from ensclust.metrics import ari, nmi
n = int(sys.argv[1]); params = eval(sys.argv[2]) if len(sys.argv) > 2 else {"dtype": "float32", "eigensolver": "lobpcg"}
p = get_pool(None, {'source': 'file', 'file': 'pools/eccms_usps.mat'}, seed=0, data_dir=None, cache_dir='results/cache/pools')
m = np.asarray(p.members)[:, :20]; y = np.asarray(p.y)
idx = np.sort(np.random.default_rng(0).choice(m.shape[0], n, replace=False)) if n < m.shape[0] else np.arange(m.shape[0])
m, y = m[idx], y[idx]
est = get_method("awec-h", **params)
pr = cProfile.Profile()
t0, c0 = time.perf_counter(), time.process_time()
pr.enable()
lab = est.fit_predict(m, 10, random_state=0)
pr.disable()
print("n", n, "wall", round(time.perf_counter() - t0, 1), "cpu", round(time.process_time() - c0, 1),
      "peakMB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
      "hash", hashlib.sha256(np.ascontiguousarray(lab, dtype=np.int32).tobytes()).hexdigest()[:16],
      "ari", round(ari(y, lab), 4), "nmi", round(nmi(y, lab), 4), "diag", {k: v for k, v in est.diagnostics_.items() if k != "alpha"})
pstats.Stats(pr).sort_stats("cumulative").print_stats(25)

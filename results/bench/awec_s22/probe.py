"""AWEC on the USPS pool (first 20 members), float32 + LOBPCG, lambda 0.1, gamma 50: peak RSS and CPU of the
solve with max_iter ADMM iterations, and a hash of the learned Z."""
import sys, time, resource, hashlib
import numpy as np
from ensclust.pools import get_pool
from ensclust.methods import awec
max_iter = int(sys.argv[1])
p = get_pool(None, {'source': 'file', 'file': 'pools/eccms_usps.mat'}, seed=0, data_dir=None, cache_dir='results/cache/pools')
m = np.asarray(p.members)[:, :20].astype(np.int64)
params = {k: v.default for k, v in awec._PARAMS.items()}
params.update({"dtype": "float32", "eigensolver": "lobpcg", "lambda": 0.1, "gamma": 50, "max_iter": max_iter})
solve = {k: v for k, v in params.items() if k not in awec._NOT_SOLVE_PARAMS}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.process_time()
out = awec._solve_topology(m, 10, solve)
print("max_iter", max_iter, "cpu_s", round(time.process_time() - t, 1), "peak_rss_mb", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
      "rss_before_mb", round(before), "S", hashlib.sha256(np.ascontiguousarray(out["S"]).tobytes()).hexdigest()[:16], flush=True)

"""cProfile of one rsec_solve on the first 20 members of an EC-CMS pool."""
import cProfile, os, pstats, sys, time, resource
import numpy as np
from ensclust.core.labels import check_members
from ensclust.methods import rsec
from ensclust.pools import get_pool

pool = get_pool(None, {"source": "file", "file": sys.argv[1]}, seed=0, data_dir=os.environ["ENSCLUST_DATA"],
                cache_dir="/tmp/poolcache")
members = check_members(np.asarray(pool.members)[:, :20])
k = int(len(np.unique(pool.y)))
max_iter = int(sys.argv[2]) if len(sys.argv) > 2 else 500
pr = cProfile.Profile()
t0 = time.process_time(); r0 = resource.getrusage(resource.RUSAGE_SELF)
pr.enable()
H, W, Z, V, micro, diag = rsec.rsec_solve(members, k, lambda1=1.0, lambda2=0.1, max_iter=max_iter)
pr.disable()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("N", diag["n_micro"], "iters", diag["n_iter"], "cpu", time.process_time() - t0,
      "user", r1.ru_utime - r0.ru_utime, "sys", r1.ru_stime - r0.ru_stime, "rankJ", diag["rank_J"][-1])
pstats.Stats(pr).sort_stats("tottime").print_stats(25)

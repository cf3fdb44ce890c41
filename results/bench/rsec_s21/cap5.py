import os, sys, numpy as np
from ensclust.core.labels import check_members
from ensclust.methods import rsec
from ensclust.pools import get_pool
pool = get_pool(None, {"source": "file", "file": sys.argv[1]}, seed=0, data_dir=os.environ["ENSCLUST_DATA"], cache_dir="/tmp/poolcache")
members = check_members(np.asarray(pool.members)[:, :20])
k = int(len(np.unique(pool.y)))
want = int(sys.argv[3]); count = [0]
orig = rsec.degree_embedding
def de(W, kk, sizes=None, start=None, **kw):
    count[0] += 1
    if count[0] == want:
        np.savez(f"step5_{sys.argv[2]}_{want}.npz", W=W, sizes=sizes, start=start, k=kk)
        raise SystemExit(0)
    return orig(W, kk, sizes=sizes, start=start, **kw)
rsec.degree_embedding = de
rsec.rsec_solve(members, k, lambda1=1.0, lambda2=0.1)

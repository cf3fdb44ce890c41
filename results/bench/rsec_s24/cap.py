import os, sys, numpy as np
from ensclust.core.labels import check_members
from ensclust.methods import rsec
from ensclust.pools import get_pool
pool = get_pool(None, {"source": "file", "file": sys.argv[1]}, seed=0, data_dir=os.environ["ENSCLUST_DATA"], cache_dir="/tmp/poolcache")
members = check_members(np.asarray(pool.members)[:, :20])
k = int(len(np.unique(pool.y)))
want = int(sys.argv[3]); count = [0]
orig = rsec.core_in_span
def cis(W0, basis, C, Ht, **kw):
    count[0] += 1
    if count[0] == want:
        np.savez(f"state_{sys.argv[2]}_{want}.npz", W0=W0, basis=basis, C=C, Ht=Ht)
        raise SystemExit(0)
    return orig(W0, basis, C, Ht, **kw)
rsec.core_in_span = cis
rsec.rsec_solve(members, k, lambda1=1.0, lambda2=0.1)

import os, sys, numpy as np
from ensclust.core.labels import check_members
from ensclust.methods import rsec
from ensclust.pools import get_pool
pool = get_pool(None, {"source": "file", "file": sys.argv[1]}, seed=0, data_dir=os.environ["ENSCLUST_DATA"], cache_dir="/tmp/poolcache")
members = check_members(np.asarray(pool.members)[:, :20])
k = int(len(np.unique(pool.y)))
want = {int(x) for x in sys.argv[3].split(",")}
count = [0]
orig = rsec.eig_in_span
def eis(W0, basis, C, Ht, **kw):
    count[0] += 1
    if count[0] in want:
        np.savez(f"state_{sys.argv[2]}_{count[0]}.npz", W0=W0, basis=basis, C=C, Ht=Ht)
        if count[0] == max(want): raise SystemExit(0)
    return orig(W0, basis, C, Ht, **kw)
rsec.eig_in_span = eis
rsec.rsec_solve(members, k, lambda1=1.0, lambda2=0.1)

"""Old vs new rsec_solve on the first 20 members of an EC-CMS pool: every output bit for bit, user / system CPU.

    mkdir -p /tmp/oldrsec
    git show <before>:ensclust/methods/rsec.py | sed 's/^@register$//' > /tmp/oldrsec/old_rsec.py
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/rsec_s20/bits.py pools/eccms_fct.mat
"""

import hashlib
import resource
import sys

import numpy as np

from ensclust.core.labels import check_members
from ensclust.methods import rsec as new_rsec
from ensclust.pools import get_pool

sys.path.insert(0, "/tmp/oldrsec")
import old_rsec  # noqa: E402


def digest(a):
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


def main(pool_file):
    pool = get_pool(None, {"source": "file", "file": pool_file}, seed=0, data_dir="/work/shared/datasets",
                    cache_dir="/tmp/poolcache")
    members = check_members(np.asarray(pool.members)[:, :20])
    k = int(len(np.unique(pool.y)))
    out = {}
    for name, module in (("old", old_rsec), ("new", new_rsec)):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        H, W, Z, V, _, diag = module.rsec_solve(members, k, lambda1=1.0, lambda2=0.1)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        out[name] = (digest(H), digest(W), digest(Z), digest(V), diag["n_iter"])
        print(name, out[name], f"user {r1.ru_utime - r0.ru_utime:.1f} sys {r1.ru_stime - r0.ru_stime:.1f}",
              flush=True)
    print("IDENTICAL" if out["old"] == out["new"] else "DIFFERENT")


if __name__ == "__main__":
    main(sys.argv[1])

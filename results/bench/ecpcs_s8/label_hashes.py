"""ECPCS-HC / ECPCS-MC label hashes on several pools and seeds, for one code version (PYTHONPATH decides which).

For seed s: the ensemble is 10 members drawn without replacement from the pool by ``default_rng(s)`` (the
EC-CMS protocol's ensemble size), ECPCS-MC gets ``random_state=s``. The USPS and ISOLET pools use their first
20 members (seed 0 only; the bench setting). Output: one JSON line per fit on stdout.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=<code> ENSCLUST_DATA=/work/shared/datasets \
        python label_hashes.py > hashes_<version>.jsonl
"""
import json
import time

import numpy as np
import scipy.io as sio

from ensclust.data import load_dataset
from ensclust.experiment.runner import labels_sha256
from ensclust.methods import get_method
from ensclust.metrics import ari
from ensclust.pools import get_pool

POOLS = "/work/shared/datasets/pools/"


def pools():
    ds = load_dataset("digits")
    p = get_pool(ds, {"generator": "kmeans", "k": [2, "sqrt"], "size": 20}, seed=0, cache_dir=None)
    yield "digits", np.asarray(p.members), np.asarray(ds.y), range(10), 10
    for name in ("ecoli", "aggregation", "umist", "spf", "caltech20", "texture"):
        m = sio.loadmat(POOLS + f"eccms_{name}.mat")
        yield name, np.asarray(m["members"]), np.asarray(m["gt"]).ravel(), range(10), 10
    for name in ("isolet", "usps"):
        m = sio.loadmat(POOLS + f"eccms_{name}.mat")
        yield name, np.asarray(m["members"])[:, :20], np.asarray(m["gt"]).ravel(), range(1), 20


for name, pool, y, seeds, M in pools():
    c = int(np.unique(y).size)
    for s in seeds:
        cols = np.arange(pool.shape[1]) if M == pool.shape[1] else np.sort(
            np.random.default_rng(s).choice(pool.shape[1], M, replace=False))
        members = pool[:, cols]
        for meth in ("ecpcs-hc", "ecpcs-mc"):
            t0 = time.process_time()
            lab = get_method(meth, t=20).fit_predict(members, c, random_state=s)
            cpu = time.process_time() - t0
            print(json.dumps({"pool": name, "seed": s, "method": meth, "sha": labels_sha256(lab),
                              "ari": float(ari(y, lab)), "cpu_s": round(cpu, 3)}), flush=True)

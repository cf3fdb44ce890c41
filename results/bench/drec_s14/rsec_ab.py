"""RSEC's ALM on an EC-CMS authors' pool (first 20 members) for a few iterations: CPU of the solve and of step 5,
the last residuals, and the labels of k-means on H (a hash).

    PYTHONPATH=<tree> python results/bench/drec_s14/rsec_ab.py ls 12 before|after
"""
import hashlib
import json
import os
import sys
import time

import numpy as np

import ensclust.methods.rsec as rsec
from ensclust.core.labels import relabel
from ensclust.core.spectral import kmeans_labels
from ensclust.data.io import read_arrays

name, iters, side = sys.argv[1], int(sys.argv[2]), sys.argv[3]
arr = read_arrays(os.path.join(os.environ.get("ENSCLUST_DATA", "../shared/datasets"), f"pools/eccms_{name}.mat"))
members = np.asarray(arr["members"])[:, :20].astype(np.int64)
c = int(np.unique(np.asarray(arr["gt"]).ravel()).size)
step5 = [0.0]
real = rsec.degree_embedding


def timed(*args, **kwargs):
    t0 = time.process_time()
    out = real(*args, **kwargs)
    step5[0] += time.process_time() - t0
    return out


rsec.degree_embedding = timed
t0 = time.process_time()
H, W, Z, V, micro, d = rsec.rsec_solve(members, c, lambda1=1.0, lambda2=0.1, max_iter=iters)
cpu = time.process_time() - t0
labels = kmeans_labels(H, c, random_state=np.random.default_rng(0), n_init=10, max_iter=30)
digest = hashlib.sha1(relabel(labels).astype(np.int64).tobytes()).hexdigest()[:12]
print(json.dumps({"side": side, "cpu": round(cpu, 2), "step5_cpu": round(step5[0], 2), "n_iter": d["n_iter"],
                  "N": d["n_micro"], "res_last": d["residual"][-3:], "labels": digest}))

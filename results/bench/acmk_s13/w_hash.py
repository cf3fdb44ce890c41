"""One ACMK solve (run_acmk, lambda 1, k = 3) and the SHA-1 of its float32 consensus graph W, for comparing
two source trees bit for bit (run it once per tree with PYTHONPATH=<tree>).

    PYTHONPATH=<tree> python results/bench/acmk_s13/w_hash.py DATASET PREPROCESS ITERATIONS MEMBERS

Members: MEMBERS K-means runs (k = c, random-sample seeding, seed 0) of the preprocessed data. Prints one JSON
line: CPU / wall seconds of the solve, the W hash, the refined labels' hash and the A-step counts.
"""
import hashlib
import json
import resource
import sys
import time

import numpy as np

from ensclust.data import load_dataset
from ensclust.data.preprocess import preprocess
from ensclust.methods.acmk import run_acmk
from ensclust.pools.generate import generate_members

name, pre, iters, nmem = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ds = load_dataset(name)
X = preprocess(ds.X, pre)
c = len(np.unique(ds.y))
L = np.asarray(generate_members(X, {"generator": "kmeans", "k": "c", "size": nmem, "init": "random"}, n_clusters=c, seed=0)[0])
Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
t = time.process_time()
w = time.perf_counter()
out = run_acmk(Xd, L, lam=1.0, k=3, max_iter=iters)
cpu = time.process_time() - t
h = hashlib.sha1(np.ascontiguousarray(out["W"]).tobytes()).hexdigest()[:12]
hl = hashlib.sha1(np.ascontiguousarray(out["labels"]).tobytes()).hexdigest()[:12] if "labels" in out else "-"
print(json.dumps(dict(data=name, iters=iters, cpu=round(cpu, 2), wall=round(time.perf_counter()-w, 2), W=h, labels=hl,
      a_eval=int(sum(out["history"]["a_eval"])), a_iter=int(sum(out["history"]["a_iter"])),
      peak_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024))))

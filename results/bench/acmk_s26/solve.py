"""One ACMK solve on a Pendigit subsample (the low-rank A-step route: d = 16) and the hashes of what it returns,
for comparing two source trees (run it once per tree with PYTHONPATH=<tree>).

    PYTHONPATH=<tree> python results/bench/acmk_s26/solve.py N SEED ITERATIONS

The subsample: N rows of pendigits drawn with numpy's default_rng(SEED); members: 10 K-means runs (k = c = 10,
seeded by random samples as in acmk_pendigit) of it, seed SEED. lambda = 1, k = 3 (the defaults). Prints one
JSON line: CPU / wall seconds of the solve, SHA-1 of the float32 consensus graph W, of the refined labels and
of the ACMK-KM / ACMK-SC labels (final k-means / NJW with random_state 0), their ACC / NMI, and the A-step's
iteration and evaluation counts.
"""
import hashlib
import json
import resource
import sys
import time

import numpy as np

from ensclust.core.spectral import kmeans_labels, spectral_clustering
from ensclust.data import load_dataset
from ensclust.methods._acmk_ops import apply_filter
from ensclust.methods.acmk import run_acmk
from ensclust.metrics import evaluate
from ensclust.pools.generate import generate_members


def sha(a):
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


n, seed, iters = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ds = load_dataset("pendigits")
rows = np.sort(np.random.default_rng(seed).choice(ds.X.shape[0], n, replace=False))
X, y = np.asarray(ds.X, dtype=np.float64)[rows], np.asarray(ds.y)[rows]
L = np.asarray(generate_members(X, {"generator": "kmeans", "k": "c", "size": 10, "init": "random"}, n_clusters=10,
                                seed=seed)[0])
t, w = time.process_time(), time.perf_counter()
out = run_acmk(X, L, lam=1.0, k=3, max_iter=iters)
cpu, wall = time.process_time() - t, time.perf_counter() - w
km = kmeans_labels(apply_filter(out["W"], out["X"], 3), 10, random_state=0, n_init=10)
sc = spectral_clustering(out["W"], 10, random_state=0, n_init=10)
scores = {name: {m: round(float(v), 6) for m, v in evaluate(y, lab, ["acc", "nmi"]).items()}
          for name, lab in (("km", km), ("sc", sc))}
print(json.dumps(dict(n=n, seed=seed, iters=iters, cpu=round(cpu, 2), wall=round(wall, 2), W=sha(out["W"]),
                      refined=sha(out["labels"]), km=sha(km), sc=sha(sc), scores=scores,
                      a_iter=int(sum(out["history"]["a_iter"])), a_eval=int(sum(out["history"]["a_eval"])),
                      peak_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))))

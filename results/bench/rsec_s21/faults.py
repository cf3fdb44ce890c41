"""Steps 4-5 of an RSEC iteration at USPS size (N = 6719): allocating calls vs caller-owned buffers.

Per call: user / system CPU and minor page faults (getrusage). A fixed rank-300 W0 (its eigenpairs given), so
the first call is the cold block inverse iteration and the next ones warm starts.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/rsec_s21/faults.py 3 alloc
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/rsec_s21/faults.py 3 buffers
"""
import resource
import sys

import numpy as np
from ensclust.methods import rsec
N, r, k, calls = 6719, 300, 10, int(sys.argv[1]) if len(sys.argv) > 1 else 3
rng = np.random.default_rng(0)
vecs, _ = np.linalg.qr(rng.standard_normal((N, r)))
vals = np.abs(rng.standard_normal(r)) + 0.1
sizes = rng.integers(1, 4, N).astype(float)
inv_sq = 1 / np.sqrt(sizes)
def run(buffers):
    out = buf1 = buf2 = None
    if buffers:
        out, buf1, buf2 = (np.empty((N, N)) for _ in range(3))
    V = None
    for _ in range(calls):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        W = rsec.lrr_affinity(None, row_scale=inv_sq, eig=(vals, np.eye(r)), eig_basis=vecs, out=out)
        _, _, V = rsec.degree_embedding(W, k, sizes=sizes, start=V, out=buf1, work=buf2)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        print("buffers" if buffers else "allocating", f"user {r1.ru_utime - r0.ru_utime:.2f} sys {r1.ru_stime - r0.ru_stime:.2f}"
              f" minflt {r1.ru_minflt - r0.ru_minflt}", flush=True)
run(len(sys.argv) > 2 and sys.argv[2] == "buffers")

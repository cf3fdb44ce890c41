"""Cost of the operations of one low-rank A-step iteration at Pendigit's size, timed in one process (one BLAS
thread): a rebuild of B = A0 + c R (three n x n passes), the products of the n x n float32 B with an n x d,
n x 2d and n x 3d block (d = 16) and the thin product P^T B.

    PYTHONPATH=. python results/bench/acmk_s26/units.py N REPEATS
"""
import json
import sys
import time

import numpy as np

from ensclust.methods._acmk_ops import row_blocks

n, repeats = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
A0 = rng.random((n, n), dtype=np.float32)
R = rng.random((n, n), dtype=np.float32)
B = np.empty_like(A0)
Z = {w: rng.random((n, w)).astype(np.float32) for w in (16, 32, 48)}
P = np.ascontiguousarray(rng.random((16, n)).astype(np.float32))


def rebuild():
    c = np.float32(0.7)
    for rows in row_blocks(n):
        np.multiply(R[rows], c, out=B[rows])
        B[rows] += A0[rows]


ops = {"rebuild B (3 passes)": rebuild, "P^T B (16 x n)": lambda: P @ B}
for w, Zw in Z.items():
    ops[f"B @ n x {w}"] = lambda Zw=Zw: B @ Zw
out = {"n": n}
for name, fn in ops.items():
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    out[name] = round(best * 1000, 2)
print(json.dumps(out))

"""RCEC per-iteration cost against its floor at ORL's size (n = 400 objects, K = 1200 base clusters).

The floor: the operations any implementation of the multiplicative update (paper Eq. 5) does per iteration -
H = (X^T X + gamma I)^{-1/2} explicitly (its positive part H^+ is element-wise, so X H^+ needs H itself: a
rank-n symmetric update, n K^2 / 2 multiply-adds, after an eigendecomposition of the n x n Gram X X^T and the
product U^T X that give its factors), the product X H^+ (n K^2) and X H^- = X H^+ - X H, with X H from the same
factors (U diag(l f) U^T X: n^2 K, the cheapest form known of a second product with H). Timed with one BLAS thread in one process
beside the whole iteration (gram_spectrum + rcec_update + objective) of the current code.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/rcec_s20/floor.py > floor.json
"""

import json
import os
import time

import numpy as np
from scipy import linalg

from ensclust.methods.rcec import gram_spectrum, rcec_objective, rcec_update


def best_of(fun, reps=7):
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        fun()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def main(n=400, m=30, c=40, lam=0.1, gamma=0.01, beta=4.0):
    rng = np.random.default_rng(0)
    K = m * c
    L = np.zeros((n, K))
    for j in range(m):
        L[np.arange(n), j * c + rng.integers(0, c, n)] = 1.0
    X = rng.uniform(1e-3, 1.0, (n, K))
    G = X @ X.T
    lam_g, U = linalg.eigh(G, check_finite=False)
    M = U.T @ X
    F = np.sqrt(lam_g.clip(0) + 1.0)[:, None] * M
    H_pos = np.maximum(F.T @ F, 0.0)
    floor = {
        "X X^T (syrk)": best_of(lambda: X @ X.T),
        "eigh n x n": best_of(lambda: linalg.eigh(G, check_finite=False)),
        "U^T X": best_of(lambda: U.T @ X),
        "H = F^T F (syrk)": best_of(lambda: F.T @ F),
        "X H^+": best_of(lambda: X @ H_pos),
        "X H = U (l f) M": best_of(lambda: U @ M),
    }

    def iteration():
        H, XH, s = gram_spectrum(X, gamma)
        rcec_update(L, X, lam, gamma, beta, H=H, XH=XH)
        rcec_objective(L, X, lam, gamma, beta, s=s)

    whole = best_of(iteration)
    total = sum(floor.values())
    out = {"n": n, "K": K, "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
           "load_avg": os.getloadavg()[0], "floor_s": {k: round(v, 4) for k, v in floor.items()},
           "floor_total_s": round(total, 4), "iteration_s": round(whole, 4),
           "iteration_over_floor": round(whole / total, 2)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

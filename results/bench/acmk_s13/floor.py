"""The GEMM floor of ACMK's dense A-step, measured in the same process as one solve (issue #21).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/acmk_s13/floor.py tr11:tfidf_log tr12:tfidf_log \\
        yale:l2 orlraws10p:l2 tr31:none:20

Per data set: one run_acmk solve (10 K-means members, k = c, random-sample seeding for the text sets, lambda 1,
k = 3; the ADMM iterations given, default 50) and its A-step counts; then one n x n by n x d float32 product
timed (median of 20) in the same process. The A-step's floor is what any implementation of this L-BFGS must
multiply: the value at every trial needs A^k X (k products), the gradient at every accepted point the k - 1
products A^T Q and the n x kd by kd x n outer product (k products' flops): n_eval k + n_grad (2k - 1) products.
Prints one JSON line per data set.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from ensclust.data import load_dataset
from ensclust.data.preprocess import preprocess
from ensclust.methods.acmk import compress_features, run_acmk
from ensclust.pools.generate import generate_members


def main(specs):
    for spec in specs:
        name, pre, *rest = spec.split(":")
        iters = int(rest[0]) if rest else 50
        ds = load_dataset(name)
        X = preprocess(ds.X, pre)
        c = len(np.unique(ds.y))
        init = "random" if name.startswith("tr") else "k-means++"
        members = generate_members(X, {"generator": "kmeans", "k": "c", "size": 10, "init": init},
                                   n_clusters=c, seed=0)[0]
        Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
        k = 3
        t0 = time.process_time()
        out = run_acmk(Xd, np.asarray(members), lam=1.0, k=k, max_iter=iters)
        fit_cpu = time.process_time() - t0
        h = out["history"]
        n_eval, n_iter = int(sum(h["a_eval"])), int(sum(h["a_iter"]))
        n_grad = n_iter + len(h["a_eval"])  # the start of every A-step and each accepted point
        Xc = compress_features(Xd).astype(np.float32)
        n, d = Xc.shape
        A = np.random.default_rng(0).random((n, n), dtype=np.float32)
        times = []
        for _ in range(20):
            t = time.process_time()
            A @ Xc
            times.append(time.process_time() - t)
        t_gemm = float(np.median(times))
        products = n_eval * k + n_grad * (2 * k - 1)
        print(json.dumps(dict(data=name, n=n, d=d, iters=len(h["a_eval"]), fit_cpu_s=round(fit_cpu, 2),
                              a_eval=n_eval, a_grad=n_grad, products=products, t_product_ms=round(t_gemm * 1e3, 3),
                              a_step_floor_s=round(products * t_gemm, 2),
                              fit_over_floor=round(fit_cpu / (products * t_gemm), 2))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

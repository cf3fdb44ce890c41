"""Floors of SCCBG and CESHL on one pool (issue #21): the operations any implementation of the same iteration
performs, timed on this machine (run with one BLAS thread).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/robust_s7/floor.py POOL [--ceshl-fit]

POOL is ``digits`` / ``pendigits`` (the K-means pool of the benchmark entries) or ``ls`` / ``usps`` (the EC-CMS
pools, first 20 members). Prints one JSON object.

SCCBG: every FISTA iteration multiplies the iterate (n_micro x K) by the K x K matrix A: three products in the
W-step (X A, (X o S) A, (X o S^2) A: three different linear maps of X) and one in the S-step ((W o S) A, W
fixed). The time of one such product on the microcluster rows is measured; with the iteration counts of a fit
(``qp_iterations``) it gives the fit's floor, and with the first outer iteration alone (a W-step and an S-step
at the 300-iteration cap, as measured on digits) a lower bound for any fit.

CESHL (``--ceshl-fit``): one fit of the current code with every stage timed: SciPy's L-BFGS-B outside the
objective (its own work per iteration over the n_micro K variables), the objective and gradient, the
eigen-steps. The floor is L-BFGS-B's own work plus one objective evaluation per L-BFGS-B evaluation plus the
eigen-steps: the same iteration cannot skip any of them.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np


def load(name, M=20):
    from ensclust.data import load_dataset
    from ensclust.pools import get_pool

    data_dir = os.environ.get("ENSCLUST_DATA", "/work/shared/datasets")
    if name in ("digits", "pendigits"):
        ds = load_dataset(name, data_dir=data_dir)
        pool = get_pool(ds, {"generator": "kmeans", "k": [2, "sqrt"], "size": 20}, seed=0, data_dir=data_dir,
                        cache_dir="results/cache/pools")
        y, c = ds.y, ds.n_clusters
    else:
        pool = get_pool(None, {"source": "file", "file": f"pools/eccms_{name}.mat"}, seed=0, data_dir=data_dir,
                        cache_dir="results/cache/pools")
        y = pool.y
        c = int(np.unique(y).size)
    return np.asarray(pool.members)[:, :M], c


def timed(f, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t = time.process_time()
        f()
        best = min(best, time.process_time() - t)
    return best


def main():
    from ensclust.core.labels import check_members
    from ensclust.core.microclusters import compute_microclusters

    name = sys.argv[1]
    members, c = load(name)
    members = check_members(members)
    micro = compute_microclusters(members)
    H0 = micro.indicator().toarray()
    sizes = micro.sizes.astype(float)
    A = H0.T @ (H0 * sizes[:, None])
    n_micro, K = H0.shape
    X = np.random.default_rng(0).random(H0.shape)
    t_gemm = timed(lambda: X @ A)
    out = {"pool": name, "n": int(members.shape[0]), "n_micro": n_micro, "K": K, "c": c,
           "sccbg_product_s": round(t_gemm, 4),
           "sccbg_fista_iteration_floor_s": {"w_step": round(3 * t_gemm, 4), "s_step": round(t_gemm, 4)},
           "sccbg_first_outer_iteration_floor_s": round(300 * 4 * t_gemm, 1)}
    if "--ceshl-fit" in sys.argv:
        from scipy import optimize

        import ensclust.methods.ceshl as cm
        from ensclust.methods import get_method

        T = {"objective_s": 0.0, "objective_in_lbfgsb_s": 0.0, "lbfgsb_total_s": 0.0, "eigen_s": 0.0, "n_eval": 0,
             "n_lbfgsb_iter": 0}
        inside = [False]
        o_obj, o_eig, o_min = cm.structure_objective, cm.laplacian_smallest_weighted, optimize.minimize

        def obj(*a, **k):
            t = time.process_time()
            r = o_obj(*a, **k)
            T["objective_s"] += time.process_time() - t
            T["objective_in_lbfgsb_s"] += (time.process_time() - t) if inside[0] else 0.0
            T["n_eval"] += 1
            return r

        def eig(*a, **k):
            t = time.process_time()
            r = o_eig(*a, **k)
            T["eigen_s"] += time.process_time() - t
            return r

        def mini(*a, **k):
            t = time.process_time()
            inside[0] = True
            r = o_min(*a, **k)
            inside[0] = False
            T["lbfgsb_total_s"] += time.process_time() - t
            T["n_lbfgsb_iter"] += int(r.nit)
            return r

        cm.structure_objective, cm.laplacian_smallest_weighted, cm.optimize.minimize = obj, eig, mini
        t = time.process_time()
        meth = get_method("ceshl", **{"lambda": 1.0})
        meth.fit_predict(members, c, random_state=0)
        total = time.process_time() - t
        cm.optimize.minimize = o_min
        own = T["lbfgsb_total_s"] - T["objective_in_lbfgsb_s"]   # L-BFGS-B's own work
        T.update({"fit_s": round(total, 2), "lbfgsb_own_s": round(own, 2), "n_outer": meth.diagnostics_["n_iter"],
                  "floor_s": round(own + T["objective_in_lbfgsb_s"] + T["eigen_s"], 2)})
        out["ceshl"] = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in T.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

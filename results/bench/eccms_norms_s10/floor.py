"""The floor of one EC-CMS fit with the group ADMM: the operations no implementation of this algorithm skips.

    ENSCLUST_DATA=... OMP_NUM_THREADS=1 python results/bench/eccms_norms_s10/floor.py ls [texture ...] > floor.jsonl
    python results/bench/eccms_norms_s10/floor.py --table floor.jsonl

Per data set (authors' pool, first 20 members, alpha 0.8, lambda 0.4, dtype auto), one BLAS thread:
* set-up: the LWCA matrix and the high-confidence graph H (each n x n entry is formed once);
* iterations: per ADMM iteration, the C-update's product ``S_b^-1 T[rows of b]`` for every component b
  (2 b^2 k flops, k = number of twin groups), timed alone, plus the memory traffic of updating the iterates
  once (C written, E, F, Y1, Y2 each read and written with A read: ``X += A`` on k x k arrays), times the
  fit's iteration count;
* HAC: average linkage on the n x n consensus matrix (scipy's O(n^2) pass; the labels need it);
and the whole fit, timed in the same process, for the ratio fit / floor.
"""

import json
import sys
import time

import numpy as np

from ensclust.core.coassoc import coassociation
from ensclust.core.hierarchy import hac_labels
from ensclust.core.lwca import lwca_matrix
from ensclust.methods import get_method
from ensclust.methods._eccms_solver import group_inverses, high_confidence_matrix, twin_grouping
from ensclust.methods.eccms import AUTO_FLOAT32_ABOVE, condensed_from_asymmetric
from ensclust.pools import get_pool


def cpu(f):
    t = time.process_time()
    out = f()
    return time.process_time() - t, out


def floor(name: str) -> dict:
    pool = get_pool(None, {"source": "file", "file": f"pools/eccms_{name}.mat"}, seed=0)
    members = np.asarray(pool.members)[:, :20]
    c = int(np.unique(pool.y).size)
    n = members.shape[0]
    dtype = np.dtype("float32" if n > AUTO_FLOAT32_ABOVE else "float64")
    fit_s, method = cpu(lambda: get_method("eccms", alpha=0.8, **{"lambda": 0.4}).fit(members, c, random_state=0))
    n_iter = method.diagnostics_["n_iter"]
    C = method.consensus_matrix_
    t_lwca, _ = cpu(lambda: lwca_matrix(members, 0.4, dtype=dtype))
    t_h, H = cpu(lambda: high_confidence_matrix(coassociation(members, dtype=np.float64, dense=False), 0.8))
    grouping = twin_grouping(H)
    blocks, _ = group_inverses(grouping, 1.0, 1.0)
    k = len(grouping.g)
    T = np.random.default_rng(0).standard_normal((k, k)).astype(dtype)
    invs = [(s, e, np.asarray(inv, dtype=dtype)) for s, e, inv in blocks if e - s > 1]
    out = np.empty_like(T)

    def gemms():
        for s, e, inv in invs:
            np.matmul(inv, T[s:e], out=out[s:e])

    t_gemm = min(cpu(gemms)[0] for _ in range(3))
    A = np.ones((k, k), dtype=dtype)
    state = [np.zeros((k, k), dtype=dtype) for _ in range(5)]

    def traffic():
        np.copyto(state[0], A)
        for X in state[1:]:
            X += A

    t_traffic = min(cpu(traffic)[0] for _ in range(3))
    t_hac, _ = cpu(lambda: hac_labels(distance=condensed_from_asymmetric(C, "lower"), n_clusters=c, linkage="average"))
    total = t_lwca + t_h + n_iter * (t_gemm + t_traffic) + t_hac
    return {"dataset": name, "n": n, "k": k, "n_iter": n_iter, "dtype": str(dtype), "fit_cpu_s": round(fit_s, 2),
            "lwca_s": round(t_lwca, 2), "h_s": round(t_h, 2), "gemm_per_iter_s": round(t_gemm, 4),
            "gemm_s": round(n_iter * t_gemm, 2),
            "traffic_per_iter_s": round(t_traffic, 4), "traffic_s": round(n_iter * t_traffic, 2), "hac_s": round(t_hac, 2), "floor_s": round(total, 2),
            "fit_over_floor": round(fit_s / total, 2)}


def table(path: str) -> str:
    """Markdown table of a floor.jsonl."""
    lines = ["| data set | n | k | iterations | dtype | fit CPU s | set-up s | GEMMs s | iterate traffic s | HAC s | "
             "floor s | fit / floor |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in map(json.loads, open(path)):
        lines.append(f"| {row['dataset']} | {row['n']} | {row['k']} | {row['n_iter']} | {row['dtype']} | "
                     f"{row['fit_cpu_s']} | {row['lwca_s'] + row['h_s']:.2f} | {row['gemm_s']} | "
                     f"{row['traffic_s']} | {row['hac_s']} | {row['floor_s']} | {row['fit_over_floor']}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print(table(sys.argv[2]))
    for arg in sys.argv[1:] if sys.argv[1] != "--table" else []:
        print(json.dumps(floor(arg)), flush=True)

"""Where one CESHL fit spends its CPU time now (issue #21 floor): the compiled L-BFGS-B steps (setulb), the
objective / gradient evaluations, the eigen-steps, and the rest. Same pool as entries.yaml (first 20 members of
the generated pool, random_state 0). Run with one BLAS thread:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python results/bench/lbfgsb_s11/breakdown.py binalpha
"""

import json
import sys
import time

import numpy as np

import ensclust.core.lbfgsb as lb
import ensclust.methods.ceshl as ceshl
from ensclust.data import load_dataset
from ensclust.methods import get_method
from ensclust.pools import get_pool

spent = {"setulb": 0.0, "objective": 0.0, "eigen_step": 0.0}
calls = {"setulb": 0, "objective": 0, "eigen_step": 0}


def timed(key, fn):
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[key] += time.process_time() - start
            calls[key] += 1
    return wrapper


class _TimedSetulb:        # the compiled module's attribute is read at each call
    setulb = staticmethod(timed("setulb", lb._lbfgsb.setulb))


lb._lbfgsb = _TimedSetulb
ceshl.structure_objective = timed("objective", ceshl.structure_objective)
ceshl.laplacian_smallest_weighted = timed("eigen_step", ceshl.laplacian_smallest_weighted)

name = sys.argv[1] if len(sys.argv) > 1 else "binalpha"
ds = load_dataset(name)
pool = get_pool(ds, {"generator": "kmeans", "k": [2, "sqrt"], "size": 20}, seed=0)
members = np.asarray(pool.members)[:, :20]
method = get_method("ceshl", **{"lambda": 1.0})
start = time.process_time()
method.fit_predict(members, ds.n_clusters, random_state=0)
total = time.process_time() - start
d = method.diagnostics_
rest = total - sum(spent.values())
print(json.dumps({"dataset": name, "n": int(members.shape[0]), "n_micro": d["n_microclusters"],
                  "K": int(sum(len(np.unique(members[:, j])) for j in range(members.shape[1]))),
                  "outer_iterations": d["n_iter"], "total_cpu_s": round(total, 2),
                  **{f"{k}_cpu_s": round(v, 2) for k, v in spent.items()}, "rest_cpu_s": round(rest, 2),
                  **{f"{k}_calls": v for k, v in calls.items()}}))

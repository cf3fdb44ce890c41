"""CPU time of TRCE's stages on the USPS pool (first 20 members), gamma = 1: where one fit's time goes.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/trce_s12/breakdown.py \
        > results/bench/trce_s12/breakdown.json
    # the stages of the blocked S-step (results/bench/trce_s17); "project_simplex_weighted" runs inside "_s_step"
    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/trce_s12/breakdown.py \
        laplacian_smallest_weighted kl_to_graph _distances_at solve_b_rows _s_step project_simplex_weighted \
        > results/bench/trce_s17/breakdown_after.json

Every stage function of ensclust.methods.trce named on the command line (default: the stages of the code this
folder measured) and the SuperLU factorisation inside the eigen-step are wrapped with a process-time counter;
the rest of the fit (the updates of the loop body) is the remainder. User and system time of the process are
reported beside it (page faults of large temporaries show as system time).
"""
import json
import os
import resource
import sys
import time

import numpy as np

import ensclust.methods._robust_graph as rg
import ensclust.methods.trce as trce
from ensclust.data.io import read_arrays
from ensclust.methods import get_method

STAGES = sys.argv[1:] or ["laplacian_smallest_weighted", "project_simplex_weighted", "solve_b_rows",
                          "squared_distances", "kl_to_graph"]
NESTED = {"sparse LU factor (in the eigen-step)", "project_simplex_weighted" if "_s_step" in STAGES else ""}
totals: dict[str, list] = {}


def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        out = fn(*args, **kwargs)
        rec = totals.setdefault(name, [0.0, 0])
        rec[0] += time.process_time() - t0
        rec[1] += 1
        return out
    return wrapper


rg.splu = timed("sparse LU factor (in the eigen-step)", rg.splu)
for name in STAGES:
    setattr(trce, name, timed(name, getattr(trce, name)))
pool = read_arrays("/work/shared/datasets/pools/eccms_usps.mat")
members = np.asarray(pool["members"])[:, :20].astype(np.int64)
est = get_method("trce", gamma=1.0)
t0 = time.process_time()
est.fit_predict(members, 10, random_state=0)
total = time.process_time() - t0
staged = sum(v[0] for k, v in totals.items() if k not in NESTED)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"fit_cpu_s": round(total, 2), "n_micro": est.diagnostics_["n_micro"],
                  "iterations": est.diagnostics_["n_iter"],
                  "stages": {k: {"cpu_s": round(v[0], 2), "calls": v[1]} for k, v in totals.items()},
                  "rest_of_loop_cpu_s": round(total - staged, 2),
                  "process_user_s": round(usage.ru_utime, 2), "process_system_s": round(usage.ru_stime, 2),
                  "load_avg": [round(x, 2) for x in os.getloadavg()]}, indent=1))

"""Before/after in one process: the pre-refactor SPCE (a copy of main's three modules, package spce_old) and
the worktree's SPCE on the same members; CPU time (median of repeats while < 1 s, at most 7) and label hash."""
import hashlib, json, sys, time
import numpy as np
import spce_old.spce as OLD
from ensclust.methods import get_method

def h(labels):
    return hashlib.sha256(np.ascontiguousarray(labels, dtype=np.int64).tobytes()).hexdigest()[:12]

def run(make, d):
    cpus, walls = [], []
    while True:
        m = make()
        t0, w0 = time.process_time(), time.perf_counter()
        labels = m.fit_predict(d["members"], int(d["c"]), random_state=0)
        cpus.append(time.process_time() - t0); walls.append(time.perf_counter() - w0)
        if sum(cpus) > 1.0 or len(cpus) >= 7:
            return float(np.median(cpus)), float(np.median(walls)), h(labels), m

names = sys.argv[1].split(",")
order = sys.argv[2].split(",") if len(sys.argv) > 2 else ["old", "new"]
for name in names:
    d = np.load(f"/tmp/spce6/{name}.npz")
    theta = float(d["theta"])
    row = {"entry": name}
    for which in order:
        OLD._StageTerms.prune = which != "old_noprune"
        make = (lambda: OLD.SPCE(theta=theta)) if which.startswith("old") else (lambda: get_method("spce", theta=theta))
        cpu, wall, hh, m = run(make, d)
        row[which] = {"cpu": cpu, "wall": wall, "hash": hh, "n_iter": m.diagnostics_["n_iter"]}
    print(json.dumps(row), flush=True)

"""Instrumented SPCE fit: CPU per stage, LOBPCG iteration counts. usage: prof.py name theta [M] [method]"""
import sys, time, json, hashlib, resource, numpy as np
import scipy.sparse.linalg as sla
from ensclust.methods import get_method
import ensclust.methods.spce as sp
import ensclust.methods._spce_spectrum as ss
from ensclust.core.labels import relabel
from ensclust.metrics import ari
name, theta = sys.argv[1], float(sys.argv[2])
M = int(sys.argv[3]) if len(sys.argv) > 3 else 20
meth = sys.argv[4] if len(sys.argv) > 4 else "spce"
d = np.load(f"/tmp/spce7/{name}.npz")
members, y, c = d["members"][:, :M], d["y"], int(d["c"])
T = {}
def wrap(mod, fn, key=None):
    f = getattr(mod, fn); key = key or fn
    def g(*a, **k):
        t = time.process_time()
        try: return f(*a, **k)
        finally: T[key] = T.get(key, 0) + time.process_time() - t
    setattr(mod, fn, g)
LOB = []
orig_lob = ss.lobpcg
def lob(A, X, **k):
    t = time.process_time()
    out = orig_lob(A, X, retResidualNormsHistory=True, **k)
    vals, vecs, hist = out
    LOB.append((A.shape[0], X.shape[1], getattr(A, "nnz", -1), len(hist), round(time.process_time() - t, 3)))
    print("lobpcg", LOB[-1], {k: round(v, 1) for k, v in T.items()}, round(time.process_time(), 1), file=sys.stderr, flush=True)
    return vals, vecs
ss.lobpcg = lob
for mod, fn in [(sp, "build_pair_table"), (sp, "upper_matrix"), (sp, "connected_components"),
                (sp, "smallest_eigenpairs"), (sp, "indicator_spectrum"), (sp, "member_losses"),
                (sp._Stage, "s_update"), (ss.Embedding, "sqdist"), (ss, "_component_eigenpairs"), (ss.scipy.linalg, "eigh")]:
    wrap(mod, fn)
t0 = time.process_time()
m = get_method(meth, theta=theta)
labels = m.fit_predict(members, c, random_state=0)
cpu = time.process_time() - t0
lab = relabel(np.asarray(labels))
dg = m.diagnostics_
out = {"name": name, "theta": theta, "method": meth, "cpu": round(cpu, 2), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "hash": hashlib.sha1(lab.astype(np.int64).tobytes()).hexdigest()[:12], "ari": ari(y, lab),
       "stages": {k: round(v, 2) for k, v in T.items()}, "n_iter": dg["n_iter"], "n_free": dg["n_free_pairs"],
       "n_ones": dg["n_fixed_one_pairs"], "n_patterns": dg["n_patterns"], "comps": dg["n_components_trace"], "branch": dg["branch"],
       "lobpcg_calls": dg["lobpcg_calls"], "lobpcg_nc": dg["lobpcg_not_converged"], "lob": LOB}
print(json.dumps(out))

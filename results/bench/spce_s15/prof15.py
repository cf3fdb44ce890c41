"""Instrumented SPCE fit (microcluster code): CPU per stage. usage: prof15.py name theta [method]"""
import sys, time, json, numpy as np
import scipy.linalg
from ensclust.methods import get_method
import ensclust.methods.spce as sp
import ensclust.methods._spce_spectrum as ss
name, theta = sys.argv[1], float(sys.argv[2])
meth = sys.argv[3] if len(sys.argv) > 3 else "spce"
d = np.load(f"/tmp/spce7/{name}.npz")
members, y, c = d["members"][:, :20], d["y"], int(d["c"])
T = {}; N = {}
def wrap(mod, fn, key=None):
    f = getattr(mod, fn); key = key or fn
    def g(*a, **k):
        t = time.process_time()
        try: return f(*a, **k)
        finally:
            T[key] = T.get(key, 0) + time.process_time() - t; N[key] = N.get(key, 0) + 1
    setattr(mod, fn, g)
for mod, fn in [(sp, "build_pair_table"), (sp, "compute_microclusters"), (sp, "upper_matrix"), (sp, "connected_components"),
                (sp, "smallest_eigenpairs"), (sp, "indicator_spectrum"), (sp, "member_losses"),
                (sp._Stage, "s_update"), (ss.Embedding, "sqdist"), (ss.scipy.linalg, "eigh"), (ss, "_lobpcg_quiet")]:
    wrap(mod, fn)
t0 = time.process_time()
m = get_method(meth, theta=theta)
labels = m.fit_predict(members, c, random_state=0)
cpu = time.process_time() - t0
dg = m.diagnostics_
print(json.dumps({"name": name, "theta": theta, "cpu": round(cpu, 2), "n_micro": dg["n_micro"], "n_iter": dg["n_iter"],
                  "within_partial": dg["within_group_partial"],
                  "stages": {k: [round(v, 2), N[k]] for k, v in T.items()}}))

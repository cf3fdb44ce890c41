"""One SPCE fit on a dumped pool: CPU, peak, labels hash, scores. usage: fit1.py name theta [method] [M]"""
import sys, time, json, hashlib, resource, numpy as np
from ensclust.methods import get_method
from ensclust.core.labels import relabel
from ensclust.metrics import ari, nmi
name, theta = sys.argv[1], float(sys.argv[2])
meth = sys.argv[3] if len(sys.argv) > 3 else "spce"
M = int(sys.argv[4]) if len(sys.argv) > 4 else 20
d = np.load(f"/tmp/spce7/{name}.npz")
members, y, c = d["members"][:, :M], d["y"], int(d["c"])
t0 = time.process_time(); w0 = time.time()
m = get_method(meth, theta=theta)
labels = m.fit_predict(members, c, random_state=0)
cpu = time.process_time() - t0
lab = relabel(np.asarray(labels))
dg = m.diagnostics_
print(json.dumps({"name": name, "theta": theta, "method": meth, "cpu": round(cpu, 2), "wall": round(time.time() - w0, 2),
    "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "hash": hashlib.sha1(lab.astype(np.int64).tobytes()).hexdigest()[:12],
    "ari": round(ari(y, lab), 4), "nmi": round(nmi(y, lab), 4), "k": int(lab.max() + 1), "n_iter": dg["n_iter"], "lobpcg": dg["lobpcg_calls"], "rho": dg["rho_final"]}))

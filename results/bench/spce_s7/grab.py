"""Save the LOBPCG problems (component S, q, warm start) of a fit: grab.py name theta calls..."""
import sys, pickle, numpy as np
import ensclust.methods._spce_spectrum as ss
from ensclust.methods import get_method
name, theta = sys.argv[1], float(sys.argv[2]); want = set(map(int, sys.argv[3:]))
d = np.load(f"/tmp/spce7/{name}.npz"); members, c = d["members"][:, :20], int(d["c"])
orig = ss._component_eigenpairs; n_call = [0]
def g(S_sym, idx, q, warm, seed, dl, tol, mi, factor=None):
    out = orig(S_sym, idx, q, warm, seed, dl, tol, mi, factor=factor)
    sub = S_sym if idx is None else S_sym[idx][:, idx]
    if sub.shape[0] > dl:
        n_call[0] += 1
        if n_call[0] in want:
            pickle.dump(dict(sub=sub, q=q, warm=warm, seed=seed, vals=out[0], vecs=out[1], solver=out[2]),
                        open(f"/tmp/spce7/prob_{name}_{n_call[0]}.pkl", "wb"))
    return out
ss._component_eigenpairs = g
get_method("spce", theta=theta).fit(members, c)

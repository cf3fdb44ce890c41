import sys, time, numpy as np
from ensclust.methods import rsec
from ensclust.core.spectral import eigh_significant
d = np.load(sys.argv[1]); W0, basis, C, Ht = d["W0"], d["basis"], d["C"], d["Ht"]
print("N", W0.shape[0], "R", basis.shape[1])
for rep in range(2):
    t = time.process_time(); out = rsec.core_in_span(W0, basis, C, Ht); t1 = time.process_time() - t
    core, B2 = out
    t = time.process_time(); w, V = eigh_significant(core, 1e-4); P = B2 @ V; t2 = time.process_time() - t
    t = time.process_time(); w2, V2 = eigh_significant(W0, 1e-4); t3 = time.process_time() - t
    print(f"core {core.shape[0]}: span {t1:.2f} + eig {t2:.2f} = {t1+t2:.2f} s; direct N x N eig {t3:.2f} s; kept {len(w)} vs {len(w2)}")
print("eigenvalue agreement", np.abs(np.sort(w) - np.sort(w2)).max() / np.abs(w).max())

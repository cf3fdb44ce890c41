import sys, time, numpy as np
from scipy import linalg
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from keig import eigh_significant
from ensclust.methods import rsec
def cpu(f, *a, **k):
    t = time.process_time(); r = f(*a, **k); return r, time.process_time() - t
for f in sys.argv[1:]:
    s = np.load(f); W0, basis, C, Ht = s["W0"], s["basis"], s["C"], s["Ht"]
    B2, tsb = cpu(rsec.span_basis, basis, [C.T, Ht])
    R = basis.shape[1]
    T = np.vstack([C @ B2, np.zeros((B2.shape[1] - R, B2.shape[1]))]); Hb = B2.T @ Ht
    core = (T + T.T) / 2 + Hb @ Hb.T
    (vals, vecs), tev = cpu(linalg.eigh, core, check_finite=False)
    (w, Z), tnew = cpu(eigh_significant, core)
    mag = np.abs(vals); keep = mag > 1e-4 * mag.max()
    vk, Vk = vals[keep], vecs[:, keep]
    # compare projector P P^T-type quantities
    A1 = (Vk * np.abs(vk)) @ Vk.T; A2 = (Z * np.abs(w)) @ Z.T
    print(f, "N", W0.shape[0], "R", R, "core", core.shape[0], "kept", keep.sum(), len(w),
          f"span {tsb:.3f} evd {tev:.3f} new {tnew:.3f}", "maxdiff", np.abs(A1 - A2).max() / np.abs(A1).max(),
          "orth", np.abs(Z.T @ Z - np.eye(len(w))).max())
    def two_evr(A):
        v = linalg.eigh(A, eigvals_only=True, check_finite=False); thr = 1e-4 * np.abs(v).max()
        lo = int((v < -thr).sum()); hi = int((v <= thr).sum()); n = len(v)
        a = linalg.eigh(A, subset_by_index=[0, lo - 1], check_finite=False) if lo else None
        b = linalg.eigh(A, subset_by_index=[hi, n - 1], check_finite=False)
        return a, b
    _, t2 = cpu(two_evr, core)
    print("   3x evr route", round(t2, 3))

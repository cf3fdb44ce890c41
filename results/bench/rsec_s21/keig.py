import numpy as np
from scipy.linalg import lapack

def eigh_significant(A, rel_tol=1e-4):
    """Eigenpairs (ascending) of symmetric A with |lambda| > rel_tol max|lambda|: one Householder
    tridiagonalisation, all eigenvalues of the tridiagonal (no vectors), the vectors of the kept ones only
    (MRRR), back-transformed by the reflectors."""
    n = A.shape[0]
    lw, info = lapack.dsytrd_lwork(n, lower=1)
    c, d, e, tau, info = lapack.dsytrd(A, lower=1, lwork=int(lw))
    if info: raise np.linalg.LinAlgError(f"dsytrd info {info}")
    vals, info = lapack.dsterf(d, e)
    if info: raise np.linalg.LinAlgError(f"dsterf info {info}")
    mag = max(-vals[0], vals[-1])
    if not mag > 0:
        return np.zeros(0), np.zeros((n, 0))
    thr = rel_tol * mag
    lo = int(np.searchsorted(vals, -thr, side="left"))      # vals[:lo] < -thr
    hi = int(np.searchsorted(vals, thr, side="right"))      # vals[hi:] > thr
    ws, zs = [], []
    for il, iu in ((1, lo), (hi + 1, n)):
        if iu < il: continue
        m, w, z, info = lapack.dstemr(d.copy(), np.append(e, 0.0), 3, 0.0, 0.0, il, iu)
        if info: raise np.linalg.LinAlgError(f"dstemr info {info}")
        ws.append(w[:m]); zs.append(z[:, :m])
    w = np.concatenate(ws); Z = np.hstack(zs)
    if n > 1:
        lwq = max(1, Z.shape[1] * 64)
        cq, work, info = lapack.dormqr("L", "N", c[1:, :-1], tau, Z[1:, :], lwq)
        if info: raise np.linalg.LinAlgError(f"dormqr info {info}")
        Z[1:, :] = cq
    return w, Z

import sys, time, numpy as np
from scipy import linalg
from scipy.sparse.linalg import lobpcg
from ensclust.core import spectral
from ensclust.core.dense import symmetrize_inplace
s = np.load(sys.argv[1]); W, sizes, start, k = s["W"], s["sizes"], s["start"], int(s["k"])
n = W.shape[0]; sq = np.sqrt(sizes); deg = W @ sizes; dinv = 1 / np.sqrt(deg); g = dinv * sq
L = W * g[:, None] * g[None, :]; symmetrize_inplace(L)
X0 = start * sq[:, None]
def cpu(f, *a, **kw):
    t = time.process_time(); r = f(*a, **kw); return r, time.process_time() - t
(vals, V), t_blk = cpu(spectral.top_eigenpairs_dense, L, k, X0)
print("n", n, "k", k, "top vals", np.round(vals[:3], 6), "..", vals[-1], f"block inverse iteration (warm) {t_blk:.2f} s")
w_all = linalg.eigvalsh(L, subset_by_index=[n - 3 * k, n - 1])[::-1]
print("lambda_k, lambda_k+1, lambda_2k, lambda_3k:", w_all[k - 1], w_all[k], w_all[2 * k - 1], w_all[-1])
def resid(Vx, lx): return np.linalg.norm(L @ Vx - Vx * lx, axis=0).max()
# plain warm subspace iteration with Rayleigh-Ritz on b = k + p columns
for p in (5, 15):
    X = np.column_stack([X0, np.random.default_rng(0).standard_normal((n, p))]); X, _ = np.linalg.qr(X)
    t = time.process_time(); it = 0
    while True:
        it += 1
        Y = L @ X
        lv, R = np.linalg.eigh(X.T @ Y); lv, R = lv[::-1], R[:, ::-1]
        Vx = X @ R[:, :k]; r = np.linalg.norm(Y @ R[:, :k] - Vx * lv[:k], axis=0).max()
        if r <= spectral.RESIDUAL_TOL or it >= 300: break
        X, _ = np.linalg.qr(Y @ R)
    tt = time.process_time() - t
    ang = np.linalg.norm(V - Vx @ (Vx.T @ V))
    print(f"subspace iteration p={p}: {it} products, {tt:.2f} s, residual {r:.1e}, subspace diff {ang:.1e}")

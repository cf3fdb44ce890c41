"""Cost of the operations no SPCE implementation can skip, Tdt2 sizes (n = 9394, c = 30, m = 20)."""
import time, numpy as np
from scipy import sparse
rng = np.random.default_rng(0)
n, q, nnz = 9394, 30, 38_313_382
def t(f, r=3):
    best = 1e9
    for _ in range(r):
        c0 = time.process_time(); f(); best = min(best, time.process_time() - c0)
    return round(best, 3)
X = rng.standard_normal((n, q))
# sparse S with the nnz of the second operator of the Tdt2 fit (43 % of the n^2 entries)
rows = rng.integers(0, n, nnz // 2); cols = rng.integers(0, n, nnz // 2)
S = sparse.coo_matrix((rng.random(nnz // 2), (rows, cols)), shape=(n, n)).tocsr(); S = (S + S.T).tocsr()
print("sparse S nnz", S.nnz, "S @ X (30 cols):", t(lambda: S @ X), "s")
D = S.toarray()
print("dense S @ X (dgemm):", t(lambda: D @ X), "s")
del D
lab = rng.integers(0, 30, (n, 20)); B = sparse.csr_matrix((np.ones(n * 20), (np.repeat(np.arange(n), 20), (lab + 30 * np.arange(20)).ravel())), shape=(n, 600))
BT = B.T.tocsr()
print("low-rank B (B^T X):", t(lambda: B @ (BT @ X)), "s")
# one S-update-like pass over F free pairs: gather g[pattern], two multiplies, compare, min, masked copy
F = 20_000_000
pat = rng.integers(0, 30000, F).astype(np.int32); g = rng.random(30000); E = rng.random(F); h = rng.random(F); thr = rng.random(F)
def upd():
    Ca = E * h; Ca *= -2.0; Ca += g[pat]; below = Ca < thr; Ca /= 3.0; np.minimum(Ca, 1.0, out=Ca); Ca[below] = 0.0
print("S-update arithmetic over F = 2e7 pairs:", t(upd), "s")

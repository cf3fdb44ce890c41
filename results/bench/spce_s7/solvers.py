"""Compare eigensolvers on grabbed LOBPCG problems: solvers.py pkl..."""
import sys, pickle, time, warnings, numpy as np, scipy.linalg
from scipy import sparse
from scipy.sparse.linalg import lobpcg, splu, LinearOperator
def setup(P):
    sub, q, warm = P["sub"], P["q"], P["warm"]
    s = sub.shape[0]; deg = np.asarray(sub.sum(axis=1)).ravel()
    const = np.full((s, 1), 1 / np.sqrt(s)); X0 = np.zeros((s, q)); have = 0
    if warm is not None and warm.shape[1]:
        W0 = warm - const @ (const.T @ warm); nr = np.linalg.norm(W0, axis=0); W0 = W0[:, nr > 1e-8][:, :q]
        have = W0.shape[1]; X0[:, :have] = W0
    if have < q: X0[:, have:] = np.random.default_rng(P["seed"]).standard_normal((s, q - have))
    X0, _ = np.linalg.qr(X0)
    L = (sparse.diags(deg) - sub).tocsr()
    return L, deg, const, X0, q
def proj(P, V): return V @ V.T
for f in sys.argv[1:]:
    P = pickle.load(open(f, "rb")); L, deg, const, X0, q = setup(P)
    print(f, "n", L.shape[0], "nnz", L.nnz, "q", q, "old solver", P["solver"], "vals", P["vals"][:3], P["vals"][-2:])
    ref = P["vecs"]
    def rep(tag, t, vals, vecs, it):
        # subspace difference to old result: ||V V^T - R R^T|| via small matrices
        M = ref.T @ vecs; diff = np.sqrt(max(0, 2 * q - 2 * np.sum(M * M)))
        print(f"  {tag:12s} cpu {t:7.2f}s iters {it:4d} maxdval {np.max(np.abs(vals - P['vals'])):.2e} subspace {diff:.2e}", flush=True)
    t = time.process_time()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        v, V, h = lobpcg(L, X0, M=sparse.diags(1 / np.maximum(deg, 1e-12)), Y=const, tol=1e-8, maxiter=300, largest=False, retResidualNormsHistory=True)
    o = np.argsort(v); rep("jacobi", time.process_time() - t, v[o], V[:, o], len(h))
    for shift_frac in (1e-2,):
        t = time.process_time()
        delta = shift_frac * np.mean(deg)
        lu = splu((L + delta * sparse.identity(L.shape[0])).tocsc(), permc_spec="MMD_AT_PLUS_A")
        tlu = time.process_time() - t
        Mop = LinearOperator(L.shape, matvec=lu.solve, matmat=lu.solve, dtype=float)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            v, V, h = lobpcg(L, X0, M=Mop, Y=const, tol=1e-8, maxiter=300, largest=False, retResidualNormsHistory=True)
        o = np.argsort(v); rep(f"splu{shift_frac}", time.process_time() - t, v[o], V[:, o], len(h))
        print("    lu time", round(tlu, 2), "nnz L+U", lu.L.nnz + lu.U.nnz)
    if L.shape[0] <= 6000:
        t = time.process_time()
        v, V = scipy.linalg.eigh(L.toarray(), subset_by_index=[1, q], check_finite=False)
        rep("dense eigh", time.process_time() - t, v, V, 0)

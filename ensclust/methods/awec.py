"""AWEC: ensemble clustering with adaptive high-order topological weights (Xu, Li, Duan, AAAI 2024).

Spec: ``shared/specs/awec.md``. Two registry entries share one solver:

* ``awec-h`` - average-link agglomerative clustering of the learned topology Z (spec 3.5),
* ``awec-s`` - the authors' spectral post-processing of Z (SVD rank cut, 4th power, NJW embedding, k-means).

Pipeline (spec section 3, following the authors' released MATLAB code by default because only the code
reproduces the published numbers):

1. co-association matrix A of the ensemble (3.1);
2. first-order connection matrix G^(1) from a kNN graph on a pre-processed kernel of A (3.2, paper Eq. 4);
3. thresholded higher orders G^(2..o) (3.3, paper Eq. 2 as coded);
4. ADMM over C, E, J, Z, alpha, H (3.4, paper Eqs. 7-19, Algorithms 1-2);
5. labels from Z (3.5).

Where the paper and the code differ, the code is the default and the paper's form is an option where it is
well defined (``laplacian``, ``refresh_mu``, ``multiplier_init``). The code's numerical failure case (column
sums of C with mixed signs, which sends MATLAB into complex arithmetic and later NaN) is detected and raised as
a clear error unless ``degree_fallback="abs"`` is chosen (a flagged deviation).

The dense path is exact (agrees with the authors' code to ~1e-10 on the spec's fixtures). For large n the
``eigensolver="lobpcg"`` option replaces the full eigendecomposition of L_Z by a partial one (approximation,
identical unless the c-th and (c+1)-th eigenvalues are (near-)degenerate), and ``dtype="float32"`` halves the
memory (approximation). AWEC-H and AWEC-S learn the same Z: given the same ``memory`` cache (a caller-owned
object or folder, :mod:`ensclust.core.cache`; the experiment runner passes one per data set) the second
variant reuses the first one's solve. There is no module-level state: a fit never depends on earlier calls.

Speed (issue #6): after the column-wise simplex projection the iterate Z of the Z sub-problem is usually
sparse (often one nonzero per column: Z = I), so ``z_step="sparse"`` (default from n = 300 on) runs the same
inner iteration with sparse x dense products while Z is sparse and with the code's GEMMs while it is dense,
in column blocks (fewer n x n buffers); see :func:`_update_Z_sparse`. It agrees with ``z_step="dense"`` to
floating-point reassociation (~1e-14 on the fixtures, tests/test_awec.py) except where H is not unique (a
degenerate zero eigenspace of L_Z, spec A10b: rounding then picks the basis in either path). When Z is diagonal, L_Z = 0 and
the eigendecomposition is skipped (LAPACK returns the identity for it); on the LOBPCG route a sparse Z gives
L_Z to LOBPCG in CSR form (same entries). The neighbour sets of the kNN graph are found by selection
(:func:`neighbour_mask`), the same sets as the code's stable sort. Measurements: results/bench/awec_s6.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from scipy import sparse

from ensclust.core.coassoc import coassociation
from ensclust.core.dense import symmetrize_inplace
from ensclust.core.hierarchy import hac_labels
from ensclust.core.simplex import project_simplex
from ensclust.errors import UserError
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param
from ensclust.rng import int_seed

_CODE = "authors' code (ltyong/awec solver_AWTP.m), spec 3.4"


class AWECNumericalError(UserError):
    """The ADMM iteration hit the authors' code's numerical failure case (mixed-sign degrees, NaN/Inf)."""


# --------------------------------------------------------------------------------------------------------
# Graph construction (spec 3.2, 3.3)
# --------------------------------------------------------------------------------------------------------


def matlab_round(x: float) -> int:
    """MATLAB ``round``: half away from zero (Python's ``round`` is half-to-even; spec 3.2 step 2)."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def neighbour_count(n: int, n_clusters: int, nn_rate: float) -> int:
    """``NeiNum = round(nn_rate * n / c)`` with MATLAB rounding, at least 1 and at most n - 1."""
    return int(min(max(matlab_round(nn_rate * n / n_clusters), 1), n - 1))


def preprocessed_kernel(A: np.ndarray) -> np.ndarray:
    """The kernel ``AVGKer`` used only for the neighbour search (spec 3.2 step 1, code V9_LocalKernelCalculation).

    Clip to mean +- 4 std, cosine-normalise, double-centre, symmetrise, divide by the std of all entries.
    Standard deviations use N-1 like MATLAB ``std``.
    """
    K = np.array(A, dtype=np.float64, copy=True)
    m, s = K.mean(), K.std(ddof=1)
    np.clip(K, m - 4 * s, m + 4 * s, out=K)
    dg = np.sqrt(np.abs(np.diag(K)))
    dg[dg == 0] = 1.0
    K /= dg[:, None]
    K /= dg[None, :]
    col_mean = K.mean(axis=0)
    total = K.mean()
    K -= col_mean[None, :]
    K -= col_mean[:, None]
    K += total
    K = (K + K.T) / 2.0
    s = K.std(ddof=1)
    if s > 0:
        K /= s
    return K


def neighbour_mask(K: np.ndarray, k: int, *, block: int = 1024) -> np.ndarray:
    """Boolean (n, n) mask whose column j marks the k largest entries of K[:, j], diagonal excluded, ties ->
    lowest row index: the set MATLAB's ``sort(K(:,j) - 1e18*e_j, 'descend')`` (stable) puts first (spec 3.2
    step 3, A16).

    K is the symmetric pre-processed kernel, so column j is read as row j (contiguous). Instead of a stable sort
    of every row (O(n log n)), the k-th largest value v of the row is found by selection (O(n)); all entries
    above v are neighbours and the entries equal to v fill the remaining places in increasing index order -
    exactly the stable sort's first k.
    """
    n = K.shape[0]
    if k >= n:
        raise ValueError(f"neighbour_mask: k={k} must be below n={n}")
    if _max_asymmetry(K) != 0.0:
        raise ValueError("neighbour_mask: K must be exactly symmetric (columns are read as rows)")
    mask = np.zeros((n, n), dtype=bool)
    for start in range(0, n, block):
        stop = min(start + block, n)
        rows = np.arange(stop - start)
        R = np.array(K[start:stop], dtype=np.float64)
        R[rows, start + rows] = -np.inf  # the diagonal comes last (MATLAB subtracts 1e18)
        v = np.partition(R, n - k, axis=1)[:, n - k]  # k-th largest of each row
        above = R > v[:, None]
        ties = R == v[:, None]
        need = k - np.count_nonzero(above, axis=1)
        # the first `need` tied entries of each row, in index order
        take = ties & (np.cumsum(ties, axis=1) <= need[:, None])
        mask[start:stop] = above | take
    return mask.T  # row block i holds column i's neighbours; K symmetric -> transpose to column form


def knn_weights(A: np.ndarray, n_clusters: int, nn_rate: float = 0.5) -> tuple[np.ndarray, dict]:
    """The first-order weight matrix ``KHN`` (spec 3.2 steps 1-6); dense n x n with a zero diagonal."""
    n = A.shape[0]
    kernel = preprocessed_kernel(A)
    nei = neighbour_count(n, n_clusters, nn_rate)
    aff = neighbour_mask(kernel, nei).astype(np.float64)
    aff += aff.T  # mutual neighbours count twice (not binarised), as in the code
    W = np.asarray(A, dtype=np.float64) * aff
    del aff
    W[W < 0] = 0.0
    m, s = W.mean(), W.std(ddof=1)
    np.clip(W, max(0.0, m - 3 * s), m + 3 * s, out=W)
    empty = np.flatnonzero(~W.any(axis=1))
    if empty.size:
        # Completion (step 5): two best kernel columns (diagonal zeroed) get mean(W).
        fill = W.mean()
        for i in empty:
            row = kernel[i].copy()
            row[i] = 0.0
            best = np.argsort(-row, kind="stable")[:2]
            W[i, best] = fill
    return W, {"n_neighbours": nei, "n_completed_rows": int(empty.size)}


def symmetric_normalize(X: np.ndarray) -> np.ndarray:
    """``norm(X)`` of the code: zero the diagonal, D^-1/2 X D^-1/2 with row sums floored at 1e-10."""
    X = np.array(X, dtype=np.float64, copy=True)
    np.fill_diagonal(X, 0.0)
    d = np.maximum(X.sum(axis=1), 1e-10)
    r = 1.0 / np.sqrt(d)
    X *= r[:, None]
    X *= r[None, :]
    return X


def connection_matrices(khn: np.ndarray, order: int, *, threshold: bool = True) -> list[np.ndarray]:
    """G^(1..o) (spec 3.3, code V9_generate_multi_connec).

    ``threshold=True`` (code): ``X = G^(i-1)^T G^(1)``, drop entries below mean - std/2 of the positive
    entries, normalise. ``threshold=False`` keeps every entry of the product (paper Eq. 2, then normalised).
    """
    G = [symmetric_normalize(khn)]
    for _ in range(2, order + 1):
        X = G[-1].T @ G[0]
        if threshold:
            pos = X[X > 0]
            if pos.size > 1:
                t = pos.mean() - pos.std(ddof=1) / 2.0
                X[X < t] = 0.0
        G.append(symmetric_normalize(X))
    return G


# --------------------------------------------------------------------------------------------------------
# ADMM solver (spec 3.4)
# --------------------------------------------------------------------------------------------------------


def _sq_dist_rows(H: np.ndarray) -> np.ndarray:
    sq = np.einsum("ij,ij->i", H, H)
    D = sq[:, None] + sq[None, :] - 2.0 * (H @ H.T)
    np.maximum(D, 0.0, out=D)
    return D


def _z_operator(C: np.ndarray, gamma: float, laplacian: str) -> np.ndarray:
    """The matrix A' of the Z sub-problem: diag(colsum C) - C + gamma I (code) or I - D^-1/2 C D^-1/2 + gamma I."""
    n = C.shape[0]
    deg = C.sum(axis=0)
    if laplacian == "unnormalized":
        Ap = -C
        Ap[np.diag_indices(n)] += deg + gamma
    else:
        r = 1.0 / np.sqrt(np.maximum(np.abs(deg), 1e-10))
        Ap = -(C * r[:, None]) * r[None, :]
        Ap[np.diag_indices(n)] += 1.0 + gamma
    return Ap


# z_step="sparse": the inner steps whose iterate Z has at most this fraction of nonzeros use the sparse
# products (two sparse products instead of two GEMMs). The column-tiled CSR x dense product runs at ~1/8 of the
# GEMM rate here, so the break-even is ~0.12; measured on digits (n = 1797): 0.05 / 0.08 / 0.12 -> 3.1 / 2.9 /
# 2.7 s for a Z sub-problem with a dense burst (dense path 5.0 s).
SPARSE_STEP_DENSITY = 0.1
# C-update of the sparse path: Gm Gm^T as a sparse product when Z has at most this fraction of nonzeros (the
# dense product is a symmetric rank-n update, half the flops of a GEMM: break-even ~1/16).
SPARSE_PRODUCT_DENSITY = 0.04
# z_step="auto" takes the sparse path from this n on (below it the per-step Python overhead dominates).
SPARSE_MIN_N = 300


# Column tile of the dense factor in :func:`_sparse_times_dense` (the tile of a CSR row block times a 256-column
# slice stays in cache; the whole factor is streamed once instead of once per nonzero).
SPMM_TILE = 256


def _sparse_times_dense(Ws, X: np.ndarray) -> np.ndarray:
    """``Ws @ X`` for a CSR matrix and a dense C-ordered X, column tile by column tile for a wide X.

    scipy's CSR x dense adds one row of X per nonzero; for a large X each nonzero then reads a whole row from
    memory. Tiles of ``SPMM_TILE`` columns keep the touched rows in cache (measured: 1.7x at n = 1797, 2.5x at
    n = 3000 and 6000, density 0.03-0.04; slower for a handful of nonzeros: then untiled). Every
    output entry is the same sum in the same order: the result is bit-for-bit ``Ws @ X``.
    """
    n = X.shape[1]
    if n < 4 * SPMM_TILE or Ws.nnz < 8 * X.shape[0]:  # narrow X, or so few nonzeros that copying X dominates
        return np.asarray(Ws @ X)
    out = np.empty((Ws.shape[0], n), dtype=np.result_type(Ws.dtype, X.dtype))
    for s in range(0, n, SPMM_TILE):
        out[:, s:s + SPMM_TILE] = Ws @ np.ascontiguousarray(X[:, s:s + SPMM_TILE])
    return out


def _z_block_size(n: int) -> int:
    """Columns of Z per block of the sparse path: 1/8 of n (at least 128), so that the block buffers add up to
    ~1.3 n x n arrays instead of the ~6 n x n temporaries of the dense path."""
    return int(min(n, max(128, -(-n // 8))))


def _max_abs(M: np.ndarray) -> float:
    """max |M| without an n x n temporary (the largest of max M and -min M: the same number)."""
    return float(max(M.max(), -M.min()))


def _max_asymmetry(M: np.ndarray, block: int = 1024) -> float:
    """max |M - M^T| tile by tile (no n x n temporary)."""
    n = M.shape[0]
    worst = 0.0
    for i in range(0, n, block):
        I = slice(i, min(i + block, n))
        for j in range(i, n, block):
            J = slice(j, min(j + block, n))
            worst = max(worst, float(np.max(np.abs(M[I, J] - M[J, I].T))))
    return worst


def _update_Z_sparse(C, gamma, delta, H, *, inner_iter, eta0, rho2, laplacian, stats=None):
    """The Z sub-problem of :func:`update_Z`, column block by column block, with sparse products.

    The columns of Z are independent, so each block of columns runs the inner steps on its own. A block is
    stored transposed, W = Z_J^T, which makes the simplex projection row-wise; then (A'^T Z)^T = W A' and
    (A' P)^T = P^T A'^T. Per step, with S = W A' and S' = W A'^T (= S when A' is symmetric):

    * P^T = W - (S + Q^T)/eta ;
    * W dense: (A' P)^T = P^T A'^T (a GEMM, as in the dense path);
    * W sparse (at most ``SPARSE_STEP_DENSITY`` nonzeros): A'P = A'Z - (A'A'^T Z + A'Q)/eta, i.e.
      (A' P)^T = S' - (W G2 + R^T)/eta with G2 = A'A'^T (one symmetric product per call, computed when first
      needed) and R = A'Q tracked exactly through R' = R + eta'(A'Z' - A'P); all products are sparse x dense;
    * the first step starts from Z = 1/n, Q = 1 (rank one): P^T = 1 u^T, (A'P)^T = 1 (A'u)^T, no product.

    Caveat (spec A10b): when L_Z has a zero eigenvalue of multiplicity > c (Z with more than c components but
    not diagonal), H is not unique and the subspace LAPACK returns depends on rounding noise; the ~1e-13
    differences between the paths can then select a different H and the runs part. Forcing this path on the
    Appendicitis NMI grid (n = 106; auto uses the dense path there) reproduces 34 of the 36 cells to 4 decimals
    (the dense path: 35); the extra cell (lambda 0.08, gamma 0.5) changes through one of its 10 runs whose L_Z
    has a triple zero eigenvalue (c = 2) at iteration 2.

    When C is symmetric up to rounding (order o <= 2: every G^(i) is symmetric) A' is replaced by its symmetric
    part, so S' = S and R is tracked for free through the dense steps too. Otherwise (o >= 3: G^(3) = norm(G^(2)
    G^(1)) is not symmetric) a contiguous copy of A'^T is kept and R is rebuilt with one GEMM (Q^T A'^T) when a
    sparse step follows a dense one.
    """
    n = C.shape[0]
    dt = C.dtype
    Ap = _z_operator(C, gamma, laplacian)
    scale = float(np.max(np.abs(Ap))) if n else 0.0
    symmetric = _max_asymmetry(Ap) <= 1e-12 * scale
    if symmetric:
        Ap = symmetrize_inplace(Ap)
        ApT = Ap
    else:
        ApT = np.ascontiguousarray(Ap.T)
    H = np.asarray(H, dtype=dt)
    col_sum = Ap.sum(axis=0)  # A'^T 1 (the first step's A'^T Z = (A'^T 1) 1^T / n)
    row_sum = col_sum if symmetric else Ap.sum(axis=1)  # A' 1 (R = A'Q starts at (A' 1) 1^T)
    sq = np.einsum("ij,ij->i", H, H)
    Zt = np.empty((n, n), dtype=dt)
    G2 = None
    b = _z_block_size(n)
    n_sparse = n_dense = n_rebuilt = 0
    seconds = {"sparse": 0.0, "dense": 0.0, "g2": 0.0}
    for start in range(0, n, b):
        stop = min(start + b, n)
        m = stop - start
        rows = np.arange(m)
        # Rows of B = 2 gamma I - delta Dist(H) for this block (B is symmetric).
        Bt = H[start:stop] @ H.T
        Bt *= -2.0
        Bt += sq[start:stop, None]
        Bt += sq[None, :]
        np.maximum(Bt, 0.0, out=Bt)
        Bt *= -delta
        Bt[rows, start + rows] += 2.0 * gamma
        # Step 1 from Z = 1/n, Q = 1: every row of P^T is u^T and every row of (A'P)^T is (A'u)^T.
        eta = eta0
        u = (1.0 / n - (col_sum / n + 1.0) / eta).astype(dt, copy=False)
        v = Ap @ u
        Tt = Bt - v[None, :]
        Tt /= eta
        Tt += (u - 1.0 / eta)[None, :]
        W = project_simplex(Tt)
        eta *= rho2
        Qt = W - u[None, :]
        Qt *= eta
        Qt += 1.0
        # R^T = Q^T A'^T, kept up to date while it can be (None: rebuild when a sparse step needs it).
        Rt = None
        ApPt_prev = None
        first = True
        eta_q = eta
        for _ in range(1, inner_iter):
            tic = time.perf_counter()
            use_sparse = np.count_nonzero(W) <= SPARSE_STEP_DENSITY * W.size
            if use_sparse:
                Ws = sparse.csr_matrix(W)
                S = _sparse_times_dense(Ws, Ap)
                S2 = S if symmetric else _sparse_times_dense(Ws, ApT)
            else:
                S = W @ Ap
                S2 = S if symmetric else None
            # R_k = R_{k-1} + eta_k (A'Z_k - A'P_{k-1}) (needs A'Z_k, free when A' is symmetric or W sparse)
            if S2 is None:
                Rt = None
            elif first:
                Rt = S2 - v[None, :]
                Rt *= eta_q
                Rt += row_sum[None, :]
            elif Rt is not None:
                Rt += eta_q * (S2 - ApPt_prev)
            first = False
            Pt = S + Qt
            Pt /= eta
            np.subtract(W, Pt, out=Pt)
            if use_sparse:
                if G2 is None:
                    t_g2 = time.perf_counter()
                    G2 = Ap @ Ap.T  # symmetric rank-n product (syrk), once per call
                    seconds["g2"] += time.perf_counter() - t_g2
                    tic += time.perf_counter() - t_g2
                if Rt is None:
                    Rt = Qt @ Ap.T
                    n_rebuilt += 1
                ApPt = _sparse_times_dense(Ws, G2)
                ApPt += Rt
                ApPt /= eta
                np.subtract(S2, ApPt, out=ApPt)
                n_sparse += 1
            else:
                ApPt = Pt @ Ap.T
                n_dense += 1
            del S, S2
            # T = P - Q/eta - (A'P - B)/eta
            Tt = ApPt - Bt
            Tt /= -eta
            Tt += Pt
            Tt -= Qt / eta
            W = project_simplex(Tt)
            del Tt
            eta *= rho2
            W_minus_P = W - Pt
            W_minus_P *= eta
            Qt += W_minus_P
            del W_minus_P, Pt
            ApPt_prev = ApPt
            eta_q = eta
            seconds["sparse" if use_sparse else "dense"] += time.perf_counter() - tic
        Zt[start:stop] = W
    if stats is not None:
        stats.append({"sparse_steps": n_sparse, "dense_steps": n_dense, "r_rebuilt": n_rebuilt,
                      "symmetric": bool(symmetric), "g2": G2 is not None,
                      "seconds": {k: round(v, 3) for k, v in seconds.items()},
                      "density": float(np.count_nonzero(Zt)) / max(Zt.size, 1)})
    return symmetrize_inplace(Zt)


def update_Z(C: np.ndarray, gamma: float, delta: float, H: np.ndarray, *, inner_iter: int = 10,
             eta0: float = 10.0, rho2: float = 1.5, laplacian: str = "unnormalized", z_step: str = "dense",
             stats: list | None = None) -> np.ndarray:
    """Z sub-problem (paper Algorithm 1, code update_Z.m), all columns at once; returns the symmetrised Z.

    The code restarts from Z = 1/n, Q = 1, eta = 10 every call and runs a fixed number of inner steps (A9).
    ``laplacian="unnormalized"`` (code) uses diag(colsum C) - C + gamma I; ``"normalized"`` (paper Alg. 1, A4)
    uses I - D^-1/2 C D^-1/2 + gamma I (degrees floored at 1e-10).

    ``z_step="dense"`` is the code's loop (two n x n GEMMs per inner step). ``"sparse"`` computes the same
    iterates (equal up to floating-point reassociation, for symmetric C as in the solver) column block by column
    block and replaces the two GEMMs by sparse products whenever the iterate Z is sparse - after the simplex
    projection it usually is (often one nonzero per column), see :func:`_update_Z_sparse`. ``stats`` (a list)
    receives the sparse/dense step counts of the sparse path.
    """
    if z_step == "sparse":
        return _update_Z_sparse(C, gamma, delta, H, inner_iter=inner_iter, eta0=eta0, rho2=rho2,
                                laplacian=laplacian, stats=stats)
    n = C.shape[0]
    Ap = _z_operator(C, gamma, laplacian)
    B = _sq_dist_rows(H)
    B *= -delta
    B[np.diag_indices(n)] += 2.0 * gamma
    Z = np.full((n, n), 1.0 / n, dtype=C.dtype)
    Q = np.ones((n, n), dtype=C.dtype)
    eta = eta0
    ApT = Ap.T
    for _ in range(inner_iter):
        P = Z - (ApT @ Z + Q) / eta
        T = P - Q / eta - (Ap @ P - B) / eta
        Z = project_simplex(T, axis=0)
        eta *= rho2
        Q += eta * (Z - P)
    return (Z + Z.T) / 2.0


# The H-update hands LOBPCG a CSR Laplacian when Z has at most this fraction of nonzeros (the CSR product then
# beats the dense GEMM by far; measured: LOBPCG was ~8 % of a fit at n = 3000 with a dense L_Z).
SPARSE_LAPLACIAN_DENSITY = 0.05


def _uses_lobpcg(solver: str, n: int, c: int) -> bool:
    """Whether :func:`_smallest_eigvecs` takes the LOBPCG route (else the full dense eigendecomposition)."""
    return not (solver == "dense" or (solver == "auto" and n <= 3000) or c >= n // 5)


def _smallest_eigvecs(L, c: int, solver: str, H_prev: np.ndarray | None, rng) -> np.ndarray:
    """The c eigenvectors of the smallest eigenvalues of L (dense array; a sparse L only on the LOBPCG route)."""
    n = L.shape[0]
    if not _uses_lobpcg(solver, n, c):
        if not L.any():
            # Z diagonal (common: after the simplex projection Z is often the identity) -> L_Z = 0, whose
            # eigenvectors LAPACK returns as the identity (checked in tests/test_awec.py); skips an O(n^3) call.
            return np.eye(n, c, dtype=L.dtype)
        # Full divide-and-conquer eigendecomposition (LAPACK syevd, as numpy.linalg.eigh). When L_Z has a
        # repeated zero eigenvalue (Z with more than c components, spec A10b) H is not unique and the basis
        # depends on the LAPACK driver: syevd reproduces the spec's reference grid (spec 8.2), while the
        # subset driver syevr changes several small-gamma cells of the Appendicitis grid.
        _, vecs = np.linalg.eigh(L)
        return vecs[:, :c]
    from scipy.sparse.linalg import lobpcg

    X0 = H_prev if H_prev is not None else rng.standard_normal((n, c))
    # Warm start from the previous H (approximation: may stop before full accuracy; warnings silenced).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals, vecs = lobpcg(L, X0, largest=False, tol=1e-8, maxiter=200)
    return vecs[:, np.argsort(vals)].astype(L.dtype, copy=False)  # float64 X0 would promote float32 runs


def _alpha_update(C: np.ndarray, G: list[np.ndarray], sq_norms: np.ndarray) -> np.ndarray:
    """Closed-form alpha (paper Eq. 19, theta from sum(alpha) = 1; no non-negativity projection, A11)."""
    a = np.array([np.vdot(C, Gi) for Gi in G])
    b = sq_norms
    theta = 2.0 * (np.sum(a / b) - 1.0) / np.sum(1.0 / b)
    return (2.0 * a - theta) / (2.0 * b)


def solve_awec(A: np.ndarray, G: list[np.ndarray], n_clusters: int, *, lam: float, gamma: float,
               delta: float = 1.1, mu0: float = 0.1, rho: float = 1.2, mu_max: float = 1e8, tol: float = 1e-2,
               max_iter: int = 100, inner_iter: int = 10, eta0: float = 10.0, rho2: float = 1.5,
               laplacian: str = "unnormalized", refresh_mu: bool = False, multiplier_init: str = "ones",
               degree_fallback: str = "error", eigensolver: str = "auto", ablation: str = "none",
               z_step: str = "auto", rng=None, record: bool = False) -> dict:
    """Run the ADMM of spec 3.4 and return ``{"C", "Z", "alpha", "n_iter", "converged", ...}``.

    ``ablation``: "none"; "no-topo" drops the topology/gamma terms (no Z, H updates; spec A23, our
    interpretation); "no-high-order" drops the sum_i ||C - alpha_i G^(i)||^2 term (spec A23).

    ``z_step``: "dense" = the code's dense products; "sparse" = the same iteration with sparse products where Z
    is sparse (Z sub-problem, :func:`update_Z`, and Gm Gm^T in the C-update); "auto" = sparse for
    n >= ``SPARSE_MIN_N``. Both agree to floating-point reassociation (tests/test_awec.py).
    """
    n = A.shape[0]
    o = len(G)
    c = int(n_clusters)
    if z_step == "auto":
        z_step = "sparse" if n >= SPARSE_MIN_N else "dense"
    z_stats: list = []
    dtype = A.dtype
    use_order = ablation != "no-high-order"
    use_topo = ablation != "no-topo"
    # n x n state: A, the G^(i), C, J, Z, E, Y1, Y2; every update below writes into its own array (or, for C,
    # into the previous C) with the same element-wise operations in the same order as the formulas, so the same
    # bits, and the old Z is released before the Z sub-problem builds its own n x n arrays: two to five n x n
    # arrays fewer at the peaks than whole-matrix expressions (results/bench/awec_s22)
    C = np.eye(n, dtype=dtype)
    J = np.eye(n, dtype=dtype)
    Z = np.eye(n, dtype=dtype)
    E = np.zeros((n, n), dtype=dtype)
    if multiplier_init == "ones":
        Y1 = np.ones((n, n), dtype=dtype)
        Y2 = np.ones((n, n), dtype=dtype)
    else:
        Y1 = np.zeros((n, n), dtype=dtype)
        Y2 = np.zeros((n, n), dtype=dtype)
    mu = mu0
    alpha = np.full(o, 1.0 / o)
    H = np.eye(n, c, dtype=dtype)  # A10: eigenvectors of the all-zero Laplacian as LAPACK returns them
    d = C.sum(axis=0)
    sq_norms = np.array([np.vdot(Gi, Gi) for Gi in G])
    o_term = o if use_order else 0

    def kappa_for(m):
        return 1.0 / (2.0 * o_term + 2.0 * m)

    kappa = kappa_for(mu0)
    neg_iters = 0
    mixed_iters = 0
    negative_alpha = False
    converged = False
    history = []
    residual = float("nan")
    it = 0
    for it in range(1, max_iter + 1):
        # --- C-update (Eq. 9 as coded; kappa keeps mu0 unless refresh_mu, A6) ---------------------------
        # rhs = mu (A - E + J) + Y1 - Y2 + ..., written into the previous C (d holds its column sums)
        rhs = np.subtract(A, E, out=C)
        rhs += J
        rhs *= mu
        rhs += Y1
        rhs -= Y2
        if use_topo:
            if not np.all(np.isfinite(d)):
                raise AWECNumericalError("AWEC: non-finite column sums of C (the iteration diverged)")
            if np.any(d == 0):
                raise AWECNumericalError("AWEC: a column of C sums to zero, D^-1/2 is undefined")
            if np.all(d < 0):
                neg_iters += 1
            elif np.any(d < 0):
                mixed_iters += 1
                if degree_fallback != "abs":
                    raise AWECNumericalError(
                        f"AWEC: column sums of C have mixed signs at iteration {it} "
                        f"({int(np.sum(d < 0))} of {n} negative); the authors' code continues in complex "
                        "arithmetic and fails with NaN here (spec 3.4 step 1). Use degree_fallback='abs' to "
                        "continue with |d| (a deviation), or change lambda/gamma")
            r = 1.0 / np.sqrt(np.abs(d))  # equals MATLAB's complex product when all signs agree
            if z_step == "sparse" and np.count_nonzero(Z) <= SPARSE_PRODUCT_DENSITY * Z.size:
                # Z is exactly symmetric (symmetrised by update_Z, or I), so Gm^T = Z diag(r) and
                # Gm Gm^T = (diag(r) Z) (Z diag(r)): one sparse x dense product, no dense Gm.
                Gm_sparse = sparse.diags(r) @ sparse.csr_matrix(Z)
                Gm_t = Z * r[None, :]
                rhs += _sparse_times_dense(sparse.csr_matrix(Gm_sparse), Gm_t)
                del Gm_t, Gm_sparse
            else:
                Gm = Z * r[:, None]
                rhs += Gm @ Gm.T
                del Gm
        if use_order:
            for ai, Gi in zip(alpha, G, strict=True):
                rhs += (2.0 * ai) * Gi
        if refresh_mu or not use_order:
            # Without the order term the stale mu0 denominator 1/(2 mu0) amplifies C and diverges; the
            # no-high-order ablation therefore uses the exact C-minimiser 1/(2 mu) (our choice, A23).
            kappa = kappa_for(mu)
        C = rhs
        C *= kappa
        del rhs
        d = C.sum(axis=0)
        # --- E-update (Eq. 13) ----------------------------------------------------------------------------
        np.subtract(A, C, out=E)  # E = (mu (A - C) + Y1) / (lam + mu)
        E *= mu
        E += Y1
        E /= lam + mu
        # --- J-update (Eq. 11): symmetrise P = C + Y2 / mu and clip to [0, 1] -----------------------------
        np.divide(Y2, mu, out=J)
        J += C
        symmetrize_inplace(J)  # (P + P^T) / 2, the same bits
        np.clip(J, 0.0, 1.0, out=J)
        if use_topo:
            # --- Z-update (Algorithm 1): the sub-problem does not read the previous Z --------------------
            Z = None
            Z = update_Z(C, gamma, delta, H, inner_iter=inner_iter, eta0=eta0, rho2=rho2, laplacian=laplacian,
                         z_step=z_step, stats=z_stats)
        # --- alpha-update (Eq. 19) ----------------------------------------------------------------------
        if use_order:
            alpha = _alpha_update(C, G, sq_norms)
            negative_alpha |= bool(np.any(alpha < 0))
        if use_topo:
            # --- H-update: c smallest eigenvectors of max(L_Z, L_Z^T) -------------------------------------
            if not np.all(np.isfinite(Z)):
                raise AWECNumericalError("AWEC: the topology Z became non-finite (NaN/Inf)")
            if (_uses_lobpcg(eigensolver, n, c) and np.count_nonzero(Z) <= SPARSE_LAPLACIAN_DENSITY * Z.size
                    and _max_asymmetry(Z) == 0.0):
                # LOBPCG only multiplies by L_Z: with Z sparse (and exactly symmetric, as update_Z returns it,
                # so max(L_Z, L_Z^T) = L_Z) the same matrix in CSR form costs nnz(Z) c per product instead of
                # n^2 c. The entries are the dense path's (colsum - Z_ii on the diagonal, -Z_ij off it).
                L = sparse.diags(Z.sum(axis=0)) - sparse.csr_matrix(Z)
            else:
                L = -Z
                L[np.diag_indices(n)] += Z.sum(axis=0)
                L = np.maximum(L, L.T)
            H = _smallest_eigvecs(L, c, eigensolver, H, rng)
            del L
        # --- stopping (A12: checked before the multiplier update, strict inequality) --------------------
        r1 = np.subtract(A, C)
        r1 -= E
        r2 = np.subtract(C, J)
        residual = max(_max_abs(r1), _max_abs(r2))
        if record:
            history.append({"C": C.copy(), "Z": Z.copy(), "alpha": alpha.copy(), "residual": residual})
        if not np.isfinite(residual):
            raise AWECNumericalError("AWEC: the ADMM residual became non-finite (NaN/Inf)")
        if residual < tol:
            converged = True
            break
        r1 *= mu
        Y1 += r1
        r2 *= mu
        Y2 += r2
        del r1, r2
        mu = min(rho * mu, mu_max)
    if not np.all(np.isfinite(Z)) or not np.all(np.isfinite(C)):
        raise AWECNumericalError("AWEC: the learned matrices contain NaN/Inf")
    return {"C": C, "Z": Z, "alpha": alpha, "n_iter": it, "converged": converged, "residual": residual,
            "negative_degree_iterations": neg_iters, "mixed_sign_iterations": mixed_iters,
            "negative_alpha": negative_alpha, "history": history, "z_step": z_step,
            "z_sparse_steps": int(sum(s["sparse_steps"] for s in z_stats)),
            "z_dense_steps": int(sum(s["dense_steps"] for s in z_stats))}


# --------------------------------------------------------------------------------------------------------
# Labels (spec 3.5)
# --------------------------------------------------------------------------------------------------------


def _row_normalize(U: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(U, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return U / norms


def awec_s_embedding(Z: np.ndarray, n_clusters: int, *, rank_cut: float = 1e-4, power: int = 4) -> np.ndarray:
    """The row-normalised spectral embedding V of the code's AWEC-S post-processing (spec 3.5 steps 1-3)."""
    Zs = (Z + Z.T) / 2.0
    # Z is symmetric: its SVD is the eigendecomposition with |eigenvalues| (left vectors = eigenvectors).
    vals, vecs = np.linalg.eigh(Zs)
    s = np.abs(vals)
    order = np.argsort(-s, kind="stable")
    s = s[order]
    U = vecs[:, order]
    r = int(np.sum(s > rank_cut * s[0])) if s[0] > 0 else 1
    U = U[:, :r] * np.sqrt(s[:r])[None, :]
    U = _row_normalize(U)
    W = U @ U.T
    del U
    W = W**power
    dinv = W.sum(axis=1)
    dinv = np.where(dinv > 0, 1.0 / np.sqrt(np.where(dinv > 0, dinv, 1.0)), 0.0)
    W *= dinv[:, None]
    W *= dinv[None, :]
    # W is symmetric PSD-like; the leading left singular vectors = eigenvectors of the largest |eigenvalues|.
    wv, wvec = np.linalg.eigh((W + W.T) / 2.0)
    idx = np.argsort(-np.abs(wv), kind="stable")[:n_clusters]
    return _row_normalize(wvec[:, idx])


def matlab_kmeans(V: np.ndarray, n_clusters: int, *, replicates: int = 1, start: str = "plus", max_iter: int = 100,
                  rng=None) -> np.ndarray:
    """k-means as the code's ``kmeans(V, c)`` runs it (MATLAB defaults; spec 3.5 step 4, A13).

    Parameters
    ----------
    V : (n, d) array
        Rows to cluster (the AWEC-S embedding).
    n_clusters : int
    replicates : int
        Independent starts; the one with the smallest sum of squared distances is kept (MATLAB 'Replicates').
    start : {"plus", "sample"}
        "plus": k-means++ with a single candidate per centre, i.e. the first centre uniformly at random and each
        next one drawn with probability proportional to the squared distance to the nearest chosen centre
        (MATLAB 'plus'; scikit-learn's default instead keeps the best of 2 + log(c) candidates per centre, the
        "greedy" variant, which is why its labels differ from the code's). "sample": c distinct rows drawn
        uniformly (MATLAB's default before R2014b).
    max_iter : int
        Lloyd (batch) iterations at most; MATLAB stops earlier when no assignment changes ('OnlinePhase' off).
    rng : numpy Generator

    Returns
    -------
    (n,) int64 labels. The random stream is ours (numpy's), not MATLAB's mt19937ar global stream, so the labels
    of one seed are not the code's; the distribution over seeds is.

    Notes
    -----
    Lloyd iterations are run by scikit-learn's ``KMeans(init=centres, n_init=1, tol=0, algorithm="lloyd")``: with
    ``tol=0`` it stops only when the assignment no longer changes, as MATLAB's batch phase does. An empty cluster
    gets the point farthest from its centre (MATLAB 'EmptyAction' 'singleton'; scikit-learn relocates empty
    clusters to far points likewise).
    """
    import warnings as _warnings

    from sklearn.cluster import KMeans, kmeans_plusplus
    from sklearn.exceptions import ConvergenceWarning

    V = np.ascontiguousarray(V, dtype=np.float64)
    rng = np.random.default_rng(rng)
    best_labels, best_inertia = None, np.inf
    for _ in range(int(replicates)):
        if start == "plus":
            centres, _ = kmeans_plusplus(V, n_clusters, n_local_trials=1, random_state=int_seed(rng))
        elif start == "sample":
            centres = V[rng.choice(V.shape[0], n_clusters, replace=False)]
        else:
            raise UserError(f"matlab_kmeans: start must be 'plus' or 'sample', got {start!r}")
        with _warnings.catch_warnings():
            # repeated rows in the start ('sample' on tied rows) are legal in MATLAB too
            _warnings.simplefilter("ignore", ConvergenceWarning)
            km = KMeans(n_clusters=n_clusters, init=centres, n_init=1, max_iter=max_iter, tol=0.0,
                        algorithm="lloyd").fit(V)
        if km.inertia_ < best_inertia:  # strict: ties keep the first replicate, as MATLAB does
            best_labels, best_inertia = km.labels_, km.inertia_
    return np.asarray(best_labels, dtype=np.int64)


# --------------------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------------------


_PARAMS = {
    "lambda": Param(0.1, low=0, low_open=True, doc="weight of the noise term (lambda/2)||E||^2",
                    source="paper grid {0.01,0.02,0.04,0.08,0.1,0.2}; 0.1 from the paper's suggested sub-grid"),
    "gamma": Param(50.0, low=0, low_open=True, doc="weight of ||Z - I||^2",
                   source="paper grid {0.1,0.5,1,5,10,50}; 50 from the paper's suggested sub-grid {5,10,50}: "
                          "with gamma <= 5 the code's 10-step Z solver leaves Z far from block structure and "
                          "identical members are not returned (tests/test_awec.py)"),
    "order": Param(2, type="int", low=1, high=10, doc="maximum order o of the connection matrices",
                   source="paper (main tables use o=2; Table 5 studies 1..5)"),
    "nn_rate": Param(0.5, low=0, low_open=True, doc="neighbours = round(nn_rate * n / c) (MATLAB rounding)",
                     source="paper + code (NNRate=0.5)"),
    "delta": Param(1.1, low=0, doc="weight of the Ky Fan rank surrogate Tr(H^T L_Z H)",
                   source="code fixes 1.1 (paper: 'self-tuned', A8)"),
    "mu0": Param(0.1, low=0, low_open=True, doc="initial ADMM penalty mu", source="paper Alg. 2"),
    "rho": Param(1.2, low=1, doc="growth factor of mu", source="paper Alg. 2 (rho1)"),
    "mu_max": Param(1e8, low=0, low_open=True, doc="cap of mu", source="paper Alg. 2"),
    "tol": Param(1e-2, low=0, low_open=True, doc="stop when max|A-C-E|, max|C-J| < tol", source="paper Alg. 2"),
    "max_iter": Param(100, type="int", low=1, doc="maximum ADMM iterations", source="code"),
    "inner_iter": Param(10, type="int", low=1, doc="inner ALM iterations of the Z sub-problem",
                        source="code update_Z.m (paper Alg. 1: 'until converged', A9)"),
    "eta0": Param(10.0, low=0, low_open=True, doc="initial inner ALM penalty eta", source="code + paper Alg. 1"),
    "rho2": Param(1.5, low=1, doc="growth factor of eta", source="paper Alg. 1 + code"),
    "laplacian": Param("unnormalized", type="str", choices=("unnormalized", "normalized"),
                       doc="Laplacian of C in the Z sub-problem: code (unnormalized) or paper Alg. 1 (normalized)",
                       source="code (A4)"),
    "refresh_mu": Param(False, type="bool", doc="use the current mu in the C-update denominator (paper Eq. 9)",
                        source="code keeps mu0 (A6)"),
    "multiplier_init": Param("ones", type="str", choices=("ones", "zeros"),
                             doc="start of Y1, Y2: code all-ones, or zeros (paper-style variant)", source="code (A7)"),
    "order_threshold": Param(True, type="bool",
                             doc="drop entries below mean - std/2 in the higher orders (code) or keep all (paper Eq. 2)",
                             source="code (A2)"),
    "degree_fallback": Param("error", type="str", choices=("error", "abs"),
                             doc="mixed-sign column sums of C: raise (default) or continue with |d| (deviation)",
                             source="spec 3.4 step 1"),
    "ablation": Param("none", type="str", choices=("none", "no-topo", "no-high-order"),
                      doc="Table 6 ablations (our interpretation, spec A23)", source="spec A23"),
    "eigensolver": Param("auto", type="str", choices=("auto", "dense", "lobpcg"),
                         doc="eigenvectors of L_Z: dense (exact) or LOBPCG warm start (approximation); auto = dense "
                             "up to n=3000", source="ensclust choice (spec 6)"),
    "z_step": Param("auto", type="str", choices=("auto", "dense", "sparse"),
                    doc="products of the Z sub-problem and of Gm Gm^T: dense (the code's GEMMs) or sparse (same "
                        "iterates up to floating-point reassociation, sparse products while Z is sparse, Z solved "
                        "in column blocks: fewer n x n buffers); auto = sparse for n >= 300",
                    source="ensclust choice (issue #6; equal results, tests/test_awec.py)"),
    "dtype": Param("float64", type="str", choices=("float64", "float32"),
                   doc="precision of the n x n iterates (float32 = approximation, half the memory)",
                   source="ensclust choice (spec 6)"),
    "memory": Param(None, type="memory",
                    doc="cache of the deterministic solve (None, a folder path, a joblib.Memory or an "
                        "ensclust.core.cache.SolveCache); AWEC-H and AWEC-S given the same cache solve once",
                    source="ensclust choice (scikit-learn's memory convention; the runner passes one per data set)"),
}


def _solve_topology(members: np.ndarray, n_clusters: int, solve_params: dict) -> dict:
    """The deterministic part of an AWEC fit: co-association, connection matrices and the ADMM (spec 3.1-3.4).

    A function of its arguments only (no random state: the LOBPCG option starts from the previous H, spec 6),
    so a ``memory`` cache (:mod:`ensclust.core.cache`) may return a stored result for it; AWEC-H and AWEC-S learn
    the same Z and share it that way. Only the matrix the labels are read from is returned (``"S"``: Z, or C
    for the no-topo ablation), with the solver's diagnostics.
    """
    p = solve_params
    dtype = np.float64 if p["dtype"] == "float64" else np.float32
    A = coassociation(members, dtype=np.float64)
    khn, info = knn_weights(A, n_clusters, p["nn_rate"])
    G = connection_matrices(khn, p["order"], threshold=p["order_threshold"])
    del khn
    A = A.astype(dtype, copy=False)
    G = [g.astype(dtype, copy=False) for g in G]
    out = solve_awec(A, G, n_clusters, lam=p["lambda"], gamma=p["gamma"], delta=p["delta"], mu0=p["mu0"],
                     rho=p["rho"], mu_max=p["mu_max"], tol=p["tol"], max_iter=p["max_iter"],
                     inner_iter=p["inner_iter"], eta0=p["eta0"], rho2=p["rho2"],
                     laplacian=p["laplacian"], refresh_mu=p["refresh_mu"],
                     multiplier_init=p["multiplier_init"], degree_fallback=p["degree_fallback"],
                     eigensolver=p["eigensolver"], ablation=p["ablation"], z_step=p["z_step"],
                     rng=None)
    out["S"] = out["C"] if p["ablation"] == "no-topo" else out["Z"]
    # read-only: a cache hands this array to every later caller, so none of them may alter it
    if isinstance(out["S"], np.ndarray):
        out["S"].setflags(write=False)
    out["info"] = info
    return {k: v for k, v in out.items() if k not in ("C", "Z", "history")}


# Parameters that do not change the solve: the cache and the AWEC-S post-processing.
_NOT_SOLVE_PARAMS = ("memory", "rank_cut", "power", "kmeans_n_init", "kmeans", "kmeans_start")


class _AWEC(ConsensusMethod):
    """Shared solver of AWEC-H / AWEC-S.

    Documented non-property: for small gamma (<= 5 on the planted check, <= 1 for every lambda) the
    authors' fixed 10-step inner solver restarted from Z = 1/n returns a nearly uniform Z, so m identical
    members are *not* always returned as that partition. The property checks hold for gamma >= 10 at every
    lambda of the paper's grid (AWEC-H) and at gamma = 50 for every lambda (both variants); the default
    gamma = 50 lies in the paper's suggested range.
    """

    params = _PARAMS
    solve_group = "awec"

    def _solve(self, members, n_clusters):
        from ensclust.core.cache import cached_call

        solve_params = {k: v for k, v in self._params.items() if k not in _NOT_SOLVE_PARAMS}
        out, hit = cached_call(self._params["memory"], _solve_topology, members, n_clusters, solve_params)
        out = dict(out)
        out["cached"] = hit
        return out

    def _record(self, out):
        # alpha_i < 0 (the closed form ignores alpha >= 0, spec A11) is logged in diagnostics["negative_alpha"].
        self.diagnostics_ = {
            "n_iter": int(out["n_iter"]), "converged": bool(out["converged"]), "residual": float(out["residual"]),
            "alpha": [float(a) for a in out["alpha"]],
            "negative_degree_iterations": int(out["negative_degree_iterations"]),
            "mixed_sign_iterations": int(out["mixed_sign_iterations"]),
            "negative_alpha": bool(out["negative_alpha"]), "solve_cached": bool(out.get("cached", False)),
            # inner steps x column blocks of the sparse path that used sparse / dense products (0 for "dense")
            "z_step": out.get("z_step"), "z_sparse_steps": int(out.get("z_sparse_steps", 0)),
            "z_dense_steps": int(out.get("z_dense_steps", 0)),
            **out.get("info", {}),
        }

    def _learned_matrix(self, members, n_clusters) -> np.ndarray:
        """Solve, record the diagnostics and return the dense float64 matrix the labels are read from.

        That is the learned topology Z, or C for the "w/o Topo" ablation, which has no Z (spec A23).
        """
        out = self._solve(members, n_clusters)
        self._record(out)
        S = out["S"]
        if sparse.issparse(S):
            S = S.toarray()
        return np.asarray(S, dtype=np.float64)


@register
class AWECH(_AWEC):
    """AWEC-H: average-link hierarchical clustering of the learned topology Z (spec 3.5)."""

    name = "awec-h"
    accepts_missing = True
    missing_doc = "co-association over the members that label both points, then the AWEC model on it"
    summary = "adaptive high-order topological weights (AAAI 2024), average link on the learned topology Z"

    def _fit(self, members, n_clusters, X, rng):
        S = self._learned_matrix(members, n_clusters)
        S = (S + S.T) / 2.0
        self.consensus_matrix_ = S
        return hac_labels(S, n_clusters, linkage="average")


@register
class AWECS(_AWEC):
    """AWEC-S: the authors' spectral post-processing of Z, then k-means (spec 3.5, A13)."""

    name = "awec-s"
    accepts_missing = True
    missing_doc = "co-association over the members that label both points, then the AWEC model on it"
    randomized = True
    summary = "adaptive high-order topological weights (AAAI 2024), spectral step on the learned topology Z"
    params = {
        **_PARAMS,
        "rank_cut": Param(1e-4, low=0, doc="keep singular values > rank_cut * s_1 of Z", source="code spectral_clustering.m"),
        "power": Param(4, type="int", low=1, doc="element-wise power of the embedding affinity", source="code"),
        "kmeans_n_init": Param(1, type="int", low=1, doc="k-means restarts (replicates), the best objective is kept",
                               source="MATLAB kmeans defaults used by the code: 1 replicate"),
        "kmeans": Param("sklearn", type="str", choices=("sklearn", "code"),
                        doc="final k-means: scikit-learn's (greedy k-means++ seeding, tol 1e-4) or the code's MATLAB "
                            "kmeans(V, c) (plain k-means++ or random-sample start, Lloyd to convergence)",
                        source="spec 3.5 step 4 / A13; issue 18 (AWEC-S differs from the code on iris and Ecoli)"),
        "kmeans_start": Param("plus", type="str", choices=("plus", "sample"),
                              doc="start of kmeans='code': k-means++ with one candidate per centre (MATLAB "
                                  "'plus', default since R2014b) or c distinct random rows ('sample', before)",
                              source="MATLAB kmeans 'Start'"),
    }

    def _fit(self, members, n_clusters, X, rng):
        S = self._learned_matrix(members, n_clusters)
        self.consensus_matrix_ = S
        p = self._params
        V = awec_s_embedding(S, n_clusters, rank_cut=p["rank_cut"], power=p["power"])
        if p["kmeans"] == "code":
            self.diagnostics_["kmeans"] = (f"MATLAB kmeans defaults (code): start={p['kmeans_start']}, "
                                           f"{p['kmeans_n_init']} replicate(s), Lloyd, max_iter=100")
            return matlab_kmeans(V, n_clusters, replicates=p["kmeans_n_init"], start=p["kmeans_start"],
                                 rng=rng)
        from sklearn.cluster import KMeans

        self.diagnostics_["kmeans"] = "sklearn KMeans, k-means++ seeding, max_iter=100"
        km = KMeans(n_clusters=n_clusters, n_init=p["kmeans_n_init"], max_iter=100, random_state=int_seed(rng))
        return km.fit_predict(V).astype(np.int64)

"""Spectral building blocks: normalised embedding, discretisation, and bipartite (Tcut-style) embedding.

* :func:`spectral_embedding`  top-k eigenvectors of D^-1/2 W D^-1/2 (Ng-Jordan-Weiss), rows unit-normalised.
* :func:`discretize`          Yu & Shi (2003) multiclass spectral discretisation of an embedding.
* :func:`spectral_clustering` embedding + k-means (NJW) or discretisation.
* :func:`ncut_linear_kernel`  Ncut of the linear kernel X X^T of a non-negative n x K matrix (RCEC, or the
  co-association B B^T of a few partitions) from a thin SVD, never forming the n x n kernel.
* :func:`bipartite_embedding` object rows of the Ncut embedding of the object-cluster bipartite graph,
  obtained from an SVD of the normalised n x K biadjacency (never an (n+K)^2 matrix).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.linalg import cho_factor, cho_solve, lapack
from scipy.sparse.linalg import ArpackNoConvergence, eigsh, svds
from sklearn.cluster import KMeans

from ensclust.core.labels import relabel
from ensclust.rng import check_random_state, int_seed

_DENSE_LIMIT = 2500  # below this, a dense eigendecomposition is faster and more robust than ARPACK
#: ARPACK restarts before a sparse input is densified and handed to the dense top-k solver (a slow converging
#: call needed ~410; ARPACK's own default is 10 n restarts, 40 min on a stalled one)
ARPACK_MAXITER = 1000
#: ARPACK restarts before a dense input goes to the block solver: about the cost of its Cholesky factorisation
#: (70-145 matrix-vector products at n = 2622-10992 on one thread, ~7-13 restarts at k = 10), so that neither
#: a fast Lanczos run nor a slow one costs more than about twice the better of the two
ARPACK_DENSE_RESTARTS = 10
#: the dense top-k solver's shift above the top of the spectrum, block oversampling, residual tolerance and
#: step budget (:func:`top_eigenpairs_dense`)
SHIFT_ABOVE_TOP = 1e-4
BLOCK_OVERSAMPLE = 10
RESIDUAL_TOL = 1e-10
MAX_BLOCK_STEPS = 1000


def _inv_sqrt(deg: np.ndarray) -> np.ndarray:
    deg = np.asarray(deg, dtype=np.float64).ravel()
    out = np.zeros_like(deg)
    pos = deg > 0
    out[pos] = 1.0 / np.sqrt(deg[pos])
    return out


def normalized_affinity(W):
    """D^-1/2 W D^-1/2 (zero rows stay zero), dense or sparse like the input."""
    d = _inv_sqrt(np.asarray(W.sum(axis=1)).ravel())
    if sparse.issparse(W):
        Dm = sparse.diags(d)
        return (Dm @ W @ Dm).tocsr()
    return (W * d[:, None]) * d[None, :]


def _dense_symmetric(M) -> np.ndarray:
    dense = M.toarray() if sparse.issparse(M) else np.asarray(M)
    return (dense + dense.T) / 2.0


def top_eigenpairs_dense(M: np.ndarray, k: int, start: np.ndarray, *,
                         work: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k largest eigenpairs of a dense symmetric matrix by shifted block inverse iteration.

    The callers' normalised affinities have their top eigenvalues packed next to 1 (DREC on the USPS pool: the
    ten largest within 0.003 of 1, on LS within 1e-9), where ARPACK's single-vector Lanczos separates them one
    restart at a time (43 s at n = 6719, and stalls). Here sigma I - M with sigma = 1 + ``SHIFT_ABOVE_TOP`` is
    factored once (Cholesky, n^3 / 3 flops: 3.6 s at n = 6719 on one thread) and a block of k + p vectors is
    iterated through it: lambda -> 1 / (sigma - lambda) pulls the wanted eigenvalues far from the rest, and the
    block converges on the whole invariant subspace whatever the spacing inside it (at the rate
    (sigma - lambda_k) / (sigma - lambda_{k+p+1}) per step, 2 n^2 (k + p) flops each), then Rayleigh-Ritz on M
    gives the pairs. NJW does not see the basis chosen inside a (near-)repeated eigenvalue: unit rows and
    k-means are invariant under rotations of the embedding. A spectrum that reaches sigma (M not a normalised
    non-negative affinity) is shifted above ARPACK's largest eigenvalue instead.

    ``start``: the first start vectors (n, or n x j): a random draw, or the previous solution of an iteration
    (a warm start: with k or more columns the Ritz pairs are checked after every step, else every fifth); the
    rest of the block comes from a fixed stream, so the result is deterministic. Converged when every Ritz
    pair's residual |M v - lambda v| is below ``RESIDUAL_TOL``. Returns (values in decreasing order, vectors).
    ``work``: an n x n array (of M's dtype) the factorisation may overwrite, or None to allocate one.
    """
    n = M.shape[0]
    start = np.asarray(start, dtype=M.dtype).reshape(n, -1)
    b = max(min(n, k + BLOCK_OVERSAMPLE), start.shape[1])
    check_every = 1 if start.shape[1] >= k else 5
    tol = max(RESIDUAL_TOL, 1e3 * np.finfo(M.dtype).eps)  # float32 inputs: what single precision can reach
    top = 1.0
    for _ in range(2):
        A = np.negative(M, out=work)
        A[np.diag_indices(n)] += top + SHIFT_ABOVE_TOP * max(1.0, abs(top))
        try:
            factor = cho_factor(A, overwrite_a=True, check_finite=False)
            break
        except np.linalg.LinAlgError:
            top = float(eigsh(M, k=1, which="LA", v0=start[:, 0], maxiter=ARPACK_MAXITER,
                              return_eigenvectors=False)[0])
    else:
        raise np.linalg.LinAlgError("top eigenpairs: the shifted matrix is not positive definite")
    del A
    X = np.column_stack([start, np.random.default_rng(0).standard_normal((n, b - start.shape[1])).astype(M.dtype)])
    X, _ = np.linalg.qr(X)
    for step in range(1, MAX_BLOCK_STEPS + 1):
        X, _ = np.linalg.qr(cho_solve(factor, X, check_finite=False))
        if step % check_every and step < MAX_BLOCK_STEPS:
            continue  # a Rayleigh-Ritz check costs one more product with M
        MX = M @ X
        vals, R = np.linalg.eigh(X.T @ MX)
        vals, R = vals[::-1][:k], R[:, ::-1][:, :k]
        vecs = X @ R
        if np.linalg.norm(MX @ R - vecs * vals, axis=0).max() <= tol:
            break
    return vals, vecs


def _top_eigvecs(M, k: int, rng: np.random.Generator) -> np.ndarray:
    n = M.shape[0]
    if n <= _DENSE_LIMIT or k >= n - 1:
        vals, vecs = np.linalg.eigh(_dense_symmetric(M))
        return vecs[:, ::-1][:, :k]
    v0 = rng.standard_normal(n)
    # Lanczos first (a well separated top, e.g. a co-association at n = 10992, converges in a few restarts),
    # then the block solver; a dense input gets about one Cholesky factorisation's worth of restarts, a sparse
    # one (cheap products, a dense n^2 copy to avoid) many more
    restarts = ARPACK_MAXITER if sparse.issparse(M) else ARPACK_DENSE_RESTARTS
    try:
        vals, vecs = eigsh(M, k=k, which="LA", v0=v0, maxiter=restarts)
    except ArpackNoConvergence:
        # top eigenvalues packed next to 1 (DREC's affinities; within ~1e-9 on LS at lambda 0.1, where Lanczos
        # stalls): the block solver converges on the whole eigenspace
        dense = np.asarray(M) if not sparse.issparse(M) else _dense_symmetric(M)
        vals, vecs = top_eigenpairs_dense(dense, k, v0)
    order = np.argsort(vals)[::-1]
    return vecs[:, order]


def _row_normalize(V: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return V / norms


def spectral_embedding(W, n_components: int, *, random_state=None, normalize_rows: bool = True) -> np.ndarray:
    """Top ``n_components`` eigenvectors of the normalised affinity (NJW), rows unit length by default."""
    rng = check_random_state(random_state)
    V = _top_eigvecs(normalized_affinity(W), n_components, rng)
    # Fix the sign so results do not depend on the eigensolver's sign choice.
    signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    V = V * signs
    return _row_normalize(V) if normalize_rows else V


def discretize(V: np.ndarray, *, random_state=None, max_iter: int = 30) -> np.ndarray:
    """Yu & Shi multiclass spectral discretisation of an n x k embedding; returns labels."""
    rng = check_random_state(random_state)
    n, k = V.shape
    V = _row_normalize(V)
    R = np.zeros((k, k))
    R[:, 0] = V[rng.integers(n)]
    c = np.zeros(n)
    for j in range(1, k):
        c += np.abs(V @ R[:, j - 1])
        R[:, j] = V[np.argmin(c)]
    last = 0.0
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(max_iter):
        labels = np.argmax(V @ R, axis=1)
        X = np.zeros((n, k))
        X[np.arange(n), labels] = 1.0
        U, s, Vt = np.linalg.svd(X.T @ V)
        ncut = 2.0 * (n - s.sum())
        if abs(ncut - last) < np.finfo(float).eps:
            break
        last = ncut
        R = Vt.T @ U.T
    return relabel(labels)


def kmeans_labels(X, n_clusters: int, *, random_state=None, n_init: int = 10, max_iter: int = 300,
                  init: str = "k-means++") -> np.ndarray:
    """k-means with a seed drawn from ``random_state``; ``init`` is k-means++ or ``"random"`` (c random rows,
    the seeding of litekmeans and MATLAB's 'sample' start)."""
    rng = check_random_state(random_state)
    km = KMeans(n_clusters=n_clusters, n_init=n_init, max_iter=max_iter, init=init, random_state=int_seed(rng))
    return km.fit_predict(X).astype(np.int64)


def spectral_clustering(W, n_clusters: int, *, random_state=None, assign: str = "kmeans", n_init: int = 10,
                        init: str = "k-means++"):
    """Normalised spectral clustering of affinity ``W``: NJW embedding, then k-means (seeded by ``init``, see
    :func:`kmeans_labels`) or discretisation."""
    rng = check_random_state(random_state)
    V = spectral_embedding(W, n_clusters, random_state=rng)
    if assign == "discretize":
        return discretize(V, random_state=rng)
    if assign != "kmeans":
        raise ValueError(f"assign must be 'kmeans' or 'discretize', got {assign!r}")
    return kmeans_labels(V, n_clusters, random_state=rng, n_init=n_init, init=init)


def bipartite_embedding(B, n_components: int, *, random_state=None, normalize_rows: bool = True) -> np.ndarray:
    """Object-side Ncut embedding of the bipartite graph with n x K biadjacency ``B``.

    The normalised adjacency of [[0, B], [B^T, 0]] has eigenvectors [u; v] / sqrt(2) built from the singular
    vectors of D1^-1/2 B D2^-1/2, so the object rows are the top left singular vectors.
    """
    rng = check_random_state(random_state)
    B = sparse.csr_matrix(B, dtype=np.float64)
    d1 = _inv_sqrt(np.asarray(B.sum(axis=1)).ravel())
    d2 = _inv_sqrt(np.asarray(B.sum(axis=0)).ravel())
    Bn = sparse.diags(d1) @ B @ sparse.diags(d2)
    k = n_components
    n, K = Bn.shape
    if K < n and K <= 4 * _DENSE_LIMIT and k < K:
        # Few base clusters: the left singular vectors follow from the K x K Gram matrix,
        # U = Bn V diag(1/s) with Bn^T Bn = V diag(s^2) V^T, without an n x K dense SVD (USPS: K=1364, n=11000).
        w, V = np.linalg.eigh((Bn.T @ Bn).toarray())
        top = np.argsort(w)[::-1][:k]
        U = (Bn @ V[:, top]) / np.sqrt(np.maximum(w[top], 1e-300))[None, :]
    elif min(Bn.shape) <= _DENSE_LIMIT or k >= min(Bn.shape) - 1:
        U, s, _ = np.linalg.svd(Bn.toarray(), full_matrices=False)
        U = U[:, :k]
    else:
        v0 = rng.standard_normal(min(Bn.shape))
        U, s, _ = svds(Bn, k=k, v0=v0)
        U = U[:, np.argsort(s)[::-1]]
    signs = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    signs[signs == 0] = 1.0
    U = U * signs
    return _row_normalize(U) if normalize_rows else U


def ncut_linear_kernel(X: np.ndarray, n_clusters: int, rng, assign: str = "discretize") -> tuple[np.ndarray, int]:
    """Normalised cut of the kernel X X^T without forming it (specs/rcec.md 3.5).

    deg = X (X^T 1); the top-c left singular vectors of diag(deg^-1/2) X are the top eigenvectors of
    D^-1/2 X X^T D^-1/2. Rows with zero degree (all their base clusters removed by beta, specs/rcec.md R19) get the
    label of the nearest cluster centre in the embedding; their count is returned.
    """
    X = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    deg = X @ X.sum(axis=0)
    zero_rows = deg <= 1e-12
    Z = X / np.sqrt(np.maximum(deg, 1e-12))[:, None]
    Z[zero_rows] = 0.0
    k = n_clusters
    if min(Z.shape) <= 2000 or k >= min(Z.shape) - 1:
        U, _, _ = np.linalg.svd(Z, full_matrices=False)
        U = U[:, :k]
    else:
        U, s, _ = svds(Z, k=k, v0=rng.standard_normal(min(Z.shape)))
        U = U[:, np.argsort(s)[::-1]]
    live = ~zero_rows
    labels = np.zeros(X.shape[0], dtype=np.int64)
    if assign == "discretize":
        labels[live] = discretize(U[live], random_state=rng)
    else:
        Un = U[live] / np.maximum(np.linalg.norm(U[live], axis=1, keepdims=True), 1e-12)
        labels[live] = kmeans_labels(Un, k, random_state=rng, n_init=10)
    if zero_rows.any():
        centres = np.vstack([U[live][labels[live] == j].mean(axis=0) for j in np.unique(labels[live])])
        dists = ((U[zero_rows][:, None, :] - centres[None]) ** 2).sum(axis=2)
        labels[zero_rows] = np.unique(labels[live])[np.argmin(dists, axis=1)]
    return labels, int(zero_rows.sum())


def consensus_of_runs(runs: list[np.ndarray], n_clusters: int, rng) -> np.ndarray:
    """Combine several output partitions by Ncut on their co-association matrix (specs/rcec.md R12).

    The co-association of the runs is B B^T / r for their one-hot matrix B, so its Ncut is
    :func:`ncut_linear_kernel` on B (no n x n matrix).
    """
    from ensclust.core.labels import check_members, one_hot

    if len(runs) == 1:
        return relabel(runs[0])
    B = one_hot(check_members(np.column_stack(runs)))
    labels, _ = ncut_linear_kernel(B, n_clusters, rng)
    return labels


def eigh_significant(A: np.ndarray, rel_tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The eigenpairs of a symmetric matrix with |lambda| > rel_tol max |lambda| (ascending), and no others.

    One Householder tridiagonalisation (``dsytrd``), every eigenvalue of the tridiagonal matrix without vectors
    (``dsterf``, O(n^2)), the vectors of the kept ones only (MRRR, ``dstemr``, two index ranges: the negative and
    the positive end of the spectrum) and their back-transformation by the reflectors (``dormqr``): about the
    tridiagonalisation's cost when few pairs are kept, where a full ``eigh`` also computes and back-transforms
    every other vector (RSEC's step 4: ~300 of ~1300 pairs kept).
    """
    A = np.asarray(A)
    n = A.shape[0]
    if n == 0:
        return np.zeros(0, dtype=A.dtype), np.zeros((0, 0), dtype=A.dtype)
    prefix = "s" if A.dtype == np.float32 else "d"
    sytrd, sytrd_lwork, sterf, stemr, ormqr = (getattr(lapack, prefix + name)
                                               for name in ("sytrd", "sytrd_lwork", "sterf", "stemr", "ormqr"))
    lwork, info = sytrd_lwork(n, lower=1)
    c, d, e, tau, info = sytrd(A, lower=1, lwork=int(lwork))
    vals, info2 = sterf(d, e)
    if info or info2:
        raise np.linalg.LinAlgError("eigh_significant: the tridiagonal reduction or its eigenvalues failed")
    top = max(-float(vals[0]), float(vals[-1]))
    if not top > 0:
        return np.zeros(0, dtype=A.dtype), np.zeros((n, 0), dtype=A.dtype)
    lo = int(np.searchsorted(vals, -rel_tol * top, side="left"))   # vals[:lo] < -thr
    hi = int(np.searchsorted(vals, rel_tol * top, side="right"))   # vals[hi:] > thr
    parts_w, parts_z = [], []
    for first, last in ((1, lo), (hi + 1, n)):                     # 1-based index ranges
        if last < first:
            continue
        m, w, z, info = stemr(d, np.append(e, 0.0).astype(d.dtype), 3, 0.0, 0.0, first, last)  # d is copied
        if info:
            raise np.linalg.LinAlgError("eigh_significant: MRRR failed")
        parts_w.append(w[:m])
        parts_z.append(z[:, :m])
    w = np.concatenate(parts_w)
    Z = np.ascontiguousarray(np.hstack(parts_z))
    if n > 1 and Z.shape[1]:
        lwork = max(1, 64 * Z.shape[1])
        cq, _, info = ormqr("L", "N", c[1:, :-1], tau, Z[1:], lwork)
        if info:
            raise np.linalg.LinAlgError("eigh_significant: the back-transformation failed")
        Z[1:] = cq
    return w, Z

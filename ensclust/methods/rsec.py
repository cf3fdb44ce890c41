"""RSEC: robust spectral ensemble clustering (Tao, Liu, Li, Ding, Fu; CIKM 2016 / TKDD 2019).

specs/baselines/robust_family.md section 1 (confidence medium; RSEC-Z's post-processing medium-low). The spec
restates a third-party R port of Tao's MATLAB code; the original was not available. The convex (nuclear-norm)
version is implemented, as the spec recommends; the TKDD paper's non-convex rank surrogate is not.

Model: learn a low-rank representation Z of the co-association matrix S with column-sparse errors E,
jointly with a spectral embedding H of the affinity built from Z:
    min  lambda1 |J|_* + lambda2 |E|_{2,1} - tr(H^T D_z^-1/2 W_z D_z^-1/2 H)   s.t.  S = S Z + E,  Z = J,
solved by inexact ALM (multipliers Y1, Y2, penalty mu growing by rho = 1.1 up to 1e10; stop when
max(|S - SZ - E|_inf, |Z - J|_inf) < 1e-7, at most 500 iterations):
  1. J = SVT_{lambda1/mu}(Z + Y2/mu)                                    (singular value thresholding)
  2. Z = Q [S^T S - S^T E + J + (S^T Y1 - Y2 + D^-1/2 H H^T D^-1/2)/mu],  Q = (S^T S + I)^-1
  3. E = column-wise shrinkage of S - SZ + Y1/mu by lambda2/mu          (l2,1 prox)
  4. W0 = (Z + Z^T)/2 + H H^T; LRR post-processing: W0 = U Sigma U^T restricted to sigma > 1e-4 sigma_1,
     P = U_r Sigma_r^1/2 with unit rows, W_z = (P P^T)^{o4}
  5. H = D_z^-1/2 (top-K eigenvectors of D_z^-1/2 W_z D_z^-1/2)
Outputs: RSEC-H = k-means on the rows of H; RSEC-Z = NJW spectral clustering of W_z at convergence.

Choices where the spec is uncertain (each tested):

* ``mu0 = 1.5 / |S|_2`` with the spectral norm (MATLAB ``norm``); the R port's 1-norm is offered as
  ``mu_norm="one"``.
* Step 4 on a symmetric, possibly indefinite W0: the SVD's singular values are |eigenvalues| and U U^T-type
  products use the eigenvectors, so P = V_r |Lambda_r|^1/2 from ``eigh`` equals the SVD route exactly.
  Rows are normalised one by one (the R port's vectorised normalisation is wrong for r > 1, spec).
* RSEC-Z (medium-low confidence): NJW on the W_z of the last iteration (spec's recommendation, consistent with
  EC-CMS's "K-means or spectral clustering on them").
* RSEC-H: k-means with ``n_init = 10`` (spec) and at most 30 Lloyd iterations (R port ``iter.max = 30``).
* The single "RSEC" column of ACMK and SPCE is taken to be RSEC-H (spec assumption), so no third name is
  registered: configs use ``rsec-h`` with label "RSEC".

Exact savings (nothing approximated beyond rounding):

* Microclusters. S = B B^T / m for the one-hot matrix B (n x K); objects with identical label rows are
  identical in every step, so the iteration runs on N x N matrices (N = number of microclusters, e.g. 2622
  instead of 6435 on LS) in weighted coordinates (see :func:`rsec_solve`); RSEC-H's k-means and RSEC-Z's NJW
  k-means still run on the n object rows with the same random stream.
* S = U diag(s) U^T from an SVD of the weighted B (rank r <= K), so Q = I - U diag(s^2/(1+s^2)) U^T.
  Y1, E and the residual S - SZ - E have their columns in S's range U (they start at 0 and every update adds
  U times something), so they are kept as r x N coefficients (Y1 = U y1, E = U e; the column norms of step 3
  are those of the coefficients), and U^T Z, U^T Y2 are carried along: an iteration has two N^2 r products
  (forming Z, and - in the iterations where a Cauchy-Schwarz bound does not settle it - the residual S - SZ - E,
  whose maximum the stopping rule needs).
* Step 1: the columns of Z + Y2/mu lie in span(U, J's last left singular vectors, the last D^-1/2 H's), of
  dimension R = r + rank J + 3k; the SVT is an R x N SVD (:func:`svt_in_span`) of coefficients whose first r
  rows are U^T Z + U^T Y2 / mu. Step 4: the columns of W0 lie in
  span(that basis, the rows of Z, H), of dimension <= 2R + k; the eigendecomposition is that of a core matrix
  (:func:`core_in_span`). Both are checked through Frobenius norms and fall back to the N x N decomposition.

What remains per iteration: the N^2 affinity (P P^T)^{o4} with r_P ~ r kept eigenpairs, the top-k
eigenvectors of its normalisation (dense: ARPACK needs more time here, the top eigenvalues being clustered),
the two N^2 r products, the R x N SVD and the eigendecomposition of the step-4 core (its rows escape span(U, ...)
once the column shrinkage of step 3 is active, so it is up to 2R + k wide): see results/bench/rsec_s6 and
results/bench/rsec_s19.
``dtype="float32"`` runs the decompositions and products in single precision (the 1e-7 tolerance is then out
of reach, so convergence is declared at ``tol_float32``).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ensclust.core.dense import power_inplace, symmetrize_inplace
from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import (
    _DENSE_LIMIT,
    _row_normalize,
    eigh_significant,
    kmeans_labels,
    top_eigenpairs_dense,
)
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param


def svt(M: np.ndarray, tau: float) -> tuple[np.ndarray, int]:
    """Singular value soft-thresholding: argmin_X tau |X|_* + 1/2 |X - M|_F^2. Returns (X, rank).

    LAPACK's divide-and-conquer ``gesdd`` occasionally fails to converge on a finite matrix (seen once on
    Led7digit in AWEC's medium table); the slower QR-iteration ``gesvd`` then computes the same decomposition.
    """
    left, shrunk, Vt, r = _svt_factors(M, tau)
    if r == 0:
        return np.zeros_like(M), 0
    return (left * shrunk) @ Vt, r


def svt_in_span(M: np.ndarray, tau: float, basis: np.ndarray, C: np.ndarray, *, check: float = 1e-7):
    """SVT of a matrix whose columns lie in the span of the orthonormal ``basis`` (N x R, R < N), as factors.

    M = basis C with C = basis^T M (R x N), so the singular values of M are those of C and its left singular
    vectors are basis times those of C: an R x N SVD replaces the N x N one. The caller gives ``C`` (it has most
    of its rows cheaper than the N^2 R product). The span is checked through |M|_F^2 - |C|_F^2 =
    |M - basis C|_F^2; should it hold more than ``check`` (relative, in norm) of M, the full SVD is used instead.
    Returns (left, shrunk, Vt, rank, in_span): SVT(M) = (left * shrunk) @ Vt with ``left`` the N x rank left
    singular vectors, ``shrunk`` the thresholded singular values, and ``in_span`` False when the full SVD was used.
    """
    m2 = float(np.einsum("ij,ij->", M, M))
    if m2 - float(np.einsum("ij,ij->", C, C)) > check**2 * m2:
        return (*_svt_factors(M, tau), False)
    W, s, Vt = _svd(C)
    r = int((s > tau).sum())
    return basis @ W[:, :r], s[:r] - tau, Vt[:r], r, True


def _svd(M):
    """Thin SVD by gesdd, falling back to gesvd when divide and conquer does not converge (see :func:`svt`)."""
    try:
        return linalg.svd(M, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    except linalg.LinAlgError:
        return linalg.svd(M, full_matrices=False, check_finite=False, lapack_driver="gesvd")


def _svt_factors(M, tau):
    """Factors (left, shrunk, Vt, rank) of SVT_tau(M) = (left * shrunk) @ Vt from a full thin SVD."""
    U, s, Vt = _svd(M)
    r = int((s > tau).sum())
    return U[:, :r], s[:r] - tau, Vt[:r], r


def span_basis(U: np.ndarray, extra: list, *, rel_tol: float = 1e-12) -> np.ndarray:
    """Orthonormal basis of span(U, extra...) for an orthonormal U: U followed by an orthonormal basis of the
    part of the extra columns outside span(U) (unit columns projected out twice, a rank-revealing QR with column
    pivoting that keeps the directions with |R_ii| above ``rel_tol``, then projected out once more and
    re-orthonormalised by QR, so that the added directions are orthogonal to U and to each other to rounding even
    when they come from tiny parts; the pivoted QR costs half the SVD it replaced, results/bench/rsec_s21).
    Extra directions never harm (the basis only has to contain the span); a dropped one is below ``rel_tol``.
    """
    parts = [x for x in extra if x.shape[1]]
    if not parts:
        return U
    G = np.hstack(parts)
    norms = np.linalg.norm(G, axis=0)
    G = G[:, norms > 0] / norms[norms > 0]
    for _ in range(2):
        G = G - U @ (U.T @ G)
    # rank-revealing QR with column pivoting (|R_ii| non-increasing): the directions above rel_tol
    Q, R, _ = linalg.qr(G, mode="economic", pivoting=True, check_finite=False)
    Q = Q[:, np.abs(np.diag(R)) > rel_tol]
    if Q.shape[1] == 0:
        return U
    Q = Q - U @ (U.T @ Q)
    Q, _ = np.linalg.qr(Q)
    return np.hstack([U, Q])


def core_in_span(W0: np.ndarray, basis: np.ndarray, C: np.ndarray, Ht: np.ndarray, *, check: float = 1e-7):
    """W0 = (Z + Z^T)/2 + Ht Ht^T with Z = basis C (basis N x R orthonormal, C = basis^T Z) as B2 core B2^T.

    The columns of W0 lie in span(basis, C^T, Ht) (dimension R2 <= 2R + k); with B2 = [basis, Q2] an
    orthonormal basis of it, W0 = B2 core B2^T and core = (T + T^T)/2 + (B2^T Ht)(B2^T Ht)^T, T = [C B2; 0]:
    the nonzero eigenpairs of W0 are (eigenvalues of core, B2 times its eigenvectors) and the others are 0.
    Checked through |W0|_F = |core|_F. Returns (core, B2), or None when R2 >= N or the check fails.
    """
    N, R = basis.shape
    B2 = span_basis(basis, [C.T, Ht])
    if B2.shape[1] >= N:
        return None
    T = C @ B2
    T = np.vstack([T, np.zeros((B2.shape[1] - R, B2.shape[1]), dtype=T.dtype)])
    Hb = B2.T @ Ht
    core = (T + T.T) / 2.0 + Hb @ Hb.T
    w2 = float(np.einsum("ij,ij->", W0, W0))
    if w2 - float(np.einsum("ij,ij->", core, core)) > check**2 * w2:
        return None
    return core, B2


def l21_shrink(G: np.ndarray, tau: float) -> np.ndarray:
    """Column-wise l2,1 prox: argmin_E tau |E|_{2,1} + 1/2 |E - G|_F^2 (column j shrunk radially by tau)."""
    norms = np.linalg.norm(G, axis=0)
    scale = np.zeros_like(norms)
    big = norms > tau
    scale[big] = (norms[big] - tau) / norms[big]
    return G * scale[None, :]


def lrr_affinity(W0: np.ndarray, *, rel_tol: float = 1e-4, power: int = 4, row_scale: np.ndarray | None = None,
                 basis: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """LRR post-processing of a symmetric matrix: keep sigma > rel_tol sigma_1, P = U_r Sigma_r^1/2 with unit
    rows, return (P P^T)^{o power} (element-wise power; PSD by the Schur product theorem).

    Only the kept eigenpairs are computed (:func:`ensclust.core.spectral.eigh_significant`).
    ``row_scale`` (microcluster coordinates, see :func:`rsec_solve`): the object rows of the eigenvectors are
    the rows of ``vecs`` times ``row_scale`` (1/sqrt(size)); they are scaled before the rows are normalised.
    ``basis`` (see :func:`core_in_span`): ``W0`` is the core of the matrix ``basis W0 basis^T`` (orthonormal
    ``basis``), whose nonzero eigenpairs are those of the core with the vectors mapped by ``basis``.
    ``out``: an N x N array to write the result into (a work buffer of an iteration), or None.
    """
    vals, vecs = eigh_significant(W0, rel_tol)
    P = (vecs if basis is None else basis @ vecs) * np.sqrt(np.abs(vals))[None, :]
    if row_scale is not None:
        P *= row_scale[:, None]
    norms = np.linalg.norm(P, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    P /= norms
    return power_inplace(np.matmul(P, P.T, out=out), power)


def degree_embedding(W: np.ndarray, k: int, sizes: np.ndarray | None = None, start: np.ndarray | None = None, *,
                     out: np.ndarray | None = None, work: np.ndarray | None = None):
    """Step 5 on microclusters: d^-1/2, H = D^-1/2 V and V = the top-k eigenvectors of D^-1/2 W D^-1/2.

    ``W`` is the affinity between microclusters; microcluster a stands for ``sizes[a]`` identical objects, so
    the object-level affinity is C W C^T (C the n x N assignment matrix). Object degrees are (W sizes)_a, and the
    object-level normalised affinity has the same nonzero eigenpairs as the N x N matrix
    diag(sqrt(sizes)) D^-1/2 W D^-1/2 diag(sqrt(sizes)), whose eigenvectors divided by sqrt(sizes) are the rows
    of the object eigenvectors (unit norm over the n objects). Returns (d^-1/2, H, V) at microcluster level
    (one row per microcluster); ``sizes=None`` means all ones (the object-level step).

    Above ``_DENSE_LIMIT`` microclusters the eigenvectors come from the shifted block inverse iteration of
    :func:`ensclust.core.spectral.top_eigenpairs_dense` (the top eigenvalues of the normalised (P P^T)^4 are
    packed next to 1: LAPACK's subset solver reduces the whole matrix to tridiagonal form every iteration),
    warm-started from ``start``, the previous ALM iteration's V: the ALM only needs the subspace (H H^T and
    k-means on H do not see the basis inside it), and it moves little between iterations.
    ``out`` and ``work``: N x N work buffers (or None) for the normalised affinity and the block solver's
    factorisation; the same operations write into them, so the same bits.
    """
    n = W.shape[0]
    w = np.ones(n, dtype=W.dtype) if sizes is None else np.asarray(sizes, dtype=W.dtype)
    sq = np.sqrt(w)
    deg = W @ w
    dinv = np.zeros_like(deg)
    pos = deg > 0
    dinv[pos] = 1.0 / np.sqrt(deg[pos])
    g = dinv * sq
    L = np.multiply(W, g[:, None], out=out)
    L *= g[None, :]
    symmetrize_inplace(L)  # (L + L^T) / 2 tile by tile, the same bits
    k = min(k, n)
    if n > _DENSE_LIMIT and k < n - 1:
        first = np.random.default_rng(0).standard_normal(n) if start is None else start * sq[:, None]
        _, V = top_eigenpairs_dense(L, k, first, work=work)
    else:
        _, V = linalg.eigh(L, subset_by_index=[n - k, n - 1], check_finite=False)
        V = V[:, ::-1]
    V = V / sq[:, None]
    # sign convention (largest-magnitude entry positive) so the output does not depend on LAPACK's choice
    signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    V = V * signs
    return dinv, dinv[:, None] * V, V


def rsec_solve(members: np.ndarray, k: int, *, lambda1: float, lambda2: float, rho: float = 1.1,
               mu_max: float = 1e10, tol: float = 1e-7, max_iter: int = 500, mu_norm: str = "spectral",
               dtype=np.float64):
    """Inexact ALM of RSEC on the co-association matrix of ``members`` (n x m, relabelled), on microclusters.

    Every iterate of the object-level iteration is constant on microcluster blocks (objects with identical label
    rows; :mod:`ensclust.core.microclusters`): S, Q, the SVT, the column shrinkage, the eigendecomposition of W0
    and the degree step all map block-constant matrices to block-constant matrices. The iteration therefore runs
    exactly on N x N matrices (N = number of microclusters) in the weighted coordinates
    M~ = diag(sqrt(w)) M_c diag(sqrt(w)), w = microcluster sizes, M_c = the block values: in these coordinates
    products, SVDs and eigendecompositions are those of the object-level matrices (C diag(w)^-1/2 has orthonormal
    columns), while the element-wise steps (residual maxima, column norms of step 3, rows of P in step 4,
    degrees in step 5) read the block values M_c = M~ / sqrt(w_a w_b).

    Returns ``H`` (n x k, object rows), ``W`` (N x N affinity between microclusters; the object-level W_z is
    ``W[np.ix_(a, a)]`` with ``a = micro.assignment``), ``Z`` (N x N block values of Z), ``V`` (n x k, the
    signed eigenvectors of the normalised W_z behind H, object rows), ``micro`` and a diagnostics dict
    (``residual`` per iteration, ``n_iter``, ``converged``, ``rank_J``, ``mu0``, ``n_micro``, ``svt_in_span``:
    the number of SVTs done in the R-dimensional span, ``eig_in_span``: the number of step-4 eigendecompositions
    done on the core of size <= 2R + k).
    """
    n, m = members.shape
    micro = compute_microclusters(members)
    w = micro.sizes.astype(np.float64)
    sq = np.sqrt(w)
    inv_sq = (1.0 / sq).astype(dtype)
    Bc = micro.indicator().toarray()  # N x K
    Bt = Bc * (sq / np.sqrt(m))[:, None]  # S~ = Bt Bt^T
    U, sv, _ = np.linalg.svd(Bt, full_matrices=False)
    keep = sv > sv.max() * 1e-12
    U, s = U[:, keep].astype(dtype), (sv[keep] ** 2).astype(dtype)  # S~ = U diag(s) U^T
    Ut = np.ascontiguousarray(U.T)
    q = s**2 / (1.0 + s**2)  # Q = (S^T S + I)^-1 = I - U diag(q) U^T;  Q S^T S = U diag(q) U^T

    def block_max(M, scratch):  # max |object-level entries| = max |M~_ab| / sqrt(w_a w_b); scratch may be M
        np.multiply(M, inv_sq[:, None], out=scratch)
        np.multiply(scratch, inv_sq[None, :], out=scratch)
        return float(np.abs(scratch, out=scratch).max())

    if mu_norm == "spectral":
        norm_S = float(s.max())
    else:  # the R port: base::norm's default "O" = maximum absolute column sum (S >= 0: column sums)
        norm_S = float(((Bc @ (Bc.T @ w)) / m).max())
    mu = 1.5 / norm_S

    N, r = U.shape
    Z = np.zeros((N, N), dtype=dtype)
    Y2 = np.zeros_like(Z)
    # N x N work buffers: every N x N temporary of an iteration is written into one of these (the same operations
    # in the same order, so the same bits) - a fresh N x N array per operation cost ~20 % of a large solve in the
    # kernel's page faults (USPS, N = 6719)
    J = np.empty_like(Z)
    buf1 = np.empty_like(Z)
    buf2 = np.empty_like(Z)
    W = np.empty_like(Z)  # the affinity of step 4 (the last one is returned)
    # Y1, E and the residual S - SZ - E keep their columns in S's range U (they start at 0 and every update adds
    # U times something): they are stored as r x N coefficients y1 = U^T Y1, e = U^T E. U^T Z and U^T Y2 are
    # carried along, so that no product U^T (N x N) is ever needed.
    y1 = np.zeros((r, N), dtype=dtype)
    e = np.zeros_like(y1)
    UtZ = np.zeros_like(y1)
    UtY2 = np.zeros_like(y1)
    sUt = s[:, None] * Ut  # U^T S
    U_row_scale = float((np.linalg.norm(U, axis=1) * inv_sq).max())  # max_a |U_a| / sqrt(w_a)
    Hs = np.zeros((N, k), dtype=dtype)  # D^-1/2 H in weighted coordinates
    Hs_hist = []  # the last three Hs: the columns step 2 and the Y2 update add outside span(U)
    J_left = np.zeros((N, 0), dtype=dtype)
    n_span = n_eig_span = 0
    Ht = np.zeros((N, k), dtype=dtype)  # H in weighted coordinates
    Hc = Vc = None
    residuals, ranks = [], []
    converged = False
    for _ in range(max_iter):
        # step 1 in the span of the iterates' columns: S's range U, J's last left singular vectors and the
        # last three D^-1/2 H (step 2 and the Y2 update add only these outside U), R = r + rank J + 3k << N;
        # the first r rows of the coefficients, U^T (Z + Y2/mu), are carried along
        basis = span_basis(U, [J_left, *Hs_hist])
        M = np.add(Z, np.divide(Y2, mu, out=buf1), out=buf1)  # Z + Y2/mu
        if basis.shape[1] < N:
            C = np.vstack([UtZ + UtY2 / mu, basis[:, r:].T @ M])
            J_left, shrunk, J_right, rank, in_span = svt_in_span(M, lambda1 / mu, basis, C)
            del C
            n_span += in_span
        else:
            J_left, shrunk, J_right, rank = _svt_factors(M, lambda1 / mu)
            in_span = False
        del M
        np.matmul(J_left * shrunk, J_right, out=J)
        UtJ = ((Ut @ J_left) * shrunk) @ J_right
        # step 2: Z = Q S^T S + Q inner, inner = J + (S (Y1 - mu E) - Y2 + Hs Hs^T)/mu, Q = I - U diag(q) U^T;
        # S (Y1 - mu E) = U a with a = diag(s) (y1 - mu e), so Z = J + (Hs Hs^T - Y2)/mu + U (a/mu + q (U^T -
        # U^T inner)): one N^2 r product
        a_mu = (s[:, None] * (y1 - mu * e)) / mu
        Ut_inner = UtJ + a_mu + ((Ut @ Hs) @ Hs.T - UtY2) / mu
        inner = np.matmul(Hs, Hs.T, out=buf1)
        np.subtract(inner, Y2, out=inner)
        np.divide(inner, mu, out=inner)
        np.add(J, inner, out=Z)  # Z = J + (Hs Hs^T - Y2)/mu (the previous Z is no longer needed)
        Z += np.matmul(U, a_mu + q[:, None] * (Ut - Ut_inner), out=buf1)
        UtZ = Ut_inner + q[:, None] * (Ut - Ut_inner)
        del Ut_inner, a_mu
        # step 3: G = S - SZ + Y1/mu = U g; object column norms are |G~[:, b]| / sqrt(w_b) = |g[:, b]| / sqrt(w_b)
        p1 = sUt - s[:, None] * UtZ  # U^T (S - SZ)
        g = p1 + y1 / mu
        norms = np.linalg.norm(g, axis=0) * inv_sq
        tau2 = lambda2 / mu
        shrink = np.zeros_like(norms)
        big = norms > tau2
        shrink[big] = (norms[big] - tau2) / norms[big]
        e = g * shrink[None, :]
        del g
        p1 -= e  # S - SZ - E = U p1
        # step 4: W0 = (Z + Z^T)/2 + H H^T; LRR post-processing on the object rows of P
        W0 = np.divide(np.add(Z, Z.T, out=buf1), 2.0, out=buf1)
        W0 += np.matmul(Ht, Ht.T, out=buf2)  # W0 = (Z + Z^T)/2 + H H^T
        # Z's columns lie in the basis of step 1 (J, S's range and the Hs of step 2 and of Y2): the
        # eigendecomposition of W0 reduces to a core of size <= 2R + k (core_in_span)
        in_core = (core_in_span(W0, basis, np.vstack([UtZ, basis[:, r:].T @ Z]), Ht)
                   if in_span and basis.shape[1] < N else None)  # (core, B2) or None
        n_eig_span += in_core is not None
        W = (lrr_affinity(W0, row_scale=inv_sq, out=W) if in_core is None
             else lrr_affinity(in_core[0], row_scale=inv_sq, basis=in_core[1], out=W))
        del W0, in_core
        dinv, Hc, Vc = degree_embedding(W, k, sizes=w, start=Vc, out=buf1, work=buf2)  # W0 is done with
        Hc, Vc = Hc.astype(dtype), Vc.astype(dtype)
        Ht = sq.astype(dtype)[:, None] * Hc
        Hs = (sq * dinv).astype(dtype)[:, None] * Hc
        Hs_hist = [Hs, *Hs_hist[:2]]
        primal2 = np.subtract(Z, J, out=buf1)
        # max|S - SZ - E| needs the N^2 r product U p1 only when its Cauchy-Schwarz bound
        # |(U p1)_ab| / sqrt(w_a w_b) <= (|U_a| / sqrt(w_a)) (|p1_b| / sqrt(w_b)) exceeds max|Z - J|; otherwise
        # the maximum of the two is max|Z - J| exactly (about half the iterations, those near convergence)
        res = block_max(primal2, buf2)
        if U_row_scale * float((np.linalg.norm(p1, axis=0) * inv_sq).max()) > res:
            res = max(res, block_max(np.matmul(U, p1, out=buf2), buf2))
        residuals.append(res)
        ranks.append(rank)
        if res < tol:
            converged = True
            break
        y1 += mu * p1
        Y2 += np.multiply(primal2, mu, out=primal2)
        UtY2 += mu * (UtZ - UtJ)
        del primal2
        mu = min(rho * mu, mu_max)
    diagnostics = {"residual": residuals, "n_iter": len(residuals), "converged": converged, "rank_J": ranks,
                   "mu0": 1.5 / norm_S, "n_micro": int(N),
                   "svt_in_span": n_span, "eig_in_span": n_eig_span}
    Z_blocks = Z * inv_sq[:, None] * inv_sq[None, :]
    a = micro.assignment
    return Hc[a], W, Z_blocks, Vc[a], micro, diagnostics


#: parameters that determine the ALM solve (RSEC-H and RSEC-Z differ only after it)
_SOLVE_PARAMS = ("lambda1", "lambda2", "rho", "mu_max", "tol", "max_iter", "mu_norm", "dtype", "tol_float32")


def _rsec_outputs(members: np.ndarray, n_clusters: int, solve_params: dict) -> dict:
    """The deterministic part of an RSEC fit (the ALM of :func:`rsec_solve`), a function of its arguments only.

    RSEC-H and RSEC-Z run the same solve and differ in the post-processing (k-means on H, NJW k-means on V), so a
    ``memory`` cache (:mod:`ensclust.core.cache`) given to both solves once per ensemble. The returned arrays
    are read-only: a cache hands the same arrays to every later caller.
    """
    p = solve_params
    dtype = np.float32 if p["dtype"] == "float32" else np.float64
    tol = p["tol"] if dtype == np.float64 else max(p["tol"], p["tol_float32"])
    H, W, _, V, micro, diag = rsec_solve(members, n_clusters, lambda1=p["lambda1"], lambda2=p["lambda2"],
                                         rho=p["rho"], mu_max=p["mu_max"], tol=tol, max_iter=p["max_iter"],
                                         mu_norm=p["mu_norm"], dtype=dtype)
    out = {"H": H.astype(np.float64), "V": V.astype(np.float64), "W": W, "micro": micro, "diagnostics": diag}
    for key in ("H", "V", "W"):
        out[key].setflags(write=False)
    return out


class _RSEC(ConsensusMethod):
    randomized = True
    solve_group = "rsec"
    params = {
        "lambda1": Param(1.0, low=0.0, low_open=True, doc="weight of the nuclear norm of J (= Z)",
                         source="ensclust choice: a corner of the spec's grid {0.1, 0.2, 0.5, 1} (R port: works "
                                "best in (0.1, 1)); lambda1 >> lambda2 is needed on S = CA in [0, 1] (tested)"),
        "lambda2": Param(0.1, low=0.0, low_open=True, doc="weight of the l2,1 norm of the errors E",
                         source="ensclust choice: a corner of the spec's grid {0.1, 0.2, 0.5, 1}; see lambda1"),
        "rho": Param(1.1, low=1.0, low_open=True, doc="growth factor of the ALM penalty mu",
                     source="R port of Tao's code; spec section 1"),
        "mu_max": Param(1e10, low=0.0, low_open=True, doc="upper bound of the ALM penalty",
                        source="R port of Tao's code; spec section 1"),
        "tol": Param(1e-7, low=0.0, low_open=True, doc="stop when max(|S-SZ-E|_inf, |Z-J|_inf) < tol",
                     source="R port of Tao's code; spec section 1"),
        "max_iter": Param(500, type="int", low=1, doc="maximum ALM iterations",
                          source="R port of Tao's code; spec section 1"),
        "mu_norm": Param("spectral", type="str", choices=("spectral", "one"),
                         doc="norm of S in mu0 = 1.5/|S|: MATLAB norm (spectral) or the R port's 1-norm",
                         source="spec section 1 (MATLAB norm = spectral; R port norm() = 1-norm)"),
        "dtype": Param("float64", type="str", choices=("float64", "float32"),
                       doc="precision of the n x n iterates (float32 about 2x faster)",
                       source="ensclust choice; the reference runs in double precision"),
        "tol_float32": Param(1e-5, low=0.0, low_open=True,
                             doc="stopping tolerance used instead of tol when dtype=float32",
                             source="ensclust choice: float32 residuals cannot reach 1e-7 on S of norm ~n/c"),
        "memory": Param(None, type="memory",
                        doc="cache of the deterministic ALM solve (None, a folder path, a joblib.Memory or an "
                            "ensclust.core.cache.SolveCache); RSEC-H and RSEC-Z given the same cache solve once",
                        source="ensclust choice (scikit-learn's memory convention; the runner passes one per data "
                               "set)"),
    }

    def _solve(self, members, n_clusters):
        from ensclust.core.cache import cached_call

        solve_params = {k: self._params[k] for k in _SOLVE_PARAMS}
        out, hit = cached_call(self._params["memory"], _rsec_outputs, members, n_clusters, solve_params)
        self.diagnostics_ = {**out["diagnostics"], "solve_cached": hit}
        # microcluster level (as TRCE): the object-level W_z is W[np.ix_(a, a)], a = micro.assignment; a copy,
        # so that altering the fitted matrix cannot reach a cached solve
        self.consensus_matrix_ = np.array(out["W"], dtype=np.float64)
        self.microclusters_ = out["micro"]
        return out["H"], out["V"]


@register
class RSECH(_RSEC):
    """RSEC-H: k-means (n_init 10, at most 30 iterations as the R port) on the rows of the learned H.

    Also the "RSEC" column of ACMK and SPCE (spec assumption). Diagnostics: ``residual`` (ALM primal residual per
    iteration), ``n_iter``, ``converged``, ``rank_J``, ``mu0``, ``n_micro``. ``consensus_matrix_`` is the
    learned W_z between microclusters (``microclusters_``).
    """

    name = "rsec-h"
    summary = "robust spectral ensemble clustering (low-rank CA + l2,1 errors + spectral H), k-means on H"

    def _fit(self, members, n_clusters, X, rng):
        H, _ = self._solve(members, n_clusters)
        return kmeans_labels(H, n_clusters, random_state=rng, n_init=10, max_iter=30)


@register
class RSECZ(_RSEC):
    """RSEC-Z: NJW spectral clustering (k-means n_init 10) of the affinity W_z learned from Z.

    Medium-low confidence (spec): the reference post-processing of Z is not known; NJW on the last W_z is the
    spec's recommendation. The NJW embedding of the last W_z is the eigenvector block V of the solver's last
    step 5 (the same normalised affinity and sign convention as :func:`ensclust.core.spectral.spectral_embedding`),
    so no n x n matrix is formed; its rows are normalised and clustered by k-means as in
    :func:`ensclust.core.spectral.spectral_clustering`.
    """

    name = "rsec-z"
    summary = "robust spectral ensemble clustering, NJW spectral clustering of the learned low-rank affinity"

    def _fit(self, members, n_clusters, X, rng):
        _, V = self._solve(members, n_clusters)
        n = V.shape[0]
        if n > _DENSE_LIMIT and n_clusters < n - 1:
            # spectral_clustering draws an eigensolver start vector from rng at this size: the same draw keeps
            # the k-means seed (and so the labels) of the object-level route
            rng.standard_normal(n)
        return kmeans_labels(_row_normalize(V), n_clusters, random_state=rng, n_init=10)

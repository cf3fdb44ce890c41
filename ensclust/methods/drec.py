"""DREC: dense representation ensemble clustering (Zhou, Zheng & Pan, Neurocomputing 2019).

specs/baselines/robust_family.md section 2, following the authors' ``Test_DREC`` as ported to Python in
HeWenjun824699/py-cluster-ensemble (``DREC.py``, ``Robust_LearnZ.py``):

1. microclusters (identical label vectors, as in PTA);
2. X = the K x n_micro cluster-indicator matrix of the microclusters;
3. a dense self-representation Z = argmin ||X - X Z||_{2,1} + lambda ||Z||_F^2 by 5 steps of iteratively
   reweighted least squares; every step solves the Sylvester-type system X^T X Z + Z diag(lambda / d) = X^T X
   column by column through one eigendecomposition of X^T X (computed once);
4. LRR-style post-processing of Z (thin SVD, rank r = #{sigma > 1e-4 sigma_1}, rows of U_r Sigma_r^1/2
   normalised, affinity (P P^T)^4 element-wise);
5. NJW spectral clustering of that affinity (k-means with 100 restarts, k-means++ as in the port);
6. microcluster labels mapped back to the objects.

Low rank: X^T X has rank <= K (the number of clusters of the ensemble), so Z = V Z~ of step 3 lives in the
K-dimensional span of the left singular vectors of the n_micro x K indicator; Z and its SVD are kept as
n_micro x K and K x K factors (O(n_micro K^2) time). Only the affinity of step 4 is a dense n_micro x n_micro
matrix (float64), then partially eigendecomposed (top c eigenvectors). n_micro <= n, and it is much smaller
than n when the members agree.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import kmeans_labels, spectral_embedding
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

#: Number of IRLS steps in ``Robust_LearnZ`` (fixed in the authors' code).
IRLS_STEPS = 5
#: Smoothing inside the reweighting d_j = 1 / (2 sqrt(||x_j - X z_j||^2 + 1e-10)) (authors' code).
IRLS_EPS = 1e-10


def dense_representation(indicator, lam: float, n_steps: int = IRLS_STEPS):
    """IRLS for min_Z ||X - X Z||_{2,1} + lam ||Z||_F^2, X = ``indicator``^T (K x n_micro), in factored form.

    Each step solves (G + (lam / d_j) I) z_j = G e_j for every column j, G = X^T X (the stationarity condition
    of the reweighted least-squares problem; spec section 2 step 3). G = U diag(w) U^T with U the left singular
    vectors of the n_micro x K indicator (w = sigma^2 > 0), so G has rank <= K and
    z_j = U diag(w / (w + lam / d_j)) U^T e_j: Z = U R with R = (w / (w + lam / d_j))_ij * U^T (K x n_micro).
    Eigenvectors of G outside span(U) have w = 0 and add nothing to Z. Then
    d_j = 1 / (2 sqrt(||X z_j - x_j||^2 + 1e-10)), with ||X (z_j - e_j)||^2 = sum_i w_i (R_ij - U_ji)^2
    (U^T (z_j - e_j) = R_:j - U_j: because z_j lies in span(U) and e_j's part outside span(U) is in ker(G)).

    The n_micro x n_micro Gram matrix and Z are never formed: O(n_micro K^2) time instead of O(n_micro^3).
    Returns ``(U, R, d_history)``: Z = U @ R after the last step, and the weight vector d used at every step
    (d_0 = 1).
    """
    Xs = sparse.csr_matrix(indicator, dtype=np.float64)
    # Eigenpairs of the K x K overlap matrix X X^T = W diag(w) W^T give U = X^T W diag(w)^-1/2 (n_micro x rank)
    # for a fraction of the cost of an SVD of the n_micro x K indicator. The indicator has m - 1 exact linear
    # dependencies (the columns of every member sum to the all-ones vector), so w has exactly-zero eigenvalues
    # (round-off ~eps w_max) which are dropped at the numerical-rank tolerance K eps w_max; on the benchmark pools
    # the smallest kept eigenvalue is ~1e-4 w_max.
    w, W = np.linalg.eigh((Xs.T @ Xs).toarray())
    keep = w > w.max(initial=0.0) * max(Xs.shape) * np.finfo(np.float64).eps
    w, W = w[keep], W[:, keep]
    U = np.asarray(Xs @ (W / np.sqrt(w)[None, :]))
    Ut = U.T
    n = U.shape[0]
    d = np.ones(n)
    history = []
    R = None
    for _ in range(n_steps):
        history.append(d.copy())
        F = w[:, None] / (w[:, None] + (lam / d)[None, :])
        R = F * Ut
        # sum_i w_i (R_ij - U_ji)^2 = sum_i w_i U_ji^2 (F_ij - 1)^2
        residual = np.einsum("i,ij->j", w, ((F - 1.0) * Ut) ** 2)
        d = 0.5 / np.sqrt(np.maximum(residual, 0.0) + IRLS_EPS)
    return U, R, history


def lrr_affinity(U: np.ndarray, R: np.ndarray, power: int = 4) -> np.ndarray:
    """LRR post-processing of Z = U R (U with orthonormal columns): thin SVD Z = U_Z Sigma V^T, keep
    sigma > 1e-4 sigma_1, P = U_Z,r Sigma_r^1/2 with unit rows, affinity (P P^T)^power element-wise (the authors'
    ``L = (U*U').^4``).

    Z Z^T = U (R R^T) U^T, so U_Z = U A and Sigma^2 = the eigenvalues of the K x K matrix R R^T = A diag A^T
    (same U_Z up to signs and rotations inside repeated singular values, which P P^T does not see). The
    threshold sigma > 1e-4 sigma_1 is sigma^2 > 1e-8 sigma_1^2, far above round-off. Only the affinity itself
    is n_micro x n_micro (it has no low-rank form: its rank grows like r^4).
    """
    vals, A = np.linalg.eigh(R @ R.T)
    vals, A = vals[::-1], A[:, ::-1]
    top = vals[0] if vals.size else 0.0
    r = int(np.sum(vals > 1e-8 * top)) if top > 0 else 0
    P = U @ (A[:, :r] * np.sqrt(np.sqrt(vals[:r]))[None, :])   # sigma^(1/2) = (sigma^2)^(1/4)
    norms = np.linalg.norm(P, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    P /= norms
    L = P @ P.T
    del P
    np.power(L, power, out=L)  # in place: the only n_micro^2 array besides the spectral step's normalised copy
    return L


@register
class DREC(ConsensusMethod):
    """Dense representation ensemble clustering (Zhou, Zheng & Pan 2019)."""

    name = "drec"
    summary = "dense self-representation of microclusters (IRLS, l2,1 loss) + spectral clustering"
    randomized = True
    params = {
        "lambda": Param(100.0, type="float", low=0.0, low_open=True,
                        doc="weight of ||Z||_F^2 in the dense representation",
                        source="default of the py-cluster-ensemble port of the authors' code (paper grid "
                               "unknown; spec suggests {0.1, 1, 10, 100, 1000} with oracle selection)"),
        "n_init": Param(100, type="int", low=1,
                        doc="k-means restarts on the spectral embedding",
                        source="authors' spectral_clustering as ported (KMeans n_init=100, k-means++)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        lam = self._params["lambda"]
        micro = compute_microclusters(members)
        Xm = micro.indicator()  # n_micro x K; X of the paper is its transpose
        U, R, history = dense_representation(Xm, lam)
        affinity = lrr_affinity(U, R)
        k = min(n_clusters, micro.n_micro)
        if micro.n_micro <= k:
            micro_labels = np.arange(micro.n_micro)
        else:
            # NJW on the microcluster affinity: top-k eigenvectors of D^-1/2 L D^-1/2 (PSD, so they are its
            # top singular vectors as in the code), unit rows, k-means.
            V = spectral_embedding(affinity, k, random_state=rng)
            micro_labels = kmeans_labels(V, k, random_state=rng, n_init=self.n_init)
        self.diagnostics_ = {"n_micro": micro.n_micro, "irls_steps": len(history)}
        return micro.to_objects(micro_labels)

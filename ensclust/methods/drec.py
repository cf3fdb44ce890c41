"""DREC: dense representation ensemble clustering (Zhou, Zheng & Pan, Neurocomputing 2019).

specs/baselines/robust_family.md section 2, following the authors' ``Test_DREC`` as ported to Python in
HeWenjun824699/py-cluster-ensemble (``DREC.py``, ``Robust_LearnZ.py``):

1. microclusters (identical label vectors, as in PTA);
2. X = the K x n_micro cluster-indicator matrix of the microclusters;
3. a dense self-representation Z = argmin ||X - X Z||_{2,1} + lambda ||Z||_F^2 by 5 steps of iteratively
   reweighted least squares; every step solves the Sylvester-type system X^T X Z + Z diag(lambda / d) = X^T X
   column by column through one eigendecomposition of X^T X (computed once);
4. LRR-style post-processing of Z (thin SVD via eig(Z Z^T), rank r = #{sigma > 1e-4 sigma_1}, rows of U_r Sigma_r^1/2
   normalised, affinity (P P^T)^4 element-wise);
5. NJW spectral clustering of that affinity (k-means with 100 restarts, k-means++ as in the port);
6. microcluster labels mapped back to the objects.

Memory: Z, its SVD factors and the affinity are dense n_micro x n_micro (float64); n_micro <= n, and it is
much smaller than n when the members agree. Time O(n_micro^3).
"""

from __future__ import annotations

import numpy as np

from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import kmeans_labels, spectral_embedding
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

#: Number of IRLS steps in ``Robust_LearnZ`` (fixed in the authors' code).
IRLS_STEPS = 5
#: Smoothing inside the reweighting d_j = 1 / (2 sqrt(||x_j - X z_j||^2 + 1e-10)) (authors' code).
IRLS_EPS = 1e-10


def dense_representation(gram: np.ndarray, lam: float, n_steps: int = IRLS_STEPS):
    """IRLS for min_Z ||X - X Z||_{2,1} + lam ||Z||_F^2 given only the Gram matrix G = X^T X.

    Each step solves (G + (lam / d_j) I) z_j = G e_j for every column j (the stationarity condition of the
    reweighted least-squares problem), via G = V diag(w) V^T: z_j = V diag(w / (w + lam / d_j)) V^T e_j.
    Then d_j = 1 / (2 sqrt(||X z_j - x_j||^2 + 1e-10)), where ||X (z_j - e_j)||^2 = (z_j - e_j)^T G (z_j - e_j).

    Returns ``(Z, d_history)``: the last Z and the weight vector d used at every step (d_0 = 1).
    """
    G = np.asarray(gram, dtype=np.float64)
    n = G.shape[0]
    w, V = np.linalg.eigh(G)
    w = np.maximum(w, 0.0)  # G is PSD; clip round-off so the denominators stay positive
    rhs = w[:, None] * V.T  # V^T G = diag(w) V^T
    d = np.ones(n)
    history = []
    Z = None
    for _ in range(n_steps):
        history.append(d.copy())
        Z = V @ (rhs / (w[:, None] + (lam / d)[None, :]))
        R = Z.copy()
        R[np.diag_indices(n)] -= 1.0
        residual = np.einsum("ij,ij->j", R, G @ R)
        d = 0.5 / np.sqrt(np.maximum(residual, 0.0) + IRLS_EPS)
    return Z, history


def lrr_affinity(Z: np.ndarray, power: int = 4) -> np.ndarray:
    """LRR post-processing: thin SVD Z = U Sigma V^T, keep sigma > 1e-4 sigma_1, P = U_r Sigma_r^1/2 with unit
    rows, affinity (P P^T)^power element-wise (the authors' ``L = (U*U').^4``).

    U and Sigma^2 are taken from the symmetric eigendecomposition of Z Z^T instead of an SVD of Z (same U up to
    signs and rotations inside repeated singular values, which P P^T does not see; about half the time at
    n_micro = 6 000). The threshold sigma > 1e-4 sigma_1 is sigma^2 > 1e-8 sigma_1^2, far above round-off.
    """
    vals, U = np.linalg.eigh(Z @ Z.T)
    vals, U = vals[::-1], U[:, ::-1]
    top = vals[0] if vals.size else 0.0
    r = int(np.sum(vals > 1e-8 * top)) if top > 0 else 0
    P = U[:, :r] * np.sqrt(np.sqrt(vals[:r]))[None, :]   # sigma^(1/2) = (sigma^2)^(1/4)
    norms = np.linalg.norm(P, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    P /= norms
    A = P @ P.T
    return A ** power


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
        gram = (Xm @ Xm.T).toarray()
        Z, history = dense_representation(gram, lam)
        affinity = lrr_affinity(Z)
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

"""SC: spectral clustering on the features (ACMK Tables 2, 3, 7; specs/baselines/spectral_and_kmeans.md 3).

A single-clustering baseline: it ignores the ensemble and clusters the dataset's features X.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.spatial.distance import pdist
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors

from ensclust.core.spectral import kmeans_labels, spectral_embedding
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

#: Rows used to estimate the kernel width when n is larger (Deng Cai's constructW).
BANDWIDTH_SAMPLE = 3000


def heat_kernel_width(X: np.ndarray, rng: np.random.Generator, sample: int = BANDWIDTH_SAMPLE) -> float:
    """t = mean Euclidean distance over all pairs i != j (of a random subset of ``sample`` rows when n > sample)."""
    n = X.shape[0]
    rows = X if n <= sample else X[np.sort(rng.choice(n, size=sample, replace=False))]
    if n < 2:
        return 1.0
    if sparse.issparse(rows):
        D = pairwise_distances(rows)
        return float(D.sum() / (D.shape[0] * (D.shape[0] - 1)))
    return float(pdist(np.asarray(rows, dtype=np.float64)).mean())


def knn_heat_graph(X, n_neighbors: int, t: float) -> sparse.csr_matrix:
    """Symmetric kNN graph: W_ij = exp(-||x_i - x_j||^2 / (2 t^2)) for j among the kNN of i or i among j's.

    Self excluded, symmetrised as max(W, W^T), zero diagonal.
    """
    X = sparse.csr_matrix(X, dtype=np.float64) if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    k = min(n_neighbors, n - 1)
    nn = NearestNeighbors(n_neighbors=k + 1).fit(X)
    dist, idx = nn.kneighbors(X)
    # Drop self: normally the first column; with duplicate points the self index may sit elsewhere.
    rows = np.repeat(np.arange(n), k + 1)
    cols = idx.ravel()
    vals = np.exp(-(dist.ravel() ** 2) / (2.0 * t * t))
    keep = rows != cols
    W = sparse.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n, n))
    if W.nnz > n * k:  # self was not among the returned neighbours of some rows: keep the k nearest others
        W = _keep_k_largest_per_row(W, k)
    W = W.maximum(W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def _keep_k_largest_per_row(W: sparse.csr_matrix, k: int) -> sparse.csr_matrix:
    W = W.tolil()
    for i, (cols, vals) in enumerate(zip(W.rows, W.data, strict=True)):
        if len(cols) > k:
            order = np.argsort(vals)[::-1][:k]
            W.rows[i] = [cols[j] for j in sorted(order)]
            W.data[i] = [vals[j] for j in sorted(order)]
    return W.tocsr()


@register
class SC(ConsensusMethod):
    """Spectral clustering of the features on a kNN heat-kernel graph (ACMK's "SC" row).

    ACMK only says "a k-nn graph with a Gaussian kernel of X", citing Shi & Malik. Settings follow Deng Cai's
    ``constructW`` defaults (spectral_and_kmeans.md section 3; guesses, documented there):

    1. Graph: ``n_neighbors = 5`` Euclidean nearest neighbours (self excluded); weight
       exp(-||x_i - x_j||^2 / (2 t^2)) with t = mean pairwise Euclidean distance, estimated on a random subset
       of 3000 rows (drawn from ``random_state``) when n > 3000; symmetrised as max(W, W^T); no self-loops.
    2. ``variant="njw"`` (default): the c top eigenvectors of D^-1/2 W D^-1/2, rows normalised to unit length
       (Ng-Jordan-Weiss). ``variant="shi-malik"``: the generalised eigenvectors of (D - W) v = lambda D v,
       i.e. D^-1/2 times the same eigenvectors, without row normalisation.
    3. k-means (``init = "k-means++"``, ``n_init = 10``) on the rows; the seed is drawn from ``random_state``.
       ``init = "random"`` seeds by c random rows (litekmeans; MATLAB's 'sample' start).

    The members are ignored (``needs_features = True``). Sparse X (e.g. tf-idf) is accepted as is. Memory: the sparse graph has O(n k) nonzeros; the
    eigenproblem is dense below 2500 points (ensclust.core.spectral) and ARPACK above.
    """

    name = "sc"
    summary = "spectral clustering of the features (kNN heat-kernel graph, NJW)"
    needs_features = True
    randomized = True
    params = {
        "n_neighbors": Param(5, type="int", low=1, doc="neighbours per point in the kNN graph",
                             source="Deng Cai constructW default k = 5 (spectral_and_kmeans.md section 3)"),
        "variant": Param("njw", type="str", choices=("njw", "shi-malik"),
                         doc="normalised embedding with row normalisation (NJW) or generalised eigenvectors",
                         source="spectral_and_kmeans.md section 3 (NJW default; ACMK cites Shi & Malik)"),
        "n_init": Param(10, type="int", low=1, doc="k-means replicates on the embedding",
                        source="spectral_and_kmeans.md section 3"),
        "init": Param("k-means++", type="str", choices=("k-means++", "random"),
                      doc="seeding of the k-means on the embedding: k-means++ or c random rows",
                      source="ensclust choice (scikit-learn's default); 'random' is litekmeans' start"),
    }

    def _fit(self, members, n_clusters, X, rng):
        X = sparse.csr_matrix(X, dtype=np.float64) if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
        t = heat_kernel_width(X, rng)
        if t <= 0:
            t = 1.0  # all points identical: any positive width gives the same (constant) weights
        W = knn_heat_graph(X, self.n_neighbors, t)
        if self.variant == "njw":
            V = spectral_embedding(W, n_clusters, random_state=rng)
        else:
            V = spectral_embedding(W, n_clusters, random_state=rng, normalize_rows=False)
            deg = np.asarray(W.sum(axis=1)).ravel()
            V = V / np.sqrt(np.where(deg > 0, deg, 1.0))[:, None]
        self.diagnostics_ = {"kernel_width": t, "graph_edges": int(W.nnz // 2)}
        return kmeans_labels(V, n_clusters, random_state=rng, n_init=self.n_init, init=self.init)

"""Transfer cut (Tcut) on a bipartite graph: Li, Wu & Chang, "Segmentation using superpixels: a bipartite
graph partitioning approach", CVPR 2012, Section 3 (Theorem 1 and Algorithm 1).

Used by LWGP (objects x clusters, link weight = ECI) and PTGP (microclusters x clusters, link weight = mean
PTS). The authors' ``bipartiteGraphPartitioning`` in ``runLWGP.m`` / ``runPTGP_v2.m`` is followed step by step
(specs/baselines/huang_family.md 0.3): the Ncut eigenproblem of the bipartite graph is solved on the small
side Y only (an N_y x N_y matrix), the eigenvectors are transferred to the big side X, rows are normalised and
clustered by k-means (3 replicates, 100 iterations - the code's ``kmeans`` options). No N_x x N_x or
(N_x + N_y)^2 matrix is formed.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.spectral import kmeans_labels
from ensclust.rng import check_random_state

#: guard of the code for zero degrees / zero row norms
_EPS = 1e-10


def tcut_embedding(C, n_segments: int) -> np.ndarray:
    """Rows of the transferred Ncut embedding F (N_x x k) before row normalisation (steps 2-7).

    Parameters
    ----------
    C : (N_x, N_y) nonnegative cross-affinity, dense or sparse.
    n_segments : k, at most N_y.
    """
    if sparse.issparse(C):
        C = sparse.csr_matrix(C, dtype=np.float64)
    else:
        C = np.asarray(C, dtype=np.float64)           # dense (PTGP): BLAS products below
    n_x, n_y = C.shape
    k = int(n_segments)
    if not 1 <= k <= n_y:
        raise ValueError(f"Tcut needs 1 <= k <= N_y = {n_y} (the small side), got k = {k}")
    d_x = np.asarray(C.sum(axis=1)).ravel()
    d_x[d_x == 0] = _EPS
    if sparse.issparse(C):
        W_y = (C.T @ sparse.diags(1.0 / d_x) @ C).toarray()            # N_y x N_y
    else:
        W_y = (C / d_x[:, None]).T @ C
    d_y = W_y.sum(axis=1)
    with np.errstate(divide="ignore"):
        d_half = np.where(d_y > 0, 1.0 / np.sqrt(d_y), 0.0)
    N = W_y * d_half[:, None] * d_half[None, :]
    N = (N + N.T) / 2.0
    _, vecs = np.linalg.eigh(N)
    V = vecs[:, ::-1][:, :k]                          # eigenvectors of the k largest eigenvalues
    V = V * d_half[:, None]                           # Ncut vectors of the small graph
    return np.asarray(C @ V) / d_x[:, None]          # transfer to the X side: D_x^-1 C V


def tcut(C, n_segments: int, *, random_state=None, n_init: int = 3, max_iter: int = 100) -> np.ndarray:
    """Partition the big side X of a bipartite graph into ``n_segments`` segments (labels 0..k-1).

    ``n_init=3`` and ``max_iter=100`` are the authors' ``kmeans(..., 'MaxIter', 100, 'Replicates', 3)``.
    k-means (and therefore the result) depends on ``random_state``; the embedding does not.
    """
    rng = check_random_state(random_state)
    F = tcut_embedding(C, n_segments)
    F = F / (np.linalg.norm(F, axis=1, keepdims=True) + _EPS)
    return kmeans_labels(F, int(n_segments), random_state=rng, n_init=n_init, max_iter=max_iter)

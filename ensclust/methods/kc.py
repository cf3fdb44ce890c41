"""KC: k-means on the co-association matrix (the SPCE paper's baseline; specs/baselines/coassociation.md 4).

The rows of A = B B^T / m are the objects' feature vectors. They never need to be formed: with G = B^T B
(K x K), ||A_i - A_j||^2 = (b_i - b_j) G (b_i - b_j)^T / m^2, so the rows of X = B G^{1/2} / m (n x K) have
exactly the same pairwise distances, and k-means on X is the same algorithm as k-means on A.
"""

from __future__ import annotations

import numpy as np

from ensclust.core.coassoc import coassociation
from ensclust.core.labels import has_missing, one_hot
from ensclust.core.spectral import kmeans_labels
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param


def coassociation_embedding(members: np.ndarray) -> np.ndarray:
    """X = B G^{1/2} / m (n x K, float64): rows with the same pairwise distances as the rows of B B^T / m.

    G^{1/2} is the symmetric square root from ``eigh``; tiny negative eigenvalues (rounding) are clipped to 0.
    """
    m = members.shape[1]
    B = one_hot(members)
    G = (B.T @ B).toarray()
    vals, vecs = np.linalg.eigh(G)
    root = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T
    return np.asarray(B @ root) / m


@register
class KC(ConsensusMethod):
    """k-means on the co-association matrix ("KC" in SPCE, Tables III-VIII).

    1. A = B B^T / m.
    2. k-means with k clusters on the n rows of A, computed on the exact low-dimensional equivalent
       X = B G^{1/2} / m (coassociation.md section 4): same distances, same centroids (means map linearly),
       hence the same algorithm and, for the same seed, the same k-means++ draws.
       ``features="coassociation"`` runs k-means on the dense rows of A instead (n x n float64: for checking
       the equivalence on small n only).
    3. k-means settings are not given by any paper. Choice (spec section 4): k-means++ seeding, squared
       Euclidean distance, at most 100 iterations (MATLAB ``kmeans`` default), best of ``n_init = 10``
       replicates by inertia; the seed is drawn from ``random_state``. MATLAB's online phase is not reproduced.

    Memory: X is n x K float64 (K = sum k_q, about m k); no n x n matrix with the default features.
    """

    name = "kc"
    accepts_missing = True
    missing_doc = "k-means on the rows of the co-association over the members labelling both points (the exact embedding of a complete ensemble does not hold; features=embedding is not used then)"
    summary = "k-means on the co-association matrix (exact low-dimensional form)"
    randomized = True
    params = {
        "n_init": Param(10, type="int", low=1, doc="k-means replicates (best inertia kept)",
                        source="coassociation.md section 4 (unspecified in SPCE; spec recommends 10)"),
        "max_iter": Param(100, type="int", low=1, doc="k-means iterations per replicate",
                          source="MATLAB kmeans default MaxIter (spectral_and_kmeans.md section 2)"),
        "features": Param("embedding", type="str", choices=("embedding", "coassociation"),
                          doc="k-means on X = B G^1/2 / m (exact, n x K) or on the dense rows of A (n x n)",
                          source="coassociation.md section 4"),
    }

    def _fit(self, members, n_clusters, X, rng):
        if self.features == "embedding" and not has_missing(members):
            feats = coassociation_embedding(members)
        else:
            # incomplete ensemble: the CA over the members labelling both points has no B G^1/2 form, so
            # k-means runs on its dense rows (n x n float64)
            feats = coassociation(members, dtype=np.float64)
        return kmeans_labels(feats, n_clusters, random_state=rng, n_init=self.n_init, max_iter=self.max_iter)

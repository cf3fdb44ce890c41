"""MCLA: meta-clustering (Strehl & Ghosh, JMLR 2002; specs/baselines/strehl_ghosh.md section 3).

The base clusters are grouped into k meta-clusters by METIS on their Jaccard-similarity graph; every object
then goes to the meta-cluster whose clusters contain it most often.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import one_hot
from ensclust.core.partition import canonical_column_order, integer_weights, metis_partition
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param
from ensclust.rng import int_seed

#: Scale of the random tie-breaking noise added to the association scores (ClusterPack ``clbtocl``).
TIE_NOISE = 1e-4


def jaccard_meta_graph(B) -> np.ndarray:
    """K x K binary Jaccard similarities of the columns of the one-hot matrix ``B``, diagonal zeroed.

    w_ab = |h_a & h_b| / (|h_a| + |h_b| - |h_a & h_b|) (spec section 3, step 2). Clusters of the same member
    are disjoint, so the meta-graph is m-partite.
    """
    B = sparse.csr_matrix(B, dtype=np.float64)
    inter = (B.T @ B).toarray()
    sizes = np.diag(inter).copy()
    union = sizes[:, None] + sizes[None, :] - inter
    W = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    np.fill_diagonal(W, 0.0)
    return W


@register
class MCLA(ConsensusMethod):
    """Meta-CLustering Algorithm (Strehl & Ghosh 2002, section 3.4; ClusterPack ``mcla.m``/``clbtocl.m``).

    1. Meta-graph: one vertex per base cluster (K = sum k_q), edge weight = binary Jaccard similarity of the
       two clusters, vertex weight = cluster size. Edge and vertex weights each go through ClusterPack's
       ``ints`` (total 10^8, rounded; edges that round to 0 vanish).
    2. METIS recursive bisection into k meta-clusters (ClusterPack ``pmetis``), balancing the object count per
       meta-cluster; ``partitioner="kway"`` for METIS k-way.
    3. Collapse: a_r(i) = fraction of meta-cluster r's clusters that contain object i (mean, not sum).
    4. Compete: objects in no meta-cluster get uniform random scores; U(0, 1e-4) noise from ``random_state``
       breaks ties (ClusterPack ``clbtocl``); label(i) = argmax_r a_r(i) (first r on exact ties).

    MCLA **may return fewer than k clusters**: a meta-cluster can win no object (spec section 3, O5). The
    count is not forced; ``diagnostics_["n_clusters_found"]`` records it.
    The columns of B are put in a canonical order first, so the result does not depend on the member order
    or label names (for a fixed seed). Memory: K x K dense meta-graph and an n x k score matrix; no n x n.
    """

    name = "mcla"
    accepts_missing = True
    missing_doc = "clusters hold only the points their member labels: Jaccard meta-graph and votes over those (no edge for a missing entry)"
    summary = "Strehl & Ghosh MCLA: METIS meta-clustering of the base clusters, then majority association"
    randomized = True
    may_return_other_k = True
    params = {
        "partitioner": Param("recursive", type="str", choices=("recursive", "kway"),
                             doc="METIS recursive bisection (ClusterPack pmetis) or k-way",
                             source="strehl_ghosh.md section 3 (ClusterPack sgraph.m calls pmetis)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        n = members.shape[0]
        B = one_hot(members).tocsc()
        B = B[:, canonical_column_order(B)].tocsr()
        K = B.shape[1]
        sizes = np.asarray(B.sum(axis=0)).ravel()
        W = jaccard_meta_graph(B)
        upper = W[np.triu_indices(K, 1)]
        W_int = integer_weights(W, denominator=2.0 * upper.sum())  # ints over all off-diagonal entries
        vweights = np.maximum(integer_weights(sizes), 1)  # METIS needs positive vertex weights
        meta = metis_partition(sparse.csr_matrix(W_int), n_clusters, seed=int_seed(rng), vweights=vweights,
                               recursive=self.partitioner == "recursive")
        k_meta = int(meta.max()) + 1
        P = sparse.csr_matrix((np.ones(K), (np.arange(K), meta)), shape=(K, k_meta))
        per_meta = np.asarray(P.sum(axis=0)).ravel()
        scores = np.asarray((B @ P).todense()) / np.maximum(per_meta, 1)[None, :]
        # ClusterPack clbtocl: objects in no meta-cluster get random scores, then small noise breaks ties.
        empty = scores.sum(axis=1) == 0
        noise = rng.random((n, k_meta))
        if np.any(empty):
            scores[empty] = rng.random((int(empty.sum()), k_meta))
        scores += noise * TIE_NOISE
        scores /= scores.sum(axis=1, keepdims=True)
        labels = np.argmax(scores, axis=1)
        self.diagnostics_ = {"meta_clusters": k_meta, "meta_graph_vertices": K}
        return labels

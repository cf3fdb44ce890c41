"""CSPA: cluster-based similarity partitioning (Strehl & Ghosh, JMLR 2002; specs/baselines/strehl_ghosh.md 1).

The co-association graph (edge weight = fraction of members putting i and j together) is partitioned into
k parts by METIS, minimising the edge cut under a tight balance constraint.
"""

from __future__ import annotations

import numpy as np

from ensclust.core.coassoc import coassociation, coassociation_counts
from ensclust.core.labels import has_missing
from ensclust.core.partition import integer_weights, metis_partition
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param
from ensclust.rng import int_seed


def cspa_graph(members: np.ndarray, *, quantize: bool = True):
    """Sparse integer edge weights of the CSPA graph (diagonal zeroed, zero edges dropped).

    With ``quantize`` the co-association values go through ClusterPack's ``ints`` (total 10^8, rounded;
    strehl_ghosh.md section 0), so pairs with very small weight can round to 0 and vanish, as in
    ClusterPack. Counts take only the values 1..m, so the conversion is a lookup table over m + 1 values
    instead of float arithmetic over all n^2 entries.
    """
    if has_missing(members):
        return _cspa_graph_missing(members, quantize=quantize)
    C = coassociation_counts(members)  # int32 counts; dividing by m is irrelevant after the rescaling
    C.setdiag(0)
    C.eliminate_zeros()
    C.sort_indices()  # METIS is sensitive to neighbour order; sorted order does not depend on member order
    if not quantize:
        return C
    m = members.shape[1]
    counts = np.bincount(C.data, minlength=m + 1)  # how many off-diagonal entries hold each count
    total = float(np.dot(counts, np.arange(m + 1)))
    table = integer_weights(np.arange(m + 1), denominator=total)
    C.data = table[C.data].astype(np.int32 if table.max() < 2**31 else np.int64)
    C.eliminate_zeros()
    return C


def _cspa_graph_missing(members: np.ndarray, *, quantize: bool):
    """CSPA graph of an incomplete ensemble: S = the co-association over the members labelling both points
    (:func:`ensclust.core.coassoc.coassociation`), then ClusterPack's ``ints`` as above; without ``quantize``
    the edge weights are round(S_ij * m), the counts a complete ensemble with the same fractions would have.
    """
    S = coassociation(members, dtype=np.float64, dense=False)
    S.setdiag(0)
    S.eliminate_zeros()
    S.sort_indices()
    if quantize:
        S.data = integer_weights(S.data).astype(np.float64)
    else:
        S.data = np.floor(S.data * members.shape[1] + 0.5)
    S.eliminate_zeros()
    dtype = np.int32 if S.nnz == 0 or S.data.max() < 2**31 else np.int64
    return S.astype(dtype)


@register
class CSPA(ConsensusMethod):
    """Cluster-based Similarity Partitioning Algorithm (Strehl & Ghosh 2002, section 3.2; ClusterPack ``cspa.m``).

    1. S = B B^T / m, the co-association matrix, diagonal zeroed (ClusterPack ``checks`` then ``wgraph``).
    2. Integer edge weights by ClusterPack's ``ints``: round(S_ij * 10^8 / sum_{i != j} S_ij); weights that
       round to 0 disappear (faithful to ClusterPack; switch off with ``quantize=False``, which uses the raw
       co-occurrence counts).
    3. METIS into k parts: recursive bisection by default (METIS 5 ``METIS_PartGraphRecursive`` with the
       default tolerance 1.001, the counterpart of ClusterPack's METIS 4 ``pmetis``); ``partitioner="kway"``
       is the k-way variant (tsano430/ClusterEnsembles). The METIS seed is drawn from ``random_state``.

    Memory: the graph is the sparse integer co-occurrence matrix (nnz = pairs sharing a cluster in at least
    one member; up to ~n^2/c), never a dense float64 n x n matrix. METIS copies it once into its own arrays.

    The balance constraint forces (almost) equal part sizes; on unbalanced data that is the known behaviour of
    the baseline, not a bug. METIS 5 does not reproduce METIS 4 bit for bit (spec section 0).
    """

    name = "cspa"
    accepts_missing = True
    missing_doc = "METIS on the co-association over the members that label both points (quantized as usual; quantize=False: round(S*m))"
    summary = "Strehl & Ghosh CSPA: METIS partition of the co-association graph"
    randomized = True
    params = {
        "partitioner": Param("recursive", type="str", choices=("recursive", "kway"),
                             doc="METIS recursive bisection (ClusterPack pmetis) or k-way",
                             source="strehl_ghosh.md section 1 (ClusterPack sgraph.m calls pmetis)"),
        "quantize": Param(True, type="bool",
                          doc="ClusterPack ints: scale edge weights to a total of 1e8 and round",
                          source="strehl_ghosh.md section 0 (ClusterPack ints.m)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        W = cspa_graph(members, quantize=self.quantize)
        labels = metis_partition(W, n_clusters, seed=int_seed(rng), recursive=self.partitioner == "recursive",
                                 prepared=True)  # B B^T: symmetric by construction, diagonal and zeros removed
        self.diagnostics_ = {"graph_edges": int(W.nnz // 2)}
        return labels

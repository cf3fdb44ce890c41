"""Agglomerative (hierarchical) clustering cut at exactly k clusters (specs/baselines/coassociation.md 3).

The reference MATLAB codes call ``linkage`` then ``cluster(Z, 'maxclust', k)``, which undoes the last k-1
merges and so always returns k clusters. SciPy's ``fcluster(Z, k, 'maxclust')`` cuts by height and returns
fewer clusters when merge heights tie - and co-association distances tie a lot. :func:`cut_exactly` keeps the
first n-k merges (union-find), which gives exactly k clusters like MATLAB and ``cut_tree``, in O(n).

Tie rule (documented, not emulated): when several pairs are at the same distance, SciPy's NN-chain picks the
merge order; MATLAB may pick another. Labels are numbered by the smallest point index in each cluster.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.cluster.hierarchy import linkage as _scipy_linkage
from scipy.sparse.csgraph import connected_components

LINKAGES = ("single", "average", "complete", "weighted", "ward")


def condensed_distance(similarity: np.ndarray, *, block: int = 1024) -> np.ndarray:
    """Condensed float64 vector of ``1 - S`` (upper triangle, row-major), built block-wise.

    Only the output vector (n(n-1)/2 doubles) is allocated; no second n x n float64 copy is made.
    """
    S = similarity
    n = S.shape[0]
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    pos = 0
    for start in range(0, n, block):
        stop = min(start + block, n)
        for i in range(start, stop):
            row = S[i, i + 1 :]
            out[pos : pos + row.size] = 1.0 - np.asarray(row, dtype=np.float64)
            pos += row.size
    np.clip(out, 0.0, None, out=out)
    return out


def cut_exactly(Z: np.ndarray, n_clusters: int) -> np.ndarray:
    """Labels after the first n - k merges of linkage matrix ``Z``: exactly ``k`` clusters.

    Clusters are numbered in order of their smallest member index (deterministic).
    """
    n = Z.shape[0] + 1
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must be in 1..{n}, got {k}")
    # Representative leaf of every node: a leaf is its own; an internal node takes its left child's.
    rep = np.empty(2 * n - 1, dtype=np.int64)
    rep[:n] = np.arange(n)
    left = Z[:, 0].astype(np.int64)
    right = Z[:, 1].astype(np.int64)
    for i in range(n - 1):
        rep[n + i] = rep[left[i]]
    n_merge = n - k
    graph = sparse.coo_matrix(
        (np.ones(n_merge), (rep[left[:n_merge]], rep[right[:n_merge]])), shape=(n, n)
    )
    _, labels = connected_components(graph, directed=False)
    # connected_components numbers components by first appearance scanning nodes 0..n-1,
    # i.e. by smallest member index already.
    return labels.astype(np.int64)


def cut_below_tied_height(Z: np.ndarray, n_clusters: int) -> np.ndarray:
    """Labels after every merge strictly below the height of merge n - k + 1: k or *more* clusters.

    The reading of the authors' MATLAB codes (``cluster(Z, 'maxclust', k)`` after ``linkage``) that issue 18
    records for PTA-CL/SL: where the (n-k)-th and (n-k+1)-th merges (in height order) have the same height,
    the cut falls at that tied height and undoes all merges there, so more than k clusters come back; without
    such a tie this equals :func:`cut_exactly`. It does not depend on SciPy's order among tied merges.
    Clusters are numbered in order of their smallest member index.
    """
    n = Z.shape[0] + 1
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must be in 1..{n}, got {k}")
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    heights = Z[:, 2]
    if np.any(np.diff(heights) < 0):
        raise ValueError("the height cut needs a monotone linkage (rows in non-decreasing height)")
    threshold = heights[n - k]                     # height of the first merge the exact cut undoes
    n_keep = int(np.searchsorted(heights, threshold, side="left"))
    return cut_exactly(Z, n - n_keep)


def hac_labels(similarity=None, n_clusters: int = 2, *, linkage: str = "average", distance=None,
               cut: str = "exact") -> np.ndarray:
    """Agglomerative clustering of a similarity in [0, 1] (distance = 1 - S) cut at k clusters.

    Pass either a dense symmetric ``similarity`` matrix or a ``distance`` (square, or condensed vector).
    ``cut="exact"`` keeps the first n - k merges (exactly k clusters, :func:`cut_exactly`); ``cut="code"``
    undoes every merge at or above the height of merge n - k + 1 (k or more clusters where that height is
    tied, :func:`cut_below_tied_height`).
    """
    if cut not in ("exact", "code"):
        raise ValueError(f"cut must be 'exact' or 'code', got {cut!r}")
    if linkage not in LINKAGES:
        raise ValueError(f"linkage must be one of {LINKAGES}, got {linkage!r}")
    if distance is None:
        if sparse.issparse(similarity):
            similarity = similarity.toarray()
        dvec = condensed_distance(np.asarray(similarity))
    else:
        distance = np.asarray(distance, dtype=np.float64)
        if distance.ndim == 2:
            iu = np.triu_indices(distance.shape[0], k=1)
            dvec = distance[iu]
        else:
            dvec = distance
    n = int(round((1 + np.sqrt(1 + 8 * dvec.size)) / 2))
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    Z = _scipy_linkage(dvec, method=linkage)
    if cut == "code":
        return cut_below_tied_height(Z, n_clusters)
    return cut_exactly(Z, n_clusters)

"""Microclusters: groups of objects that every base clustering puts together (identical label vectors).

Huang, Lai & Wang, "Robust ensemble clustering using probability trajectories", IEEE TKDE 28(5) 2016,
Definitions 2-3 and Theorem 1; authors' code ``computeMicroclusters.m``, ``computeMCA.m`` and
``mapMicroclustersBackToObjects.m`` (specs/baselines/huang_family.md 2.1-2.2).

Objects of one microcluster are indistinguishable for any co-association-type similarity, so PTA, PTGP and
EC-CMS-on-PTA work on the (usually much smaller) set of microclusters and map the labels back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ensclust.core.labels import has_missing, labelled_both, one_hot


@dataclass(frozen=True)
class Microclusters:
    """The microcluster representation of a relabelled label matrix.

    Attributes
    ----------
    members : (n_micro, M) label vectors of the microclusters, sorted lexicographically like MATLAB's
        ``unique(..., 'rows')`` (this order decides HAC tie breaking, so it is kept).
    assignment : (n,) microcluster index of every object.
    sizes : (n_micro,) number of objects in each microcluster.
    n_clusters_per_member : (M,) k_q of the *object-level* ensemble (so that the indicator matrix of the
        microclusters has the same K columns as :func:`ensclust.core.labels.one_hot` of the objects).
    """

    members: np.ndarray
    assignment: np.ndarray
    sizes: np.ndarray
    n_clusters_per_member: np.ndarray

    @property
    def n_micro(self) -> int:
        return int(self.members.shape[0])

    def indicator(self, dtype=np.float64) -> sparse.csr_matrix:
        """Sparse n_micro x K binary microcluster-in-cluster matrix (columns ordered like ``one_hot``; a missing
        entry is a zero row of its member's block)."""
        return one_hot(self.members, dtype=dtype, n_clusters_per_member=self.n_clusters_per_member)

    def to_objects(self, micro_labels) -> np.ndarray:
        """Map microcluster labels back to the objects (``mapMicroclustersBackToObjects``)."""
        return np.asarray(micro_labels)[self.assignment]


def compute_microclusters(members: np.ndarray) -> Microclusters:
    """Group identical rows of a relabelled label matrix into microclusters (lexicographic row order).

    A missing entry (-1) is a value of its own: two objects share a microcluster only when every member
    labels both the same way or leaves both unlabelled. Then every co-association-type similarity (CA over
    the members labelling both, LWCA, ECA) is still equal for all objects of a microcluster (Theorem 1).
    """
    members = np.asarray(members)
    reps, assignment, sizes = np.unique(members, axis=0, return_inverse=True, return_counts=True)
    return Microclusters(
        members=reps.astype(np.int64),
        assignment=np.asarray(assignment).ravel().astype(np.int64),
        sizes=sizes.astype(np.int64),
        n_clusters_per_member=(members.max(axis=0) + 1).astype(np.int64),
    )


def microcluster_coassociation(micro: Microclusters, dtype=np.float64) -> np.ndarray:
    """Dense MCA matrix ``B~ B~^T / M`` over the microclusters (diagonal 1; Theorem 1: entry (i, j) equals the
    object-level co-association of any pair drawn from microclusters i and j)."""
    m = micro.members.shape[1]
    Bm = micro.indicator(dtype=np.float64)
    A = (Bm @ Bm.T).toarray()
    if has_missing(micro.members):
        # over the members labelling both microclusters (ensclust.core.coassoc)
        denom = labelled_both(micro.members)
        np.divide(A, denom, out=A, where=denom > 0)
    else:
        A /= m
    return A.astype(dtype, copy=False)



def expand_condensed_distance(micro_similarity: np.ndarray, assignment: np.ndarray, *,
                              block: int = 256) -> np.ndarray:
    """Object-level condensed ``1 - S`` (upper triangle, row-major, float64) from a microcluster similarity.

    For similarities that depend only on the label vectors (CA, LWCA, ECA), the object pair (i, j) has the
    entry ``S[a_i, a_j]`` of the microcluster matrix (Theorem 1), including pairs inside one microcluster
    (the diagonal entry ``S[a, a]``). Only the output vector and one block x n slab are allocated.
    """
    S = np.asarray(micro_similarity)
    a = np.asarray(assignment, dtype=np.int64)
    n = a.size
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    pos = 0
    for start in range(0, n, block):
        stop = min(start + block, n)
        slab = S[a[start:stop]][:, a[start:]]   # one 2-D gather, then contiguous row slices
        for r in range(stop - start):
            row = slab[r, r + 1:]
            np.subtract(1.0, row, out=out[pos:pos + row.size])
            pos += row.size
    np.clip(out, 0.0, None, out=out)
    return out


def weighted_average_linkage(distance: np.ndarray, weights) -> np.ndarray:
    """Average-link (UPGMA) merges of weighted leaves by the nearest-neighbour chain.

    A leaf of weight w behaves like w coincident objects: the distance between two clusters is the
    weight-averaged distance of their leaves (Lance-Williams). Returns an (n - 1) x 3 array of merges in
    the order found, ``[leaf_a, leaf_b, height]`` with one representative leaf of each merged cluster
    (the smallest leaf index of the cluster). ``distance`` is overwritten.
    """
    D = distance
    n = D.shape[0]
    w = np.asarray(weights, dtype=np.float64).copy()
    np.fill_diagonal(D, np.inf)
    rep = np.arange(n)
    merges = np.empty((max(n - 1, 0), 3))
    chain: list[int] = []
    alive = np.ones(n, dtype=bool)
    first_alive = 0
    for step in range(n - 1):
        if not chain:
            while not alive[first_alive]:
                first_alive += 1
            chain.append(first_alive)
        while True:
            x = chain[-1]
            row = D[x]
            y = int(np.argmin(row))
            # prefer the previous chain element on a tie (guarantees termination, as in SciPy's nn_chain)
            if len(chain) > 1 and row[chain[-2]] <= row[y]:
                y = chain[-2]
                break
            chain.append(y)
        chain.pop()
        chain.pop()
        height = D[x, y]
        a, b = (x, y) if x < y else (y, x)          # keep the smaller index alive
        wa, wb = w[a], w[b]
        new = (wa * D[a] + wb * D[b]) / (wa + wb)
        new[a] = np.inf
        D[a] = new
        D[:, a] = new
        D[b] = np.inf
        D[:, b] = np.inf
        alive[b] = False
        w[a] = wa + wb
        merges[step] = (rep[a], rep[b], height)
        rep[a] = min(rep[a], rep[b])
    return merges


def microcluster_average_link_labels(micro_similarity: np.ndarray, micro: Microclusters,
                                     n_clusters: int) -> np.ndarray:
    """Object labels of average-link HAC on ``d = 1 - S`` cut at exactly k clusters, computed on microclusters.

    For a similarity that depends only on the label vectors (object pair (i, j) -> ``S[a_i, a_j]``, pairs
    inside one microcluster -> the diagonal ``S[a, a]``, which is the largest entry of its row), the
    objects of a microcluster are mutual nearest neighbours at height ``1 - S[a, a]`` and, once merged, act
    as one leaf of weight = its size. Because average linkage is reducible, the object-level dendrogram is
    the size-weighted UPGMA tree of the microclusters plus the internal merges, so the exact-k cut (the
    first n - k merges in height order, MATLAB's ``cluster(Z, 'maxclust', k)``) is taken from the merged
    merge list. Cost O(n_micro^2) instead of O(n^2); no condensed n(n-1)/2 vector.

    Tie rule: merges at equal height are taken internal-first, then in the order the NN-chain found them;
    labels are numbered by smallest object index. Exact ties may resolve differently from SciPy's
    object-level ``linkage`` (and from MATLAB's), as they may between any two HAC implementations.
    """
    S = np.asarray(micro_similarity)
    sizes = micro.sizes
    n = micro.assignment.size
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must be in 1..{n}, got {k}")
    internal_height = np.clip(1.0 - np.diag(S).astype(np.float64), 0.0, None)
    D = 1.0 - S.astype(np.float64)
    np.clip(D, 0.0, None, out=D)
    merges = weighted_average_linkage(D, sizes)
    del D
    multi = np.flatnonzero(sizes > 1)
    n_internal = sizes[multi] - 1
    heights = np.concatenate([np.repeat(internal_height[multi], n_internal), merges[:, 2]])
    owner = np.repeat(multi, n_internal)                                  # microcluster of an internal merge
    take = np.argsort(heights, kind="stable")[: n - k]
    n_int_total = owner.size
    taken_internal = np.bincount(owner[take[take < n_int_total]], minlength=sizes.size)
    taken_micro = merges[take[take >= n_int_total] - n_int_total, :2].astype(np.int64)
    # objects of every microcluster in index order; the first one represents the microcluster
    objects = np.argsort(micro.assignment, kind="stable")
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    first = objects[start]
    rows, cols = [first[taken_micro[:, 0]]], [first[taken_micro[:, 1]]]
    for mc in np.flatnonzero(taken_internal):
        r = taken_internal[mc]
        rows.append(np.full(r, objects[start[mc]]))
        cols.append(objects[start[mc] + 1: start[mc] + 1 + r])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    graph = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)

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
        """Sparse n_micro x K binary microcluster-in-cluster matrix (columns ordered like ``one_hot``)."""
        n, m = self.members.shape
        offsets = np.concatenate([[0], np.cumsum(self.n_clusters_per_member)[:-1]])
        cols = (self.members + offsets[None, :]).ravel()
        rows = np.repeat(np.arange(n), m)
        K = int(self.n_clusters_per_member.sum())
        return sparse.csr_matrix((np.ones(n * m, dtype=dtype), (rows, cols)), shape=(n, K))

    def to_objects(self, micro_labels) -> np.ndarray:
        """Map microcluster labels back to the objects (``mapMicroclustersBackToObjects``)."""
        return np.asarray(micro_labels)[self.assignment]


def compute_microclusters(members: np.ndarray) -> Microclusters:
    """Group identical rows of a relabelled label matrix into microclusters (lexicographic row order)."""
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

"""Cluster uncertainty, the ensemble-driven cluster index (ECI) and the locally weighted co-association (LWCA).

Huang, Wang & Lai, "Locally weighted ensemble clustering", IEEE TCYB 48(5) 2018, Eqs. 4-9; authors' code
``computeECI.m`` / ``computeLWCA.m`` (specs/baselines/huang_family.md sections 1.1-1.2). EC-CMS takes the
LWCA matrix as its input (specs/eccms.md section 3.1).

Every cluster C_i of every base clustering gets an uncertainty
``H(C_i) = sum_q -sum_j p_ij log2 p_ij`` with ``p_ij = |C_i n C_j^q| / |C_i|`` (Eq. 5-6) and an index
``ECI(C_i) = exp(-H(C_i) / (theta M))`` (Eq. 7). Summing the entropy over *all* K clusters at once equals the
sum over clusterings because the clusters of each base clustering partition C_i, so the whole computation is
one sparse K x K intersection matrix ``B^T B``.

``LWCA = B diag(ECI) B^T / M`` with the diagonal set to 1 (Eq. 8-9).

Incomplete ensembles (-1 entries): member q's clusters partition only the part of C_i that q labels, so
p_ij uses ``|C_i n labelled(q)|`` as denominator, and LWCA_ij divides by the number of members labelling both
i and j instead of M (the co-association over those members, as in :mod:`ensclust.core.coassoc`). Clusters are ordered like the columns of
:func:`ensclust.core.labels.one_hot` (clustering-major, label-minor).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import MISSING_LABEL, cluster_counts, has_missing, labelled_both, one_hot
from ensclust.core.microclusters import compute_microclusters, expand_condensed_distance


def cluster_uncertainty(members: np.ndarray) -> np.ndarray:
    """Entropy-based uncertainty H(C_i) of every cluster w.r.t. the whole ensemble (Eq. 5-6), base-2 logs.

    Parameters
    ----------
    members : (n, M) relabelled label matrix (see :func:`ensclust.core.labels.check_members`).

    Returns
    -------
    (K,) float64 array ordered like the columns of :func:`~ensclust.core.labels.one_hot`.
    """
    B = one_hot(members, dtype=np.float64).tocsc()
    inter = (B.T @ B).tocsr()  # K x K intersection counts |C_i n C_j|
    inter.eliminate_zeros()
    row_of_entry = np.repeat(np.arange(inter.shape[0]), np.diff(inter.indptr))
    if has_missing(members):
        # incomplete ensemble: member q splits only the part of C_i it labels, so p_ij = |C_i n C_j^q| /
        # |C_i n labelled(q)| (each member's p still sums to 1 over its clusters, Eq. 5)
        labelled = (members != MISSING_LABEL).astype(np.float64)
        BL = np.asarray(B.T @ labelled)                     # K x M: |C_i n labelled(q)|
        member_of_col = np.repeat(np.arange(members.shape[1]), cluster_counts(members))
        p = inter.data / BL[row_of_entry, member_of_col[inter.indices]]
    else:
        sizes = np.asarray(B.sum(axis=0)).ravel()
        p = inter.data / sizes[row_of_entry]
    # only non-zero intersections are stored, so 0 log 0 = 0 holds without special cases
    contrib = -p * np.log2(p)
    H = np.bincount(row_of_entry, weights=contrib, minlength=inter.shape[0])
    # p == 1 gives exactly -0.0 terms; clip the -0.0 / rounding noise below zero
    return np.maximum(H, 0.0)


def eci(members: np.ndarray, theta: float = 0.4) -> np.ndarray:
    """Ensemble-driven cluster index ECI(C_i) = exp(-H(C_i) / (theta M)) (Eq. 7), in (0, 1].

    ``theta`` = 0.4 is the authors' demo default (``para_theta`` in ``demo_LWEA.m`` and EC-CMS's demo).
    """
    if not theta > 0:
        raise ValueError(f"theta must be > 0, got {theta}")
    m = members.shape[1]
    return np.exp(-cluster_uncertainty(members) / (theta * m))


def weighted_indicator(members: np.ndarray, weights: np.ndarray, dtype=np.float64) -> sparse.csr_matrix:
    """Sparse n x K matrix ``B diag(weights)``: the locally weighted object-cluster links (LWGP's graph)."""
    B = one_hot(members, dtype=dtype)
    B = B @ sparse.diags(np.asarray(weights, dtype=dtype))
    return B.tocsr()


def lwca_matrix(members: np.ndarray, theta: float = 0.4, dtype=np.float64, *, cluster_weights=None):
    """Dense n x n locally weighted co-association matrix (Eq. 8-9), diagonal set to 1.

    Parameters
    ----------
    members : (n, M) relabelled label matrix.
    theta : ECI parameter (default 0.4, authors' code).
    dtype : float64 (default, matches the authors' double precision) or float32 (half the memory; entries are
        sums of at most M terms in [0, 1], relative error ~1e-7 - can reorder near-tied HAC merges).
    cluster_weights : optional precomputed ECI vector (length K), to avoid recomputing it.
    """
    m = members.shape[1]
    w = eci(members, theta) if cluster_weights is None else np.asarray(cluster_weights, dtype=np.float64)
    Bw = weighted_indicator(members, w / m, dtype=np.float64)
    B = one_hot(members, dtype=np.float64)
    A = (Bw @ B.T).toarray()
    if has_missing(members):
        A *= m
        denom = labelled_both(members)
        np.divide(A, denom, out=A, where=denom > 0)
    if np.dtype(dtype) != np.float64:
        A = A.astype(dtype)
    np.fill_diagonal(A, 1.0)
    return A


def lwca_condensed_distance(members: np.ndarray, theta: float = 0.4, *, cluster_weights=None) -> np.ndarray:
    """Condensed float64 vector of ``1 - LWCA`` (upper triangle, row-major) without an n x n matrix.

    LWCA_ij depends only on the label vectors of i and j, so it is computed once per pair of microclusters
    (:mod:`ensclust.core.microclusters`) and expanded; pairs inside one microcluster get ``sum_q ECI / M``
    (not the unit diagonal). Peak memory: the output vector (what SciPy's ``linkage`` needs anyway) plus the
    n_micro x n_micro matrix.
    """
    w = eci(members, theta) if cluster_weights is None else np.asarray(cluster_weights, dtype=np.float64)
    micro = compute_microclusters(members)
    return expand_condensed_distance(micro_lwca(micro, w), micro.assignment)


def micro_lwca(micro, cluster_weights) -> np.ndarray:
    """Dense LWCA between microclusters, ``Bm diag(ECI) Bm^T / M`` (Eq. 8; diagonal not set to 1).

    With missing entries the sum is divided by the number of members labelling both microclusters (their
    label vectors, hence their missing patterns, are identical inside a microcluster).
    """
    m = micro.members.shape[1]
    Bm = micro.indicator(dtype=np.float64)
    w = np.asarray(cluster_weights, dtype=np.float64)
    if not has_missing(micro.members):
        return (Bm @ sparse.diags(w / m) @ Bm.T).toarray()
    S = (Bm @ sparse.diags(w) @ Bm.T).toarray()
    denom = labelled_both(micro.members)
    np.divide(S, denom, out=S, where=denom > 0)
    return S

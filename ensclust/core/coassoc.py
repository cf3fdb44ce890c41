"""The co-association (CA) matrix A = B B^T / m (specs/baselines/coassociation.md section 1).

Built from the sparse one-hot product, never by looping over pairs. Counts are integers, so building in
float32 is exact for the counts (m < 2^24) and the division by m is the only rounding.

Incomplete ensembles (entries -1, :data:`ensclust.core.labels.MISSING_LABEL`): the CA is taken over the
members that label both points, A_ij = (B B^T)_ij / (L L^T)_ij with L the n x m 0/1 labelled mask
(weighted: sum_q w_q B_q B_q^T / sum_q w_q L_q L_q^T). The diagonal stays 1; a pair that no member labels
together has no evidence and gets 0. Without missing entries L L^T = m and the formula is the usual one.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import MISSING_LABEL, has_missing, labelled_both, one_hot


def coassociation_counts(members: np.ndarray) -> sparse.csr_matrix:
    """Sparse n x n integer matrix of how many members put i and j together (diagonal = m)."""
    B = one_hot(members, dtype=np.int32)
    return (B @ B.T).tocsr()


def _divide_by_labelled_both(A: sparse.csr_matrix, members: np.ndarray, weights=None,
                             block_bytes: int = 2**25) -> sparse.csr_matrix:
    """Divide every stored entry (i, j) of A by the (weighted) number of members labelling both i and j.

    Only the stored entries change (a pair with no shared cluster stays 0). The denominators come from one
    dense row block of L_w L^T at a time (about ``block_bytes``), never an n x n matrix.
    """
    A.sort_indices()
    L = (members != MISSING_LABEL).astype(np.float64)
    Lw = L if weights is None else L * np.asarray(weights, dtype=np.float64)[None, :]
    n = A.shape[0]
    block = max(1, block_bytes // (8 * n))
    for start in range(0, n, block):
        stop = min(start + block, n)
        lo, hi = A.indptr[start], A.indptr[stop]
        if lo == hi:
            continue
        denom = Lw[start:stop] @ L.T                                     # block x n
        local = np.repeat(np.arange(stop - start), np.diff(A.indptr[start:stop + 1]))
        d = denom[local, A.indices[lo:hi]]
        A.data[lo:hi] = np.divide(A.data[lo:hi], d, out=np.zeros(hi - lo), where=d > 0)
    return A


def coassociation(members: np.ndarray, *, dtype=np.float32, dense: bool = True, weights=None):
    """Co-association matrix of a relabelled label matrix.

    Parameters
    ----------
    members : (n, m) int array, relabelled (see :func:`ensclust.core.labels.check_members`); -1 marks a
        missing entry (then the CA is over the members labelling both points, see the module doc).
    dtype : float32 (default; exact counts, one rounding) or float64.
    dense : return a dense ndarray (default) or a sparse CSR matrix.
    weights : optional length-m non-negative weights; then A = sum_q w_q B_q B_q^T / sum_q w_q
        (the weighted CA of WEAC / ACMK).
    """
    n, m = members.shape
    dtype = np.dtype(dtype).type
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64).ravel()
        if w.shape != (m,) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be m non-negative numbers with a positive sum")
    if has_missing(members):
        # counts and denominators are exact in either dtype (integers < 2^24); the division is the one rounding
        wn = None if weights is None else w / w.sum()
        if dense:
            B = one_hot(members, dtype=dtype)
            out = (B @ B.T).toarray() if wn is None else (B @ sparse.diags(
                np.repeat(wn, np.asarray(members.max(axis=0) + 1)).astype(dtype)) @ B.T).toarray()
            denom = labelled_both(members, weights=wn, dtype=dtype)
            np.divide(out, denom, out=out, where=denom > 0)
            return out
        B = one_hot(members, dtype=np.float64)
        A = (B @ B.T).tocsr() if wn is None else (
            B @ sparse.diags(np.repeat(wn, np.asarray(members.max(axis=0) + 1))) @ B.T).tocsr()
        return _divide_by_labelled_both(A, members, wn).astype(dtype)
    if weights is None:
        B = one_hot(members, dtype=dtype)
        A = (B @ B.T).tocsr()
        A.data /= dtype(m)
    else:
        B = one_hot(members, dtype=dtype)
        col_w = np.repeat(w / w.sum(), np.asarray(members.max(axis=0) + 1)).astype(dtype)
        A = (B @ sparse.diags(col_w) @ B.T).tocsr()
    return A.toarray() if dense else A

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

from ensclust.core.labels import has_missing, labelled_both, one_hot


def coassociation_counts(members: np.ndarray) -> sparse.csr_matrix:
    """Sparse n x n integer matrix of how many members put i and j together (diagonal = m)."""
    B = one_hot(members, dtype=np.int32)
    return (B @ B.T).tocsr()


def _divide_by_labelled_both(A: sparse.csr_matrix, members: np.ndarray, weights=None, block: int = 4096):
    """Divide every stored entry (i, j) of A by the (weighted) number of members labelling both i and j.

    Only the stored entries are touched (a pair with no shared cluster stays 0), in row blocks so that no
    n x n or nnz x m array is allocated.
    """
    A.sort_indices()
    L = (members != -1).astype(np.float64)
    w = np.ones(members.shape[1]) if weights is None else np.asarray(weights, dtype=np.float64)
    Lw = L * w[None, :]
    for start in range(0, A.shape[0], block):
        stop = min(start + block, A.shape[0])
        lo, hi = A.indptr[start], A.indptr[stop]
        if lo == hi:
            continue
        rows = np.repeat(np.arange(start, stop), np.diff(A.indptr[start:stop + 1]))
        denom = np.einsum("ij,ij->i", Lw[rows], L[A.indices[lo:hi]])
        A.data[lo:hi] = A.data[lo:hi] / np.maximum(denom, np.finfo(np.float64).tiny)
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
        # counts in float64 (exact), divided entry by entry by the number of members labelling both points
        B = one_hot(members, dtype=np.float64)
        if weights is None:
            A = (B @ B.T).tocsr()
        else:
            col_w = np.repeat(w / w.sum(), np.asarray(members.max(axis=0) + 1))
            A = (B @ sparse.diags(col_w) @ B.T).tocsr()
        if dense:
            out = A.toarray()
            denom = labelled_both(members, weights=None if weights is None else w / w.sum())
            np.divide(out, denom, out=out, where=denom > 0)
            return out.astype(dtype, copy=False)
        A = _divide_by_labelled_both(A, members, None if weights is None else w / w.sum())
        return A.astype(dtype)
    if weights is None:
        B = one_hot(members, dtype=dtype)
        A = (B @ B.T).tocsr()
        A.data /= dtype(m)
    else:
        B = one_hot(members, dtype=dtype)
        col_w = np.repeat(w / w.sum(), np.asarray(members.max(axis=0) + 1)).astype(dtype)
        A = (B @ sparse.diags(col_w) @ B.T).tocsr()
    return A.toarray() if dense else A

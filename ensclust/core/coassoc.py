"""The co-association (CA) matrix A = B B^T / m (specs/baselines/coassociation.md section 1).

Built from the sparse one-hot product, never by looping over pairs. Counts are integers, so building in
float32 is exact for the counts (m < 2^24) and the division by m is the only rounding.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import one_hot


def coassociation_counts(members: np.ndarray) -> sparse.csr_matrix:
    """Sparse n x n integer matrix of how many members put i and j together (diagonal = m)."""
    B = one_hot(members, dtype=np.int32)
    return (B @ B.T).tocsr()


def coassociation(members: np.ndarray, *, dtype=np.float32, dense: bool = True, weights=None):
    """Co-association matrix of a relabelled label matrix.

    Parameters
    ----------
    members : (n, m) int array, relabelled (see :func:`ensclust.core.labels.check_members`).
    dtype : float32 (default; exact counts, one rounding) or float64.
    dense : return a dense ndarray (default) or a sparse CSR matrix.
    weights : optional length-m non-negative weights; then A = sum_q w_q B_q B_q^T / sum_q w_q
        (the weighted CA of WEAC / ACMK).
    """
    n, m = members.shape
    dtype = np.dtype(dtype).type
    if weights is None:
        B = one_hot(members, dtype=dtype)
        A = (B @ B.T).tocsr()
        A.data /= dtype(m)
    else:
        w = np.asarray(weights, dtype=np.float64).ravel()
        if w.shape != (m,) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be m non-negative numbers with a positive sum")
        B = one_hot(members, dtype=dtype)
        col_w = np.repeat(w / w.sum(), np.asarray(members.max(axis=0) + 1)).astype(dtype)
        A = (B @ sparse.diags(col_w) @ B.T).tocsr()
    return A.toarray() if dense else A

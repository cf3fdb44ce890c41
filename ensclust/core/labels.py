"""Label matrices: validation, relabelling and the cluster-indicator (one-hot) matrix.

Convention (specs/baselines/README.md): a label matrix ``members`` is n x m, column q is base clustering q.
After :func:`relabel_members` every column holds consecutive ids 0..k_q-1. The one-hot matrix
``B = [B_1 ... B_m]`` (n x K, K = sum k_q) is ordered clustering-major, label-minor.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.errors import UserError


def relabel(labels) -> np.ndarray:
    """Map any label vector to consecutive ints 0..k-1 (order of first sorted appearance)."""
    _, inv = np.unique(np.asarray(labels).ravel(), return_inverse=True)
    return inv.astype(np.int64)


#: The label that marks a point a member did not label (scikit-learn's noise label, ClusterEnsembles' -1).
MISSING_LABEL = -1


def check_members(members, n_clusters: int | None = None, where: str = "") -> np.ndarray:
    """Validate an n x m label matrix and return it relabelled per column (int64, 0..k_q-1).

    Raises :class:`UserError` for a matrix that is not 2-D, empty, non-finite or non-integer, that holds the
    missing-label marker -1 (missing labels are not supported: -1 would silently become a cluster), and for
    a requested number of clusters outside ``1..n``. ``where`` (e.g. the file name) prefixes the messages.
    """
    prefix = f"{where}: " if where else ""
    arr = np.asarray(members)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise UserError(f"{prefix}members must be a non-empty n x m label matrix, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise UserError(f"{prefix}members contain NaN or Inf; every entry must be an integer cluster label")
        if not np.all(arr == np.round(arr)):
            raise UserError(f"{prefix}members contain non-integer values; every entry must be an integer cluster label")
    elif arr.dtype.kind not in "iub":
        raise UserError(f"{prefix}members must hold integer labels, got dtype {arr.dtype}")
    if arr.dtype.kind in "if":
        missing = (arr == MISSING_LABEL).sum(axis=0)
        if missing.any():
            j = int(np.flatnonzero(missing)[0])
            others = int(np.count_nonzero(missing)) - 1
            more = f" (and {others} other member(s))" if others else ""
            raise UserError(f"{prefix}member {j} (0-based column) has label -1 at {int(missing[j])} rows{more}; "
                            "missing labels are not supported: give every point a cluster label or leave the "
                            "member out")
    n = arr.shape[0]
    if n_clusters is not None and not 1 <= int(n_clusters) <= n:
        raise UserError(f"{prefix}n_clusters={n_clusters} must be between 1 and the number of points ({n})")
    out = np.empty(arr.shape, dtype=np.int64)
    for q in range(arr.shape[1]):
        out[:, q] = relabel(arr[:, q])
    return out


def cluster_counts(members: np.ndarray) -> np.ndarray:
    """k_q for every column of a relabelled label matrix."""
    return members.max(axis=0).astype(np.int64) + 1


def one_hot(members: np.ndarray, dtype=np.float64) -> sparse.csr_matrix:
    """Sparse n x K cluster-indicator matrix B of a relabelled label matrix (clustering-major columns)."""
    n, m = members.shape
    ks = cluster_counts(members)
    offsets = np.concatenate([[0], np.cumsum(ks)[:-1]])
    cols = (members + offsets[None, :]).ravel()
    rows = np.repeat(np.arange(n), m)
    data = np.ones(n * m, dtype=dtype)
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, int(ks.sum())))


def cluster_offsets(members: np.ndarray) -> np.ndarray:
    """Start column of each base clustering in :func:`one_hot` (length m + 1, last entry = K)."""
    return np.concatenate([[0], np.cumsum(cluster_counts(members))])


def bipartite_adjacency(B: sparse.spmatrix) -> sparse.csr_matrix:
    """Symmetric (n + K) x (n + K) adjacency [[0, B], [B^T, 0]] of the object-cluster bipartite graph."""
    return sparse.bmat([[None, B], [B.T, None]], format="csr")

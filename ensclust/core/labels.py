"""Label matrices: validation, relabelling and the cluster-indicator (one-hot) matrix.

Convention (specs/baselines/README.md): a label matrix ``members`` is n x m, column q is base clustering q.
After :func:`check_members` every column holds consecutive ids 0..k_q-1, and -1 (:data:`MISSING_LABEL`) where
the member did not label the point (incomplete ensembles). The one-hot matrix ``B = [B_1 ... B_m]``
(n x K, K = sum k_q) is ordered clustering-major, label-minor; a missing entry is a zero row of its block.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.errors import UserError


def relabel(labels) -> np.ndarray:
    """Map any label vector to consecutive ints 0..k-1 (order of first sorted appearance)."""
    _, inv = np.unique(np.asarray(labels).ravel(), return_inverse=True)
    return inv.astype(np.int64)


def relabel_first_appearance(labels) -> np.ndarray:
    """Map any label vector to consecutive ints 0..k-1 numbered in order of first appearance (as
    ``scipy.sparse.csgraph.connected_components`` numbers the components of a point graph)."""
    _, first, inverse = np.unique(np.asarray(labels).ravel(), return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


#: The one representation of a missing entry inside ensclust: after :func:`check_members` a point that member q
#: did not label holds -1 in column q (scikit-learn's noise label, ClusterEnsembles' NaN). Every shared block
#: (:func:`one_hot`, :mod:`ensclust.core.coassoc`, :mod:`ensclust.core.lwca`, :mod:`ensclust.core.microclusters`)
#: reads it from here.
MISSING_LABEL = -1


def check_members(members, n_clusters: int | None = None, where: str = "", *, missing=None) -> np.ndarray:
    """Validate an n x m label matrix and return it relabelled per column (int64, 0..k_q-1, -1 = missing).

    Parameters
    ----------
    members : (n, m) array of labels; column q is base clustering q (any label values).
    n_clusters : optional number of consensus clusters, checked to lie in ``1..n``.
    where : prefix of the messages (e.g. the file name).
    missing : the value that marks a point a member did not label (e.g. -1), or None. NaN in a float matrix
        is always a missing entry.

    Missing entries come back as :data:`MISSING_LABEL`; every column must label at least one point and every
    point must be labelled by at least one member. An undeclared -1 in an integer matrix is refused (it would
    silently become a cluster). Raises :class:`UserError` (one line) for a matrix that is not 2-D, empty,
    Inf or non-integer, and for ``n_clusters`` outside ``1..n``.
    """
    prefix = f"{where}: " if where else ""
    arr = np.asarray(members)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise UserError(f"{prefix}members must be a non-empty n x m label matrix, got shape {arr.shape}")
    if arr.dtype.kind not in "iubf":
        raise UserError(f"{prefix}members must hold integer labels, got dtype {arr.dtype}")
    mask = np.isnan(arr) if arr.dtype.kind == "f" else np.zeros(arr.shape, dtype=bool)
    if missing is not None:
        if isinstance(missing, float) and np.isnan(missing):
            pass
        else:
            try:
                mark = float(missing)
            except (TypeError, ValueError):
                raise UserError(f"{prefix}missing={missing!r} must be a number (e.g. -1)") from None
            if not mark.is_integer():
                raise UserError(f"{prefix}missing={missing!r} must be an integer (e.g. -1)")
            mask |= arr == mark
    if arr.dtype.kind == "f":
        known = arr[~mask]
        if not np.all(np.isfinite(known)):
            raise UserError(f"{prefix}members contain Inf; every entry must be an integer cluster label "
                            "(NaN marks a missing label)")
        if not np.all(known == np.round(known)):
            raise UserError(f"{prefix}members contain non-integer values; every entry must be an integer cluster label")
    if missing is None and arr.dtype.kind in "if":
        minus = (arr == MISSING_LABEL).sum(axis=0)
        if minus.any():
            j = int(np.flatnonzero(minus)[0])
            others = int(np.count_nonzero(minus)) - 1
            more = f" (and {others} other member(s))" if others else ""
            raise UserError(f"{prefix}member {j} (0-based column) has label -1 at {int(minus[j])} rows{more}; "
                            "if -1 marks points the member did not label, declare it (missing=-1, --missing -1), "
                            "else renumber the labels")
    n = arr.shape[0]
    if n_clusters is not None and not 1 <= int(n_clusters) <= n:
        raise UserError(f"{prefix}n_clusters={n_clusters} must be between 1 and the number of points ({n})")
    out = np.empty(arr.shape, dtype=np.int64)
    if not mask.any():
        for q in range(arr.shape[1]):
            out[:, q] = relabel(arr[:, q])
        return out
    empty = np.flatnonzero(mask.all(axis=0))
    if empty.size:
        raise UserError(f"{prefix}member {int(empty[0])} (0-based column) labels no point (every entry missing); "
                        "leave it out")
    orphans = np.flatnonzero(mask.all(axis=1))
    if orphans.size:
        raise UserError(f"{prefix}{orphans.size} point(s) (first: row {int(orphans[0])}, 0-based) are labelled by no "
                        "member; a consensus cannot place them: drop them or add a member that labels them")
    out.fill(MISSING_LABEL)
    for q in range(arr.shape[1]):
        keep = ~mask[:, q]
        out[keep, q] = relabel(arr[keep, q])
    return out


def missing_mask(members: np.ndarray) -> np.ndarray:
    """Boolean n x m matrix of the missing entries of a relabelled label matrix."""
    return np.asarray(members) == MISSING_LABEL


def has_missing(members: np.ndarray) -> bool:
    """True when a relabelled label matrix has a missing entry."""
    return bool(np.any(np.asarray(members) == MISSING_LABEL))


def cluster_counts(members: np.ndarray) -> np.ndarray:
    """k_q for every column of a relabelled label matrix."""
    return members.max(axis=0).astype(np.int64) + 1


def one_hot(members: np.ndarray, dtype=np.float64, *, n_clusters_per_member=None) -> sparse.csr_matrix:
    """Sparse n x K cluster-indicator matrix B of a relabelled label matrix (clustering-major columns).

    A missing entry (:data:`MISSING_LABEL`) is a zero row of that member's block: the point has no edge to
    any of its clusters. ``n_clusters_per_member`` overrides the k_q read from ``members`` (microclusters
    keep the object-level K columns).
    """
    n, m = members.shape
    ks = cluster_counts(members) if n_clusters_per_member is None else np.asarray(n_clusters_per_member)
    offsets = np.concatenate([[0], np.cumsum(ks)[:-1]])
    cols = (members + offsets[None, :]).ravel()
    rows = np.repeat(np.arange(n), m)
    known = (members != MISSING_LABEL).ravel()
    if not known.all():
        cols, rows = cols[known], rows[known]
    data = np.ones(cols.size, dtype=dtype)
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, int(ks.sum())))


def labelled_both(rows_a: np.ndarray, rows_b: np.ndarray | None = None, weights=None,
                  dtype=np.float64) -> np.ndarray:
    """Dense matrix of how many members label both points (or the sum of their ``weights``).

    ``rows_a`` (and ``rows_b``, default ``rows_a``) are relabelled label vectors (objects or microclusters);
    entry (i, j) = sum_q w_q [q labels i] [q labels j]: the denominator of the co-association over the
    members that label both points.
    """
    La = (np.asarray(rows_a) != MISSING_LABEL).astype(dtype)
    Lb = La if rows_b is None else (np.asarray(rows_b) != MISSING_LABEL).astype(dtype)
    if weights is not None:
        return (La * np.asarray(weights, dtype=dtype)[None, :]) @ Lb.T
    return La @ Lb.T


def cluster_offsets(members: np.ndarray) -> np.ndarray:
    """Start column of each base clustering in :func:`one_hot` (length m + 1, last entry = K)."""
    return np.concatenate([[0], np.cumsum(cluster_counts(members))])


def bipartite_adjacency(B: sparse.spmatrix) -> sparse.csr_matrix:
    """Symmetric (n + K) x (n + K) adjacency [[0, B], [B^T, 0]] of the object-cluster bipartite graph."""
    return sparse.bmat([[None, B], [B.T, None]], format="csr")

"""Feature preprocessing: none, zscore, minmax, l2 (rows), tfidf, tfidf_log. Deterministic and sparse-aware.

Sparse matrices stay sparse, so the column-wise scalings do not centre them (centring would fill the
matrix): for sparse X ``zscore`` divides each column by its standard deviation and ``minmax`` divides by
the column's maximum absolute value (= min-max for non-negative data such as term counts).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.errors import UserError

PREPROCESS = ("none", "zscore", "minmax", "l2", "tfidf", "tfidf_log")


def preprocess(X, method: str = "none", *, where: str = ""):
    """Return a preprocessed copy of ``X`` (float64 ndarray or CSR).

    Parameters
    ----------
    X : ndarray or sparse matrix, n x d
    method : {"none", "zscore", "minmax", "l2", "tfidf", "tfidf_log"}
        ``zscore``: per column (x - mean) / std (population std; constant columns become 0).
        ``minmax``: per column to [0, 1] (constant columns become 0).
        ``l2``: every row scaled to unit Euclidean norm (zero rows stay zero).
        ``tfidf``: scikit-learn's TfidfTransformer (smooth idf, sublinear_tf=False, unit-L2 rows); needs
        non-negative counts.
        ``tfidf_log``: ``(1 + ln tf) * ln(N / df)`` for every nonzero count, then unit-L2 rows (a term in every
        document gets weight 0). The weighting of the ``*_tfidf_uni.mat`` text sets of the LMKCF repository (its
        ``tr11_tfidf.mat`` / ``tr31_tfidf.mat`` equal it to rounding); needs non-negative counts.
    """
    from ensclust.errors import unknown_name_error

    method = (method or "none").lower()
    if method not in PREPROCESS:
        raise unknown_name_error("preprocessing", method, PREPROCESS, where)
    is_sparse = sparse.issparse(X)
    if method == "none":
        return X.copy()
    if method == "l2":
        from sklearn.preprocessing import normalize

        return normalize(X, norm="l2", axis=1, copy=True)
    if method in ("tfidf", "tfidf_log"):
        values = X.data if is_sparse else X
        if values.size and values.min() < 0:
            raise UserError(f"{where}: {method} needs non-negative term counts; this data has negative values")
    if method == "tfidf_log":
        return _log_tfidf(X)
    if method == "tfidf":
        from sklearn.feature_extraction.text import TfidfTransformer

        out = TfidfTransformer(norm="l2", use_idf=True, smooth_idf=True).fit_transform(X)
        return sparse.csr_matrix(out, dtype=np.float64) if is_sparse else np.asarray(out.toarray(), dtype=np.float64)
    if is_sparse:
        X = sparse.csr_matrix(X, dtype=np.float64)
        if method == "zscore":
            mean = np.asarray(X.mean(axis=0)).ravel()
            sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
            scale = np.sqrt(np.maximum(sq - mean**2, 0.0))
        else:
            scale = np.asarray(abs(X).max(axis=0).toarray()).ravel()
        scale[scale == 0] = 1.0
        return sparse.csr_matrix(X @ sparse.diags(1.0 / scale))
    X = np.asarray(X, dtype=np.float64)
    if method == "zscore":
        mean = X.mean(axis=0)
        std = X.std(axis=0)
        std[std == 0] = 1.0
        return (X - mean) / std
    lo = X.min(axis=0)
    span = X.max(axis=0) - lo
    span[span == 0] = 1.0
    return (X - lo) / span


def _log_tfidf(X):
    """``(1 + ln tf) ln(N / df)`` with unit-L2 rows (see :func:`preprocess`), sparse in, sparse out."""
    from sklearn.preprocessing import normalize

    is_sparse = sparse.issparse(X)
    W = sparse.csr_matrix(X, dtype=np.float64, copy=True)
    W.eliminate_zeros()
    n = W.shape[0]
    df = np.bincount(W.indices, minlength=W.shape[1])
    with np.errstate(divide="ignore"):
        idf = np.where(df > 0, np.log(n / np.maximum(df, 1)), 0.0)
    W.data = (1.0 + np.log(W.data)) * idf[W.indices]
    W = normalize(W, norm="l2", axis=1, copy=False)
    return W if is_sparse else W.toarray()

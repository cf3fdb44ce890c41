"""The :class:`Dataset` record and the checks every loaded dataset passes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from ensclust.errors import UserError


@dataclass
class Dataset:
    """A feature matrix with its ground truth.

    Attributes
    ----------
    name : str
        Registry / built-in name, or the file stem for a path.
    X : ndarray (float64) or scipy.sparse.csr_matrix
        n x d features; sparse inputs stay sparse (CSR, float64).
    y : ndarray of int64
        Ground-truth labels renumbered to 0..c-1 (sorted order of the original label values).
    n_clusters : int
        c, the number of classes (or the explicit ``n_clusters`` parameter).
    meta : dict
        Provenance: ``path``, ``sha256`` (file checksum, or a content hash for built-ins), ``preprocess``,
        ``source`` (registry / builtin / file), ``x_key``/``y_key``, ``label_values`` (original labels) ...
    """

    name: str
    X: np.ndarray | sparse.csr_matrix
    y: np.ndarray
    n_clusters: int
    meta: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def is_sparse(self) -> bool:
        return sparse.issparse(self.X)

    def class_sizes(self) -> np.ndarray:
        return np.bincount(self.y, minlength=self.n_clusters)

    def __repr__(self) -> str:
        kind = "sparse" if self.is_sparse else "dense"
        return f"Dataset({self.name!r}, n={self.n_samples}, d={self.n_features}, c={self.n_clusters}, {kind})"


def encode_labels(y, where: str) -> tuple[np.ndarray, list]:
    """Labels of any dtype/offset -> int64 0..c-1, plus the sorted original values.

    Accepts an (n,), (n,1) or (1,n) array; numeric labels must be finite.
    """
    if sparse.issparse(y):
        y = y.toarray()
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise UserError(f"{where}: the labels must be a vector, got shape {np.asarray(y).shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise UserError(f"{where}: the labels contain NaN or Inf; remove those samples or fix the labels")
    if arr.dtype.kind == "O":
        # MATLAB cell arrays of strings arrive as object arrays of 1-element (or char) arrays
        arr = np.array([_scalar_label(v) for v in arr], dtype=str)
    values, codes = np.unique(arr, return_inverse=True)
    if values.dtype.kind == "f" and np.all(values == np.round(values)):
        values = values.astype(np.int64)  # MATLAB stores integer labels as double: report 1, not 1.0
    out_values = [v.item() if hasattr(v, "item") else v for v in values]
    return codes.astype(np.int64).ravel(), out_values


def _scalar_label(value) -> str:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "U":
            return "".join(value.ravel().tolist())
        if value.size == 1:
            return str(value.ravel()[0])
    return str(value)


def as_feature_matrix(X, where: str):
    """Features as float64 ndarray or CSR, 2-D with samples in rows."""
    if sparse.issparse(X):
        X = sparse.csr_matrix(X, dtype=np.float64)
        X.sum_duplicates()
        X.sort_indices()
        return X
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise UserError(f"{where}: the features must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise UserError(f"{where}: the features must be an n x d matrix, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def validate(X, y, n_clusters: int, where: str) -> None:
    """The bad-input checks: length mismatch, NaN/Inf, fewer samples than clusters, a single class."""
    n = X.shape[0]
    if n != y.shape[0]:
        raise UserError(
            f"{where}: features have {n} rows but labels have {y.shape[0]} entries; they must match "
            "(is the feature matrix transposed, or the wrong label variable chosen?)"
        )
    values = X.data if sparse.issparse(X) else X
    if not np.all(np.isfinite(values)):
        bad = int(np.count_nonzero(~np.isfinite(values)))
        raise UserError(f"{where}: the features contain {bad} NaN/Inf values; impute or remove them first")
    if n_clusters < 2:
        raise UserError(f"{where}: the labels hold a single class; clustering needs at least 2 classes")
    if n < n_clusters:
        raise UserError(f"{where}: {n} samples but {n_clusters} clusters requested; need at least one sample per cluster")


def content_hash(X, y) -> str:
    """sha256 of the arrays (for data without a file, e.g. built-ins and generators)."""
    h = hashlib.sha256()
    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        for part in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(part).tobytes())
        h.update(str(X.shape).encode())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
        h.update(str(np.shape(X)).encode())
    h.update(np.ascontiguousarray(y).tobytes())
    return h.hexdigest()


def describe(ds: Dataset) -> dict:
    """Summary used by ``ensclust data info``: shape, sparsity, class sizes."""
    n, d = ds.X.shape
    nnz = ds.X.nnz if ds.is_sparse else int(np.count_nonzero(ds.X))
    sizes = ds.class_sizes()
    return {
        "name": ds.name,
        "n": n,
        "d": d,
        "c": ds.n_clusters,
        "sparse": ds.is_sparse,
        "density": nnz / max(1, n * d),
        "class_sizes": sizes.tolist(),
        "largest_class": int(sizes.max()),
        "smallest_class": int(sizes.min()),
        "path": str(ds.meta.get("path", "")),
        "sha256": ds.meta.get("sha256", ""),
        "preprocess": ds.meta.get("preprocess", "none"),
    }


def path_name(path: Path) -> str:
    return Path(path).stem

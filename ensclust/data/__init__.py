"""Datasets: registry names, built-ins and files -> :class:`Dataset` (features + labels 0..c-1).

Example::

    from ensclust.data import load_dataset
    ds = load_dataset("ecoli")                       # registry name, file in the data directory
    ds = load_dataset("blobs", params={"n_samples": 500, "centers": 4})
    ds = load_dataset("my_data.mat", x_key="fea", y_key="gnd", preprocess="zscore")
"""

from __future__ import annotations

from pathlib import Path

from ensclust.data.builtin import BUILTIN_NAMES, load_builtin
from ensclust.data.dataset import Dataset, as_feature_matrix, content_hash, describe, encode_labels, validate
from ensclust.data.io import X_KEYS, Y_KEYS, list_variables, pick_key, read_arrays
from ensclust.data.preprocess import PREPROCESS
from ensclust.data.preprocess import preprocess as apply_preprocess
from ensclust.data.registry import (
    check_entry,
    file_sha256,
    get_entry,
    get_pool_entry,
    list_registry,
    load_registry,
    require_file,
    resolve_data_dir,
)
from ensclust.errors import UserError, unknown_name_error

__all__ = [
    "Dataset",
    "load_dataset",
    "load_file",
    "resolve_data_dir",
    "list_registry",
    "list_variables",
    "read_arrays",
    "describe",
    "file_sha256",
    "check_entry",
    "get_entry",
    "get_pool_entry",
    "load_registry",
    "apply_preprocess",
    "PREPROCESS",
    "BUILTIN_NAMES",
    "X_KEYS",
    "Y_KEYS",
]


def _looks_like_path(name: str) -> bool:
    p = Path(name)
    return p.suffix.lower() in (".mat", ".h5", ".hdf5", ".npz", ".csv") or "/" in name or p.exists()


def load_file(path, *, x_key=None, y_key=None):
    """Read features and labels from a file: ``(X, y_raw, meta)`` before label encoding and checks.

    CSV: the label is the last column unless ``y_key`` names a column (header name or 0-based index);
    ``x_key`` is ignored for CSV (all other columns are features).
    """
    path = Path(path)
    arrays = read_arrays(path)
    if path.suffix.lower() == ".csv":
        import numpy as np

        cols = list(arrays)
        if len(cols) < 2:
            raise UserError(f"{path}: a CSV dataset needs at least one feature column and a label column")
        if y_key is None:
            ycol = cols[-1]
        elif str(y_key) in arrays:
            ycol = str(y_key)
        elif str(y_key).lstrip("-").isdigit() and -len(cols) <= int(y_key) < len(cols):
            ycol = cols[int(y_key)]
        else:
            raise UserError(f"{path}: no column '{y_key}' for the labels; columns: {', '.join(cols)}")
        feats = [c for c in cols if c != ycol]
        try:
            X = np.column_stack([np.asarray(arrays[c], dtype=np.float64) for c in feats])
        except (TypeError, ValueError):
            raise UserError(
                f"{path}: a feature column is not numeric; remove text columns or name the label column with y_key"
            ) from None
        return X, arrays[ycol], {"x_key": None, "y_key": ycol, "variables": cols}
    if len(arrays) == 1 and y_key is None:
        only = next(iter(arrays))
        found = f"{only} {tuple(arrays[only].shape)}"
        raise UserError(
            f"{path}: only one variable ({found}); a dataset needs features and labels - add a label variable "
            f"({', '.join(Y_KEYS)}) or name it with y_key"
        )
    xk = pick_key(arrays, X_KEYS, x_key, "features", path)
    rest = {k: v for k, v in arrays.items() if k != xk}
    yk = pick_key(rest if y_key is None else arrays, Y_KEYS, y_key, "labels", path)
    return arrays[xk], arrays[yk], {"x_key": xk, "y_key": yk, "variables": list(arrays)}


def load_dataset(
    name_or_path,
    *,
    data_dir=None,
    preprocess: str = "none",
    params: dict | None = None,
    x_key: str | None = None,
    y_key: str | None = None,
) -> Dataset:
    """Load a registry dataset, a built-in or a file.

    Parameters
    ----------
    name_or_path : str or Path
        Registry name (``ensclust/data/registry.yaml``), built-in name (iris, wine, digits,
        breast_cancer_sklearn, blobs, moons, circles, aniso) or a file path (.mat v5/v7/v7.3, .h5/.hdf5,
        .npz, .csv). Relative paths are tried in the current folder, then in the data directory.
    data_dir : str or Path, optional
        See :func:`resolve_data_dir`.
    preprocess : {"none", "zscore", "minmax", "l2", "tfidf"}
        Applied after loading; recorded in ``meta["preprocess"]``.
    params : dict, optional
        Generator parameters for synthetic built-ins; ``n_clusters`` overrides c for any dataset.
    x_key, y_key : str, optional
        Variable names of the features / labels when auto-detection is not wanted.

    Returns
    -------
    Dataset
    """
    params = dict(params or {})
    n_clusters_override = params.pop("n_clusters", None)
    name = str(name_or_path)
    entry = None if isinstance(name_or_path, Path) else get_entry(name)
    meta: dict = {}
    if entry is not None:
        ddir = resolve_data_dir(data_dir)
        path = require_file(entry, ddir)
        X, y_raw, keys = load_file(path, x_key=x_key or entry.get("x_key"), y_key=y_key or entry.get("y_key"))
        digest = file_sha256(path)
        meta.update(keys)
        meta.update({"source": "registry", "path": str(path), "sha256": digest})
        if entry.get("sha256") and entry["sha256"] != digest:
            meta["checksum_mismatch"] = True
        ds_name = entry["name"]
    elif name in BUILTIN_NAMES and not (Path(name).suffix and Path(name).exists()):
        X, y_raw, used = load_builtin(name, params)
        meta.update({"source": "builtin", "path": None, "params": used, "sha256": content_hash(X, y_raw)})
        ds_name = name
        params = {}
    elif _looks_like_path(name):
        path = Path(name).expanduser()
        if not path.exists() and not path.is_absolute():
            candidate = resolve_data_dir(data_dir) / path
            if candidate.exists():
                path = candidate
        X, y_raw, keys = load_file(path, x_key=x_key, y_key=y_key)
        meta.update(keys)
        meta.update({"source": "file", "path": str(path), "sha256": file_sha256(path)})
        ds_name = path.stem
    else:
        choices = list(list_registry()) + list(BUILTIN_NAMES)
        raise unknown_name_error("dataset", name, choices)
    if params:
        raise UserError(f"dataset '{ds_name}': parameters {sorted(params)} apply only to synthetic generators")
    where = meta.get("path") or ds_name
    X = as_feature_matrix(X, where)
    y, label_values = encode_labels(y_raw, where)
    n_clusters = int(n_clusters_override) if n_clusters_override is not None else len(label_values)
    validate(X, y, n_clusters, where)
    X = apply_preprocess(X, preprocess, where=where)
    meta["preprocess"] = (preprocess or "none").lower()
    meta["label_values"] = label_values
    if entry is not None:
        meta["registry"] = {k: entry[k] for k in ("papers", "substitute", "note") if k in entry}
    return Dataset(name=ds_name, X=X, y=y, n_clusters=n_clusters, meta=meta)


def dataset_info(ds: Dataset) -> dict:
    """Alias of :func:`describe` (shape, sparsity, class sizes)."""
    return describe(ds)

"""Import a label matrix from a file: the authors' pools or a user's own base clusterings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import sparse

from ensclust.core.labels import check_members
from ensclust.data.dataset import encode_labels
from ensclust.data.io import Y_KEYS, pick_key, read_arrays
from ensclust.errors import UserError
from ensclust.pools.pool import Pool, members_checksum

#: Variable names tried for the member matrix (exact, then ignoring case).
MEMBER_KEYS = ("members", "E", "BCs", "base_clusterings", "baseCls", "IDX", "Pi", "labels_matrix", "M")
LAYOUTS = ("auto", "nm", "mn")


def _as_label_matrix(arr, path: Path, key: str) -> np.ndarray:
    if sparse.issparse(arr):
        arr = arr.toarray()
    arr = np.asarray(arr)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.size == 0:
        raise UserError(f"{path}: variable '{key}' must be a non-empty 2-D label matrix, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        known = arr[~np.isnan(arr)]   # NaN = a point the member did not label (checked by check_members)
        if not np.all(np.isfinite(known)):
            raise UserError(f"{path}: the label matrix '{key}' contains Inf; every entry must be a cluster label "
                            "(NaN or an empty CSV cell marks a missing label)")
        if not np.all(known == np.round(known)):
            raise UserError(f"{path}: the label matrix '{key}' has non-integer entries; it must hold cluster labels")
    elif arr.dtype.kind not in "biu":
        raise UserError(f"{path}: the label matrix '{key}' must be numeric, got dtype {arr.dtype}")
    return arr


def _declared_missing(path: Path):
    """The ``missing_label`` attribute of an HDF5 pool written by ``ensclust pool import --out``, or None."""
    if path.suffix.lower() not in (".h5", ".hdf5"):
        return None
    try:
        import h5py

        with h5py.File(path, "r") as fh:
            value = fh.attrs.get("missing_label")
    except (OSError, ImportError):
        return None   # read_arrays has already reported a bad file
    return None if value is None else int(value)


def import_pool(path, *, members_key=None, y_key=None, layout: str = "auto", missing=None) -> Pool:
    """Read a pool of base clusterings from ``.mat`` (v5/v7.3), ``.h5``, ``.npz`` or ``.csv``.

    Parameters
    ----------
    path : str or Path
    members_key : str, optional
        Variable of the label matrix; auto-detected from :data:`MEMBER_KEYS`, else the only 2-D
        variable that is not the ground truth.
    y_key : str, optional
        Variable of the ground truth (auto-detected from the usual label names; optional). For CSV, a
        column name or index; without it every CSV column is a member.
    layout : {"auto", "nm", "mn"}
        ``nm`` = samples in rows (n x m), ``mn`` = members in rows. ``auto`` uses the ground-truth length
        when there is one, else takes the longer axis as the samples.

    missing : the label value that marks a point a member did not label (e.g. -1 or 0), or None. NaN (an
        empty CSV cell, a NaN in a float matrix) is always missing; an HDF5 file written by
        ``ensclust pool import --out`` declares its own (attribute ``missing_label``).

    Labels may be 0- or 1-based or arbitrary: each column is renumbered to 0..k-1, missing entries become -1
    (``Pool.n_missing`` counts them).
    """
    path = Path(path)
    if layout not in LAYOUTS:
        from ensclust.errors import unknown_name_error

        raise unknown_name_error("pool layout", layout, LAYOUTS, str(path))
    arrays = read_arrays(path)
    y_raw = None
    if path.suffix.lower() == ".csv":
        cols = list(arrays)
        ycol = None
        if y_key is not None:
            if str(y_key) in arrays:
                ycol = str(y_key)
            elif str(y_key).lstrip("-").isdigit() and -len(cols) <= int(y_key) < len(cols):
                ycol = cols[int(y_key)]
            else:
                raise UserError(f"{path}: no column '{y_key}' for the ground truth; columns: {', '.join(cols)}")
            y_raw = arrays[ycol]
        mkey = "columns"
        raw = np.column_stack([arrays[c] for c in cols if c != ycol])
        if raw.dtype.kind == "O":
            raise UserError(f"{path}: the CSV pool has non-numeric entries; it must hold integer cluster labels")
    else:
        found = ", ".join(f"{k} {tuple(v.shape)}" for k, v in arrays.items()) or "none"
        if members_key is not None or any(k in arrays for k in MEMBER_KEYS) or any(
            k.lower() in {m.lower() for m in MEMBER_KEYS} for k in arrays
        ):
            mkey = pick_key(arrays, MEMBER_KEYS, members_key, "member matrix", path)
        else:
            two_d = [k for k, v in arrays.items() if len(v.shape) == 2 and min(v.shape) > 1]
            if len(two_d) != 1:
                raise UserError(
                    f"{path}: cannot tell which variable holds the base clusterings (tried {', '.join(MEMBER_KEYS)}); "
                    f"variables found: {found}; name it with --members-key"
                )
            mkey = two_d[0]
        rest = {k: v for k, v in arrays.items() if k != mkey}
        if y_key is not None:
            y_raw = arrays[pick_key(arrays, Y_KEYS, y_key, "ground truth", path)]
        else:
            names = [k for k in Y_KEYS if k in rest] or [k for k in rest if k.lower() in {y.lower() for y in Y_KEYS}]
            y_raw = rest[names[0]] if names else None
        raw = arrays[mkey]
    mat = _as_label_matrix(raw, path, mkey)
    y = None
    if y_raw is not None:
        y, _ = encode_labels(y_raw, str(path))
    n_rows, n_cols = mat.shape
    if layout == "mn":
        mat = mat.T
    elif layout == "auto":
        if y is not None and n_rows != y.shape[0] and n_cols == y.shape[0]:
            mat = mat.T
        elif y is None and n_cols > n_rows:
            mat = mat.T
    if y is not None and mat.shape[0] != y.shape[0]:
        raise UserError(
            f"{path}: the member matrix is {n_rows} x {n_cols} but the ground truth has {y.shape[0]} entries; "
            "they must match (check --layout or the y variable)"
        )
    if missing is None:
        missing = _declared_missing(path)
    # missing entries become -1; an undeclared -1 in an integer matrix is refused with a hint to --missing
    members = check_members(mat, where=str(path), missing=missing).astype(np.int32)
    ks = members.max(axis=0).astype(np.int64) + 1
    meta = {
        "source": "file",
        "path": str(path),
        "members_key": mkey,
        "members_sha256": members_checksum(members),
        "n_missing": int(np.count_nonzero(members == -1)),
        "generator": {"source": "file", "file": str(path)},
        "dataset": {"name": path.stem},
    }
    return Pool(members=members, ks=ks, seeds=np.full(members.shape[1], -1, dtype=np.int64), y=y, meta=meta)

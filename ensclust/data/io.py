"""Reading arrays from data files: MATLAB v5/v7 and v7.3, HDF5, NumPy ``.npz`` and CSV.

Every reader returns a dict ``name -> array`` (dense ndarray or scipy.sparse matrix) in the row-major,
samples-in-rows orientation the file's author meant. MATLAB v7.3 files are HDF5 files written
column-major, so their dense datasets are transposed here, and their sparse matrices (an HDF5 group with
``data``/``ir``/``jc``) are rebuilt as CSC. Anything wrong with a file becomes a one-line
:class:`~ensclust.errors.UserError` naming the file and what to do.
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import numpy as np
from scipy import sparse

from ensclust.errors import UserError

#: Variable names tried, in order, for the features and the labels (exact match first, then ignoring case).
X_KEYS = ("X", "fea", "data", "features", "x")
Y_KEYS = ("Y", "y", "gnd", "gt", "label", "labels", "truth", "class")

#: File suffixes understood by :func:`read_arrays`.
SUFFIXES = (".mat", ".h5", ".hdf5", ".npz", ".csv")

# MATLAB v7.3 bookkeeping groups that never hold user variables.
_MATLAB_INTERNAL = ("#refs#", "#subsystem#")


def file_kind(path: Path) -> str:
    """Return ``mat5``, ``mat73``, ``h5``, ``npz`` or ``csv`` for a file (by suffix and magic bytes)."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(
            f"{path}: unsupported file type '{suffix or '(none)'}'; use one of {', '.join(SUFFIXES)}"
        )
    if suffix == ".mat":
        with open(path, "rb") as fh:
            head = fh.read(512)
        if head[:8] == b"\x89HDF\r\n\x1a\n" or _is_hdf5(path):
            return "mat73"
        if not head.startswith(b"MATLAB"):
            raise UserError(
                f"{path}: not a MATLAB .mat file (no MATLAB header); re-save it in MATLAB with save(..., '-v7') "
                "or '-v7.3'"
            )
        return "mat5"
    if suffix in (".h5", ".hdf5"):
        return "h5"
    return suffix[1:]


def _is_hdf5(path: Path) -> bool:
    import h5py

    try:
        return bool(h5py.is_hdf5(path))
    except OSError:
        return False


def read_arrays(path, variables=None) -> dict:
    """Read the variables of a data file into a dict of arrays.

    Parameters
    ----------
    path : str or Path
        The file (``.mat`` v5/v7/v7.3, ``.h5``/``.hdf5``, ``.npz`` or ``.csv``).
    variables : list of str, optional
        Only read these variables (MATLAB/HDF5/npz); all when None.

    Returns
    -------
    dict
        ``name -> ndarray or scipy.sparse matrix``. For CSV files the keys are the column names (or
        ``"0"``, ``"1"``, ... without a header) and each value is one column.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: file not found; check the path or the data directory (--data-dir / ENSCLUST_DATA)")
    if path.is_dir():
        raise UserError(f"{path}: is a folder, not a data file")
    kind = file_kind(path)
    reader = {"mat5": _read_mat5, "mat73": _read_mat73, "h5": _read_h5, "npz": _read_npz, "csv": _read_csv}[kind]
    return reader(path, variables)


def list_variables(path) -> dict:
    """Variable name -> (shape, kind) without reading the data (cheap; used by ``data list`` and tests).

    ``kind`` is ``"sparse"`` or the dtype name. Shapes are in the samples-in-rows orientation.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: file not found; check the path or the data directory (--data-dir / ENSCLUST_DATA)")
    kind = file_kind(path)
    if kind == "mat5":
        import scipy.io

        try:
            return {name: (tuple(shape), cls) for name, shape, cls in scipy.io.whosmat(str(path))}
        except Exception as exc:  # noqa: BLE001 - any parse failure is a bad file for the user
            raise _corrupt(path, exc) from None
    if kind in ("mat73", "h5"):
        import h5py

        out = {}
        try:
            with h5py.File(path, "r") as fh:
                for name in fh:
                    if name in _MATLAB_INTERNAL:
                        continue
                    obj = fh[name]
                    matlab = "MATLAB_class" in obj.attrs
                    if isinstance(obj, h5py.Group):
                        if "MATLAB_sparse" in obj.attrs:
                            ncol = obj["jc"].shape[0] - 1
                            out[name] = ((int(obj.attrs["MATLAB_sparse"]), ncol), "sparse")
                        elif {"data", "indices", "indptr"} <= set(obj.keys()):
                            out[name] = (tuple(int(s) for s in obj.attrs["shape"]), "sparse")
                        continue
                    shape = tuple(obj.shape)
                    if matlab or kind == "mat73":
                        shape = shape[::-1]
                    out[name] = (shape, str(obj.dtype))
        except OSError as exc:
            raise _corrupt(path, exc) from None
        return out
    arrays = read_arrays(path)
    return {k: (tuple(v.shape), "sparse" if sparse.issparse(v) else str(v.dtype)) for k, v in arrays.items()}


def _corrupt(path: Path, exc: Exception) -> UserError:
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return UserError(f"{path}: cannot read the file (truncated or corrupt: {detail}); re-download or re-save it")


def _read_mat5(path: Path, variables) -> dict:
    import scipy.io

    try:
        raw = scipy.io.loadmat(str(path), variable_names=variables, squeeze_me=False, mat_dtype=False)
    except NotImplementedError:
        return _read_mat73(path, variables)
    except Exception as exc:  # noqa: BLE001 - scipy raises many types for damaged files
        raise _corrupt(path, exc) from None
    return {k: v for k, v in raw.items() if not k.startswith("__")}


def _read_mat73(path: Path, variables) -> dict:
    import h5py

    out = {}
    try:
        with h5py.File(path, "r") as fh:
            for name in fh:
                if name in _MATLAB_INTERNAL or (variables is not None and name not in variables):
                    continue
                obj = fh[name]
                if isinstance(obj, h5py.Group):
                    if "MATLAB_sparse" in obj.attrs:
                        out[name] = _matlab_sparse(obj)
                    continue  # structs / cells are not data matrices
                if obj.attrs.get("MATLAB_class", b"") in (b"cell", "cell"):
                    continue
                arr = obj[()]
                if isinstance(arr, np.ndarray):
                    arr = arr.T  # MATLAB is column-major: an n x d matrix is stored as d x n
                out[name] = arr
    except OSError as exc:
        raise _corrupt(path, exc) from None
    return out


def _matlab_sparse(group) -> sparse.csc_matrix:
    """Rebuild a MATLAB v7.3 sparse matrix: CSC with row indices ``ir`` and column pointers ``jc``."""
    n_rows = int(group.attrs["MATLAB_sparse"])
    jc = np.asarray(group["jc"][()], dtype=np.int64)
    n_cols = jc.shape[0] - 1
    ir = np.asarray(group["ir"][()], dtype=np.int64) if "ir" in group else np.zeros(0, np.int64)
    if "data" in group:
        data = np.asarray(group["data"][()])
    else:  # an all-zero sparse matrix stores no data
        data = np.zeros(ir.shape[0])
    return sparse.csc_matrix((data, ir, jc), shape=(n_rows, n_cols))


def _read_h5(path: Path, variables) -> dict:
    import h5py

    if not _is_hdf5(path):
        raise UserError(f"{path}: not an HDF5 file (truncated or another format); re-save it with h5py or MATLAB -v7.3")
    try:
        with h5py.File(path, "r") as fh:
            if any("MATLAB_class" in fh[k].attrs for k in fh if k not in _MATLAB_INTERNAL):
                return _read_mat73(path, variables)
            out = {}
            for name in fh:
                if variables is not None and name not in variables:
                    continue
                obj = fh[name]
                if isinstance(obj, h5py.Group):
                    # scipy-style CSR stored as a group: data / indices / indptr + shape attribute
                    if {"data", "indices", "indptr"} <= set(obj.keys()):
                        shape = tuple(int(s) for s in obj.attrs["shape"])
                        out[name] = sparse.csr_matrix(
                            (obj["data"][()], obj["indices"][()], obj["indptr"][()]), shape=shape
                        )
                    continue
                out[name] = obj[()]
    except OSError as exc:
        raise _corrupt(path, exc) from None
    return out


def _read_npz(path: Path, variables) -> dict:
    try:
        with np.load(path, allow_pickle=False) as npz:
            keys = list(npz.files)
            if {"format", "shape", "data", "indices", "indptr"} <= set(keys):  # scipy.sparse.save_npz
                return {"X": sparse.load_npz(path)}
            return {k: npz[k] for k in keys if variables is None or k in variables}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise _corrupt(path, exc) from None


def _is_number(s: str) -> bool:
    """A numeric CSV cell; an empty cell counts (a missing label in a pool), so it does not make a header."""
    if not s.strip():
        return True
    try:
        float(s)
        return True
    except ValueError:
        return False


def csv_header(path) -> list[str] | None:
    """The column names of a CSV file, or None when its first row is all numbers (no header)."""
    first = _first_csv_row(Path(path))
    return None if all(_is_number(s) for s in first) else [s.strip() for s in first]


def _first_csv_row(path: Path) -> list[str]:
    try:
        with open(path, newline="") as fh:
            first = next(csv.reader(fh), None)
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text CSV file; save the table as comma-separated text") from None
    except csv.Error as exc:
        raise UserError(f"{path}: cannot parse the CSV file ({exc})") from None
    if not first:
        raise UserError(f"{path}: the CSV file is empty")
    return first


def _check_rectangular(path: Path) -> None:
    """Every non-blank line has as many fields as the first (pandas would pad a short row with NaN)."""
    try:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)
            width = None
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if width is None:
                    width = len(row)
                elif len(row) != width:
                    raise UserError(f"{path}: ragged/inconsistent number of columns at line {reader.line_num} "
                                    f"({len(row)} fields, the first row has {width}); fix or remove that line")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text CSV file; save the table as comma-separated text") from None
    except csv.Error as exc:
        raise UserError(f"{path}: cannot parse the CSV file ({exc})") from None


def _read_csv(path: Path, variables) -> dict:
    """Read a CSV table column-wise; a first row that is not all numbers is taken as the header."""
    import pandas as pd

    first = _first_csv_row(path)
    _check_rectangular(path)
    header = 0 if not all(_is_number(s) for s in first) else None
    try:
        frame = pd.read_csv(path, header=header)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"{path}: cannot parse the CSV file ({str(exc).splitlines()[0]})") from None
    frame.columns = [str(c) for c in frame.columns]
    return {c: frame[c].to_numpy() for c in frame.columns}


def pick_key(arrays: dict, candidates, explicit, what: str, path: Path) -> str:
    """Choose the variable holding ``what`` (features / labels) or raise a UserError listing what exists."""
    found = ", ".join(f"{k} {tuple(v.shape)}" for k, v in arrays.items()) or "none"
    if explicit is not None:
        if explicit in arrays:
            return explicit
        raise UserError(f"{path}: no variable '{explicit}' for the {what}; variables found: {found}")
    for key in candidates:
        if key in arrays:
            return key
    lowered = {k.lower(): k for k in arrays}
    for key in candidates:
        if key.lower() in lowered:
            return lowered[key.lower()]
    opt = "--x-key / x_key" if what == "features" else "--y-key / y_key"
    raise UserError(
        f"{path}: no recognisable {what} variable (tried {', '.join(candidates)}); variables found: {found}; "
        f"name it with {opt}"
    )

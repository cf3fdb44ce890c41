"""Every loader format (MATLAB v7.3 laid out like MATLAB writes it, .h5, .npz, .csv) and the shared files."""

from __future__ import annotations

import csv

import h5py
import numpy as np
import scipy.io
from scipy import sparse

from ensclust.data import list_registry, list_variables, load_dataset


def write_mat73(path, variables: dict) -> None:
    """Write an HDF5 file the way MATLAB's ``save -v7.3`` does.

    512-byte user block with the MATLAB text header, dense arrays stored transposed (column-major) with a
    ``MATLAB_class`` attribute, sparse matrices as a group with ``data``/``ir``/``jc`` and ``MATLAB_sparse``
    = number of rows.
    """
    with h5py.File(path, "w", userblock_size=512) as fh:
        for name, value in variables.items():
            if sparse.issparse(value):
                csc = sparse.csc_matrix(value)
                g = fh.create_group(name)
                g.attrs["MATLAB_class"] = np.bytes_("double")
                g.attrs["MATLAB_sparse"] = np.uint64(csc.shape[0])
                g["data"] = csc.data
                g["ir"] = csc.indices.astype(np.uint64)
                g["jc"] = csc.indptr.astype(np.uint64)
            else:
                arr = np.atleast_2d(np.asarray(value, dtype=np.float64))
                fh[name] = arr.T
                fh[name].attrs["MATLAB_class"] = np.bytes_("double")
    with open(path, "r+b") as fh:
        fh.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: test HDF5 schema 1.00 .".ljust(116, b" "))


def _data(n=15, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 3 + 1
    return X, y


def test_mat73_dense_is_transposed_back(tmp_path):
    X, y = _data()
    path = tmp_path / "v73.mat"
    write_mat73(path, {"fea": X, "gnd": y.reshape(-1, 1)})
    ds = load_dataset(path)
    assert ds.X.shape == (15, 4) and np.allclose(ds.X, X)
    assert np.array_equal(ds.y, y - 1)
    assert list_variables(path)["fea"][0] == (15, 4)


def test_mat73_sparse_rebuilt_as_csc(tmp_path):
    X, y = _data(n=12, d=7)
    X[np.abs(X) < 0.8] = 0.0
    path = tmp_path / "sp73.mat"
    write_mat73(path, {"X": sparse.csc_matrix(X), "Y": y.reshape(1, -1)})
    ds = load_dataset(path)
    assert sparse.isspmatrix_csr(ds.X) and ds.X.shape == (12, 7)
    assert np.allclose(ds.X.toarray(), X)
    assert list_variables(path)["X"] == ((12, 7), "sparse")


def test_mat_v7_compressed(tmp_path):
    X, y = _data()
    path = tmp_path / "v7.mat"
    scipy.io.savemat(path, {"X": X, "Y": y}, do_compression=True)
    assert np.allclose(load_dataset(path).X, X)


def test_h5_row_major_and_sparse_group(tmp_path):
    X, y = _data()
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as fh:
        fh["features"] = X
        fh["labels"] = y
    ds = load_dataset(path)
    assert np.allclose(ds.X, X) and np.array_equal(ds.y, y - 1)
    Xs = sparse.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    path2 = tmp_path / "s.hdf5"
    with h5py.File(path2, "w") as fh:
        g = fh.create_group("X")
        g["data"], g["indices"], g["indptr"] = Xs.data, Xs.indices, Xs.indptr
        g.attrs["shape"] = Xs.shape
        fh["y"] = y
    ds2 = load_dataset(path2)
    assert sparse.issparse(ds2.X) and np.allclose(ds2.X.toarray(), Xs.toarray())


def test_npz(tmp_path):
    X, y = _data()
    path = tmp_path / "d.npz"
    np.savez(path, data=X, gt=y.astype(np.uint8))
    ds = load_dataset(path)
    assert np.allclose(ds.X, X) and np.array_equal(ds.y, y - 1)


def test_csv_header_and_no_header(tmp_path):
    X, y = _data()
    labels = np.array(["cat", "dog", "emu"])[y - 1]
    path = tmp_path / "h.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "c", "d", "species"])
        for row, lab in zip(X, labels, strict=True):
            w.writerow([*row, lab])
    ds = load_dataset(path)
    assert ds.X.shape == (15, 4) and np.allclose(ds.X, X)
    assert np.array_equal(ds.y, y - 1) and ds.meta["y_key"] == "species"
    raw = tmp_path / "raw.csv"
    np.savetxt(raw, np.column_stack([y, X]), delimiter=",")
    ds2 = load_dataset(raw, y_key=0)  # label in the first column, no header
    assert np.allclose(ds2.X, X) and np.array_equal(ds2.y, y - 1)


def test_relative_path_in_data_dir(tmp_path):
    X, y = _data()
    scipy.io.savemat(tmp_path / "rel.mat", {"X": X, "Y": y})
    assert load_dataset("rel.mat", data_dir=tmp_path).X.shape == (15, 4)


def test_all_shared_files_have_manifest_shapes(data_dir):
    """All 44 feature files (and the 18 pools) in the shared folder: shapes as in MANIFEST.csv (headers only)."""
    import csv as _csv

    rows = list(_csv.DictReader(open(data_dir / "MANIFEST.csv")))
    assert len([r for r in rows if not r["file"].startswith("pools/")]) == 44
    reg = list_registry()
    for r in rows:
        variables = list_variables(data_dir / r["file"])
        shapes = {k: v[0] for k, v in variables.items()}
        n, d = int(r["n"]), int(r["d"])
        assert (n, d) in shapes.values(), (r["file"], shapes)
        if not r["file"].startswith("pools/"):
            e = reg[r["name"]]
            assert (e["n"], e["d"], e["c"]) == (n, d, int(r["c"]))
            assert shapes[e["x_key"]] == (n, d) and shapes[e["y_key"]] == (n, 1)


def test_all_shared_files_load_fully(data_dir):
    """Full load of every registry file: n, d, c, sparsity and checksum as registered (~45 MB, ~6 s)."""
    for name, e in list_registry().items():
        if not e.get("file"):
            continue
        ds = load_dataset(name, data_dir=data_dir)
        assert (ds.n_samples, ds.n_features, ds.n_clusters) == (e["n"], e["d"], e["c"]), name
        assert ds.is_sparse == e["sparse"], name
        assert "checksum_mismatch" not in ds.meta, name

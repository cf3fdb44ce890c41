"""Dataset loading: built-ins, every file format, label encoding, registry."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
from scipy import sparse

from ensclust.data import BUILTIN_NAMES, Dataset, list_registry, load_dataset, resolve_data_dir
from ensclust.errors import UserError


def _xy(n=12, d=3, c=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.arange(n) % c
    return X, y


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_builtins_load(name):
    ds = load_dataset(name)
    assert isinstance(ds, Dataset)
    assert ds.X.dtype == np.float64 and ds.X.ndim == 2
    assert ds.y.dtype == np.int64
    assert ds.y.min() == 0 and ds.y.max() == ds.n_clusters - 1
    assert set(np.unique(ds.y)) == set(range(ds.n_clusters))
    assert ds.meta["source"] == "builtin" and len(ds.meta["sha256"]) == 64


def test_builtin_shapes_and_params():
    assert load_dataset("iris").X.shape == (150, 4)
    assert load_dataset("digits").X.shape == (1797, 64)
    assert load_dataset("breast_cancer_sklearn").X.shape == (569, 30)
    ds = load_dataset("blobs", params={"n_samples": 90, "centers": 5, "random_state": 3})
    assert ds.X.shape == (90, 2) and ds.n_clusters == 5
    again = load_dataset("blobs", params={"n_samples": 90, "centers": 5, "random_state": 3})
    assert np.array_equal(ds.X, again.X) and ds.meta["sha256"] == again.meta["sha256"]
    other = load_dataset("blobs", params={"n_samples": 90, "centers": 5, "random_state": 4})
    assert other.meta["sha256"] != ds.meta["sha256"]
    assert load_dataset("moons", params={"noise": 0.2, "n_samples": 50}).X.shape == (50, 2)
    with pytest.raises(UserError, match="unknown parameter"):
        load_dataset("moons", params={"centers": 3})
    with pytest.raises(UserError, match="takes no parameters"):
        load_dataset("iris", params={"n_samples": 3})


def test_unknown_name_suggests():
    with pytest.raises(UserError, match="did you mean 'iris'"):
        load_dataset("irsi")


def test_mat_v5_dense_and_label_offsets(tmp_path):
    X, y = _xy()
    path = tmp_path / "d.mat"
    scipy.io.savemat(path, {"fea": X, "gnd": (y * 10 + 7).reshape(-1, 1).astype(float)})
    ds = load_dataset(path)
    assert ds.name == "d"
    assert np.allclose(ds.X, X)
    assert np.array_equal(ds.y, y)
    assert ds.meta["label_values"] == [7, 17, 27]
    assert ds.meta["x_key"] == "fea" and ds.meta["y_key"] == "gnd"
    assert len(ds.meta["sha256"]) == 64


def test_mat_v5_sparse_stays_sparse_and_string_labels(tmp_path):
    X, _ = _xy(n=10, d=6)
    X[X < 0.5] = 0
    Xs = sparse.csc_matrix(X)
    labels = np.array(["b", "a", "c", "a", "b", "c", "a", "b", "c", "a"], dtype=object)
    path = tmp_path / "s.mat"
    scipy.io.savemat(path, {"X": Xs, "label": labels.reshape(-1, 1)})
    ds = load_dataset(str(path))
    assert sparse.isspmatrix_csr(ds.X) and ds.X.dtype == np.float64
    assert np.allclose(ds.X.toarray(), X)
    assert np.array_equal(ds.y, np.array([1, 0, 2, 0, 1, 2, 0, 1, 2, 0]))


def test_explicit_keys_override(tmp_path):
    X, y = _xy()
    path = tmp_path / "k.mat"
    scipy.io.savemat(path, {"X": X, "Y": y, "A": X[:, :2] * 2, "B": (y + 1) % 3})
    ds = load_dataset(path, x_key="A", y_key="B")
    assert ds.X.shape == (12, 2) and np.array_equal(ds.y, (y + 1) % 3)
    with pytest.raises(UserError, match="no variable 'Z'.*variables found: .*A"):
        load_dataset(path, x_key="Z")


def test_registry_entries_are_complete():
    reg = list_registry()
    pools = list_registry("pools")
    assert len(pools) == 18
    for name, e in reg.items():
        assert e["name"] == name
        for key in ("n", "c", "papers"):
            assert key in e, (name, key)
        if e.get("file"):
            assert len(e["sha256"]) == 64 and e["d"] > 0
        else:
            assert e.get("pools"), name  # pool-only datasets point at their pool
    # every dataset label used in the paper table CSVs of the four papers with tables is in the registry
    labels = {(p["paper"], p["label"]) for e in reg.values() for p in e["papers"]}
    for paper, label in [("acmk", "20NG"), ("acmk", "Lung"), ("rcec", "K1b"), ("awec", "Appendicitis (D1)"),
                         ("awec", "USPS (D14)"), ("eccms", "Caltech20"), ("eccms", "FCT"), ("eccms", "ISOLET"),
                         ("spce", "WarpAR")]:
        assert (paper, label) in labels
    assert reg["news4a"]["substitute"] and reg["lung_discrete"]["substitute"]
    assert any(p["preprocess"] == "tfidf" for p in reg["tr11"]["papers"] if p["paper"] == "rcec")


def test_registry_dataset_loads(data_dir):
    ds = load_dataset("ecoli", data_dir=data_dir)
    assert ds.X.shape == (336, 7) and ds.n_clusters == 8
    assert ds.meta["sha256"] == list_registry()["ecoli"]["sha256"]
    assert ds.meta["registry"]["papers"][0]["label"] == "Ecoli"
    text = load_dataset("tr11_tfidf", data_dir=data_dir)
    assert sparse.isspmatrix_csr(text.X) and text.X.shape == (414, 6429)
    with pytest.raises(UserError, match="features are not available"):
        load_dataset("caltech20", data_dir=data_dir)


def test_resolve_data_dir(tmp_path, monkeypatch):
    assert resolve_data_dir(tmp_path) == tmp_path
    monkeypatch.setenv("ENSCLUST_DATA", str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path) == tmp_path

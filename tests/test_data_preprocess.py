"""Preprocessing: closed forms, determinism, sparse stays sparse, recorded in meta."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from ensclust.data import apply_preprocess, load_dataset
from ensclust.errors import UserError


@pytest.fixture
def X():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(20, 5)) * [1, 10, 100, 0.1, 1] + [0, 5, -3, 1, 2]
    A[:, 4] = 7.0  # constant column
    return A


def test_zscore(X):
    Z = apply_preprocess(X, "zscore")
    assert np.allclose(Z[:, :4].mean(0), 0) and np.allclose(Z[:, :4].std(0), 1)
    assert np.all(Z[:, 4] == 0)


def test_minmax(X):
    M = apply_preprocess(X, "minmax")
    assert np.allclose(M[:, :4].min(0), 0) and np.allclose(M[:, :4].max(0), 1)
    assert np.all(M[:, 4] == 0)


def test_l2_rows(X):
    L = apply_preprocess(X, "l2")
    assert np.allclose(np.linalg.norm(L, axis=1), 1)
    assert np.allclose(L * np.linalg.norm(X, axis=1, keepdims=True), X)


def test_tfidf_closed_form_and_sparse():
    counts = np.array([[3, 0, 1], [0, 2, 0], [1, 1, 1], [0, 0, 4]], dtype=float)
    n = counts.shape[0]
    df = (counts > 0).sum(0)
    idf = np.log((1 + n) / (1 + df)) + 1  # smooth idf (scikit-learn)
    expected = counts * idf
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    dense = apply_preprocess(counts, "tfidf")
    assert np.allclose(dense, expected)
    sp = apply_preprocess(sparse.csr_matrix(counts), "tfidf")
    assert sparse.issparse(sp) and np.allclose(sp.toarray(), expected)
    with pytest.raises(UserError, match="non-negative"):
        apply_preprocess(-counts, "tfidf")


def test_log_tfidf_closed_form_and_sparse():
    counts = np.array([[3, 0, 1], [0, 2, 1], [1, 1, 1], [0, 0, 4]], dtype=float)
    n = counts.shape[0]
    df = (counts > 0).sum(0)
    with np.errstate(divide="ignore"):
        expected = np.where(counts > 0, 1 + np.log(counts), 0.0) * np.log(n / df)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected /= np.where(norms > 0, norms, 1.0)
    assert np.all(expected[:, 2] == 0) and np.all(expected[3] == 0)  # a term in every document weighs 0
    assert np.allclose(apply_preprocess(counts, "tfidf_log"), expected)
    sp = apply_preprocess(sparse.csr_matrix(counts), "tfidf_log")
    assert sparse.issparse(sp) and np.allclose(sp.toarray(), expected)
    with pytest.raises(UserError, match="non-negative"):
        apply_preprocess(-counts, "tfidf_log")


def test_log_tfidf_is_the_lmkcf_weighting_of_tr11(data_dir):
    # the shared data's tr11_tfidf.mat (LMKCF's *_tfidf_uni files) is this weighting of tr11.mat's counts
    import scipy.io as sio

    if not (data_dir / "tr11.mat").exists() or not (data_dir / "tr11_tfidf.mat").exists():
        pytest.skip("tr11.mat / tr11_tfidf.mat not in the shared data")
    counts = sio.loadmat(data_dir / "tr11.mat")["X"]
    published = sparse.csr_matrix(sio.loadmat(data_dir / "tr11_tfidf.mat")["X"])
    ours = sparse.csr_matrix(apply_preprocess(sparse.csr_matrix(counts, dtype=float), "tfidf_log"))
    assert abs(ours - published).max() < 1e-12


def test_sparse_scalings_stay_sparse():
    A = sparse.random(30, 8, density=0.3, random_state=0, format="csr") * 5
    for method in ("zscore", "minmax", "l2", "none"):
        out = apply_preprocess(A, method)
        assert sparse.issparse(out) and out.nnz == A.nnz, method
    mm = apply_preprocess(A, "minmax").toarray()
    assert np.allclose(mm.max(0)[np.asarray(A.max(0).toarray()).ravel() > 0], 1)
    zs = apply_preprocess(A, "zscore").toarray()
    assert np.allclose(zs.std(0)[A.toarray().std(0) > 0], 1)  # scaled, not centred


def test_recorded_deterministic_and_unknown():
    a = load_dataset("wine", preprocess="zscore")
    b = load_dataset("wine", preprocess="zscore")
    assert a.meta["preprocess"] == "zscore" and a.X.tobytes() == b.X.tobytes()
    assert load_dataset("wine").meta["preprocess"] == "none"
    with pytest.raises(UserError, match="unknown preprocessing 'zscor'.*did you mean 'zscore'"):
        load_dataset("wine", preprocess="zscor")

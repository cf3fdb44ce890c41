"""Every bad input gives a one-line UserError that names the file and says what to do."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io

from ensclust.data import load_dataset
from ensclust.errors import UserError


def _load_error(path, **kw) -> str:
    with pytest.raises(UserError) as info:
        load_dataset(path, **kw)
    msg = str(info.value)
    assert "\n" not in msg
    assert str(path) in msg
    return msg


def _X(n=10, d=3):
    return np.random.default_rng(0).normal(size=(n, d))


def test_missing_file(tmp_path):
    assert "file not found" in _load_error(tmp_path / "absent.mat")


def test_no_recognisable_variables(tmp_path):
    path = tmp_path / "odd.mat"
    scipy.io.savemat(path, {"alpha": _X(), "beta": np.arange(10)})
    msg = _load_error(path)
    assert "no recognisable features variable" in msg and "alpha (10, 3)" in msg and "beta" in msg


def test_no_label_variable(tmp_path):
    path = tmp_path / "nolab.mat"
    scipy.io.savemat(path, {"X": _X(), "other": np.arange(10)})
    msg = _load_error(path)
    assert "no recognisable labels variable" in msg and "other" in msg and "y_key" in msg
    only = tmp_path / "only.mat"
    scipy.io.savemat(only, {"X": _X()})
    assert "only one variable" in _load_error(only)


def test_length_mismatch(tmp_path):
    path = tmp_path / "mismatch.mat"
    scipy.io.savemat(path, {"X": _X(10), "Y": np.arange(9) % 3})
    assert "10 rows but labels have 9" in _load_error(path)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_inf_features(tmp_path, bad):
    X = _X()
    X[2, 1] = bad
    path = tmp_path / "nan.mat"
    scipy.io.savemat(path, {"X": X, "Y": np.arange(10) % 2})
    assert "NaN/Inf" in _load_error(path)


def test_nan_labels(tmp_path):
    y = (np.arange(10) % 2).astype(float)
    y[0] = np.nan
    path = tmp_path / "nanlab.mat"
    scipy.io.savemat(path, {"X": _X(), "Y": y})
    assert "labels contain NaN" in _load_error(path)


def test_single_class(tmp_path):
    path = tmp_path / "one.mat"
    scipy.io.savemat(path, {"X": _X(), "Y": np.ones(10)})
    assert "single class" in _load_error(path)


def test_fewer_samples_than_clusters(tmp_path):
    path = tmp_path / "few.mat"
    scipy.io.savemat(path, {"X": _X(4), "Y": np.array([1, 2, 1, 2])})
    assert "4 samples but 6 clusters" in _load_error(path, params={"n_clusters": 6})


def test_truncated_mat(tmp_path):
    good = tmp_path / "good.mat"
    scipy.io.savemat(good, {"X": _X(200, 20), "Y": np.arange(200) % 3})
    raw = good.read_bytes()
    bad = tmp_path / "trunc.mat"
    bad.write_bytes(raw[: len(raw) // 2])
    assert "truncated or corrupt" in _load_error(bad)


def test_non_matlab_file(tmp_path):
    path = tmp_path / "fake.mat"
    path.write_text("this is just text, not a MATLAB file\n")
    assert "not a MATLAB .mat file" in _load_error(path)


def test_truncated_h5_and_bad_npz(tmp_path):
    h5 = tmp_path / "t.h5"
    h5.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 20)
    assert "cannot read" in _load_error(h5) or "not an HDF5" in _load_error(h5)
    npz = tmp_path / "t.npz"
    npz.write_bytes(b"PK\x03\x04garbage")
    assert "truncated or corrupt" in _load_error(npz)


def test_unsupported_suffix_and_text_features(tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"x")
    assert "unsupported file type" in _load_error(path)
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,label\n1,x,1\n2,y,2\n")
    assert "not numeric" in _load_error(csv)


def test_cli_exit_code_and_one_line(tmp_path, capsys):
    from ensclust.cli import main

    path = tmp_path / "one.mat"
    scipy.io.savemat(path, {"X": _X(), "Y": np.ones(10)})
    with pytest.raises(SystemExit) as info:
        main(["data", "info", str(path)])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "single class" in err and "Traceback" not in err

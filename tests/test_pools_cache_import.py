"""Pool HDF5 cache (hit, miss, corruption, truncation) and pool import (formats, layouts, authors' pools)."""

from __future__ import annotations

import csv
import warnings

import h5py
import numpy as np
import pytest
import scipy.io

from ensclust.data import list_registry, load_dataset
from ensclust.errors import UserError
from ensclust.metrics import ari, fscore, nmi
from ensclust.pools import PoolCacheWarning, get_pool, import_pool

SPEC = {"generator": "kmeans", "k": [2, 6], "size": 5}


@pytest.fixture(scope="module")
def iris():
    return load_dataset("iris")


def test_cache_miss_then_hit(iris, tmp_path):
    p1 = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    assert p1.meta["cache"] == "miss"
    files = list(tmp_path.glob("*.h5"))
    assert len(files) == 1 and files[0].stem == p1.meta["key"]
    with h5py.File(files[0]) as fh:
        assert fh["members"].dtype == np.int32 and fh["members"].shape == (150, 5)
        assert fh.attrs["dataset_sha256"] == iris.meta["sha256"]
        assert '"size": 5' in fh.attrs["generator"]
    p2 = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    assert p2.meta["cache"] == "hit"
    assert p2.members.tobytes() == p1.members.tobytes()
    assert np.array_equal(p2.ks, p1.ks) and np.array_equal(p2.seeds, p1.seeds)
    assert np.array_equal(p2.y, iris.y)
    assert not list(tmp_path.glob("*.tmp"))  # no temp files left behind


def test_cache_key_changes(iris, tmp_path):
    base = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path).meta["key"]
    keys = {
        get_pool(iris, {**SPEC, "k": [2, 7]}, seed=3, cache_dir=tmp_path).meta["key"],
        get_pool(iris, {**SPEC, "size": 6}, seed=3, cache_dir=tmp_path).meta["key"],
        get_pool(iris, SPEC, seed=4, cache_dir=tmp_path).meta["key"],
        get_pool(load_dataset("iris", preprocess="zscore"), SPEC, seed=3, cache_dir=tmp_path).meta["key"],
    }
    assert base not in keys and len(keys) == 4
    assert len(list(tmp_path.glob("*.h5"))) == 5
    # 'first' only truncates: same cached pool
    few = get_pool(iris, {**SPEC, "first": 2}, seed=3, cache_dir=tmp_path)
    assert few.meta["key"] == base and few.size == 2 and few.meta["cache"] == "hit"


def _cached_file(tmp_path):
    (path,) = list(tmp_path.glob("*.h5"))
    return path


def test_corrupt_members_rebuilt(iris, tmp_path):
    good = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    path = _cached_file(tmp_path)
    with h5py.File(path, "r+") as fh:
        data = fh["members"][()]
        data[0, 0] = (data[0, 0] + 1) % 2
        fh["members"][...] = data
    with pytest.warns(PoolCacheWarning, match="corrupt or truncated .*checksum"):
        again = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    assert again.meta["cache"] == "rebuilt" and again.members.tobytes() == good.members.tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_pool(iris, SPEC, seed=3, cache_dir=tmp_path).meta["cache"] == "hit"


def test_truncated_file_rebuilt(iris, tmp_path):
    good = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    path = _cached_file(tmp_path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 3])
    with pytest.warns(PoolCacheWarning, match="rebuilding"):
        again = get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    assert again.meta["cache"] == "rebuilt" and again.members.tobytes() == good.members.tobytes()
    path.write_bytes(b"not an hdf5 file")
    with pytest.warns(PoolCacheWarning):
        assert get_pool(iris, SPEC, seed=3, cache_dir=tmp_path).meta["cache"] == "rebuilt"


def test_wrong_shape_in_cache_rebuilt(iris, tmp_path):
    get_pool(iris, SPEC, seed=3, cache_dir=tmp_path)
    path = _cached_file(tmp_path)
    with h5py.File(path, "r+") as fh:
        del fh["members"]
        fh["members"] = np.zeros((150, 4), dtype=np.int32)
    with pytest.warns(PoolCacheWarning, match="shape"):
        assert get_pool(iris, SPEC, seed=3, cache_dir=tmp_path).meta["cache"] == "rebuilt"


def test_no_cache(iris, tmp_path):
    p = get_pool(iris, SPEC, seed=3, cache_dir=None)
    assert p.meta["cache"] == "off"


# ----------------------------------------------------------------------------------------------- import


def _pool_matrix():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 10)
    members = np.column_stack([rng.integers(0, 4, size=30) for _ in range(7)])
    return members, y


def _same_partitions(a, b):
    from ensclust.metrics import ari

    return all(ari(a[:, j], b[:, j]) == 1.0 for j in range(a.shape[1]))


def test_import_mat_one_based_nm(tmp_path):
    members, y = _pool_matrix()
    path = tmp_path / "p.mat"
    scipy.io.savemat(path, {"members": members + 1.0, "gt": y + 1.0})
    pool = import_pool(path)
    assert pool.members.shape == (30, 7) and pool.members.dtype == np.int32
    assert pool.members.min() == 0 and _same_partitions(pool.members, members)
    assert np.array_equal(pool.y, y) and np.all(pool.seeds == -1)


def test_import_mn_layout_auto_and_explicit(tmp_path):
    members, y = _pool_matrix()
    path = tmp_path / "t.mat"
    scipy.io.savemat(path, {"E": members.T, "y": y})
    pool = import_pool(path)  # 7 x 30 with y of length 30 -> transposed
    assert pool.members.shape == (30, 7) and _same_partitions(pool.members, members)
    noy = tmp_path / "noy.mat"
    scipy.io.savemat(noy, {"E": members.T})
    assert import_pool(noy).members.shape == (30, 7)  # no y: the longer axis is the samples
    assert import_pool(noy, layout="nm").members.shape == (7, 30)
    assert import_pool(path, layout="mn").members.shape == (30, 7)
    with pytest.raises(UserError, match="must match"):
        import_pool(path, layout="nm")


def test_import_csv_npz_h5_and_v73(tmp_path):
    members, y = _pool_matrix()
    c = tmp_path / "p.csv"
    with open(c, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"m{j}" for j in range(7)] + ["truth"])
        for i in range(30):
            w.writerow(list(members[i]) + [y[i]])
    pool = import_pool(c, y_key="truth")
    assert pool.members.shape == (30, 7) and np.array_equal(pool.y, y)
    assert import_pool(c).members.shape == (30, 8)  # without y_key every column is a member
    n = tmp_path / "p.npz"
    np.savez(n, members=members, labels=y)
    pool = import_pool(n)
    assert _same_partitions(pool.members, members) and np.array_equal(pool.y, y)
    h = tmp_path / "p.h5"
    with h5py.File(h, "w") as fh:
        fh["members"] = members
        fh["y"] = y
    assert _same_partitions(import_pool(h).members, members)
    m73 = tmp_path / "p73.mat"
    with h5py.File(m73, "w", userblock_size=512) as fh:
        fh["members"] = members.T.astype(float)  # column-major as MATLAB writes it
        fh["members"].attrs["MATLAB_class"] = np.bytes_("double")
        fh["gt"] = (y + 1.0)[None, :]
        fh["gt"].attrs["MATLAB_class"] = np.bytes_("double")
    with open(m73, "r+b") as fh:
        fh.write(b"MATLAB 7.3 MAT-file".ljust(116, b" "))
    pool = import_pool(m73)
    assert pool.members.shape == (30, 7) and _same_partitions(pool.members, members)
    assert np.array_equal(pool.y, y)


def test_import_bad_inputs(tmp_path):
    members, y = _pool_matrix()
    p = tmp_path / "nan.mat"
    bad = members.astype(float)
    bad[3, 2] = np.nan
    scipy.io.savemat(p, {"members": bad})
    # NaN is a missing label (incomplete ensembles): imported as -1 and counted; Inf is refused
    pool = import_pool(p)
    assert pool.n_missing == 1 and pool.members[3, 2] == -1
    bad[3, 2] = np.inf
    scipy.io.savemat(p, {"members": bad})
    with pytest.raises(UserError, match="Inf"):
        import_pool(p)
    q = tmp_path / "frac.mat"
    scipy.io.savemat(q, {"members": members + 0.5})
    with pytest.raises(UserError, match="non-integer"):
        import_pool(q)
    r = tmp_path / "amb.mat"
    scipy.io.savemat(r, {"A": members, "B": members})
    with pytest.raises(UserError, match="cannot tell which variable.*variables found: A"):
        import_pool(r)
    assert import_pool(r, members_key="B").members.shape == (30, 7)
    with pytest.raises(UserError, match="file not found"):
        import_pool(tmp_path / "nope.mat")


def test_all_authors_pools_import(data_dir):
    pools = list_registry("pools")
    assert len(pools) == 18
    for name, entry in pools.items():
        pool = get_pool(None, {"source": "file", "file": entry["file"]}, seed=0, data_dir=data_dir)
        assert pool.members.shape == (entry["n"], entry["m"]), name
        assert pool.y is not None and pool.y.shape == (entry["n"],), name
        if entry.get("c"):
            assert pool.n_clusters == entry["c"], name
        assert pool.members.min() == 0
    control = get_pool(None, {"source": "file", "file": "pools/drec_control.mat"}, seed=0, data_dir=data_dir)
    assert control.meta["y_from"] == "control" and control.n_clusters == 6
    assert np.mean([ari(control.y, control.members[:, j]) for j in range(100)]) == pytest.approx(0.54, abs=0.005)


@pytest.mark.parametrize(
    "name, mean, std, best",
    # specs/eccms.md 8.3: pool ARI statistics equal the paper's "base clusterings" rows
    [("eccms_ecoli", 0.396, 0.120, 0.695), ("eccms_ls", 0.235, 0.100, 0.479),
     ("eccms_aggregation", 0.463, 0.171, 0.822), ("eccms_caltech20", 0.209, 0.061, 0.345)],
)
def test_authors_pool_statistics(data_dir, name, mean, std, best):
    pool = get_pool(None, {"source": "file", "file": f"pools/{name}.mat"}, seed=0, data_dir=data_dir)
    scores = np.array([ari(pool.y, pool.members[:, j]) for j in range(pool.size)])
    assert round(scores.mean(), 3) == mean and round(scores.std(ddof=1), 3) == std and round(scores.max(), 3) == best


@pytest.mark.parametrize(
    "name, km, km_best_ari",
    # AWEC Tables 2-4, D8 (IS) and D11 (MF): KM = mean ARI / NMI / F1 over the 100 pool members, KM-best = the best
    # member's ARI (paper_tables/awec/table2_ari.csv ... table4_f1.csv). The pools shipped with SDGCA give them to
    # 4 decimals, so they are the paper's pools (the configs use them: awec_tables2_4_large and its companions).
    [("sdgca_is", (0.3440, 0.6001, 0.3996), 0.5670), ("sdgca_mf", (0.3743, 0.5989, 0.4229), 0.5045)],
)
def test_awec_paper_pool_statistics(data_dir, name, km, km_best_ari):
    pool = get_pool(None, {"source": "file", "file": f"pools/{name}.mat"}, seed=0, data_dir=data_dir)
    y, E = pool.y, pool.members
    scores = np.array([[ari(y, E[:, j]), nmi(y, E[:, j], average="arithmetic"), fscore(y, E[:, j])]
                       for j in range(pool.size)])
    assert tuple(np.round(scores.mean(axis=0), 4)) == km
    assert round(scores[:, 0].max(), 4) == km_best_ari


def _nearest_own_mean(X: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of objects nearest (squared Euclidean) to the mean of their own cluster: 1 at a K-means result."""
    lab = np.unique(labels, return_inverse=True)[1]
    means = np.array([X[lab == i].mean(axis=0) for i in range(lab.max() + 1)])
    dist = (X**2).sum(axis=1)[:, None] - 2 * X @ means.T + (means**2).sum(axis=1)[None]
    return float(np.mean(dist.argmin(axis=1) == lab))


@pytest.mark.parametrize("name, dataset", [("sdgca_yale", "yale"), ("sdgca_glioma", "glioma")])
def test_sdgca_pools_are_kmeans_on_the_raw_features(data_dir, name, dataset):
    # The AWEC group's pools (SDGCA repository) are K-means results on the raw features: every object of every
    # member is nearest to its own cluster mean there and not under a scaling of the columns or rows. (The MF
    # pool is the same on the raw UCI files, not on our min-max scaled mf.mat: results/checks/mf_pool_features_s25.)
    pool = get_pool(None, {"source": "file", "file": f"pools/{name}.mat"}, seed=0, data_dir=data_dir)
    X = np.asarray(load_dataset(dataset, data_dir=data_dir, preprocess="none").X, dtype=float)
    unit_rows = X / np.linalg.norm(X, axis=1, keepdims=True)
    members = range(0, pool.size, 10)
    assert all(_nearest_own_mean(X, pool.members[:, j]) == 1.0 for j in members)
    assert np.mean([_nearest_own_mean(unit_rows, pool.members[:, j]) for j in members]) < 0.95


def test_authors_pool_with_dataset(data_dir):
    ecoli = load_dataset("ecoli", data_dir=data_dir)
    p = get_pool(ecoli, {"source": "file", "file": "pools/eccms_ecoli.mat", "first": 20}, seed=0, data_dir=data_dir)
    assert p.size == 20 and p.meta["y_matches_dataset"]
    with pytest.raises(UserError, match="574 rows but dataset 'umist' has 575"):
        get_pool(load_dataset("umist", data_dir=data_dir), {"source": "file", "file": "pools/eccms_umist.mat"},
                 seed=0, data_dir=data_dir)

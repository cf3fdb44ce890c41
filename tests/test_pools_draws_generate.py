"""Ensemble draws (every mode, bit-exact EC-CMS/AWEC streams) and the pool generators."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensclust.data import load_dataset
from ensclust.errors import UserError
from ensclust.metrics import ari
from ensclust.pools import draw_ensembles, generate_members, get_pool, resolve_k_range
from ensclust.pools.generate import SPCE_SIGMAS, mean_pairwise_distance, member_plan, normalize_spec

ECCMS_RUN1 = [2, 98, 38, 50, 14, 27, 64, 55, 26, 5, 30, 60, 44, 90, 49, 71, 72, 18, 57, 4]
ECCMS_RUN2 = [49, 96, 6, 65, 33, 20, 21, 22, 44, 42, 91, 14, 78, 83, 66, 50, 45, 43, 28, 19]
AWEC_RUN2 = [77, 81, 1, 55, 91, 67, 21, 57, 19, 51, 23, 27, 89, 24, 12, 38, 63, 98, 14, 31]


def test_randperm_stream_matches_eccms_spec():
    # specs/eccms.md 8.3: rng(1) once, randperm(100) per run
    runs = draw_ensembles(100, mode="randperm_stream", size=20, repetitions=20, seed=1)
    assert len(runs) == 20
    assert runs[0].tolist() == ECCMS_RUN1
    assert runs[1].tolist() == ECCMS_RUN2


def test_randperm_per_run_matches_awec_spec():
    # specs/awec.md 8.2: run i uses its own MT19937 stream seeded with i
    runs = draw_ensembles(100, mode="randperm_per_run", size=20, repetitions=10, seed=1)
    assert runs[0].tolist() == ECCMS_RUN1  # stream 1 = the EC-CMS first permutation
    assert runs[1].tolist() == AWEC_RUN2
    same = draw_ensembles(100, mode="randperm_per_run", size=20, repetitions=10, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(runs, same, strict=True))
    shifted = draw_ensembles(100, mode="randperm_per_run", size=20, repetitions=2, seed=2)
    assert shifted[0].tolist() == AWEC_RUN2  # seed is an offset: seed=2 starts at stream 2


def test_first_random_disjoint_fresh():
    first = draw_ensembles(50, mode="first", size=10, repetitions=3, seed=0)
    assert all(r.tolist() == list(range(10)) for r in first)
    rand = draw_ensembles(50, mode="random", size=10, repetitions=4, seed=5)
    assert all(len(set(r.tolist())) == 10 and r.max() < 50 for r in rand)
    assert not np.array_equal(rand[0], rand[1])
    again = draw_ensembles(50, mode="random", size=10, repetitions=4, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(rand, again, strict=True))
    other = draw_ensembles(50, mode="random", size=10, repetitions=4, seed=6)
    assert not all(np.array_equal(a, b) for a, b in zip(rand, other, strict=True))
    for mode in ("disjoint", "fresh"):
        runs = draw_ensembles(200, mode=mode, size=20, repetitions=10, seed=0)
        assert runs[0].tolist() == list(range(20)) and runs[9].tolist() == list(range(180, 200))
        assert len(set(np.concatenate(runs).tolist())) == 200


def test_draw_errors():
    with pytest.raises(UserError, match="needs a pool of at least 20 x 10"):
        draw_ensembles(100, mode="disjoint", size=20, repetitions=10, seed=0)
    with pytest.raises(UserError, match="needs a pool of at least"):
        draw_ensembles(10, mode="random", size=20, repetitions=1, seed=0)
    with pytest.raises(UserError, match="unknown ensemble mode 'randperm'.*did you mean"):
        draw_ensembles(100, mode="randperm", size=20, repetitions=1, seed=0)


def test_k_ranges():
    assert resolve_k_range("c", 100, 4) == (4, 4)
    assert resolve_k_range([2, "sqrt"], 336, 8) == (2, 19)  # ceil(sqrt(336)) = 19 (EC-CMS Ecoli pool max 18)
    assert resolve_k_range("random", 11000, 10) == (10, 50)  # [c, min(ceil(sqrt n), 50)]
    assert resolve_k_range("random", 100, 4) == (4, 10)
    assert resolve_k_range(["c", 12], 100, 4) == (4, 12)
    with pytest.raises(UserError, match="empty"):
        resolve_k_range([10, 3], 100, 4)
    with pytest.raises(UserError, match="within 1..n"):
        resolve_k_range([2, 500], 100, 4)
    with pytest.raises(UserError, match="unknown key 'sise'.*did you mean 'size'"):
        normalize_spec({"sise": 3})


@pytest.fixture(scope="module")
def blobs():
    return load_dataset("blobs", params={"n_samples": 150, "centers": 3, "random_state": 0, "cluster_std": 0.4})


def test_kmeans_members_k_equals_c(blobs):
    members, ks, seeds = generate_members(blobs.X, {"k": "c", "size": 6}, n_clusters=3, seed=7)
    assert members.shape == (150, 6) and members.dtype == np.int32
    assert ks.tolist() == [3] * 6 and len(set(seeds.tolist())) == 6
    assert np.all(members.max(axis=0) == 2) and members.min() == 0
    # well separated blobs: each single k-means run recovers them
    assert min(ari(blobs.y, members[:, j]) for j in range(6)) > 0.95


def test_members_depend_only_on_seed_and_index(blobs):
    spec = {"k": [2, "sqrt"], "size": 8}
    m8, k8, s8 = generate_members(blobs.X, spec, n_clusters=3, seed=11)
    m3, k3, s3 = generate_members(blobs.X, {**spec, "size": 3}, n_clusters=3, seed=11)
    assert np.array_equal(m8[:, :3], m3) and np.array_equal(k8[:3], k3) and np.array_equal(s8[:3], s3)
    again, _, _ = generate_members(blobs.X, spec, n_clusters=3, seed=11)
    assert again.tobytes() == m8.tobytes()  # byte-identical
    other, _, _ = generate_members(blobs.X, spec, n_clusters=3, seed=12)
    assert not np.array_equal(other, m8)
    lo, hi = 2, math.ceil(math.sqrt(150))
    assert np.all((k8 >= lo) & (k8 <= hi)) and len(set(k8.tolist())) > 1
    assert np.all(m8.max(axis=0) + 1 <= k8)


def test_feature_subsets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 20))
    plan = member_plan(normalize_spec({"k": "c", "size": 30, "feature_ratio": [0.6, 1.0]}), 40, 20, 3, 0, range(30))
    sizes = [len(p["features"]) for p in plan]
    assert min(sizes) >= 12 and max(sizes) <= 20 and len(set(sizes)) > 2
    assert all(len(set(p["features"].tolist())) == len(p["features"]) for p in plan)
    fixed = member_plan(normalize_spec({"k": "c", "size": 5, "feature_ratio": 0.5}), 40, 20, 3, 0, range(5))
    assert all(len(p["features"]) == 10 for p in fixed)
    assert len({tuple(p["features"]) for p in fixed}) > 1  # a new subset per member
    shared = member_plan(
        normalize_spec({"k": "c", "size": 5, "feature_ratio": 0.5, "feature_subset": "pool"}), 40, 20, 3, 0, range(5)
    )
    assert len({tuple(p["features"]) for p in shared}) == 1
    # the member really is computed on its subset: regenerate one member by hand
    from ensclust.pools.generate import _kmeans

    members, _, _ = generate_members(X, {"k": "c", "size": 5, "feature_ratio": 0.5}, n_clusters=3, seed=0)
    p = fixed[2]
    by_hand = _kmeans(X[:, p["features"]], p["k"], p["seed"], "k-means++", 100)
    assert ari(by_hand, members[:, 2]) == 1.0
    with pytest.raises(UserError, match="feature_ratio"):
        member_plan(normalize_spec({"k": "c", "feature_ratio": 1.5}), 40, 20, 3, 0, range(1))


def test_spectral_members_over_sigma_grid():
    ds = load_dataset("blobs", params={"n_samples": 120, "centers": 3, "random_state": 1, "cluster_std": 0.5})
    members, ks, _ = generate_members(ds.X, {"generator": "spectral", "k": "c", "size": 18}, n_clusters=3, seed=0)
    assert members.shape == (120, 18) and np.all(ks == 3)
    scores = [ari(ds.y, members[:, j]) for j in range(18)]
    # sigma = dbar * 1 (index 4 of the grid) separates the blobs perfectly in both repetitions
    assert scores[4] == pytest.approx(1.0) and scores[13] == pytest.approx(1.0)
    assert len(SPCE_SIGMAS) == 9
    # d-bar: the mean distance over all pairs, checked against the brute-force value
    D = np.sqrt(((ds.X[:, None, :] - ds.X[None, :, :]) ** 2).sum(-1))
    assert mean_pairwise_distance(ds.X) == pytest.approx(D[np.triu_indices(120, 1)].mean())


def test_kmeans_random_init_and_sparse_input(blobs):
    from scipy import sparse

    members, _, _ = generate_members(sparse.csr_matrix(np.abs(blobs.X)), {"k": "c", "size": 2, "init": "random"},
                                     n_clusters=3, seed=0)
    assert members.shape == (150, 2)


def test_generate_needs_dataset():
    with pytest.raises(UserError, match="needs a dataset"):
        get_pool(None, {"source": "generate", "k": "c", "size": 3}, seed=0)


def test_pool_spec_seed_is_another_draw(blobs):
    """``seed`` in the pool spec replaces the caller's seed (the config's): the same pool as that seed gives,
    another one than the default; a pool file has no seed."""
    spec = {"source": "generate", "k": "c", "size": 4}
    drawn = get_pool(blobs, {**spec, "seed": 7}, seed=0, cache_dir=None)
    assert np.array_equal(drawn.members, get_pool(blobs, spec, seed=7, cache_dir=None).members)
    assert not np.array_equal(drawn.members, get_pool(blobs, spec, seed=0, cache_dir=None).members)
    with pytest.raises(UserError, match="seed applies to generated pools"):
        get_pool(None, {"source": "file", "file": "x.mat", "seed": 1}, seed=0)


def test_gaussian_kernel_closed_form():
    from ensclust.pools.generate import gaussian_kernel

    X = np.random.default_rng(0).normal(size=(30, 3))
    sigma = 1.3
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    expected = np.exp(-D2 / (2 * sigma**2))
    np.fill_diagonal(expected, 0.0)  # NJW: zero diagonal (specs/spce.md 4.3)
    assert np.allclose(gaussian_kernel(X, sigma), expected)
    assert gaussian_kernel(X, sigma, dtype=np.float32).dtype == np.float32


def test_progress_bar_runs(blobs, capsys):
    members, _, _ = generate_members(blobs.X, {"k": "c", "size": 2}, n_clusters=3, seed=0, progress=True)
    assert members.shape == (150, 2)


def test_feature_subset_block_shares_one_subset_per_block():
    from ensclust.pools.generate import member_plan, normalize_spec

    spec = normalize_spec({"k": "c", "size": 6, "feature_ratio": [0.5, 0.5], "feature_subset": "block",
                           "feature_block": 3})
    plan = member_plan(spec, n=50, d=20, c=3, seed=4, indices=range(6))
    subsets = [tuple(p["features"]) for p in plan]
    assert subsets[0] == subsets[1] == subsets[2] and subsets[3] == subsets[4] == subsets[5]
    assert subsets[0] != subsets[3] and len(subsets[0]) == 10
    # the plan of a member does not depend on which members are generated
    again = member_plan(spec, n=50, d=20, c=3, seed=4, indices=[4])
    assert tuple(again[0]["features"]) == subsets[4]


def test_subset_normalize_rescales_the_subset_rows():
    from scipy import sparse
    from sklearn.preprocessing import normalize

    from ensclust.pools.generate import _kmeans

    rng = np.random.default_rng(1)
    X = sparse.csr_matrix(np.abs(rng.normal(size=(60, 30))) * (rng.random((60, 30)) < 0.3))
    spec = {"k": "c", "size": 4, "feature_ratio": 0.5, "subset_normalize": "l2"}
    members, _, _ = generate_members(X, spec, n_clusters=3, seed=0)
    p = member_plan(normalize_spec(spec), 60, 30, 3, 0, range(4))[1]
    by_hand = _kmeans(normalize(X[:, p["features"]]), p["k"], p["seed"], "k-means++", 100)
    assert ari(by_hand, members[:, 1]) == 1.0
    plain, _, _ = generate_members(X, {**spec, "subset_normalize": "none"}, n_clusters=3, seed=0)
    assert not np.array_equal(plain, members)
    # 'none' is the default and leaves the normalised spec (hence existing cache keys) unchanged
    assert normalize_spec({**spec, "subset_normalize": "none"}) == normalize_spec({k: v for k, v in spec.items()
                                                                                    if k != "subset_normalize"})
    with pytest.raises(UserError, match="subset_normalize 'l1'"):
        normalize_spec({**spec, "subset_normalize": "l1"})


def test_kmeans_metric_cosine_is_spherical_kmeans():
    from scipy import sparse

    from ensclust.pools.generate import _spherical_kmeans

    rng = np.random.default_rng(3)
    # three directions in the positive orthant; every row gets a random length
    centres = np.array([[1.0, 0.1, 0.0, 0.0], [0.0, 1.0, 0.1, 0.0], [0.0, 0.0, 0.2, 1.0]])
    y = np.repeat([0, 1, 2], 30)
    X = np.abs(centres[y] + 0.05 * rng.normal(size=(90, 4)))
    X *= rng.uniform(0.1, 50.0, size=(90, 1))
    spec = {"k": "c", "size": 4, "kmeans_metric": "cosine"}
    members, _, _ = generate_members(sparse.csr_matrix(X), spec, n_clusters=3, seed=0)
    assert all(ari(y, members[:, j]) == 1.0 for j in range(4))
    # the cosine reading ignores the row lengths: rescaled rows give the same members, dense or sparse
    again, _, _ = generate_members(X * rng.uniform(0.5, 2.0, size=(90, 1)), spec, n_clusters=3, seed=0)
    assert np.array_equal(again, members)
    rand, _, _ = generate_members(X, {**spec, "init": "random"}, n_clusters=3, seed=0)
    assert rand.shape == (90, 4) and all(len(np.unique(rand[:, j])) == 3 for j in range(4))
    # a fixed point of the Lloyd step: each point has the largest cosine to its own normalised centroid
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    for init in ("k-means++", "random"):
        lab = _spherical_kmeans(X, 3, seed=5, init=init, max_iter=100)
        C = np.array([U[lab == j].sum(0) for j in range(3)])
        C /= np.linalg.norm(C, axis=1, keepdims=True)
        assert np.array_equal((U @ C.T).argmax(1), lab)
    # euclidean is the default and leaves the normalised spec (hence existing cache keys) unchanged
    assert normalize_spec({"k": "c", "size": 4, "kmeans_metric": "euclidean"}) == normalize_spec({"k": "c", "size": 4})
    assert normalize_spec(spec)["kmeans_metric"] == "cosine"
    with pytest.raises(UserError, match="kmeans_metric 'cityblock'"):
        normalize_spec({**spec, "kmeans_metric": "cityblock"})
    with pytest.raises(UserError, match="kmeans generator only"):
        normalize_spec({**spec, "generator": "spectral"})


def test_spherical_kmeans_fills_empty_clusters():
    from ensclust.pools.generate import _spherical_kmeans

    # 6 copies of two directions and k = 4: two clusters would stay empty without the refill
    X = np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3)
    lab = _spherical_kmeans(X, 4, seed=0, init="random", max_iter=10)
    assert len(np.unique(lab)) == 4


def test_min_df_drops_rare_features_before_the_subset():
    from scipy import sparse

    from ensclust.pools.generate import kept_features

    rng = np.random.default_rng(2)
    X = np.abs(rng.normal(size=(30, 12))) * (rng.random((30, 12)) < 0.5)
    X[:, 3] = 0.0
    X[:, 7] = 0.0
    X[5, 7] = 2.0  # in one sample only
    df = (X != 0).sum(0)
    assert np.array_equal(kept_features(X, 2), np.flatnonzero(df >= 2))
    assert np.array_equal(kept_features(sparse.csr_matrix(X), 2), np.flatnonzero(df >= 2))
    spec = {"k": "c", "size": 3, "feature_ratio": 0.5, "min_df": 2}
    members, _, _ = generate_members(sparse.csr_matrix(X), spec, n_clusters=3, seed=0)
    kept = X[:, df >= 2]
    by_hand, _, _ = generate_members(kept, {k: v for k, v in spec.items() if k != "min_df"}, n_clusters=3, seed=0)
    assert np.array_equal(members, by_hand)  # the ratio applies to the kept features
    # min_df 1 (or absent) keeps every feature and leaves the normalised spec unchanged
    assert normalize_spec({**spec, "min_df": 1}) == normalize_spec({k: v for k, v in spec.items() if k != "min_df"})
    with pytest.raises(UserError, match="min_df"):
        normalize_spec({**spec, "min_df": 0})
    with pytest.raises(UserError, match="keeps no feature"):
        kept_features(X, 31)

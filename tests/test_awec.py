"""AWEC (specs/awec.md section 8): F30 fixture numbers, Appendicitis with the official pool, properties."""

from __future__ import annotations

import numpy as np
import pytest

from ensclust.core.coassoc import coassociation
from ensclust.core.hierarchy import hac_labels
from ensclust.core.simplex import project_simplex
from ensclust.methods import get_method
from ensclust.methods.awec import (
    AWECNumericalError,
    awec_s_embedding,
    connection_matrices,
    knn_weights,
    matlab_round,
    neighbour_count,
    solve_awec,
    update_Z,
)
from ensclust.metrics import ari, fscore, nmi
from ensclust.testing import check_method_properties, f30_fixture, same_partition


def _digits(rows):
    return np.array([[int(ch) for ch in r] for r in rows])


@pytest.fixture(scope="module")
def f30():
    members, truth = f30_fixture()
    gt = truth + 1
    A = coassociation(members, dtype=np.float64)
    khn, info = knn_weights(A, 3, 0.5)
    G = connection_matrices(khn, 3)
    return gt, members, A, khn, info, G


def test_f30_graph(f30):
    gt, members, A, khn, info, G = f30
    assert A[0, 1] == pytest.approx(0.7) and A[0, 10] == pytest.approx(0.1) and A[0, 29] == pytest.approx(0.1)
    assert A.sum() == pytest.approx(320.8)
    assert info["n_neighbours"] == 5
    assert khn.sum() == pytest.approx(231.192411, abs=1e-6)
    assert G[0][0, 1] == pytest.approx(0.085711, abs=1e-6)
    assert np.count_nonzero(G[0]) == 188
    assert G[0].sum() == pytest.approx(29.311948, abs=1e-6)
    assert G[1].sum() == pytest.approx(28.700095, abs=1e-6)
    assert G[2].sum() == pytest.approx(29.588649, abs=1e-6)
    # 8.4 property checks
    assert np.allclose(A, A.T) and np.all(np.diag(A) == 1)
    assert np.allclose(A * 10, np.round(A * 10))
    for Gi in G[:2]:
        assert np.allclose(Gi, Gi.T) and np.all(np.diag(Gi) == 0) and np.all(Gi >= 0)


@pytest.mark.parametrize(
    "lam,gamma,o,n_iter,alpha,normC,normZ,z01,labels,scores",
    [
        (0.1, 5, 2, 8, (0.50759, 0.49241), 1.710810, 1.045014, 0.042512,
         "111111333122222333333333333333", (0.3115, 0.4992, 0.5580)),
        (0.2, 0.5, 2, 9, (0.51259, 0.48741), 1.968496, 1.183443, 0.170589, None, (0.0050, 0.1124, 0.4600)),
        (0.04, 50, 3, 13, (0.34551, 0.30839, 0.34610), 1.260609, 1.640479, 0.105312,
         "111111111122222222223333333333", (1.0, 1.0, 1.0)),
    ],
)
def test_f30_solver(f30, lam, gamma, o, n_iter, alpha, normC, normZ, z01, labels, scores):
    gt, members, A, khn, info, G = f30
    out = solve_awec(A, G[:o], 3, lam=lam, gamma=gamma)
    assert out["n_iter"] == n_iter and out["converged"]
    np.testing.assert_allclose(out["alpha"], alpha, atol=1e-5)
    assert np.linalg.norm(out["C"]) == pytest.approx(normC, abs=1e-6)
    assert np.linalg.norm(out["Z"]) == pytest.approx(normZ, abs=1e-6)
    assert out["Z"][0, 1] == pytest.approx(z01, abs=1e-6)
    assert out["Z"][0, 0] == 0
    lab = hac_labels(out["Z"], 3)
    if labels is not None:
        assert same_partition(lab, _digits([labels]).ravel())
    got = (ari(gt, lab), nmi(gt, lab), fscore(gt, lab))
    np.testing.assert_allclose(got, scores, atol=6e-5)
    # the estimator gives the same labels
    est = get_method("awec-h", **{"lambda": lam, "gamma": gamma, "order": o})
    assert same_partition(est.fit_predict(members, 3), lab)
    assert est.diagnostics_["n_iter"] == n_iter


def test_f30_negative_degrees_counted(f30):
    gt, members, A, khn, info, G = f30
    est = get_method("awec-h", **{"lambda": 0.1, "gamma": 5})
    est.fit(members, 3)
    assert est.diagnostics_["negative_degree_iterations"] == 4
    assert est.diagnostics_["mixed_sign_iterations"] == 0


@pytest.mark.parametrize(
    "lam,gamma,o,p01,p029,p1029",
    [(0.1, 5, 2, 0.905830, 0.434458, 0.900390), (0.2, 0.5, 2, 0.837866, 0.369556, 0.999986),
     (0.04, 50, 3, 1.000000, -0.000420, -0.000221)],
)
def test_f30_awec_s_embedding(f30, lam, gamma, o, p01, p029, p1029):
    gt, members, A, khn, info, G = f30
    out = solve_awec(A, G[:o], 3, lam=lam, gamma=gamma)
    V = awec_s_embedding(out["Z"], 3)
    P = V @ V.T
    np.testing.assert_allclose([P[0, 1], P[0, 29], P[10, 29]], [p01, p029, p1029], atol=2e-6)


def test_f30_awec_s_recovers_gt_for_every_seed(f30):
    gt, members, *_ = f30
    for seed in range(5):
        lab = get_method("awec-s", **{"lambda": 0.04, "gamma": 50, "order": 3}).fit_predict(
            members, 3, random_state=seed)
        assert same_partition(lab, gt)


def test_awec_s_code_kmeans_option(f30):
    """kmeans="code" (issue 18): the code's MATLAB kmeans(V, c) - plain k-means++ or random-row start, Lloyd to
    convergence, replicates keep the best objective; deterministic per seed; the default stays scikit-learn's."""
    from sklearn.cluster import KMeans

    from ensclust.methods.awec import matlab_kmeans
    from ensclust.rng import int_seed

    gt, members, *_ = f30
    params = {"lambda": 0.04, "gamma": 50, "order": 3}
    for seed in range(5):
        for start in ("plus", "sample"):
            est = get_method("awec-s", kmeans="code", kmeans_start=start, **params)
            assert same_partition(est.fit_predict(members, 3, random_state=seed), gt)
            assert "MATLAB kmeans" in est.diagnostics_["kmeans"]
    # default unchanged: scikit-learn KMeans seeded from the fit's generator
    est = get_method("awec-s", **{"lambda": 0.2, "gamma": 0.5})
    lab = est.fit_predict(members, 3, random_state=4)
    V = awec_s_embedding(est.consensus_matrix_, 3)
    ref = KMeans(n_clusters=3, n_init=1, max_iter=100, random_state=int_seed(np.random.default_rng(4))).fit_predict(V)
    assert same_partition(lab, ref)
    # the code's k-means on a seed-dependent embedding: deterministic, replicates never worsen the objective
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(loc, 1.0, size=(40, 2)) for loc in ((0, 0), (3, 0), (0, 3), (3, 3))])

    def inertia(labels):
        return sum(((X[labels == k] - X[labels == k].mean(axis=0)) ** 2).sum() for k in np.unique(labels))

    for seed in range(5):
        one = matlab_kmeans(X, 4, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(one, matlab_kmeans(X, 4, rng=np.random.default_rng(seed)))
        many = matlab_kmeans(X, 4, replicates=10, rng=np.random.default_rng(seed))
        assert inertia(many) <= inertia(one) + 1e-9
        assert len(np.unique(matlab_kmeans(X, 4, start="sample", rng=np.random.default_rng(seed)))) == 4
    from ensclust.errors import UserError

    with pytest.raises(UserError, match="kmeans"):
        get_method("awec-s", kmeans="matlab").fit(members, 3)


def test_neighbour_mask_equals_the_stable_sort():
    """The selection-based neighbour set is the stable descending sort's first k of every column (spec 3.2
    step 3): random symmetric kernels with many ties (co-association values are multiples of 1/M)."""
    from ensclust.methods.awec import neighbour_mask

    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(3, 120))
        K = rng.integers(0, [3, 5, 20, 1000][trial % 4], size=(n, n)).astype(float) / 7.0
        K = (K + K.T) / 2.0
        k = int(rng.integers(1, n))
        cols = -K.copy()
        cols[np.diag_indices(n)] = np.inf
        top = np.argsort(cols, axis=0, kind="stable")[:k]
        expected = np.zeros((n, n), dtype=bool)
        expected[top, np.broadcast_to(np.arange(n), top.shape)] = True
        np.testing.assert_array_equal(neighbour_mask(K, k, block=int(rng.integers(1, 50))), expected)


def test_toy_mixed_sign_degrees_raise():
    cols = "111122223333 112233334444 111111223333 111222223331 121233445566 111122222222".split()
    members = _digits(cols).T
    with pytest.raises(AWECNumericalError, match="mixed signs at iteration 6"):
        get_method("awec-h", **{"lambda": 0.1, "gamma": 5}).fit_predict(members, 3)
    est = get_method("awec-h", **{"lambda": 0.1, "gamma": 5, "degree_fallback": "abs"})
    lab = est.fit_predict(members, 3)
    assert est.diagnostics_["mixed_sign_iterations"] >= 1
    assert len(np.unique(lab)) == 3 and np.all(lab >= 0)


def test_z_update_properties(f30):
    gt, members, A, khn, info, G = f30
    rng = np.random.default_rng(0)
    C = A + 0.05 * rng.standard_normal(A.shape)
    C = (C + C.T) / 2
    H = np.linalg.qr(rng.standard_normal((30, 3)))[0]
    # The pre-symmetrised Z has columns on the simplex: check the projection, then the symmetrised output.
    T = rng.standard_normal((30, 30))
    P = project_simplex(T, axis=0)
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-9)
    # projection optimality: KKT -> P = max(T - theta, 0) with the same theta for the support
    for j in range(5):
        supp = P[:, j] > 0
        theta = T[supp, j] - P[supp, j]
        assert np.ptp(theta) < 1e-12 and np.all(T[~supp, j] <= theta[0] + 1e-12)
    Z = update_Z(C, 5.0, 1.1, H)
    assert np.allclose(Z, Z.T) and np.all(Z >= 0)
    np.testing.assert_allclose(Z.sum(axis=0).sum(), 30.0, atol=1e-9)


def test_alpha_sums_to_one(f30):
    gt, members, A, khn, info, G = f30
    out = solve_awec(A, G, 3, lam=0.1, gamma=5, record=True)
    for step in out["history"]:
        assert abs(step["alpha"].sum() - 1) < 1e-12


def test_matlab_rounding():
    assert matlab_round(26.5) == 27 and matlab_round(2.5) == 3 and matlab_round(2.4) == 2
    assert neighbour_count(106, 2, 0.5) == 27


def test_options_run_and_differ(f30):
    gt, members, *_ = f30
    base = get_method("awec-h", **{"lambda": 0.04, "gamma": 50, "order": 3})
    base.fit(members, 3)
    for opts in ({"laplacian": "normalized"}, {"refresh_mu": True}, {"multiplier_init": "zeros"},
                 {"order_threshold": False}, {"ablation": "no-topo"}, {"ablation": "no-high-order"},
                 {"eigensolver": "lobpcg"}, {"dtype": "float32"}):
        est = get_method("awec-h", **{"lambda": 0.04, "gamma": 50, "order": 3, **opts})
        lab = est.fit_predict(members, 3)
        assert len(np.unique(lab)) == 3, opts
        assert np.all(np.isfinite(est.consensus_matrix_)), opts
    # the float32 and LOBPCG paths are approximations of the same iteration: same labels here
    for opts in ({"eigensolver": "lobpcg"}, {"dtype": "float32"}):
        est = get_method("awec-h", **{"lambda": 0.04, "gamma": 50, "order": 3, **opts})
        assert same_partition(est.fit_predict(members, 3), base.labels_), opts


def test_lobpcg_sparse_laplacian_equals_dense(monkeypatch):
    """On the LOBPCG route the H-update passes L_Z as CSR when Z is sparse: the same matrix, so the solve agrees
    with the dense-L route up to the products' rounding (same labels, Z to 1e-8)."""
    from ensclust.methods import awec
    from ensclust.testing import planted_ensemble

    members, _ = planted_ensemble(n=400, c=4, m=10, random_state=0)
    calls = []
    real = awec._smallest_eigvecs

    def spy(L, *args, **kwargs):
        calls.append(sparse_mod.issparse(L))
        return real(L, *args, **kwargs)

    from scipy import sparse as sparse_mod

    monkeypatch.setattr(awec, "_smallest_eigvecs", spy)
    fast = get_method("awec-h", eigensolver="lobpcg")
    lab_fast = fast.fit_predict(members, 4)
    assert any(calls)
    calls.clear()
    monkeypatch.setattr(awec, "SPARSE_LAPLACIAN_DENSITY", -1.0)
    ref = get_method("awec-h", eigensolver="lobpcg")
    lab_ref = ref.fit_predict(members, 4)
    assert not any(calls)
    assert same_partition(lab_fast, lab_ref)
    np.testing.assert_allclose(fast.consensus_matrix_, ref.consensus_matrix_, atol=1e-8)


def test_determinism(f30):
    gt, members, *_ = f30
    a = get_method("awec-s").fit_predict(members, 3, random_state=3)
    b = get_method("awec-s").fit_predict(members, 3, random_state=3)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", ["awec-h", "awec-s"])
@pytest.mark.parametrize("lam", [0.01, 0.1, 0.2])
def test_properties(name, lam):
    check_method_properties(name, {"lambda": lam, "gamma": 50})


def test_documented_small_gamma_behaviour():
    """At small gamma the code's 10-step Z solver leaves Z nearly uniform: identical members are not
    returned (documented in the class docstring); Z stays symmetric, non-negative and finite."""
    from ensclust.testing import planted_partition

    y = planted_partition(90, 3)
    est = get_method("awec-h", **{"lambda": 0.2, "gamma": 0.5})
    lab = est.fit_predict(np.column_stack([y] * 10), 3)
    Z = est.consensus_matrix_
    assert np.allclose(Z, Z.T) and np.all(Z >= 0) and np.all(np.isfinite(Z))
    assert not same_partition(lab, y)
    off_block = y[:, None] != y[None, :]
    assert Z[off_block].max() > 0.01  # cross-cluster mass that a converged solver would remove


# --- Appendicitis with the official pool (spec 8.2) -------------------------------------------------------


def _appendicitis(data_dir):
    from scipy.io import loadmat

    path = data_dir / "pools" / "awec_appendicitis.mat"
    if not path.exists():
        pytest.skip("official AWEC Appendicitis pool not present")
    d = loadmat(path)
    return d["E"].astype(np.int64), d["y"].ravel().astype(np.int64)


def _runs(k=10):
    # spec section 4: RandStream('mt19937ar', Seed=i), randperm(100)(1:20), bit-exact NumPy equivalent
    return [np.argsort(np.random.RandomState(i).rand(100), kind="stable")[:20] for i in range(1, k + 1)]


@pytest.mark.data
def test_appendicitis_first_columns(data_dir):
    E, y = _appendicitis(data_dir)
    runs = _runs(2)
    assert runs[0].tolist() == [2, 98, 38, 50, 14, 27, 64, 55, 26, 5, 30, 60, 44, 90, 49, 71, 72, 18, 57, 4]
    cases = [((0.1, 5, 2), 8, (0.49483, 0.50517), (-0.0880, 0.0413, 0.6573)),
             ((0.01, 50, 2), 7, (0.47772, 0.52228), (0.2133, 0.1483, 0.6845)),
             ((0.2, 0.1, 3), 9, (0.34666, 0.34119, 0.31215), (-0.0139, 0.0076, 0.8000))]
    for (lam, gamma, o), n_iter, alpha, scores in cases:
        est = get_method("awec-h", **{"lambda": lam, "gamma": gamma, "order": o})
        lab = est.fit_predict(E[:, :20], 2)
        assert est.diagnostics_["n_neighbours"] == 27
        assert est.diagnostics_["n_iter"] == n_iter
        np.testing.assert_allclose(est.diagnostics_["alpha"], alpha, atol=1e-5)
        np.testing.assert_allclose((ari(y, lab), nmi(y, lab), fscore(y, lab)), scores, atol=6e-5)
    for (lam, gamma), n_iter, alpha in [((0.2, 0.5), 9, (0.5159, 0.4841)), ((0.01, 0.1), 7, (0.4739, 0.5261)),
                                        ((0.1, 5), 8, (0.4928, 0.5072)), ((0.01, 50), 7, (0.4746, 0.5254))]:
        est = get_method("awec-h", **{"lambda": lam, "gamma": gamma})
        est.fit(E[:, runs[0]], 2)
        assert est.diagnostics_["n_iter"] == n_iter
        np.testing.assert_allclose(est.diagnostics_["alpha"], alpha, atol=1e-4)


@pytest.mark.data
def test_appendicitis_paper_awec_h_cell(data_dir):
    """Paper Tables 2-4, D1, AWEC-H (best cell lambda=0.2, gamma=0.5): ARI 0.4659, NMI 0.2989, F1 0.8511."""
    E, y = _appendicitis(data_dir)
    scores = []
    for cols in _runs(10):
        lab = get_method("awec-h", **{"lambda": 0.2, "gamma": 0.5}).fit_predict(E[:, cols], 2)
        scores.append((ari(y, lab), nmi(y, lab), fscore(y, lab)))
    np.testing.assert_allclose(np.mean(scores, axis=0), (0.4659, 0.2989, 0.8511), atol=5e-5)


@pytest.mark.data
def test_appendicitis_paper_awec_s_ari_cell(data_dir):
    """Paper Table 2, D1, AWEC-S: ARI 0.3723 at lambda=0.1, gamma=1 (k-means seed-independent here)."""
    E, y = _appendicitis(data_dir)
    scores = [ari(y, get_method("awec-s", **{"lambda": 0.1, "gamma": 1}).fit_predict(E[:, cols], 2,
                                                                                    random_state=i))
              for i, cols in enumerate(_runs(10))]
    assert np.mean(scores) == pytest.approx(0.3723, abs=5e-5)


@pytest.mark.slow
@pytest.mark.data
def test_appendicitis_nmi_grid(data_dir):
    """The full 6 x 6 AWEC-H NMI grid of spec 8.2 (360 solves)."""
    E, y = _appendicitis(data_dir)
    expected = np.array([
        [0.0561, 0.0107, 0.0117, 0.1495, 0.1538, 0.1594],
        [0.0561, 0.0080, 0.0172, 0.1571, 0.1531, 0.1277],
        [0.0415, 0.0076, 0.0332, 0.1575, 0.1622, 0.1121],
        [0.0561, 0.0715, 0.2919, 0.0422, 0.1578, 0.1084],
        [0.0561, 0.0407, 0.0485, 0.0421, 0.0867, 0.1187],
        [0.0076, 0.2989, 0.2612, 0.1174, 0.1160, 0.0743]])
    runs = _runs(10)
    grid = np.zeros((6, 6))
    for i, lam in enumerate([0.01, 0.02, 0.04, 0.08, 0.1, 0.2]):
        for j, gamma in enumerate([0.1, 0.5, 1, 5, 10, 50]):
            grid[i, j] = np.mean([nmi(y, get_method("awec-h", **{"lambda": lam, "gamma": gamma}).fit_predict(
                E[:, cols], 2)) for cols in runs])
    # 35 of 36 cells agree to 4 decimals. Cell (lambda=0.1, gamma=5) hits a degenerate zero eigenspace of L_Z
    # (spec A10b: H is not unique there and depends on the LAPACK build): 0.0405 here vs 0.0421 in the spec.
    close = np.abs(grid - expected) <= 5e-5
    assert close.sum() >= 35, np.argwhere(~close)
    np.testing.assert_allclose(grid, expected, atol=2e-3)


def _without_timing(diag):
    return {k: v for k, v in diag.items() if "second" not in k}


def test_fits_do_not_depend_on_call_history(f30):
    """No module-level state: the same fit gives the same labels, consensus matrix and diagnostics whatever ran
    before it in the process (the former process-global solve memo reported a hit on the second call, and its
    stored Z was the object another estimator exposed as ``consensus_matrix_``)."""
    gt, members, *_ = f30
    params = {"lambda": 0.2, "gamma": 0.5}

    def fit(name):
        est = get_method(name, **params)
        return est, est.fit_predict(members, 3, random_state=1)

    s_first, lab_s_first = fit("awec-s")
    h_after, lab_h_after = fit("awec-h")
    h_first, lab_h_first = fit("awec-h")
    s_after, lab_s_after = fit("awec-s")
    assert np.array_equal(lab_s_first, lab_s_after) and np.array_equal(lab_h_first, lab_h_after)
    assert _without_timing(s_first.diagnostics_) == _without_timing(s_after.diagnostics_)
    assert _without_timing(h_first.diagnostics_) == _without_timing(h_after.diagnostics_)
    assert not h_after.diagnostics_["solve_cached"] and not s_after.diagnostics_["solve_cached"]
    # altering one estimator's output cannot leak into a later fit
    try:
        s_after.consensus_matrix_[:] = 0.0
    except ValueError:
        pass  # read-only (the solve's output is never handed out writable)
    h_again, lab_h_again = fit("awec-h")
    assert np.array_equal(lab_h_again, lab_h_first)
    np.testing.assert_array_equal(h_again.consensus_matrix_, h_first.consensus_matrix_)


def test_memory_cache_shared_between_variants(f30):
    """A caller-owned SolveCache lets AWEC-S reuse AWEC-H's solve; the result equals a fresh solve."""
    from sklearn.base import clone

    from ensclust.core.cache import SolveCache

    gt, members, *_ = f30
    cache = SolveCache()
    h = get_method("awec-h", memory=cache, **{"lambda": 0.2, "gamma": 0.5})
    h.fit(members, 3)
    s = get_method("awec-s", memory=cache, **{"lambda": 0.2, "gamma": 0.5})
    lab_cached = s.fit_predict(members, 3, random_state=1)
    assert s.diagnostics_["solve_cached"] and not h.diagnostics_["solve_cached"]
    assert s.diagnostics_["n_iter"] == h.diagnostics_["n_iter"] == 9
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    # the cached matrix is read-only: no caller can alter what the next one receives
    with pytest.raises(ValueError):
        s.consensus_matrix_[0, 0] = 1.0
    fresh = get_method("awec-s", **{"lambda": 0.2, "gamma": 0.5})
    assert np.array_equal(lab_cached, fresh.fit_predict(members, 3, random_state=1))
    assert not fresh.diagnostics_["solve_cached"]
    np.testing.assert_array_equal(s.consensus_matrix_, fresh.consensus_matrix_)
    # post-processing parameters do not enter the key; solver parameters do
    get_method("awec-s", memory=cache, power=2, **{"lambda": 0.2, "gamma": 0.5}).fit(members, 3, random_state=0)
    assert cache.hits == 2
    get_method("awec-h", memory=cache, **{"lambda": 0.1, "gamma": 0.5}).fit(members, 3)
    assert cache.misses == 2
    # the cache is a handle: clone shares it, pickling ships it empty
    assert clone(s).memory is cache
    import pickle

    assert len(pickle.loads(pickle.dumps(cache))) == 0


def test_solve_cache_evicts_least_recent(f30):
    from ensclust.core.cache import SolveCache

    gt, members, *_ = f30
    cache = SolveCache(max_bytes=2 * 30 * 30 * 8 + 1000)  # room for two Z matrices
    for lam in (0.04, 0.08, 0.1):
        get_method("awec-h", memory=cache, **{"lambda": lam}).fit(members, 3)
    assert len(cache) == 2
    first = get_method("awec-s", memory=cache, **{"lambda": 0.04})
    first.fit(members, 3)
    assert not first.diagnostics_["solve_cached"]
    last = get_method("awec-s", memory=cache, **{"lambda": 0.1})
    last.fit(members, 3)
    assert last.diagnostics_["solve_cached"]


def test_memory_folder_shares_a_solve_on_disk(f30, tmp_path):
    """memory= a folder (joblib.Memory): a second estimator, e.g. in another process, reuses the solve."""
    gt, members, *_ = f30
    h = get_method("awec-h", memory=str(tmp_path), **{"lambda": 0.2, "gamma": 0.5})
    lab = h.fit_predict(members, 3)
    h2 = get_method("awec-h", memory=str(tmp_path), **{"lambda": 0.2, "gamma": 0.5})
    assert np.array_equal(h2.fit_predict(members, 3), lab) and h2.diagnostics_["solve_cached"]
    assert not h.diagnostics_["solve_cached"]


def test_memory_parameter_errors():
    from ensclust.errors import UserError

    with pytest.raises(UserError, match="parameter 'memory' must be None, a folder path or an object"):
        get_method("awec-h", memory=3).fit(np.array([[0, 0], [0, 1], [1, 1], [1, 0]]), 2)


# --- z_step="sparse" (issue #6): the same iteration with sparse products ---------------------------------


def _captured_Z_inputs(members, c, **params):
    """(C, H) pairs that the solver passes to update_Z, from a dense solve."""
    from ensclust.methods import awec

    got = []
    orig = awec.update_Z

    def capture(C, gamma, delta, H, **kw):
        got.append((C.copy(), H.copy()))
        return orig(C, gamma, delta, H, **kw)

    A = coassociation(members, dtype=np.float64)
    khn, _ = knn_weights(A, c, 0.5)
    G = connection_matrices(khn, params.pop("order", 2))
    awec.update_Z = capture
    try:
        solve_awec(A, G, c, z_step="dense", **params)
    finally:
        awec.update_Z = orig
    return got


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("threshold", [0.0, 0.05, 1.0])
def test_sparse_z_step_equals_dense(f30, monkeypatch, order, threshold):
    """Every captured Z sub-problem: sparse path (all-dense steps, default, all-sparse steps; several column
    blocks) == dense path to ~1e-12. order 3 makes C non-symmetric (G^(3) = norm(G^(2) G^(1)))."""
    from ensclust.methods import awec

    gt, members, *_ = f30
    monkeypatch.setattr(awec, "SPARSE_STEP_DENSITY", threshold)
    monkeypatch.setattr(awec, "_z_block_size", lambda n: 7)  # 30 = 7+7+7+7+2: uneven blocks
    cases = _captured_Z_inputs(members, 3, lam=0.04, gamma=50, order=order)
    assert len(cases) >= 6
    for gamma in (50.0, 0.5):
        for C, H in cases[:6]:
            dense = update_Z(C, gamma, 1.1, H, z_step="dense")
            stats = []
            fast = update_Z(C, gamma, 1.1, H, z_step="sparse", stats=stats)
            np.testing.assert_allclose(fast, dense, rtol=0, atol=1e-12)
            assert np.array_equal(fast, fast.T)
            assert stats[0]["symmetric"] == (order == 2)
            if threshold == 1.0:
                assert stats[0]["dense_steps"] == 0
            if threshold == 0.0:
                assert stats[0]["sparse_steps"] == 0


def test_sparse_z_step_equals_dense_normalized_laplacian(f30):
    gt, members, *_ = f30
    for C, H in _captured_Z_inputs(members, 3, lam=0.1, gamma=5)[:4]:
        dense = update_Z(C, 5.0, 1.1, H, laplacian="normalized", z_step="dense")
        fast = update_Z(C, 5.0, 1.1, H, laplacian="normalized", z_step="sparse")
        np.testing.assert_allclose(fast, dense, rtol=0, atol=1e-12)


@pytest.mark.parametrize("params", [{"lambda": 0.1, "gamma": 50}, {"lambda": 0.2, "gamma": 0.5},
                                    {"lambda": 0.1, "gamma": 5, "dtype": "float32"}])
def test_sparse_solver_equals_dense(params):
    """Whole solve on a planted ensemble (n = 300: the auto choice is sparse): same iteration count, labels,
    alpha, and C, Z to ~1e-10 (float32: same labels and counts)."""
    from ensclust.testing import planted_ensemble

    members, y = planted_ensemble(300, 4, 20, random_state=3)
    res = {}
    for z_step in ("dense", "sparse", "auto"):
        est = get_method("awec-h", **params, z_step=z_step)
        res[z_step] = (est.fit_predict(members, 4), est)
    (lab_d, d), (lab_s, s) = res["dense"], res["sparse"]
    assert s.diagnostics_["z_sparse_steps"] > 0 and res["auto"][1].diagnostics_["z_step"] == "sparse"
    assert d.diagnostics_["n_iter"] == s.diagnostics_["n_iter"]
    assert same_partition(lab_d, lab_s) and np.array_equal(lab_s, res["auto"][0])
    tol = 1e-4 if params.get("dtype") == "float32" else 1e-10
    np.testing.assert_allclose(s.diagnostics_["alpha"], d.diagnostics_["alpha"], atol=tol)
    np.testing.assert_allclose(s.consensus_matrix_, d.consensus_matrix_, atol=tol)


def test_eigh_of_zero_matrix_is_identity():
    """The H-update shortcut for L_Z = 0 (Z diagonal) returns what LAPACK's syevd returns: the identity."""
    from ensclust.methods.awec import _smallest_eigvecs

    for n in (7, 30, 200):
        for dtype in (np.float64, np.float32):
            L = np.zeros((n, n), dtype=dtype)
            vals, vecs = np.linalg.eigh(L)
            assert np.array_equal(vecs, np.eye(n)) and not vals.any()
            H = _smallest_eigvecs(L, 3, "dense", None, None)
            assert H.dtype == dtype and np.array_equal(H, vecs[:, :3])


@pytest.mark.parametrize("lam,gamma,o", [(0.1, 5, 2), (0.2, 0.5, 2), (0.04, 50, 3)])
def test_sparse_solver_equals_dense_f30(f30, lam, gamma, o):
    """F30 fixture solves (order 3: non-symmetric C) with the sparse path forced (n = 30 < SPARSE_MIN_N)."""
    gt, members, A, khn, info, G = f30
    dense = solve_awec(A, G[:o], 3, lam=lam, gamma=gamma, z_step="dense")
    fast = solve_awec(A, G[:o], 3, lam=lam, gamma=gamma, z_step="sparse")
    assert fast["n_iter"] == dense["n_iter"]
    assert (fast["z_sparse_steps"] > 0) == (gamma >= 5)  # small gamma: Z never sparse, all steps dense
    np.testing.assert_allclose(fast["alpha"], dense["alpha"], atol=1e-12)
    np.testing.assert_allclose(fast["C"], dense["C"], atol=1e-10)
    np.testing.assert_allclose(fast["Z"], dense["Z"], atol=1e-10)
    assert same_partition(hac_labels(fast["Z"], 3), hac_labels(dense["Z"], 3))


def test_awec_uses_the_shared_simplex_projection():
    """One projection in one place (issue 19): AWEC's Z sub-problem calls ensclust.core.simplex."""
    from ensclust.methods import awec

    assert awec.project_simplex is project_simplex
    assert not any("simplex" in name and callable(getattr(awec, name)) and name != "project_simplex"
                   for name in dir(awec))


def test_tiled_sparse_product_is_exact(monkeypatch):
    """The column-tiled CSR x dense product of the sparse path is bit-for-bit scipy's product."""
    from scipy import sparse as sp

    from ensclust.methods import awec

    monkeypatch.setattr(awec, "SPMM_TILE", 16)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 150))
    for density in (0.005, 0.1, 0.5):
        W = sp.random(40, 150, density=density, random_state=1, format="csr")
        np.testing.assert_array_equal(awec._sparse_times_dense(W, X), np.asarray(W @ X))


def test_solver_state_is_updated_in_place():
    """The ADMM keeps its n x n state in place (C into the previous C, E, J, the residuals without |.| copies, the
    old Z released before the Z sub-problem): its own allocations peak at about ten and a half n x n arrays (six
    iterates plus the Z sub-problem's operator, result and blocks), where whole-matrix expressions peaked at 12.6
    (results/bench/awec_s22). tracemalloc sees NumPy's buffers; A and the G^(i) are allocated before it starts."""
    import tracemalloc

    from ensclust.methods.awec import _PARAMS

    rng = np.random.default_rng(0)
    n, c = 800, 4
    truth = np.repeat(np.arange(c), n // c)
    members = np.column_stack([np.where(rng.random(n) < 0.8, truth, rng.integers(0, c, n)) for _ in range(10)])
    p = {k: v.default for k, v in _PARAMS.items()}
    A = coassociation(members, dtype=np.float64)
    G = connection_matrices(knn_weights(A, c, p["nn_rate"])[0], p["order"], threshold=p["order_threshold"])
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = solve_awec(A, G, c, lam=0.1, gamma=50, delta=p["delta"], mu0=p["mu0"], rho=p["rho"],
                         mu_max=p["mu_max"], tol=p["tol"], max_iter=5, inner_iter=p["inner_iter"], eta0=p["eta0"],
                         rho2=p["rho2"], laplacian=p["laplacian"], refresh_mu=p["refresh_mu"],
                         multiplier_init=p["multiplier_init"], degree_fallback=p["degree_fallback"],
                         eigensolver="dense", ablation="none", z_step="sparse", rng=None)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert out["n_iter"] == 5
    assert peak / (n * n * 8) < 11.5

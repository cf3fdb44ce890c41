"""RCEC test oracles (specs/rcec.md section 8)."""

import numpy as np
import pytest

from ensclust.core.labels import check_members, one_hot
from ensclust.core.spectral import ncut_linear_kernel
from ensclust.methods import get_method
from ensclust.methods.rcec import rcec_gradient, rcec_objective, rcec_update
from ensclust.testing import check_method_properties, planted_ensemble, same_partition


def _noisy_L(seed=0, n=40, m=5, c=4, noise=0.3):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    cols = []
    for _ in range(m):
        lab = y.copy()
        flip = rng.random(n) < noise
        lab[flip] = rng.integers(0, c, flip.sum())
        cols.append(lab)
    return one_hot(check_members(np.column_stack(cols))).toarray()


def _run(L, lam, beta, gamma=0.01, iters=500, seed=0, squared=False):
    X = np.random.default_rng(seed).uniform(0.001, 1, L.shape)
    for _ in range(iters):
        X = rcec_update(L, X, lam, gamma, beta, squared=squared)
    return X


def test_T1_gradient_matches_finite_differences():
    L = _noisy_L(1, n=12, m=3, c=3)
    X = np.random.default_rng(2).uniform(0.1, 1, L.shape)
    lam, gamma, beta = 0.3, 0.01, 1.5
    G = rcec_gradient(L, X, lam, gamma, beta)
    h = 1e-6
    for i, j in [(0, 0), (3, 2), (11, 8), (5, 4)]:
        E = np.zeros_like(X)
        E[i, j] = h
        fd = (rcec_objective(L, X + E, lam, gamma, beta) - rcec_objective(L, X - E, lam, gamma, beta)) / (2 * h)
        assert G[i, j] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_T2_lambda_zero_group_soft_threshold_and_T6_printed_rule_differs():
    L = _noisy_L(0)
    beta = 4.0
    n_j = L.sum(axis=0)
    expected = L * np.maximum(0, 1 - beta / (2 * np.sqrt(n_j)))[None, :]
    X = _run(L, 0.0, beta, iters=500)
    np.testing.assert_allclose(X, expected, atol=1e-9)
    # Entries outside the support of L are exactly 0 after the first step.
    X1 = rcec_update(L, np.random.default_rng(0).uniform(0.001, 1, L.shape), 0.0, 0.01, beta)
    assert np.all(X1[L == 0] == 0)
    # The paper's printed 1/||x||^2 weight does not reach the optimum (spec R1/T6).
    Xsq = _run(L, 0.0, beta, iters=500, squared=True)
    assert np.abs(Xsq - expected).max() > 0.05
    assert rcec_objective(L, Xsq, 0, 0.01, beta) > rcec_objective(L, X, 0, 0.01, beta) + 1.0


@pytest.mark.parametrize("lam,beta,entries,jstar", [
    (0.5, 5.0, (0, 0, 0.132532, 0.385175), 34.971654),
    (0.0, 4.0, (0, 0.105573, 0.367544, 0.552786), 30.481926),
])
def test_T3_single_partition_closed_form(lam, beta, entries, jstar):
    sizes = (3, 5, 10, 20)
    y = np.repeat(np.arange(4), sizes)
    L = one_hot(check_members(y[:, None])).toarray()
    X = _run(L, lam, beta, iters=4000 if lam else 500)
    got = np.array([X[y == j, j].mean() for j in range(4)])
    np.testing.assert_allclose(got, entries, atol=2e-5)
    assert rcec_objective(L, X, lam, 0.01, beta) == pytest.approx(jstar, abs=1e-4)


@pytest.mark.parametrize("lam,beta", [(0.1, 2), (0.1, 6), (1, 1), (0.1, 0.01)])
def test_T4_objective_non_increasing(lam, beta):
    L = _noisy_L(3)
    X = np.random.default_rng(5).uniform(0.001, 1, L.shape)
    prev = rcec_objective(L, X, lam, 0.01, beta)
    for _ in range(150):
        X = rcec_update(L, X, lam, 0.01, beta)
        cur = rcec_objective(L, X, lam, 0.01, beta)
        assert cur <= prev * (1 + 1e-9)
        prev = cur
    assert np.all(X >= 0)


def test_T8_kkt_at_convergence():
    L = _noisy_L(4, n=24, m=4, c=3)
    lam, beta = 0.1, 2.0
    X = _run(L, lam, beta, iters=3000)
    G = rcec_gradient(L, X, lam, 0.01, beta)
    active = X > 1e-6
    assert np.abs(G[active]).max() < 1e-2
    assert G[~active].min() >= -1e-2 if (~active).any() else True


def test_T9_clean_ensemble_recovers_truth_and_ncut_equals_explicit_kernel():
    y = np.repeat(np.arange(3), 15)
    members = np.column_stack([y] * 6)
    labels = get_method("rcec", beta=2.0).fit_predict(members, 3, random_state=0)
    assert same_partition(labels, y)
    # the SVD recipe spans the top eigenvectors of the explicit normalised kernel
    X = np.random.default_rng(0).uniform(0, 1, (30, 8))
    deg = X @ X.sum(axis=0)
    Kn = (X @ X.T) / np.sqrt(np.outer(deg, deg))
    top = np.linalg.eigh(Kn)[1][:, -3:]
    U = np.linalg.svd(X / np.sqrt(deg)[:, None], full_matrices=False)[0][:, :3]
    assert np.allclose(top @ top.T, U @ U.T, atol=1e-8)
    lab, zero = ncut_linear_kernel(X, 3, np.random.default_rng(0))
    assert zero == 0 and len(np.unique(lab)) == 3


def test_anomalous_small_clusters_are_removed():
    # Good members with the 3 planted clusters plus members that add tiny spurious clusters of 2 points:
    # with beta^2/4 > 2 those columns must shrink to zero.
    y = np.repeat(np.arange(3), 20)
    cols = [y.copy() for _ in range(8)]
    rng = np.random.default_rng(0)
    for _ in range(4):
        lab = y.copy()
        idx = rng.choice(60, 2, replace=False)
        lab[idx] = 3
        cols.append(lab)
    members = check_members(np.column_stack(cols))
    est = get_method("rcec", beta=4.0, **{"lambda": 0.1})
    labels = est.fit_predict(members, 3, random_state=1)
    L = one_hot(members).toarray()
    small = L.sum(axis=0) == 2
    norms = np.linalg.norm(est.assignment_, axis=0)
    assert norms[small].max() < 1e-3 * norms[~small].min()
    assert est.diagnostics_["n_removed_clusters"] == small.sum()
    assert same_partition(labels, y)


def test_rcec_properties_and_determinism():
    check_method_properties("rcec", {"beta": 2.0})
    members, _ = planted_ensemble(n=60, c=3, m=10, random_state=2)
    a = get_method("rcec").fit_predict(members, 3, random_state=7)
    b = get_method("rcec").fit_predict(members, 3, random_state=7)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("shape", [(7, 15), (5, 40), (20, 6)])
def test_gram_spectrum_both_routes_equal_the_direct_definitions(shape):
    from ensclust.methods.rcec import gram_spectrum

    X = np.random.default_rng(sum(shape)).uniform(0, 1, shape)
    X[:, 1] = 0.0  # a zero column: X X^T may still be full rank, X^T X is singular
    if shape[0] < shape[1]:
        X[1] = X[0]  # n < K route (X X^T): a zero eigenvalue of X X^T
    K = shape[1]
    w, Q = np.linalg.eigh(X.T @ X + 0.01 * np.eye(K))
    H_ref = (Q / np.sqrt(w)) @ Q.T
    H, XH, s = gram_spectrum(X, 0.01)
    np.testing.assert_allclose(H, H_ref, atol=1e-9)
    if shape[0] < shape[1]:
        assert np.array_equal(H, H.T)  # F^T F is computed as a symmetric rank-n update and mirrored
        np.testing.assert_allclose(XH, X @ H_ref, atol=1e-9)
    else:  # X H would cost a product: the update forms X H^- itself
        assert XH is None
    sv = np.linalg.svd(X, compute_uv=False)
    np.testing.assert_allclose(np.sort(s)[::-1][:sv.size], sv, atol=1e-7)
    assert rcec_objective(np.zeros_like(X), X, 0.1, 0.01, 1.0, s=s) == pytest.approx(
        rcec_objective(np.zeros_like(X), X, 0.1, 0.01, 1.0), rel=1e-12)


@pytest.mark.parametrize("shape", [(12, 30), (30, 12)])
def test_update_equals_the_printed_two_product_form(shape):
    # Eq. 5 with X H^- and X H^+ as two products of the dense H (the form the paper prints)
    rng = np.random.default_rng(3)
    X = rng.uniform(0.001, 1, shape)
    L = (rng.random(shape) < 0.2).astype(float)
    lam, gamma, beta = 0.1, 0.01, 2.0
    w, Q = np.linalg.eigh(X.T @ X + gamma * np.eye(shape[1]))
    H = (Q / np.sqrt(w)) @ Q.T
    H_pos = np.maximum(H, 0)
    D = 1.0 / (np.linalg.norm(X, axis=0) + 1e-10)
    ref = X * np.sqrt((2 * L + lam * (X @ (H_pos - H))) / (2 * X + beta * X * D + lam * (X @ H_pos)))
    np.testing.assert_allclose(rcec_update(L, X, lam, gamma, beta), ref, rtol=1e-10)
    if shape[0] >= shape[1]:  # the K x K route is the printed form itself, bit for bit
        np.testing.assert_array_equal(rcec_update(L, X, lam, gamma, beta), ref)

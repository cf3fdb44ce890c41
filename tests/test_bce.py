"""BCE (specs/baselines/robust_family.md section 8): oracles B1-B4 and the shared method properties."""

import numpy as np
import pytest
from scipy.special import digamma
from threadpoolctl import threadpool_limits

from ensclust.core.labels import check_members
from ensclust.methods import get_method
from ensclust.methods.bce import estep, estep_loop, update_alpha, update_beta
from ensclust.testing import check_method_properties, planted_ensemble, planted_partition, same_partition


@pytest.fixture(autouse=True, scope="module")
def _single_thread_blas():
    """Small matrices: one BLAS thread avoids oversubscribing the shared cores (much slower otherwise)."""
    with threadpool_limits(limits=1):
        yield


def _random_model(members, k, seed):
    rng = np.random.default_rng(seed)
    sizes = members.max(axis=0) + 1
    alpha = rng.random(k)
    beta = []
    for q in range(members.shape[1]):
        b = rng.random((k, sizes[q]))
        beta.append(b / b.sum(axis=1, keepdims=True))
    return alpha, beta, sizes


@pytest.fixture(scope="module")
def small_ensemble():
    members, _ = planted_ensemble(n=40, c=3, m=6, random_state=3)
    return check_members(members)


def test_vectorised_estep_equals_the_reference_loop(small_ensemble):  # B3
    alpha, beta, _ = _random_model(small_ensemble, 3, seed=1)
    phi, gamma, sweeps = estep(alpha, beta, small_ensemble)
    phi_loop, gamma_loop = estep_loop(alpha, beta, small_ensemble)
    assert sweeps.min() >= 1 and sweeps.max() < 499
    np.testing.assert_allclose(phi, phi_loop, atol=1e-10, rtol=0)
    np.testing.assert_allclose(gamma, gamma_loop, atol=1e-10, rtol=0)


def test_estep_and_beta_normalisation(small_ensemble):  # B1
    alpha, beta, sizes = _random_model(small_ensemble, 4, seed=2)
    phi, gamma, _ = estep(alpha, beta, small_ensemble)
    m = small_ensemble.shape[1]
    np.testing.assert_allclose(phi.sum(axis=1), 1.0, atol=1e-12)          # each phi_{s,:,n} is a distribution
    np.testing.assert_allclose((gamma - alpha).sum(axis=1), m, atol=1e-10)  # gamma_s - alpha sums to V_s = m
    new_beta = update_beta(phi, small_ensemble, sizes, 1e-6)
    for q, b in enumerate(new_beta):
        assert b.shape == (4, sizes[q])
        np.testing.assert_allclose(b.sum(axis=1), 1.0, atol=1e-12)
    # the unsmoothed counts are the expected label counts: total mass per clustering = n
    raw = update_beta(phi, small_ensemble, sizes, 0.0)
    counts = sum((raw[0] * phi[:, :, 0].sum(axis=0)[:, None]).sum(axis=1))
    assert counts == pytest.approx(small_ensemble.shape[0])


def test_alpha_newton_stays_positive_and_reaches_the_stationary_point():  # B4
    rng = np.random.default_rng(0)
    gamma = rng.gamma(0.3, size=(200, 5)) + 1e-3   # small, spread gammas push alpha towards zero
    alpha0 = np.full(5, 10.0)                      # far from the optimum: the full Newton step overshoots
    alpha, steps = update_alpha(alpha0, gamma, tol=1e-12, max_steps=500)
    assert np.all(alpha > 0) and steps > 1
    n_obj = gamma.shape[0]
    suff = (digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))).sum(axis=0)
    grad = suff + n_obj * (digamma(alpha.sum()) - digamma(alpha))
    assert np.abs(grad).max() < 1e-6 * n_obj


def test_identical_members_recovered_for_most_seeds():  # B2
    y = planted_partition(60, 3)
    members = np.column_stack([y] * 8)
    hits = sum(same_partition(get_method("bce").fit_predict(members, 3, random_state=s), y) for s in range(10))
    assert hits >= 8


def test_bce_properties_and_determinism():
    check_method_properties("bce")
    members, _ = planted_ensemble(n=90, c=3, m=20, random_state=5)
    a = get_method("bce").fit(members, 3, random_state=7)
    b = get_method("bce").fit(members, 3, random_state=7)
    assert np.array_equal(a.labels_, b.labels_)
    d = a.diagnostics_
    assert d["converged"] and d["n_iter"] == len(d["beta_change"]) and d["beta_change"][-1] <= 0.01

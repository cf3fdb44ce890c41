"""RCE (specs/baselines/robust_family.md section 6): oracles E1-E3, the exact two-value error reduction, and the
shared method properties."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ensclust.core.coassoc import coassociation_counts
from ensclust.core.labels import check_members
from ensclust.methods import get_method
from ensclust.methods.rce import _log_odds, astar_step, error_objective, error_step
from ensclust.testing import check_method_properties, planted_ensemble, planted_partition, same_partition


@pytest.fixture(autouse=True, scope="module")
def _single_thread_blas():
    """Small matrices: one BLAS thread avoids oversubscribing the shared cores (much slower otherwise)."""
    with threadpool_limits(limits=1):
        yield


@pytest.mark.parametrize("lam", [1e-4, 1e-2, 0.5, 1.0, 3.0, 100.0])
def test_error_step_is_the_grid_minimiser(lam):  # E2
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.random(40), [0.0, 1.0, 0.0, 1.0, 0.5]])
    at = np.concatenate([rng.random(40), [0.0, 1.0, 1.0, 0.0, 0.5]])
    for b in (0.0, 1.0):
        e = error_step(a, at, b, lam)
        assert np.all(e >= b - 1.0) and np.all(e <= b)
        grid = np.linspace(b - 1.0, b, 50001)
        g_grid = error_objective(grid[None, :], a[:, None], at[:, None], b, lam).min(axis=1)
        g_e = error_objective(e, a, at, b, lam)
        assert np.all(g_e <= g_grid + 1e-6)


def test_two_value_errors_equal_the_per_member_stacks():
    """The m-independent reduction: C from (e1, e0) and the counts equals the authors' sum over member stacks."""
    members = check_members(planted_ensemble(n=30, c=3, m=7, random_state=1)[0])
    m = members.shape[1]
    counts = coassociation_counts(members).toarray().astype(float)
    rng = np.random.default_rng(4)
    A = np.clip(counts / m + 0.05 * rng.standard_normal(counts.shape), 0.0, 1.0)  # not symmetric on purpose
    lam = 0.3
    C_stack = np.zeros_like(A)
    for q in range(m):
        Ai = (members[:, q][:, None] == members[:, q][None, :]).astype(float)
        Ei = error_step(A, A.T, Ai, lam)
        C_stack += _log_odds(Ai - Ei)
    e1, e0 = error_step(A, A.T, 1.0, lam), error_step(A, A.T, 0.0, lam)
    C_pair = counts * _log_odds(1.0 - e1) + (m - counts) * _log_odds(-e0)
    np.testing.assert_allclose(C_pair, C_stack, rtol=1e-12, atol=1e-9)


def test_astar_stays_in_unit_box_and_fixed_entries_do_not_move():  # E1
    members = check_members(planted_ensemble(n=45, c=3, m=10, random_state=2)[0])
    m = members.shape[1]
    counts = coassociation_counts(members).toarray().astype(float)
    A0 = counts / m
    e1, e0 = error_step(A0, A0.T, 1.0, 0.5), error_step(A0, A0.T, 0.0, 0.5)
    Sinv = np.linalg.inv(np.linalg.cholesky(A0 @ A0.T + 1e-3 * np.eye(45)))  # any matrix with mixed signs
    A = astar_step(A0, counts, e1, e0, m, Sinv, 1.0, 0.0, n_inner=20)
    assert A.min() >= 0.0 and A.max() <= 1.0
    fixed = (counts == 0) | (counts == m)
    assert fixed.any() and (~fixed).any()
    assert np.array_equal(A[fixed], A0[fixed])
    assert not np.allclose(A[~fixed], A0[~fixed])
    fit = get_method("rce", lambda1=0.5, lambda2=1.0).fit(members, 3, random_state=0)
    A_fit = fit.consensus_matrix_
    assert A_fit.min() >= 0.0 and A_fit.max() <= 1.0
    assert np.array_equal(A_fit[fixed], A0[fixed])


def test_identical_members_keep_the_connectivity_matrix():  # E3
    y = planted_partition(60, 4)
    members = np.column_stack([y] * 6)
    fit = get_method("rce").fit(members, 4, random_state=0)
    np.testing.assert_array_equal(fit.consensus_matrix_, (y[:, None] == y[None, :]).astype(float))
    assert same_partition(fit.labels_, y)


def test_objective_decreases_with_a_small_rank_weight():
    """With lambda2 small, the reweighted nuclear surrogate is almost inactive and each outer iteration (exact
    E-step, multiplicative A*-step) lowers the model objective."""
    members, y = planted_ensemble(n=90, c=3, m=20, random_state=0)
    fit = get_method("rce", lambda1=1.0, lambda2=0.01).fit(members, 3, random_state=0)
    obj = np.array(fit.diagnostics_["objective"])
    assert len(obj) == 20 and np.all(np.diff(obj) <= 1e-9 * abs(obj[0]))
    assert obj[-1] < obj[0]


def test_rce_properties_and_determinism():
    check_method_properties("rce")
    members, _ = planted_ensemble(n=60, c=3, m=10, random_state=5)
    a = get_method("rce", lambda2=10.0).fit_predict(members, 3, random_state=3)
    b = get_method("rce", lambda2=10.0).fit_predict(members, 3, random_state=3)
    assert np.array_equal(a, b)


def test_float32_products_give_the_same_partition():
    members, y = planted_ensemble(n=90, c=3, m=20, random_state=1)
    a = get_method("rce", lambda2=10.0).fit(members, 3, random_state=0)
    b = get_method("rce", lambda2=10.0, matmul_dtype="float32").fit(members, 3, random_state=0)
    assert np.abs(a.consensus_matrix_ - b.consensus_matrix_).max() < 1e-4
    assert same_partition(a.labels_, b.labels_) and same_partition(a.labels_, y)

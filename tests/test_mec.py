"""MEC (reconstruction of MVEC, IJCAI 2017; ensclust/methods/mec.py): the view matrices (R0), the exact
Z-step (R4), convergence of the ALM (R2-R7) to a point at least as good as the planted solution, and the
shared method properties (identical members, member relabelling/reordering, planted recovery, determinism)."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score as ari
from threadpoolctl import threadpool_limits

from ensclust.core.labels import check_members
from ensclust.core.simplex import simplex_qp
from ensclust.methods import get_method, get_method_class
from ensclust.methods.mec import mec_objective, mec_solve, soft_threshold, top_eigvecs, view_factors, z_step
from ensclust.testing import (
    blobs_with_members,
    check_method_properties,
    planted_ensemble,
    planted_partition,
    same_partition,
)


@pytest.fixture(autouse=True, scope="module")
def _single_thread_blas():
    """Small matrices: one BLAS thread avoids oversubscribing the shared cores."""
    with threadpool_limits(limits=1):
        yield


def _planted(n=90, c=3, m=20, seed=0):
    members, y = planted_ensemble(n=n, c=c, m=m, random_state=seed)
    return check_members(members, c), y


def test_registered_as_reconstruction():
    cls = get_method_class("mec")
    assert "reconstruction" in cls.summary
    assert all(p.source for p in cls.params.values())
    assert all(p.source.startswith("reconstruction") for p in cls.params.values())


def test_view_matrices_are_normalised_projectors():  # R0
    members = check_members(np.array([[0, 0], [0, 1], [1, 1], [1, 1], [2, 0]]), 3)
    F = view_factors(members)
    assert len(F) == 2
    for q, Fq in enumerate(F):
        P = Fq @ Fq.T
        lab = members[:, q]
        expected = (lab[:, None] == lab[None, :]) / np.bincount(lab)[lab][:, None]
        np.testing.assert_allclose(P, expected, atol=1e-15)
        np.testing.assert_allclose(P, P.T, atol=1e-15)
        np.testing.assert_allclose(P @ P, P, atol=1e-14)  # projector
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-14)  # row-stochastic
    (G,) = view_factors(members, n_views=1)  # one group: the mean of the member views
    np.testing.assert_allclose(G @ G.T, sum(Fq @ Fq.T for Fq in F) / 2, atol=1e-15)
    assert len(view_factors(members, n_views=5)) == 2  # more groups than members: empty groups dropped


@pytest.mark.parametrize("seed", range(3))
def test_z_step_is_the_constrained_minimiser(seed):  # R4
    """Row by row, the Z-subproblem is the simplex QP  mu T/2 |z|^2 - (beta g_i + mu sum_t a_ti)^T z, solved
    independently by the exact active-set QP of ensclust.core.simplex."""
    rng = np.random.default_rng(seed)
    n, k, terms, beta, mu = 12, 3, 4, 0.7, 0.9
    targets = rng.standard_normal((terms, n, n)) * 0.3
    H = np.linalg.qr(rng.standard_normal((n, k)))[0]
    Z = z_step(targets.sum(axis=0), terms, H, beta, mu)
    assert np.all(Z >= 0) and np.allclose(Z.sum(axis=1), 1.0)
    G = H @ H.T
    for i in range(n):
        ref = simplex_qp(mu * terms / 2 * np.eye(n), -beta * G[i] - mu * targets[:, i, :].sum(axis=0))
        np.testing.assert_allclose(Z[i], ref, atol=1e-9)


def test_soft_threshold_is_the_l1_prox():  # R5
    G = np.array([[-2.0, -0.5, 0.0, 0.3, 1.5]])
    np.testing.assert_array_equal(soft_threshold(G, 0.5), [[-1.5, 0.0, 0.0, 0.0, 1.0]])


def test_alm_converges_below_the_planted_objective():  # R2-R7
    members, y = _planted()
    H, Z, E, d = mec_solve(members, 3)
    assert d["converged"] and d["residual"][-1] < 1e-6 < d["residual"][0] * 1e-3
    obj = np.array(d["objective"])
    assert abs(obj[-1] - obj[-20]) < 1e-5 * abs(obj[-1])  # the objective has settled
    # the constraints hold at the end: P_v = Z + E_v and Z row-stochastic, non-negative
    F = view_factors(members)
    assert max(np.abs(Fv @ Fv.T - Z - Ev).max() for Fv, Ev in zip(F, E, strict=True)) < 1e-6
    assert np.all(Z >= 0) and np.allclose(Z.sum(axis=1), 1.0)
    # the solution is at least as good for R1 as the planted projector with E_v = P_v - P*
    (Fy,) = view_factors(check_members(y[:, None], 3))
    P_star = Fy @ Fy.T
    ref = mec_objective(3.0, [Fv @ Fv.T - P_star for Fv in F], P_star, top_eigvecs(P_star, 3), 0.005, 0.5)
    assert obj[-1] <= ref + 1e-6
    # and the shared part is (numerically) of rank c, with the planted clusters as its blocks
    sv = np.linalg.svd(Z, compute_uv=False)
    assert sv[2] > 0.9 and sv[3] < 1e-4  # Z = Q up to the 1e-6 residual
    assert d["rank_Q"][-1] == 3


def test_fast_penalty_schedule_stops_at_a_worse_point():
    """Why mu0 = 0.1, rho = 1.1: the schedule mu0 = 1e-3, rho = 1.9 is feasible at the end but not low-rank."""
    members, _ = _planted()
    _, _, _, d_default = mec_solve(members, 3)
    _, _, _, d_fast = mec_solve(members, 3, mu0=1e-3, rho=1.9, max_iter=100)
    assert d_fast["converged"]
    assert d_fast["objective"][-1] > d_default["objective"][-1] + 0.1
    assert d_fast["rank_Q"][-1] > 10


def test_identical_members_are_a_fixed_point():
    y = planted_partition(60, 3)
    members = check_members(np.column_stack([y] * 6), 3)
    H, Z, E, d = mec_solve(members, 3)
    (F,) = view_factors(members[:, :1])
    np.testing.assert_allclose(Z, F @ F.T, atol=1e-12)
    assert max(np.abs(Ev).max() for Ev in E) == 0.0
    assert d["objective"][-1] == pytest.approx(3 * (1 - 0.5))  # |P|_* - beta tr(H^T P H) = k (1 - beta)
    assert same_partition(get_method("mec").fit_predict(members, 3, random_state=0), y)


def test_member_relabelling_and_order_do_not_change_the_solution():
    members, y = _planted(seed=1)
    rng = np.random.default_rng(5)
    perm = members[:, rng.permutation(members.shape[1])].copy()
    for q in range(perm.shape[1]):
        perm[:, q] = (rng.permutation(perm[:, q].max() + 1) + 4)[perm[:, q]]
    a, b = get_method("mec"), get_method("mec")
    la = a.fit_predict(members, 3, random_state=3)
    lb = b.fit_predict(perm, 3, random_state=3)
    np.testing.assert_allclose(a.consensus_matrix_, b.consensus_matrix_, atol=1e-9)
    assert same_partition(la, lb) and ari(la, y) > 0.9


def test_blobs_with_noise_members_recovered_and_noise_detected():
    _, members, y = blobs_with_members(n=150, c=3, m=10, random_state=1)
    assert min(ari(members[:, q], y) for q in range(7)) > 0.95  # well separated (seed 0's blobs overlap)
    rng = np.random.default_rng(0)
    members[:, 7:] = rng.integers(0, 3, size=(150, 3))  # three of ten members are pure noise
    m = get_method("mec")
    labels = m.fit_predict(members, 3, random_state=0)
    assert ari(labels, y) > 0.9
    # the noise members' disagreement goes to their sparse errors E_v (R5), not into Z
    _, _, E, _ = mec_solve(check_members(members, 3), 3)
    mass = [np.abs(Ev).sum() for Ev in E]
    assert min(mass[7:]) > 10 * max(mass[:7])


def test_deterministic_given_a_seed():
    members, _ = _planted(n=60, seed=2)
    a, b, c = get_method("mec"), get_method("mec"), get_method("mec")
    la = a.fit_predict(members, 3, random_state=11)
    lb = b.fit_predict(members, 3, random_state=11)
    c.fit_predict(members, 3, random_state=12)
    assert np.array_equal(la, lb)
    assert np.array_equal(a.consensus_matrix_, b.consensus_matrix_)
    assert np.array_equal(a.consensus_matrix_, c.consensus_matrix_)  # the solver itself uses no randomness
    assert a.diagnostics_["n_iter"] == b.diagnostics_["n_iter"]


def test_grouped_views():
    members, y = _planted(n=60, seed=3)
    m = get_method("mec", n_views=4)
    labels = m.fit_predict(members, 3, random_state=0)
    assert m.diagnostics_["n_views"] == 4 and ari(labels, y) > 0.9


def test_shared_method_properties():
    check_method_properties("mec", n=60)

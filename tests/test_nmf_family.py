"""NMFC, WCC, INA, ECMC oracles (specs/baselines/nmf_family.md) and the simplex helpers."""

import numpy as np
import pytest
from scipy.optimize import minimize

from ensclust.core.coassoc import coassociation
from ensclust.core.labels import check_members, cluster_counts, one_hot
from ensclust.core.simplex import project_simplex, simplex_qp
from ensclust.core.trinmf import ConnectivityOperator, trinmf_objective, trinmf_step
from ensclust.methods import get_method
from ensclust.methods.ina import _Support, ina_objective
from ensclust.testing import check_method_properties, planted_ensemble, same_partition


def _operator(members):
    members = check_members(members)
    m = members.shape[1]
    return members, ConnectivityOperator(one_hot(members), np.full(int(cluster_counts(members).sum()), 1 / m))


def test_simplex_projection_matches_brute_force_qp_I3():
    rng = np.random.default_rng(0)
    for _ in range(10):
        r = rng.normal(size=6)
        ours = project_simplex(r)
        res = minimize(lambda x, r=r: ((x - r) ** 2).sum(), np.full(6, 1 / 6), method="SLSQP",
                       bounds=[(0, None)] * 6, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                       options={"ftol": 1e-14, "maxiter": 500})
        np.testing.assert_allclose(ours, res.x, atol=1e-6)
        assert ours.min() >= 0 and ours.sum() == pytest.approx(1)


def test_simplex_qp_against_slsqp():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 5))
    G = A @ A.T
    f = rng.normal(size=5)
    ours = simplex_qp(G, -2 * f)  # minimises x^T G x + c^T x
    res = minimize(lambda x: x @ G @ x - 2 * f @ x, np.full(5, 0.2), method="SLSQP", bounds=[(0, None)] * 5,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}], options={"ftol": 1e-14})
    assert ours @ G @ ours - 2 * f @ ours <= res.fun + 1e-8


def test_nmfc_N3_implicit_equals_dense_N4_nonnegative_and_fit_improves():
    for seed in range(8):
        members, M = _operator(planted_ensemble(n=40, c=3, m=6, random_state=seed)[0])
        rng = np.random.default_rng(seed)
        Q, S = rng.uniform(size=(40, 3)), np.diag(rng.uniform(size=3))
        dense = M.dense()
        start = trinmf_objective(M, Q, S)
        assert start == pytest.approx(((dense - Q @ S @ Q.T) ** 2).sum(), rel=1e-10)
        for _ in range(100):
            Q, S = trinmf_step(M, Q, S)
        assert Q.min() >= 0 and S.min() >= 0
        assert trinmf_objective(M, Q, S) < 0.25 * start
        np.testing.assert_allclose(M.dense(), coassociation(members, dtype=np.float64), atol=1e-12)


def test_spec_N1_is_wrong_orthogonal_rules_are_not_monotone():
    # nmf_family.md N1 expects ||A - Q S Q^T|| to be non-increasing up to 1e-8; the orthogonal tri-NMF rules
    # (Ding et al. 2006, also in tsano430's code) trade reconstruction for orthogonality, and the objective
    # rises over whole stretches of iterations. Documented in NMFC's docstring; pinned here.
    members, M = _operator(planted_ensemble(n=40, c=3, m=6, random_state=0)[0])
    rng = np.random.default_rng(0)
    Q, S = rng.uniform(size=(40, 3)), np.diag(rng.uniform(size=3))
    hist = [trinmf_objective(M, Q, S)]
    for _ in range(60):
        Q, S = trinmf_step(M, Q, S)
        hist.append(trinmf_objective(M, Q, S))
    assert any(b > a * (1 + 1e-8) for a, b in zip(hist, hist[1:], strict=False))


def test_nmfc_N2_identical_members_recovered_most_seeds():
    y = np.repeat(np.arange(3), 20)
    hits = sum(same_partition(get_method("nmfc").fit_predict(np.column_stack([y] * 5), 3, random_state=s), y)
               for s in range(10))
    assert hits >= 9


def test_wcc_downweights_random_partition():
    y = np.repeat(np.arange(3), 20)
    rand = np.random.default_rng(0).integers(0, 3, 60)
    est = get_method("wcc")
    labels = est.fit_predict(np.column_stack([y] * 4 + [rand]), 3, random_state=0)
    assert est.diagnostics_["weights"][-1] <= 0.05
    assert same_partition(labels, y)


def test_ina_I1_I2_constraints_and_monotone():
    members = check_members(planted_ensemble(n=45, c=3, m=8, random_state=3)[0])
    est = get_method("ina")
    H, G, vals, hist, _ = est.solve(members, 3, np.random.default_rng(0))
    assert vals.min() >= 0
    np.testing.assert_allclose(vals.sum(axis=1), 1.0, atol=1e-12)
    assert all(b <= a * (1 + 1e-9) for a, b in zip(hist, hist[1:], strict=False))
    sup = _Support(members)
    assert ina_objective(sup, vals, H, G, 0.1) == pytest.approx(hist[-1])


def test_ina_I5_anomalous_clusters_get_lower_reliability():
    y = np.repeat(np.arange(3), 20)
    rng = np.random.default_rng(2)
    good = [y.copy() for _ in range(6)]
    bad = [rng.integers(0, 3, 60) for _ in range(3)]
    est = get_method("ina")
    est.fit(np.column_stack(good + bad), 3, random_state=0)
    rel = est.reliability_
    assert rel[:, :6].mean() > rel[:, 6:].mean()


def test_ecmc_C1_identical_members_and_C3_observed_pairs_monotone():
    y = np.repeat(np.arange(3), 15)
    est = get_method("ecmc")
    assert same_partition(est.fit_predict(np.column_stack([y] * 4), 3, random_state=0), y)
    assert est.diagnostics_["observed_fraction"] == 1.0
    members, _ = planted_ensemble(n=60, c=3, m=10, random_state=0)
    fractions = []
    for d1 in (0.6, 0.8, 1.0):
        e = get_method("ecmc", d0=0.1, d1=d1)
        e.fit(members, 3, random_state=0)
        fractions.append(e.diagnostics_["observed_fraction"])
    assert fractions[0] >= fractions[1] >= fractions[2]


def test_ecmc_C2_small_tau_fits_observed_entries():
    members, _ = planted_ensemble(n=50, c=3, m=10, noise_fraction=0.1, random_state=5)
    est = get_method("ecmc", d0=0.2, d1=0.6, tau=1e-6, max_iter=500, tol=1e-9)
    est.fit(members, 3, random_state=0)
    assert est.diagnostics_["completion_residual"] < 1e-3


@pytest.mark.parametrize("name,params", [("nmfc", {}), ("wcc", {}), ("ina", {}), ("ecmc", {"d0": 0.2, "d1": 0.6}),
                                         ("nmfc", {"n_runs": 3})])
def test_properties(name, params):
    check_method_properties(name, params)


def test_ecmc_rejects_d0_above_d1():
    from ensclust.errors import UserError

    with pytest.raises(UserError, match="d0 < d1"):
        get_method("ecmc", d0=0.9, d1=0.5)


def test_ecmc_truncated_svt_close_to_exact_on_low_rank_case():
    members, y = planted_ensemble(n=120, c=3, m=12, noise_fraction=0.1, random_state=7)
    exact = get_method("ecmc", d0=0.2, d1=0.6, svt="exact")
    trunc = get_method("ecmc", d0=0.2, d1=0.6, svt="truncated")
    a = exact.fit_predict(members, 3, random_state=0)
    b = trunc.fit_predict(members, 3, random_state=0)
    assert same_partition(a, b) and same_partition(a, y)
    assert np.abs(exact.consensus_matrix_ - trunc.consensus_matrix_).max() < 0.05

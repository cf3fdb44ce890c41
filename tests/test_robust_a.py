"""Robust-family baselines I: DREC, TRCE, CESHL, SCCBG (specs/baselines/robust_family.md sections 2-5).

Test oracles of the spec (D1-D3, T1-T4, C1-C3, S1-S3) plus the shared method properties.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, sparse
from scipy.sparse.csgraph import connected_components

from ensclust.core.labels import cluster_offsets, one_hot
from ensclust.core.microclusters import compute_microclusters
from ensclust.methods import get_method
from ensclust.methods._robust_graph import bipartite_component_labels, rank_decision
from ensclust.methods.ceshl import (
    box_qp_kkt_residual,
    hyperedge_qp_matrix,
    initial_hyperedge_weights,
    solve_hyperedge_weights,
    structure_objective,
)
from ensclust.methods.drec import dense_representation
from ensclust.methods.sccbg import (
    _box_minimize,
    box_minimize_rows,
    s_step_lipschitz,
    s_step_objective,
    w_step_lipschitz,
    w_step_objective,
)
from ensclust.methods.trce import kl_to_graph, solve_b_rows
from ensclust.metrics import ari
from ensclust.testing import check_method_properties, planted_ensemble, same_partition


def _identical(n=60, c=3, m=8):
    y = np.repeat(np.arange(c), n // c)
    return np.column_stack([y] * m), y


def _fd_check(fun, x, n_probe=12, h=1e-6, seed=0):
    """Max relative error between the analytic gradient and central differences on random coordinates."""
    rng = np.random.default_rng(seed)
    _, g = fun(x)
    worst = 0.0
    for flat in rng.choice(x.size, size=n_probe, replace=False):
        idx = np.unravel_index(flat, x.shape)
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        fd = (fun(xp)[0] - fun(xm)[0]) / (2 * h)
        worst = max(worst, abs(fd - g[idx]) / max(abs(fd), abs(g[idx]), 1e-3))
    return worst


# --- shared helpers ------------------------------------------------------------------------------------------
def test_bipartite_components_equal_components_of_product():
    rng = np.random.default_rng(3)
    S = (rng.random((40, 12)) < 0.08) * rng.random((40, 12))
    _, expected = connected_components(sparse.csr_matrix(S @ S.T), directed=False)
    assert same_partition(bipartite_component_labels(S), expected)


def test_rank_decision_thresholds():
    assert rank_decision(np.array([0.0, 0.0, 0.5, 1.0]), 3) == "increase"   # 2 zero eigenvalues < c = 3
    assert rank_decision(np.array([0.0, 0.0, 0.0, 0.0]), 3) == "decrease"   # 4 zero eigenvalues > c
    assert rank_decision(np.array([0.0, 0.0, 0.0, 0.2]), 3) == "stop"


# --- DREC ----------------------------------------------------------------------------------------------------
def test_drec_irls_steps_solve_their_linear_systems_and_decrease_objective():
    members, _ = planted_ensemble(n=60, c=3, m=10, random_state=1)
    Xm = compute_microclusters(members).indicator()
    G = (Xm @ Xm.T).toarray()
    lam = 2.0
    n = G.shape[0]
    objectives = []
    for steps in range(1, 6):
        U, R, history = dense_representation(Xm, lam, n_steps=steps)
        Z = U @ R
        d = history[-1]
        # (D2) column j solves (G + lam/d_j I) z_j = G e_j
        residual = G @ Z + Z * (lam / d)[None, :] - G
        assert np.abs(residual).max() <= 1e-10 * max(1.0, np.abs(G).max())
        R = Z - np.eye(n)
        col = np.einsum("ij,ij->j", R, G @ R)
        objectives.append(np.sum(np.sqrt(col + 1e-10)) + lam * np.sum(Z * Z))
    # IRLS for the l2,1 loss never increases the (smoothed) objective (Nie et al. 2010)
    assert all(b <= a + 1e-9 for a, b in zip(objectives, objectives[1:], strict=False)), objectives


def test_drec_identical_members_and_microcluster_mapping():
    members, y = _identical()
    meth = get_method("drec", n_init=5)
    labels = meth.fit_predict(members, 3, random_state=0)
    assert meth.diagnostics_["n_micro"] == 3                      # (D1)
    assert same_partition(labels, y)
    noisy, _ = planted_ensemble(n=90, c=3, m=12, random_state=2)
    labels = get_method("drec", n_init=5).fit_predict(noisy, 3, random_state=0)
    micro = compute_microclusters(noisy)
    for a in range(micro.n_micro):                                # (D3) constant within microclusters
        assert np.unique(labels[micro.assignment == a]).size == 1


def test_drec_properties():
    # n_init=10 instead of the code's 100 to keep the test fast (the restarts only affect k-means' luck)
    check_method_properties("drec", {"n_init": 10})


def test_drec_deterministic():
    members, _ = planted_ensemble(n=90, c=3, m=12, random_state=4)
    a = get_method("drec", n_init=5).fit_predict(members, 3, random_state=7)
    b = get_method("drec", n_init=5).fit_predict(members, 3, random_state=7)
    assert np.array_equal(a, b)


# --- TRCE ----------------------------------------------------------------------------------------------------
def test_trce_kl_matches_explicit_base_graphs():
    members, _ = planted_ensemble(n=30, c=3, m=5, random_state=5)
    rng = np.random.default_rng(0)
    B = rng.random((30, 30)) * (rng.random((30, 30)) < 0.7)
    B /= B.sum(axis=1, keepdims=True)
    Y = one_hot(members)
    got = kl_to_graph(B, Y, members, cluster_offsets(members), np.asarray(Y.sum(axis=0)).ravel())
    # restricted to the co-clustered pairs (as in the fit): the same values
    # B held on the co-clustered pairs only (sparse, as TRCE's B-step returns it; stored zeros included)
    pattern = sparse.csr_matrix(Y @ Y.T)
    rows = np.repeat(np.arange(30), np.diff(pattern.indptr))
    B_support = sparse.csr_matrix((B[rows, pattern.indices], pattern.indices, pattern.indptr), shape=B.shape)
    assert np.any(B_support.data == 0)
    got_support = kl_to_graph(B_support, Y, members, cluster_offsets(members), np.asarray(Y.sum(axis=0)).ravel())
    np.testing.assert_allclose(got_support, got, rtol=1e-12, atol=1e-12)
    eps = np.finfo(float).eps
    for k in range(members.shape[1]):
        same = members[:, k][:, None] == members[:, k][None, :]
        Sk = same / same.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            terms = np.where(Sk > 0, Sk * np.log(np.maximum(Sk / np.maximum(B, eps), eps)), 0.0)
        np.testing.assert_allclose(got[:, k], terms.sum(axis=1), rtol=1e-12, atol=1e-12)


def test_trce_b_step_rows_sum_to_one_and_match_brentq():
    rng = np.random.default_rng(1)
    n = 25
    C = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(C, rng.random(n) + 0.1)
    dist = rng.random((n, n)) * 3
    np.fill_diagonal(dist, 0.0)
    B, theta, has_root = solve_b_rows(C, dist[C != 0], rho=0.7)
    assert has_root.all()
    # C given as CSR (its positive entries, sorted indices; TRCE's form): the same B and theta bit for bit
    B_sp, theta_sp, _ = solve_b_rows(sparse.csr_matrix(C), dist[C != 0], rho=0.7)
    assert sparse.issparse(B_sp) and np.array_equal(B_sp.toarray(), B) and np.array_equal(theta_sp, theta)
    np.testing.assert_allclose(B.sum(axis=1), 1.0, atol=1e-10)          # (T2)
    assert np.all(B[C == 0] == 0)
    for i in range(0, n, 6):
        ci, di = C[i][C[i] > 0], dist[i][C[i] > 0]
        ref = optimize.brentq(lambda t, ci=ci, di=di: np.sum(ci / (0.7 * di + t)) - 1.0,
                              np.finfo(float).eps, 1e4, xtol=1e-14)
        assert abs(theta[i] - ref) <= 1e-9 * max(1.0, ref)
    # rows are solved independently: rows that converge early leave the working set, and each row's theta is
    # the one it gets when solved alone (rows scaled so that their Newton runs take different numbers of steps)
    scaled = C * rng.choice([1e-2, 1.0, 30.0], size=(n, 1))
    joint = solve_b_rows(sparse.csr_matrix(scaled), dist[scaled != 0], rho=0.7)
    for i in range(n):
        alone = solve_b_rows(sparse.csr_matrix(scaled[i:i + 1]), dist[i][scaled[i] != 0], rho=0.7)
        assert alone[2][0] == joint[2][i] and alone[1][0] == joint[1][i]
        assert np.array_equal(alone[0].toarray()[0], joint[0][[i]].toarray()[0])
    # no root in [eps, 1e4] (all weights tiny, no zero distance): theta = eps as the spec says
    C2 = np.full((3, 3), 1e-3)
    d2 = np.ones((3, 3))
    _, th2, root2 = solve_b_rows(C2, d2.ravel(), rho=1.0)
    with pytest.raises(ValueError, match="C's 9 entries"):
        solve_b_rows(C2, d2, rho=1.0)   # the distances at C's entries, not the dense matrix
    assert not root2.any() and np.all(th2 == np.finfo(float).eps)


@pytest.mark.parametrize("gamma", [0.1, 10.0])
def test_trce_identical_members_bug_on_off_same(gamma):
    members, y = _identical()
    on = get_method("trce", faithful_bug=True, gamma=gamma)
    off = get_method("trce", faithful_bug=False, gamma=gamma)
    lab_on = on.fit_predict(members, 3)
    lab_off = off.fit_predict(members, 3)
    assert same_partition(lab_on, y) and same_partition(lab_off, y)          # (T3)
    np.testing.assert_allclose(on.consensus_matrix_.toarray(), off.consensus_matrix_.toarray())  # (T4)
    S = on.consensus_matrix_
    assert S.min() >= 0
    assert connected_components(sparse.csr_matrix(S), directed=False)[0] == 3


def _object_graph(meth):
    """TRCE's learned graph at object level, from its microcluster blocks."""
    a = meth.microcluster_assignment_
    return meth.consensus_matrix_.toarray()[np.ix_(a, a)]


def test_trce_identical_members_tie_at_gamma_equal_rho():
    # Identical members: all KL losses are 0, so w = 0, C = 0, B = 0 and the S-step projects -rho/(2 gamma) distf.
    # Cluster mates sit at 0 and the other objects at exactly the simplex threshold -1/s when gamma = rho (= 1 at
    # the start): the exact tie leaves round-off-sized links between the blocks. The Laplacian still has c zero
    # eigenvalues (rank control stops), but the components merge - a property of the algorithm, kept as is.
    members, _ = _identical()
    meth = get_method("trce", gamma=1.0)
    meth.fit(members, 3)
    S = _object_graph(meth)
    y = members[:, 0]
    between = S[y[:, None] != y[None, :]]
    assert between.max() < 1e-12
    assert meth.diagnostics_["converged"]


def test_trce_faithful_bug_depends_on_last_member_only():
    members, _ = planted_ensemble(n=60, c=3, m=8, random_state=6)
    swapped = members[:, [*range(1, 8), 0]]   # the same members in another order, with another last one
    fixed = [get_method("trce", faithful_bug=False) for _ in range(2)]
    buggy = [get_method("trce", faithful_bug=True) for _ in range(2)]
    for meths in (fixed, buggy):
        meths[0].fit(members, 3)
        meths[1].fit(swapped, 3)
    # the intended sum is order invariant ...
    np.testing.assert_allclose(_object_graph(fixed[0]), _object_graph(fixed[1]), atol=1e-10)
    # ... the faithful (buggy) d2 uses only the last member, so the order matters
    assert not np.allclose(_object_graph(buggy[0]), _object_graph(buggy[1]))


def test_trce_properties_intended_sum():
    check_method_properties("trce", {"faithful_bug": False})


def test_trce_properties_faithful_bug():
    # Member order only matters through which member is last; on the planted ensemble the partition is stable.
    check_method_properties("trce", {"faithful_bug": True})


# --- CESHL ---------------------------------------------------------------------------------------------------
def test_ceshl_gradient_matches_finite_differences():
    members, _ = planted_ensemble(n=30, c=3, m=4, random_state=7)
    H0 = one_hot(members).toarray()
    rng = np.random.default_rng(2)
    H = np.clip(H0 + 0.3 * rng.random(H0.shape), 0, 1)
    w = rng.random(H0.shape[1])
    Y = np.linalg.qr(rng.standard_normal((30, 3)))[0]
    err = _fd_check(lambda x: structure_objective(x, H0, w, Y, 7.0), H, n_probe=20)   # (C1)
    assert err < 1e-6, err


def test_ceshl_trace_term_is_scale_invariant_and_at_most_c():
    # with both degrees taken from the current H, T = tr(Y^T Dv^-1/2 H W De^-1 H^T Dv^-1/2 Y) <= c and T(tH) = T(H)
    rng = np.random.default_rng(4)
    H = rng.random((25, 9)) * (rng.random((25, 9)) < 0.6)
    H[:, 0] += 0.1
    w = rng.random(9)
    Y = np.linalg.qr(rng.standard_normal((25, 3)))[0]
    trace = structure_objective(H, H, w, Y, -1.0)[0]      # rho = -1 and zero fidelity: f = T
    assert 0 <= trace <= 3 + 1e-9
    assert abs(structure_objective(0.3 * H, 0.3 * H, w, Y, -1.0)[0] - trace) < 1e-10


def test_ceshl_weight_qp_is_optimal_in_box():
    members, _ = planted_ensemble(n=60, c=3, m=10, random_state=8)
    H0 = one_hot(members).toarray()
    G = H0.T @ H0
    w0 = initial_hyperedge_weights(G, members.shape[1])
    # w0 is the mean co-association inside each hyperedge (brute force)
    CA = H0 @ H0.T / members.shape[1]
    for e in range(0, G.shape[0], 7):
        idx = H0[:, e] > 0
        assert abs(w0[e] - CA[np.ix_(idx, idx)].mean()) < 1e-12
    for lam in (1e-3, 1.0, 1e3):
        A = hyperedge_qp_matrix(G, lam)
        w = solve_hyperedge_weights(A, lam * w0)
        assert w.min() >= 0 and w.max() <= 1                                     # (C2)
        assert box_qp_kkt_residual(A, lam * w0, w) < 1e-6


def test_ceshl_identical_members():
    members, y = _identical()
    G = one_hot(members).toarray().T @ one_hot(members).toarray()
    np.testing.assert_allclose(initial_hyperedge_weights(G, members.shape[1]), 1.0)  # (C3)
    meth = get_method("ceshl")
    assert same_partition(meth.fit_predict(members, 3), y)
    assert meth.diagnostics_["hyperedge_weights_min"] > 1 - 1e-9


def test_ceshl_properties():
    check_method_properties("ceshl")


# --- SCCBG ---------------------------------------------------------------------------------------------------
def _sccbg_problem(seed=9, n=20, m=4):
    members, _ = planted_ensemble(n=n, c=2, m=m, random_state=seed)
    H0 = one_hot(members).toarray()
    A = H0.T @ H0
    rng = np.random.default_rng(seed)
    return H0, A, rng.random(H0.shape), rng.random(H0.shape), rng.random(H0.shape)


def test_sccbg_objectives_match_definitions_and_gradients():
    H0, A, S, W, dist = _sccbg_problem()
    gamma, rho, lam = 0.3, 0.8, 1.7
    # explicit per-row double sums of the spec (section 5, steps a and d)
    w_ref = s_ref = 0.0
    for i in range(H0.shape[0]):
        D = (S[i][:, None] - S[i][None, :]) ** 2
        w_ref += (np.sum(W[i] ** 2 * (S[i] - H0[i]) ** 2) + gamma * W[i] @ (A * D) @ W[i] - rho * W[i].sum())
        s_ref += (np.sum(W[i] ** 2 * (S[i] - H0[i]) ** 2) + gamma * np.sum(A * np.outer(W[i], W[i]) * D)
                  + lam * dist[i] @ S[i])
    assert abs(w_step_objective(W, S, H0, A, gamma, rho)[0] - w_ref) < 1e-9 * abs(w_ref)
    assert abs(s_step_objective(S, W, H0, A, gamma, lam, dist)[0] - s_ref) < 1e-9 * abs(s_ref)
    assert _fd_check(lambda x: w_step_objective(x, S, H0, A, gamma, rho), W) < 1e-6
    assert _fd_check(lambda x: s_step_objective(x, W, H0, A, gamma, lam, dist), S) < 1e-6


@pytest.mark.parametrize("solver", ["pg", "lbfgsb"])
def test_sccbg_s_step_stays_in_box_and_decreases(solver):
    H0, A, S, W, dist = _sccbg_problem(seed=10)
    fun = lambda x, rows=False: s_step_objective(x, W, H0, A, 0.1, 2.0, dist, per_row=rows)  # noqa: E731
    if solver == "pg":
        S_new, _, _ = box_minimize_rows(lambda x: fun(x, rows=True), S, s_step_lipschitz(W, A, 0.1), 5000, 1e-9)
    else:
        S_new, _ = _box_minimize(lambda x: fun(x, rows=True), S, 300, 1e-10)
    assert S_new.min() >= 0 and S_new.max() <= 1                    # (S1)
    assert fun(S_new)[0] <= fun(S)[0]                               # (S3)
    # convex box QP: the projected gradient vanishes at the solution
    g = fun(S_new)[1]
    assert np.abs(np.clip(S_new - g, 0, 1) - S_new).max() < 1e-5


def test_sccbg_lipschitz_bounds_cover_the_row_hessians():
    H0, A, S, W, _ = _sccbg_problem(seed=12)
    gamma = 0.2
    Ls, Lw = s_step_lipschitz(W, A, gamma), w_step_lipschitz(S, H0, A, gamma)
    for i in range(0, H0.shape[0], 5):
        D = (S[i][:, None] - S[i][None, :]) ** 2
        hess_w = 2 * np.diag((S[i] - H0[i]) ** 2) + 2 * gamma * A * D
        M = A * np.outer(W[i], W[i])
        hess_s = 2 * np.diag(W[i] ** 2) + 4 * gamma * (np.diag(M.sum(axis=1)) - M)
        assert np.abs(np.linalg.eigvalsh(hess_w)).max() <= Lw[i] + 1e-9
        assert np.linalg.eigvalsh(hess_s).max() <= Ls[i] + 1e-9


def test_sccbg_pg_rows_never_increase():
    H0, A, S, W, _ = _sccbg_problem(seed=13)
    fun = lambda x: w_step_objective(x, S, H0, A, 0.5, 0.8, per_row=True)  # noqa: E731  (non-convex step)
    start = np.clip(W, 0, 1)
    X, _, _ = box_minimize_rows(fun, start, w_step_lipschitz(S, H0, A, 0.5), 200, 1e-9)
    assert X.min() >= 0 and X.max() <= 1
    assert np.all(fun(X)[0] <= fun(start)[0] + 1e-12)


@pytest.mark.parametrize("solver", ["pg", "lbfgsb"])
def test_sccbg_identical_members(solver):
    members, y = _identical()
    meth = get_method("sccbg", qp_solver=solver)
    assert same_partition(meth.fit_predict(members, 3), y)          # (S2)
    assert meth.diagnostics_["converged"] and meth.diagnostics_["n_iter"] == 1


def test_sccbg_properties():
    check_method_properties("sccbg")


def test_connected_component_methods_recover_planted_with_other_k_allowed():
    # all three declare may_return_other_k; on a clean planted ensemble they find exactly c components
    members, y = planted_ensemble(n=60, c=3, m=10, noise_fraction=0.0, flip=0.0, random_state=11)
    for name in ("trce", "ceshl", "sccbg"):
        labels = get_method(name).fit_predict(members, 3)
        assert ari(labels, y) == 1.0, name


@pytest.mark.slow
def test_drec_properties_default_restarts():
    check_method_properties("drec")


def _ecoli_protocol(data_dir, name, params):
    from ensclust.pools import draw_ensembles, import_pool
    from ensclust.rng import derive_seed

    pool = import_pool(data_dir / "pools" / "eccms_ecoli.mat")
    c = int(np.unique(pool.y).size)
    scores = []
    for r, idx in enumerate(draw_ensembles(pool.members.shape[1], mode="randperm_stream", size=20,
                                           repetitions=20, seed=1)):
        labels = get_method(name, **params).fit_predict(pool.members[:, idx], c,
                                                        random_state=derive_seed(0, "ecoli", r, name))
        scores.append(ari(pool.y, labels))
    return float(np.mean(scores)), float(np.std(scores))


@pytest.mark.slow
def test_drec_trce_match_eccms_table4_on_ecoli(data_dir):
    # EC-CMS Table IV (ARI, Ecoli, authors' pool, randperm stream seed 1, 20 runs of M = 20):
    # DREC 0.679 +- 0.079 (best grid point lambda = 1), TRCE 0.643 +- 0.128 (best gamma = 1e-3, faithful bug).
    mean, std = _ecoli_protocol(data_dir, "drec", {"lambda": 1.0})
    assert abs(mean - 0.679) < 0.01 and abs(std - 0.079) < 0.01, (mean, std)
    mean, std = _ecoli_protocol(data_dir, "trce", {"gamma": 1e-3})
    assert abs(mean - 0.643) < 0.01 and abs(std - 0.128) < 0.01, (mean, std)


def test_drec_affinity_equals_svd_route():
    from ensclust.methods.drec import lrr_affinity

    members, _ = planted_ensemble(n=80, c=3, m=10, random_state=14)
    Xm = compute_microclusters(members).indicator()
    U, R, _ = dense_representation(Xm, 3.0)
    Uz, s, _ = np.linalg.svd(U @ R)
    r = int(np.sum(s > 1e-4 * s[0]))
    P = Uz[:, :r] * np.sqrt(s[:r])
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    np.testing.assert_allclose(lrr_affinity(U, R), (P @ P.T) ** 4, atol=1e-8)


def _dense_drec_reference(G, lam, n_steps=5):
    """The n_micro x n_micro form of DREC steps 3-4 (spec section 2): eigh of G = X^T X, dense Z, eigh(Z Z^T)."""
    n = G.shape[0]
    w, V = np.linalg.eigh(G)
    w = np.maximum(w, 0.0)
    rhs = w[:, None] * V.T
    d = np.ones(n)
    history = []
    for _ in range(n_steps):
        history.append(d.copy())
        Z = V @ (rhs / (w[:, None] + (lam / d)[None, :]))
        R = Z - np.eye(n)
        d = 0.5 / np.sqrt(np.maximum(np.einsum("ij,ij->j", R, G @ R), 0.0) + 1e-10)
    vals, Uz = np.linalg.eigh(Z @ Z.T)
    vals, Uz = vals[::-1], Uz[:, ::-1]
    r = int(np.sum(vals > 1e-8 * vals[0]))
    P = Uz[:, :r] * vals[:r] ** 0.25
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    return Z, history, (P @ P.T) ** 4


@pytest.mark.parametrize("lam", [0.1, 1.0, 3.0, 100.0])
def test_drec_low_rank_form_equals_dense_reference(lam):
    from ensclust.methods.drec import lrr_affinity

    # a noisy pool with many microclusters (n_micro > K), so G = X^T X is rank deficient
    members, _ = planted_ensemble(n=150, c=4, m=8, random_state=21, k_range=(3, 6))
    Xm = compute_microclusters(members).indicator()
    assert Xm.shape[0] > Xm.shape[1]
    G = (Xm @ Xm.T).toarray()
    Z_ref, hist_ref, L_ref = _dense_drec_reference(G, lam)
    U, R, hist = dense_representation(Xm, lam)
    Z = U @ R
    # the exact solution of the last step's systems (G + lam/d_j I) z_j = G e_j, column by column
    d = hist[-1]
    n = G.shape[0]
    Z_exact = np.column_stack([np.linalg.solve(G + lam / d[j] * np.eye(n), G[:, j]) for j in range(n)])
    # at small lam the systems are ill-conditioned (d_j up to 5e4); the factored form is then closer to the
    # exact solution than the n x n eigendecomposition, whose round-off eigenvalues of G's null space leak in
    err_fast, err_ref = np.abs(Z - Z_exact).max(), np.abs(Z_ref - Z_exact).max()
    assert err_fast <= max(err_ref, 1e-15), (err_fast, err_ref)
    if lam >= 3.0:  # well conditioned: both forms agree to round-off
        np.testing.assert_allclose(Z, Z_ref, atol=1e-12)
        for a, b in zip(hist, hist_ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10)
        np.testing.assert_allclose(lrr_affinity(U, R), L_ref, atol=1e-10)
    else:
        np.testing.assert_allclose(lrr_affinity(U, R), L_ref, atol=1e-6)

"""The factored / block forms of DREC and TRCE against plain dense object-level references (small n).

DREC's low-rank form is checked in test_robust_a.py; here: TRCE on microcluster blocks (weighted simplex
projection, block Laplacian eigenpairs by shift-invert Lanczos) against the object-level n x n iteration of
specs/baselines/robust_family.md section 3, written out densely.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from scipy.linalg import eigh
from scipy.sparse.csgraph import connected_components

from ensclust.core.labels import cluster_offsets, one_hot
from ensclust.core.microclusters import compute_microclusters
from ensclust.core.simplex import project_simplex
from ensclust.methods import get_method
from ensclust.methods._robust_graph import laplacian_smallest_weighted, rank_control, squared_distances
from ensclust.methods.trce import EPS, kl_to_graph, project_simplex_weighted, solve_b_rows
from ensclust.testing import planted_ensemble, same_partition


def _dense_trce(members, c, gamma, faithful_bug=True, max_iter=10):
    """Object-level TRCE (spec section 3, the authors' optimization.m): dense n x n B, S, distf, full eigh."""
    n, m = members.shape
    Y = one_hot(members)
    offsets = cluster_offsets(members)
    sizes = np.asarray(Y.sum(axis=0)).ravel()

    def weighted_sum(alpha):
        col_alpha = np.repeat(alpha, np.diff(offsets))
        return ((Y @ sparse.diags(1.0 / (col_alpha * sizes))) @ Y.T).toarray()

    def smallest(S):
        L = np.diag(S.sum(axis=1)) - S
        vals, vecs = eigh(L, subset_by_index=[0, c])
        return vals, vecs[:, :c]

    alpha = np.full(m, 1.0 / m)
    S = weighted_sum(np.ones(m)) / m
    vals, F = smallest(S)
    d1 = kl_to_graph(S, Y, members, offsets, sizes)
    rho, lam = 1.0, None
    history = {"rho": [], "fn1": []}
    for ii in range(1, max_iter + 1):
        d2 = m * d1[:, m - 1] / alpha[m - 1] if faithful_bug else (d1 / alpha[None, :]).sum(axis=1)
        lam = 2.0 * np.sort(d2)[min(max(n // 10, 1), n) - 1] if lam is None else lam * 1.1
        w = np.minimum(lam / np.maximum(2.0 * d2, EPS), 1.0)
        distf = squared_distances(F)
        C = weighted_sum(alpha) * (w ** 2)[:, None]
        B, _, _ = solve_b_rows(C, distf[C != 0], rho)
        S = project_simplex(B - (rho / (2.0 * gamma)) * distf)
        d1 = kl_to_graph(B, Y, members, offsets, sizes)
        S = (S + S.T) / 2.0
        F_old = F
        vals, F = smallest(S)
        score = np.sqrt(np.maximum((w ** 2) @ d1, 0.0))
        alpha = np.maximum(score / score.sum(), EPS)
        decision, rho = rank_control(vals, c, rho, history)
        if decision == "decrease":
            F = F_old
        elif decision == "stop" and ii > 1:
            break
    _, labels = connected_components(sparse.csr_matrix(S), directed=False)
    return labels, S, alpha, history


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma", [1e-3, 1e-1, 10.0])
def test_trce_blocks_equal_dense_object_level_reference(seed, gamma):
    members, _ = planted_ensemble(n=160, c=4, m=8, random_state=seed, k_range=(3, 7))
    micro = compute_microclusters(members)
    assert micro.n_micro < members.shape[0] and micro.sizes.max() > 1   # blocks with several objects
    labels_ref, S_ref, alpha_ref, hist_ref = _dense_trce(members, 4, gamma)
    meth = get_method("trce", gamma=gamma)
    labels = meth.fit_predict(members, 4)
    assert same_partition(labels, labels_ref)
    np.testing.assert_allclose(meth.diagnostics_["rho"], hist_ref["rho"])
    np.testing.assert_allclose(meth.diagnostics_["alpha"], alpha_ref, rtol=1e-9)
    assert sparse.issparse(meth.consensus_matrix_)      # the learned graph's kept entries only
    S_blocks = meth.consensus_matrix_.toarray()[np.ix_(micro.assignment, micro.assignment)]
    np.testing.assert_allclose(S_blocks, S_ref, atol=1e-10)


@pytest.mark.parametrize("n_top", [1, 3, 512])
def test_weighted_simplex_projection_equals_projection_of_expanded_rows(n_top):
    # n_top < 12: rows keeping more than n_top entries finish by Michelot's iteration, the others are exact from
    # their n_top largest entries; n_top = 512 >= 12 columns: every row from its full sorted order
    rng = np.random.default_rng(4)
    V = rng.normal(size=(30, 12)) * rng.choice([0.01, 0.3, 3.0], size=(30, 1))
    weights = rng.integers(1, 5, size=12)
    expanded = np.repeat(V, weights, axis=1)
    ref = project_simplex(expanded)
    got = project_simplex_weighted(V, weights.astype(float), n_top=n_top)
    if n_top == 3:   # both kinds of rows occur: kept columns within the 3 largest, and more
        kept_columns = np.count_nonzero(got > 0, axis=1)
        assert (kept_columns < 3).any() and (kept_columns > 3).any()
    np.testing.assert_allclose(np.repeat(got, weights, axis=1), ref, atol=1e-14)
    np.testing.assert_allclose(got @ weights, 1.0, atol=1e-12)


def test_block_laplacian_eigenpairs_equal_object_laplacian():
    rng = np.random.default_rng(5)
    weights = rng.integers(1, 4, size=40)
    # three blocks of microclusters with no edges between them (3 zero eigenvalues), sparse inside
    group = np.repeat([0, 1, 2], [15, 15, 10])
    S = rng.random((40, 40)) * (rng.random((40, 40)) < 0.3) * (group[:, None] == group[None, :])
    S = (S + S.T) / 2.0
    S += np.diag(rng.random(40))
    assign = np.repeat(np.arange(40), weights)
    S_obj = S[np.ix_(assign, assign)]
    L_obj = np.diag(S_obj.sum(axis=1)) - S_obj
    vals_ref, vecs_ref = eigh(L_obj, subset_by_index=[0, 5])
    vals, F = laplacian_smallest_weighted(S, weights.astype(float), 6)
    np.testing.assert_allclose(vals, vals_ref, atol=1e-12)
    F_obj = F[assign]
    np.testing.assert_allclose(F_obj.T @ F_obj, np.eye(6), atol=1e-10)     # unit-norm object vectors
    # same eigenspaces: the null space (3 components) and the next three eigenvectors
    for cols in (slice(0, 3), slice(3, 6)):
        P_ref = vecs_ref[:, cols] @ vecs_ref[:, cols].T
        P = F_obj[:, cols] @ F_obj[:, cols].T
        np.testing.assert_allclose(P, P_ref, atol=1e-9)


def test_trce_isolated_block_without_self_edge_is_split_into_objects():
    from ensclust.methods.trce import _object_components

    members = np.array([[0, 0], [0, 0], [1, 1], [1, 1], [2, 2]])
    micro = compute_microclusters(members)
    S = np.array([[0.5, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # block 1 has no edge at all
    labels = _object_components(S, micro)
    assert same_partition(labels, [0, 0, 1, 2, 3])


def test_block_laplacian_from_low_rank_factor_equals_dense_graph():
    # TRCE's initial graph: the mean of the base graphs, S = Q Q^T with Q = Y diag(1 / sqrt(m s_e)) (blocks)
    members, _ = planted_ensemble(n=200, c=4, m=6, random_state=8, k_range=(3, 8))
    micro = compute_microclusters(members)
    Ym = micro.indicator()
    sizes = np.asarray(one_hot(members).sum(axis=0)).ravel()
    Q = Ym @ sparse.diags(1.0 / np.sqrt(members.shape[1] * sizes))
    S = (Q @ Q.T).toarray()
    w = micro.sizes.astype(float)
    vals_ref, F_ref = laplacian_smallest_weighted(S, w, 5)
    vals, F = laplacian_smallest_weighted(None, w, 5, factor=Q)
    np.testing.assert_allclose(vals, vals_ref, atol=1e-12)
    np.testing.assert_allclose(F @ (F.T * w), F_ref @ (F_ref.T * w), atol=1e-9)   # same eigenspace


def test_block_laplacian_falls_back_to_dense_pairs_when_arpack_does_not_converge(monkeypatch):
    """A repeated eigenvalue outside the null space can exhaust ARPACK's budget (CESHL on Binalpha): the
    dense pairs next to the null space give the same eigenvalues and eigenspaces as the converged solve."""
    from scipy.sparse.linalg import ArpackNoConvergence

    import ensclust.methods._robust_graph as rg

    rng = np.random.default_rng(5)
    weights = rng.integers(1, 4, size=40).astype(float)
    group = np.repeat([0, 1, 2], [15, 15, 10])
    S = rng.random((40, 40)) * (rng.random((40, 40)) < 0.3) * (group[:, None] == group[None, :])
    S = (S + S.T) / 2.0 + np.diag(rng.random(40))
    vals_ref, F_ref = laplacian_smallest_weighted(S, weights, 6)

    def no_convergence(*args, **kwargs):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", np.zeros(0), np.zeros((40, 0)))

    monkeypatch.setattr(rg, "eigsh", no_convergence)
    vals, F = laplacian_smallest_weighted(S, weights, 6)
    np.testing.assert_allclose(vals, vals_ref, atol=1e-10)
    for cols in (slice(0, 3), slice(3, 6)):
        np.testing.assert_allclose((F[:, cols] * weights[:, None]) @ F[:, cols].T @ np.diag(weights),
                                   (F_ref[:, cols] * weights[:, None]) @ F_ref[:, cols].T @ np.diag(weights),
                                   atol=1e-9)

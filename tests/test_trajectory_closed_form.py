"""Closed-form trajectory sums of reversible walks (ECPCS's propagation, Huang et al. TSMC-S 2021, Eqs. 9-13)
against the step-by-step sums, and ECPCS-MC's partial eigensolver against the full one."""

import numpy as np
import pytest
from scipy import sparse

from ensclust.core.labels import check_members
from ensclust.core.pts import (
    propagate_similarity,
    pts_matrix,
    reversible_trajectory_sum,
    trajectory_inner_products,
)
from ensclust.methods import ecpcs
from ensclust.methods.ecpcs import cluster_jaccard
from ensclust.testing import planted_ensemble


def explicit_sum(P, T):
    """``sum_{t=1..max(T,1)} P^t (P^t)^T`` by dense powers (the authors' loop)."""
    P = np.asarray(P.toarray() if sparse.issparse(P) else P, dtype=np.float64)
    Pt, IP = P, P @ P.T
    for _ in range(max(int(T), 1) - 1):
        Pt = Pt @ P
        IP += Pt @ Pt.T
    return IP


def walk(S):
    """Row-normalised walk of a symmetric graph with zero diagonal and its reversibility weights d."""
    S = np.array(S, dtype=np.float64)
    np.fill_diagonal(S, 0.0)
    d = S.sum(axis=1)
    P = np.divide(S, d[:, None], out=np.zeros_like(S), where=d[:, None] > 0)
    return P, d


def random_graph(n, seed, n_isolated=0, density=0.6):
    rng = np.random.default_rng(seed)
    S = rng.random((n, n)) * (rng.random((n, n)) < density)
    S = np.triu(S, 1)
    S = S + S.T
    iso = rng.choice(n, n_isolated, replace=False)
    S[iso, :] = 0.0
    S[:, iso] = 0.0
    return S, iso


def assert_close(IP, expected, rtol=1e-10):
    scale = np.abs(expected).max()
    assert np.allclose(IP, expected, rtol=rtol, atol=rtol * 1e-3 * scale)


@pytest.mark.parametrize("T", [0, 1, 2, 7, 20])
@pytest.mark.parametrize("seed", [0, 1])
def test_closed_form_equals_step_by_step_on_random_graphs(T, seed):
    S, iso = random_graph(60, seed, n_isolated=4)
    P, d = walk(S)
    lam = np.linalg.eigvalsh(S / np.sqrt(np.outer(d + (d == 0), d + (d == 0))))
    assert lam.min() < -0.1                           # negative eigenvalues present
    IP = reversible_trajectory_sum(sparse.csr_matrix(P), T, d)
    assert np.array_equal(IP, IP.T)
    assert np.all(IP[iso] == 0) and np.all(IP[:, iso] == 0)
    assert_close(IP, explicit_sum(P, T))
    # the dense branch of trajectory_inner_products is this closed form
    assert_close(trajectory_inner_products(sparse.csr_matrix(P), T, stationary=d), explicit_sum(P, T))


@pytest.mark.parametrize("T", [1, 20, 101])
def test_closed_form_at_eigenvalues_plus_minus_one(T):
    # two components (eigenvalue 1 twice) one of them bipartite (eigenvalue -1: x = lambda_a lambda_b = -1 and
    # x = 1 from (-1)(-1)), plus an isolated node: the geometric sums at |x| = 1 are T or 0 / -1
    rng = np.random.default_rng(3)
    B = rng.random((5, 7))
    S = np.zeros((21, 21))
    S[:5, 5:12] = B
    S[5:12, :5] = B.T
    C = rng.random((8, 8))
    S[12:20, 12:20] = C + C.T
    np.fill_diagonal(S, 0.0)
    P, d = walk(S)
    lam = np.linalg.eigvalsh(S[:20, :20] / np.sqrt(np.outer(d[:20], d[:20])))
    assert np.isclose(lam.min(), -1) and np.sum(np.isclose(lam, 1)) == 2
    IP = reversible_trajectory_sum(P, T, d)
    assert_close(IP, explicit_sum(P, T))
    assert np.all(IP[20] == 0)


def test_closed_form_with_size_weights_pts():
    # PTS's walk: columns weighted by sizes z, pi = (S z) z; a dense elite graph takes the closed form
    members, _ = planted_ensemble(n=120, c=3, m=8, random_state=2, k_range=(2, 5))
    from ensclust.core.microclusters import compute_microclusters, microcluster_coassociation

    micro = compute_microclusters(check_members(members))
    mca = microcluster_coassociation(micro)
    PTS, isolated = pts_matrix(mca, micro.sizes, 10, 6)
    from ensclust.core.pts import elite_neighbor_graph, transition_matrix

    P, _ = transition_matrix(elite_neighbor_graph(mca, 10), micro.sizes)
    assert P.nnz > 0.05 * P.shape[0] ** 2                # the dense branch
    E = explicit_sum(P, 6)
    dd = np.sqrt(np.diag(E))
    ok = dd > 0
    expected = E[np.ix_(ok, ok)] / np.outer(dd[ok], dd[ok])
    assert np.allclose(PTS[np.ix_(ok, ok)], expected, rtol=1e-10, atol=1e-13)


def test_propagation_on_ecpcs_cluster_graph_equals_step_by_step():
    members, _ = planted_ensemble(n=400, c=5, m=20, random_state=4, k_range=(3, 12))
    J = cluster_jaccard(check_members(members))
    P, d = walk(J)
    assert P.shape[0] > 100
    IP = reversible_trajectory_sum(P, 20, d)
    E = explicit_sum(P, 20)
    assert_close(IP, E)
    dd = np.sqrt(np.diag(E))
    Z = propagate_similarity(J, 20)
    assert np.allclose(Z, E / np.outer(dd, dd), rtol=1e-11, atol=1e-14)
    assert np.allclose(np.diag(Z), 1.0, rtol=0, atol=1e-13)


def test_ncut_meta_partial_eigensolver_matches_full(monkeypatch):
    # the embedding handed to the discretisation: top n_groups eigenvectors by the partial solver, with the
    # same norm sqrt(n) and non-positive first entries as from the full decomposition
    seen = []
    monkeypatch.setattr(ecpcs, "discretize", lambda V, **kw: seen.append(V) or np.zeros(len(V), dtype=int))
    members, _ = planted_ensemble(n=300, c=4, m=10, random_state=5, k_range=(3, 9))
    W = propagate_similarity(cluster_jaccard(check_members(members)), 20)
    ecpcs.ncut_meta(W, 4)
    V = seen[0]
    # reference: the full decomposition, as before
    W2 = np.array(W)
    W2[W2 < 1e-6] = 0.0
    n = len(W2)
    abs_sum = np.abs(W2).sum(axis=1)
    d = abs_sum + 1.0
    W2[np.diag_indices(n)] += 0.5 * (abs_sum - W2.sum(axis=1)) + 0.5
    dr = 1.0 / np.sqrt(d + np.finfo(float).eps)
    Pm = W2 * dr[:, None] * dr[None, :]
    lam, vecs = np.linalg.eigh((Pm + Pm.T) / 2.0)
    assert lam[-4] - lam[-5] > 1e-3                       # the subspace is well separated
    R = vecs[:, ::-1][:, :4] * dr[:, None]
    R *= np.sqrt(n) / np.linalg.norm(R, axis=0, keepdims=True)
    R *= -np.sign(R[0])[None, :]
    assert V.shape == R.shape
    assert np.allclose(V, R, atol=1e-9)

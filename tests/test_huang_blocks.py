"""Building blocks of the Huang family: microclusters, PTS, Tcut, ECPCS propagation/ECA
(specs/baselines/huang_family.md oracles P1-P6, T1-T2, E1-E5)."""

import numpy as np
import pytest

from ensclust.core.coassoc import coassociation
from ensclust.core.labels import check_members, cluster_offsets, one_hot
from ensclust.core.microclusters import (
    compute_microclusters,
    expand_condensed_distance,
    microcluster_coassociation,
)
from ensclust.core.pts import (
    default_k_t,
    elite_neighbor_graph,
    probability_trajectory_similarity,
    propagate_similarity,
    pts_matrix,
    trajectory_inner_products,
    transition_matrix,
)
from ensclust.core.spectral import bipartite_embedding
from ensclust.core.tcut import tcut, tcut_embedding
from ensclust.methods.ecpcs import cluster_jaccard, clustering_owner, eca_micro, ncut_meta
from ensclust.metrics import ari
from ensclust.testing import planted_ensemble


def random_members(n=80, m=6, k=4, seed=0):
    return check_members(np.random.default_rng(seed).integers(0, k, size=(n, m)))


def test_microclusters_small_example():
    # P1
    micro = compute_microclusters(check_members(np.array([[1, 1], [1, 1], [1, 2], [2, 2]])))
    assert micro.members.tolist() == [[0, 0], [0, 1], [1, 1]]
    assert micro.sizes.tolist() == [2, 1, 1]
    assert micro.assignment.tolist() == [0, 0, 1, 2]
    assert micro.to_objects(np.array([5, 6, 7])).tolist() == [5, 5, 6, 7]


def test_mca_equals_object_ca_and_indicator_expands():
    # P2 (Theorem 1) and the indicator of the microclusters expands to the object one-hot matrix
    members = random_members(n=60, m=3, k=3, seed=1)
    micro = compute_microclusters(members)
    assert micro.n_micro < 60
    mca = microcluster_coassociation(micro)
    ca = coassociation(members, dtype=np.float64)
    a = micro.assignment
    assert np.allclose(mca[np.ix_(a, a)][~np.eye(60, dtype=bool)], ca[~np.eye(60, dtype=bool)], atol=1e-15)
    assert (micro.indicator()[a] != one_hot(members)).nnz == 0
    d = expand_condensed_distance(mca, a, block=7)
    assert np.allclose(d, 1 - mca[np.ix_(a, a)][np.triu_indices(60, 1)], atol=0)


def test_elite_graph_and_transition():
    # P3, P4
    rng = np.random.default_rng(2)
    S = rng.random((30, 30))
    S = np.round((S + S.T) / 2, 1)        # many ties
    np.fill_diagonal(S, 1)
    K = 4
    G = elite_neighbor_graph(S, K, block=8)
    assert (G != G.T).nnz == 0
    assert G.diagonal().sum() == 0
    D = S.copy()
    np.fill_diagonal(D, 0)
    for i in range(30):
        kept = G[i].toarray().ravel()
        thr = np.sort(D[i])[30 - K]
        # every entry >= the K-th largest is kept (ties included), and the row keeps at least K links
        assert np.all(kept[D[i] >= thr] == D[i][D[i] >= thr])
        assert np.count_nonzero(kept) >= K
    sizes = rng.integers(1, 5, 30)
    P, iso = transition_matrix(G, sizes)
    assert not iso.any()
    assert np.allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0)
    # size weighting: P_ij proportional to S_ij * size_j
    i, j = G[0].indices[:2]
    assert P[0, i] / P[0, j] == pytest.approx(G[0, i] * sizes[i] / (G[0, j] * sizes[j]))


def test_trajectory_recurrence_equals_explicit_concatenation():
    # P6: the fast accumulation equals the cosine of concatenated trajectories [P, P^2, ..., P^T]
    members, _ = planted_ensemble(n=90, c=3, m=10, random_state=3)
    res = probability_trajectory_similarity(check_members(members), 5, 6)
    micro = res.micro
    G = elite_neighbor_graph(res.mca, 5)
    P, iso = transition_matrix(G, micro.sizes)
    Pd = P.toarray()
    blocks, cur = [], np.eye(len(Pd))
    for _ in range(6):
        cur = cur @ Pd
        blocks.append(cur)
    traj = np.hstack(blocks)
    norms = np.linalg.norm(traj, axis=1)
    expected = (traj @ traj.T) / np.outer(norms, norms)
    assert np.allclose(res.similarity, expected, atol=1e-10)
    # P4: symmetric, unit diagonal, in [0, 1]
    S = res.similarity
    assert np.allclose(S, S.T, atol=1e-14)
    assert np.allclose(np.diag(S), 1.0)
    assert S.min() >= 0 and S.max() <= 1 + 1e-12
    # float32 trajectories agree to ~1e-6
    S32, _ = pts_matrix(res.mca, micro.sizes, 5, 6, dtype=np.float32)
    assert np.abs(S32 - S).max() < 1e-5
    # T <= 1 gives P P^T (the code's loop adds nothing)
    assert np.allclose(trajectory_inner_products(P, 0), (P @ P.T).toarray())


def test_default_k_t_rules_and_isolated():
    assert default_k_t(3000, "code") == (20, 20)
    assert default_k_t(3000, "paper") == (27, 27)
    assert default_k_t(3, "code") == (0, 0)
    # identical members: microclusters share no cluster -> all isolated -> rows/columns 1e-20 (code)
    y = np.repeat([0, 1, 2], 4)
    res = probability_trajectory_similarity(check_members(np.column_stack([y] * 5)))
    assert res.micro.n_micro == 3 and res.isolated.all()
    assert np.all(res.similarity == 1e-20)


def test_tcut_recovers_copies_and_matches_svd():
    # T1: one-hot of m copies of a k-partition -> the partition
    y = np.repeat([0, 1, 2, 3], 10)
    B = one_hot(check_members(np.column_stack([y] * 5)))
    assert ari(tcut(B, 4, random_state=0), y) == 1.0
    # T2: unit weights -> F = U_k Sigma_k / sqrt(m) up to column signs (same subspace as the SVD embedding)
    members = random_members(n=70, m=5, k=4, seed=4)
    B = one_hot(members)
    F = tcut_embedding(B, 3)
    s = np.asarray(B.sum(axis=0)).ravel()
    Ahat = B.toarray() / np.sqrt(s)[None, :] / np.sqrt(5)
    U, sig, _ = np.linalg.svd(Ahat, full_matrices=False)
    expected = U[:, :3] * sig[:3] / np.sqrt(5)
    assert np.allclose(np.abs(F), np.abs(expected), atol=1e-10)
    # the shared bipartite embedding spans the same space (row-normalised)
    E = bipartite_embedding(B, 3, normalize_rows=False)
    assert np.allclose(np.abs(E), np.abs(U[:, :3]), atol=1e-8)
    with pytest.raises(ValueError):
        tcut_embedding(B, B.shape[1] + 1)


def test_ecpcs_jaccard_propagation_and_eca():
    members = random_members(n=50, m=4, k=3, seed=5)
    J = cluster_jaccard(members)
    owner = clustering_owner(members)
    # E1
    assert np.allclose(J, J.T) and np.all(np.diag(J) == 1)
    same = owner[:, None] == owner[None, :]
    assert np.all(J[same & ~np.eye(len(J), dtype=bool)] == 0)
    # E2
    Z = propagate_similarity(J, 20)
    assert np.allclose(Z, Z.T, atol=1e-13) and np.allclose(np.diag(Z), 1)
    assert Z.min() >= 0 and Z.max() <= 1 + 1e-12
    # E5: matrix form equals the per-clustering loop sum_q Z[bcs_q, bcs_q] / M; E3: ECA >= CA
    micro = compute_microclusters(members)
    E = eca_micro(members, Z, micro)[np.ix_(micro.assignment, micro.assignment)]
    Zd = Z.copy()
    np.fill_diagonal(Zd, 1)
    off = cluster_offsets(members)
    loop = sum(Zd[np.ix_(members[:, q] + off[q], members[:, q] + off[q])] for q in range(4)) / 4
    assert np.allclose(E, loop, atol=1e-12)
    assert np.all(E >= coassociation(members, dtype=np.float64) - 1e-12)
    # isolated clusters (no links) get zero rows/columns
    Ji = np.eye(4)
    Ji[0, 1] = Ji[1, 0] = 0.5
    Zi = propagate_similarity(Ji, 3)
    assert np.all(Zi[2] == 0) and np.all(Zi[:, 3] == 0) and Zi[0, 1] == pytest.approx(0.0)


def test_ncut_meta_recovers_components():
    # N1: block-diagonal affinity of equal degrees -> the blocks
    W = np.kron(np.eye(3), np.ones((4, 4)))
    labels = ncut_meta(W, 3, random_state=0)
    assert ari(labels, np.repeat([0, 1, 2], 4)) == 1.0


def test_weighted_average_linkage_equals_scipy_on_duplicated_points():
    from scipy.cluster.hierarchy import linkage

    from ensclust.core.microclusters import weighted_average_linkage

    rng = np.random.default_rng(0)
    X = rng.random((60, 4))
    sizes = rng.integers(1, 4, 60)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    Xo = np.repeat(X, sizes, axis=0)
    Do = np.sqrt(((Xo[:, None] - Xo[None]) ** 2).sum(-1))
    Zo = linkage(Do[np.triu_indices(len(Xo), 1)], "average")
    merges = weighted_average_linkage(D.copy(), sizes)
    # duplicates merge at height 0 first; the remaining heights are the weighted UPGMA heights
    assert np.allclose(np.sort(Zo[:, 2])[-59:], np.sort(merges[:, 2]), atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_microcluster_hac_equals_object_hac(seed):
    from scipy import sparse

    from ensclust.core.hierarchy import hac_labels
    from ensclust.core.lwca import eci, lwca_condensed_distance
    from ensclust.core.microclusters import microcluster_average_link_labels

    members, _ = planted_ensemble(n=150, c=3, m=8, random_state=seed, k_range=(3, 8))
    P = check_members(members)
    w = eci(P)
    micro = compute_microclusters(P)
    Bm = micro.indicator()
    S = (Bm @ sparse.diags(w / P.shape[1]) @ Bm.T).toarray()
    d = lwca_condensed_distance(P, cluster_weights=w)
    for k in (2, 3, 6, micro.n_micro // 2):
        a = microcluster_average_link_labels(S, micro, k)
        assert len(np.unique(a)) == k
        assert ari(a, hac_labels(distance=d, n_clusters=k)) == 1.0
    # k above the number of microclusters splits microclusters and still returns exactly k
    assert len(np.unique(microcluster_average_link_labels(S, micro, micro.n_micro + 2))) == micro.n_micro + 2


def test_tcut_dense_equals_sparse_and_auto_dtype():
    members = random_members(n=70, m=5, k=4, seed=8)
    C = one_hot(members) @ np.diag(np.linspace(0.2, 1, one_hot(members).shape[1]))
    F_dense = tcut_embedding(np.asarray(C), 3)
    from scipy import sparse

    F_sparse = tcut_embedding(sparse.csr_matrix(C), 3)
    assert np.allclose(np.abs(F_dense), np.abs(F_sparse), atol=1e-12)
    from ensclust.core import pts

    res = probability_trajectory_similarity(members, dtype="auto")
    assert res.similarity.dtype == (np.float32 if res.micro.n_micro > pts.AUTO_FLOAT32_ABOVE else np.float64)


def _explicit_trajectory_sum(P, n_steps):
    """The definition (Def. 9): sum_{t=1..T} P^t (P^t)^T with dense powers."""
    Pd = P.toarray()
    cur, out = np.eye(len(Pd)), np.zeros_like(Pd)
    for _ in range(max(n_steps, 1)):
        cur = cur @ Pd
        out += cur @ cur.T
    return out


def _walk_with_isolated(seed=6):
    # a planted ensemble plus two objects with labels of their own in every member: isolated microclusters
    members, _ = planted_ensemble(n=300, c=4, m=10, random_state=seed, k_range=(4, 12))
    members = np.vstack([members, members.max(axis=0) + 1, members.max(axis=0) + 2])
    res = probability_trajectory_similarity(check_members(members), 5, 1)
    graph = elite_neighbor_graph(res.mca, 5)
    P, isolated = transition_matrix(graph, res.micro.sizes)
    z = res.micro.sizes.astype(np.float64)
    return P, isolated, (graph @ z) * z


def test_spectral_tail_equals_explicit_trajectory_sum(monkeypatch):
    # the closed-form late steps on the slow eigenvectors (Notes of trajectory_inner_products) against the
    # explicit dense powers, with the cost gate lifted so that the split is used on a small walk
    from ensclust.core import pts

    monkeypatch.setattr(pts, "SPECTRAL_TAIL_MIN_FLOP", 0.0)
    P, isolated, stationary = _walk_with_isolated()
    assert isolated.sum() == 2 and np.all(stationary[isolated] == 0)
    T = 40
    expected = _explicit_trajectory_sum(P, T)
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 2e-6)):
        split = pts._slow_mode_tail(P, T, stationary, np.finfo(dtype).eps)
        assert split is not None and 1 <= split[0] < T        # the tail replaces exact steps
        IP = trajectory_inner_products(P, T, dtype=dtype, stationary=stationary)
        assert IP.dtype == dtype and np.array_equal(IP, IP.T)
        assert np.abs(IP - expected).max() <= rtol * np.abs(expected).max()
        assert np.all(IP[isolated] == 0) and np.all(IP[:, isolated] == 0)
    # without the weights every step is a product; same sums
    assert np.allclose(trajectory_inner_products(P, T), expected, rtol=0, atol=1e-12 * np.abs(expected).max())


def test_walk_step_and_symmetrize_blocks():
    from ensclust.core import pts
    from ensclust.core.dense import symmetrize_inplace

    P, _, _ = _walk_with_isolated(seed=7)
    G = (P @ P.T).toarray()
    for block in (7, 64, 1000):
        assert np.allclose(pts._walk_step(P, G, block=block), (P @ G @ P.T), rtol=0, atol=1e-15)
        X = np.random.default_rng(block).random((G.shape[0], G.shape[0]))
        Y = X.copy()
        symmetrize_inplace(Y, block=block)
        assert np.array_equal(Y, Y.T) and np.allclose(Y, (X + X.T) / 2, rtol=0, atol=1e-15)


@pytest.mark.parametrize("power", [1, 2, 3, 4, 5, 7, 8])
def test_power_inplace_matches_numpy_power(power):
    from ensclust.core.dense import power_inplace

    X = np.random.default_rng(power).uniform(-1.0, 1.0, size=(9, 11))
    X[0, :3] = [0.0, 1e-90, -1e-40]  # zeros and values whose powers underflow
    Y = X.copy()
    out = power_inplace(Y, power)
    assert out is Y
    np.testing.assert_allclose(Y, X**power, rtol=8 * np.finfo(float).eps, atol=1e-300)
    assert np.array_equal(np.sign(Y), np.sign(X**power))


@pytest.mark.parametrize("bad", [0, -2, 2.5])
def test_power_inplace_rejects_non_positive_integer_powers(bad):
    from ensclust.core.dense import power_inplace

    with pytest.raises(ValueError):
        power_inplace(np.ones((2, 2)), bad)

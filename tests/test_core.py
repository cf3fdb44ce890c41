import numpy as np
import pytest
from scipy import sparse
from scipy.cluster.hierarchy import cut_tree, fcluster, linkage

from ensclust.core.coassoc import coassociation
from ensclust.core.hierarchy import condensed_distance, cut_exactly, hac_labels
from ensclust.core.labels import check_members, one_hot
from ensclust.core.spectral import bipartite_embedding, discretize, spectral_clustering, spectral_embedding
from ensclust.errors import UserError
from ensclust.testing import planted_ensemble, same_partition


def test_coassociation_hand_example():
    members = check_members(np.array([[0, 0], [0, 0], [1, 0], [1, 1]]))
    A = coassociation(members, dtype=np.float64)
    expected = [[1, 1, 0.5, 0], [1, 1, 0.5, 0], [0.5, 0.5, 1, 0.5], [0, 0, 0.5, 1]]
    np.testing.assert_allclose(A, expected)
    assert np.allclose(A, A.T) and np.all(np.diag(A) == 1)


def test_coassociation_float32_is_multiple_of_one_over_m():
    members, _ = planted_ensemble(n=50, m=7, random_state=3)
    A = coassociation(check_members(members))
    assert A.dtype == np.float32
    np.testing.assert_allclose(A * 7, np.round(A * 7), atol=1e-5)


def test_weighted_coassociation_equal_weights_is_plain():
    members = check_members(planted_ensemble(n=40, m=5, random_state=1)[0])
    np.testing.assert_allclose(coassociation(members, weights=np.ones(5)), coassociation(members), atol=1e-6)


def test_one_hot_layout():
    members = check_members(np.array([[5, 1], [7, 1], [5, 0]]))
    B = one_hot(members).toarray()
    np.testing.assert_array_equal(B, [[1, 0, 0, 1], [0, 1, 0, 1], [1, 0, 1, 0]])


def test_check_members_errors():
    with pytest.raises(UserError):
        check_members(np.array([[0.5, 1.0]]))
    with pytest.raises(UserError):
        check_members(np.array([[np.nan, 1.0]]))
    with pytest.raises(UserError):
        check_members(np.zeros((3, 2), int), n_clusters=4)


def test_cut_exactly_gives_k_clusters_where_fcluster_does_not():
    # Co-association distances tie: fcluster by height returns fewer clusters than asked.
    members = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1], [1, 1, 1], [1, 1, 1], [1, 2, 2],
                        [2, 2, 2], [2, 2, 2], [2, 1, 2], [3, 3, 3], [3, 3, 3], [3, 3, 0]])
    A = coassociation(check_members(members), dtype=np.float64)
    Z = linkage(condensed_distance(A), "average")
    for k in range(1, 13):
        ours = cut_exactly(Z, k)
        assert len(np.unique(ours)) == k
        assert same_partition(ours, _replay_merges(Z, k))
    assert any(len(np.unique(fcluster(Z, k, "maxclust"))) < k for k in range(2, 12))


def _replay_merges(Z, k):
    """Reference: apply the first n-k merges of Z literally, with Python sets."""
    n = Z.shape[0] + 1
    nodes = {i: {i} for i in range(n)}
    for i in range(n - k):
        nodes[n + i] = nodes.pop(int(Z[i, 0])) | nodes.pop(int(Z[i, 1]))
    labels = np.empty(n, int)
    for lab, members in enumerate(nodes.values()):
        labels[list(members)] = lab
    return labels


def test_scipy_cut_tree_is_wrong_on_tied_linkage():
    # The baselines spec recommends cut_tree; on this tied average-linkage tree cut_tree(k=6) joins {5,6,7}
    # although the first 6 merges never join 5 with {6,7} (that is merge 7). cut_exactly follows the merges.
    members = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1], [1, 1, 1], [1, 1, 1], [1, 2, 2],
                        [2, 2, 2], [2, 2, 2], [2, 1, 2], [3, 3, 3], [3, 3, 3], [3, 3, 0]])
    Z = linkage(condensed_distance(coassociation(check_members(members), dtype=np.float64)), "average")
    assert same_partition(cut_exactly(Z, 6), _replay_merges(Z, 6))
    assert not same_partition(cut_tree(Z, n_clusters=6).ravel(), _replay_merges(Z, 6))


def test_condensed_matches_dense_squareform():
    from scipy.spatial.distance import squareform

    members = check_members(planted_ensemble(n=60, m=6, random_state=2)[0])
    A = coassociation(members, dtype=np.float64)
    D = 1 - A
    np.fill_diagonal(D, 0)
    np.testing.assert_array_equal(condensed_distance(A, block=7), squareform(D, checks=False))


def test_hac_tie_regression_coassociation_md_O3():
    # specs/baselines/coassociation.md O3: the tie at 0.5 is broken by SciPy's NN-chain order;
    # pinned here so a change in the tie rule is noticed.
    members = np.array([[0, 0], [0, 0], [1, 0], [1, 1]])
    A = coassociation(check_members(members), dtype=np.float64)
    assert hac_labels(A, 2, linkage="average").tolist() == [0, 0, 0, 1]


def test_spectral_recovers_blocks():
    members, y = planted_ensemble(n=90, c=3, m=15, noise_fraction=0.2, random_state=0)
    A = coassociation(check_members(members), dtype=np.float64)
    for assign in ("kmeans", "discretize"):
        assert same_partition(spectral_clustering(A, 3, random_state=0, assign=assign), y)
    V = spectral_embedding(A, 3, random_state=0)
    assert V.shape == (90, 3)
    assert same_partition(discretize(V, random_state=1), y)


def test_bipartite_embedding_separates_planted_clusters():
    from ensclust.core.spectral import kmeans_labels

    members, y = planted_ensemble(n=90, c=3, m=15, noise_fraction=0.2, random_state=4)
    B = one_hot(check_members(members))
    U = bipartite_embedding(B, 3, random_state=0)
    assert same_partition(kmeans_labels(U, 3, random_state=0), y)


def test_bipartite_embedding_gram_route_spans_svd_subspace():
    from ensclust.core.spectral import _inv_sqrt

    members, _ = planted_ensemble(n=200, c=4, m=8, noise_fraction=0.2, random_state=9)
    B = one_hot(check_members(members))
    U = bipartite_embedding(B, 4, random_state=0, normalize_rows=False)
    Bd = B.toarray()
    Bn = Bd * _inv_sqrt(Bd.sum(1))[:, None] * _inv_sqrt(Bd.sum(0))[None, :]
    ref = np.linalg.svd(Bn, full_matrices=False)[0][:, :4]
    np.testing.assert_allclose(U @ U.T, ref @ ref.T, atol=1e-8)


def test_cut_below_tied_height_gives_more_clusters_at_a_tie_only():
    from ensclust.core.hierarchy import cut_below_tied_height

    # heights 0.1, 0.1, 0.5: for k = 3 the cut falls at the tied height 0.1 -> both merges undone, 4 clusters
    D = np.array([[0, .1, .5, .5], [.1, 0, .5, .5], [.5, .5, 0, .1], [.5, .5, .1, 0]])
    Z = linkage(D[np.triu_indices(4, 1)], "complete")
    assert len(np.unique(cut_exactly(Z, 3))) == 3
    assert cut_below_tied_height(Z, 3).tolist() == [0, 1, 2, 3]
    # no tie at the cut height (k = 2, k = 4, k = 1): identical to the exact cut
    for k in (1, 2, 4):
        assert cut_below_tied_height(Z, k).tolist() == cut_exactly(Z, k).tolist()
    dvec = D[np.triu_indices(4, 1)]
    assert len(np.unique(hac_labels(distance=dvec, n_clusters=3, linkage="single", cut="code"))) == 4
    with pytest.raises(ValueError):
        hac_labels(distance=dvec, n_clusters=3, cut="fcluster")


def test_cut_below_tied_height_equals_exact_cut_without_ties():
    from ensclust.core.hierarchy import cut_below_tied_height

    rng = np.random.default_rng(0)
    d = rng.random(45)                      # 10 points, distinct distances: no tied heights
    for method in ("single", "complete", "average"):
        Z = linkage(d, method)
        for k in range(1, 11):
            assert cut_below_tied_height(Z, k).tolist() == cut_exactly(Z, k).tolist()


def _near_disconnected_blocks(rng, n_blocks=12):
    """Dense affinity of nearly disconnected blocks: its top eigenvalues lie within ~1e-9 of 1 (DREC on LS at
    lambda 0.1), where ARPACK stalled."""
    sizes = rng.integers(200, 240, size=n_blocks)
    n = int(sizes.sum())
    W = np.full((n, n), 1e-12)
    start = 0
    for s in sizes:
        block = rng.uniform(0.5, 1.0, size=(s, s))
        W[start:start + s, start:start + s] = (block + block.T) / 2
        start += s
    return W


def _same_subspace(U, V, atol=1e-8):
    # orthonormal bases of one subspace: the projections agree
    return np.abs(U @ (U.T @ V) - V).max() < atol


def test_dense_top_eigvecs_converge_on_a_near_degenerate_eigenspace(monkeypatch):
    """A dense input on which Lanczos does not converge within about a Cholesky's worth of restarts goes to the
    shifted block inverse iteration: on nearly disconnected blocks it returns orthonormal vectors of the
    (near-)unit eigenspace LAPACK's subset solver finds, and leaves the caller's random stream where drawing
    one start vector leaves it."""
    from scipy.linalg import eigh

    import ensclust.core.spectral as spectral

    block_calls = []
    real = spectral.top_eigenpairs_dense
    monkeypatch.setattr(spectral, "top_eigenpairs_dense", lambda *a, **kw: block_calls.append(1) or real(*a, **kw))
    monkeypatch.setattr(spectral, "ARPACK_DENSE_RESTARTS", 1)   # this small case converges in a few restarts
    W = _near_disconnected_blocks(np.random.default_rng(0))
    n = W.shape[0]
    assert n > spectral._DENSE_LIMIT
    rng = np.random.default_rng(7)
    V = spectral.spectral_embedding(W, 6, random_state=rng, normalize_rows=False)
    assert block_calls == [1]
    after = rng.standard_normal(3)
    expected = np.random.default_rng(7)
    expected.standard_normal(n)
    assert np.array_equal(after, expected.standard_normal(3))
    M = spectral.normalized_affinity(W)
    assert np.abs(M @ V - V).max() < 1e-8            # all six in the (near-)unit eigenspace
    assert np.allclose(V.T @ V, np.eye(6), atol=1e-8)
    # twelve blocks: twelve eigenvalues within ~1e-9 of 1, any six of their directions are a right answer;
    # ours lie in the span of LAPACK's twelve
    _, exact = eigh(M, subset_by_index=[n - 12, n - 1])
    assert _same_subspace(exact, V)


def test_dense_top_eigvecs_keep_a_fast_lanczos_result(monkeypatch):
    """A well separated top (a few restarts) stays ARPACK's result, bit for bit: no block solve."""
    from scipy.sparse.linalg import eigsh

    import ensclust.core.spectral as spectral

    block_calls = []
    monkeypatch.setattr(spectral, "top_eigenpairs_dense", lambda *a, **kw: block_calls.append(1))
    rng = np.random.default_rng(1)
    n, k = 2700, 4
    labels = rng.integers(0, k, size=n)
    W = np.where(labels[:, None] == labels[None, :], 1.0, 0.05) + rng.uniform(0, 0.01, (n, n))
    W = (W + W.T) / 2
    V = spectral._top_eigvecs(spectral.normalized_affinity(W), k, np.random.default_rng(2))
    assert block_calls == []
    vals, ref = eigsh(spectral.normalized_affinity(W), k=k, which="LA",
                      v0=np.random.default_rng(2).standard_normal(n), maxiter=spectral.ARPACK_DENSE_RESTARTS)
    assert np.array_equal(V, ref[:, np.argsort(vals)[::-1]])


def test_dense_top_eigvecs_match_lapack_on_a_separated_spectrum():
    """Distinct eigenvalues: the same eigenvectors as LAPACK (up to sign) and the same values, also when the
    spectrum reaches above 1 (not a normalised affinity: the shift moves above ARPACK's largest value)."""
    from scipy.linalg import eigh

    import ensclust.core.spectral as spectral

    rng = np.random.default_rng(3)
    n, k = 600, 5
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.concatenate([[0.99, 0.95, 0.9, 0.85, 0.8], rng.uniform(-0.5, 0.7, n - 5)])
    for scale in (1.0, 3.0):                          # spectrum in [-1, 1], then up to 2.97
        M = (Q * (scale * lam)) @ Q.T
        vals, vecs = spectral.top_eigenpairs_dense(M, k, rng.standard_normal(n))
        ref_vals, ref = eigh(M, subset_by_index=[n - k, n - 1])
        assert np.allclose(vals, scale * lam[:k], atol=1e-12)
        assert np.allclose(vals, ref_vals[::-1], atol=1e-12)
        assert np.allclose(np.abs(np.sum(vecs * ref[:, ::-1], axis=0)), 1.0, atol=1e-10)


def test_spectral_embedding_of_a_stalling_sparse_graph_falls_back_to_the_dense_solver(monkeypatch):
    """A sparse input whose ARPACK call exhausts its budget is densified and solved by the block iteration;
    a sparse call that converges within the budget is ARPACK's."""
    import ensclust.core.spectral as spectral

    W = sparse.csr_matrix(_near_disconnected_blocks(np.random.default_rng(0)))
    dense_calls = []
    real = spectral.top_eigenpairs_dense
    monkeypatch.setattr(spectral, "top_eigenpairs_dense", lambda *a, **kw: dense_calls.append(1) or real(*a, **kw))
    monkeypatch.setattr(spectral, "ARPACK_MAXITER", 2)
    V = spectral.spectral_embedding(W, 6, random_state=0, normalize_rows=False)
    assert dense_calls == [1]
    M = spectral.normalized_affinity(W)
    assert np.abs(M @ V - V).max() < 1e-8
    monkeypatch.setattr(spectral, "ARPACK_MAXITER", 1000)
    W2 = sparse.csr_matrix(W.toarray() + 0.05)
    spectral.spectral_embedding(W2, 6, random_state=0, normalize_rows=False)
    assert dense_calls == [1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh_significant_returns_exactly_the_kept_pairs(dtype):
    """Only the eigenpairs with |lambda| > rel_tol max|lambda| (both ends of an indefinite spectrum), those of
    LAPACK's full eigh: same values, same projector onto the kept space; a zero matrix keeps nothing."""
    from scipy import linalg

    import ensclust.core.spectral as spectral

    rng = np.random.default_rng(0)
    n = 80
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.concatenate([rng.uniform(1, 10, 12), -rng.uniform(1, 10, 5), 10.0 ** rng.uniform(-12, -6, n - 17)])
    A = ((Q * lam) @ Q.T).astype(dtype)
    vals, vecs = spectral.eigh_significant(A, 1e-4)
    full_vals, full_vecs = linalg.eigh(A.astype(np.float64))
    keep = np.abs(full_vals) > 1e-4 * np.abs(full_vals).max()
    assert vals.dtype == dtype and vecs.shape == (n, keep.sum()) == (n, 17)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.sort(vals), full_vals[keep], rtol=tol)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(17), atol=tol)
    P, P_ref = vecs @ vecs.T, full_vecs[:, keep] @ full_vecs[:, keep].T
    np.testing.assert_allclose(P, P_ref, atol=10 * tol)
    empty_vals, empty_vecs = spectral.eigh_significant(np.zeros((5, 5), dtype=dtype), 1e-4)
    assert empty_vals.shape == (0,) and empty_vecs.shape == (5, 0)

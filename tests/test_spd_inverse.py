"""The bordered block-diagonal inverse of a sparse SPD matrix (ensclust.core.spd_inverse) and its use in EC-CMS."""

import numpy as np
import pytest
from scipy import sparse

import ensclust.core.spd_inverse as spd
from ensclust.core.coassoc import coassociation
from ensclust.core.labels import check_members
from ensclust.core.lwca import lwca_matrix
from ensclust.core.spd_inverse import SpdInverse
from ensclust.methods._eccms_solver import high_confidence_matrix, laplacian_blocks, solve, twin_grouping


def _clustered_laplacian(n_groups=16, size=50, p_in=0.3, between=3, shift=2.0, seed=0):
    """2 L + shift I of a graph of dense-ish groups joined by a few edges each (the shape of a high-confidence
    graph), with positive weights."""
    rng = np.random.default_rng(seed)
    n = n_groups * size
    rows, cols = [], []
    for g in range(n_groups):
        base = g * size
        a, b = np.triu_indices(size, 1)
        keep = rng.random(a.size) < p_in
        rows += list(base + a[keep])
        cols += list(base + b[keep])
        for _ in range(between):  # edges to the next group (a ring of groups)
            rows.append(base + rng.integers(size))
            cols.append(((g + 1) % n_groups) * size + rng.integers(size))
    w = rng.uniform(0.7, 1.0, len(rows))
    W = sparse.coo_matrix((w, (rows, cols)), shape=(n, n)).tocsr()
    W = (W + W.T).tocsr()
    deg = np.asarray(W.sum(axis=1)).ravel()
    return (sparse.diags(2 * deg + shift) - 2 * W).tocsr()


def test_bordered_inverse_is_the_inverse():
    M = _clustered_laplacian()
    inv = SpdInverse(M)
    assert inv.parts > 1 and 0 < inv.border < M.shape[0] // 4
    assert inv.cost < 0.5 * M.shape[0] ** 2          # the reason for the form
    Md = M.toarray()
    np.testing.assert_allclose(inv.dense() @ Md, np.eye(M.shape[0]), atol=1e-12)
    R = np.random.default_rng(1).standard_normal((M.shape[0], 37))
    np.testing.assert_allclose(inv.apply(R), np.linalg.solve(Md, R), rtol=1e-10, atol=1e-12)
    out = np.full_like(R, np.nan)
    assert inv.apply(R, out=out) is out and np.allclose(out, np.linalg.solve(Md, R))
    # float32 operands: single-precision accuracy
    R32 = R.astype(np.float32)
    x32 = inv.astype(np.float32).apply(R32)
    assert x32.dtype == np.float32
    np.testing.assert_allclose(x32, np.linalg.solve(Md, R), rtol=0, atol=1e-5 * np.abs(R).max())


def test_bordered_inverse_is_deterministic():
    M = _clustered_laplacian(seed=3)
    R = np.random.default_rng(2).standard_normal((M.shape[0], 9))
    a, b = SpdInverse(M).apply(R), SpdInverse(M).apply(R)
    assert a.tobytes() == b.tobytes()


def test_dense_inverse_where_the_graph_does_not_split():
    # small matrices, and a dense random graph (no cheap separator), keep the plain inverse
    small = _clustered_laplacian(n_groups=4, size=50)
    assert SpdInverse(small).parts == 1
    rng = np.random.default_rng(0)
    n = 600
    W = sparse.random(n, n, density=0.2, random_state=0, data_rvs=lambda k: rng.uniform(0.5, 1, k))
    W = (W + W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    M = (sparse.diags(2 * np.asarray(W.sum(axis=1)).ravel() + 2) - 2 * W).tocsr()
    inv = SpdInverse(M)
    assert inv.parts == 1 and inv.border == 0 and inv.cost == n * n
    np.testing.assert_allclose(inv.dense() @ M.toarray(), np.eye(n), atol=1e-12)


def test_not_positive_definite_is_an_error():
    M = _clustered_laplacian()
    with pytest.raises(np.linalg.LinAlgError):
        SpdInverse(M - 10 * sparse.identity(M.shape[0]))


def _voronoi_members(n=600, m=12, k=60, seed=0):
    """Members cutting points of the unit square into Voronoi cells: a local high-confidence graph (like those of
    the large EC-CMS pools), whose groups split into parts with a narrow border."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    return check_members(np.column_stack([
        np.argmin(((X[:, None] - rng.random((k, 2))[None]) ** 2).sum(-1), axis=1) for _ in range(m)]))


def test_the_n_by_n_fallback_blocks_take_the_bordered_form_too(monkeypatch):
    """laplacian_blocks (the iteration for A not constant on the twin groups) inverts its components with the
    same operator: each block's M^-1 is the inverse of its block of 2 Phi + 2 I."""
    monkeypatch.setattr(spd, "BORDERED_MIN_SIZE", 64)
    monkeypatch.setattr(spd, "MIN_PART_SIZE", 8)
    members = _voronoi_members()
    H = high_confidence_matrix(coassociation(members, dtype=np.float64, dense=False), 0.5)
    order, blocks, _ = laplacian_blocks(H, 1.0, 1.0)
    assert any(blk.inv.parts > 1 for blk in blocks)
    Hd = H.toarray()[np.ix_(order, order)]
    M = 2 * (np.diag(Hd.sum(1)) - Hd) + 2 * np.eye(len(order))
    for blk in blocks:
        sl = slice(blk.start, blk.stop)
        np.testing.assert_allclose(blk.dense() @ M[sl, sl], np.eye(blk.stop - blk.start), atol=1e-11)


def test_eccms_admm_with_the_bordered_inverse_matches_the_dense_one(monkeypatch):
    """The EC-CMS ADMM on a component large enough for the bordered form gives the dense inverse's iterates
    (to rounding): same iteration count and C to 1e-10."""
    members = _voronoi_members()
    A = lwca_matrix(members)
    H = high_confidence_matrix(coassociation(members, dtype=np.float64, dense=False), 0.5)
    grouping = twin_grouping(H)
    largest = int(np.diff(grouping.bounds).max())
    monkeypatch.setattr(spd, "BORDERED_MIN_SIZE", 10**9)   # dense everywhere
    C_dense, info_dense = solve(A, H, 0.4)
    monkeypatch.setattr(spd, "BORDERED_MIN_SIZE", 64)
    monkeypatch.setattr(spd, "MIN_PART_SIZE", 8)
    C_border, info_border = solve(A, H, 0.4)
    assert largest >= 64 and info_border["gemm_cost_ratio"] < info_dense["gemm_cost_ratio"]
    assert info_border["n_iter"] == info_dense["n_iter"]
    np.testing.assert_allclose(C_border, C_dense, atol=1e-10)


def test_the_large_eccms_pools_take_the_bordered_form(data_dir, tmp_path):
    """On the LS pool (first 20 members, alpha 0.7; results/bench/eccms_s27) the largest component's inverse is
    bordered at about a tenth of the dense multiply-adds, and is the inverse of its matrix."""
    from ensclust.pools import get_pool

    pool = get_pool(None, {"source": "file", "file": "pools/eccms_ls.mat", "first": 20}, seed=0, data_dir=data_dir,
                    cache_dir=tmp_path)
    H = high_confidence_matrix(coassociation(np.asarray(pool.members)[:, :20], dtype=np.float64, dense=False), 0.7)
    grouping = twin_grouping(H)
    i = int(np.argmax(np.diff(grouping.bounds)))
    s, e = grouping.bounds[i], grouping.bounds[i + 1]
    S = (sparse.diags(grouping.g[s:e] * (2 * grouping.deg[s:e] + 2)) - 2 * grouping.between[s:e, s:e]).tocsr()
    inv = SpdInverse(S)
    assert e - s > 2000 and inv.parts >= 8 and inv.cost < 0.2 * (e - s) ** 2
    R = np.random.default_rng(0).standard_normal((e - s, 5))
    np.testing.assert_allclose(S @ inv.apply(R), R, atol=1e-10)

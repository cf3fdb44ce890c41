"""TRCE: tri-level robust clustering ensemble with multiple graph learning (Zhou, Du, Liu, Shen & Li, AAAI 2021).

specs/baselines/robust_family.md section 3, which restates the authors' MATLAB ``alg/optimization.m``
(``TRCE_code.zip``). Three levels of robustness: graph weights alpha_k over the m base graphs, self-paced
instance weights w_i, and a learned consensus graph S whose Laplacian is pushed to rank n - c, so that its
connected components are the clusters.

Base graphs. S_k = Y_k Y_k^T row-normalised: entry (i, j) is 1/|cluster of i| when i and j share a cluster of
member k. Since both share that cluster, S_k is symmetric. The authors' code stores the n x n x m stack; here
every quantity is derived from the sparse one-hot matrix instead:

* C = sum_k S_k / alpha_k = Y diag(1 / (alpha_k s_e)) Y^T (one sparse product, kept on its support);
* d1(i, k) = KL(S_k(i, :) || B(i, :)) = -log s_k(i) - (1 / s_k(i)) sum_{j in cluster_k(i)} log max(B_ij, eps),
  i.e. one product log(max(B, eps)) @ Y (n x K), read at each object's own clusters. (The code's outer
  ``max(ratio, eps)`` never binds because B <= 1 and 1/s >= 1/n.)

Microcluster blocks. Objects with identical label vectors (microclusters, as in PTA) have identical rows in
every S_k, so by induction over the iteration every quantity is constant on microcluster blocks: C, B and S
(block values), d1, d2, w and theta (per block), and the embedding F, whose c + 1 smallest Laplacian
eigenvectors are block-constant (the other eigenvectors of a block-constant graph, zero-sum inside one block,
have the block's degree as eigenvalue, >= 1/2 here). The iteration therefore runs on n_micro x n_micro block
matrices with the block sizes as weights in every sum over objects (B-step, simplex projection, KL terms,
alpha, degrees), which is the object-level iteration, not an approximation (tests/test_robust_fast.py checks
it against the dense object-level loop). The eigen-step works on the sparse symmetrised block Laplacian
(shift-invert Lanczos for the c + 1 smallest eigenpairs, instead of a dense O(n^3) eigendecomposition).

Sparse state. C and B live on the pairs of blocks co-clustered in some member (the pattern of Y Y^T, 15 % of
the pairs on the USPS pool) and S on the entries the simplex projection keeps; only the distances between the
embedding rows are dense, and they are formed one block of rows at a time (16 MB): read at C's entries for the
B-step, then added to B's rows and projected for the S-step. No n_micro^2 array is ever formed (n_micro = 6719
on the USPS pool: 360 MB each; the page faults of a dozen such temporaries per iteration were 32 of a fit's
77 s CPU, results/bench/trce_s17); the result is the dense iteration's up to the order of floating-point sums.

The code's indexing bug (step a): the loop that should compute d2 = sum_k d1(:, k) / alpha_k uses the stale
index k = m, giving d2 = m d1(:, m) / alpha_m. ``faithful_bug=True`` (default, as the spec recommends) reproduces
it, so the result depends on which member comes last; ``faithful_bug=False`` computes the intended sum.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import cluster_offsets, one_hot, relabel_first_appearance
from ensclust.core.microclusters import compute_microclusters
from ensclust.methods import register
from ensclust.methods._robust_graph import (
    component_labels,
    laplacian_smallest_weighted,
    rank_control,
    squared_distances,
)
from ensclust.methods.base import ConsensusMethod, Param

EPS = np.finfo(np.float64).eps
#: Upper end of the root bracket of the B-step (MATLAB ``fzero`` on [eps, 1e4] in the authors' code).
THETA_MAX = 1e4


def kl_to_graph(B, Y: sparse.csr_matrix, members: np.ndarray, offsets: np.ndarray,
                sizes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """d1(i, k) = KL(S_k(i, :) || B(i, :)) for all rows i and base graphs k (rows x m), without S_k.

    ``Y`` is the rows x K one-hot matrix, ``members`` the relabelled label matrix of the rows, ``offsets`` its
    column offsets and ``sizes`` the object-level cluster sizes. With microcluster rows, ``weights`` are the
    microcluster sizes: the sum over the objects j of a cluster is the sum over its microclusters v weighted by
    their sizes (B is constant within microcluster blocks).

    ``B`` is dense, or sparse holding (explicitly, zeros included) every co-clustered pair, e.g. on the pattern
    of Y Y^T, as TRCE's B-step returns it: the sum for (i, k) runs over the cluster of i in member k, all
    co-clustered with i, so no other entry of B is ever read.
    """
    if sparse.issparse(B):
        B = sparse.csr_matrix(B)
        vals = np.log(np.maximum(B.data, EPS))
        if weights is not None:
            vals *= weights[B.indices]
        logB = sparse.csr_matrix((vals, B.indices, B.indptr), shape=B.shape)
        summed = (logB @ Y).toarray()
    else:
        logB = np.log(np.maximum(B, EPS))
        if weights is not None:
            logB *= weights[None, :]
        summed = np.asarray((Y.T @ logB.T).T)  # rows x K: sum over the members of cluster e of log B_ij
    cols = members + offsets[None, :-1]
    s = sizes[cols]
    return -np.log(s) - np.take_along_axis(summed, cols, axis=1) / s


def solve_b_rows(C, dist: np.ndarray, rho: float, *, weights: np.ndarray | None = None,
                 tol: float = 1e-13, max_iter: int = 200):
    """B-step: for every row i, theta_i > 0 with sum_{j: C_ij > 0} C_ij / (rho dist_ij + theta_i) = 1.

    ``C`` is dense, or a CSR matrix with sorted indices holding the positive entries (TRCE's C is a product of
    one-hot factors: its pattern is known, so the n x n array need not be written and scanned); stored zeros
    (rows of weight 0) add nothing. ``dist`` holds the distances at C's entries only, in row-major order: the
    order of CSR's stored entries, or of ``np.nonzero`` for a dense C (``dist_dense[C != 0]``). With
    microcluster rows and columns, ``weights`` (the microcluster sizes) multiply the terms of the sum.

    All rows are solved together by a safeguarded Newton iteration on 1 / phi(theta) - 1 inside the bracket
    [eps, 1e4] (the bracket of the authors' ``fzero``), falling back to bisection in log(theta) when a Newton
    step leaves the bracket. When there is no sign change in the bracket (phi(eps) < 1, or phi(1e4) > 1),
    theta = eps: the spec's rule for the case where MATLAB's ``fzero`` would stop with an error.
    Returns ``(B, theta, has_root)``, B in C's form (CSR with C's pattern, or dense, zero off C's entries).
    """
    # Only the support of C enters (C_ij = 0 elsewhere and B_ij = 0 there): the sums run over its nonzeros
    # (13 % of the entries on the USPS pool), as flat arrays in row-major order.
    n = C.shape[0]
    if sparse.issparse(C):
        # row-major order of the entries, as np.nonzero gives it for the dense matrix
        rows = np.repeat(np.arange(n), np.diff(C.indptr))
        cols, c_flat = C.indices, C.data
    else:
        rows, cols = np.nonzero(C)
        c_flat = C[rows, cols]
    dist = np.asarray(dist, dtype=np.float64)
    if dist.shape != c_flat.shape:
        raise ValueError(f"solve_b_rows: dist must hold C's {c_flat.size} entries, got shape {dist.shape}")
    cw = c_flat if weights is None else c_flat * weights[cols]
    a = rho * dist

    def phi(theta):
        return np.bincount(rows, weights=cw / (a + theta[rows]), minlength=n)

    lo = np.full(n, EPS)
    hi = np.full(n, THETA_MAX)
    f_lo = phi(lo)
    f_hi = phi(hi)
    has_root = (f_lo >= 1.0) & (f_hi <= 1.0)
    theta = np.full(n, EPS)
    active = np.flatnonzero(has_root)
    if active.size:
        sel = has_root[rows]
        ra = (np.cumsum(has_root) - 1)[rows[sel]]          # entry -> index among the active rows
        ca, aa = cw[sel], a[sel]
        na = active.size
        # Start where the largest single term equals 1: a lower bound of the root (phi is decreasing).
        # (entries are in row order and every active row has one: a segmented maximum, not np.maximum.at's
        # element-by-element scatter, which took a quarter of the B-step on the USPS pool)
        first = np.flatnonzero(np.r_[True, ra[1:] != ra[:-1]])
        th = np.clip(np.maximum.reduceat(ca - aa, first), EPS, THETA_MAX)
        lo_a, hi_a = lo[active], hi[active]
        # Rows are independent: a row whose residual is within tol keeps its theta (and its Newton step, which
        # the joint stopping test below reads), so it leaves the working set. The remaining rows' sums run over
        # their entries in the same order (np.bincount adds in input order), hence the same bits as iterating
        # over all rows until the last one converges.
        idx = np.arange(na)                   # working row -> active row
        small_done = np.ones(na, dtype=bool)  # rows that left: was their (constant) Newton step tiny?
        for _ in range(max_iter):
            nw = idx.size
            t_w, lo_w, hi_w = th[idx], lo_a[idx], hi_a[idx]
            den = aa + t_w[ra]
            T = ca / den
            val = np.bincount(ra, weights=T, minlength=nw)
            T /= den
            deriv = -np.bincount(ra, weights=T, minlength=nw)
            del T, den
            above = val > 1.0
            lo_w = np.where(above, np.maximum(lo_w, t_w), lo_w)
            hi_w = np.where(~above, np.minimum(hi_w, t_w), hi_w)
            # Newton on g = 1/phi - 1 (close to linear in theta): g' = -phi'/phi^2.
            new = t_w - (1.0 / val - 1.0) / (-deriv / val ** 2)
            bad = ~np.isfinite(new) | (new <= lo_w) | (new >= hi_w)
            new = np.where(bad, np.sqrt(lo_w * hi_w), new)
            done = np.abs(val - 1.0) <= tol
            tiny = np.abs(new - t_w) <= 1e-15 * np.maximum(t_w, 1.0)
            conv = np.all(done) or (np.all(tiny) and np.all(small_done))
            th[idx] = np.where(done, t_w, new)
            lo_a[idx], hi_a[idx] = lo_w, hi_w
            if conv:
                break
            if done.any():
                small_done[idx[done]] = tiny[done]
                keep = ~done
                entry_keep = keep[ra]
                ra = (np.cumsum(keep) - 1)[ra[entry_keep]]
                ca, aa = ca[entry_keep], aa[entry_keep]
                idx = idx[keep]
        theta[active] = th
    values = c_flat / (a + theta[rows])
    if sparse.issparse(C):
        return sparse.csr_matrix((values, cols, C.indptr), shape=C.shape), theta, has_root
    B = np.zeros(C.shape, dtype=np.float64)
    B[rows, cols] = values
    return B, theta, has_root


def project_simplex_weighted(V: np.ndarray, weights: np.ndarray, *, n_top: int = 512) -> np.ndarray:
    """Projection of every row onto the simplex when column j stands for ``weights[j]`` equal entries.

    The row of the object-level matrix repeats V_uv weights[v] times; its projection is max(V - tau, 0) with
    sum_v weights[v] max(V_uv - tau_u, 0) = 1, and tau = max over the prefixes P of the row sorted in decreasing
    order of (sum_P weights V - 1) / sum_P weights (Held, Wolfe & Crowder 1974). Any prefix gives a lower bound
    of tau, so the ``n_top`` largest entries of each row (one partial selection, no n^2 log n sort) give a
    starting tau. It is exact when the smallest of those entries is not above it: then every entry above tau is
    among them, the kept set is a prefix of their sorted order, and its value is in the maximum. Only the other
    rows (TRCE's rows on the USPS pool keep several hundred of 6719 entries; a few keep more than 1024) go on to
    Michelot's (1986) iteration: keep the entries above tau, recompute tau from them; from a lower bound, tau
    increases monotonically and stops when the kept set no longer changes. Same result as the sort-based
    projection (:func:`ensclust.core.simplex.project_simplex`) of the expanded row, up to the order of the sums.
    """
    w = np.asarray(weights, dtype=np.float64)
    n_rows, n_cols = V.shape
    t = min(n_top, n_cols)
    top = np.argpartition(V, n_cols - t, axis=1)[:, n_cols - t:]
    vals = np.take_along_axis(V, top, axis=1)
    order = np.argsort(-vals, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    wt = w[np.take_along_axis(top, order, axis=1)]
    tau = np.max((np.cumsum(wt * vals, axis=1) - 1.0) / np.cumsum(wt, axis=1), axis=1)
    rest = np.flatnonzero(vals[:, -1] > tau) if t < n_cols else np.empty(0, dtype=np.int64)
    del top, vals, order, wt
    if rest.size:
        R = V[rest]
        tau_r = tau[rest]
        count = None
        for _ in range(n_cols + 1):
            mask = R > tau_r[:, None]
            new_count = mask @ w
            if count is not None and np.array_equal(new_count, count):
                break
            count = new_count
            tau_r = (np.where(mask, R, 0.0) @ w - 1.0) / count
            del mask
        tau[rest] = tau_r
    S = V - tau[:, None]
    np.maximum(S, 0.0, out=S)
    return S


#: Entries per block of rows of the dense distance / S-step arrays (16 MB of float64): the n_micro^2 arrays of
#: the S-step are never formed whole (on the USPS pool, n_micro = 6719, each was 360 MB, and the page faults of
#: the dense temporaries were 32 of a fit's 77 s CPU).
_BLOCK_ENTRIES = 1 << 21


def _row_blocks(n: int):
    """Consecutive row ranges [r0, r1) of at most ``_BLOCK_ENTRIES / n`` rows."""
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    for r0 in range(0, n, step):
        yield r0, min(r0 + step, n)


def _distance_rows(F: np.ndarray, r0: int, r1: int) -> np.ndarray:
    """Rows r0..r1-1 of the squared distances between the embedding rows (``squared_distances(F)[r0:r1]``)."""
    D = squared_distances(F[r0:r1], F)
    local = np.arange(r1 - r0)
    D[local, r0 + local] = 0.0
    return D


def _entry_rows(M: sparse.csr_matrix, r0: int, r1: int) -> tuple[np.ndarray, slice]:
    """Block-local row index of each stored entry of rows r0..r1-1 of a CSR matrix, and their slice."""
    return np.repeat(np.arange(r1 - r0), np.diff(M.indptr[r0:r1 + 1])), slice(M.indptr[r0], M.indptr[r1])


def _distances_at(M: sparse.csr_matrix, F: np.ndarray) -> np.ndarray:
    """Squared distances between the embedding rows at the stored entries of M, in M's order (step c)."""
    out = np.empty(M.nnz)
    for r0, r1 in _row_blocks(M.shape[0]):
        local, entries = _entry_rows(M, r0, r1)
        out[entries] = _distance_rows(F, r0, r1)[local, M.indices[entries]]
    return out


def _s_step(B: sparse.csr_matrix, F: np.ndarray, scale: float, weights: np.ndarray) -> sparse.csr_matrix:
    """Step f: the rows of B + scale * distf projected onto the weighted simplex, block of rows by block of rows.

    distf is dense (every pair of blocks), B lives on the co-clustered pairs; each block of rows is projected
    as the whole matrix would be (the projection works row by row), and only the kept entries are stored.
    """
    n = B.shape[0]
    data, indices, counts = [], [], []
    for r0, r1 in _row_blocks(n):
        V = _distance_rows(F, r0, r1)
        V *= scale
        local, entries = _entry_rows(B, r0, r1)
        V[local, B.indices[entries]] += B.data[entries]
        P = project_simplex_weighted(V, weights)
        del V
        rows, cols = np.nonzero(P)
        data.append(P[rows, cols])
        indices.append(cols)
        counts.append(np.bincount(rows, minlength=r1 - r0))
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
    return sparse.csr_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape=(n, n))


@register
class TRCE(ConsensusMethod):
    """Tri-level robust clustering ensemble (Zhou et al., AAAI 2021).

    Labels are the connected components of the learned graph, so the number of clusters can differ from c
    (the spec's rule: evaluate it as it is). Deterministic: no random numbers are used. ``consensus_matrix_``
    holds the learned graph on microcluster blocks as a sparse matrix (``microcluster_assignment_`` maps
    objects to blocks).
    """

    name = "trce"
    summary = "multiple graph learning with graph and self-paced instance weights; connected components"
    may_return_other_k = True
    params = {
        "gamma": Param(1e-3, type="float", low=0.0, low_open=True,
                       doc="trade-off of the S-step (S = simplex projection of B - rho/(2 gamma) distf)",
                       source="point of the authors' demo grid 10^-5..10^5 that is best on Ecoli under the "
                              "EC-CMS Table IV protocol (ARI 0.643, as printed); tables use oracle selection"),
        "faithful_bug": Param(True, type="bool",
                              doc="reproduce the authors' d2 = m d1(:, m) / alpha_m indexing bug "
                                  "(False: d2 = sum_k d1(:, k) / alpha_k as intended)",
                              source="spec robust_family.md section 3 step a (default = reproduce the code)"),
        "max_iter": Param(10, type="int", low=1, doc="outer iterations",
                          source="authors' optimization.m (maxiter = 10)"),
        "init_rho": Param(1.0, type="float", low=0.0, low_open=True, doc="initial rank-control weight rho",
                          source="authors' optimization.m (rho = 1)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        n, m = members.shape
        c = n_clusters
        gamma = self.gamma
        # Every quantity is constant on microcluster blocks (objects with identical label vectors have identical
        # rows of every S_k, hence of C, B, S, d1 and the embedding; see the module docstring): the iteration
        # runs on the n_micro x n_micro blocks with the block sizes as weights.
        micro = compute_microclusters(members)
        sizes_u = micro.sizes.astype(np.float64)
        Ym = micro.indicator()                      # n_micro x K
        offsets = cluster_offsets(members)
        sizes = np.asarray(one_hot(members).sum(axis=0)).ravel()   # object-level cluster sizes s_e
        mm = micro.members

        def weighted_sum(alpha):
            # sum_k S_k / alpha_k = Y diag(1 / (alpha_k s_e)) Y^T: block values on the pairs of blocks
            # co-clustered in some member (the pattern of Y Y^T, which is also the pattern of B and the support
            # of every KL sum), CSR with sorted indices; every entry is positive
            col_alpha = np.repeat(alpha, np.diff(offsets))
            Yw = Ym @ sparse.diags(1.0 / (col_alpha * sizes))
            product = (Yw @ Ym.T).tocsr()
            product.sort_indices()
            return product

        alpha = np.full(m, 1.0 / m)
        B = weighted_sum(np.ones(m))
        B.data /= m                                 # mean of the S_k (already symmetric)
        # S = Q Q^T with Q = Y diag(1 / sqrt(m s_e)): rank K, dense, so the eigen-step uses the factor
        vals, F = laplacian_smallest_weighted(None, sizes_u, c + 1,
                                              factor=Ym @ sparse.diags(1.0 / np.sqrt(m * sizes)))
        F = F[:, :c]
        d1 = kl_to_graph(B, Ym, mm, offsets, sizes, sizes_u)
        rho = 1.0 * self.init_rho
        lam = None
        history = {"rho": [], "fn1": []}
        converged = False
        n_iter = 0
        no_root_rows = 0
        for ii in range(1, self.max_iter + 1):
            n_iter = ii
            # a. instance losses
            if self.faithful_bug:
                d2 = m * d1[:, m - 1] / alpha[m - 1]
            else:
                d2 = (d1 / alpha[None, :]).sum(axis=1)
            # b. self-paced threshold (over the objects) and instance weights
            if lam is None:
                idx = min(max(n // 10, 1), n) - 1
                lam = 2.0 * np.sort(np.repeat(d2, micro.sizes))[idx]
            else:
                lam *= 1.1
            w = np.minimum(lam / np.maximum(2.0 * d2, EPS), 1.0)
            # d. weighted sum of the base graphs, rows scaled by w_i^2
            C = weighted_sum(alpha)
            C.data *= (w ** 2)[np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))]
            # c, e. B-step, with the distances between the embedding rows (c) read at C's entries only
            B, _, has_root = solve_b_rows(C, _distances_at(C, F), rho, weights=sizes_u)
            no_root_rows += int(np.sum(micro.sizes[~has_root]))
            del C
            # f. S-step: rows of B - rho/(2 gamma) distf projected onto the simplex
            S = _s_step(B, F, -rho / (2.0 * gamma), sizes_u)
            # g. new KL terms, symmetrised graph, embedding
            d1 = kl_to_graph(B, Ym, mm, offsets, sizes, sizes_u)
            S = (S + S.T) / 2.0
            F_old = F
            vals, F = laplacian_smallest_weighted(S, sizes_u, c + 1)
            F = F[:, :c]
            # h. graph weights alpha_k ~ sqrt(sum_i w_i^2 d1(i, k)) (sum over the objects)
            score = np.sqrt(np.maximum((sizes_u * w ** 2) @ d1, 0.0))
            # all-zero losses (e.g. identical members): MATLAB would divide 0/0; keep the weights uniform
            alpha = score / score.sum() if score.sum() > 0 else np.full(m, 1.0 / m)
            alpha = np.maximum(alpha, EPS)
            # i. rank control
            decision, rho = rank_control(vals, c, rho, history)
            if decision == "decrease":
                F = F_old
            elif decision == "stop" and ii > 1:
                converged = True
                break
        labels = _object_components(S, micro)
        # the learned graph as block values: object (i, j) has S[a[i], a[j]], a = microcluster_assignment_
        # (the object-level n x n matrix is not formed: 1 GB at n = 11000)
        self.consensus_matrix_ = S
        self.microcluster_assignment_ = micro.assignment
        self.diagnostics_ = {
            "n_iter": n_iter,
            "converged": converged,
            "rho": history["rho"],
            "fn1": history["fn1"],
            "alpha": [float(a) for a in alpha],
            "b_rows_without_root": no_root_rows,
            "n_micro": micro.n_micro,
        }
        return labels


def _object_components(S, micro) -> np.ndarray:
    """Connected components of the object graph whose (i, j) entry is the block value S[u(i), u(j)].

    Objects of one block are joined through the block itself (S_uu > 0) or through any neighbouring block; a
    block without any edge, not even to itself, is a set of isolated objects (one component each). ``S`` is
    sparse or dense.
    """
    S = sparse.csr_matrix(S, copy=True)
    S.eliminate_zeros()
    micro_labels = component_labels(S)
    obj = micro_labels[micro.assignment].astype(np.int64)
    isolated = np.diff(S.indptr) == 0
    lone = np.flatnonzero(isolated[micro.assignment] & (micro.sizes[micro.assignment] > 1))
    if lone.size:
        obj[lone] = micro_labels.max() + 1 + np.arange(lone.size)
    # number the components in order of their first object, as connected_components on the object graph does
    return relabel_first_appearance(obj)

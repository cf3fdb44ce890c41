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
Memory: about five dense n_micro^2 float64 arrays (n_micro = 6719 on the USPS pool: 360 MB each).

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


def kl_to_graph(B: np.ndarray, Y: sparse.csr_matrix, members: np.ndarray, offsets: np.ndarray,
                sizes: np.ndarray, weights: np.ndarray | None = None, support=None) -> np.ndarray:
    """d1(i, k) = KL(S_k(i, :) || B(i, :)) for all rows i and base graphs k (rows x m), without S_k.

    ``Y`` is the rows x K one-hot matrix, ``members`` the relabelled label matrix of the rows, ``offsets`` its
    column offsets and ``sizes`` the object-level cluster sizes. With microcluster rows, ``weights`` are the
    microcluster sizes: the sum over the objects j of a cluster is the sum over its microclusters v weighted by
    their sizes (B is constant within microcluster blocks).

    ``support`` (a sparse matrix whose pattern contains every co-clustered pair, e.g. Y Y^T) restricts the
    product to those entries: the sum for (i, k) runs over the cluster of i in member k, all co-clustered
    with i, so no other entry of B is ever read.
    """
    if support is None:
        logB = np.log(np.maximum(B, EPS))
        if weights is not None:
            logB *= weights[None, :]
        summed = np.asarray((Y.T @ logB.T).T)  # rows x K: sum over the members of cluster e of log B_ij
    else:
        pattern = sparse.csr_matrix(support)
        rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
        vals = np.log(np.maximum(B[rows, pattern.indices], EPS))
        if weights is not None:
            vals *= weights[pattern.indices]
        logB = sparse.csr_matrix((vals, pattern.indices, pattern.indptr), shape=pattern.shape)
        summed = (logB @ Y).toarray()
    cols = members + offsets[None, :-1]
    s = sizes[cols]
    return -np.log(s) - np.take_along_axis(summed, cols, axis=1) / s


def solve_b_rows(C, dist: np.ndarray, rho: float, *, weights: np.ndarray | None = None,
                 tol: float = 1e-13, max_iter: int = 200):
    """B-step: for every row i, theta_i > 0 with sum_{j: C_ij > 0} C_ij / (rho dist_ij + theta_i) = 1.

    ``C`` is dense, or a CSR matrix with sorted indices holding exactly the positive entries (TRCE's C is a
    product of one-hot factors: its pattern is known, so the n x n array need not be written and scanned).
    With microcluster rows and columns, ``weights`` (the microcluster sizes) multiply the terms of the sum.

    All rows are solved together by a safeguarded Newton iteration on 1 / phi(theta) - 1 inside the bracket
    [eps, 1e4] (the bracket of the authors' ``fzero``), falling back to bisection in log(theta) when a Newton
    step leaves the bracket. When there is no sign change in the bracket (phi(eps) < 1, or phi(1e4) > 1),
    theta = eps: the spec's rule for the case where MATLAB's ``fzero`` would stop with an error.
    Returns ``(B, theta, has_root)``.
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
    cw = c_flat if weights is None else c_flat * weights[cols]
    a = rho * dist[rows, cols]

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
    B = np.zeros(C.shape, dtype=np.float64)
    B[rows, cols] = c_flat / (a + theta[rows])
    return B, theta, has_root


def project_simplex_weighted(V: np.ndarray, weights: np.ndarray, *, n_top: int = 1024) -> np.ndarray:
    """Projection of every row onto the simplex when column j stands for ``weights[j]`` equal entries.

    The row of the object-level matrix repeats V_uv weights[v] times; its projection is max(V - tau, 0) with
    sum_v weights[v] max(V_uv - tau_u, 0) = 1, and tau = max over the prefixes P of the row sorted in decreasing
    order of (sum_P weights V - 1) / sum_P weights (Held, Wolfe & Crowder 1974). Any prefix gives a lower bound
    of tau, so the ``n_top`` largest entries of each row (one partial selection, no n^2 log n sort) give a
    starting tau, exact when a row keeps fewer entries. Michelot's (1986) iteration finishes it: keep the entries
    above tau, recompute tau from them; from a lower bound, tau increases monotonically and stops when the kept
    set no longer changes (each step is a pass over the whole matrix; TRCE's rows on the USPS pool keep several
    hundred of 6719 entries: n_top = 128 needed 8 passes, 1024 needs 4, 2.3 s instead of 4.3 s in all). Same
    result as the sort-based projection (:func:`ensclust.core.simplex.project_simplex`) of the expanded row, up
    to the order of the sums.
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
    del top, vals, order, wt
    count = None
    for _ in range(n_cols + 1):
        mask = V > tau[:, None]
        new_count = mask @ w
        if count is not None and np.array_equal(new_count, count):
            break
        count = new_count
        tau = (np.where(mask, V, 0.0) @ w - 1.0) / count
        del mask
    S = V - tau[:, None]
    np.maximum(S, 0.0, out=S)
    return S


@register
class TRCE(ConsensusMethod):
    """Tri-level robust clustering ensemble (Zhou et al., AAAI 2021).

    Labels are the connected components of the learned graph, so the number of clusters can differ from c
    (the spec's rule: evaluate it as it is). Deterministic: no random numbers are used. ``consensus_matrix_``
    holds the learned graph on microcluster blocks (``microcluster_assignment_`` maps objects to blocks).
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
        # pairs of blocks co-clustered in some member: the support of C, B and of every KL sum
        support = (Ym @ Ym.T).tocsr()
        support.sort_indices()

        def weighted_sum(alpha):
            # sum_k S_k / alpha_k = Y diag(1 / (alpha_k s_e)) Y^T (block values on the support of Y Y^T, CSR
            # with sorted indices; every entry of the support is positive)
            col_alpha = np.repeat(alpha, np.diff(offsets))
            Yw = Ym @ sparse.diags(1.0 / (col_alpha * sizes))
            product = (Yw @ Ym.T).tocsr()
            product.sort_indices()
            return product

        alpha = np.full(m, 1.0 / m)
        S = weighted_sum(np.ones(m)).toarray() / m  # mean of the S_k (already symmetric)
        # S = Q Q^T with Q = Y diag(1 / sqrt(m s_e)): rank K, dense, so the eigen-step uses the factor
        vals, F = laplacian_smallest_weighted(None, sizes_u, c + 1,
                                              factor=Ym @ sparse.diags(1.0 / np.sqrt(m * sizes)))
        F = F[:, :c]
        B = S.copy()
        d1 = kl_to_graph(B, Ym, mm, offsets, sizes, sizes_u, support)
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
            # c. distances between the embedding rows
            distf = squared_distances(F)
            # d. weighted sum of the base graphs, rows scaled by w_i^2
            C = weighted_sum(alpha)
            C.data *= (w ** 2)[np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))]
            # e. B-step
            B, _, has_root = solve_b_rows(C, distf, rho, weights=sizes_u)
            no_root_rows += int(np.sum(micro.sizes[~has_root]))
            del C
            # f. S-step: rows of B - rho/(2 gamma) distf projected onto the simplex
            distf *= -rho / (2.0 * gamma)
            distf += B
            S = project_simplex_weighted(distf, sizes_u)
            del distf
            # g. new KL terms, symmetrised graph, embedding
            d1 = kl_to_graph(B, Ym, mm, offsets, sizes, sizes_u, support)
            S += S.T
            S /= 2.0
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


def _object_components(S: np.ndarray, micro) -> np.ndarray:
    """Connected components of the object graph whose (i, j) entry is the block value S[u(i), u(j)].

    Objects of one block are joined through the block itself (S_uu > 0) or through any neighbouring block; a
    block without any edge, not even to itself, is a set of isolated objects (one component each).
    """
    micro_labels = component_labels(S)
    obj = micro_labels[micro.assignment].astype(np.int64)
    isolated = ~np.any(S != 0, axis=1)
    lone = np.flatnonzero(isolated[micro.assignment] & (micro.sizes[micro.assignment] > 1))
    if lone.size:
        obj[lone] = micro_labels.max() + 1 + np.arange(lone.size)
    # number the components in order of their first object, as connected_components on the object graph does
    return relabel_first_appearance(obj)

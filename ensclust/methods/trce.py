"""TRCE: tri-level robust clustering ensemble with multiple graph learning (Zhou, Du, Liu, Shen & Li, AAAI 2021).

specs/baselines/robust_family.md section 3, which restates the authors' MATLAB ``alg/optimization.m``
(``TRCE_code.zip``). Three levels of robustness: graph weights alpha_k over the m base graphs, self-paced
instance weights w_i, and a learned consensus graph S whose Laplacian is pushed to rank n - c, so that its
connected components are the clusters.

Base graphs. S_k = Y_k Y_k^T row-normalised: entry (i, j) is 1/|cluster of i| when i and j share a cluster of
member k. Since both share that cluster, S_k is symmetric. The authors' code stores the n x n x m stack; here
every quantity is derived from the sparse one-hot matrix instead:

* C = sum_k S_k / alpha_k = Y diag(1 / (alpha_k s_e)) Y^T (one sparse product, dense n x n result);
* d1(i, k) = KL(S_k(i, :) || B(i, :)) = -log s_k(i) - (1 / s_k(i)) sum_{j in cluster_k(i)} log max(B_ij, eps),
  i.e. one product log(max(B, eps)) @ Y (n x K), read at each object's own clusters. (The code's outer
  ``max(ratio, eps)`` never binds because B <= 1 and 1/s >= 1/n.)

Dense n x n float64 matrices are needed for B, S, C, the distances between the embedding rows and the Laplacian
(about six at a time): 150 MB each at n = 4 500, so TRCE is limited to a few thousand objects on 8 GB.

The code's indexing bug (step a): the loop that should compute d2 = sum_k d1(:, k) / alpha_k uses the stale
index k = m, giving d2 = m d1(:, m) / alpha_m. ``faithful_bug=True`` (default, as the spec recommends) reproduces
it, so the result depends on which member comes last; ``faithful_bug=False`` computes the intended sum.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import cluster_offsets, one_hot
from ensclust.core.simplex import project_simplex
from ensclust.methods import register
from ensclust.methods._robust_graph import (
    component_labels,
    laplacian,
    laplacian_smallest,
    rank_control,
    squared_distances,
)
from ensclust.methods.base import ConsensusMethod, Param

EPS = np.finfo(np.float64).eps
#: Upper end of the root bracket of the B-step (MATLAB ``fzero`` on [eps, 1e4] in the authors' code).
THETA_MAX = 1e4


def kl_to_graph(B: np.ndarray, Y: sparse.csr_matrix, members: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """d1(i, k) = KL(S_k(i, :) || B(i, :)) for all objects i and base graphs k (n x m), without S_k.

    ``Y`` is the n x K one-hot matrix, ``members`` the relabelled label matrix and ``offsets`` its column offsets.
    """
    sizes = np.asarray(Y.sum(axis=0)).ravel()
    logB = np.log(np.maximum(B, EPS))
    summed = np.asarray((Y.T @ logB.T).T)  # n x K: sum over the members of cluster e of log B_ij
    cols = members + offsets[None, :-1]
    s = sizes[cols]
    return -np.log(s) - np.take_along_axis(summed, cols, axis=1) / s


def solve_b_rows(C: np.ndarray, dist: np.ndarray, rho: float, *, tol: float = 1e-13, max_iter: int = 200):
    """B-step: for every row i, theta_i > 0 with sum_{j: C_ij > 0} C_ij / (rho dist_ij + theta_i) = 1.

    All rows are solved together by a safeguarded Newton iteration on 1 / phi(theta) - 1 inside the bracket
    [eps, 1e4] (the bracket of the authors' ``fzero``), falling back to bisection in log(theta) when a Newton
    step leaves the bracket. When there is no sign change in the bracket (phi(eps) < 1, or phi(1e4) > 1),
    theta = eps: the spec's rule for the case where MATLAB's ``fzero`` would stop with an error.
    Returns ``(B, theta, has_root)``.
    """
    # C_ij = 0 outside the support and rho dist + theta > 0, so the sums can run over whole rows.
    a = rho * dist

    def phi(theta):
        return (C / (a + theta[:, None])).sum(axis=1)

    n = C.shape[0]
    lo = np.full(n, EPS)
    hi = np.full(n, THETA_MAX)
    f_lo = phi(lo)
    f_hi = phi(hi)
    has_root = (f_lo >= 1.0) & (f_hi <= 1.0)
    theta = np.full(n, EPS)
    active = np.flatnonzero(has_root)
    if active.size:
        Ca, aa = (C, a) if active.size == n else (C[active], a[active])
        # Start where the largest single term equals 1: a lower bound of the root (phi is decreasing).
        th = np.clip(np.max(Ca - aa, axis=1), EPS, THETA_MAX)
        lo_a, hi_a = lo[active], hi[active]
        for _ in range(max_iter):
            T = Ca / (aa + th[:, None])
            val = T.sum(axis=1)
            T /= aa + th[:, None]
            deriv = -T.sum(axis=1)
            del T
            above = val > 1.0
            lo_a = np.where(above, np.maximum(lo_a, th), lo_a)
            hi_a = np.where(~above, np.minimum(hi_a, th), hi_a)
            # Newton on g = 1/phi - 1 (close to linear in theta): g' = -phi'/phi^2.
            new = th - (1.0 / val - 1.0) / (-deriv / val ** 2)
            bad = ~np.isfinite(new) | (new <= lo_a) | (new >= hi_a)
            new = np.where(bad, np.sqrt(lo_a * hi_a), new)
            done = np.abs(val - 1.0) <= tol
            conv = np.all(done) or np.all(np.abs(new - th) <= 1e-15 * np.maximum(th, 1.0))
            th = np.where(done, th, new)
            if conv:
                break
        theta[active] = th
    B = C / (a + theta[:, None])
    return B, theta, has_root


@register
class TRCE(ConsensusMethod):
    """Tri-level robust clustering ensemble (Zhou et al., AAAI 2021).

    Labels are the connected components of the learned graph, so the number of clusters can differ from c
    (the spec's rule: evaluate it as it is). Deterministic: no random numbers are used.
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
        Y = one_hot(members)
        offsets = cluster_offsets(members)
        sizes = np.asarray(Y.sum(axis=0)).ravel()

        def weighted_sum(alpha):
            # sum_k S_k / alpha_k = Y diag(1 / (alpha_k s_e)) Y^T  (dense n x n)
            col_alpha = np.repeat(alpha, np.diff(offsets))
            Yw = Y @ sparse.diags(1.0 / (col_alpha * sizes))
            return (Yw @ Y.T).toarray()

        alpha = np.full(m, 1.0 / m)
        S = weighted_sum(np.ones(m)) / m  # mean of the S_k (already symmetric)
        vals, F = laplacian_smallest(laplacian(S), c + 1)
        F = F[:, :c]
        B = S.copy()
        d1 = kl_to_graph(B, Y, members, offsets)
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
            # b. self-paced threshold and instance weights
            if lam is None:
                idx = min(max(n // 10, 1), n) - 1
                lam = 2.0 * np.sort(d2)[idx]
            else:
                lam *= 1.1
            w = np.minimum(lam / np.maximum(2.0 * d2, EPS), 1.0)
            # c. distances between the embedding rows
            distf = squared_distances(F)
            # d. weighted sum of the base graphs, rows scaled by w_i^2
            C = weighted_sum(alpha)
            C *= (w ** 2)[:, None]
            # e. B-step
            B, _, has_root = solve_b_rows(C, distf, rho)
            no_root_rows += int(np.sum(~has_root))
            del C
            # f. S-step: rows of B - rho/(2 gamma) distf projected onto the simplex
            S = project_simplex(B - (rho / (2.0 * gamma)) * distf)
            del distf
            # g. new KL terms, symmetrised graph, embedding
            d1 = kl_to_graph(B, Y, members, offsets)
            S = (S + S.T) / 2.0
            F_old = F
            vals, F = laplacian_smallest(laplacian(S), c + 1)
            F = F[:, :c]
            # h. graph weights alpha_k ~ sqrt(sum_i w_i^2 d1(i, k))
            score = np.sqrt(np.maximum((w ** 2) @ d1, 0.0))
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
        labels = component_labels(S)
        self.consensus_matrix_ = S
        self.diagnostics_ = {
            "n_iter": n_iter,
            "converged": converged,
            "rho": history["rho"],
            "fn1": history["fn1"],
            "alpha": [float(a) for a in alpha],
            "b_rows_without_root": no_root_rows,
        }
        return labels

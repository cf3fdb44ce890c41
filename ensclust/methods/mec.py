"""MEC: multi-view ensemble clustering (Tao, Liu, Li, Ding, Fu, "From Ensemble Clustering to Multi-View
Clustering", IJCAI 2017; called MVEC there) - a RECONSTRUCTION, not the authors' algorithm.

specs/baselines/robust_family.md section 7 has only the abstract. Of the paper's full text only the title,
authors, abstract and the first lines of the introduction could be read (the stored copy of the text is
returned by its opening only); no code by the authors was found. What the paper states (abstract):

* MVEC generates basic partitions (BPs) for each view individually and seeks a consensus partition of all BPs;
* instead of fusing the BPs directly it applies a low-rank and sparse decomposition to "explicitly consider
  the connection between different views and detect the noises in each view";
* the spectral ensemble clustering task is "involved by our framework with a carefully designed constraint",
  so that one optimisation problem yields the consensus partition.

SPCE (the only paper here that runs it) calls it MEC [41], applies it to single-view ensembles of 10 or 20
base clusterings, shows its learned consensus matrix (SPCE Fig. 1(c)) and reports it out of memory on Tdt2
(n = 9394). Nothing else about MEC is known: not the objective's exact form, not the constraint, not the
solver, not the parameters, not how SPCE turned one ensemble into "views". The rows of experiments that use
``mec`` are therefore a reconstruction and must be labelled so.

One third-party reading exists: an unofficial MATLAB re-implementation in a survey's benchmark code
(xuz2019/Ensemble-Clustering-Review, benchmark_local_code/tao2017ensemble, "not claimed to be an official code
release"). It reads the model as a self-representation of ONE co-association matrix S of the whole ensemble
(m = 1 view): |J|_* + lambda2 |E|_1 + tr(H^T L_Z H) with S Z + E = S + H H^T, Z = J, Z >= 0, Z 1 = 1, lambda1 = 1,
lambda2 = 0.01 ("the paper's section 4 defaults"), a linearised ADMM step for Z, 100 iterations, k-means on H.
The TKDD 2023 follow-up's abstract (Zhang et al., "from matrix to tensor") also describes the approach as a
self-representation with a low-rank constraint. Neither is the authors' text, and the coupling term H H^T in
that constraint cannot be checked against the paper, so the reconstruction below is kept; the difference
(per-member projector views with P_v = Z + E_v versus S = S Z + E - H H^T on one view) is the main open
reading of MEC.

Reconstruction (every equation below is ours; R-numbers are cited in the code)
-----------------------------------------------------------------------------
Views. Each base clustering q is one view (``n_views = 0``, default). Reasons: (a) the paper's views carry
their own BPs and one co-association matrix each, and a single-view ensemble has no feature views, so the
finest faithful reading is one BP per view; (b) it needs no grouping rule, and the result does not depend on
the order of the members (a grouping would); (c) SPCE's out-of-memory on Tdt2 with 20 members fits a model
that keeps several dense n x n matrices per member (see Memory). ``n_views = g > 0`` splits the members, in
their given order, into g contiguous groups (``numpy.array_split``) and uses one view per group; that result
depends on the member order.

View matrix (R0). The view of a set G of members is the cluster-size-normalised co-association
    P_G = (1/|G|) sum_{q in G} B_q diag(1/|C|) B_q^T,   (P_q)_ij = [l_q(i) = l_q(j)] / |C_q(i)|,
built from the n x K indicator matrix. P_q is the orthogonal projector onto the span of partition q's
cluster indicators: symmetric, PSD, rank k_q, rows summing to one. Row-stochastic view matrices are what the
low-rank + sparse multi-view decomposition this abstract describes (robust multi-view spectral clustering,
Xia et al., AAAI 2014) works on; the plain co-association matrix has row sums equal to cluster sizes.

Model (R1), the low-rank + sparse decomposition of the views coupled with spectral clustering of the shared
part:
    min_{Z, Q, E_v, H}  |Q|_* + lambda sum_v |E_v|_1 - beta tr(H^T Z H)
    s.t.  P_v = Z + E_v (v = 1..V),  Z = Q,  Z >= 0,  Z 1 = 1,  H^T H = I_k.
"The carefully designed constraint" is read as Z >= 0, Z 1 = 1: with unit row sums the degree matrix of Z is
the identity, so the normalised-cut (spectral ensemble clustering) term tr(H^T D^-1/2 Z D^-1/2 H) becomes
tr(H^T Z H), linear in Z, and the whole model is one ALM problem. For symmetric Z and beta = 1 the first and
last terms give |Z|_* - max_H tr(H^T Z H) = the sum of the singular values beyond the k-th (a truncated
nuclear norm), so beta in [0, 1] keeps the objective bounded below and beta = 1 penalises only what lies
outside a k-dimensional cluster subspace.

Solver: inexact ALM (ADMM), the scheme of robust multi-view spectral clustering. Augmented Lagrangian
    L = |Q|_* + lambda sum |E_v|_1 - beta <Z, H H^T> + sum_v <Y_v, P_v - Z - E_v> + mu/2 |P_v - Z - E_v|_F^2
        + <Y, Z - Q> + mu/2 |Z - Q|_F^2.                                                          (R2)
  Q   = SVT_{1/mu}(Z + Y/mu)                                                                       (R3)
  Z   = row-wise simplex projection of [sum_v (P_v - E_v + Y_v/mu) + Q - Y/mu + (beta/mu) H H^T] / (V + 1)
        (exact: the Z-subproblem is an isotropic quadratic over the row simplices)                (R4)
  E_v = soft-threshold_{lambda/mu}(P_v - Z + Y_v/mu)                                               (R5)
  H   = top-k eigenvectors of (Z + Z^T)/2 (maximises tr(H^T Z H) under H^T H = I)                  (R6)
  Y_v += mu (P_v - Z - E_v);  Y += mu (Z - Q);  mu = min(rho mu, mu_max)                           (R7)
Start: Z = Q = the mean of the views, E_v = Y_v = Y = 0, H from Z. Stop when the largest primal residual
max(max_v |P_v - Z - E_v|_inf, |Z - Q|_inf) < tol, or after max_iter iterations. Labels: k-means (n_init 10)
on the rows of H, as the spectral ensemble clustering step; ``consensus_matrix_`` is (Z + Z^T)/2.

Defaults (ours; the paper's are unknown). lambda = 0.005 and tol = 1e-6 are the values of the robust
multi-view spectral clustering solver (Xia et al.), whose view matrices are on the same row-stochastic scale.
Its penalty schedule (mu0 = 1e-3, rho = 1.9, 100 iterations) is not kept: on the planted case of the tests
(n = 90, m = 20) it stops at a feasible point that is not low-rank (rank(Q) = 87, R1 = 7.37), while mu0 = 0.1,
rho = 1.1 reaches the rank-3 solution (R1 = 7.11) in about 140 iterations; max_iter = 500. beta = 0.5 is the
middle of the bounded range [0, 1]; beta = 1 lost the planted clusters on one of three seeds (ARI 0.56).

Diagnostics: ``objective`` (R1 at each iterate), ``residual`` (primal residual per iteration), ``n_iter``,
``converged``, ``rank_Q``, ``n_views``.

Memory and time. Per view the solver keeps E_v and Y_v, plus Z, Q, Y and a few temporaries: about 2V + 6
dense n x n float64 matrices (the views are rebuilt from the labels on the fly). With V = m = 20 at n = 9394
that is about 46 x 0.7 GB = 32 GB, in line with SPCE's out-of-memory on Tdt2 (on a 32 GB machine). Each
iteration does one full n x n SVD (R3), one partial symmetric eigendecomposition (R6), one more SVD for the
recorded objective, and one row-wise sort (R4): O(n^3 + V n^2) time. Wine (n = 178, M = 10, benchmarks/mec.yaml):
128 iterations, 2.5 s CPU; below n = 1000 BLAS runs on one thread (two threads on the shared 2-core machine
took 220 s wall for the same fit).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ensclust.core.labels import cluster_counts, one_hot
from ensclust.core.simplex import project_simplex
from ensclust.core.spectral import kmeans_labels
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param
from ensclust.methods.rsec import svt


def view_factors(members: np.ndarray, n_views: int = 0) -> list[np.ndarray]:
    """Dense factors F_v with P_v = F_v F_v^T (R0): scaled one-hot columns of the members of each view.

    ``n_views = 0``: one view per member; ``g > 0``: g contiguous groups of members (numpy.array_split).
    """
    n, m = members.shape
    B = one_hot(members).toarray()
    sizes = B.sum(axis=0)
    B /= np.sqrt(np.where(sizes > 0, sizes, 1.0))[None, :]
    offsets = np.concatenate([[0], np.cumsum(cluster_counts(members))])
    groups = [[q] for q in range(m)] if n_views == 0 else [list(g) for g in np.array_split(np.arange(m), n_views)]
    factors = []
    for g in groups:
        if not g:
            continue
        cols = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in g])
        factors.append(np.ascontiguousarray(B[:, cols]) / np.sqrt(len(g)))
    return factors


def soft_threshold(G: np.ndarray, tau: float) -> np.ndarray:
    """Entry-wise l1 prox: argmin_E tau |E|_1 + 1/2 |E - G|_F^2."""
    return np.sign(G) * np.maximum(np.abs(G) - tau, 0.0)


def top_eigvecs(Z: np.ndarray, k: int) -> np.ndarray:
    """Top-k eigenvectors of (Z + Z^T)/2 with a fixed sign (largest-magnitude entry positive) (R6)."""
    n = Z.shape[0]
    k = min(k, n)
    _, V = linalg.eigh((Z + Z.T) / 2.0, subset_by_index=[n - k, n - 1], check_finite=False)
    V = V[:, ::-1]
    signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


def z_step(targets_sum: np.ndarray, n_terms: int, H: np.ndarray, beta: float, mu: float) -> np.ndarray:
    """(R4): argmin over row-stochastic Z >= 0 of -beta <Z, H H^T> + mu/2 sum_t |Z - A_t|_F^2,
    where ``targets_sum`` = sum_t A_t over ``n_terms`` targets."""
    return project_simplex((targets_sum + (beta / mu) * (H @ H.T)) / n_terms)


def mec_objective(Q_nuclear: float, E: list[np.ndarray], Z: np.ndarray, H: np.ndarray, lam: float,
                  beta: float) -> float:
    """(R1) |Q|_* + lambda sum_v |E_v|_1 - beta tr(H^T Z H)."""
    return float(Q_nuclear + lam * sum(np.abs(Ev).sum() for Ev in E) - beta * np.sum(H * (Z @ H)))


def mec_solve(members: np.ndarray, k: int, *, lam: float = 0.005, beta: float = 0.5, n_views: int = 0,
              mu0: float = 0.1, rho: float = 1.1, mu_max: float = 1e10, tol: float = 1e-6,
              max_iter: int = 500):
    """Inexact ALM of the reconstructed MEC model (R1) on relabelled ``members`` (n x m).

    Returns ``(H, Z, E, diagnostics)``: the n x k embedding, the shared n x n matrix, the list of view errors,
    and a dict with ``objective``, ``residual``, ``n_iter``, ``converged``, ``rank_Q``, ``n_views``.
    """
    n, _ = members.shape
    F = view_factors(members, n_views)
    V = len(F)

    def view(v):  # P_v from its factor (R0)
        return F[v] @ F[v].T

    Z = sum(view(v) for v in range(V)) / V
    Q = Z.copy()
    Y = np.zeros((n, n))
    E = [np.zeros((n, n)) for _ in range(V)]
    Yv = [np.zeros((n, n)) for _ in range(V)]
    H = top_eigvecs(Z, k)
    mu = mu0
    objective, residuals, ranks = [], [], []
    converged = False
    for _ in range(max_iter):
        # (R3) Q-step: singular value thresholding
        Q, rank = svt(Z + Y / mu, 1.0 / mu)
        # (R4) Z-step: isotropic quadratic + linear spectral term, projected onto the row simplices
        acc = Q - Y / mu
        for v in range(V):
            acc += view(v) - E[v] + Yv[v] / mu
        Z = z_step(acc, V + 1, H, beta, mu)
        del acc
        # (R5) E-steps and (R7) the view multipliers, one view at a time
        res = float(np.abs(Z - Q).max())
        for v in range(V):
            Pv = view(v)
            E[v] = soft_threshold(Pv - Z + Yv[v] / mu, lam / mu)
            Pv -= Z
            Pv -= E[v]  # primal residual P_v - Z - E_v
            res = max(res, float(np.abs(Pv).max()))
            Yv[v] += mu * Pv
        # (R6) H-step
        H = top_eigvecs(Z, k)
        Y += mu * (Z - Q)
        q_nuc = float(np.linalg.svd(Q, compute_uv=False).sum()) if rank else 0.0
        objective.append(mec_objective(q_nuc, E, Z, H, lam, beta))
        residuals.append(res)
        ranks.append(rank)
        if res < tol:
            converged = True
            break
        mu = min(rho * mu, mu_max)  # (R7)
    diagnostics = {"objective": objective, "residual": residuals, "n_iter": len(residuals),
                   "converged": converged, "rank_Q": ranks, "n_views": V}
    return H, Z, E, diagnostics


@register
class MEC(ConsensusMethod):
    """MEC (MVEC, Tao et al. IJCAI 2017), RECONSTRUCTED from the abstract: one view per base clustering,
    shared low-rank row-stochastic Z + sparse per-view errors, coupled with a spectral embedding H; k-means on H.

    See the module docstring for what the paper states and what is ours.
    """

    name = "mec"
    randomized = True
    summary = ("reconstruction (paper text unavailable) of multi-view ensemble clustering: low-rank + sparse "
               "decomposition of per-member views with a spectral term, k-means on H")
    params = {
        "lam": Param(0.005, low=0.0, low_open=True, doc="weight of the l1 norm of the view errors E_v (R1)",
                     source="reconstruction: the value of robust multi-view spectral clustering (Xia et al. "
                            "2014) on the same row-stochastic scale; MEC's own value unknown"),
        "beta": Param(0.5, low=0.0, high=1.0, doc="weight of the spectral term -tr(H^T Z H) (R1)",
                      source="reconstruction: middle of [0, 1], the range where the objective stays bounded"),
        "n_views": Param(0, type="int", low=0,
                         doc="0: one view per base clustering; g > 0: g contiguous groups of members",
                         source="reconstruction: SPCE does not say how it formed views (module docstring)"),
        "mu0": Param(0.1, low=0.0, low_open=True, doc="initial ALM penalty mu",
                     source="reconstruction: reaches the low-rank solution of R1 on the planted test case "
                            "(module docstring, Defaults)"),
        "rho": Param(1.1, low=1.0, low_open=True, doc="growth factor of mu per iteration",
                     source="reconstruction: see mu0; the Xia et al. default 1.9 stops at a full-rank point"),
        "mu_max": Param(1e10, low=0.0, low_open=True, doc="upper bound of mu",
                        source="reconstruction: common inexact-ALM bound"),
        "tol": Param(1e-6, low=0.0, low_open=True, doc="stop when the largest primal residual (sup norm) < tol",
                     source="reconstruction: robust multi-view spectral clustering solver default"),
        "max_iter": Param(500, type="int", low=1, doc="maximum ALM iterations",
                          source="reconstruction: about 140 are used on the planted test case"),
    }

    def _fit(self, members, n_clusters, X, rng):
        # BLAS threads are the caller's choice (the experiment runner fits with one)
        H, Z, _, diag = mec_solve(members, n_clusters, lam=self.lam, beta=self.beta, n_views=self.n_views,
                                  mu0=self.mu0, rho=self.rho, mu_max=self.mu_max, tol=self.tol,
                                  max_iter=self.max_iter)
        self.diagnostics_ = diag
        self.consensus_matrix_ = (Z + Z.T) / 2.0
        return kmeans_labels(H, n_clusters, random_state=rng, n_init=10)

"""SCCBG: self-paced consensus clustering with bipartite graph (Zhou, Du & Li, IJCAI 2020).

specs/baselines/robust_family.md section 5, restating the authors' MATLAB ``alg/SCCBG.m``. The variable is the
object-cluster bipartite graph S in [0, 1]^{n x K}, started at the one-hot matrix H0 of the ensemble; a
self-paced weight matrix W (n x K) selects the reliable object-cluster links; A = H0^T H0 (raw overlap counts,
as the demo passes ``C = SS'*SS``) ties clusters that share objects. Per iteration (at most 20):

a. W-step (while some W < 1): per object i, the box QP over x in [0, 1]^K
   min sum_a x_a^2 (S_ia - H0_ia)^2 + gamma sum_ab A_ab x_a x_b (S_ia - S_ib)^2 - rho sum_a x_a,
   which is not necessarily convex; the code uses MATLAB ``quadprog`` (trust-region-reflective, a local
   solution from W(i, :)).
b. Bipartite spectral step: SS1 = D1^-1/2 S D2^-1/2; top-c eigenpairs of SS1^T SS1 (K x K) give the cluster
   embedding V and the object embedding U = SS1 V / sqrt(ev), both scaled by sqrt(2)/2. Rank control on the
   bipartite graph: fewer than c unit eigenvalues -> lambda doubles; more than c -> lambda halves (the code's
   "restore" line is a no-op and is not reproduced); exactly c -> stop before the S-step.
c. dist_ia = squared distance between row i of D1^-1/2 U and row a of D2^-1/2 V.
d. S-step: per object i, the convex box QP over s in [0, 1]^K
   min sum_a W_ia^2 (s_a - H0_ia)^2 + gamma sum_ab A_ab W_ia W_ib (s_a - s_b)^2 + lambda sum_a dist_ia s_a.
e. S(S < 1e-4) = 0; rho doubles.

Labels = connected components of [[0, S], [S^T, 0]] restricted to the objects (the count can differ from c).

Difference from the authors' code (documented, unavoidable): the n box QPs of each step are separable, so they
are solved together as one bound-constrained problem by SciPy's L-BFGS-B (started at the previous W or S, with
analytic gradients) instead of n calls of MATLAB's trust-region ``quadprog``. The convex S-step has the same
solution up to the solver tolerance; the non-convex W-step can stop at a different local solution.

Memory: n x K dense arrays (S, W, H0, dist and a few products) and the K x K matrix A; no n x n matrix.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.linalg import eigh

from ensclust.core.labels import one_hot
from ensclust.methods import register
from ensclust.methods._robust_graph import bipartite_component_labels, squared_distances
from ensclust.methods.base import ConsensusMethod, Param

#: Rank-control tolerance on the sum of the top eigenvalues (authors' SCCBG.m: 1e-7).
RANK_TOL = 1e-7
#: Entries of S below this are set to 0 after every S-step (authors' SCCBG.m).
PRUNE = 1e-4


def _inv_sqrt(v: np.ndarray) -> np.ndarray:
    out = np.zeros_like(v)
    pos = v > 0
    out[pos] = 1.0 / np.sqrt(v[pos])
    return out


def w_step_objective(X: np.ndarray, S: np.ndarray, H0: np.ndarray, A: np.ndarray, gamma: float, rho: float):
    """Sum over objects of the W-step objective at X (n x K) and its gradient.

    sum_ab A_ab x_a x_b (s_a - s_b)^2 = 2 sum_a x_a s_a^2 (A x)_a - 2 (x o s)^T A (x o s) for symmetric A.
    """
    R2 = (S - H0) ** 2
    S2 = S * S
    XA = X @ A
    XS = X * S
    XSA = XS @ A
    XS2A = (X * S2) @ A
    value = float(np.sum(X * X * R2) + gamma * (2.0 * np.sum(X * S2 * XA) - 2.0 * np.sum(XS * XSA))
                  - rho * np.sum(X))
    grad = 2.0 * X * R2 + 2.0 * gamma * (S2 * XA + XS2A - 2.0 * S * XSA) - rho
    return value, grad


def s_step_objective(Sv: np.ndarray, W: np.ndarray, H0: np.ndarray, A: np.ndarray, gamma: float, lam: float,
                     dist: np.ndarray):
    """Sum over objects of the S-step objective at Sv (n x K) and its gradient.

    sum_ab A_ab w_a w_b (s_a - s_b)^2 = 2 [sum_a w_a s_a^2 (A w)_a - (w o s)^T A (w o s)] (a Laplacian form).
    """
    W2 = W * W
    diff = Sv - H0
    WA = W @ A
    WS = W * Sv
    WSA = WS @ A
    value = float(np.sum(W2 * diff * diff) + 2.0 * gamma * (np.sum(W * Sv * Sv * WA) - np.sum(WS * WSA))
                  + lam * np.sum(dist * Sv))
    grad = 2.0 * W2 * diff + 4.0 * gamma * (W * WA * Sv - W * WSA) + lam * dist
    return value, grad


def _box_minimize(fun, x0: np.ndarray, max_iter: int, tol: float):
    shape = x0.shape
    bounds = optimize.Bounds(np.zeros(x0.size), np.ones(x0.size))

    def flat(x):
        f, g = fun(x.reshape(shape))
        return f, g.ravel()

    res = optimize.minimize(flat, np.clip(x0, 0.0, 1.0).ravel(), jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15, "maxcor": 10})
    return np.clip(res.x.reshape(shape), 0.0, 1.0), res


def bipartite_spectrum(S: np.ndarray, n_clusters: int):
    """Top c + 1 eigenpairs (descending) of SS1^T SS1, SS1 = D1^-1/2 S D2^-1/2, and the embeddings U, V."""
    d1 = _inv_sqrt(S.sum(axis=1))
    d2 = _inv_sqrt(S.sum(axis=0))
    SS1 = S * d1[:, None] * d2[None, :]
    M = SS1.T @ SS1
    K = M.shape[0]
    k = min(n_clusters + 1, K)
    vals, vecs = eigh((M + M.T) / 2.0, subset_by_index=[K - k, K - 1])
    vals, vecs = vals[::-1], vecs[:, ::-1]
    V = vecs[:, :n_clusters]
    ev = np.maximum(vals[:n_clusters], np.finfo(float).tiny)
    U = (SS1 @ V) / np.sqrt(ev)[None, :]
    scale = np.sqrt(2.0) / 2.0
    return vals, scale * U, scale * V, d1, d2


@register
class SCCBG(ConsensusMethod):
    """Self-paced consensus clustering with bipartite graph (Zhou, Du & Li, IJCAI 2020).

    Deterministic (no random numbers); labels are the connected components of the learned bipartite graph,
    so the count can differ from c.
    """

    name = "sccbg"
    summary = "self-paced learning of the object-cluster bipartite graph (box QPs), connected components"
    may_return_other_k = True
    params = {
        "gamma": Param(1e-3, type="float", low=0.0, low_open=True,
                       doc="weight of the cluster-overlap smoothness term",
                       source="inside the authors' demo grid 10^-5..10^0 (tables: oracle selection on it)"),
        "max_iter": Param(20, type="int", low=1, doc="outer iterations", source="authors' SCCBG.m (maxiter = 20)"),
        "qp_iter": Param(300, type="int", low=1, doc="L-BFGS-B iterations per (joint) QP step",
                         source="ensclust choice (replaces quadprog's per-row trust-region iterations)"),
        "qp_tol": Param(1e-8, type="float", low=0.0, low_open=True, doc="L-BFGS-B projected-gradient tolerance",
                        source="ensclust choice (quadprog default optimality tolerance order)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        c = n_clusters
        gamma = self.gamma
        H0 = one_hot(members).toarray()
        A = H0.T @ H0
        S = H0.copy()
        W = np.zeros_like(H0)
        lam, rho = 1.0, 0.5
        history = {"lambda": [], "fn1": [], "s_objective": []}
        converged = False
        n_iter = 0
        for it in range(1, self.max_iter + 1):
            n_iter = it
            if W.min() < 1.0:
                W, _ = _box_minimize(lambda X_, S=S, rho=rho: w_step_objective(X_, S, H0, A, gamma, rho),
                                     W, self.qp_iter, self.qp_tol)
            vals, U, V, d1, d2 = bipartite_spectrum(S, c)
            fn1 = float(np.sum(vals[:c]))
            fn2 = float(np.sum(vals[:c + 1]))
            history["lambda"].append(lam)
            history["fn1"].append(fn1)
            if fn1 < c - RANK_TOL:
                lam *= 2.0
            elif fn2 > c + 1 - RANK_TOL:
                lam /= 2.0
            else:
                converged = True
                break
            dist = squared_distances(U * d1[:, None], V * d2[:, None])
            S, res = _box_minimize(lambda S_, dist=dist, lam=lam, W=W: s_step_objective(S_, W, H0, A, gamma, lam, dist),
                                   S, self.qp_iter, self.qp_tol)
            history["s_objective"].append(float(res.fun))
            S[S < PRUNE] = 0.0
            rho *= 2.0
        labels = bipartite_component_labels(S)
        self.diagnostics_ = {
            "n_iter": n_iter,
            "converged": converged,
            "lambda": history["lambda"],
            "fn1": history["fn1"],
            "s_objective": history["s_objective"],
        }
        return labels

"""INA: instance-wise weighted NMF aggregation (Zheng, Zhu, Gao, Mamitsuka, IJCAI 2015).

Objective (as given in the RCEC paper; specs/baselines/nmf_family.md section 3):

    min_{H, G, Psi >= 0} ||L o Psi - H G^T||_F^2 + lambda ||Psi||_F^2   s.t. (L o Psi) 1 = 1.

No original code was found; the solver is the spec's block-coordinate reconstruction: Lee-Seung multiplicative
steps for H and G (each monotone) and an exact Psi-step. Psi only matters on the support of L (one entry per
base clustering in every row), so X = L o Psi is stored as an n x m array of values; the Psi-step is the
row-wise Euclidean projection of r / (1 + lambda) onto the simplex, r = (H G^T) on the support.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import cluster_offsets
from ensclust.core.simplex import project_simplex
from ensclust.methods import register
from ensclust.methods._nmf_runs import N_RUNS, run_several
from ensclust.methods.base import ConsensusMethod, Param

EPS = 1e-12


class _Support:
    """Column index of every row's entry in each base clustering: X[i, cols[i, q]] = vals[i, q]."""

    def __init__(self, members: np.ndarray):
        self.n, self.m = members.shape
        self.cols = members + cluster_offsets(members)[None, :-1]
        self.K = int(cluster_offsets(members)[-1])
        self.rows = np.repeat(np.arange(self.n), self.m)

    def matrix(self, vals: np.ndarray) -> sparse.csr_matrix:
        return sparse.csr_matrix((vals.ravel(), (self.rows, self.cols.ravel())), shape=(self.n, self.K))

    def gather(self, H: np.ndarray, G: np.ndarray) -> np.ndarray:
        """(H G^T) on the support: r[i, q] = H_i . G_{cols[i, q]}."""
        return np.einsum("ic,iqc->iq", H, G[self.cols])


def ina_objective(support: _Support, vals, H, G, lam) -> float:
    r = support.gather(H, G)
    fit = (vals**2).sum() - 2.0 * (vals * r).sum() + float(((H.T @ H) * (G.T @ G)).sum())
    return float(fit + lam * (vals**2).sum())


@register
class INA(ConsensusMethod):
    """Instance-wise weighted NMF aggregation (reliability weights per instance and base cluster)."""

    name = "ina"
    randomized = True
    may_return_other_k = True
    summary = "instance-wise weighted NMF aggregation (block-coordinate solver)"
    params = {
        "lambda": Param(0.1, low=0.0, doc="ridge weight on the reliability weights Psi",
                        source="not reported by RCEC; spec grid {0.01, 0.1, 1, 10}, default chosen here"),
        "tol": Param(1e-6, low=0.0, doc="relative objective change to stop", source="nmf_family.md 3"),
        "max_iter": Param(500, type="int", low=1, doc="outer iterations at most", source="nmf_family.md 3"),
        "n_runs": N_RUNS,
    }

    def solve(self, members, n_clusters, rng):
        lam = self.lambda_
        sup = _Support(members)
        vals = np.full((sup.n, sup.m), 1.0 / sup.m)  # X = L / m: uniform reliability
        H = rng.uniform(0.0, 1.0, (sup.n, n_clusters))
        G = rng.uniform(0.0, 1.0, (sup.K, n_clusters))
        history = [ina_objective(sup, vals, H, G, lam)]
        converged = False
        for _ in range(self.max_iter):
            X = sup.matrix(vals)
            H *= (X @ G) / (H @ (G.T @ G) + EPS)
            G *= (X.T @ H) / (G @ (H.T @ H) + EPS)
            vals = project_simplex(sup.gather(H, G) / (1.0 + lam))
            history.append(ina_objective(sup, vals, H, G, lam))
            if abs(history[-2] - history[-1]) <= self.tol * max(abs(history[-2]), 1e-300):
                converged = True
                break
        return H, G, vals, history, converged

    def _fit(self, members, n_clusters, X, rng):
        def once(r):
            H, G, vals, hist, conv = self.solve(members, n_clusters, r)
            self.reliability_ = vals
            return np.argmax(H, axis=1), {"objective": hist, "n_iter": len(hist) - 1, "converged": conv}

        return run_several(once, self.n_runs, n_clusters, rng, self.diagnostics_)

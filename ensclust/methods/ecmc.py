"""ECMC: ensemble clustering by matrix completion (Yi, Yang, Jin, Jain, Mahdavi, ICDM 2012).

specs/baselines/nmf_family.md section 4. Pairs with co-association >= d1 are observed as 1, pairs <= d0 as 0,
the rest are unobserved; the matrix is completed by soft-impute (Mazumder, Hastie & Tibshirani 2010),
Z <- SVT_tau(P_Omega(A~) + P_Omega_perp(Z)), then clipped to [0, 1] and cut by NJW spectral clustering.

No original code was found (confidence low-medium): thresholds d0 = 0.1, d1 = 0.9 and tau = 0.05 sigma_1 are
the spec's fixed defaults, not the paper's. The matrices are symmetric, so the singular value thresholding uses
an eigendecomposition. ``svt="exact"`` finds every eigenpair above tau (dense for small n, otherwise a partial
eigensolver whose size is doubled until it covers all of them). ``svt="truncated"`` (the spec's recommendation
for large n, an approximation) keeps at most rank 2c + 10 and tracks that subspace across iterations with two
warm-started subspace-iteration steps, O(n^2 r) per iteration instead of a fresh eigensolve. ``svt="auto"``
(default) is exact up to n = 1000 and truncated above.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import eigsh

from ensclust.core.coassoc import coassociation
from ensclust.core.spectral import spectral_clustering
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

_DENSE_EIG = 800


def symmetric_svt(M: np.ndarray, tau: float, rank_hint: int, rng) -> tuple[np.ndarray, int]:
    """Singular value thresholding of a symmetric matrix: sum over |l_i| > tau of sign(l_i)(|l_i| - tau) v_i v_i^T."""
    n = M.shape[0]
    if n <= _DENSE_EIG:
        w, V = np.linalg.eigh(M)
    else:
        r = min(rank_hint, n - 2)
        while True:
            w, V = eigsh(M, k=r, which="LM", v0=rng.standard_normal(n))
            if np.abs(w).min() <= tau or r >= n - 2:
                break
            r = min(2 * r, n - 2)
    keep = np.abs(w) > tau
    shrunk = np.sign(w[keep]) * (np.abs(w[keep]) - tau)
    Vk = V[:, keep]
    return (Vk * shrunk) @ Vk.T, int(keep.sum())


def truncated_svt(M: np.ndarray, tau: float, V: np.ndarray, n_power: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """SVT restricted to the top-|eigenvalue| subspace tracked from ``V`` (n x r) by subspace iteration."""
    for _ in range(n_power):
        V, _ = np.linalg.qr(M @ V)
    w, R = np.linalg.eigh(V.T @ M @ V)  # Rayleigh-Ritz
    V = V @ R
    keep = np.abs(w) > tau
    shrunk = np.sign(w[keep]) * (np.abs(w[keep]) - tau)
    return (V[:, keep] * shrunk) @ V[:, keep].T, V


@register
class ECMC(ConsensusMethod):
    """Ensemble clustering by low-rank completion of the reliable part of the co-association matrix."""

    name = "ecmc"
    randomized = True
    summary = "ensemble clustering by matrix completion (reliable pairs, soft-impute, spectral)"
    params = {
        "d0": Param(0.1, low=0.0, high=1.0, doc="pairs with A <= d0 are observed as dissimilar (0)",
                    source="nmf_family.md 4 fixed default (not from the paper)"),
        "d1": Param(0.9, low=0.0, high=1.0, doc="pairs with A >= d1 are observed as similar (1)",
                    source="nmf_family.md 4 fixed default (not from the paper)"),
        "tau": Param(0.05, low=0.0, low_open=True, doc="soft threshold relative to sigma_1(P_Omega(A))",
                     source="nmf_family.md 4 grid {0.01, 0.05, 0.1}"),
        "tol": Param(1e-4, low=0.0, doc="relative change of Z to stop", source="nmf_family.md 4"),
        "max_iter": Param(200, type="int", low=1, doc="soft-impute iterations at most", source="nmf_family.md 4"),
        "svt": Param("auto", type="str", choices=("auto", "exact", "truncated"),
                     doc="exact SVT, or rank <= 2c+10 tracked by subspace iteration (auto: exact up to n=1000)",
                     source="nmf_family.md 4 (truncated SVD with rank <= 2c+10 for large n)"),
    }

    @classmethod
    def _check_params(cls, values, where=""):
        from ensclust.errors import UserError

        if values["d0"] >= values["d1"]:
            prefix = f"{where}: " if where else ""
            raise UserError(f"{prefix}ecmc needs d0 < d1, got d0={values['d0']} and d1={values['d1']}")

    def _fit(self, members, n_clusters, X, rng):
        A = coassociation(members, dtype=np.float64)
        observed = (A >= self.d1) | (A <= self.d0)
        target = np.where(A >= self.d1, 1.0, 0.0)
        P = np.where(observed, target, 0.0)
        sigma1 = float(np.abs(eigsh(P, k=1, which="LM", v0=rng.standard_normal(len(P)))[0][0])) if len(P) > 2 \
            else float(np.abs(np.linalg.eigvalsh(P)).max())
        tau = self.tau * sigma1
        Z = P.copy()
        rank = 2 * n_clusters + 10
        truncated = self.svt == "truncated" or (self.svt == "auto" and len(A) > 1000)
        V = rng.standard_normal((len(A), min(rank, len(A)))) if truncated else None
        converged = False
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            filled = np.where(observed, target, Z)
            if truncated:
                Z_new, V = truncated_svt(filled, tau, V)
            else:
                Z_new, rank_used = symmetric_svt(filled, tau, rank, rng)
                rank = max(rank_used + 5, 2 * n_clusters + 10)
            change = np.linalg.norm(Z_new - Z) / max(np.linalg.norm(Z), 1e-12)
            Z = Z_new
            if change < self.tol:
                converged = True
                break
        Z = np.clip((Z + Z.T) / 2.0, 0.0, 1.0)
        self.consensus_matrix_ = Z
        self.diagnostics_.update(n_iter=n_iter, converged=converged, svt="truncated" if truncated else "exact", observed_fraction=float(observed.mean()),
                                 completion_residual=float(np.abs((Z - target)[observed]).max()))
        return spectral_clustering(Z, n_clusters, random_state=rng)

"""Plain dense SPCE (specs/spce.md 3.6): the reference that the fast path is tested against.

Every quantity is an explicit n x n matrix (the base connectivity matrices S^(i), G, W, E, S) and Y comes from
a dense eigendecomposition of the whole Laplacian, exactly as the pseudocode of spec 3.6 reads. It costs
O(m n^2) memory and O(n^3) time per inner iteration, so it is meant for small n (validation and tests):
``SPCE(solver="reference")``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.sparse.csgraph import connected_components

from ensclust.errors import UserError

#: largest n the reference accepts (a few n x n x m arrays and an O(n^3) eigh per inner iteration)
REFERENCE_MAX_N = 2000


def lambda_schedule(r: float, m: int) -> float:
    """Self-paced age lambda of stage r (eq. 23): 2((r-1)^2 r + r^2 (1-r)) m^2 (= 2 m^2 r (1-r))."""
    return 2.0 * ((r - 1.0) ** 2 * r + r ** 2 * (1.0 - r)) * m * m


def self_paced_weights(B: np.ndarray, lam: float) -> np.ndarray:
    """W = min(lambda / (2 B), 1) (eq. 13); B = 0 gives W = 1 (MATLAB: Inf capped at 1)."""
    W = np.ones_like(B)
    np.divide(lam, 2.0 * B, out=W, where=B > 0)
    return np.minimum(W, 1.0, out=W)


def s_update(G: np.ndarray, E: np.ndarray, W: np.ndarray, a: float, rho: float, gamma: float) -> np.ndarray:
    """Closed-form S (eq. 16/17): C = (G - rho E / (2 W^2)) / a, 0 where C < sqrt(tau), clipped at 1.

    sqrt(tau) = sqrt(gamma) / (W sqrt(a)). Order as in [CODE]: threshold first, then clip values above 1.
    The comparison is made on C a (both sides multiplied by a > 0), as the fast path does.
    """
    Ca = G - rho * (E * (0.5 / (W * W)))
    below = Ca < (np.sqrt(gamma) / W) * np.sqrt(a)
    S = np.minimum(Ca / a, 1.0)
    S[below] = 0.0
    return S


def alpha_update(losses: np.ndarray, floor: float) -> np.ndarray:
    """alpha_i = sqrt(loss_i) / sum_j sqrt(loss_j) (eq. 21); uniform when every loss is 0 (spec 3.4 guard)."""
    root = np.sqrt(np.maximum(losses, 0.0))
    total = root.sum()
    m = losses.shape[0]
    if total <= 0:
        return np.full(m, 1.0 / m)
    alpha = np.maximum(root / total, floor)
    return alpha / alpha.sum()


def _smallest(S: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """The c smallest eigenvectors of L = D - S and the c + 1 smallest eigenvalues (eq. 18)."""
    L = np.diag(S.sum(axis=1)) - S
    vals, vecs = scipy.linalg.eigh(L)
    return vecs[:, :c], vals[:c + 1]


def _sqdist(Y: np.ndarray) -> np.ndarray:
    sq = np.einsum("ij,ij->i", Y, Y)
    return np.maximum(sq[:, None] + sq[None, :] - 2.0 * (Y @ Y.T), 0.0)


def reference_fit(members: np.ndarray, c: int, *, theta: float, variant: str = "spce",
                  schedule=(0.9, 0.8, 0.7, 0.6, 0.5), inner_caps=(5, 5, 5, 5, 20), rho0: float = 1.0,
                  tol_fewer: float = 1e-9, tol_more: float = 1e-11, alpha_floor: float = 1e-12,
                  fixw_mode: str = "initial") -> tuple[np.ndarray, np.ndarray, dict]:
    """Algorithm 1 of the paper with the [CODE] rank test, every matrix dense (spec 3.6).

    Returns the labels (connected components of S != 0), the dense S and a diagnostics dict with the keys
    ``rho``, ``branch``, ``inner_iterations``, ``n_components`` and ``alpha``.
    """
    n, m = members.shape
    if n > REFERENCE_MAX_N:
        raise UserError(f"spce: solver=reference builds dense n x n matrices; n={n} is over {REFERENCE_MAX_N}, "
                        "use solver=fast")
    Ss = [(members[:, i][:, None] == members[:, i][None, :]).astype(np.float64) for i in range(m)]
    count = np.sum(Ss, axis=0)
    shat = count / m
    fixed_one, fixed_zero = count == m, count == 0          # Omega (eq. 6), split by its value
    gamma = m * m * theta ** 2                                # eq. (25)
    S = shat.copy()                                           # Sec. III-E
    Y, _ = _smallest(S, c)
    rho, alpha, W = float(rho0), np.full(m, 1.0 / m), None
    diag = {"rho": [], "branch": [], "inner_iterations": []}
    for r, cap in zip(schedule, inner_caps, strict=True):
        lam = lambda_schedule(r, m)
        if W is None or variant == "spce":
            if variant == "spce-w":
                W = np.ones((n, n))
            elif variant == "spce-fixw" and fixw_mode == "coassoc":
                W = shat.copy()
                W[fixed_one | fixed_zero] = 1.0
            else:
                B = np.sum([(S - Si) ** 2 / al for Si, al in zip(Ss, alpha, strict=True)], axis=0)
                W = self_paced_weights(B, lam)                # eq. (13)
        it = 0
        for it in range(cap):
            a = float(np.sum(1.0 / alpha))
            G = np.sum([Si / al for Si, al in zip(Ss, alpha, strict=True)], axis=0)
            S = s_update(G, _sqdist(Y), W, a, rho, gamma)     # eq. (16)/(17)
            S[fixed_one] = 1.0
            S[fixed_zero] = 0.0
            Y_old = Y
            Y, ev = _smallest(S, c)                           # eq. (18)
            losses = np.array([np.sum(((S - Si) * W) ** 2) for Si in Ss])
            alpha = alpha_update(losses, alpha_floor)         # eq. (21)
            if float(np.sum(ev[:c])) > tol_fewer:             # fewer than c components: rho *= 2
                rho *= 2.0
                branch = "double"
            elif float(np.sum(ev[:c + 1])) < tol_more:        # more than c components: rho /= 2, keep Y
                rho /= 2.0
                Y = Y_old
                branch = "halve"
            else:
                branch = "exit" if it > 0 else "keep"
            diag["rho"].append(rho)
            diag["branch"].append(branch)
            if branch == "exit":
                break
        diag["inner_iterations"].append(it + 1)
    k, labels = connected_components(S != 0, directed=False)
    diag.update(n_components=int(k), alpha=alpha.tolist())
    return labels.astype(np.int64), S, diag

"""Symmetric orthogonal tri-NMF  M ~ Q S Q^T  of a co-association-like matrix (Ding et al., KDD 2006).

Used by NMFC (Li, Ding & Jordan 2007) and WCC (Li & Ding 2008); specs/baselines/nmf_family.md 1-2.
M is never formed: it is given as the weighted sum of connectivity matrices  M = sum_q w_q B_q B_q^T  through
the one-hot matrix B and per-column weights, so every product M Y = B (diag(w) B^T Y) costs O(n m c).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

EPS = 1e-12


class ConnectivityOperator:
    """M = B diag(col_w) B^T for a one-hot B (n x K) and non-negative column weights."""

    def __init__(self, B: sparse.csr_matrix, col_weights: np.ndarray):
        self.B = B.tocsr().astype(np.float64)
        self.col_w = np.asarray(col_weights, dtype=np.float64)
        G = (self.B.T @ self.B).toarray()  # K x K overlaps of base clusters
        Wd = self.col_w[:, None] * G * self.col_w[None, :]
        # ||M||_F^2 = tr(B W B^T B W B^T) = sum((W G) * (G W)^T) with W = diag(col_w)
        self.sq_norm = float((Wd * G).sum())

    def matmul(self, Y: np.ndarray) -> np.ndarray:
        return self.B @ (self.col_w[:, None] * (self.B.T @ Y))

    def dense(self) -> np.ndarray:
        return (self.B @ sparse.diags(self.col_w) @ self.B.T).toarray()


def trinmf_objective(M: ConnectivityOperator, Q: np.ndarray, S: np.ndarray) -> float:
    """||M - Q S Q^T||_F^2 computed from c x c products only."""
    MQ = M.matmul(Q)
    QtQ = Q.T @ Q
    return float(M.sq_norm - 2.0 * (Q.T @ MQ * S).sum() + (S @ QtQ @ S.T * QtQ).sum())


def trinmf_step(M: ConnectivityOperator, Q: np.ndarray, S: np.ndarray, eps: float = EPS):
    """One pass of the multiplicative rules (nmf_family.md 1, step 3): Q first, then S."""
    MQS = M.matmul(Q) @ S
    Q = Q * np.sqrt(MQS / (Q @ (Q.T @ MQS) + eps))
    QtQ = Q.T @ Q
    QtMQ = Q.T @ M.matmul(Q)
    S = S * np.sqrt(QtMQ / (QtQ @ S @ QtQ + eps))
    return Q, S


def trinmf_labels(Q: np.ndarray, S: np.ndarray) -> np.ndarray:
    """argmax_j (Q S^{1/2})_ij with the symmetric PSD square root of S (first index on ties)."""
    w, V = np.linalg.eigh((S + S.T) / 2.0)
    root = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T
    return np.argmax(Q @ root, axis=1).astype(np.int64)


def trinmf(M: ConnectivityOperator, n_components: int, rng: np.random.Generator, *, tol=1e-6, max_iter=500,
           Q0=None, S0=None):
    """Run the tri-NMF from a random start until the relative objective change < tol.

    Returns ``(Q, S, objective_history)``.
    """
    n = M.B.shape[0]
    Q = rng.uniform(0.0, 1.0, (n, n_components)) if Q0 is None else Q0.copy()
    S = np.diag(rng.uniform(0.0, 1.0, n_components)) if S0 is None else S0.copy()
    history = [trinmf_objective(M, Q, S)]
    for _ in range(max_iter):
        Q, S = trinmf_step(M, Q, S)
        history.append(trinmf_objective(M, Q, S))
        if abs(history[-2] - history[-1]) <= tol * max(abs(history[-2]), 1e-300):
            break
    return Q, S, history

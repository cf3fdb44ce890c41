"""Euclidean projection onto the probability simplex and a small simplex-constrained QP.

Shared by the NMF-family baselines (INA's reliability step, WCC's partition weights); the projection is the
sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008), vectorised over rows.
"""

from __future__ import annotations

import numpy as np


def project_simplex(V: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Project every row of ``V`` (or a vector) onto {x >= 0, sum x = radius}."""
    V = np.asarray(V, dtype=np.float64)
    vec = V.ndim == 1
    V2 = V[None, :] if vec else V
    U = -np.sort(-V2, axis=1)
    css = np.cumsum(U, axis=1) - radius
    idx = np.arange(1, V2.shape[1] + 1)
    cond = U - css / idx > 0
    rho = cond.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(V2.shape[0]), rho] / (rho + 1)
    out = np.maximum(V2 - theta[:, None], 0.0)
    return out[0] if vec else out


def simplex_qp(G: np.ndarray, f: np.ndarray, *, max_iter: int = 5000, tol: float = 1e-12, x0=None) -> np.ndarray:
    """Minimise x^T G x - 2 f^T x over the probability simplex (G symmetric PSD) by accelerated projected gradient."""
    G = (np.asarray(G, dtype=np.float64) + np.asarray(G, dtype=np.float64).T) / 2.0
    f = np.asarray(f, dtype=np.float64)
    m = f.size
    lip = 2.0 * max(np.linalg.eigvalsh(G).max(), 1e-12)
    x = np.full(m, 1.0 / m) if x0 is None else project_simplex(x0)
    y, t = x.copy(), 1.0
    for _ in range(max_iter):
        x_new = project_simplex(y - (2.0 * (G @ y) - 2.0 * f) / lip)
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y = x_new + (t - 1.0) / t_new * (x_new - x)
        if np.abs(x_new - x).max() < tol:
            x = x_new
            break
        x, t = x_new, t_new
    return x

"""Euclidean projection onto the probability simplex and an exact simplex-constrained QP.

The projection serves INA's reliability step, MEC and AWEC (the column-wise projection of its Z
sub-problem, paper Algorithm 1), batched over the rows or the columns of a matrix; the QP serves WCC's
partition weights and ACMK's alpha-step (Eq. 18). The projection is the sort-based algorithm (Held, Wolfe
& Crowder 1974; Duchi et al. 2008); the QP is a primal active-set method (Nocedal & Wright, Numerical Optimization,
2nd ed., section 16.5) that also handles a singular (PSD) Hessian.
"""

from __future__ import annotations

import warnings

import numpy as np


def project_simplex(V: np.ndarray, radius: float = 1.0, *, axis: int = -1) -> np.ndarray:
    """Euclidean projection of every row of ``V`` (or of a vector) onto {x >= 0, sum x = radius}.

    Parameters
    ----------
    V : (n,) or (m, n) array
        The points to project. A floating dtype is kept (float32 stays float32, so a single-precision solver
        keeps its memory); other dtypes are computed in float64.
    radius : float
        Sum of the projected vector (> 0).
    axis : int
        For a matrix, the axis along which the entries sum to ``radius``: -1 or 1 (rows, the default) or 0
        (columns: the same operations on the transpose).

    Returns
    -------
    Array of the same shape: ``x = max(v - theta, 0)`` with the threshold theta of each row.

    Notes
    -----
    Sort-based rule (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with u the row sorted in descending
    order and s_i the cumulative sums minus ``radius``, rho = the last i with u_i - s_i / i > 0 and
    theta = s_rho / rho. Since theta >= max(v) - radius (the largest entry alone may not exceed the radius
    above theta), only entries v_i >= max(v) - radius can be in the support, and the condition fails past
    them. When every row has few such candidates (e.g. the sparse topology of AWEC), only the k largest
    entries of each row are selected (``np.partition``, O(n)) and sorted: the same sorted prefix, the same
    cumulative sums, hence the same theta, bit for bit, as the full sort.
    """
    V = np.asarray(V)
    if V.dtype.kind != "f":
        V = V.astype(np.float64)
    if V.ndim == 1:
        return project_simplex(V[None, :], radius)[0]
    if V.ndim != 2:
        raise ValueError(f"project_simplex expects a vector or a matrix, got shape {V.shape}")
    if axis in (0, -2):
        return project_simplex(V.T, radius).T
    if axis not in (1, -1):
        raise ValueError(f"project_simplex: axis must be 0 or 1 for a matrix, got {axis}")
    m, n = V.shape
    if m == 0 or n == 0:
        return V.copy()
    top = V.max(axis=1)
    floor = top - radius
    floor -= 1e-9 * (1.0 + np.abs(top))  # slack: rounding never drops a support entry
    k = int(np.count_nonzero(V >= floor[:, None], axis=1).max())
    if 4 * k < n:
        U = np.partition(V, n - k, axis=1)[:, n - k:]
        U.sort(axis=1)
        U = U[:, ::-1]
    else:
        k = n
        U = np.sort(V, axis=1)[:, ::-1]
    css = np.cumsum(U, axis=1)
    css -= radius
    idx = np.arange(1, k + 1, dtype=V.dtype)
    cond = U - css / idx > 0
    rho = k - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where the condition holds
    # (rho + 1) is an integer array: keep theta in V's precision (float32 would silently become float64)
    theta = (css[np.arange(m), rho] / (rho + 1)).astype(V.dtype, copy=False)
    out = V - theta[:, None]
    np.maximum(out, 0.0, out=out)
    return out


def simplex_qp(H: np.ndarray, c: np.ndarray, *, max_iter: int | None = None, tol: float = 1e-12) -> np.ndarray:
    """Exact minimiser of ``x^T H x + c^T x`` over the simplex {x >= 0, sum x = 1} (H symmetric PSD).

    Parameters
    ----------
    H : (v, v) array
        Symmetric positive semi-definite (it is symmetrised); may be singular, e.g. when two base
        clusterings are identical.
    c : (v,) array
        Linear term. A problem written as ``x^T G x - 2 f^T x`` (WCC) is ``simplex_qp(G, -2 f)``.
    max_iter : int, optional
        Active-set iterations at most (each adds or releases one bound); default ``10 v + 100``. Reaching
        it (never seen in the tests) warns and returns the current feasible point.
    tol : float
        Feasibility tolerance of the scaled problem.

    Returns
    -------
    (v,) array on the simplex, a KKT point (hence a global minimiser, the problem being convex).

    Notes
    -----
    Primal active-set method started at the barycentre, so the answer is deterministic even when the
    minimiser is not unique. On the current face (free coordinates F, the others at zero) the
    equality-constrained sub-problem is solved through its KKT system ``[2 H_FF, 1; 1^T, 0] [x; nu] =
    [-c_F; 1]`` by least squares. When that system is inconsistent the sub-problem is unbounded below on the
    face's affine hull: the least-squares residual is then ``-P c_F`` with P the projector onto
    {p : H_FF p = 0, 1^T p = 0} (the KKT matrix's null space), a zero-curvature descent direction, and the
    method moves along it to the first bound. The older exact solver here only took the least-squares point
    and so stopped at non-minimisers when H was singular (e.g. returned the barycentre for H = 0); the older
    projected-gradient ``simplex_qp`` was only approximate.
    """
    H = 0.5 * (np.asarray(H, float) + np.asarray(H, float).T)
    c = np.asarray(c, float)
    v = c.size
    max_iter = 10 * v + 100 if max_iter is None else max_iter
    scale = max(np.abs(H).max(initial=0.0), np.abs(c).max(initial=0.0), 1e-300)
    Hs, cs = H / scale, c / scale
    a = np.full(v, 1.0 / v)
    active = np.zeros(v, dtype=bool)
    for _ in range(max_iter):
        free = np.flatnonzero(~active)
        nf = free.size
        K = np.zeros((nf + 1, nf + 1))
        K[:nf, :nf] = 2.0 * Hs[np.ix_(free, free)]
        K[:nf, nf] = 1.0
        K[nf, :nf] = 1.0
        rhs = np.concatenate([-cs[free], [1.0]])
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        residual = (rhs - K @ sol)[:nf]
        if np.abs(residual).max() > 1e-10 * max(np.abs(rhs).max(), 1.0) and residual.min() < 0.0:
            # unbounded face: move along the zero-curvature descent direction to the first bound
            shrinking = np.flatnonzero(residual < 0.0)
            ratios = a[free[shrinking]] / -residual[shrinking]
            j = int(np.argmin(ratios))
            a[free] += ratios[j] * residual
            a[free[shrinking[j]]] = 0.0
            a = np.maximum(a, 0.0)
            a /= a.sum()
            active[free[shrinking[j]]] = True
            continue
        target = np.zeros(v)
        target[free] = sol[:nf]
        nu = sol[nf]
        if np.all(target[free] >= -tol):
            a = np.maximum(target, 0.0)
            a /= a.sum()
            grad = 2.0 * Hs @ a + cs
            mult = grad + nu  # multipliers of the active bounds a_i >= 0
            mult[~active] = np.inf
            i = int(np.argmin(mult))
            if not active.any() or mult[i] >= -1e-10:
                return a
            active[i] = False
            continue
        # step towards the target until the first free variable hits zero
        step_to = target - a
        blocking = free[target[free] < -tol]
        ratios = a[blocking] / np.maximum(a[blocking] - target[blocking], 1e-300)
        j = int(np.argmin(ratios))
        t = float(np.clip(ratios[j], 0.0, 1.0))
        a = a + t * step_to
        a[blocking[j]] = 0.0
        a = np.maximum(a, 0.0)
        a /= a.sum()
        active[blocking[j]] = True
    warnings.warn(f"simplex_qp: no KKT point after {max_iter} active-set iterations; returning the last "
                  f"feasible point", RuntimeWarning, stacklevel=2)
    return a

"""Numerical building blocks of ACMK (specs/acmk.md section 3): the graph filter, the two smooth ADMM
sub-problems (A-step, W-step) with their gradients, the base-refinement sweep and the alpha QP.

Everything that touches an n x n array works on row blocks so that temporaries stay small (a few MB) and
the n x n state can be kept in float32 (spec section 6, "float32 ... half that"); scalars (objective values,
inner products) are accumulated in float64.

Notation follows the spec: ``C(W) = (I + D^-1/2 W D^-1/2) / 2`` with ``D = diag(W 1)`` (row sums),
``N(W) = D^-1/2 W D^-1/2``, ``S = sum_m alpha_m G_m G_m^T``.
"""

from __future__ import annotations

import numpy as np

#: elements per row block of an n x n pass (4 MB in float32: large enough for BLAS, small enough for cache)
BLOCK_ELEMENTS = 1 << 20
#: degree guard of spec S2 ("deg_i >= 1e-12")
DEG_FLOOR = 1e-12


def row_blocks(n: int, ncols: int | None = None):
    """Yield ``slice`` objects covering rows 0..n-1 with about BLOCK_ELEMENTS entries each."""
    ncols = n if ncols is None else ncols
    step = max(1, BLOCK_ELEMENTS // max(1, ncols))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def bdot(a: np.ndarray, b: np.ndarray) -> float:
    """<a, b> of two equally shaped 2-D arrays, accumulated block-wise in float64."""
    total = 0.0
    for rows in row_blocks(a.shape[0], a.shape[1]):
        total += float(np.dot(a[rows].ravel(), b[rows].ravel()))
    return total


def bsq(a: np.ndarray) -> float:
    """||a||_F^2 accumulated block-wise in float64."""
    return bdot(a, a)


def inv_sqrt_degrees(W: np.ndarray) -> np.ndarray:
    """s = deg^-1/2 with deg = W 1 (row sums, spec A3: W need not be symmetric inside the W-step)."""
    deg = W.sum(axis=1, dtype=np.float64)
    return 1.0 / np.sqrt(np.maximum(deg, DEG_FLOOR))


def filter_matrix(W: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """C(W) = (I + D^-1/2 W D^-1/2)/2 (paper Eq. 4/6), written into ``out`` (same dtype as W)."""
    n = W.shape[0]
    out = np.empty_like(W) if out is None else out
    s = inv_sqrt_degrees(W).astype(W.dtype)
    half = W.dtype.type(0.5)
    for rows in row_blocks(n):
        blk = out[rows]
        np.multiply(W[rows], s[rows, None], out=blk)
        blk *= s[None, :]
        blk *= half
        idx = np.arange(rows.start, rows.stop)
        blk[idx - rows.start, idx] += half
    return out


def sym_into(W: np.ndarray, out: np.ndarray) -> np.ndarray:
    """(W + W^T)/2 into ``out`` (block-wise; ``out`` must not alias ``W``)."""
    n = W.shape[0]
    half = W.dtype.type(0.5)
    for rows in row_blocks(n):
        blk = out[rows]
        np.add(W[rows], W[:, rows].T, out=blk)
        blk *= half
    return out


def apply_filter(W: np.ndarray, X: np.ndarray, k: int, *, symmetrize: bool = False) -> np.ndarray:
    """C(W)^k X without forming C(W): C x = x/2 + s * (W (s * x)) / 2 (k products of W with an n x d block).

    With ``symmetrize`` the filter of W_s = (W + W^T)/2 is applied (spec 3.3 obj6 and 3.4 final embedding),
    still without materialising W_s.
    """
    n = W.shape[0]
    if symmetrize:
        deg = 0.5 * (W.sum(axis=1, dtype=np.float64) + W.sum(axis=0, dtype=np.float64))
    else:
        deg = W.sum(axis=1, dtype=np.float64)
    s = 1.0 / np.sqrt(np.maximum(deg, DEG_FLOOR))
    Y = np.asarray(X, dtype=np.float64)
    for _ in range(k):
        Z = (s[:, None] * Y).astype(W.dtype)
        WZ = np.empty((n, Y.shape[1]), dtype=np.float64)
        for rows in row_blocks(n):
            prod = W[rows] @ Z
            if symmetrize:
                prod = 0.5 * (prod + W[:, rows].T @ Z)
            WZ[rows] = prod
        Y = 0.5 * Y + 0.5 * s[:, None] * WZ
    return Y


# ---------------------------------------------------------------------------------------------------------
# S1: the A-step (Eq. 9 in its Frobenius form, spec A1) and its gradient (Eq. 10)
# ---------------------------------------------------------------------------------------------------------
class ASubproblem:
    """J1(A) = sum_m ||A^k X - G_m F_m||^2 + <Lam1, A> + mu/2 ||A - C||^2 (spec S1, C = C(W) fixed).

    ``targets`` is the list of the v matrices G_m F_m (n x d, float64).
    """

    def __init__(self, X, k, targets, Lam1, C, mu):
        self.X = np.asarray(X, dtype=np.float64)
        self.k = int(k)
        self.targets = targets
        self.target_sum = np.sum(targets, axis=0)
        self.v = len(targets)
        self.Lam1, self.C, self.mu = Lam1, C, float(mu)
        self.n_eval = 0

    def powers(self, A) -> list[np.ndarray]:
        """[X, A X, ..., A^k X] in float64 (products in the dtype of A)."""
        out = [self.X]
        for _ in range(self.k):
            out.append((A @ out[-1].astype(A.dtype)).astype(np.float64))
        return out

    def fit_term(self, Xk) -> float:
        return float(sum(np.sum((Xk - T) ** 2) for T in self.targets))

    def __call__(self, A, grad) -> float:
        self.n_eval += 1
        k, n, dt = self.k, A.shape[0], A.dtype
        Xs = self.powers(A)
        value = self.fit_term(Xs[k])
        # Q = v A^k X - sum_m G_m F_m ; grad = 2 sum_r (A^T)^r Q (A^{k-1-r} X)^T  (Eq. 10 re-indexed, spec S1)
        P = [self.v * Xs[k] - self.target_sum]
        for _ in range(1, k):
            P.append((A.T @ P[-1].astype(dt)).astype(np.float64))
        left = (2.0 * np.hstack(P)).astype(dt)
        right = np.hstack([Xs[k - 1 - r] for r in range(k)]).astype(dt)
        np.matmul(left, right.T, out=grad)
        mu = dt.type(self.mu)
        for rows in row_blocks(n):
            diff = A[rows] - self.C[rows]
            value += float(np.dot(self.Lam1[rows].ravel(), A[rows].ravel()))
            value += 0.5 * self.mu * float(np.dot(diff.ravel(), diff.ravel()))
            diff *= mu
            diff += self.Lam1[rows]
            grad[rows] += diff
        return value


# ---------------------------------------------------------------------------------------------------------
# S2: the W-step (Eq. 11 over the box 0 <= W <= 1) and its gradient (Eq. 12 in the compact form of the spec)
# ---------------------------------------------------------------------------------------------------------
class WSubproblem:
    """J2(W) = lam||W - S||^2 + <Lam1, A - C(W)> + mu/2||A - C(W)||^2 + <Lam2, W - V> + mu/2||W - V||^2.

    A - C(W) = E - N(W)/2 with E = A - I/2.  Gradient (spec S2):
    Z = -(Lam1 + mu E)/2 + mu N/4,  g_i = -[(Z o N) 1 + (Z o N)^T 1]_i / (2 deg_i),
    dJ2/dW = s s^T o Z + g 1^T + 2 lam (W - S) + Lam2 + mu (W - V).
    """

    def __init__(self, A, Lam1, S, Lam2, V, mu, lam):
        self.A, self.Lam1, self.S, self.Lam2, self.V = A, Lam1, S, Lam2, V
        self.mu, self.lam = float(mu), float(lam)
        self.n_eval = 0

    def __call__(self, W, grad) -> float:
        self.n_eval += 1
        n, dt = W.shape[0], W.dtype
        deg = np.maximum(W.sum(axis=1, dtype=np.float64), DEG_FLOOR)
        s64 = 1.0 / np.sqrt(deg)
        s = s64.astype(dt)
        mu, lam = self.mu, self.lam
        rowsum = np.zeros(n)
        colsum = np.zeros(n)
        value = 0.0
        for rows in row_blocks(n):
            idx = np.arange(rows.start, rows.stop)
            local = idx - rows.start
            Wb = W[rows]
            ss = s[rows, None] * s[None, :]
            N = Wb * ss
            resid = self.A[rows] - dt.type(0.5) * N            # A - C(W) = E - N/2
            resid[local, idx] -= dt.type(0.5)
            L1 = self.Lam1[rows]
            value += float(np.dot(L1.ravel(), resid.ravel())) + 0.5 * mu * float(np.dot(resid.ravel(), resid.ravel()))
            # Z = dJ/dN = -(Lam1 + mu (A - C(W)))/2 ; identical to -(Lam1 + mu E)/2 + mu N/4
            Z = resid
            Z *= dt.type(mu)
            Z += L1
            Z *= dt.type(-0.5)
            ZN = Z * N
            rowsum[rows] += ZN.sum(axis=1, dtype=np.float64)
            colsum += ZN.sum(axis=0, dtype=np.float64)
            gb = grad[rows]
            np.multiply(Z, ss, out=gb)
            dws = Wb - self.S[rows]
            value += lam * float(np.dot(dws.ravel(), dws.ravel()))
            dws *= dt.type(2.0 * lam)
            gb += dws
            dwv = Wb - self.V[rows]
            L2 = self.Lam2[rows]
            value += float(np.dot(L2.ravel(), dwv.ravel())) + 0.5 * mu * float(np.dot(dwv.ravel(), dwv.ravel()))
            dwv *= dt.type(mu)
            gb += dwv
            gb += L2
        g = (-(rowsum + colsum) / (2.0 * deg)).astype(dt)
        for rows in row_blocks(n):
            grad[rows] += g[rows, None]
        return value


# ---------------------------------------------------------------------------------------------------------
# Limited-memory quasi-Newton solver on n x n arrays (float32-capable, optional box [lower, upper])
# ---------------------------------------------------------------------------------------------------------
class LBFGSWorkspace:
    """Preallocated buffers of :func:`lbfgs_minimize` (shared by the A- and W-steps; spec 6 memory)."""

    def __init__(self, shape, dtype, memory: int):
        self.memory = int(memory)
        self.s = [np.empty(shape, dtype) for _ in range(self.memory)]
        self.y = [np.empty(shape, dtype) for _ in range(self.memory)]
        self.g = np.empty(shape, dtype)
        self.g_new = np.empty(shape, dtype)
        self.d = np.empty(shape, dtype)
        self.x_new = np.empty(shape, dtype)

    def scratch(self, i: int) -> np.ndarray:
        """An n x n buffer free outside lbfgs_minimize (used by the refinement step)."""
        pool = self.s + self.y + [self.g_new, self.d, self.x_new, self.g]
        return pool[i]


def _binding_mask(x, g, lower, upper):
    """Variables held at a bound by the gradient (they stay fixed in this iteration)."""
    return ((x <= lower) & (g > 0)) | ((x >= upper) & (g < 0))


def _projected_grad_inf(x, g, lower, upper) -> float:
    """||P(x - g) - x||_inf (the stopping measure of L-BFGS-B's pgtol)."""
    worst = 0.0
    for rows in row_blocks(x.shape[0], x.shape[1]):
        xb, gb = x[rows], g[rows]
        if lower is None:
            worst = max(worst, float(np.max(np.abs(gb))))
        else:
            worst = max(worst, float(np.max(np.abs(np.clip(xb - gb, lower, upper) - xb))))
    return worst


def lbfgs_minimize(fun, x, ws: LBFGSWorkspace, *, max_iter=20, pgtol=1e-3, ftol=2.2e-9,
                   lower=None, upper=None, c1=1e-4, max_backtracks=30):
    """Minimise ``fun(x, grad_out) -> value`` starting from ``x`` (updated in place).

    Unconstrained: standard L-BFGS (two-loop recursion, history ``ws.memory``, backtracking Armijo search).
    With a box it is a projected L-BFGS: variables held at a bound by the gradient are frozen for the
    iteration, the quasi-Newton step is projected onto the box and the Armijo test uses the projected step.
    This is a memory-lean stand-in for L-BFGS-B (spec A3/A5: memory 5, 20 iterations, pgtol 1e-3; ftol is
    scipy's default factr 1e7 times machine epsilon). Returns ``(value, n_iter, n_eval)``.
    """
    boxed = lower is not None
    dt = x.dtype
    g, g_new, d, x_new = ws.g, ws.g_new, ws.d, ws.x_new
    x_orig = x
    f = fun(x, g)
    n_eval = 1
    hist = []  # list of (s, y, rho), oldest first
    free_slots = list(zip(ws.s, ws.y, strict=True))
    n_iter = 0
    blocks = list(row_blocks(x.shape[0], x.shape[1]))
    for n_iter in range(1, max_iter + 1):
        if _projected_grad_inf(x, g, lower, upper) <= pgtol:
            n_iter -= 1
            break
        # -- direction: d = -H g on the free variables
        np.copyto(d, g)
        if boxed:
            for rows in blocks:
                d[rows][_binding_mask(x[rows], g[rows], lower, upper)] = 0
        alphas = []
        for s_i, y_i, rho in reversed(hist):
            a = rho * bdot(s_i, d)
            alphas.append(a)
            for rows in blocks:
                d[rows] -= dt.type(a) * y_i[rows]
        if hist:
            s_i, y_i, rho = hist[-1]
            gamma = 1.0 / (rho * bsq(y_i))
            d *= dt.type(gamma)
        for (s_i, y_i, rho), a in zip(hist, reversed(alphas), strict=True):
            b = rho * bdot(y_i, d)
            for rows in blocks:
                d[rows] += dt.type(a - b) * s_i[rows]
        d *= dt.type(-1.0)
        if boxed:
            for rows in blocks:
                d[rows][_binding_mask(x[rows], g[rows], lower, upper)] = 0
        gd = bdot(g, d)
        if not gd < 0:  # not a descent direction: restart from steepest descent
            free_slots += [(s_i, y_i) for s_i, y_i, _ in hist]
            hist = []
            np.copyto(d, g)
            d *= dt.type(-1.0)
            if boxed:
                for rows in blocks:
                    d[rows][_binding_mask(x[rows], g[rows], lower, upper)] = 0
            gd = bdot(g, d)
            if not gd < 0:
                break
        step = 1.0 if hist else min(1.0, 1.0 / max(np.sqrt(bsq(d)), 1e-300))
        accepted = False
        for _ in range(max_backtracks):
            for rows in blocks:
                xn = x_new[rows]
                np.multiply(d[rows], dt.type(step), out=xn)
                xn += x[rows]
                if boxed:
                    np.clip(xn, lower, upper, out=xn)
            f_new = fun(x_new, g_new)
            n_eval += 1
            if boxed:
                decrease = bdot(g, x_new) - bdot(g, x)
            else:
                decrease = step * gd
            if np.isfinite(f_new) and f_new <= f + c1 * decrease:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        # -- history update (s = x_new - x, y = g_new - g), skipped when the curvature is not positive
        s_i, y_i = free_slots.pop(0) if free_slots else hist.pop(0)[:2]
        np.subtract(x_new, x, out=s_i)
        np.subtract(g_new, g, out=y_i)
        sy = bdot(s_i, y_i)
        if sy > 1e-10 * bsq(y_i):
            hist.append((s_i, y_i, 1.0 / sy))
        else:
            free_slots.append((s_i, y_i))
        # swap roles of the buffers (x_new becomes x)
        x, x_new = x_new, x
        g, g_new = g_new, g
        f_old, f = f, f_new
        if (f_old - f) <= ftol * max(abs(f_old), abs(f), 1.0):
            break
    if x is not x_orig:
        # an odd number of swaps left the solution in a workspace buffer: copy it back, keep buffers distinct
        np.copyto(x_orig, x)
        ws.x_new = x
    else:
        ws.x_new = x_new
    ws.g, ws.g_new = g, g_new
    return f, n_iter, n_eval


def scipy_lbfgsb_minimize(fun, x, *, max_iter=20, pgtol=1e-3, memory=5, lower=None, upper=None):
    """The same sub-problem solved by scipy's L-BFGS-B (float64; reference option ``inner_solver=scipy``)."""
    from scipy.optimize import minimize

    shape, dt = x.shape, x.dtype
    grad = np.empty(shape, dtype=dt)
    n_eval = [0]

    def wrapped(flat):
        n_eval[0] += 1
        value = fun(flat.reshape(shape).astype(dt, copy=False), grad)
        return value, grad.astype(np.float64).ravel()

    bounds = None if lower is None else [(lower, upper)] * x.size
    res = minimize(wrapped, x.astype(np.float64).ravel(), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": max_iter, "maxcor": memory, "gtol": pgtol})
    x[...] = res.x.reshape(shape)
    return float(res.fun), int(res.nit), n_eval[0]


def v_step(W: np.ndarray, Lam2: np.ndarray, mu: float, out: np.ndarray) -> np.ndarray:
    """V = (W + W^T)/2 + (Lam2 + Lam2^T)/(2 mu) (Eq. 17): the projection of W + Lam2/mu onto symmetric matrices."""
    dt = out.dtype
    for rows in row_blocks(W.shape[0]):
        blk = out[rows]
        np.add(Lam2[rows], Lam2[:, rows].T, out=blk)
        blk *= dt.type(0.5 / mu)
        blk += dt.type(0.5) * (W[rows] + W[:, rows].T)
    return out


# ---------------------------------------------------------------------------------------------------------
# S3: base refinement (Eq. 13 with the factor-2 correction A2, Eq. 15)
# ---------------------------------------------------------------------------------------------------------
def cluster_means(Y: np.ndarray, labels: np.ndarray, n_clusters: int) -> np.ndarray:
    """F = (G^T G)^-1 G^T Y (Eq. 15): the mean of the rows of Y in every cluster (zero for an empty one)."""
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    sums = np.zeros((n_clusters, Y.shape[1]))
    np.add.at(sums, labels, Y)
    return sums / np.maximum(counts, 1.0)[:, None]


def refine_sweep(labels: np.ndarray, F: np.ndarray, Y: np.ndarray, T: np.ndarray, lam: float, alpha_m: float):
    """One sequential sweep of the G-step of base m (spec S3), in place on ``labels``.

    Minimises ||Y - G F||^2 - 2 lam alpha_m <T, G G^T> + lam alpha_m^2 ||G G^T||^2 row by row, with
    ``T`` the symmetric part of T_m = W - sum_{p != m} alpha_p M_p. Moving row i into cluster j costs
    ||y_i - f_j||^2 - 4 lam alpha_m sum_{l in j, l != i} T_il + 2 lam alpha_m^2 n_j^(-i); ties keep the
    current cluster and a move that would empty a cluster is refused (A8). Returns the number of moves.
    """
    n, c = Y.shape[0], F.shape[0]
    sq = np.sum(Y * Y, axis=1)[:, None] - 2.0 * (Y @ F.T) + np.sum(F * F, axis=1)[None, :]
    counts = np.bincount(labels, minlength=c).astype(np.float64)
    # Pt[j, i] = sum_{l in j} T_li  (T symmetric): one pass over T, O(n^2) (spec: "P = T G")
    Pt = np.zeros((c, n))
    for j in range(c):
        members = np.flatnonzero(labels == j)
        for rows in row_blocks(len(members), n):
            Pt[j] += T[members[rows]].sum(axis=0, dtype=np.float64)
    diag = np.diagonal(T).astype(np.float64)
    w_pair = 4.0 * lam * alpha_m
    w_size = 2.0 * lam * alpha_m * alpha_m
    moves = 0
    for i in range(n):
        a = labels[i]
        if counts[a] <= 1:
            continue
        cost = sq[i] - w_pair * Pt[:, i] + w_size * counts
        cost[a] += w_pair * diag[i] - w_size  # remove i itself from its current cluster
        b = int(np.argmin(cost))
        if b != a and cost[b] < cost[a]:
            row = T[i].astype(np.float64)
            Pt[a] -= row
            Pt[b] += row
            counts[a] -= 1
            counts[b] += 1
            labels[i] = b
            moves += 1
    return moves


# ---------------------------------------------------------------------------------------------------------
# S5: the alpha QP (Eq. 18)
# ---------------------------------------------------------------------------------------------------------
def contingency_gram(labels: np.ndarray) -> np.ndarray:
    """H_mp = ||G_m^T G_p||_F^2 (squared contingency table entries; H_mm = sum_j n_j^2), spec S5 / O6."""
    n, v = labels.shape
    ks = labels.max(axis=0) + 1
    H = np.zeros((v, v))
    for m in range(v):
        for p in range(m, v):
            table = np.bincount(labels[:, m] * ks[p] + labels[:, p], minlength=int(ks[m] * ks[p]))
            H[m, p] = H[p, m] = float(np.sum(table.astype(np.float64) ** 2))
    return H


def coassoc_inner(W: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """<W, M_m> = sum_j 1_j^T W 1_j for every base m (O(n^2 v), block-wise)."""
    n, v = labels.shape
    out = np.zeros(v)
    for m in range(v):
        lab = labels[:, m]
        for rows in row_blocks(n):
            same = lab[rows, None] == lab[None, :]
            out[m] += float(np.sum(W[rows], where=same, dtype=np.float64))
    return out

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

#: elements per row block of an n x n pass (4 MB in float32). 256 KB blocks (L2-resident) made one W-step
#: evaluation 1.8x faster at n = 3000, but they change the float32 summation order of the block-wise inner
#: products, and that alone changes the labels of a 50-iteration run (pendigits n = 1000: ARI 0.547 ->
#: 0.532, results/bench/acmk_s6/README.md); the W-step is a small share of a solve, so the labels win.
BLOCK_ELEMENTS = 1 << 20
#: degree guard of spec S2 ("deg_i >= 1e-12")
DEG_FLOOR = 1e-12


#: elements per row block of a blocked matrix product (products want taller blocks than element-wise passes)
GEMM_BLOCK_ELEMENTS = 1 << 22
#: elements per row block of a pass that reads the transposed block W[:, rows] (wide enough column strips)
TRANSPOSE_BLOCK_ELEMENTS = 1 << 20


def row_blocks(n: int, ncols: int | None = None, elements: int | None = None):
    """Yield ``slice`` objects covering rows 0..n-1 with about ``elements`` (BLOCK_ELEMENTS) entries each."""
    ncols = n if ncols is None else ncols
    step = max(1, (BLOCK_ELEMENTS if elements is None else elements) // max(1, ncols))
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
    for rows in row_blocks(n, elements=TRANSPOSE_BLOCK_ELEMENTS):
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
        for rows in row_blocks(n, elements=GEMM_BLOCK_ELEMENTS):
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

    ``targets`` is the list of the v matrices G_m F_m (n x d, float64). :meth:`value` and :meth:`gradient`
    split one evaluation so that a line-search trial that is rejected costs the k products of A^k X only,
    not the 2k - 1 products of the gradient (:func:`lbfgs_minimize` asks for the gradient at accepted points).
    The fit term is summed in its expanded form (two passes over n x d instead of 3v); that changes the value's
    float64 rounding only (the Armijo decisions and the labels of the benchmark set are unchanged:
    results/bench/acmk_s13/README.md).
    """

    def __init__(self, X, k, targets, Lam1, C, mu):
        self.X = np.asarray(X, dtype=np.float64)
        self.k = int(k)
        self.targets = targets
        self.target_sum = np.sum(targets, axis=0)
        self.v = len(targets)
        self.Lam1, self.C, self.mu = Lam1, C, float(mu)
        self.n_eval = 0
        self._X_cast: dict = {}
        self._target_sq: float | None = None
        self._last = None  # (A, [X, A X, ..., A^k X] in A's dtype, A^k X in float64) of the last value call

    def _powers(self, A) -> list[np.ndarray]:
        """[X, A X, ..., A^k X] in the dtype of A (X cast once per dtype)."""
        Xc = self._X_cast.get(A.dtype)
        if Xc is None:
            Xc = self._X_cast[A.dtype] = self.X.astype(A.dtype)
        out = [Xc]
        for _ in range(self.k):
            out.append(A @ out[-1])
        return out

    def powers(self, A) -> list[np.ndarray]:
        """[X, A X, ..., A^k X] in float64 (products in the dtype of A)."""
        return [self.X] + [p.astype(np.float64) for p in self._powers(A)[1:]]

    def _fit_term(self, Xk) -> float:
        """sum_m ||Xk - T_m||^2 = v ||Xk||^2 - 2 <Xk, sum_m T_m> + sum_m ||T_m||^2: two passes instead of 3v."""
        if self._target_sq is None:
            self._target_sq = float(sum(np.dot(T.ravel(), T.ravel()) for T in self.targets))
        x = Xk.ravel()
        return self.v * float(np.dot(x, x)) - 2.0 * float(np.dot(x, self.target_sum.ravel())) + self._target_sq

    def value(self, A) -> float:
        """J1(A); remembers A and its powers for :meth:`gradient`."""
        self.n_eval += 1
        Xs = self._powers(A)
        Xk = Xs[self.k].astype(np.float64)
        value = self._fit_term(Xk)
        for rows in row_blocks(A.shape[0]):
            diff = A[rows] - self.C[rows]
            value += float(np.dot(self.Lam1[rows].ravel(), A[rows].ravel()))
            value += 0.5 * self.mu * float(np.dot(diff.ravel(), diff.ravel()))
        self._last = (A, Xs, Xk)
        return value

    def gradient(self, grad) -> np.ndarray:
        """dJ1/dA (Eq. 10) into ``grad`` at the point of the last :meth:`value` call (not modified since)."""
        A, Xs, Xk = self._last
        k, n, dt = self.k, A.shape[0], A.dtype
        d = Xk.shape[1]
        # Q = v A^k X - sum_m G_m F_m ; grad = 2 sum_r (A^T)^r Q (A^{k-1-r} X)^T  (Eq. 10 re-indexed, spec S1)
        # as one product [2 Q, 2 A^T Q, ...] [A^{k-1} X, ..., X]^T
        Q64 = self.v * Xk - self.target_sum
        left = np.empty((n, k * d), dtype=dt)
        right = np.empty((n, k * d), dtype=dt)
        Q = Q64.astype(dt)
        np.multiply(Q64, 2.0, out=Q64)
        left[:, :d] = Q64
        for r in range(1, k):
            Q = A.T @ Q
            np.multiply(Q, dt.type(2.0), out=left[:, r * d:(r + 1) * d])
        for r in range(k):
            right[:, r * d:(r + 1) * d] = Xs[k - 1 - r]
        np.matmul(left, right.T, out=grad)
        mu = dt.type(self.mu)
        for rows in row_blocks(n):
            diff = A[rows] - self.C[rows]
            diff *= mu
            diff += self.Lam1[rows]
            grad[rows] += diff
        return grad

    def __call__(self, A, grad) -> float:
        value = self.value(A)
        self.gradient(grad)
        return value


def lowrank_a_step_pays(n: int, d: int, k: int) -> bool:
    """Whether :func:`a_step_lowrank` is cheaper than dense L-BFGS on A: its iterates carry k d columns per
    accepted step, which beats n x n passes only when k d is small next to n (Pendigit: 48 vs 10992)."""
    return 4 * k * d <= n


def a_step_lowrank(A, C, Lam1, X, k, targets, mu, work, *, max_iter=20, pgtol=1e-3, memory=5, ftol=2.2e-9,
                   c1=1e-4, max_backtracks=30):
    """The A-step (S1) by the L-BFGS of :func:`lbfgs_minimize`, run on a low-rank representation of its iterates.

    With A0 = C - Lam1/mu, J1(A) = fit(A) + mu/2 ||A - A0||^2 + <C, Lam1> - ||Lam1||^2/(2 mu), and the gradient
    is G(A) + mu (A - A0) where G(A) = 2 sum_r P_r X_{k-1-r}^T (Eq. 10) has rank <= k d. Starting from
    A = A0 + R (R = A_start - A0, the warm start), every L-BFGS vector (iterate - A0, gradient, s, y, direction)
    is therefore a combination of R and of the terms G_t at the accepted points: the solver runs on those
    coefficients with the Gram matrix of the basis (inner products of the n x kd factors), and an evaluation
    needs only products of n x d blocks with B = A0 + c_0 R (kept dense in ``work``, rebuilt in one pass
    when c_0 changes) and, at an accepted point, with R - no other n x n pass. In exact arithmetic the
    iterates, values, step lengths and stopping decisions are those of the dense solver (same two-loop
    recursion, history ``memory``, Armijo backtracking, pgtol on the infinity norm of the gradient, ftol);
    a test checks the two against each other.

    ``A`` (the warm start, updated in place with the solution) and ``C`` (overwritten with A0) are n x n;
    ``work`` is an n x n scratch buffer; ``targets`` are the v matrices G_m F_m (n x d). Returns
    ``(value, n_iter, n_eval, Y)`` with Y = A^k X at the solution (float64).
    """
    n, dt = A.shape[0], A.dtype
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    v = len(targets)
    tsum = np.sum(targets, axis=0)
    kd = k * d
    const = 0.0
    rr = 0.0
    inv_mu = dt.type(1.0 / mu)
    for rows in row_blocks(n):
        Lb = Lam1[rows]
        const += float(np.dot(C[rows].ravel(), Lb.ravel()))
        const -= float(np.dot(Lb.ravel(), Lb.ravel())) / (2.0 * mu)
        np.copyto(work[rows], A[rows])  # B = A0 + 1 R = the warm start
        C[rows] -= Lb * inv_mu
        A[rows] -= C[rows]
        rr += float(np.dot(A[rows].ravel(), A[rows].ravel()))
    A0, R, Bd = C, A, work  # the buffers now hold A0, R and B
    b0 = [1.0]
    X32 = X.astype(dt)
    A0X0 = (A0 @ X32).astype(np.float64)
    RX0 = (R @ X32).astype(np.float64)

    cap = max_iter + 2  # basis: R and one term per accepted evaluation (the start included)
    # the factors of the terms, stored transposed (rows t kd .. (t+1) kd - 1 hold P_t^T and Q_t^T) in the
    # dtype of the state: the dense solver's gradients and inner products are in that precision too
    PT = np.zeros((cap * kd, n), dtype=dt)
    QT = np.zeros((cap * kd, n), dtype=dt)
    QX0 = np.zeros((cap * kd, d))  # Q_t^T X_0 of every term (the first power reuses it)
    gram = np.zeros((cap, cap))
    gram[0, 0] = rr
    n_terms = [0]

    def set_b(c0):
        """B = A0 + c0 R (rebuilt from A0 and R, so that no rounding accumulates)."""
        if c0 != b0[0]:
            c = dt.type(c0)
            for rows in row_blocks(n):
                np.multiply(R[rows], c, out=Bd[rows])
                Bd[rows] += A0[rows]
            b0[0] = c0

    def lowrank(c, Z, transpose=False, inner=None):
        """sum_t c_t P_t Q_t^T Z (or the transpose applied to Z) over the stored terms."""
        t = n_terms[0]
        if t == 0:
            return 0.0
        left, right = (QT, PT) if transpose else (PT, QT)
        inner = (right[:t * kd] @ Z.astype(dt)).astype(np.float64) if inner is None else inner[:t * kd].copy()
        inner *= np.repeat(c[1:t + 1], kd)[:, None]
        return (left[:t * kd].T @ inner.astype(dt)).astype(np.float64)

    def powers(c):
        """[X, A X, .., A^k X] at A = A0 + c_0 R + sum_t c_t G_t (B = A0 + c_0 R must be current)."""
        xs = [X, A0X0 + c[0] * RX0 + lowrank(c, X, inner=QX0)]
        for j in range(1, k):
            xs.append((Bd @ xs[j].astype(dt)).astype(np.float64) + lowrank(c, xs[j]))
        return xs

    def line_poly(c, dv):
        """(A + t D)^j X = sum_i t^i Y[j][i] along the search line A + t D (A at ``c``, D at ``dv``; B current),
        and R Y[j][i] for j < k. Every trial step of the backtracking search then costs O(n d k): the products
        with n x n matrices are made once per iteration (two per level, on the stacked coefficients)."""
        Y = [[X], [A0X0 + c[0] * RX0 + lowrank(c, X, inner=QX0), dv[0] * RX0 + lowrank(dv, X, inner=QX0)]]
        RY = [[RX0]]
        for j in range(2, k + 1):
            Z = np.hstack(Y[j - 1])
            Z32 = Z.astype(dt)
            BZ = (Bd @ Z32).astype(np.float64)
            RZ = (R @ Z32).astype(np.float64)
            RY.append([RZ[:, i * d:(i + 1) * d] for i in range(j)])
            AZ = BZ + lowrank(c, Z)
            DZ = dv[0] * RZ + lowrank(dv, Z)
            Y.append([AZ[:, :d]] + [AZ[:, i * d:(i + 1) * d] + DZ[:, (i - 1) * d:i * d] for i in range(1, j)]
                     + [DZ[:, (j - 1) * d:]])
        return Y, RY

    def horner(coefs, t):
        out = coefs[-1].copy()
        for blk in reversed(coefs[:-1]):
            out *= t
            out += blk
        return out

    def value(c, xs):
        fit = float(sum(np.sum((xs[k] - T) ** 2) for T in targets))
        return fit + 0.5 * mu * float(c @ gram @ c) + const

    def add_term(c, xs, rx=None):
        """Store G = 2 sum_r P_r X_{k-1-r}^T at the point c (Eq. 10) as a new basis term; returns its index.
        ``rx`` = [R X_0, .., R X_{k-1}] when known (B = A0 + c_0 R must be current)."""
        P = [v * xs[k] - tsum]
        for _ in range(1, k):
            # A^T P = (P^T B)^T + low-rank part (the P^T B form is the faster GEMM for a thin P)
            prod = np.ascontiguousarray(P[-1].T.astype(dt)) @ Bd
            P.append(prod.T.astype(np.float64) + lowrank(c, P[-1], transpose=True))
        t = n_terms[0]
        cols = slice(t * kd, (t + 1) * kd)
        Pnew = PT[cols]
        Qnew = QT[cols]
        for r in range(k):
            Pnew[r * d:(r + 1) * d] = 2.0 * P[r].T
            Qnew[r * d:(r + 1) * d] = xs[k - 1 - r].T
        QX0[cols] = Qnew.astype(np.float64) @ X
        # <R, G> = 2 sum_r <P_r, R X_{k-1-r}>: one product of R with [X_1 .. X_{k-1}]
        if rx is None:
            rx = [RX0]
            if k > 1:
                prod = (R @ np.hstack(xs[1:k]).astype(dt)).astype(np.float64)
                rx += [prod[:, j * d:(j + 1) * d] for j in range(k - 1)]
        idx = t + 1
        gram[idx, 0] = gram[0, idx] = sum(2.0 * float(np.sum(P[r] * rx[k - 1 - r])) for r in range(k))
        pp = (Pnew @ PT[:(t + 1) * kd].T).astype(np.float64)
        qq = (Qnew @ QT[:(t + 1) * kd].T).astype(np.float64)
        blocks = (pp * qq).reshape(kd, t + 1, kd).sum(axis=(0, 2))
        gram[idx, 1:idx + 1] = blocks
        gram[1:idx + 1, idx] = blocks
        n_terms[0] = idx
        return idx

    def dot(a, b):
        return float(a @ gram @ b)

    def grad_inf(gc):
        """||gradient||_inf: bounded by the Frobenius norm from both sides; formed block-wise only if needed."""
        fro = np.sqrt(max(dot(gc, gc), 0.0))
        if fro <= pgtol or fro / n > pgtol:
            return fro if fro <= pgtol else fro / n
        t = n_terms[0]
        scaled = PT[:t * kd].T.astype(np.float64) * np.repeat(gc[1:t + 1], kd)[None, :]
        Qd = QT[:t * kd].astype(np.float64)
        worst = 0.0
        for rows in row_blocks(n):
            blk = gc[0] * R[rows].astype(np.float64) + scaled[rows] @ Qd
            worst = max(worst, float(np.max(np.abs(blk))))
        return worst

    # the start: x = A0 + R, gradient G_0 + mu R
    x = np.zeros(cap)
    x[0] = 1.0
    xs = powers(x)
    f = value(x, xs)
    idx = add_term(x, xs)
    g = mu * x
    g[idx] += 1.0
    n_eval = 1
    hist = []          # (s, y, rho), oldest first, coefficient vectors
    n_slots = memory   # free history slots (the dense solver's free_slots)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        if grad_inf(g) <= pgtol:
            n_iter -= 1
            break
        dvec = g.copy()
        alphas = []
        for s_i, y_i, rho in reversed(hist):
            a = rho * dot(s_i, dvec)
            alphas.append(a)
            dvec -= a * y_i
        if hist:
            s_i, y_i, rho = hist[-1]
            dvec *= 1.0 / (rho * dot(y_i, y_i))
        for (s_i, y_i, rho), a in zip(hist, reversed(alphas), strict=True):
            b = rho * dot(y_i, dvec)
            dvec += (a - b) * s_i
        dvec = -dvec
        gd = dot(g, dvec)
        if not gd < 0:  # not a descent direction: restart from steepest descent
            n_slots += len(hist)
            hist = []
            dvec = -g
            gd = dot(g, dvec)
            if not gd < 0:
                break
        step = 1.0 if hist else min(1.0, 1.0 / max(np.sqrt(max(dot(dvec, dvec), 0.0)), 1e-300))
        # Backtracking: the first trial is evaluated directly (k - 1 products); after a rejection the
        # remaining trials use the polynomial in the step (line_poly), whose products are made once.
        accepted = False
        Y = RY = None
        for _ in range(max_backtracks):
            x_new = x + step * dvec
            if Y is None:
                set_b(x_new[0])
                xs_new = powers(x_new)
            else:
                xs_new = [None] * k + [horner(Y[k], step)]
            f_new = value(x_new, xs_new)
            n_eval += 1
            if np.isfinite(f_new) and f_new <= f + c1 * step * gd:
                accepted = True
                break
            step *= 0.5
            if Y is None:
                set_b(x[0])
                Y, RY = line_poly(x, dvec)
        if not accepted:
            break
        if Y is None:
            idx = add_term(x_new, xs_new)
        else:
            xs_new = [horner(Y[j], step) for j in range(k)] + xs_new[k:]
            set_b(x_new[0])
            idx = add_term(x_new, xs_new, [horner(RY[j], step) for j in range(k)])
        g_new = mu * x_new
        g_new[idx] += 1.0
        if n_slots:
            n_slots -= 1
        else:
            hist.pop(0)
        s_i = x_new - x
        y_i = g_new - g
        sy = dot(s_i, y_i)
        if sy > 1e-10 * dot(y_i, y_i):
            hist.append((s_i, y_i, 1.0 / sy))
        else:
            n_slots += 1
        x, g, xs = x_new, g_new, xs_new
        f_old, f = f, f_new
        if (f_old - f) <= ftol * max(abs(f_old), abs(f), 1.0):
            break
    # A = A0 + x_0 R + sum_t x_t G_t, written into the buffer of R. The X_0 columns of all terms are merged.
    t = n_terms[0]
    head = (k - 1) * d
    left = [PT[s * kd:s * kd + head].T * x[s + 1] for s in range(t)]
    left.append(sum(PT[s * kd + head:(s + 1) * kd].T.astype(np.float64) * x[s + 1] for s in range(t)))
    right = [QT[s * kd:s * kd + head] for s in range(t)] + [X.T]
    U = np.hstack(left).astype(dt)
    Vt = np.vstack(right).astype(dt)
    c0 = dt.type(x[0])
    for rows in row_blocks(n, elements=GEMM_BLOCK_ELEMENTS):
        blk = A[rows]
        blk *= c0
        blk += A0[rows]
        blk += U[rows] @ Vt
    return f, n_iter, n_eval, xs[k]


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
    """Buffers of :func:`lbfgs_minimize`: four n x n arrays, and history pairs (s, y) allocated on first use
    (at most ``memory`` pairs, kept for the next solve). A bounded solve that stops after h iterations holds
    only h pairs, so the peak memory follows the iterations actually taken (spec 6 memory)."""

    def __init__(self, shape, dtype, memory: int):
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.memory = int(memory)
        self.s: list[np.ndarray] = []
        self.y: list[np.ndarray] = []
        self.g = np.empty(shape, dtype)
        self.g_new = np.empty(shape, dtype)
        self.d = np.empty(shape, dtype)
        self.x_new = np.empty(shape, dtype)

    def new_pair(self):
        """A fresh (s, y) pair (the caller guarantees fewer than ``memory`` pairs are in use)."""
        self.s.append(np.empty(self.shape, self.dtype))
        self.y.append(np.empty(self.shape, self.dtype))
        return self.s[-1], self.y[-1]


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

    A ``fun`` with ``value(x)`` and ``gradient(grad_out)`` methods (the gradient at the point of the last
    ``value`` call) is asked for the gradient at accepted points only: a rejected line-search trial needs the
    value alone.

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
    lazy = hasattr(fun, "value") and hasattr(fun, "gradient")
    f = fun(x, g)
    n_eval = 1
    hist = []  # list of (s, y, rho), oldest first
    free_slots = list(zip(ws.s, ws.y, strict=True))  # pairs allocated by earlier solves
    n_unallocated = ws.memory - len(free_slots)
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
            f_new = fun.value(x_new) if lazy else fun(x_new, g_new)
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
        if lazy:
            fun.gradient(g_new)
        # -- history update (s = x_new - x, y = g_new - g), skipped when the curvature is not positive
        if free_slots:
            s_i, y_i = free_slots.pop(0)
        elif n_unallocated:
            n_unallocated -= 1
            s_i, y_i = ws.new_pair()
        else:
            s_i, y_i = hist.pop(0)[:2]
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


def v_step(W: np.ndarray, Lam2: np.ndarray, mu: float, out: np.ndarray) -> np.ndarray:
    """V = (W + W^T)/2 + (Lam2 + Lam2^T)/(2 mu) (Eq. 17): the projection of W + Lam2/mu onto symmetric matrices."""
    dt = out.dtype
    for rows in row_blocks(W.shape[0], elements=TRANSPOSE_BLOCK_ELEMENTS):
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


def indicator_matrix(labels: np.ndarray, ks) -> np.ndarray:
    """B = [G_1 .. G_v] (n x sum_m c_m, float64): the one-hot indicators of all bases side by side."""
    n, v = labels.shape
    offsets = np.concatenate([[0], np.cumsum(ks)]).astype(np.int64)
    B = np.zeros((n, int(offsets[-1])))
    for m in range(v):
        B[np.arange(n), offsets[m] + labels[:, m]] = 1.0
    return B


def indicator_product(W: np.ndarray, labels: np.ndarray, ks) -> list[np.ndarray]:
    """[W G_1, .., W G_v] (float64, n x c_m each) by one product with B = [G_1 .. G_v], row block by block."""
    B = indicator_matrix(labels, ks)
    out = np.empty((W.shape[0], B.shape[1]))
    for rows in row_blocks(W.shape[0], elements=GEMM_BLOCK_ELEMENTS):
        np.matmul(W[rows].astype(np.float64), B, out=out[rows])
    offsets = np.concatenate([[0], np.cumsum(ks)]).astype(np.int64)
    return [out[:, offsets[m]:offsets[m + 1]] for m in range(labels.shape[1])]


def refine_sweep(labels: np.ndarray, m: int, F: np.ndarray, Y: np.ndarray, Wsym: np.ndarray, WG: np.ndarray,
                 alpha: np.ndarray, lam: float, literal: bool = False) -> int:
    """One sequential sweep of the G-step of base m (spec S3), in place on ``labels[:, m]``.

    Minimises ||Y - G F||^2 - 2 lam alpha_m <T, G G^T> + lam alpha_m^2 ||G G^T||^2 row by row, with
    T = sym(W) - f sum_{p != m} alpha_p M_p (f = 1, the corrected factor of A2, or 1/2 with ``literal``).
    Moving row i into cluster j costs ||y_i - f_j||^2 - 4 lam alpha_m sum_{l in j, l != i} T_il
    + 2 lam alpha_m^2 n_j^(-i); ties keep the current cluster and a move that would empty a cluster is refused
    (A8). T is never formed: T G_m = sym(W) G_m (``WG``) - f sum_p alpha_p G_p (G_p^T G_m) uses the contingency
    tables of the other bases, and the row T_i of a moved point is sym(W)_i minus the weighted agreement of
    the other bases with i. Returns the number of moves.
    """
    n, v = labels.shape
    c = F.shape[0]
    lab = labels[:, m]
    factor = 0.5 if literal else 1.0
    others = [p for p in range(v) if p != m]
    other_labels = labels[:, others]
    other_w = factor * np.asarray(alpha, dtype=np.float64)[others]
    sq = np.sum(Y * Y, axis=1)[:, None] - 2.0 * (Y @ F.T) + np.sum(F * F, axis=1)[None, :]
    counts = np.bincount(lab, minlength=c).astype(np.float64)
    # Pt[j, i] = sum_{l in j} T_li (T symmetric)  (spec: "P = T G")
    Pt = np.array(WG.T, dtype=np.float64)
    for p, w in zip(others, other_w, strict=True):
        kp = int(labels[:, p].max()) + 1
        table = np.bincount(labels[:, p] * c + lab, minlength=kp * c).reshape(kp, c).astype(np.float64)
        Pt -= w * table[labels[:, p]].T
    diag = np.diagonal(Wsym).astype(np.float64) - float(other_w.sum())
    w_pair = 4.0 * lam * alpha[m]
    w_size = 2.0 * lam * alpha[m] * alpha[m]
    moves = 0
    for i in range(n):
        a = lab[i]
        if counts[a] <= 1:
            continue
        cost = sq[i] - w_pair * Pt[:, i] + w_size * counts
        cost[a] += w_pair * diag[i] - w_size  # remove i itself from its current cluster
        b = int(np.argmin(cost))
        if b != a and cost[b] < cost[a]:
            row = Wsym[i].astype(np.float64) - (other_labels == other_labels[i]) @ other_w
            Pt[a] -= row
            Pt[b] += row
            counts[a] -= 1
            counts[b] += 1
            lab[i] = b
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


def coassoc_inner(W: np.ndarray, labels: np.ndarray, ks=None) -> np.ndarray:
    """<W, M_m> = sum_j 1_j^T W 1_j = sum_i (W G_m)_{i, label_m(i)} for every base m (one product W B)."""
    ks = labels.max(axis=0) + 1 if ks is None else ks
    WG = indicator_product(W, labels, ks)
    rows = np.arange(labels.shape[0])
    return np.array([float(WG[m][rows, labels[:, m]].sum()) for m in range(labels.shape[1])])

"""ADMM solver of EC-CMS (Jia et al., TNNLS 2023, Algorithm 1; specs/eccms.md section 3.2).

Problem (paper Eq. 5)::

    min_{C,E}  tr(C^T Phi C) + (lambda/2) ||E||_F^2
    s.t.       A = C + E,  Psi_Omega(E) = 0,  C = C^T,  0 <= C <= 1

solved with the two-block ADMM of Eqs. 6-14 (auxiliary F = C carries symmetry and the box).

How the fixed linear system is solved (the one O(n^3) part)
-----------------------------------------------------------
The C-update (Eq. 9) multiplies by ``M^-1 = (2 Phi + (gamma1 + gamma2) I)^-1`` every iteration. ``M`` never
changes, so it is inverted **once**. ``Phi`` is the Laplacian of the high-confidence graph H, hence ``M`` is
block-diagonal over the connected components of H: the points are permuted so that every component is a
contiguous index range, each non-trivial component's block is inverted once by Cholesky (LAPACK
``potrf``/``potri``, the block is symmetric positive definite with eigenvalues >= gamma1 + gamma2), and the
isolated points (no high-confidence neighbour) share the scalar inverse ``1/(gamma1+gamma2)``. An iteration then
costs one dense GEMM per component, ``sum_b 2 n_b^2 n`` flops instead of ``2 n^3``, plus O(n^2) element-wise work.
Inside a component, points with identical rows of ``H + I`` (twins: identical label rows always are) make ``M``
act on group-constant vectors through the k x k matrix ``S = Agg^T M Agg`` and on within-group differences as
a scalar, so a component with many twins multiplies by ``S^-1`` (``2 k^2 n`` flops; k is 15-20 % of n_b on the
large EC-CMS pools) - exact, see :class:`InverseBlock`.
A large component's matrix (k x k on the groups) is sparse - its graph is H's, made of tight groups with few
edges between them - so its inverse is kept in bordered block-diagonal form (METIS parts and a separator,
:class:`ensclust.core.spd_inverse.SpdInverse`): dense inverses of the parts and of the separator's Schur
complement, ``2 sum m_i^2 + s^2`` multiply-adds per column instead of k^2 (USPS at alpha = 0.7: 15x fewer;
results/bench/eccms_s27). Small components keep the dense inverse. We keep explicit inverses rather than
Cholesky factors because applying a factor needs two triangular solves of the same flop count as one GEMM
with the inverse, and GEMM is the faster kernel. M is well conditioned (condition number <= 1 + 2
max-degree(H)/(gamma1+gamma2)), so the inverses lose nothing.
Iterative solvers (CG on the sparse M) were not used: the result would only be approximate and, with n
right-hand sides per iteration, no cheaper.

Everything else runs in place on row chunks of the dense n x n arrays (A, C, E, F, Y1, Y2, and P = C + Y2/g2 for
the symmetrisation of Eq. 13) with preallocated temporaries, so the working memory is seven n x n arrays plus
the component inverses (USPS, n = 11000, float32: about 3.7 GB).

Authors' code vs paper (spec section 5) - defaults follow the code, the paper's form is an option:

* stopping rule (A2): ``stopping="code"``: max of the non-squared relative changes
  ``||C_new - C_old|| / ||C_old||`` (same for E and F) and ``||r|| / ||Y_old||`` for the two multipliers, strict
  ``< tol``, at most ``max_iter`` iterations; ``stopping="paper"``: the same ratios squared, ``<= tol``.
* diagonal of Omega (A4): the code locks E only on ``{H > 0}`` with H's diagonal zeroed (``lock_diagonal=False``);
  the paper's Omega contains the diagonal (``lock_diagonal=True``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ensclust.core.spd_inverse import SpdInverse

#: rows per chunk of the element-wise updates; columns per chunk of the block GEMMs
_ROW_CHUNK = 256
_COL_CHUNK = 2048


def high_confidence_matrix(ca, alpha: float):
    """Sparse high-confidence matrix H (code ``getHC`` + ``run_EC_CMS``; spec 3.1).

    ``H_ij = ca_ij`` where ``ca_ij >= alpha`` and 0 elsewhere, with the diagonal zeroed. ``ca`` is the plain
    co-association matrix (dense or sparse). Returns a symmetric CSR matrix with explicit zeros removed.
    """
    if sparse.issparse(ca):
        H = sparse.csr_matrix(ca, copy=True)
        H.data[H.data < alpha] = 0
    else:
        ca = np.asarray(ca)
        rows, cols = np.nonzero(ca >= alpha)
        H = sparse.csr_matrix((ca[rows, cols], (rows, cols)), shape=ca.shape)
    H.setdiag(0)
    H.eliminate_zeros()
    H.sort_indices()
    return H


@dataclass
class InverseBlock:
    """``M^-1`` on one connected component of H: rows ``start:stop`` of the permuted order.

    Points of the component whose rows of ``H + I`` are identical ("twins": points with identical label rows
    always are, their co-association is 1) sit next to each other, in groups. With Agg the block's n_b x k
    group indicator, ``M`` maps group-constant vectors to group-constant vectors, and every vector supported on
    one group G with zero sum is an eigenvector of ``M`` with eigenvalue ``l_G = 2 d_G + 2 + gamma1 + gamma2``
    (d_G: the H-degree of G's points; ``H(e_p - e_q) = -(e_p - e_q)`` for twins p, q). Hence, exactly,

        M^-1 R = Agg S^-1 Agg^T R + (R - Agg diag(1/g) Agg^T R) / l_G,     S = Agg^T M Agg (k x k, SPD)
               = Agg (Y - diag(1/(g l_G)) Agg^T R) + R / l_G,              Y = S^-1 Agg^T R,

    one k x k GEMM per column instead of n_b x n_b (the large EC-CMS pools hold 15-20 % as many groups as
    points per component: FCT 3582 points in 1587 groups, Texture 3463 in 1410), plus a sparse sum, a gather
    and one scaled add over the block. A point without twin takes ``Y``'s row as it is (its 1/l_G is set to 0).
    Without twins (``groups`` None) ``inv`` is the block's plain ``M^-1``.
    """

    start: int
    stop: int
    inv: SpdInverse                          # S^-1 (k x k), or M^-1 without twins
    groups: sparse.csr_matrix | None = None  # Agg^T (k x n_b, ones)
    row_group: np.ndarray | None = None      # group of every row
    row_scale: np.ndarray | None = None      # 1 / l_G per row (0 for points without twin)
    group_scale: np.ndarray | None = None    # 1 / (g l_G) per group (0 for points without twin)

    @property
    def n_groups(self) -> int:
        return self.inv.n

    def astype(self, dtype) -> InverseBlock:
        if self.groups is None:
            return InverseBlock(self.start, self.stop, self.inv.astype(dtype))
        return InverseBlock(self.start, self.stop, self.inv.astype(dtype), self.groups.astype(dtype),
                            self.row_group, self.row_scale.astype(dtype), self.group_scale.astype(dtype))

    def apply(self, R: np.ndarray) -> np.ndarray:
        """``M^-1 R`` for the block's rows ``R`` (n_b x any)."""
        if self.groups is None:
            return self.inv.apply(R)
        sums = np.asarray(self.groups @ R)                  # Agg^T R
        Z = self.inv.apply(sums)
        sums *= self.group_scale[:, None]
        Z -= sums
        out = Z[self.row_group]
        R_scaled = np.multiply(R, self.row_scale[:, None])
        out += R_scaled
        return out

    def dense(self) -> np.ndarray:
        """The block's ``M^-1`` as a dense matrix (for tests)."""
        return self.apply(np.eye(self.stop - self.start, dtype=self.inv.dtype))


def twin_groups(H) -> np.ndarray:
    """For every point, the smallest index of the points whose row of ``H + I`` equals its own (exact)."""
    n = H.shape[0]
    Hi = sparse.csr_matrix(H + sparse.identity(n, format="csr"))
    Hi.sum_duplicates()
    Hi.sort_indices()
    indptr, indices, data = Hi.indptr, Hi.indices, Hi.data
    first = np.arange(n)
    candidates: dict = {}
    for p in range(n):
        a, b = indptr[p], indptr[p + 1]
        idx, val = indices[a:b], data[a:b]
        key = (b - a, hash(idx.tobytes()), hash(val.tobytes()))
        for q in candidates.setdefault(key, []):
            qa, qb = indptr[q], indptr[q + 1]
            if np.array_equal(indices[qa:qb], idx) and np.array_equal(data[qa:qb], val):
                first[p] = q
                break
        else:
            candidates[key].append(p)
    return first


def _ranked_components(H):
    """H's connected components, ranked: non-trivial ones by decreasing size (ties by component id), then the
    singletons. Returns ``(n_comp, comp, sizes, rank, comp_rank)``: ``rank`` the component ids in that order,
    ``comp_rank[c]`` the place of component c in it."""
    n_comp, comp = connected_components(H, directed=False)
    sizes = np.bincount(comp, minlength=n_comp)
    rank = np.lexsort((np.arange(n_comp), -sizes, sizes == 1))
    comp_rank = np.empty(n_comp, dtype=np.int64)
    comp_rank[rank] = np.arange(n_comp)
    return n_comp, comp, sizes, rank, comp_rank


def laplacian_blocks(H, gamma1: float, gamma2: float, first=None):
    """Permutation grouping H's connected components and the inverse of every block of ``2 Phi + g I``.

    Returns ``(order, blocks, n_single_start)``: ``order`` lists the original point indices in the permuted
    order (non-trivial components first, largest first; isolated points last; inside a component by the
    first index of each point's twin group, then by index - without twins the original order), ``blocks`` is
    a list of :class:`InverseBlock` (float64) in permuted coordinates, and isolated points occupy
    ``[n_single_start, n)`` with ``Minv = 1/(gamma1 + gamma2)``. ``first``: H's :func:`twin_groups`, when
    already known.
    """
    n = H.shape[0]
    n_comp, comp, sizes, rank, comp_rank = _ranked_components(H)
    first = twin_groups(H) if first is None else first
    # a component takes the group form when it saves enough GEMM flops (_TWIN_MIN_SAVING); only those are
    # reordered by twin group, the others keep the original order (and so the plain path's exact bits)
    n_groups = np.bincount(comp[first == np.arange(n)], minlength=n_comp)
    grouped = (sizes >= _PACK_BELOW) & (sizes * sizes - n_groups * n_groups >= _TWIN_MIN_SAVING * sizes)
    order = np.lexsort((np.arange(n), np.where(grouped[comp], first, np.arange(n)), comp_rank[comp]))
    sorted_sizes = sizes[rank]
    starts = np.concatenate([[0], np.cumsum(sorted_sizes)])
    shift = gamma1 + gamma2
    Hp = H[order][:, order].tocsr()
    first_p = first[order]
    blocks = []
    n_single_start = n
    for b, size in enumerate(sorted_sizes):
        s, e = int(starts[b]), int(starts[b + 1])
        if size == 1:
            n_single_start = s
            break
        Hb = sparse.csr_matrix(Hp[s:e, s:e], dtype=np.float64)
        deg = np.asarray(Hb.sum(axis=1)).ravel()
        M = (sparse.diags(2.0 * deg + shift) - 2.0 * Hb).tocsr()
        if not grouped[rank[b]]:
            blocks.append(InverseBlock(s, e, SpdInverse(M)))
            continue
        row_group = np.cumsum(np.diff(first_p[s:e], prepend=-1) != 0) - 1
        k = int(row_group[-1]) + 1
        agg_t = sparse.csr_matrix((np.ones(size), (row_group, np.arange(size))), shape=(k, size))
        S = sparse.csr_matrix(agg_t @ M @ agg_t.T)               # Agg^T M Agg
        g = np.bincount(row_group, minlength=k).astype(np.float64)
        scale = np.where(g[row_group] > 1, 1.0 / (2.0 * deg + 2.0 + shift), 0.0)
        group_scale = np.zeros(k)
        group_scale[row_group] = scale / g[row_group]
        blocks.append(InverseBlock(s, e, SpdInverse(S), agg_t, row_group, scale, group_scale))
    return order, _pack_small_blocks(blocks), n_single_start


#: a component is solved on its twin groups when that saves at least this many GEMM flops per row and column
#: (n_b^2 - k^2 >= this x n_b): the group form's sparse sum, gather and scaled add cost about as much as ~100
#: flops of GEMM per entry (measured break-even on Ecoli's largest block, n_b = 143 in 78 groups)
_TWIN_MIN_SAVING = 128
#: components smaller than this are packed together into one block-diagonal GEMM of at most _PACK_SIZE rows
#: (and solved with their plain inverse, twins or not)
_PACK_BELOW = 16
_PACK_SIZE = 64
#: entries per row panel of the group ADMM's element-wise steps (float64: 256 KB, a few panels fit in L2)
_PANEL = 32768


def _pack_small_blocks(blocks):
    """Merge runs of consecutive small components into one block-diagonal matrix (exact: zeros elsewhere).

    Many tiny components would otherwise cost one Python-level GEMM call each per iteration; a packed group of
    at most ``_PACK_SIZE`` rows costs a few more flops but one call.
    """
    packed, group = [], []

    def flush():
        if not group:
            return
        s0, e0 = group[0].start, group[-1].stop
        if len(group) == 1:
            packed.append(group[0])
        else:
            Minv = np.zeros((e0 - s0, e0 - s0))
            for blk in group:
                Minv[blk.start - s0:blk.stop - s0, blk.start - s0:blk.stop - s0] = blk.inv.dense()
            packed.append(InverseBlock(s0, e0, SpdInverse.from_inverse(Minv)))
        group.clear()

    for blk in blocks:
        if blk.stop - blk.start >= _PACK_BELOW:
            flush()
            packed.append(blk)
            continue
        if group and blk.stop - group[0].start > _PACK_SIZE:
            flush()
        group.append(blk)
    flush()
    return packed


def _ratio(num2: float, den2: float, squared: bool) -> float:
    """Relative change ||x||/||y|| from squared norms, with MATLAB's x/0 = Inf and 0/0 = NaN."""
    if den2 == 0.0:
        return math.nan if num2 == 0.0 else math.inf
    r = num2 / den2
    return r if squared else math.sqrt(r)


def _worst_ratio(changes: list[tuple[float, float]], squared: bool) -> float:
    """The stopping quantity: the largest relative change ``||new - old|| / ||old||`` (C, E, F) and residual
    ratio ``||r|| / ||Y_old||`` (multipliers), from squared norms; NaN ratios are ignored as MATLAB's max does."""
    finite = [r for r in (_ratio(num, den, squared) for num, den in changes) if not math.isnan(r)]
    return max(finite) if finite else math.nan


def _solve_info(n_iter: int, converged: bool, history: list[dict], **extra) -> dict:
    """The ``info`` dict of :func:`solve` (both iterations)."""
    return {"n_iter": n_iter, "converged": converged,
            "stop_ratio": [h["ratio"] for h in history],
            "primal_residual1": [h["primal_residual1"] for h in history],
            "primal_residual2": [h["primal_residual2"] for h in history], **extra}


def _sq(x: np.ndarray) -> float:
    """Squared Frobenius norm accumulated in float64.

    float64: BLAS dot on the (contiguous) chunk. float32: the chunk is cast to float64 first, because a float32
    dot over millions of entries loses digits that the stopping rule compares at 1e-2.
    """
    v = np.ascontiguousarray(x).ravel()
    if v.dtype != np.float64:
        v = v.astype(np.float64)
    return float(np.dot(v, v))


def solve(A, H, lam: float, *, gamma1: float = 1.0, gamma2: float = 1.0, tol: float = 1e-2,
          max_iter: int = 100, stopping: str = "code", lock_diagonal: bool = False,
          laplacian: bool = True, completion: bool = True, dtype=np.float64, callback=None):
    """Run the EC-CMS ADMM (spec 3.2) and return ``(C, info)``.

    Parameters
    ----------
    A : (n, n) array, the matrix to enhance (LWCA by default; symmetric, unit diagonal).
    H : (n, n) sparse high-confidence matrix (zero diagonal), see :func:`high_confidence_matrix`.
    lam : lambda, weight of ||E||^2.
    gamma1, gamma2 : ADMM penalties (paper: 1, 1).
    tol, max_iter : stopping threshold and iteration cap (code: 1e-2, 100).
    stopping : "code" (non-squared ratios, strict <) or "paper" (squared ratios, <=).
    lock_diagonal : also force E_ii = 0 (paper's Omega); the code leaves the diagonal free.
    laplacian : False drops tr(C^T Phi C) (Table VIII ablation; Phi = 0, the lock set is kept).
    completion : False drops the constraint Psi_Omega(E) = 0 (Table VIII ablation).
    dtype : float64 (default, matches the authors' numbers) or float32 (half the memory and bandwidth).
    callback : optional ``callback(k, C, E, F, Y1, Y2)`` after every iteration, arrays in the ORIGINAL order
        (copies; meant for tests on small n).

    Returns
    -------
    C : (n, n) enhanced matrix in the original point order (not exactly symmetric; see spec A8).
    info : dict with n_iter, converged, stop_ratios (per iteration), primal residuals, block sizes.
    """
    dtype = np.dtype(dtype)
    n = A.shape[0]
    g1, g2 = float(gamma1), float(gamma2)
    H = sparse.csr_matrix(H)
    options = dict(gamma1=g1, gamma2=g2, tol=tol, max_iter=max_iter, stopping=stopping, lock_diagonal=lock_diagonal,
                   laplacian=laplacian, completion=completion, dtype=dtype, callback=callback)
    grouping = twin_grouping(H)
    grouped = _solve_grouped(A, grouping, lam, **options)
    if grouped is not None:
        return grouped
    # A is not constant on H's twin groups (an ensemble with missing labels): the n x n iteration below
    if laplacian:
        order, blocks, single_start = laplacian_blocks(H, g1, g2, first=grouping.first)
    else:
        order, blocks, single_start = laplacian_blocks(sparse.csr_matrix((n, n)), g1, g2)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)

    # lock set in permuted coordinates, as CSR row lists
    lock = sparse.csr_matrix(H[order][:, order], copy=True) if completion else sparse.csr_matrix((n, n))
    lock.data[:] = 1
    if completion and lock_diagonal:
        lock = (lock + sparse.identity(n, format="csr")).tocsr()
    lock.sum_duplicates()
    lock.sort_indices()
    lock_indptr, lock_indices = lock.indptr, lock.indices

    Ap = np.asarray(A, dtype=dtype)[np.ix_(order, order)]
    C = np.zeros((n, n), dtype=dtype)
    E = np.zeros((n, n), dtype=dtype)
    F = np.zeros((n, n), dtype=dtype)
    Y1 = Ap.copy()
    Y2 = np.zeros((n, n), dtype=dtype)
    blocks_dt = [blk.astype(dtype) for blk in blocks]
    sizes = [blk.stop - blk.start for blk in blocks]
    groups = [blk.n_groups for blk in blocks]
    costs = [blk.inv.cost for blk in blocks]
    del blocks                             # float32 mode: drop the float64 inverses (largest USPS block 0.5 GB)
    inv_shift = dtype.type(1.0 / (g1 + g2))
    squared = stopping == "paper"
    c_e = dtype.type(1.0 / (lam + g1))
    tg1, tg2 = dtype.type(g1), dtype.type(g2)
    inv_g2 = dtype.type(1.0 / g2)

    history = []
    converged = False
    unit_g1, unit_g2 = g1 == 1.0, g2 == 1.0
    # reusable buffers: one row chunk (or one block x column chunk) of temporaries and the n x n P of Eq. 13
    max_rows = max(sizes + [_ROW_CHUNK])
    buf_cols = min(n, _COL_CHUNK)
    R_buf = np.empty((max_rows, buf_cols), dtype=dtype)
    T_buf = np.empty((max_rows, buf_cols), dtype=dtype)
    row_buf = [np.empty((_ROW_CHUNK, n), dtype=dtype) for _ in range(3)]
    P = np.empty((n, n), dtype=dtype)
    k = 0
    for k in range(1, max_iter + 1):
        # ---- C-update (Eq. 9): C = M^-1 (g1 (A - E + Y1/g1) + g2 (F - Y2/g2)), block rows ----------------
        dC2 = Cold2 = 0.0
        for blk in blocks_dt:
            s, e = blk.start, blk.stop
            for c0 in range(0, n, _COL_CHUNK):
                c1 = min(c0 + _COL_CHUNK, n)
                R = R_buf[:e - s, :c1 - c0]
                T = T_buf[:e - s, :c1 - c0]
                _rhs_into(R, T, Ap, E, Y1, F, Y2, slice(s, e), slice(c0, c1), tg1, tg2, unit_g1, unit_g2)
                Cn = blk.apply(R)
                old = C[s:e, c0:c1]
                Cold2 += _sq(old)
                np.subtract(Cn, old, out=R)
                dC2 += _sq(R)
                old[...] = Cn
        for r0 in range(single_start, n, _ROW_CHUNK):
            r1 = min(r0 + _ROW_CHUNK, n)
            R = row_buf[0][:r1 - r0]
            T = row_buf[1][:r1 - r0]
            _rhs_into(R, T, Ap, E, Y1, F, Y2, slice(r0, r1), slice(0, n), tg1, tg2, unit_g1, unit_g2)
            R *= inv_shift
            old = C[r0:r1]
            Cold2 += _sq(old)
            np.subtract(R, old, out=T)
            dC2 += _sq(T)
            old[...] = R

        # ---- E-update (Eq. 11) and Y1 (Eq. 14), row chunks --------------------------------------------------
        dE2 = Eold2 = r1_2 = Y1old2 = 0.0
        for r0 in range(0, n, _ROW_CHUNK):
            r1 = min(r0 + _ROW_CHUNK, n)
            m = r1 - r0
            a, c, y1, eold = Ap[r0:r1], C[r0:r1], Y1[r0:r1], E[r0:r1]
            amc, En, D = row_buf[0][:m], row_buf[1][:m], row_buf[2][:m]
            np.subtract(a, c, out=amc)
            if unit_g1:
                np.add(amc, y1, out=En)
            else:
                np.multiply(amc, tg1, out=En)
                En += y1
            En *= c_e
            lo, hi = lock_indptr[r0], lock_indptr[r1]
            if hi > lo:
                rows = np.repeat(np.arange(m), np.diff(lock_indptr[r0:r1 + 1]))
                En[rows, lock_indices[lo:hi]] = 0
            Eold2 += _sq(eold)
            np.subtract(En, eold, out=D)
            dE2 += _sq(D)
            eold[...] = En
            amc -= En                      # residual1 = A - C - E
            r1_2 += _sq(amc)
            Y1old2 += _sq(y1)
            if not unit_g1:
                amc *= tg1
            y1 += amc

        # ---- F-update (Eq. 13) and Y2 (Eq. 14), row chunks against the transposed P ---------------------------
        dF2 = Fold2 = r2_2 = Y2old2 = 0.0
        if unit_g2:
            np.add(C, Y2, out=P)
        else:
            np.multiply(Y2, inv_g2, out=P)
            P += C
        for r0 in range(0, n, _ROW_CHUNK):
            r1 = min(r0 + _ROW_CHUNK, n)
            m = r1 - r0
            Fn, D = row_buf[0][:m], row_buf[1][:m]
            np.add(P[r0:r1], P[:, r0:r1].T, out=Fn)
            Fn *= dtype.type(0.5)
            np.clip(Fn, 0, 1, out=Fn)
            fold, y2 = F[r0:r1], Y2[r0:r1]
            Fold2 += _sq(fold)
            np.subtract(Fn, fold, out=D)
            dF2 += _sq(D)
            fold[...] = Fn
            np.subtract(C[r0:r1], Fn, out=D)   # residual2 = C - F
            r2_2 += _sq(D)
            Y2old2 += _sq(y2)
            if not unit_g2:
                D *= tg2
            y2 += D

        worst = _worst_ratio([(dC2, Cold2), (dE2, Eold2), (dF2, Fold2), (r1_2, Y1old2), (r2_2, Y2old2)], squared)
        history.append({"ratio": worst, "primal_residual1": math.sqrt(r1_2), "primal_residual2": math.sqrt(r2_2)})
        if callback is not None:
            inv = pos
            callback(k, *(X[np.ix_(inv, inv)] for X in (C, E, F, Y1, Y2)))
        stop = (worst <= tol) if squared else (worst < tol)
        if stop:
            converged = True
            break

    del E, F, Y1, Y2, Ap, P, R_buf, T_buf, row_buf
    C = np.take(C, pos, axis=0)
    C = np.take(C, pos, axis=1)
    return C, _solve_info(k, converged, history, n_blocks=len(sizes),
                          largest_component=int(max(sizes)) if sizes else 1, n_isolated=int(n - single_start),
                          n_groups=int(sum(groups)), admm_on_groups=False,
                          gemm_cost_ratio=float(sum(costs) / n / n) if n else 0.0)


def _rhs_into(R, T, A, E, Y1, F, Y2, rows, cols, g1, g2, unit_g1, unit_g2):
    """Write ``g1 (A - E + Y1/g1) + g2 (F - Y2/g2)`` (Eq. 9) of one block into ``R`` (``T`` is scratch)."""
    np.subtract(A[rows, cols], E[rows, cols], out=R)
    if not unit_g1:
        R *= g1
    R += Y1[rows, cols]
    if unit_g2:
        R += F[rows, cols]
    else:
        np.multiply(F[rows, cols], g2, out=T)
        R += T
    R -= Y2[rows, cols]


def objective(C, E, H, lam: float) -> float:
    """tr(C^T Phi C) + (lambda/2) ||E||_F^2 (paper Eq. 5), with tr(C^T Phi C) = 1/2 sum_ij h_ij ||C_i - C_j||^2."""
    H = sparse.coo_matrix(H)
    C = np.asarray(C, dtype=np.float64)
    diff = C[H.row] - C[H.col]
    lap = 0.5 * float(np.sum(H.data * np.einsum("ij,ij->i", diff, diff)))
    return lap + 0.5 * lam * float(np.sum(np.asarray(E, dtype=np.float64) ** 2))


# ---------------------------------------------------------------------------------------------------------------
# The ADMM on twin groups
# ---------------------------------------------------------------------------------------------------------------
class _Grouped:
    """An n x n matrix constant on twin groups: ``off[a, b]`` for p in group a, q in group b, p != q, and
    ``diag[a]`` for p = q in group a. For a single-point group ``off[a, a]`` mirrors ``diag[a]`` (it weighs
    nothing in the norms and keeps every element-wise step consistent)."""

    __slots__ = ("off", "diag")

    def __init__(self, off, diag):
        self.off, self.diag = off, diag


def _structure(X: np.ndarray, group: np.ndarray, rep: np.ndarray, second: np.ndarray):
    """(off, diag) of a dense matrix X on the groups, or None when X is not constant on them."""
    off = X[np.ix_(rep, rep)].copy()
    diag = X[rep, rep].copy()
    within = second >= 0
    off[within, within] = X[rep[within], second[within]]
    single = ~within
    off[single, single] = diag[single]
    expanded = off[np.ix_(group, group)]
    expanded[np.diag_indices_from(expanded)] = diag[group]
    return (off, diag) if np.array_equal(expanded, X) else None


class _TwinGrouping:
    """The twin groups of H in component order (:func:`twin_grouping`), shared by both ADMM paths."""

    __slots__ = ("first", "group", "g", "reps", "bounds", "deg", "between")

    def __init__(self, first, group, g, reps, bounds, deg, between):
        self.first, self.group, self.g, self.reps = first, group, g, reps
        self.bounds, self.deg, self.between = bounds, deg, between


def twin_grouping(H) -> _TwinGrouping:
    """Twin groups of H numbered component by component.

    ``group[p]`` is the group of point p (non-trivial components first, largest first, isolated points last;
    inside a component by the first point of each group), ``g`` the group sizes, ``reps`` the first point of
    every group, ``bounds`` the group numbers where each component starts (and k at the end), ``deg`` every
    group's degree in H, ``between = Agg^T H Agg`` (k x k sparse: H summed over group pairs) and ``first`` the
    :func:`twin_groups` array.
    """
    n = H.shape[0]
    first = twin_groups(H)
    n_comp, comp, _, _, comp_rank = _ranked_components(H)
    reps = np.flatnonzero(first == np.arange(n))
    reps = reps[np.lexsort((reps, comp_rank[comp[reps]]))]
    number = np.empty(n, dtype=np.int64)
    number[reps] = np.arange(len(reps))
    group = number[first]
    k = len(reps)
    g = np.bincount(group, minlength=k).astype(np.float64)
    deg = np.asarray(H.sum(axis=1)).ravel()[reps]
    agg = sparse.csr_matrix((np.ones(n), (np.arange(n), group)), shape=(n, k))
    between = sparse.csr_matrix(agg.T @ H @ agg)
    bounds = np.flatnonzero(np.diff(comp_rank[comp[reps]], prepend=-1, append=n_comp + 1))
    return _TwinGrouping(first, group, g, reps, bounds, deg, between)


def group_inverses(grouping: _TwinGrouping, gamma1: float, gamma2: float, laplacian: bool = True):
    """The inverse of ``S = Agg^T M Agg`` per component, ``M = 2 Phi + (gamma1 + gamma2) I``.

    Returns ``(blocks, lam)``: ``blocks`` a list of ``(start, stop, S_inv)`` over the group numbers (float64),
    and ``lam[a] = 2 d_a + 2 + gamma1 + gamma2`` (``gamma1 + gamma2`` without the Laplacian), the eigenvalue of
    M on the zero-sum vectors of group a.
    """
    shift = gamma1 + gamma2
    g = grouping.g
    deg = grouping.deg if laplacian else np.zeros(len(g))
    lam = 2.0 * deg + 2.0 + shift if laplacian else np.full(len(g), shift)
    blocks = []
    for s, e in zip(grouping.bounds[:-1], grouping.bounds[1:], strict=True):
        S = sparse.diags(g[s:e] * (2.0 * deg[s:e] + shift), format="csr")
        if laplacian:
            S = (S - 2.0 * grouping.between[s:e, s:e]).tocsr()
        blocks.append((int(s), int(e), SpdInverse(S) if e - s > 1 else 1.0 / S.toarray()))
    return blocks, lam


def _solve_grouped(A, grouping: _TwinGrouping, lam: float, *, gamma1, gamma2, tol, max_iter, stopping,
                   lock_diagonal, laplacian, completion, dtype, callback):
    """The ADMM of :func:`solve` on the twin groups of H (``grouping``: :func:`twin_grouping`; the other
    arguments and the return as :func:`solve`), or None when A is not constant on them.

    Twins (identical rows of H + I) have identical label rows, so A (LWCA, CA or PTS) is constant on them in a
    complete ensemble, and then every iterate is (:class:`_Grouped`): the E-update and the lock set (H > 0 is
    constant on group pairs; twins are locked to each other, the diagonal only with lock_diagonal), the clipped
    symmetrisation of the F-update, the multipliers, and the C-update (a column of R is group-constant plus a
    spike on the diagonal; M^-1 maps the first through S^-1 and the spike as in :class:`InverseBlock`). The
    iteration then costs O(k^2) element-wise work and one k x k GEMM per component instead of O(n^2) and
    n_b x n_b, k = the number of groups; the stopping norms count every entry (g_a g_b between groups,
    g (g - 1) inside one, g on the diagonal). Same iterates up to rounding (tests: 1e-15 against the n x n path).
    """
    dtype = np.dtype(dtype)
    n = A.shape[0]
    g1, g2 = float(gamma1), float(gamma2)
    group, g = grouping.group, grouping.g
    k = len(g)
    # the smallest point of every group (grouping.reps) and the second smallest (-1 for a single point)
    rep = grouping.reps
    by_group = np.argsort(group, kind="stable")                   # points by group, by index inside one
    starts = np.concatenate([[0], np.cumsum(g[:-1])]).astype(np.int64)
    second = np.where(g > 1, by_group[np.minimum(starts + 1, n - 1)], -1)
    A = np.asarray(A)
    structured = _structure(A, group, rep, second)
    if structured is None:
        return None
    blocks, lam_g = group_inverses(grouping, g1, g2, laplacian)  # only now: no use on the fallback
    Aq, Ad = (x.astype(dtype) for x in structured)
    within = g > 1
    idx = np.arange(k)

    if completion:
        lock_off = grouping.between.toarray() > 0
        lock_off[np.diag_indices(k)] = np.where(within, True, lock_diagonal)
        lock_diag = np.full(k, lock_diagonal)
    else:
        lock_off = np.zeros((k, k), dtype=bool)
        lock_diag = np.zeros(k, dtype=bool)

    # State: the k x k "off" arrays and the k "diag" vectors of C, E, F, Y1, Y2 (see _Grouped), updated in place.
    # The element-wise steps run over row panels of about _PANEL entries, so that the dozen operations of a step
    # read and write a panel while it is in cache instead of streaming every k x k array through memory once per
    # operation (that streaming, not the GEMM, was most of an iteration at k ~ 1000-2000); each element sees the
    # same operations in the same order as the whole-array form, so the iterates are the same to the bit.
    Coff, Cprev, Eoff, Foff, Y2off = (np.zeros((k, k), dtype=dtype) for _ in range(5))
    Cdiag, Ediag, Fdiag, Y2diag = (np.zeros(k, dtype=dtype) for _ in range(4))
    Y1off, Y1diag = Aq.copy(), Ad.copy()
    T = np.empty((k, k), dtype=dtype)          # diag(g) R_off + diag(delta), then P = C + Y2 / g2
    Roff_within = np.empty(k, dtype=dtype)
    rows = max(1, _PANEL // max(k, 1))
    panels = [(r, min(r + rows, k)) for r in range(0, k, rows)]
    # the locked entries of each panel as flat indices (a scatter of zeros costs a fraction of a masked copy)
    locked = [np.flatnonzero(lock_off[r0:r1]) for r0, r1 in panels]
    width = rows * k
    buf1, buf2 = np.empty(width, dtype=dtype), np.empty(width, dtype=dtype)
    blocks_dt = [(s, e, inv.astype(dtype) if e - s > 1 else np.asarray(inv, dtype=dtype)) for s, e, inv in blocks]
    gd = g.astype(dtype)
    corr = (1.0 / (g * lam_g)).astype(dtype)
    inv_lam = (1.0 / lam_g).astype(dtype)
    tg1, tg2 = dtype.type(g1), dtype.type(g2)
    half = dtype.type(0.5)
    c_e = dtype.type(1.0 / (lam + g1))
    squared = stopping == "paper"
    sums = np.empty((10, k))                  # per-row weighted sums of squares of the ten stopping norms
    sq_buf = np.empty(width)

    def rowsq(X, out):
        squares = sq_buf[:X.size].reshape(X.shape)
        if X.dtype == np.float64:
            np.multiply(X, X, out=squares)
        else:  # exact float64 squares of float32 entries: a widening copy, then a plain square in place - the same
            np.copyto(squares, X)  # values as a casting multiply (a float32 square fits a float64 mantissa), at
            squares *= squares     # half its cost (the casting loop was 30 % of a solve on LS)
        np.dot(squares, g, out=out)

    def norm2(i, off_diagonal, diag):
        # The squared Frobenius norm of the n x n matrix: every entry counted, g_a g_b between groups, g (g - 1)
        # inside one, g on the diagonal. The weight g g^T is rank one, so the per-row sums of squares weighted
        # by g (rowsq: float64 squares of a panel and one matrix-vector product), minus the g_a X_aa^2 the inside
        # entries count once too often, plus the diagonal.
        within_values = off_diagonal.astype(np.float64)
        diag = diag.astype(np.float64)
        return float(g @ sums[i] - g @ (within_values * within_values) + g @ (diag * diag))

    history = []
    converged = False
    kk = 0
    for kk in range(1, max_iter + 1):
        # C-update (Eq. 9): C = M^-1 R, R = g1 (A - E) + Y1 + g2 F - Y2; on the groups (see InverseBlock):
        # C_off = S^-1 (diag(g) R_off + diag(delta)) - diag(delta / (g l)), C_diag = diag(C_off) + delta / l,
        # delta = R_diag - diag(R_off) (0 on single points, whose off-diagonal mirrors the diagonal)
        Rdiag = (Ad - Ediag) * tg1 + Y1diag + Fdiag * tg2 - Y2diag
        for r0, r1 in panels:
            R, W = T[r0:r1], buf1[:(r1 - r0) * k].reshape(r1 - r0, k)
            np.subtract(Aq[r0:r1], Eoff[r0:r1], out=R)
            R *= tg1
            R += Y1off[r0:r1]
            np.multiply(Foff[r0:r1], tg2, out=W)
            R += W
            R -= Y2off[r0:r1]
            Roff_within[r0:r1] = R[idx[:r1 - r0], idx[r0:r1]]
            R *= gd[r0:r1, None]
        delta = Rdiag - Roff_within
        T[idx, idx] += delta
        Cprev, Coff = Coff, Cprev
        Cprev_diag, Eprev_diag, Y1prev_diag = Cdiag, Ediag.copy(), Y1diag.copy()
        Cprev_within, Eprev_within, Y1prev_within = Cprev[idx, idx], Eoff[idx, idx], Y1off[idx, idx]
        for s, e, inv in blocks_dt:
            if e - s > 1:
                inv.apply(T[s:e], out=Coff[s:e])
            else:
                np.multiply(inv, T[s:e], out=Coff[s:e])
        Coff[idx, idx] -= delta * corr
        Cdiag = Coff[idx, idx] + delta * inv_lam
        # E-update (Eq. 11), Y1 (Eq. 14) and P = C + Y2 / g2 for the F-update, panel by panel
        amc_diag = Ad - Cdiag
        Ediag_new = (amc_diag * tg1 + Y1diag) * c_e
        Ediag_new[lock_diag] = 0
        res1_diag = amc_diag - Ediag_new
        for p, (r0, r1) in enumerate(panels):
            m = r1 - r0
            amc, W = buf1[:m * k].reshape(m, k), buf2[:m * k].reshape(m, k)
            np.subtract(Coff[r0:r1], Cprev[r0:r1], out=W)
            rowsq(W, sums[0, r0:r1])                              # ||C - C_prev||
            rowsq(Cprev[r0:r1], sums[1, r0:r1])                   # ||C_prev||
            np.subtract(Aq[r0:r1], Coff[r0:r1], out=amc)           # A - C
            np.multiply(amc, tg1, out=W)
            W += Y1off[r0:r1]
            W *= c_e                                              # E_new
            W.ravel()[locked[p]] = 0
            E = Eoff[r0:r1]
            rowsq(E, sums[3, r0:r1])                              # ||E_prev||
            np.subtract(W, E, out=E)
            rowsq(E, sums[2, r0:r1])                              # ||E - E_prev||
            E[...] = W
            amc -= E                                               # A - C - E
            rowsq(amc, sums[4, r0:r1])                             # ||A - C - E||
            Y1 = Y1off[r0:r1]
            rowsq(Y1, sums[5, r0:r1])                             # ||Y1_prev||
            amc *= tg1
            Y1 += amc
            P = T[r0:r1]
            np.divide(Y2off[r0:r1], tg2, out=P)
            P += Coff[r0:r1]
        Pdiag = Cdiag + Y2diag / tg2
        dC2 = norm2(0, Coff[idx, idx] - Cprev_within, Cdiag - Cprev_diag)
        Cold2 = norm2(1, Cprev_within, Cprev_diag)
        dE2 = norm2(2, Eoff[idx, idx] - Eprev_within, Ediag_new - Eprev_diag)
        Eold2 = norm2(3, Eprev_within, Eprev_diag)
        r1_2 = norm2(4, Aq[idx, idx] - Coff[idx, idx] - Eoff[idx, idx], res1_diag)
        Y1old2 = norm2(5, Y1prev_within, Y1prev_diag)
        Ediag = Ediag_new
        Y1diag = Y1diag + res1_diag * tg1
        # F-update (Eq. 13) and Y2 (Eq. 14): F = clip((P + P^T) / 2, 0, 1), panel by panel
        Fprev_within, Fprev_diag, Y2prev_within, Y2prev_diag = Foff[idx, idx], Fdiag, Y2off[idx, idx], Y2diag
        Fdiag = np.clip(Pdiag, 0, 1)
        res2_diag = Cdiag - Fdiag
        for r0, r1 in panels:
            m = r1 - r0
            W = buf2[:m * k].reshape(m, k)
            np.add(T[r0:r1], T[:, r0:r1].T, out=W)
            W *= half
            np.clip(W, 0, 1, out=W)                               # F_new
            F = Foff[r0:r1]
            rowsq(F, sums[7, r0:r1])                              # ||F_prev||
            np.subtract(W, F, out=F)
            rowsq(F, sums[6, r0:r1])                              # ||F - F_prev||
            F[...] = W
            np.subtract(Coff[r0:r1], F, out=W)                    # C - F
            rowsq(W, sums[8, r0:r1])                              # ||C - F||
            Y2 = Y2off[r0:r1]
            rowsq(Y2, sums[9, r0:r1])                             # ||Y2_prev||
            W *= tg2
            Y2 += W
        dF2 = norm2(6, Foff[idx, idx] - Fprev_within, Fdiag - Fprev_diag)
        Fold2 = norm2(7, Fprev_within, Fprev_diag)
        r2_2 = norm2(8, Coff[idx, idx] - Foff[idx, idx], res2_diag)
        Y2old2 = norm2(9, Y2prev_within, Y2prev_diag)
        Y2diag = Y2diag + res2_diag * tg2

        worst = _worst_ratio([(dC2, Cold2), (dE2, Eold2), (dF2, Fold2), (r1_2, Y1old2), (r2_2, Y2old2)], squared)
        history.append({"ratio": worst, "primal_residual1": math.sqrt(r1_2), "primal_residual2": math.sqrt(r2_2)})
        if callback is not None:
            callback(kk, *(_expand(_Grouped(off, diag), group) for off, diag in
                           ((Coff, Cdiag), (Eoff, Ediag), (Foff, Fdiag), (Y1off, Y1diag), (Y2off, Y2diag))))
        if (worst <= tol) if squared else (worst < tol):
            converged = True
            break
    C = _Grouped(Coff, Cdiag)

    sizes = [int(g[s:e].sum()) for s, e, _ in blocks if e - s > 1 or g[s] > 1]
    return _expand(C, group), _solve_info(kk, converged, history, n_blocks=len(sizes),
                                          largest_component=max(sizes) if sizes else 1, n_groups=k,
                                          admm_on_groups=True,
                                          gemm_cost_ratio=float(sum(inv.cost if e - s > 1 else 1.0
                                                                    for s, e, inv in blocks) / n / n)
                                          if n else 0.0)


def _expand(X: _Grouped, group: np.ndarray) -> np.ndarray:
    """The n x n matrix of a group-structured one."""
    out = X.off[np.ix_(group, group)]
    out[np.diag_indices_from(out)] = X.diag[group]
    return out

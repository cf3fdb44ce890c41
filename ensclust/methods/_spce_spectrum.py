"""The few smallest eigenpairs of SPCE's Laplacian L = D - S, obtained from its connected components.

Theorem 1 of the SPCE paper: for S >= 0 the multiplicity of the eigenvalue 0 of L equals the number k of
connected components of the graph S != 0, and L is block diagonal over the components. So instead of the
authors' dense eigendecomposition of the whole n x n matrix (O(n^3), [CODE] ``eig1(L, c, 0)``):

* the null space is spanned by the normalised component indicators (eigenvalue exactly 0, no tolerance), and
* the remaining eigenpairs needed for Y (eq. 18) and for the rank test are the smallest *nonzero*
  eigenpairs of the component blocks: dense ``eigh`` for small blocks, LOBPCG (warm-started from the
  previous Y, deflated against the constant vector) for large ones.

Only ``||y_p - y_q||^2`` enters the S-update (eq. 16), and it depends only on the projector Y Y^T, so Y is
kept in a structured form (:class:`Embedding`): indicator part + a few extra eigenvectors.

Groups of points (microclusters). SPCE runs on the microclusters of the ensemble (points with identical label
rows), where S is constant on the blocks of the n x n matrix (``sizes`` = points per row of S; the pairs inside
a group are Omega-ones, S = 1). The point Laplacian then splits exactly into

* block-constant eigenvectors y = z / sqrt(sizes) per group, z an eigenvector of the symmetric group matrix
  Ls = diag(d) - N^1/2 S N^1/2 (N = diag(sizes), d = S sizes: the degrees without the group's own pairs), and
* within-group eigenvectors (zero-sum inside one group u, zero elsewhere), eigenvalue sizes_u + d_u (the point
  degree plus one) with multiplicity sizes_u - 1, known without a solver.

Both kinds compete for the c smallest. A within-group eigenvector x adds x_p^2 to the distances of the pairs
of point p, and summed over t chosen vectors of group u this is the diagonal of a rank-t projector inside the
group, whose average over the group is t / sizes_u: ``Embedding.within`` holds that per group (exact when all
sizes_u - 1 vectors are chosen; a partly chosen degenerate eigenspace has no basis-independent diagonal, and a
point-level solver picks one arbitrarily, so the group keeps the average).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator, lobpcg

from ensclust.errors import UserError


@dataclass
class Embedding:
    """Y (n x c, Y^T Y = I) stored as indicator part + extra eigenvectors.

    y_p = [indicator of comp_p] / sqrt(size)   (only for the chosen components; ``weight_p`` = 1/size or 0)
          + extra[p, :]                         (eigenvectors of nonzero eigenvalues, orthogonal to the first)

    With rows standing for groups of points, ``within`` (per row, or None) is what the chosen within-group
    eigenvectors add to ||y_p - y_q||^2 for a point of that group (module docstring).
    """

    comp: np.ndarray
    weight: np.ndarray
    extra: np.ndarray
    within: np.ndarray | None = None

    def sqdist(self, rows: np.ndarray, cols: np.ndarray, block_entries: int = 8_000_000) -> np.ndarray:
        """||y_p - y_q||^2 for the pairs (rows[t], cols[t]); ``rows`` must be non-decreasing.

        Element-wise: the distance of a pair does not depend on which other pairs are asked for (the Gram
        products are always the same row blocks of the same n x n product), so the distances of a subset
        equal the corresponding entries of the distances of all pairs, bit for bit. Up to 4 extra columns
        the differences are summed column by column, above that through Gram blocks; the two formulas
        round differently, and the results of the method depend on that choice.
        """
        w = self.weight
        # indicator part: 0 inside a component, w_p + w_q across components (w = 1/size or 0)
        out = w[rows]
        out += w[cols]
        out[self.comp[rows] == self.comp[cols]] = 0.0
        if self.within is not None:
            out += self.within[rows]
            out += self.within[cols]
        V = self.extra
        r = V.shape[1]
        if r == 0 or rows.shape[0] == 0:
            return np.maximum(out, 0.0, out=out)
        if r <= 4:
            for j in range(r):
                d = V[rows, j] - V[cols, j]
                out += d * d
            return np.maximum(out, 0.0, out=out)
        # Gram trick by row blocks: ||a-b||^2 = |a|^2 + |b|^2 - 2 a.b with a.b from one BLAS product per block.
        n = V.shape[0]
        sq = np.einsum("ij,ij->i", V, V)
        out += sq[rows] + sq[cols]
        step = max(1, block_entries // max(n, 1))
        bounds = np.searchsorted(rows, np.arange(0, n + step, step))
        VT = np.ascontiguousarray(V.T)
        for b, start in enumerate(range(0, n, step)):
            lo, hi = bounds[b], bounds[b + 1]
            if lo == hi:
                continue
            block = V[start:start + step]
            K = block @ VT
            # K[rows - start, cols] through flat positions of the raveled block
            flat = (rows[lo:hi] - start).astype(np.int64)
            flat *= n
            flat += cols[lo:hi]
            out[lo:hi] -= 2.0 * np.take(K.reshape(-1), flat)
        return np.maximum(out, 0.0, out=out)


class Spectrum:
    """Result of :func:`smallest_eigenpairs`.

    Attributes: ``embedding`` (Y, an :class:`Embedding`), ``n_components``, ``values`` (the c+1 smallest
    eigenvalues, None when not computed), ``labels`` (connected-component labels of S != 0), ``trace``
    (tr(Y^T L Y) = sum of the eigenvalues of the columns of Y), ``lobpcg_calls`` (iterative solves behind
    this spectrum), ``lobpcg_not_converged`` (of which stopped above the tolerance) and ``within_partial``
    (groups whose degenerate within-group eigenspace is only partly among the chosen eigenvectors: their
    distances are the group average, see the module docstring).
    """

    def __init__(self, embedding: Embedding, n_components: int, values: np.ndarray | None, labels: np.ndarray,
                 trace: float = 0.0, lobpcg_calls: int = 0, lobpcg_not_converged: int = 0, within_partial: int = 0):
        self.embedding = embedding
        self.n_components = n_components
        self.values = values
        self.labels = labels
        self.trace = trace
        self.lobpcg_calls = lobpcg_calls
        self.lobpcg_not_converged = lobpcg_not_converged
        self.within_partial = within_partial


def _indicator_embedding(comp: np.ndarray, sizes: np.ndarray, c: int, n: int) -> Embedding:
    """Indicators of (at most) c components; with more than c components, the c largest (ties: first)."""
    k = sizes.shape[0]
    if k > c:
        order = np.lexsort((np.arange(k), -sizes))
        chosen = np.zeros(k, dtype=bool)
        chosen[order[:c]] = True
    else:
        chosen = np.ones(k, dtype=bool)
    per_comp = np.where(chosen, 1.0 / sizes, 0.0)
    return Embedding(comp=comp, weight=per_comp[comp], extra=np.zeros((n, 0)))


def _weighted_degrees(sub: sparse.csr_matrix, sizes: np.ndarray) -> np.ndarray:
    """d = S sizes: the degree of a point of each row's group, without the group's own pairs."""
    return np.asarray(sub @ sizes).ravel()


def _block_laplacian(S_sym: sparse.csr_matrix, idx: np.ndarray | None, sizes: np.ndarray | None = None):
    """Sparse Ls = diag(d) - N^1/2 S N^1/2 of a block (module docstring; N = I for points) and d."""
    sub = S_sym if idx is None else S_sym[idx][:, idx]
    sz = np.ones(sub.shape[0]) if sizes is None else sizes
    deg = _weighted_degrees(sub, sz)
    sq = sparse.diags(np.sqrt(sz))
    return sparse.diags(deg) - sq @ sub @ sq, deg


def _dense_laplacian(sub: sparse.csr_matrix, deg: np.ndarray | None = None,
                     sq: np.ndarray | None = None) -> np.ndarray:
    """Dense Ls = diag(d) - N^1/2 S N^1/2 of a block (``sq`` = sqrt(sizes), None for points), bit-for-bit equal
    to densifying :func:`_block_laplacian` (S has no stored diagonal, so L_pp = d_p and L_pq = 0 - S_pq). It is
    0 - x, not -x: the zeros must stay +0.0, because the sign of a zero steers LAPACK's Householder reflectors
    and so the last bits of the eigenvectors. ``deg``: d when the caller has it."""
    if deg is None:
        deg = _weighted_degrees(sub, np.ones(sub.shape[0]) if sq is None else sq * sq)
    L = sub.toarray()
    if sq is not None:
        L *= sq[:, None]
        L *= sq[None, :]
    np.subtract(0.0, L, out=L)
    L[np.diag_indices(L.shape[0])] = deg
    return L


def _lowrank_laplacian(factor: sparse.csr_matrix, deg: np.ndarray, scale: float,
                       sizes: np.ndarray) -> LinearOperator:
    """Ls = diag(d) - N^1/2 S N^1/2 as an operator when S = scale (F F^T - diag(F F^T)), F a sparse 0/1
    indicator matrix.

    This is the co-association S_hat = B B^T / m (eq. 2) with its unit diagonal removed (the diagonal
    cancels in L): a product with a block of q vectors costs O(nnz(F) q) instead of O(nnz(S) q), and
    nnz(F) = n m while nnz(S_hat) can approach n^2.
    """
    factor_t = factor.T.tocsr()
    self_loops = np.asarray(factor.multiply(factor).sum(axis=1)).ravel()   # diag(F F^T) = labels per row
    shift = deg + scale * self_loops * sizes
    sq = np.sqrt(sizes)[:, None]

    def matmat(X):
        X = X.reshape(X.shape[0], -1)
        out = factor @ (factor_t @ (sq * X))
        out *= -scale
        out *= sq
        out += shift[:, None] * X
        return out

    s = factor.shape[0]
    return LinearOperator((s, s), matvec=matmat, matmat=matmat, dtype=np.float64)


#: Columns and iteration budget of the miss check after LOBPCG (see :func:`_component_eigenpairs`).
MISS_CHECK_COLUMNS = 4
MISS_CHECK_MAXITER = 20
MISS_CHECK_ROUNDS = 3
MISS_RESOLVE_GUARDS = 4
#: Up to this block size a detected miss is resolved by dense ``eigh`` (exact; ~3 s CPU at 2400, ~28 s at 5500).
MISS_DENSE_LIMIT = 6000


def _lobpcg_quiet(L, X0, precond, Y, tol, maxiter):
    """LOBPCG for the smallest eigenpairs, sorted; returns (values, vectors, warned)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vals, vecs = lobpcg(L, X0, M=precond, Y=Y, tol=tol, maxiter=maxiter, largest=False)
    order = np.argsort(vals, kind="stable")
    return vals[order], vecs[:, order], bool(caught)


def _below_returned(L, constant, vals, vecs, precond, rng_seed, tol):
    """Vectors orthogonal to the constant and to ``vecs`` whose Rayleigh quotients lie below the largest
    returned eigenvalue, or None.

    If ``vals`` were the q smallest nonzero eigenvalues, every vector orthogonal to the constant and to the
    returned eigenvectors would have a Rayleigh quotient >= the (q+1)-th eigenvalue >= max(vals). A few LOBPCG
    iterations from seeded random vectors on that complement (Rayleigh-Ritz values are upper bounds of its
    smallest eigenvalues) therefore certify a miss when one of them drops below max(vals) (relative margin
    1e-6). The check can only find misses, not prove their absence.
    """
    s = vecs.shape[0]
    G0 = np.random.default_rng(rng_seed + 7919).standard_normal((s, MISS_CHECK_COLUMNS))
    cvals, cvecs, _ = _lobpcg_quiet(L, G0, precond, np.hstack([constant, vecs]), tol, MISS_CHECK_MAXITER)
    top = float(vals[-1])
    below = cvals < top - 1e-6 * abs(top)
    return cvecs[:, below] if below.any() else None


def _component_eigenpairs(S_sym, idx, q, warm, rng_seed, dense_limit, tol, maxiter, factor=None,
                          check_missed=True, sizes=None):
    """The q smallest nonzero block-constant eigenpairs of the Laplacian of one connected component.

    ``sizes``: points per row of S (None: the rows are points); the solve is on the symmetric group matrix
    Ls and the returned vectors are point values z / sqrt(sizes) (module docstring). ``factor``: optional
    ``(F, scale)`` with S = scale (F F^T - diag(F F^T)) (the co-association of the initial S, eq. 2); the
    iterative solver then multiplies through the factor (:func:`_lowrank_laplacian`).
    Returns ``(values, vectors, solver)`` with solver None (dense ``eigh``), "lobpcg" (converged),
    "lobpcg-not-converged" (stopped above the tolerance; LOBPCG's warning is counted, not printed) or
    "lobpcg-miss-dense" (the check found a miss, dense ``eigh`` answered).

    LOBPCG from a warm start can converge to eigenpairs that are not the smallest: an eigenspace the start
    has no component in stays invisible (e.g. the vectors e_p - e_q of two rows with identical rows of S,
    against a start that is equal on p and q; the preconditioner keeps that symmetry). ``check_missed``:
    after the solve, :func:`_below_returned` looks for such eigenpairs; only when it finds one the block is
    solved by dense ``eigh`` (blocks up to ``MISS_DENSE_LIMIT``; the same answer as for a block below
    dense_limit) or, above that, re-solved with guard columns (the found vectors, then seeded random ones:
    max(4, ceil(q/2)) guards; the q smallest kept), at most ``MISS_CHECK_ROUNDS`` times. LOBPCG re-solves can
    break down on exactly invariant vectors (e_p - e_q) and leave part of a large degenerate eigenspace out,
    hence the dense fallback. Where the check finds nothing the result is the plain solve's, bit for bit.
    """
    sub = S_sym if idx is None else S_sym[idx][:, idx]
    s = sub.shape[0]
    sz = np.ones(s) if sizes is None else (sizes if idx is None else sizes[idx])
    sq = np.sqrt(sz)
    deg = _weighted_degrees(sub, sz)
    # LOBPCG needs s - (constraints) >= 5 (columns) for the solve, the miss check and a guard re-solve
    if s <= dense_limit or s <= 5 * (2 * q + MISS_CHECK_COLUMNS):
        L = _dense_laplacian(sub, deg, sq)
        vals, vecs = scipy.linalg.eigh(L, subset_by_index=[1, q], overwrite_a=True, check_finite=False)
        return vals, vecs / sq[:, None], None
    constant = (sq / np.linalg.norm(sq))[:, None]
    X0 = np.zeros((s, q))
    have = 0
    if warm is not None and warm.shape[1]:
        W0 = warm * sq[:, None]
        W0 -= constant @ (constant.T @ W0)
        norms = np.linalg.norm(W0, axis=0)
        W0 = W0[:, norms > 1e-8][:, :q]
        have = W0.shape[1]
        X0[:, :have] = W0
    if have < q:
        X0[:, have:] = np.random.default_rng(rng_seed).standard_normal((s, q - have))
    X0, _ = np.linalg.qr(X0)
    precond = sparse.diags(1.0 / np.maximum(deg, 1e-12))
    if factor is None:
        Dq = sparse.diags(sq)
        L = sparse.diags(deg) - Dq @ sub @ Dq
    else:
        F, scale = factor
        L = _lowrank_laplacian(F if idx is None else F[idx], deg, scale, sz)
    vals, vecs, warned = _lobpcg_quiet(L, X0, precond, constant, tol, maxiter)
    if check_missed:
        for _ in range(MISS_CHECK_ROUNDS):
            found = _below_returned(L, constant, vals, vecs, precond, rng_seed, tol)
            if found is None:
                break
            if s <= MISS_DENSE_LIMIT:  # a miss: the dense path's answer (as for blocks <= dense_limit)
                L = _dense_laplacian(sub, deg, sq)
                vals, vecs = scipy.linalg.eigh(L, subset_by_index=[1, q], overwrite_a=True, check_finite=False)
                return vals, vecs / sq[:, None], "lobpcg-miss-dense"
            guards = max(MISS_RESOLVE_GUARDS, (q + 1) // 2, found.shape[1])
            extra = np.random.default_rng(rng_seed + 104729).standard_normal((s, guards - found.shape[1]))
            X1, _ = np.linalg.qr(np.hstack([vecs, found, extra]))
            vals, vecs, warned = _lobpcg_quiet(L, X1, precond, constant, tol, maxiter)
            vals, vecs = vals[:q], vecs[:, :q]
    return vals, vecs / sq[:, None], "lobpcg-not-converged" if warned else "lobpcg"


def indicator_spectrum(comp: np.ndarray, k: int, c: int, rank_test: str = "eigen",
                       sizes: np.ndarray | None = None) -> Spectrum:
    """The spectrum when S != 0 has k > c components: the c + 1 smallest eigenvalues are all 0 and Y is
    made of component indicators (no eigensolver needed). ``sizes``: points per row (None: 1)."""
    values = np.zeros(c + 1) if rank_test == "eigen" else None
    return Spectrum(_indicator_embedding(comp, _component_sizes(comp, k, sizes), c, comp.shape[0]), int(k),
                    values, comp)


def _component_sizes(comp: np.ndarray, k: int, sizes: np.ndarray | None) -> np.ndarray:
    """Points in each component (rows weighted by ``sizes``)."""
    return np.bincount(comp, minlength=k) if sizes is None else np.bincount(comp, weights=sizes, minlength=k)


def _within_group_candidates(deg: np.ndarray, sizes: np.ndarray | None, comp: np.ndarray, limit: int) -> list:
    """The ``limit`` smallest within-group eigenvalues as candidates ``(value, component, 1, group)``, one per
    multiplicity: sizes_u + d_u, sizes_u - 1 times, for every group of two points or more (module docstring)."""
    if sizes is None or limit <= 0:
        return []
    groups = np.flatnonzero(sizes >= 2)
    values = sizes[groups] + deg[groups]
    out = []
    for i in np.lexsort((groups, values)):
        u = int(groups[i])
        out.extend([(float(values[i]), int(comp[u]), 1, u)] * min(int(sizes[u]) - 1, limit - len(out)))
        if len(out) >= limit:
            break
    return out


def _chosen_within(chosen: list, sizes: np.ndarray | None, n: int) -> tuple[np.ndarray | None, int]:
    """Embedding.within from the chosen candidates (t_u / sizes_u for the t_u within-group vectors of u) and
    the number of groups with 0 < t_u < sizes_u - 1 (a partly chosen eigenspace)."""
    groups = [item[3] for item in chosen if item[2] == 1]
    if not groups:
        return None, 0
    counts = np.bincount(groups, minlength=n)
    return counts / sizes, int(np.sum((counts > 0) & (counts < sizes - 1)))


def smallest_eigenpairs(S_upper: sparse.csr_matrix, c: int, *, rank_test: str = "eigen", previous=None,
                        dense_limit: int = 2000, tol: float = 1e-8, maxiter: int = 300,
                        dense_test_limit: int = 6000, components=None, factor=None, sizes=None) -> Spectrum:
    """Y = the c smallest eigenvectors of L = D - S (eq. 18) and the c+1 smallest eigenvalues.

    Parameters
    ----------
    S_upper : n x n CSR holding the nonzero off-diagonal S_pq for p < q (S is symmetric; the diagonal
        cancels in L).
    c : number of clusters.
    rank_test : "eigen" computes the c+1 smallest eigenvalues (for the [CODE] tolerance test),
        "components" only the eigenvectors that Y needs, "dense" a dense ``eigh`` of the whole L
        (the authors' computation, for validation on small n).
    previous : the previous :class:`Embedding` (warm start for LOBPCG).
    components : optional ``(k, comp)``, the connected components of S_upper when the caller has them.
    factor : optional ``(F, scale)`` with S = scale (F F^T - diag(F F^T)): LOBPCG multiplies through the
        factor (see :func:`_component_eigenpairs`).
    sizes : optional float (n,), the points each row stands for (microclusters: the pairs inside a group
        are S = 1; module docstring); None: the rows are points.
    """
    n = S_upper.shape[0]
    if components is None:
        k, comp = connected_components(S_upper, directed=False)
    else:
        k, comp = components
    comp = comp.astype(np.int32)
    comp_sizes = _component_sizes(comp, k, sizes)
    if rank_test == "dense":
        S_sym = (S_upper + S_upper.T).tocsr()
        if n > dense_test_limit:
            raise UserError(f"spce: rank_test=dense needs a dense n x n eigendecomposition; n={n} is over "
                            f"{dense_test_limit}, use rank_test=eigen")
        L, deg = _block_laplacian(S_sym, None, sizes)
        vals, vecs = scipy.linalg.eigh(L.toarray(), subset_by_index=[0, min(c, n - 1)])
        if sizes is not None:
            vecs /= np.sqrt(sizes)[:, None]
        candidates = [(float(vals[t]), 0, 0, vecs[:, t]) for t in range(len(vals))]
        candidates += _within_group_candidates(deg, sizes, np.zeros(n, dtype=np.int32), c + 1)
        candidates.sort(key=lambda item: (item[0], item[2]))
        chosen = candidates[:c]
        extra = np.column_stack([item[3] for item in chosen if item[2] == 0] or [np.zeros(n)])
        within, partial = _chosen_within(chosen, sizes, n)
        emb = Embedding(comp=np.arange(n), weight=np.zeros(n), extra=extra, within=within)
        values = np.array([item[0] for item in candidates[:c + 1]])
        return Spectrum(emb, int(k), values, comp, float(np.sum(values[:c])), within_partial=partial)

    if k > c:
        return indicator_spectrum(comp, k, c, rank_test, sizes)
    n_vectors = c - k
    n_values = n_vectors + 1 if rank_test == "eigen" else n_vectors
    emb = _indicator_embedding(comp, comp_sizes, c, n)
    if n_values == 0:
        return Spectrum(emb, int(k), None, comp)
    S_sym = (S_upper + S_upper.T).tocsr()
    rows = np.bincount(comp, minlength=k)
    candidates = []  # (value, component, kind, local vector or group): kind 0 block-constant, 1 within-group
    warm = previous.extra if previous is not None and previous.extra.shape[1] else None
    order = np.argsort(comp, kind="stable")
    starts = np.concatenate([[0], np.cumsum(rows)])
    solvers = []
    for j in range(k):
        q = min(n_values, int(rows[j]) - 1)
        if q <= 0:
            continue
        idx = None if k == 1 else order[starts[j]:starts[j + 1]]
        local_warm = None
        if warm is not None:
            local_warm = warm if idx is None else warm[idx]
        vals, vecs, solver = _component_eigenpairs(S_sym, idx, q, local_warm, 1000 + j, dense_limit, tol, maxiter,
                                                   factor=factor, sizes=sizes)
        solvers.append(solver)
        for t in range(len(vals)):
            candidates.append((float(vals[t]), j, 0, vecs[:, t]))
    if sizes is not None:
        candidates += _within_group_candidates(_weighted_degrees(S_sym, sizes), sizes, comp, n_values)
    candidates.sort(key=lambda item: item[:3])
    chosen = candidates[:n_vectors]
    extra = np.zeros((n, n_vectors))
    for t, (_, j, _, vec) in enumerate(item for item in chosen if item[2] == 0):
        if k == 1:
            extra[:, t] = vec
        else:
            extra[order[starts[j]:starts[j + 1]], t] = vec
    emb.extra = extra
    emb.within, partial = _chosen_within(chosen, sizes, n)
    values = None
    if rank_test == "eigen":
        nonzero = [item[0] for item in candidates[:n_values]]
        values = np.concatenate([np.zeros(k), nonzero, np.full(max(0, c + 1 - k - len(nonzero)), np.inf)])
        values = values[:c + 1]
    trace = float(sum(item[0] for item in chosen))
    return Spectrum(emb, int(k), values, comp, trace,
                    lobpcg_calls=sum(s is not None for s in solvers),
                    lobpcg_not_converged=solvers.count("lobpcg-not-converged"), within_partial=partial)

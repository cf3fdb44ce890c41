"""Probability trajectory similarity (PTS): elite-neighbour graph, random walk, trajectory cosine.

Huang, Lai & Wang, "Robust ensemble clustering using probability trajectories", IEEE TKDE 28(5) 2016,
Sections 4.2-4.3 (Defs. 5-9, Eqs. 4-9); authors' code ``computePTS_fast_v3.m``
(specs/baselines/huang_family.md 2.3). Used by PTA-AL/CL/SL, PTGP and EC-CMS Table VII.

Steps (on the microclusters, see :mod:`ensclust.core.microclusters`):

1. ``S`` = MCA with a zero diagonal; every row keeps its entries >= its K-th largest value (ties at the
   threshold are all kept, as in the code), then ``S = max(S, S^T)`` (a link survives if either end keeps it).
2. ``S_ij *= size_j`` (the walk moves to a microcluster in proportion to its number of objects);
   ``P`` = row-normalised ``S`` (isolated rows stay 0).
3. ``IP = sum_{t=1..T} P^t (P^t)^T`` and ``PTS_ij = IP_ij / sqrt(IP_ii IP_jj)``; isolated microclusters get
   1e-20 in their rows and columns.

Speed: the authors accumulate ``P^t (P^t)^T`` with dense P^t, i.e. T dense Gram products, O(T n^3). Here
``G_t = P G_{t-1} P^T`` (G_t = P^t (P^t)^T is symmetric: one sparse-times-dense product and half of a second
per step) for the first s steps, and the steps after s in closed form on the r slowest eigenvectors of the
symmetrised walk (the walk is reversible), dropping only the fast modes of the late steps, which are below
the working precision (:func:`trajectory_inner_products`, Notes). With the paper's K = T rule on the USPS
pool (n_micro = 6719, T = 40, float32) s = 5 and r = 246. In float64 the result differs from the
step-by-step sums by 2e-14 relative (ISOLET pool, T = 27); tested against the explicit form.
Dense graphs (ECPCS's cluster graph, the elite graph of few microclusters) take every step in closed form
(:func:`reversible_trajectory_sum`: one symmetric eigendecomposition and three n^3 products).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import get_blas_funcs
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from ensclust.core.dense import symmetrize_inplace
from ensclust.core.microclusters import Microclusters, compute_microclusters, microcluster_coassociation

#: value the authors' code writes into the rows/columns of isolated microclusters
ISOLATED_SIMILARITY = 1e-20
#: ``dtype="auto"`` runs the random walk in float32 above this many microclusters (2x faster, half the
#: memory; PTS relative error ~1e-6; PTA-AL/CL labels identical to float64 on all 30 EC-CMS-protocol runs
#: checked on Ecoli, UMIST, SPF, Caltech20 and ISOLET)
AUTO_FLOAT32_ABOVE = 2500
#: plain walks cheaper than this many flops (~4 s of sparse products here) keep every step exact
SPECTRAL_TAIL_MIN_FLOP = 2e10


def default_k_t(n_micro: int, rule: str = "code") -> tuple[int, int]:
    """Default number of elite neighbours K and walk length T.

    ``rule="paper"``: K = T = floor(sqrt(n_micro) / 2) (TKDE 2016, Section 6.1).
    ``rule="code"``: the same, capped at 20 (authors' ``demo_PTA_PTGP.m``; also EC-CMS's demo).
    """
    base = int(np.floor(np.sqrt(n_micro) / 2))
    if rule == "paper":
        return base, base
    if rule == "code":
        return min(20, base), min(20, base)
    raise ValueError(f"rule must be 'code' or 'paper', got {rule!r}")


def elite_neighbor_graph(similarity: np.ndarray, n_neighbors: int, *, block: int = 1024) -> sparse.csr_matrix:
    """Symmetric sparse K-elite-neighbour graph of a dense similarity matrix (Def. 5, code rule).

    Row i keeps the entries >= its K-th largest off-diagonal value (sorted ascending together with the zero
    diagonal at position n - K + 1, clipped to [1, n], as ``computePTS_fast_v3.m`` does - so K = 0 keeps only
    the row maxima and ties at the threshold are all kept). Then ``max(S, S^T)``.
    """
    S = np.asarray(similarity)
    n = S.shape[0]
    pos = min(max(n - int(n_neighbors) + 1, 1), n) - 1  # 0-based index into the ascending row
    rows, cols, vals = [], [], []
    for start in range(0, n, block):
        stop = min(start + block, n)
        slab = np.array(S[start:stop], dtype=np.float64)
        slab[np.arange(stop - start), np.arange(start, stop)] = 0.0
        # the row's order statistic by a full sort, not np.partition: the MCA has a few discrete levels (multiples
        # of 1/m), on which numpy's introselect degrades (USPS pool, N = 6719, 21 levels: 0.62 s against 0.06 s
        # per 1024 rows); the same value either way, so the same graph
        thr = np.sort(slab, axis=1)[:, pos]
        keep = (slab >= thr[:, None]) & (slab != 0)
        r, c = np.nonzero(keep)
        rows.append(r + start)
        cols.append(c)
        vals.append(slab[r, c])
    G = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    return G.maximum(G.T).tocsr()


def transition_matrix(graph: sparse.spmatrix, sizes=None) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Row-stochastic random-walk matrix of a graph whose column j is weighted by ``sizes[j]`` (Def. 6).

    Returns ``(P, isolated)``; isolated rows (no links) are all zero in ``P``.
    """
    W = sparse.csr_matrix(graph, dtype=np.float64)
    if sizes is not None:
        W = (W @ sparse.diags(np.asarray(sizes, dtype=np.float64))).tocsr()
    row_sum = np.asarray(W.sum(axis=1)).ravel()
    isolated = row_sum == 0
    inv = np.zeros_like(row_sum)
    inv[~isolated] = 1.0 / row_sum[~isolated]
    P = (sparse.diags(inv) @ W).tocsr()
    P.eliminate_zeros()
    return P, isolated


def trajectory_inner_products(P: sparse.spmatrix, n_steps: int, dtype=np.float64, *,
                              stationary: np.ndarray | None = None) -> np.ndarray:
    """Dense ``sum_{t=1..T} P^t (P^t)^T`` (T <= 1 gives ``P P^T``, as the code's loop does).

    Parameters
    ----------
    P : (n, n) sparse (or dense) row-stochastic matrix (isolated rows all zero).
    n_steps : T.
    dtype : float64, or float32 (half memory and time of the dense products, relative error ~1e-6).
    stationary : (n,) array or None
        Weights ``pi`` under which the walk is reversible, ``pi_i P_ij = pi_j P_ji`` (for PTS,
        ``pi = (S z) * z``; :func:`pts_matrix` passes it; for ECPCS ``pi = d``, :func:`propagate_similarity`).
        With them a dense graph (``nnz(P) > 0.05 n^2``) is summed over all steps in closed form
        (:func:`reversible_trajectory_sum`, exact) and a sparse one has its late steps summed in closed form on
        its slow eigenvectors (see Notes); without them every step is a product.

    Notes
    -----
    Sparse graphs: steps ``t <= s`` use ``G_t = P G_{t-1} P^T`` (one and a half sparse-times-dense products each). With ``pi``,
    ``A = Pi^1/2 P Pi^-1/2`` is symmetric and ``P^t (P^t)^T = Pi^-1/2 A^t Pi A^t Pi^-1/2``. Split
    ``A = U L U^T + A_f`` on its r eigenpairs of largest modulus (``|lambda| <= lambda_c`` in ``A_f``,
    ``A_f U = 0``); then ``A^t Pi A^t`` = slow-slow ``U L^t M L^t U^T`` (``M = U^T Pi U``) + cross terms
    ``U L^t F_t^T + F_t L^t U^T`` (``F_t = A^t (I - U U^T) Pi U``, one r-column recursion) + fast-fast
    ``A_f^t Pi A_f^t``. For ``t > s`` the first two are summed exactly (rank 2r) and the last, whose 2-norm
    is at most ``max(pi) lambda_c^(2t)``, is dropped: ``s`` is the least step with
    ``lambda_c^(2(s+1)) / (1 - lambda_c^2) <= eps(dtype)``, so the dropped part is below the working
    precision's rounding unit on the scale of ``max(pi)``; ``s = T`` (no eigenpairs) when that saves no
    time. The sums are those of the PTS definition (Def. 9); only the late steps' fast modes are cut. The bound
    is on the A form; entrywise in the P form it carries max(pi) / sqrt(pi_i pi_j), so it is a design rule
    checked by measurement (tests; results/bench/pts_s7), not a proof of an entrywise error below eps.
    """
    n = P.shape[0]
    T = max(int(n_steps), 1)
    nnz = P.nnz if sparse.issparse(P) else np.count_nonzero(P)
    if stationary is not None and nnz > 0.05 * n ** 2:
        # dense graph (ECPCS's cluster graph, PTS on few microclusters): every step in closed form on the
        # eigenvectors of the symmetrised walk, one eigh and three n^3 products instead of T products
        IP = reversible_trajectory_sum(P, T, np.asarray(stationary, dtype=np.float64))
        return IP if IP.dtype == np.dtype(dtype) else IP.astype(dtype)
    P64 = sparse.csr_matrix(P, dtype=np.float64)
    P = P64.astype(dtype) if np.dtype(dtype) != np.float64 else P64
    tail = None
    n_exact = T
    if stationary is not None and _worth_spectral_tail(P, T):
        tail = _slow_mode_tail(P64, T, np.asarray(stationary, dtype=np.float64), np.finfo(dtype).eps)
        if tail is not None:
            n_exact = tail[0]
    G = (P @ P.T).toarray()
    IP = G.copy()
    for _ in range(n_exact - 1):
        G = _walk_step(P, G)
        IP += G
    del G
    if tail is not None:
        # IP += X Y^T with X = [U~, Phi~], Y = [Phi~, U~] (symmetric); IP.T is the F-ordered view BLAS updates
        _, X, Yb = tail
        gemm = get_blas_funcs("gemm", (IP,))
        out = gemm(1.0, Yb.astype(dtype), X.astype(dtype), trans_b=True, beta=1.0, c=IP.T, overwrite_c=True)
        if not np.shares_memory(out, IP):    # the wrapper copied c instead of updating it in place
            IP[...] = out.T
    symmetrize_inplace(IP)
    return IP


def reversible_trajectory_sum(P, n_steps: int, stationary: np.ndarray) -> np.ndarray:
    """Exact ``sum_{t=1..T} P^t (P^t)^T`` of a reversible walk in closed form (float64, dense).

    Parameters
    ----------
    P : (n, n) sparse or dense row-stochastic matrix; rows of isolated nodes are all zero.
    n_steps : T (T <= 1 gives ``P P^T``).
    stationary : (n,) array
        Weights ``pi >= 0`` with ``pi_i P_ij = pi_j P_ji``; ``pi_i = 0`` marks an isolated node.

    Returns
    -------
    IP : (n, n) float64 array, exactly symmetric; zero rows and columns at the isolated nodes.

    Notes
    -----
    ``A = Pi^1/2 P Pi^-1/2`` is symmetric (reversibility), ``A = U L U^T`` (one symmetric eigendecomposition)
    and ``P^t (P^t)^T = Pi^-1/2 A^t Pi A^t Pi^-1/2``, so

    ``IP = V [(U^T Pi U) o H] V^T``,  ``V = Pi^-1/2 U``,  ``H_ab = sum_{t=1..T} (lambda_a lambda_b)^t``.

    For ECPCS (Huang et al., TSMC-S 2021, Eqs. 9-13) ``P = D^-1 S`` and ``pi = d``, so
    ``A = D^-1/2 S D^-1/2``. No step is dropped: this is the same sum as the step-by-step products, with
    a different rounding (about 1e-14 relative on ECPCS cluster graphs; tests). H does not depend on the
    basis chosen inside a repeated eigenvalue, so neither does IP. Cost: one eigh and about 5 n^3 flops of
    products, against 3 n^3 per step (about 58 n^3 for T = 20) for the products.
    The isolated nodes' rows and columns of P are zero, so the decomposition runs on the others only
    (``pi_i = 0`` would divide by zero in ``Pi^-1/2``), one connected component at a time.
    """
    n = P.shape[0]
    T = max(int(n_steps), 1)
    pi_all = np.asarray(stationary, dtype=np.float64)
    active = np.flatnonzero(pi_all > 0)
    IP = np.zeros((n, n))
    if active.size == 0:
        return IP
    if sparse.issparse(P):
        Pa = P[active][:, active].toarray().astype(np.float64, copy=False)
    else:
        Pa = np.asarray(P, dtype=np.float64)
        Pa = Pa if active.size == n else Pa[np.ix_(active, active)]
    # IP is block diagonal over the connected components (no walk crosses between them): one decomposition
    # per component keeps the zeros between components exact (one decomposition of the whole graph would
    # leave +-1e-17 rounding there) and costs less
    n_comp, comp = connected_components(sparse.csr_matrix(Pa), directed=True, connection="weak")
    for c in range(n_comp):
        sub = np.flatnonzero(comp == c)
        idx = active[sub]
        IP[np.ix_(idx, idx)] = _component_trajectory_sum(Pa if n_comp == 1 else Pa[np.ix_(sub, sub)], T,
                                                         pi_all[idx])
    return IP


def _component_trajectory_sum(P: np.ndarray, T: int, pi: np.ndarray) -> np.ndarray:
    """:func:`reversible_trajectory_sum` of one connected component (dense ``P``, all ``pi > 0``)."""
    sq = np.sqrt(pi)
    A = P * sq[:, None]
    A /= sq[None, :]
    A += A.T                                   # symmetric up to the rounding of the row normalisation
    A *= 0.5
    lam, U = np.linalg.eigh(A)
    del A
    W = U * sq[:, None]                        # Pi^1/2 U
    syrk = get_blas_funcs("syrk", (W,))
    C = syrk(1.0, W, trans=1)                  # U^T Pi U (upper triangle)
    C = np.triu(C)
    C += np.triu(C, 1).T
    # H_ab = x + x^2 + ... + x^T with x = lambda_a lambda_b in [-1, 1], by Horner's rule (one rounding per
    # step); the closed form x (1 - x^T) / (1 - x) divides by zero at x = 1 (the eigenvalue 1 of the
    # component) and cancels next to it
    x = np.multiply.outer(lam, lam)
    H = x.copy()
    for _ in range(T - 1):
        H += 1.0
        H *= x
    del x
    C *= H
    del H
    U /= sq[:, None]                           # V = Pi^-1/2 U
    IP = (U @ C) @ U.T
    symmetrize_inplace(IP)
    # P >= 0 makes every entry of IP >= 0; a true zero can come out as -1e-17 (e.g. the two sides of a
    # bipartite component): clip such rounding at 0
    np.maximum(IP, 0.0, out=IP)
    return IP


def _walk_step(P: sparse.csr_matrix, G: np.ndarray, block: int = 256) -> np.ndarray:
    """``P G P^T`` for symmetric ``G``, computing only its lower block triangle and mirroring it.

    ``Y = P G`` is one full sparse-times-dense product; ``P Y^T`` is symmetric, so column block ``b`` is needed
    only from row ``b0`` down: ``P[b0:] Y[b]^T`` (half the flops of the second product). ``Y[b]^T`` is a
    transpose of a ``block x n`` slab, cheaper than one transpose of the whole ``n x n`` matrix.
    """
    n = G.shape[0]
    Y = P @ G
    out = np.empty_like(G)
    for b0 in range(0, n, block):
        b1 = min(b0 + block, n)
        Gb = P[b0:] @ np.ascontiguousarray(Y[b0:b1].T)   # rows b0.., columns b0:b1 of P G P^T
        out[b0:, b0:b1] = Gb
        out[b0:b1, b1:] = Gb[b1 - b0:].T
    return out


def _worth_spectral_tail(P: sparse.csr_matrix, n_steps: int) -> bool:
    """Whether the plain walk costs enough that computing slow eigenpairs can pay off.

    The r = 3 sqrt(n) eigenpairs cost about two to three walk steps (USPS pool, n = 6719, r = 246: ~6 s vs
    ~2.3 s CPU per step here) and only pay off when they replace many steps; below ``SPECTRAL_TAIL_MIN_FLOP``
    the whole walk costs a few seconds at most and every step is computed.
    """
    return n_steps > 8 and 4.0 * P.nnz * P.shape[0] * (n_steps - 1) >= SPECTRAL_TAIL_MIN_FLOP


def _slow_mode_tail(P: sparse.csr_matrix, n_steps: int, stationary: np.ndarray, eps: float):
    """Closed-form sum of steps ``s+1..T`` on the slow eigenvectors (see :func:`trajectory_inner_products`).

    Returns ``(s, X, Y)`` with ``sum_{t=s+1..T} P^t (P^t)^T ~= X Y^T`` (float64, n x 2r), or None when the
    split saves no work (``lambda_c`` too close to 1 for the precision, or the rank-2r update costs more
    than the steps it replaces).
    """
    n = P.shape[0]
    T = int(n_steps)
    active = np.flatnonzero(stationary > 0)     # isolated rows/columns of P are zero: no trajectory
    m = active.size
    # r = 3 sqrt(m): on the USPS pool 246 pairs (lambda_c 0.21, 4 dense steps) beat 164 (0.32, 6 steps);
    # ARPACK's cost grows ~r^2, so much larger r costs more than the steps it saves
    r = min(int(np.ceil(3.0 * np.sqrt(m))), m - 2)
    if r < 1:
        return None
    pi = stationary[active]
    sq = np.sqrt(pi)
    Pa = P[active][:, active].astype(np.float64)
    A = sparse.diags(sq) @ Pa @ sparse.diags(1.0 / sq)     # Pi^1/2 P Pi^-1/2, symmetric by reversibility
    A = ((A + A.T) * 0.5).tocsr()                          # rounding of the row normalisation only
    # fixed start vector: the eigenpairs (and so the labels) do not depend on global random state
    v0 = np.random.default_rng(0).random(m)
    try:
        lam, U = eigsh(A, k=r, which="LM", v0=v0)
    except ArpackNoConvergence:
        return None                                  # every step stays a product
    lam_c = float(np.abs(lam).min())     # every eigenvalue not in U has modulus <= lam_c
    if lam_c >= 1.0 - 1e-9:
        return None
    log_c = np.log(lam_c) if lam_c > 0 else -np.inf
    # s: least step with lam_c^(2(s+1)) / (1 - lam_c^2) <= eps (fast-fast terms dropped after s)
    s = max(1, int(np.ceil((np.log(eps * (1.0 - lam_c ** 2)) / (2.0 * log_c)) - 1))) if lam_c > 0 else 1
    # cross terms: F_t decays like lam_c^t; stop once the rest sum_{t>t_stop} lam_c^t <= eps
    t_stop = min(T, max(s, int(np.ceil(np.log(eps * (1.0 - lam_c)) / log_c - 1)) if lam_c > 0 else s))
    saved = 4.0 * P.nnz * n * (T - s)
    cost = 4.0 * n * n * r + 2.0 * Pa.nnz * r * t_stop
    if s >= T or cost >= saved:
        return None
    M = U.T @ (pi[:, None] * U)                      # U^T Pi U
    F = pi[:, None] * U - U @ M                      # (I - U U^T) Pi U: the fast part of Pi U
    Phi = np.zeros_like(U)
    for t in range(1, t_stop + 1):
        F = A @ F                                    # F_t = A^t F_0 = A_f^t Pi U
        if t > s:
            Phi += F * lam ** t
    x = np.outer(lam, lam)
    H = np.zeros_like(x)
    xt = x ** s
    for _ in range(s + 1, T + 1):
        xt = xt * x
        H += xt                                      # sum_{t=s+1..T} (lambda_a lambda_b)^t
    Phi += 0.5 * (U @ (M * H))                       # slow-slow part, split evenly between the two factors
    X = np.zeros((n, 2 * r))
    Y = np.zeros((n, 2 * r))
    X[active, :r] = U / sq[:, None]                  # back to the P form: Pi^-1/2 (.) Pi^-1/2
    X[active, r:] = Phi / sq[:, None]
    Y[:, :r] = X[:, r:]
    Y[:, r:] = X[:, :r]
    return s, X, Y


def trajectory_cosine(IP: np.ndarray, isolated: np.ndarray | None = None) -> np.ndarray:
    """PTS_ij = IP_ij / sqrt(IP_ii IP_jj) (Def. 9), in place on ``IP``; isolated rows/columns -> 1e-20."""
    d = np.sqrt(np.diag(IP).copy())
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(d > 0, 1.0 / d, 0.0)
    IP *= inv[:, None]
    IP *= inv[None, :]
    if isolated is None:
        isolated = d == 0
    if np.any(isolated):
        IP[isolated, :] = ISOLATED_SIMILARITY
        IP[:, isolated] = ISOLATED_SIMILARITY
    return IP


def pts_matrix(similarity: np.ndarray, sizes, n_neighbors: int, n_steps: int, dtype=np.float64):
    """PTS over the nodes of a dense similarity (normally the MCA). Returns ``(PTS, isolated)``."""
    graph = elite_neighbor_graph(similarity, n_neighbors)
    P, isolated = transition_matrix(graph, sizes)
    # pi_i = (S z)_i z_i makes the walk reversible: pi_i P_ij = z_i S_ij z_j is symmetric (S symmetric)
    z = np.ones(P.shape[0]) if sizes is None else np.asarray(sizes, dtype=np.float64)
    stationary = np.asarray(sparse.csr_matrix(graph, dtype=np.float64) @ z).ravel() * z
    IP = trajectory_inner_products(P, n_steps, dtype=dtype, stationary=stationary)
    return trajectory_cosine(IP, isolated), isolated


@dataclass
class PTSResult:
    """Output of :func:`probability_trajectory_similarity` (all matrices over the microclusters)."""

    similarity: np.ndarray    # (n_micro, n_micro) PTS
    micro: Microclusters      # microclusters; ``micro.to_objects(labels)`` maps labels back
    mca: np.ndarray           # (n_micro, n_micro) microcluster co-association matrix
    isolated: np.ndarray      # (n_micro,) bool
    n_neighbors: int          # K actually used
    n_steps: int              # T actually used


def probability_trajectory_similarity(members: np.ndarray, n_neighbors: int | None = None,
                                      n_steps: int | None = None, *, rule: str = "code",
                                      dtype="float64") -> PTSResult:
    """PTS of a relabelled label matrix, computed on its microclusters (PTA/PTGP's similarity).

    Parameters
    ----------
    members : (n, M) relabelled label matrix.
    n_neighbors, n_steps : K (elite neighbours) and T (walk length); None -> :func:`default_k_t` (``rule``).
    rule : "code" (K = T = min(20, floor(sqrt(n_micro)/2)), default) or "paper" (no cap).
    dtype : "float64" (default), "float32", or "auto" (float32 above ``AUTO_FLOAT32_ABOVE`` microclusters)
        for the random-walk products.
    """
    micro = compute_microclusters(members)
    k_def, t_def = default_k_t(micro.n_micro, rule)
    K = k_def if n_neighbors is None else int(n_neighbors)
    T = t_def if n_steps is None else int(n_steps)
    if isinstance(dtype, str) and dtype == "auto":
        dtype = np.float32 if micro.n_micro > AUTO_FLOAT32_ABOVE else np.float64
    mca = microcluster_coassociation(micro)
    pts, isolated = pts_matrix(mca, micro.sizes, K, T, dtype=np.dtype(dtype))
    return PTSResult(similarity=pts, micro=micro, mca=mca, isolated=isolated, n_neighbors=K, n_steps=T)


def propagate_similarity(similarity: np.ndarray, n_steps: int) -> np.ndarray:
    """Random-walk trajectory similarity of a small dense graph, without pruning or size weights.

    ECPCS's ``computePTS_II.m`` (Huang et al., IEEE TSMC-S 51(1) 2021, Eqs. 9-13; specs/baselines/
    huang_family.md 3.1): zero the diagonal, row-normalise, ``IP = sum_{s=1..t} P^s (P^s)^T``,
    ``Z = IP_ij / sqrt(IP_ii IP_jj)``; rows of P summing to < 1e-9 are isolated and get 0 rows/columns.
    The diagonal of the result is 1 for non-isolated nodes.
    """
    S = np.array(similarity, dtype=np.float64)
    np.fill_diagonal(S, 0.0)
    row_sum = S.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        P = np.where(row_sum[:, None] > 0, S / row_sum[:, None], 0.0)
    # P = D^-1 S with S symmetric is reversible with pi = d (row sums): the closed form of
    # :func:`reversible_trajectory_sum` (ECPCS's cluster graph is dense)
    IP = trajectory_inner_products(P, n_steps, stationary=np.where(row_sum > 0, row_sum, 0))
    isolated = P.sum(axis=1) < 1e-9
    Z = trajectory_cosine(IP, isolated=np.zeros(len(P), dtype=bool))
    Z[isolated, :] = 0.0
    Z[:, isolated] = 0.0
    return Z

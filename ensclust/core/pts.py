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

Speed: the authors accumulate ``P^t (P^t)^T`` with dense P^t, i.e. T dense Gram products, O(T n^3). Here we
use ``G_t = P G_{t-1} P^T`` (G_t = P^t (P^t)^T is symmetric), two sparse-times-dense products per step,
O(T n^2 nnz(P)/n) - the same sums in another order (agreement ~1e-15, tested against the explicit form).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import get_blas_funcs

from ensclust.core.microclusters import Microclusters, compute_microclusters, microcluster_coassociation

#: value the authors' code writes into the rows/columns of isolated microclusters
ISOLATED_SIMILARITY = 1e-20
#: ``dtype="auto"`` runs the random walk in float32 above this many microclusters (2x faster, half the
#: memory; PTS relative error ~1e-6; PTA-AL/CL labels identical to float64 on all 30 EC-CMS-protocol runs
#: checked on Ecoli, UMIST, SPF, Caltech20 and ISOLET)
AUTO_FLOAT32_ABOVE = 2500


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
        thr = np.partition(slab, pos, axis=1)[:, pos]
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


def trajectory_inner_products(P: sparse.spmatrix, n_steps: int, dtype=np.float64) -> np.ndarray:
    """Dense ``sum_{t=1..T} P^t (P^t)^T`` (T <= 1 gives ``P P^T``, as the code's loop does).

    ``dtype=float32`` halves memory and time of the dense products (relative error ~1e-6).
    """
    P = sparse.csr_matrix(P, dtype=dtype)
    if P.nnz > 0.05 * P.shape[0] ** 2:
        # dense graph (ECPCS's cluster graph): the code's own order, P^t = P^{t-1} P (GEMM) and
        # IP += P^t (P^t)^T (SYRK, half a GEMM) - 3 n^3 flops per step instead of 4
        P = P.toarray()
        syrk = get_blas_funcs("syrk", (P,))
        IP = syrk(1.0, P)
        Pt = P
        for _ in range(int(n_steps) - 1):
            Pt = Pt @ P
            IP = syrk(1.0, Pt, beta=1.0, c=IP, overwrite_c=True)
        IP = np.triu(IP)
        IP += np.triu(IP, 1).T
        return IP
    G = (P @ P.T).toarray()
    IP = G.copy()
    for _ in range(int(n_steps) - 1):
        Y = P @ G                 # P G_{t-1}
        G = P @ np.ascontiguousarray(Y.T)   # P (P G_{t-1})^T = P G_{t-1} P^T  (G symmetric)
        IP += G
    IP += IP.T
    IP *= 0.5
    return IP


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
    IP = trajectory_inner_products(P, n_steps, dtype=dtype)
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
    IP = trajectory_inner_products(sparse.csr_matrix(P), n_steps)
    isolated = P.sum(axis=1) < 1e-9
    Z = trajectory_cosine(IP, isolated=np.zeros(len(P), dtype=bool))
    Z[isolated, :] = 0.0
    Z[:, isolated] = 0.0
    return Z

"""Building blocks shared by the Zhou-group graph-learning baselines (TRCE, CESHL, SCCBG).

specs/baselines/robust_family.md sections 3-5. These methods learn a graph whose connected components are the
consensus clusters; a penalty weight is doubled or halved until the graph Laplacian has exactly c zero
eigenvalues ("rank control"). The number of components found at the end may still differ from c; the spec's
rule is to evaluate it as it is (never force c), so the methods declare ``may_return_other_k = True``.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.linalg import eigh
from scipy.sparse.csgraph import connected_components

from ensclust.core.labels import relabel

#: Thresholds of the rank control in the authors' codes (TRCE ``optimization.m``, CESHL ``CESHL.m``).
RANK_TOL_LOW = 1e-9
RANK_TOL_HIGH = 1e-11


def component_labels(adjacency) -> np.ndarray:
    """Labels 0..k-1 of the connected components of a symmetric graph (any nonzero entry is an edge).

    Equivalent to MATLAB ``graphconncomp`` on a symmetric matrix (strong = weak components); labels are
    numbered in order of first appearance.
    """
    graph = sparse.csr_matrix(adjacency)
    graph.eliminate_zeros()
    _, labels = connected_components(graph, directed=False)
    return relabel(labels)


def bipartite_component_labels(S) -> np.ndarray:
    """Object labels of the connected components of the bipartite graph [[0, S], [S^T, 0]] (S is n x K).

    Two objects are connected when they share a column with nonzero entries, so this equals the components of
    ``S S^T != 0`` for a non-negative S without forming the n x n product.
    """
    S = sparse.csr_matrix(S)
    n = S.shape[0]
    graph = sparse.bmat([[None, S], [S.T, None]], format="csr")
    graph.eliminate_zeros()
    _, labels = connected_components(graph, directed=False)
    return relabel(labels[:n])


def laplacian_smallest(L: np.ndarray, n_eig: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_eig`` smallest eigenpairs of a dense symmetric matrix (ascending), by LAPACK ``syevr`` subset.

    Only the wanted eigenvectors are computed; ``L`` is not modified.
    """
    n = L.shape[0]
    k = min(n_eig, n)
    vals, vecs = eigh(L, subset_by_index=[0, k - 1], driver="evr", check_finite=False)
    return vals, vecs


def laplacian(S: np.ndarray) -> np.ndarray:
    """Unnormalised Laplacian diag(S 1) - S of a dense symmetric matrix (new array)."""
    L = -S
    L[np.diag_indices_from(L)] += S.sum(axis=1)
    return L


def rank_decision(eigvals: np.ndarray, n_clusters: int) -> str:
    """Rank control of TRCE / CESHL from the c + 1 smallest Laplacian eigenvalues (ascending).

    Returns ``"increase"`` when fewer than c components (fn1 = sum of the c smallest > 1e-9: double the
    penalty), ``"decrease"`` when more than c (fn2 = sum of the c + 1 smallest < 1e-11: halve it and restore the
    previous embedding), else ``"stop"``.
    """
    fn1 = float(np.sum(eigvals[:n_clusters]))
    fn2 = float(np.sum(eigvals[:n_clusters + 1]))
    if fn1 > RANK_TOL_LOW:
        return "increase"
    if fn2 < RANK_TOL_HIGH:
        return "decrease"
    return "stop"


def rank_control(eigvals: np.ndarray, n_clusters: int, rho: float, history: dict) -> tuple[str, float]:
    """One rank-control step of TRCE / CESHL: log rho and fn1, then double or halve rho (:func:`rank_decision`).

    Returns ``(decision, new_rho)``; on ``"decrease"`` the caller restores its previous embedding, on ``"stop"``
    it may finish.
    """
    decision = rank_decision(eigvals, n_clusters)
    history["rho"].append(rho)
    history["fn1"].append(float(np.sum(eigvals[:n_clusters])))
    if decision == "increase":
        rho *= 2.0
    elif decision == "decrease":
        rho /= 2.0
    return decision, rho


def squared_distances(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances between the rows of A and the rows of B (clipped at 0)."""
    same = B is None
    B = A if same else B
    sa = np.einsum("ij,ij->i", A, A)
    sb = sa if same else np.einsum("ij,ij->i", B, B)
    D = sa[:, None] + sb[None, :] - 2.0 * (A @ B.T)
    np.maximum(D, 0.0, out=D)
    if same:
        np.fill_diagonal(D, 0.0)
    return D

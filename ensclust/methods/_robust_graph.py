"""Building blocks shared by the Zhou-group graph-learning baselines (TRCE, CESHL, SCCBG).

specs/baselines/robust_family.md sections 3-5. These methods learn a graph whose connected components are the
consensus clusters; a penalty weight is doubled or halved until the graph Laplacian has exactly c zero
eigenvalues ("rank control"). The number of components found at the end may still differ from c; the spec's
rule is to evaluate it as it is (never force c), so the methods declare ``may_return_other_k = True``.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.linalg import cho_factor, cho_solve, eigh
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh, splu

from ensclust.core.labels import relabel, relabel_first_appearance
from ensclust.core.spectral import ARPACK_MAXITER

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


def micro_bipartite_component_labels(S, assignment: np.ndarray) -> np.ndarray:
    """Object labels of :func:`bipartite_component_labels` when row u of S (n_micro x K) is the row of every
    object i with ``assignment[i] == u``.

    Objects whose rows are equal and non-zero share their clusters, hence a component; an object whose row is
    zero is an isolated vertex of the object-level graph, a component of its own. Labels are numbered in order
    of first appearance over the objects, as :func:`bipartite_component_labels` of the object rows.
    """
    assignment = np.asarray(assignment)
    micro = bipartite_component_labels(S)
    labels = micro[assignment]
    empty = ~np.asarray((sparse.csr_matrix(S) != 0).sum(axis=1)).ravel().astype(bool)
    lone = empty[assignment]
    labels[lone] = micro.size + np.arange(int(lone.sum()))
    return relabel_first_appearance(labels)


def laplacian_smallest(L: np.ndarray, n_eig: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_eig`` smallest eigenpairs of a dense symmetric matrix (ascending), by LAPACK ``syevr`` subset.

    Only the wanted eigenvectors are computed; ``L`` is not modified.
    """
    n = L.shape[0]
    k = min(n_eig, n)
    vals, vecs = eigh(L, subset_by_index=[0, k - 1], driver="evr", check_finite=False)
    return vals, vecs


#: Shift of the shift-invert Lanczos in :func:`laplacian_smallest_weighted`: the Laplacians of TRCE have unit-scale
#: degrees (rows of S on the simplex), so their eigenvalues lie in [0, 2]; -1e-3 keeps L - sigma I positive
#: definite while the wanted eigenvalues (0 up to ~0.2) stay well separated in 1 / (lambda - sigma).
SHIFT_INVERT_SIGMA = -1e-3


def laplacian_smallest_weighted(S: np.ndarray | None, weights: np.ndarray, n_eig: int, *,
                                factor=None) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_eig`` smallest eigenpairs of the Laplacian of a block-constant graph, from its blocks.

    ``S`` (symmetric, n_micro x n_micro) holds the value of every block of an object graph whose blocks have
    ``weights`` objects. The object Laplacian maps block-constant vectors x = E y (E the n x n_micro block
    indicator) to block-constant vectors: L E y = E (diag(d) - S diag(weights)) y with d = S weights (the
    object degrees). With z = weights^1/2 y this is the symmetric n_micro x n_micro matrix
    Ls = diag(d) - W^1/2 S W^1/2, and ||E y|| = ||z||, so the eigenvectors of Ls divided by weights^1/2 are the
    rows of unit-norm object eigenvectors. The other object eigenvectors (zero-sum inside one block) have
    eigenvalue d_u, the degree of that block, which is >= 1/2 for TRCE's symmetrised simplex rows and so never
    among the few smallest.

    Ls is sparse (TRCE's S-step zeroes most entries) and only the n_eig smallest eigenpairs are needed: the zero
    eigenvalues come exactly from the connected components (their multiplicity is what the rank control
    counts), the others from ARPACK Lanczos on (Ls - sigma I)^-1, sigma = -1e-3 (a sparse LU), restricted to
    the complement of the null space, to machine precision (tol = 0). A dense low-rank graph (TRCE's initial mean of the base graphs)
    is given instead as ``factor`` Q with S = Q Q^T (sparse n_micro x K): the shifted solves then go through
    the Woodbury identity (one K x K Cholesky factor) instead of a sparse LU of a nearly dense matrix. Returns ``(vals ascending, object-row eigenvectors)``; the
    eigenvectors are at most n_micro columns.
    """
    w = np.asarray(weights, dtype=np.float64)
    sq = np.sqrt(w)
    Dq = sparse.diags(sq)
    if factor is None:
        Ssp = sparse.csr_matrix(S)
        d = Ssp @ w
        Ls = (sparse.diags(d) - Dq @ Ssp @ Dq).tocsc()
        n = Ls.shape[0]
        comp = component_labels(Ssp)
        # Ls - sigma I is symmetric positive definite: SuperLU in symmetric mode (minimum degree on the pattern
        # of A + A^T, diagonal pivots) keeps the fill of the factor 3x below the default column ordering's on
        # TRCE's graphs (11-14 % dense at n_micro = 6719: 8.8e6 vs 2.8e7 factor entries, 3 s vs 15 s)
        lu = splu((Ls - SHIFT_INVERT_SIGMA * sparse.eye(n)).tocsc(), permc_spec="MMD_AT_PLUS_A",
                  diag_pivot_thresh=0.0, options={"SymmetricMode": True})
        solve = lu.solve
    else:
        # S = Q Q^T: Ls = diag(d) - U U^T with U = W^1/2 Q (n_micro x K), and by the Woodbury identity
        # (Ls - sigma I)^-1 = A^-1 + A^-1 U (I - U^T A^-1 U)^-1 U^T A^-1 with A = diag(d - sigma). The K x K
        # capacitance matrix is positive definite because Ls - sigma I is.
        Q = sparse.csr_matrix(factor)
        d = Q @ (Q.T @ w)
        U = (Dq @ Q).tocsr()
        a_inv = 1.0 / (d - SHIFT_INVERT_SIGMA)
        cap = np.eye(U.shape[1]) - (U.T @ sparse.diags(a_inv) @ U).toarray()
        cho = cho_factor(cap, check_finite=False)
        n = U.shape[0]
        Ls = LinearOperator((n, n), matvec=lambda x: d * np.ravel(x) - U @ (U.T @ np.ravel(x)), dtype=np.float64)
        comp = bipartite_component_labels(Q)

        def solve(x):
            y = a_inv * np.ravel(x)
            return y + a_inv * (U @ cho_solve(cho, U.T @ y, check_finite=False))

    # The null space is known exactly: one zero eigenvalue per connected component, eigenvector W^1/2 times the
    # component's indicator (normalised). Lanczos cannot resolve a repeated eigenvalue from one start vector,
    # and the rank control counts exactly these zeros, so they are not left to the eigensolver: it runs on the
    # shift-inverted operator restricted to the orthogonal complement of the null space.
    n_comp = int(comp.max()) + 1 if n else 0
    N = sparse.csr_matrix((sq, (np.arange(n), comp)), shape=(n, n_comp)).toarray()
    N /= np.linalg.norm(N, axis=0)[None, :]
    k = min(n_eig, n)
    k_rest = k - min(n_comp, k)

    def dense_ls():  # Ls as a dense array, for the two dense routes below
        return Ls.toarray() if factor is None else Ls @ np.eye(n)

    if k_rest == 0:
        vals, vecs = np.zeros(k), N[:, :k]
    elif k_rest >= n - n_comp - 1:  # ARPACK needs k < n - 1; a complement this small is decomposed densely
        vals, vecs = eigh(dense_ls(), subset_by_index=[0, k - 1], check_finite=False)
    else:
        def project(x):
            x = np.ravel(x)
            return x - N @ (N.T @ x)

        op = LinearOperator((n, n), matvec=lambda x: project(solve(project(x))), dtype=np.float64)
        # fixed start vector: the result must not depend on a random state (TRCE is deterministic)
        v0 = project(np.random.default_rng(0).standard_normal(n))
        try:
            nu, V = eigsh(op, k=k_rest, which="LA", v0=v0, tol=0.0, maxiter=ARPACK_MAXITER)
        except ArpackNoConvergence:
            # a repeated or nearly repeated eigenvalue outside the null space (CESHL on Binalpha, rep 1: 3 of 4
            # pairs after ARPACK's default 10 n restarts, then a failed cell), which Lanczos from one start
            # vector separates one restart at a time: the dense solver's exact pairs next to the null space
            lam, V = eigh(dense_ls(), subset_by_index=[n_comp, k - 1], check_finite=False)
            nu = 1.0 / (lam - SHIFT_INVERT_SIGMA)
        rest = SHIFT_INVERT_SIGMA + 1.0 / nu        # eigenvalues of Ls from those of (Ls - sigma I)^-1
        order = np.argsort(rest)
        vals = np.concatenate([np.zeros(k - k_rest), rest[order]])
        vecs = np.hstack([N[:, :k - k_rest], V[:, order]])
    # The eigenvalues returned are the n_eig smallest of the whole object spectrum (the rank control reads
    # them): block eigenvalues merged with the within-block ones d_u (multiplicity weights_u - 1). They only
    # matter when there are fewer than n_eig blocks or the graph is nearly empty; the eigenvectors stay the
    # block ones (within-block vectors are not block-constant).
    within = np.repeat(d, np.maximum(w.astype(np.int64) - 1, 0))
    if within.size and (k < n_eig or within.min() < vals[-1]):
        vals = np.sort(np.concatenate([vals, within]))[:n_eig]
    return vals, vecs / sq[:, None]


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
    # (sa_i + sb_j) - 2 a_i.b_j with two n x n temporaries instead of four (same operations, same rounding)
    G = A @ B.T
    G *= 2.0
    D = sa[:, None] + sb[None, :]
    D -= G
    del G
    np.maximum(D, 0.0, out=D)
    if same:
        np.fill_diagonal(D, 0.0)
    return D

"""LOBPCG from a warm start that has no component in a degenerate eigenspace (SPCE's Laplacian).

Points with identical rows of S (identical label vectors in the ensemble) give L eigenvectors e_p - e_q with
eigenvalue d_p + S_pq. A warm start that is equal on p and q (every eigenvector of another eigenvalue is)
has no component in them, and the Jacobi-preconditioned iteration keeps that symmetry: LOBPCG converges to
the next eigenpairs and reports success. The miss check of ``_component_eigenpairs`` has to find them.
"""

import numpy as np
import scipy.linalg
from scipy import sparse

from ensclust.methods._spce_spectrum import _component_eigenpairs, _dense_laplacian


def duplicated_graph(n=300, dup=3, seed=0):
    """A connected random graph plus ``dup`` identical points attached weakly to one node."""
    rng = np.random.default_rng(seed)
    A = np.zeros((n + dup, n + dup))
    for p in range(n):  # a ring (connected) plus random chords, weights in [0.5, 1]
        A[p, (p + 1) % n] = rng.uniform(0.5, 1.0)
    for _ in range(4 * n):
        p, q = rng.integers(0, n, 2)
        if p != q:
            A[p, q] = rng.uniform(0.5, 1.0)
    A = np.maximum(A, A.T)
    for t in range(dup):  # identical rows: same tiny edge to node 0, same weight between the copies
        A[n + t, 0] = A[0, n + t] = 1e-3
        for u in range(t + 1, dup):
            A[n + t, n + u] = A[n + u, n + t] = 0.01
    return sparse.csr_matrix(A)


def setup(q=4):
    S = duplicated_graph()
    L = _dense_laplacian(S)
    vals, vecs = scipy.linalg.eigh(L)
    copies = np.arange(300, 303)
    # eigenvectors that are equal on the copies (all except the e_p - e_q space of the copies)
    symmetric = np.ptp(vecs[copies], axis=0) < 1e-8
    degenerate = vals[~symmetric]
    warm = vecs[:, symmetric][:, 1:q + 1]              # the q smallest symmetric nonzero eigenpairs
    return S, vals, degenerate, warm


def test_setup_has_degenerate_wanted_eigenspace():
    S, vals, degenerate, warm = setup()
    q = 4
    assert degenerate.shape[0] == 2 and np.ptp(degenerate) < 1e-12
    assert degenerate[0] < vals[q]                      # both copies' eigenpairs are among the q smallest nonzero
    assert np.abs(warm[300:303] - warm[300]).max() < 1e-8


def test_plain_lobpcg_misses_the_degenerate_eigenpairs():
    S, vals, degenerate, warm = setup()
    q = 4
    got, _, solver = _component_eigenpairs(S, None, q, warm, 0, 50, 1e-8, 300, check_missed=False)
    assert solver == "lobpcg"                           # reports success ...
    assert np.abs(got - vals[1:q + 1]).max() > 0.1      # ... with the wrong eigenvalues
    assert not np.any(np.isclose(got, degenerate[0], rtol=1e-6))


def test_component_eigenpairs_finds_the_degenerate_eigenpairs():
    S, vals, degenerate, warm = setup()
    q = 4
    got, vecs, solver = _component_eigenpairs(S, None, q, warm, 0, 50, 1e-8, 300)
    assert solver == "lobpcg-miss-dense"
    np.testing.assert_allclose(got, vals[1:q + 1], rtol=1e-6, atol=1e-9)
    L = _dense_laplacian(S)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(q), atol=1e-8)
    assert np.abs(L @ vecs - vecs * got).max() < 1e-5


def test_guard_resolve_above_the_dense_fallback(monkeypatch):
    import ensclust.methods._spce_spectrum as spectrum

    monkeypatch.setattr(spectrum, "MISS_DENSE_LIMIT", 0)   # the LOBPCG re-solve with guard columns
    S, vals, degenerate, warm = setup()
    q = 4
    got, _, solver = _component_eigenpairs(S, None, q, warm, 0, 50, 1e-8, 300)
    assert solver.startswith("lobpcg") and solver != "lobpcg-miss-dense"
    np.testing.assert_allclose(got, vals[1:q + 1], rtol=1e-6, atol=1e-9)


def test_no_miss_leaves_result_bit_identical():
    S, vals, degenerate, warm = setup()
    q = 4
    rng = np.random.default_rng(1)
    start = warm + 1e-3 * rng.standard_normal(warm.shape)  # breaks the symmetry: nothing is missed
    a = _component_eigenpairs(S, None, q, start, 0, 50, 1e-8, 300, check_missed=False)
    b = _component_eigenpairs(S, None, q, start, 0, 50, 1e-8, 300)
    np.testing.assert_allclose(a[0], vals[1:q + 1], rtol=1e-6)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])

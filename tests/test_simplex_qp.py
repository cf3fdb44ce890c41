"""The shared exact simplex QP (ensclust.core.simplex.simplex_qp): closed forms, singular Hessians, KKT."""

import itertools
import warnings

import numpy as np
import pytest

from ensclust.core.simplex import simplex_qp


def objective(H, c, x):
    return float(x @ H @ x + c @ x)


def enumerated_minimum(H, c):
    """Global minimum by enumerating every support S: the KKT point of the face, if it exists and is feasible."""
    v = c.size
    best = min(H[i, i] + c[i] for i in range(v))  # vertices
    for r in range(2, v + 1):
        for S in map(list, itertools.combinations(range(v), r)):
            K = np.zeros((r + 1, r + 1))
            K[:r, :r] = 2 * H[np.ix_(S, S)]
            K[:r, r] = K[r, :r] = 1.0
            rhs = np.r_[-c[S], 1.0]
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
            if np.linalg.norm(K @ sol - rhs) > 1e-9 * (1 + np.linalg.norm(rhs)) or sol[:r].min() < 0:
                continue
            x = np.zeros(v)
            x[S] = sol[:r]
            best = min(best, objective(H, c, x))
    return best


def hessians(rng, v):
    R = rng.normal(size=(v, v + 2))
    yield "full rank", R @ R.T
    r1 = rng.normal(size=(v, 1))
    yield "rank one", r1 @ r1.T
    yield "zero", np.zeros((v, v))
    labels = rng.integers(0, 3, size=(20, 2))[:, np.arange(v) % 2]  # duplicate base clusterings
    M = np.stack([(lab[:, None] == lab[None, :]).ravel().astype(float) for lab in labels.T])
    yield "duplicates", M @ M.T


def test_closed_forms():
    # linear objective: the vertex of the smallest coefficient
    assert np.array_equal(simplex_qp(np.zeros((4, 4)), np.array([3.0, -1.0, 2.0, 0.5])), [0, 1, 0, 0])
    # duplicate columns: (x1 + x2)^2 + x2 = 1 + x2 is minimal at x = (1, 0)
    assert np.allclose(simplex_qp(np.ones((2, 2)), np.array([0.0, 1.0])), [1.0, 0.0], atol=1e-15)
    # identity: projection of -c/2 onto the simplex
    assert np.allclose(simplex_qp(np.eye(3), np.array([-1.0, 0.0, 1.0])), [0.75, 0.25, 0.0], atol=1e-12)
    assert np.array_equal(simplex_qp(np.array([[2.0]]), np.array([5.0])), [1.0])


def test_global_minimum_against_support_enumeration_including_singular_h():
    rng = np.random.default_rng(11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the iteration cap is never reached
        for trial in range(12):
            v = 2 + trial % 5
            for kind, H in hessians(rng, v):
                c = rng.normal(size=v) * (np.abs(H).max() + 1.0)
                x = simplex_qp(H, c)
                assert x.min() >= 0 and x.sum() == pytest.approx(1.0, abs=1e-14)
                best = enumerated_minimum(H, c)
                assert objective(H, c, x) <= best + 1e-10 * (1 + abs(best)), (kind, v)


def test_kkt_on_larger_singular_problems_and_determinism():
    rng = np.random.default_rng(12)
    for kind, H in hessians(rng, 40):
        c = rng.normal(size=40) * (np.abs(H).max() + 1.0)
        x = simplex_qp(H, c)
        g = 2 * H @ x + c
        # KKT: the gradient is the same on the support and no smaller anywhere else
        assert g[x > 1e-12].max() - g.min() <= 1e-10 * np.abs(g).max(), kind
        assert np.array_equal(x, simplex_qp(H, c))

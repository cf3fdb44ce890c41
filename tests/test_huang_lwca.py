"""ECI and LWCA building blocks (specs/baselines/huang_family.md 1.1-1.2, 1.7; specs/eccms.md 8.1)."""

import numpy as np
import pytest

from ensclust.core.coassoc import coassociation
from ensclust.core.labels import check_members, one_hot
from ensclust.core.lwca import cluster_uncertainty, eci, lwca_condensed_distance, lwca_matrix
from ensclust.testing import f30_fixture

F30_GT = f30_fixture()[1] + 1


def f30_members():
    return f30_fixture()[0]


def test_lwca_f30_numbers():
    # specs/eccms.md 8.1 (official code under Octave): tolerance 1e-9 on matrices
    A = lwca_matrix(f30_members(), theta=0.4)
    assert A[0, 1] == pytest.approx(0.067736, abs=5e-7)
    assert A[0, 10] == pytest.approx(0.004535, abs=5e-7)
    assert A[0, 29] == pytest.approx(0.011442, abs=5e-7)
    assert A.sum() == pytest.approx(58.461060, abs=5e-6)
    assert np.allclose(A, A.T, atol=1e-15)
    assert np.all(np.diag(A) == 1.0)


def test_eci_worked_example():
    # L1: a cluster of 8 objects split 2/3/3 by clustering 2 and 4/4 by clustering 3 -> H = 2.5613,
    # ECI = exp(-H / (0.4 * 3)) = 0.11832
    pi1 = [0] * 8 + [1] * 4 + [2] * 4
    pi2 = [0, 0, 1, 1, 1, 2, 2, 2] + [0, 1, 2, 0, 1, 2, 0, 1]
    pi3 = [0] * 4 + [1] * 4 + [2] * 8
    members = check_members(np.column_stack([pi1, pi2, pi3]))
    H = cluster_uncertainty(members)
    expected = -(2 / 8 * np.log2(2 / 8) + 2 * 3 / 8 * np.log2(3 / 8)) + 1.0
    assert H[0] == pytest.approx(expected, abs=1e-12)
    assert H[0] == pytest.approx(2.5613, abs=1e-4)
    assert eci(members, 0.4)[0] == pytest.approx(0.11832, abs=1e-5)


def _loop_uncertainty(members):
    B = one_hot(members).toarray().astype(bool)
    out = []
    for i in range(B.shape[1]):
        inside = members[B[:, i]]
        h = 0.0
        for q in range(members.shape[1]):
            _, counts = np.unique(inside[:, q], return_counts=True)
            p = counts / counts.sum()
            h -= float(np.sum(p * np.log2(p)))
        out.append(h)
    return np.array(out)


def test_uncertainty_matches_loop_and_bounds():
    # L5 vectorised H equals a per-cluster loop; own clustering contributes 0, clusters inside one cluster
    # of every member have H = 0 and ECI = 1
    rng = np.random.default_rng(3)
    members = check_members(rng.integers(0, 5, size=(60, 7)))
    H = cluster_uncertainty(members)
    assert np.allclose(H, _loop_uncertainty(members), atol=1e-12)
    same = check_members(np.column_stack([np.repeat([0, 1, 2], 5)] * 4))
    assert np.all(eci(same) == 1.0)


def test_lwca_limits_and_condensed():
    rng = np.random.default_rng(5)
    members = check_members(rng.integers(0, 4, size=(40, 6)))
    A = lwca_matrix(members)
    off = A[~np.eye(40, dtype=bool)]
    assert off.min() >= 0 and off.max() <= 1
    # L4: theta -> infinity gives the plain co-association matrix
    ca = coassociation(members, dtype=np.float64)
    big = lwca_matrix(members, theta=1e12)
    assert np.allclose(big, ca, atol=1e-9)
    # L2: identical members -> ECI = 1 -> LWCA = CA
    ident = check_members(np.column_stack([rng.integers(0, 3, 30)] * 5))
    assert np.allclose(lwca_matrix(ident), coassociation(ident, dtype=np.float64), atol=1e-15)
    # condensed form equals 1 - upper triangle of the dense matrix (block boundaries exercised)
    d = lwca_condensed_distance(members)
    assert np.array_equal(d, np.clip(1.0 - A[np.triu_indices(40, 1)], 0, None))
    assert lwca_matrix(members, dtype=np.float32).dtype == np.float32

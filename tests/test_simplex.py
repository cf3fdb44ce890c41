"""The one simplex projection (ensclust.core.simplex.project_simplex): KKT conditions, an independent oracle,
the batched row / column forms, the candidate-pruned branch and dtype handling."""

import numpy as np
import pytest

from ensclust.core.simplex import project_simplex


def oracle(v: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Projection of one vector by bisection on the threshold (no sorting): sum max(v - t, 0) = radius."""
    v = np.asarray(v, dtype=np.float64)
    lo, hi = v.min() - radius, v.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(v - mid, 0.0).sum() > radius:
            lo = mid
        else:
            hi = mid
    return np.maximum(v - 0.5 * (lo + hi), 0.0)


def sort_rule(v: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """The plain sort-based rule on a whole row (full sort, no candidate pruning)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - radius
    idx = np.arange(1, v.size + 1, dtype=v.dtype)
    rho = np.flatnonzero(u - css / idx > 0)[-1]
    return np.maximum(v - (css[rho] / (rho + 1)).astype(v.dtype), 0.0)


def random_matrices(seed=1, trials=120):
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        m, n = int(rng.integers(1, 30)), int(rng.integers(1, 200))
        T = rng.standard_normal((m, n)) * [0.1, 1.0, 10.0, 100.0][trial % 4]
        if trial % 5 == 0:
            T = np.round(T)  # integer ties
        if trial % 7 == 0:
            T[:, :3] = T[:, :1]  # tied maxima
        if trial % 3 == 0:
            T[:, 1:] -= 5.0  # one dominant entry per row: the pruned branch
        yield T


@pytest.mark.parametrize("radius", [1.0, 2.5])
def test_rows_satisfy_kkt_and_match_the_oracle(radius):
    for T in random_matrices():
        P = project_simplex(T, radius)
        assert P.shape == T.shape and np.all(P >= 0)
        np.testing.assert_allclose(P.sum(axis=1), radius, rtol=1e-12, atol=1e-9 * (1 + np.abs(T).max()))
        for t, p in zip(T, P, strict=True):
            # KKT: p = max(t - theta, 0) with one theta on the support, t <= theta off it
            supp = p > 0
            theta = t[supp] - p[supp]
            scale = 1.0 + np.abs(t).max()
            assert np.ptp(theta) <= 1e-12 * scale and np.all(t[~supp] <= theta[0] + 1e-12 * scale)
            np.testing.assert_allclose(p, oracle(t, radius), atol=1e-9 * scale)


def test_batched_forms_equal_the_per_vector_rule_bit_for_bit():
    """Rows, columns (axis=0) and single vectors give the plain sort rule exactly, in float64 and float32,
    whether or not the candidate pruning applies."""
    for T in random_matrices(seed=2):
        for dtype in (np.float64, np.float32):
            Td = T.astype(dtype)
            rows = project_simplex(Td)
            assert rows.dtype == dtype
            expected = np.array([sort_rule(t) for t in Td])
            np.testing.assert_array_equal(rows, expected)
            np.testing.assert_array_equal(project_simplex(Td.T, axis=0), expected.T)
            np.testing.assert_array_equal(project_simplex(Td[0]), expected[0])


def test_integer_input_and_bad_axis():
    np.testing.assert_array_equal(project_simplex(np.array([3, 0, 0])), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        project_simplex(np.zeros((2, 2)), axis=2)
    with pytest.raises(ValueError):
        project_simplex(np.zeros((2, 2, 2)))

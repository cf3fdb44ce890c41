"""The L-BFGS-B driver takes SciPy's steps: same iterates, values and counts as scipy.optimize.minimize."""

import numpy as np
import pytest
from scipy import optimize

from ensclust.core.lbfgsb import minimize_box, minimize_weighted_box


def _problem(n=60, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    A = M @ M.T / n + 0.1 * np.eye(n)
    b = 3.0 * rng.standard_normal(n)

    def fun(x):   # a convex quadratic plus a quartic term (a non-trivial line search)
        Ax = A @ x
        return float(0.5 * x @ Ax - b @ x + 0.05 * np.sum(x ** 4)), Ax - b + 0.2 * x ** 3

    return fun, rng


@pytest.mark.parametrize("kind", ["box", "one_sided", "free", "mixed"])
@pytest.mark.parametrize("maxiter", [3, 200])
def test_same_iterates_as_scipy(kind, maxiter):
    fun, rng = _problem()
    n = 60
    lower = {"box": np.full(n, -0.5), "one_sided": np.zeros(n), "free": np.full(n, -np.inf),
             "mixed": np.where(rng.random(n) < 0.5, -0.3, -np.inf)}[kind]
    upper = {"box": np.full(n, 0.5), "one_sided": np.full(n, np.inf), "free": np.full(n, np.inf),
             "mixed": np.where(rng.random(n) < 0.5, 0.4, np.inf)}[kind]
    x0 = rng.uniform(-1, 1, n)
    seen_ours, seen_scipy = [], []
    ours = minimize_box(fun, x0, lower, upper, maxiter=maxiter, maxcor=5, ftol=1e7 * np.finfo(float).eps,
                        gtol=1e-8, callback=lambda x: seen_ours.append(x.copy()) and False)
    ref = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=optimize.Bounds(lower, upper),
                            callback=lambda x: seen_scipy.append(x.copy()),
                            options={"maxiter": maxiter, "maxcor": 5, "ftol": 1e7 * np.finfo(float).eps,
                                     "gtol": 1e-8})
    assert ours.nit == ref.nit and len(seen_ours) == len(seen_scipy) > 0
    for a, b in zip(seen_ours, seen_scipy, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours.x, ref.x)
    assert ours.fun == ref.fun
    if kind == "box" and maxiter == 200:   # bounds active at the solution
        assert np.sum((ours.x == 0.5) | (ours.x == -0.5)) > 0


def test_callback_stops_like_scipy():
    fun, rng = _problem(seed=1)
    x0 = rng.uniform(-1, 1, 60)
    lo, hi = np.full(60, -1.0), np.full(60, 1.0)
    count = {"ours": 0, "scipy": 0}

    def stop_after(key, k):
        def cb(x):
            count[key] += 1
            if count[key] >= k:
                if key == "scipy":
                    raise StopIteration
                return True
            return False
        return cb

    ours = minimize_box(fun, x0, lo, hi, maxiter=100, callback=stop_after("ours", 4))
    ref = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=optimize.Bounds(lo, hi),
                            callback=stop_after("scipy", 4), options={"maxiter": 100})
    assert ours.nit == ref.nit == 4
    np.testing.assert_array_equal(ours.x, ref.x)


def test_bad_bounds():
    fun, _ = _problem()
    with pytest.raises(ValueError):
        minimize_box(fun, np.zeros(60), np.ones(60), np.zeros(60), maxiter=5)


def test_weighted_rows_equal_the_object_level_solve():
    """Row u standing for w_u objects gives the object-level solve with those rows repeated."""
    rng = np.random.default_rng(3)
    N, K = 7, 4
    T = rng.uniform(-0.5, 1.5, (N, K))
    w = np.array([1, 3, 2, 1, 4, 1, 2], dtype=float)
    C = rng.standard_normal((K, K))
    C = C @ C.T / K

    def obj(X, weights):   # sum over objects of ||x - t||^2 + x^T C x, per-object gradient
        D = X - (T if weights.size == N else np.repeat(T, w.astype(int), axis=0))
        return float(weights @ (np.sum(D * D, axis=1) + np.einsum("ik,kl,il->i", X, C, X))), 2 * D + 2 * X @ C

    xm, rm = minimize_weighted_box(lambda X: obj(X, w), np.zeros((N, K)), w, maxiter=50, pgtol=1e-9, maxcor=5,
                                   ftol=1e-15)
    ones = np.ones(int(w.sum()))
    xo, ro = minimize_weighted_box(lambda X: obj(X, ones), np.zeros((int(w.sum()), K)), None, maxiter=50,
                                   pgtol=1e-9, maxcor=5, ftol=1e-15)
    np.testing.assert_allclose(np.repeat(xm, w.astype(int), axis=0), xo, atol=1e-7)
    assert rm.nit > 0 and ((xm == 0) | (xm == 1)).any()     # the box is active somewhere

"""Box-constrained L-BFGS-B: SciPy's routine, driven without its per-variable Python set-up.

``scipy.optimize.minimize(method="L-BFGS-B")`` converts the bounds between two formats and classifies every
variable in a Python loop at each call (SciPy 1.17: about 5 s per call at 4e5 variables). CESHL and SCCBG call it
once per outer step on n_micro x K variables (100 calls per CESHL fit), so on Binalpha (n = 1404, 4e5
variables) that set-up was over half of a fit. :func:`minimize_box` runs the same compiled routine
(``setulb``: Byrd, Lu, Nocedal & Zhu 1995; Morales & Nocedal 2011) with the same arguments and the same
reverse-communication loop as SciPy's ``_minimize_lbfgsb``, with the bound types set by array operations, so it
takes the same steps (tests/test_lbfgsb.py compares the iterates with ``scipy.optimize.minimize``).

:func:`minimize_weighted_box` adds the device both methods use on microclusters: row u of the variable matrix
stands for ``weights[u]`` identical objects, and the solve runs in the coordinates z_u = sqrt(weights_u) x_u, in
which L-BFGS-B's inner products, breakpoints and line searches are those of the solve over all objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import _lbfgsb

_FG, _NEW_X = 3, 1          # setulb's task codes: evaluate f and g / a new iterate was accepted
_STOP = 5                   # task code that makes setulb end (with reason 504: maxiter, 505: callback)


@dataclass
class BoxResult:
    """Outcome of :func:`minimize_box`: the last accepted point, its value and the number of iterations."""

    x: np.ndarray
    fun: float
    nit: int


def minimize_box(fun, x0, lower, upper, *, maxiter: int, maxcor: int = 10, ftol: float = 2.2204460492503131e-09,
                 gtol: float = 1e-5, maxls: int = 20, callback=None) -> BoxResult:
    """Minimise ``fun`` over the box ``lower <= x <= upper`` by L-BFGS-B (SciPy's compiled routine).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)``: the value and the gradient at ``x`` (a copy; 1-d float64).
    x0 : (n,) array
        Start point (clipped to the box).
    lower, upper : (n,) arrays
        Bounds; -inf / +inf for a free side.
    maxiter, maxcor, ftol, gtol, maxls
        As the options of ``scipy.optimize.minimize(method="L-BFGS-B")`` (``factr = ftol / eps``,
        ``pgtol = gtol``).
    callback : callable, optional
        ``callback(x) -> bool`` after each accepted iterate (``x`` must not be modified); True stops the solve.

    Returns
    -------
    BoxResult
    """
    x = np.clip(np.asarray(x0, dtype=np.float64), lower, upper)
    n = x.size
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,))
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,))
    if (lower > upper).any():
        raise ValueError("a lower bound is greater than its upper bound")
    has_low, has_up = np.isfinite(lower), np.isfinite(upper)
    # setulb's bound types: 0 free, 1 lower only, 2 both, 3 upper only
    nbd = np.where(has_low, np.where(has_up, 2, 1), np.where(has_up, 3, 0)).astype(np.int32)
    low_bnd = np.where(has_low, lower, 0.0)
    upp_bnd = np.where(has_up, upper, 0.0)
    factr = ftol / np.finfo(float).eps
    f = np.array(0.0, dtype=np.float64)
    g = np.zeros(n, dtype=np.float64)
    wa = np.zeros(2 * maxcor * n + 5 * n + 11 * maxcor * maxcor + 8 * maxcor, np.float64)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task = np.zeros(2, dtype=np.int32)
    ln_task = np.zeros(2, dtype=np.int32)
    lsave = np.zeros(4, dtype=np.int32)
    isave = np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29, dtype=np.float64)
    nit = 0
    while True:
        _lbfgsb.setulb(maxcor, x, low_bnd, upp_bnd, nbd, f, g, factr, gtol, wa, iwa, task, lsave, isave, dsave,
                       maxls, ln_task)
        if task[0] == _FG:
            fx, gx = fun(x.copy())
            f, g = np.array(float(fx), dtype=np.float64), np.asarray(gx, dtype=np.float64).reshape(n)
        elif task[0] == _NEW_X:
            nit += 1
            if callback is not None and callback(x):
                task[0], task[1] = _STOP, 505
            if nit >= maxiter:
                task[0], task[1] = _STOP, 504
        else:
            break
    return BoxResult(x=x, fun=float(f), nit=nit)


def minimize_weighted_box(fun, x0: np.ndarray, weights: np.ndarray | None, *, maxiter: int, pgtol: float,
                          maxcor: int, ftol: float) -> tuple[np.ndarray, BoxResult]:
    """L-BFGS-B over [0, 1]^{N x K} where row u stands for ``weights[u]`` identical objects.

    ``fun(X) -> (f, G)``: f summed over all objects, G the gradient of one object's row (N x K). The solve runs
    in z_u = sqrt(weights_u) x_u (box [0, sqrt(weights_u)]). L-BFGS-B's own projected-gradient test would read
    sqrt(weights_u) times the object-level one there, so it is off (gtol 0) and the test is made after each
    iterate on the object-level projected gradient max |clip(x - G, 0, 1) - x| <= ``pgtol`` (also at the start
    point, where L-BFGS-B makes it). Returns X (clipped to the box) and the solver's result.
    """
    shape = x0.shape
    w = np.ones(shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    r = np.broadcast_to(np.sqrt(w)[:, None], shape).ravel()
    last = {}

    def flat(z):
        x = (z / r).reshape(shape)
        f, g = fun(x)
        last["z"], last["f"] = z.copy(), float(f)
        last["pg"] = float(np.abs(np.clip(x - g, 0.0, 1.0) - x).max())
        return f, (g * w[:, None]).ravel() / r

    def converged(z):
        if not np.array_equal(z, last["z"]):
            flat(z)
        return last["pg"] <= pgtol

    z0 = np.clip(x0, 0.0, 1.0).ravel() * r
    flat(z0)
    if last["pg"] <= pgtol:
        res = BoxResult(x=z0, fun=last["f"], nit=0)
    else:
        res = minimize_box(flat, z0, 0.0, r, maxiter=maxiter, maxcor=maxcor, ftol=ftol, gtol=0.0,
                           callback=converged)
    return np.clip((res.x / r).reshape(shape), 0.0, 1.0), res

"""SCCBG and CESHL in their microcluster forms against plain object-level references (small n).

The references transcribe the object-level iterations of specs/baselines/robust_family.md sections 4-5 as
implemented before the microcluster forms: SCCBG with a gradient evaluation at every extrapolated FISTA point
and sums over all objects; the method must give the same partitions, rank-control paths and QP iteration
counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, sparse
from scipy.linalg import eigh

from ensclust.core.labels import one_hot
from ensclust.core.microclusters import compute_microclusters
from ensclust.methods import get_method
from ensclust.methods._robust_graph import (
    bipartite_component_labels,
    laplacian_smallest,
    micro_bipartite_component_labels,
    rank_control,
    squared_distances,
)
from ensclust.methods.ceshl import (
    hyperedge_qp_matrix,
    hypergraph_factor,
    hypergraph_laplacian,
    initial_hyperedge_weights,
    solve_hyperedge_weights,
    structure_objective,
)
from ensclust.methods.sccbg import (
    PRUNE,
    RANK_TOL,
    _box_minimize,
    box_minimize_rows,
    s_step_linear,
    s_step_lipschitz,
    s_step_objective,
    w_step_linear,
    w_step_lipschitz,
    w_step_objective,
)
from ensclust.testing import planted_ensemble, same_partition


def _inv_sqrt(v):
    out = np.zeros_like(v)
    out[v > 0] = 1.0 / np.sqrt(v[v > 0])
    return out


def _dense_sccbg(members, c, gamma=1e-3, max_iter=20, qp_iter=300, qp_tol=1e-6):
    """Object-level SCCBG (spec section 5) with the monotone FISTA of the QP steps evaluated at every point."""
    H0 = one_hot(members).toarray()
    A = H0.T @ H0
    S, W = H0.copy(), np.zeros_like(H0)
    lam, rho = 1.0, 0.5
    lambdas, iters = [], []
    for _ in range(max_iter):
        if W.min() < 1.0:
            W, n_it, _ = box_minimize_rows(lambda X_, S=S, rho=rho: w_step_objective(X_, S, H0, A, gamma, rho,
                                                                                     per_row=True),
                                           W, w_step_lipschitz(S, H0, A, gamma), qp_iter, qp_tol)
            iters.append(n_it)
        d1, d2 = _inv_sqrt(S.sum(axis=1)), _inv_sqrt(S.sum(axis=0))
        SS1 = S * d1[:, None] * d2[None, :]
        M = SS1.T @ SS1
        K = M.shape[0]
        vals, vecs = eigh((M + M.T) / 2, subset_by_index=[K - c - 1, K - 1])
        vals, vecs = vals[::-1], vecs[:, ::-1]
        V = vecs[:, :c]
        U = (SS1 @ V) / np.sqrt(np.maximum(vals[:c], np.finfo(float).tiny))[None, :]
        U, V = U * np.sqrt(0.5), V * np.sqrt(0.5)
        lambdas.append(lam)
        if vals[:c].sum() < c - RANK_TOL:
            lam *= 2
        elif vals[:c + 1].sum() > c + 1 - RANK_TOL:
            lam /= 2
        else:
            break
        dist = squared_distances(U * d1[:, None], V * d2[:, None])
        S, n_it, _ = box_minimize_rows(lambda S_, dist=dist, lam=lam, W=W: s_step_objective(
            S_, W, H0, A, gamma, lam, dist, per_row=True), S, s_step_lipschitz(W, A, gamma), qp_iter, qp_tol)
        iters.append(n_it)
        S[S < PRUNE] = 0.0
        rho *= 2
    return bipartite_component_labels(S), lambdas, iters


def _noisy_pool(seed, n=90, m=6):
    members, _ = planted_ensemble(n=n, c=3, m=m, noise_fraction=0.3, flip=0.05, random_state=seed,
                                  k_range=(3, 6))
    return members


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sccbg_microcluster_form_matches_the_object_level_iteration(seed):
    members = _noisy_pool(seed)
    micro = compute_microclusters(members)
    assert micro.n_micro < members.shape[0]              # the blocks are exercised
    for gamma in (1e-3, 1e-1):
        ref, lambdas, iters = _dense_sccbg(members, 3, gamma=gamma, qp_iter=150)
        meth = get_method("sccbg", gamma=gamma, qp_iter=150)
        labels = meth.fit_predict(members, 3)
        assert same_partition(labels, ref)
        assert meth.diagnostics_["lambda"] == lambdas
        assert meth.diagnostics_["qp_iterations"] == iters


def test_affine_gradient_of_extrapolated_points_matches_evaluation():
    members = _noisy_pool(3)
    H0 = one_hot(members).toarray()
    A = H0.T @ H0
    rng = np.random.default_rng(0)
    S, W, dist, X, D = (rng.random(H0.shape) for _ in range(5))
    D[rng.random(D.shape) < 0.9] = 0.0

    WA = W @ A
    for Dv in (D, sparse.csr_matrix(D)):
        gw = w_step_objective(X + D, S, H0, A, 0.3, 0.7)[1] - w_step_objective(X, S, H0, A, 0.3, 0.7)[1]
        assert np.allclose(w_step_linear(Dv, S, H0, A, 0.3), gw, atol=1e-9)
        gs = (s_step_objective(X + D, W, H0, A, 0.3, 1.5, dist)[1] - s_step_objective(X, W, H0, A, 0.3, 1.5, dist)[1])
        assert np.allclose(s_step_linear(Dv, W, A, 0.3, WA), gs, atol=1e-9)
    # FISTA with the affine extrapolated gradient follows the evaluated one (convex S-step, non-convex W-step)
    fun_s = lambda x: s_step_objective(x, W, H0, A, 0.3, 1.5, dist, per_row=True)  # noqa: E731
    fun_w = lambda x: w_step_objective(x, S, H0, A, 0.3, 0.7, per_row=True)  # noqa: E731
    for fun, lin, L, x0 in ((fun_s, lambda D_: s_step_linear(D_, W, A, 0.3, WA), s_step_lipschitz(W, A, 0.3), S),
                            (fun_w, lambda D_: w_step_linear(D_, S, H0, A, 0.3), w_step_lipschitz(S, H0, A, 0.3),
                             W)):
        a, na, _ = box_minimize_rows(fun, x0, L, 60, 1e-12)
        b, nb, _ = box_minimize_rows(fun, x0, L, 60, 1e-12, linear=lin)
        assert na == nb and np.abs(a - b).max() < 1e-9


def test_weighted_lbfgsb_matches_the_object_level_solve():
    members = _noisy_pool(4, n=60)
    micro = compute_microclusters(members)
    sizes = micro.sizes.astype(float)
    Hm = micro.indicator().toarray()
    A = Hm.T @ (Hm * sizes[:, None])
    rng = np.random.default_rng(1)
    Wm, distm = rng.random(Hm.shape), rng.random(Hm.shape)
    Sm = Hm.copy()
    a = micro.assignment
    fun_m = lambda x: s_step_objective(x, Wm, Hm, A, 0.05, 2.0, distm, per_row=True)  # noqa: E731
    fun_o = lambda x: s_step_objective(x, Wm[a], Hm[a], A, 0.05, 2.0, distm[a], per_row=True)  # noqa: E731
    xm, rm = _box_minimize(fun_m, Sm, 50, 1e-6, weights=sizes)
    xo, ro = _box_minimize(fun_o, Sm[a], 50, 1e-6)
    assert rm.nit == ro.nit
    assert np.abs(xm[a] - xo).max() < 1e-6


def test_micro_component_labels_split_objects_of_empty_rows():
    S = np.array([[1.0, 0, 0], [0, 0, 0], [0, 0.5, 0], [0, 0.2, 0]])
    assignment = np.array([1, 0, 1, 2, 3, 0, 2])
    ref = bipartite_component_labels(S[assignment])
    got = micro_bipartite_component_labels(S, assignment)
    assert np.array_equal(got, ref)


def _dense_ceshl(members, c, lam=1.0, max_iter=100, init_rho=100.0, inner_iter=20):
    """Object-level CESHL (spec section 4): n x K L-BFGS-B over all objects, dense n x n Laplacian eigh."""
    n, m = members.shape
    H0 = one_hot(members).toarray()
    G = H0.T @ H0
    A = hyperedge_qp_matrix(G, lam)
    w = solve_hyperedge_weights(A, lam * initial_hyperedge_weights(G, m))
    H = H0.copy()
    shape = H.shape
    vals, Y = laplacian_smallest(hypergraph_laplacian(H, w), c + 1)
    Y = Y[:, :c]
    rho = init_rho
    history = {"rho": [], "fn1": []}
    bounds = optimize.Bounds(np.zeros(H.size), np.ones(H.size))
    options = {"maxiter": inner_iter, "maxcor": 5, "gtol": 1e-3, "ftol": 1e7 * np.finfo(float).eps}
    n_iter = 0
    for it in range(1, max_iter + 1):
        n_iter = it

        def fun(x, Y=Y, rho=rho):
            f, g = structure_objective(x.reshape(shape), H0, w, Y, rho)
            return f, g.ravel()

        res = optimize.minimize(fun, H.ravel(), jac=True, method="L-BFGS-B", bounds=bounds, options=options)
        H = np.clip(res.x.reshape(shape), 0.0, 1.0)
        Y_old = Y
        vals, Y = laplacian_smallest(hypergraph_laplacian(H, w), c + 1)
        Y = Y[:, :c]
        decision, rho = rank_control(vals, c, rho, history)
        if decision == "decrease":
            Y = Y_old
        elif decision == "stop" and it > 1:
            break
    return bipartite_component_labels(H[:, w > 0]), history["rho"], n_iter, H


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ceshl_microcluster_form_matches_the_object_level_iteration(seed):
    members = _noisy_pool(seed)
    assert compute_microclusters(members).n_micro < members.shape[0]
    for lam in (1.0, 100.0):
        ref, rhos, n_iter, _ = _dense_ceshl(members, 3, lam=lam, max_iter=30)
        meth = get_method("ceshl", **{"lambda": lam, "max_iter": 30})
        labels = meth.fit_predict(members, 3)
        assert same_partition(labels, ref)
        assert meth.diagnostics_["rho"] == rhos
        assert meth.diagnostics_["n_iter"] == n_iter


def test_ceshl_weighted_objective_is_the_object_level_sum():
    members = _noisy_pool(5, n=60)
    micro = compute_microclusters(members)
    sizes = micro.sizes.astype(float)
    a = micro.assignment
    rng = np.random.default_rng(2)
    Hm = rng.random((micro.n_micro, one_hot(members).shape[1]))
    H0m = micro.indicator().toarray()
    w = rng.random(Hm.shape[1])
    Y = rng.standard_normal((micro.n_micro, 3))
    fm, gm = structure_objective(Hm, H0m, w, Y, 7.0, sizes)
    fo, go = structure_objective(Hm[a], H0m[a], w, Y[a], 7.0)
    assert abs(fm - fo) < 1e-10 * abs(fo)
    assert np.abs(gm[a] - go).max() < 1e-10
    # the factor reproduces the object-level graph H W De^-1 H^T
    Q = hypergraph_factor(Hm, w, sizes)
    L = hypergraph_laplacian(Hm[a], w)
    S = (Q @ Q.T).toarray()[np.ix_(a, a)]
    assert np.abs((np.diag(S.sum(axis=1)) - S) - L).max() < 1e-10

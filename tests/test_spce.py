"""SPCE test oracle (specs/spce.md section 8) and agreement with a literal dense reference (spec 3.6)."""

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from ensclust.methods import get_method
from ensclust.methods._spce_pairs import build_pair_table
from ensclust.methods._spce_spectrum import Embedding, smallest_eigenpairs
from ensclust.methods.spce import (
    alpha_update,
    lambda_schedule,
    member_losses,
    s_update,
    self_paced_weights,
    upper_matrix,
)
from ensclust.metrics import acc, ari
from ensclust.testing import check_method_properties, same_partition

TINY = np.array([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1],
                 [0, 0, 0, 0, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0, 0, 0]]).T


# ----------------------------------------------------------------------------------------------------
# A literal dense implementation of spec 3.6 (n x n x m stack, dense eigh), checking invariants as it goes.
def conn(labels):
    return (labels[:, None] == labels[None, :]).astype(float)


def objective10(S, Ss, W, alpha, lam, gamma, rho, Y):
    data = sum(np.sum(((S - Si) * W) ** 2) / a for Si, a in zip(Ss, alpha, strict=True))
    E = np.sum((Y[:, None, :] - Y[None, :, :]) ** 2, axis=2)
    # the trace term as in eq. (14)/(15), rho sum_pq E_pq S_pq = 2 rho tr(Y^T L Y): what eq. (16) minimises
    return data - lam * W.sum() + gamma * np.count_nonzero(S) + rho * np.sum(E * S)


def reference_spce(P, c, theta, variant="spce", check_blocks=True):
    n, m = P.shape
    Ss = [conn(P[:, i]) for i in range(m)]
    count = sum(Ss)
    Shat = count / m
    one, zero = count == m, count == 0
    gamma = m * m * theta ** 2

    def eig(S):
        L = np.diag(S.sum(1)) - S
        vals, vecs = np.linalg.eigh(L)
        return vecs[:, :c], vals

    S = Shat.copy()
    Y, _ = eig(S)
    rho, alpha, W = 1.0, np.full(m, 1 / m), None
    rhos, objs, iters = [], [], []
    for r, cap in zip([0.9, 0.8, 0.7, 0.6, 0.5], [5, 5, 5, 5, 20], strict=True):
        lam = 2 * ((r - 1) ** 2 * r + r ** 2 * (1 - r)) * m * m
        if variant == "spce" or W is None:
            B = sum((S - Si) ** 2 / a for Si, a in zip(Ss, alpha, strict=True))
            with np.errstate(divide="ignore"):
                W = np.minimum(np.where(B > 0, lam / (2 * B), 1.0), 1.0)
            if variant == "spce-w":
                W = np.ones((n, n))
            assert np.all(W > 0) and np.all(W <= 1) and np.all(W[one | zero] == 1)
        it = 0
        for it in range(cap):
            a = np.sum(1 / alpha)
            G = sum(Si / al for Si, al in zip(Ss, alpha, strict=True))
            E = np.sum((Y[:, None, :] - Y[None, :, :]) ** 2, axis=2)
            before = objective10(S, Ss, W, alpha, lam, gamma, rho, Y)
            C = (G - rho * E / (2 * W * W)) / a
            S = np.where(C < np.sqrt(gamma) / (W * np.sqrt(a)), 0.0, np.minimum(C, 1.0))
            S[one] = 1.0
            S[zero] = 0.0
            S = (S + S.T) / 2
            # invariants after every S-update (spec 8.7)
            assert np.allclose(S, S.T) and S.min() >= 0 and S.max() <= 1
            assert np.all(np.diag(S) == 1) and np.all(S[zero] == 0) and not np.any(S[~one] == 1)
            after_s = objective10(S, Ss, W, alpha, lam, gamma, rho, Y)
            Y_old = Y
            Y, ev = eig(S)
            after_y = objective10(S, Ss, W, alpha, lam, gamma, rho, Y)
            phi = np.array([np.linalg.norm((S - Si) * W) for Si in Ss])
            alpha = phi / phi.sum() if phi.sum() > 0 else np.full(m, 1 / m)
            assert abs(alpha.sum() - 1) < 1e-12 and alpha.min() >= 0
            after_a = objective10(S, Ss, W, alpha, lam, gamma, rho, Y)
            if check_blocks:  # every block step solves its subproblem (Sec. III-D), W and rho fixed
                tol = 1e-9 * max(1.0, abs(before))
                assert after_s <= before + tol and after_y <= after_s + tol and after_a <= after_y + tol
            objs.append(after_a)
            if ev[:c].sum() > 1e-9:
                rho *= 2
            elif ev[:c + 1].sum() < 1e-11:
                rho /= 2
                Y = Y_old
            elif it > 0:
                rhos.append(rho)
                break
            rhos.append(rho)
        iters.append(it + 1)
    _, labels = connected_components(S != 0, directed=False)
    return labels, S, rhos, objs, iters


# ----------------------------------------------------------------------------------------------------
def test_lambda_schedule():  # spec 8.1
    rs = [0.9, 0.8, 0.7, 0.6, 0.5]
    assert np.allclose([lambda_schedule(r, 20) for r in rs], [72, 128, 168, 192, 200])
    assert np.allclose([lambda_schedule(r, 9) for r in rs], [14.58, 25.92, 34.02, 38.88, 40.5])
    for r in np.linspace(0.01, 0.99, 50):
        assert np.isclose(lambda_schedule(r, 7), 2 * 49 * r * (1 - r))


def test_initial_B_and_W_table():  # spec 8.2
    m = 4
    shat = 0.75
    B = m * m * shat * (1 - shat)
    assert B == 3.0
    table = {0.5: 0.36, 0.6: 0.375, 0.7: 0.428571428571, 0.8: 0.5625, 0.9: 1, 0.95: 1, 0.2: 0.5625}
    for m in (9, 20):
        lam = lambda_schedule(0.9, m)
        for s, w in table.items():
            W = self_paced_weights(np.array([m * m * s * (1 - s)]), lam)[0]
            assert np.isclose(W, w, atol=1e-9), (m, s, W)
    assert self_paced_weights(np.array([0.0]), 1.0)[0] == 1.0


def test_W_closed_form_bruteforce():  # spec 8.3
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 200001)
    for _ in range(30):
        B, lam = rng.uniform(0.01, 5), rng.uniform(0.01, 5)
        w = self_paced_weights(np.array([B]), lam)[0]
        best = grid[np.argmin(B * grid ** 2 - lam * grid)]
        assert abs((B * w ** 2 - lam * w) - (B * best ** 2 - lam * best)) < 1e-9


def test_S_closed_form_bruteforce():  # spec 8.4
    rng = np.random.default_rng(1)
    grid = np.linspace(0, 1, 100001)
    for _ in range(200):
        C = rng.uniform(-0.5, 1.5)
        tau = rng.uniform(0, 1)
        a = 1.0
        # s_update with G = C a, E = 0, W = 1, gamma = tau a (so sqrt(tau) = sqrt(gamma)/(W sqrt(a)))
        s = s_update(np.array([C * a]), np.array([0.0]), np.array([1.0]), a, 0.0, tau * a)[0]
        cost = (grid - C) ** 2 + tau * (grid != 0)
        assert (s - C) ** 2 + tau * (s != 0) <= cost.min() + 1e-9
    # Counter-case outside the regime tau <= 1 (AMBIGUITY A4): C = 1, tau = 1.5. Eq. (17) as printed returns
    # 1 (cost 1.5); the [CODE] order (threshold first, then clip) returns 0, the true minimiser (cost 1.0).
    # We follow the [CODE] order; free pairs always have C < 1, so the two never differ in SPCE itself.
    s = s_update(np.array([1.0]), np.array([0.0]), np.array([1.0]), 1.0, 0.0, 1.5)[0]
    assert s == 0.0


def test_completing_the_square():  # spec 8.5
    rng = np.random.default_rng(2)
    for _ in range(20):
        m = 6
        alpha = rng.dirichlet(np.ones(m))
        Si = rng.integers(0, 2, m)
        W, e, rho = rng.uniform(0.1, 1), rng.uniform(0, 2), rng.uniform(0, 5)
        a = np.sum(1 / alpha)
        C = (np.sum(Si / alpha) - rho * e / (2 * W * W)) / a
        vals = [np.sum((s - Si) ** 2 / alpha) * W * W + rho * e * s - W * W * a * (s - C) ** 2
                for s in np.linspace(0, 1, 7)]
        assert np.ptp(vals) < 1e-9 * max(1, abs(vals[0]))


def test_alpha_closed_form():  # spec 8.6
    rng = np.random.default_rng(3)
    for _ in range(20):
        loss = rng.uniform(0, 3, 8)
        alpha = alpha_update(loss, 1e-12)
        value = np.sum(loss / alpha)
        assert np.isclose(value, np.sum(np.sqrt(loss)) ** 2)
        assert value <= np.sum(loss / np.full(8, 1 / 8)) + 1e-12
        assert value <= np.sum(loss / rng.dirichlet(np.ones(8))) + 1e-12
    assert np.allclose(alpha_update(np.zeros(5), 1e-12), 0.2)
    one_zero = alpha_update(np.array([0.0, 1.0, 4.0]), 1e-12)
    assert one_zero[0] > 0 and np.isclose(one_zero.sum(), 1)


def test_degenerate_identical_members():  # spec 8.8
    y = np.repeat([0, 1, 2], [4, 3, 5])
    for name in ("spce", "spce-w", "spce-fixw"):
        method = get_method(name, theta=0.5)
        out = method.fit_predict(np.column_stack([y] * 5), 3)
        assert same_partition(out, y)
        d = method.diagnostics_
        assert d["n_components"] == 3 and d["n_free_pairs"] == 0 and np.allclose(d["alpha"], 0.2)


def test_uniform_alpha_reduction():  # spec 8.9: W = 1, theta = 0, rho = 0, uniform alpha -> S = S_hat
    rng = np.random.default_rng(4)
    P = rng.integers(0, 3, (15, 6))
    table = build_pair_table(P)
    m = 6
    alpha = np.full(m, 1 / m)
    G = (table.patterns @ (1 / alpha))[table.pattern]
    shat = table.pattern_counts()[table.pattern] / m
    S = s_update(G, np.zeros_like(G), np.ones_like(G), float(np.sum(1 / alpha)), 0.0, 0.0)
    assert np.allclose(S, shat)


def test_pair_table_matches_dense():
    rng = np.random.default_rng(5)
    P = rng.integers(0, 4, (30, 7))
    table = build_pair_table(P)
    count = sum(conn(P[:, i]) for i in range(7))
    iu = np.triu_indices(30, 1)
    positive = count[iu] > 0
    assert table.n_pairs == positive.sum()
    assert np.all(table.free_rows < table.free_cols) and np.all(np.diff(table.free_rows) >= 0)
    assert np.all(table.one_rows < table.one_cols)
    free_counts = count[table.free_rows, table.free_cols]
    assert np.array_equal(free_counts, table.pattern_counts()[table.pattern])
    assert np.all(free_counts > 0) and np.all(free_counts < 7)
    assert np.all(count[table.one_rows, table.one_cols] == 7) and (count[iu] == 7).sum() == table.n_ones
    for t in range(table.n_free):
        p, q = table.free_rows[t], table.free_cols[t]
        assert np.array_equal(table.patterns[table.pattern[t]], P[p] == P[q])


def test_member_losses_match_dense():
    rng = np.random.default_rng(6)
    n, m = 25, 5
    P = rng.integers(0, 3, (n, m))
    table = build_pair_table(P)
    S_free = rng.uniform(0, 1, table.n_free) * (rng.random(table.n_free) > 0.3)
    W = rng.uniform(0.2, 1, table.n_free)
    S = upper_matrix(table, S_free).toarray()
    S = S + S.T + np.eye(n)
    Wd = np.ones((n, n))
    Wd[table.free_rows, table.free_cols] = W
    Wd[table.free_cols, table.free_rows] = W
    dense = [np.sum(((S - conn(P[:, i])) * Wd) ** 2) for i in range(m)]
    assert np.allclose(member_losses(table, W * W, S_free), dense)


def test_trace_identity_and_embedding():  # spec 8.10
    rng = np.random.default_rng(7)
    n, c = 30, 3
    A = rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < 0.3)
    A = np.triu(A, 1)
    from scipy import sparse
    spec = smallest_eigenpairs(sparse.csr_matrix(A), c, rank_test="dense")
    Y = spec.embedding.extra
    S = A + A.T
    L = np.diag(S.sum(1)) - S
    E = np.sum((Y[:, None] - Y[None]) ** 2, axis=2)
    assert np.isclose(np.trace(Y.T @ L @ Y), 0.5 * np.sum(E * S))
    Q, _ = np.linalg.qr(rng.standard_normal((c, c)))
    E2 = np.sum(((Y @ Q)[:, None] - (Y @ Q)[None]) ** 2, axis=2)
    assert np.allclose(E, E2)
    # the structured (component-based) embedding gives the same distances and eigenvalues
    fast = smallest_eigenpairs(sparse.csr_matrix(A), c, rank_test="eigen")
    iu = np.triu_indices(n, 1)
    assert np.allclose(fast.embedding.sqdist(iu[0], iu[1]), E[iu], atol=1e-8)
    assert np.allclose(fast.values, np.maximum(spec.values, 0), atol=1e-10)
    assert np.isclose(fast.trace, spec.trace, atol=1e-10)


def test_lobpcg_path_matches_dense():
    rng = np.random.default_rng(8)
    n, c = 400, 4
    y = np.repeat(np.arange(c), n // c)
    A = rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < np.where(y[:, None] == y[None], 0.3, 0.01))
    from scipy import sparse
    A = sparse.csr_matrix(np.triu(A, 1))
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1):
        dense = smallest_eigenpairs(A, c, rank_test="eigen", dense_limit=10_000)
        iterative = smallest_eigenpairs(A, c, rank_test="eigen", dense_limit=50, tol=1e-10, maxiter=2000)
    assert np.allclose(dense.values, iterative.values, rtol=1e-6, atol=1e-9)
    iu = np.triu_indices(n, 1)
    assert np.allclose(dense.embedding.sqdist(iu[0], iu[1]), iterative.embedding.sqdist(iu[0], iu[1]),
                       atol=1e-6)


def test_lobpcg_dense_operator_path():
    from threadpoolctl import threadpool_limits

    from ensclust.methods._spce_spectrum import _component_eigenpairs
    rng = np.random.default_rng(9)
    n = 300
    y = np.repeat(np.arange(3), n // 3)
    A = rng.uniform(0, 1, (n, n)) * np.where(y[:, None] == y[None], 1.0, 0.02)   # full block: dense operator
    A = np.triu(A, 1)
    from scipy import sparse
    S_sym = sparse.csr_matrix(A + A.T)
    with threadpool_limits(limits=1):
        vals, vecs, _ = _component_eigenpairs(S_sym, None, 3, None, 0, 10, 1e-10, 2000)
        ref, _, _ = _component_eigenpairs(S_sym, None, 3, None, 0, 10_000, 1e-10, 2000)
    assert np.allclose(vals, ref, rtol=1e-7)


def test_tiny_regression_case():  # spec 8.11
    out = get_method("spce", theta=0.3).fit(TINY, 2)
    d = out.diagnostics_
    assert out.labels_.tolist() == [0, 0, 0, 0, 1, 1, 1, 1] and d["n_components"] == 2
    assert d["rho"][:4] == [2.0, 4.0, 8.0, 8.0] and set(d["rho"]) == {2.0, 4.0, 8.0}
    assert d["branch"][:4] == ["double", "double", "double", "exit"] and d["inner_iterations"][0] == 4
    for theta in (0.5, 0.7):
        out = get_method("spce", theta=theta).fit(TINY, 2)
        d = out.diagnostics_
        groups = sorted(sorted(np.flatnonzero(out.labels_ == k).tolist()) for k in np.unique(out.labels_))
        assert groups == [[0, 1], [2], [3], [4, 5, 6], [7]]
        assert set(d["branch"]) == {"halve"} and d["n_iter"] == 40 and d["inner_iterations"] == [5, 5, 5, 5, 20]
        assert d["fallback_needed"] and not d["fallback_applied"] and not d["rank_target_reached"]
    out = get_method("spce", theta=0.0).fit_predict(TINY, 2)
    assert out.tolist() == [0, 0, 0, 1, 1, 1, 1, 1]


def _noisy_ensemble(seed, n=90, c=3, m=20, noise=0.2):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    cols = []
    for _ in range(m):
        lab = y.copy()
        idx = rng.choice(n, int(noise * n), replace=False)
        lab[idx] = rng.integers(0, c, idx.size)
        cols.append(rng.permutation(c)[lab])
    return np.column_stack(cols), y


@pytest.mark.parametrize("theta", [0.0, 0.1, 0.2])
def test_planted_noise_recovery(theta):  # spec 8.12: ACC = 1 for theta <= 0.2 on >= 18/20 seeds
    hits = 0
    for seed in range(20):
        P, y = _noisy_ensemble(seed)
        out = get_method("spce", theta=theta).fit_predict(P, 3)
        hits += acc(y, out) == 1.0 and out.max() == 2
    assert hits >= 18


def test_large_theta_fragments_and_noW_less():  # spec 8.12, seed-0 qualitative behaviour (theta/W threshold)
    P, _ = _noisy_ensemble(0)
    spce = get_method("spce", theta=0.5).fit(P, 3).diagnostics_["n_components"]
    now = get_method("spce-w", theta=0.6).fit(P, 3).diagnostics_["n_components"]
    assert spce > 3 and now < spce


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("variant", ["spce", "spce-w", "spce-fixw"])
def test_matches_dense_reference(seed, variant):
    rng = np.random.default_rng(100 + seed)
    n, c, m = 36, 3, 8
    y = np.repeat(np.arange(c), n // c)
    P = np.column_stack([np.where(rng.random(n) < 0.25, rng.integers(0, c, n), y) for _ in range(m)])
    theta = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5][seed]
    ref_labels, ref_S, ref_rhos, ref_objs, ref_iters = reference_spce(P, c, theta, variant)
    for rank_test in ("dense", "eigen", "components"):
        method = get_method(variant, theta=theta, rank_test=rank_test)
        labels = method.fit_predict(P, c)
        d = method.diagnostics_
        assert same_partition(labels, ref_labels)
        assert d["rho"] == ref_rhos and d["inner_iterations"] == ref_iters
        assert np.allclose(method.consensus_matrix_.toarray(), ref_S, atol=1e-9)
        assert np.allclose(d["objective"], ref_objs, rtol=1e-8, atol=1e-6)


def test_variants_weights():
    P, _ = _noisy_ensemble(3, n=45)
    fix = get_method("spce-fixw", theta=0.2).fit(P, 3)
    assert fix.diagnostics_["variant"] == "spce-fixw"
    coassoc = get_method("spce-fixw", theta=0.2, fixw_mode="coassoc").fit(P, 3)
    assert coassoc.labels_.shape == (45,)
    # spce-w: W = 1, so -lambda ||W||_1 = -lambda n^2 in every objective entry of a stage
    now = get_method("spce-w", theta=0.2).fit(P, 3).diagnostics_
    assert len(now["objective"]) == now["n_iter"]


def test_objective_monotone_when_rho_unchanged():  # spec 3.7
    for seed in range(5):
        P, _ = _noisy_ensemble(seed, noise=0.3)
        d = get_method("spce", theta=0.1).fit(P, 3).diagnostics_
        obj, stage, branch = d["objective"], d["stage_of_iteration"], d["branch"]
        for t in range(1, len(obj)):
            if stage[t] == stage[t - 1] and branch[t - 1] == "keep":
                assert obj[t] <= obj[t - 1] + 1e-9 * abs(obj[t - 1])


@pytest.mark.parametrize("name", ["spce", "spce-w", "spce-fixw"])
def test_properties(name):
    check_method_properties(name, {"theta": 0.1})


def test_default_theta_fragments_planted_ensemble():
    """Documented exception: at the default theta = 0.5 the shared planted-recovery property does not hold for
    SPCE / SPCE-fixW. The effective l0 threshold theta / W (spec section 5, last items) prunes the noisy planted
    pairs and the output has more than c connected components (faithful mode, spec A6); SPCE-W (W = 1) keeps
    the lower threshold theta and recovers the clusters."""
    from ensclust.testing import planted_ensemble
    members, y = planted_ensemble(n=90, c=3, m=20, random_state=0)
    for name in ("spce", "spce-fixw"):
        method = get_method(name).fit(members, 3)
        assert method.diagnostics_["n_components"] > 3 and ari(method.labels_, y) < 0.9
    assert ari(get_method("spce-w").fit_predict(members, 3), y) >= 0.9


@pytest.mark.parametrize("fallback", ["kmeans-y", "spectral-s"])
def test_fallback_returns_c_clusters(fallback):
    method = get_method("spce", theta=0.5, fallback=fallback)
    out = method.fit_predict(TINY, 2, random_state=0)
    assert len(np.unique(out)) == 2
    assert method.diagnostics_["fallback_needed"] and method.diagnostics_["fallback_applied"]
    check_method_properties("spce", {"theta": 0.1, "fallback": fallback})


def test_deterministic_and_invariant():
    P, y = _noisy_ensemble(11)
    a = get_method("spce", theta=0.2).fit_predict(P, 3)
    b = get_method("spce", theta=0.2).fit_predict(P, 3)
    assert np.array_equal(a, b)
    perm = np.random.default_rng(0).permutation(P.shape[1])
    c = get_method("spce", theta=0.2).fit_predict(P[:, perm] + 5, 3)
    assert same_partition(a, c) and ari(a, y) == 1.0


def test_parameter_validation():
    from ensclust.errors import UserError
    with pytest.raises(UserError):
        get_method("spce", schedule="0.9,0.8", inner_caps="5")
    with pytest.raises(UserError):
        get_method("spce", theta=1.0)
    with pytest.raises(UserError):
        get_method("spce", schedule="0.9,1.2", inner_caps="5,5")
    assert get_method("spce", schedule="0.9,0.5", inner_caps="3,10").fit_predict(TINY, 2).shape == (8,)


def test_embedding_indicator_more_components_than_c():
    comp = np.array([0, 0, 1, 2, 2, 2])
    from ensclust.methods._spce_spectrum import _indicator_embedding
    emb = _indicator_embedding(comp, np.bincount(comp), 2, 6)
    assert isinstance(emb, Embedding)
    assert np.allclose(emb.weight, [0.5, 0.5, 0, 1 / 3, 1 / 3, 1 / 3])


# ----------------------------------------------------------------------------------------------------
# Fast paths (issue #7 speed work) against the straightforward computations they replace: bit-for-bit.
def test_pair_table_fast_paths_match_generic():
    from ensclust.methods import _spce_pairs
    rng = np.random.default_rng(12)
    for n, m, k in ((40, 7, 3), (120, 20, 6), (75, 30, 300)):   # k = 300: labels beyond one byte
        P = rng.integers(0, k, (n, m))
        P[:, 0] = np.repeat(np.arange(4), n // 4 + 1)[:n]
        P = np.column_stack([np.unique(col, return_inverse=True)[1] for col in P.T])
        dense_counts = _spce_pairs._upper_pairs_dense(P)
        for entries in (n * 7, n * 40, 20_000_000):   # row blocks of 7, of 40 (uneven), of ceil(n/8)
            sparse_counts = _spce_pairs._upper_pairs(P, max_block_entries=entries)
            for x, y in zip(sparse_counts, dense_counts, strict=True):
                assert x.dtype == y.dtype and np.array_equal(x, y)
            mask_rows, mask_cols, masks = _spce_pairs._upper_pairs(P, max_block_entries=entries, bit_masks=True)
            assert np.array_equal(mask_rows, dense_counts[0]) and np.array_equal(mask_cols, dense_counts[1])
            assert masks.dtype == np.int64
            assert np.array_equal(masks, _spce_pairs._packed_keys(P, dense_counts[0], dense_counts[1]))
        rows, cols, counts = sparse_counts
        free = counts < m
        fast = _spce_pairs._agreement_patterns(P, rows[free], cols[free])
        generic = _spce_pairs._agreement_patterns(P, rows[free], cols[free], packed=False)
        assert np.array_equal(fast[0], generic[0]) and fast[0].dtype == generic[0].dtype
        assert np.array_equal(fast[1], generic[1])
        if m <= _spce_pairs.DENSE_KEYS_MAX_M:   # pairs and bit masks from one weighted product
            key_rows, key_cols, keys = _spce_pairs._upper_pair_keys_dense(P)
            assert np.array_equal(key_rows, rows) and np.array_equal(key_cols, cols)
            assert np.array_equal(keys, _spce_pairs._packed_keys(P, rows, cols))
            assert np.array_equal(np.bitwise_count(keys.astype(np.uint64)), counts)
            with_keys = _spce_pairs._agreement_patterns(P, rows[free], cols[free], keys=keys[free])
            assert np.array_equal(with_keys[0], generic[0]) and np.array_equal(with_keys[1], generic[1])
        else:
            with pytest.raises(ValueError):
                _spce_pairs._upper_pair_keys_dense(P)


def test_pair_table_routes_agree(monkeypatch):
    """build_pair_table through the weighted dense product (m <= 24) equals the counts + packed-keys route."""
    from ensclust.methods import _spce_pairs
    rng = np.random.default_rng(20)
    for n, m, k in ((50, 5, 3), (90, 24, 6), (64, 12, 2)):
        P = rng.integers(0, k, (n, m))
        P[:8] = 0
        P = np.column_stack([np.unique(col, return_inverse=True)[1] for col in P.T])
        fast = build_pair_table(P)
        routes = []
        for limits in ({"DENSE_KEYS_MAX_M": 0},                                # dense counts + packed keys
                       {"DENSE_COUNTS_LIMIT": 0},                              # sparse bit-mask product
                       {"DENSE_COUNTS_LIMIT": 0, "SPARSE_KEYS_MAX_M": 0}):     # sparse counts + packed keys
            for name, value in limits.items():
                monkeypatch.setattr(_spce_pairs, name, value)
            routes.append(build_pair_table(P))
            monkeypatch.undo()
        for generic in routes:
            for name in ("free_rows", "free_cols", "one_rows", "one_cols", "pattern", "patterns", "all_cols",
                         "all_indptr", "free_pos", "all_rows"):
                a, b = getattr(fast, name), getattr(generic, name)
                assert a.dtype == b.dtype and np.array_equal(a, b), name


@pytest.mark.parametrize("kernel", [True, False])
def test_table_components_match_scipy(kernel, monkeypatch):
    from scipy import sparse

    from ensclust.methods import _spce_pairs
    if not kernel:   # the public-function fallback
        monkeypatch.setattr(_spce_pairs, "_connected_components_undirected", None)
    rng = np.random.default_rng(13)
    P = rng.integers(0, 5, (60, 6))
    P[:20] = 0   # a block of Omega-ones
    table = build_pair_table(P)
    for density in (0.0, 0.01, 0.05, 0.3, 1.0):
        S_free = rng.uniform(0.1, 1, table.n_free) * (rng.random(table.n_free) < density)
        k, comp = table.components(S_free)
        ref_k, ref = connected_components(upper_matrix(table, S_free), directed=False)
        assert k == ref_k and np.array_equal(comp, ref)
        assert table.free_nonzero == np.count_nonzero(S_free)
        assert np.array_equal(table.free_nonzero_index, np.flatnonzero(S_free))
        assert np.array_equal(table.free_nonzero_sorted, np.flatnonzero(S_free))
        direct, merged = upper_matrix(table, S_free, layout=table.kept_layout), upper_matrix(table, S_free)
        for name in ("indptr", "indices", "data"):
            x, y = getattr(direct, name), getattr(merged, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        k2, comp2 = table.components(S_free, rng.permutation(np.flatnonzero(S_free)))   # any order
        assert k2 == k and np.array_equal(comp2, comp)
        merged_table = build_pair_table(P)   # kept positions merged from the sorted nonzero pairs
        increasing = np.flatnonzero(S_free)
        k3, comp3 = merged_table.components(S_free, rng.permutation(increasing), lambda: increasing)  # noqa: B023
        assert k3 == k and np.array_equal(comp3, comp)
        assert np.array_equal(merged_table.free_nonzero_sorted, np.flatnonzero(S_free))
        for x, y in zip(merged_table.kept_layout, table.kept_layout, strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y)
    assert sparse.issparse(upper_matrix(table, S_free))


def test_pruned_s_update_is_bitwise_full_update():
    from ensclust.methods.spce import _StageTerms
    rng = np.random.default_rng(14)
    n_pairs, n_patterns, m = 5000, 60, 9
    pattern = rng.integers(0, n_patterns, n_pairs).astype(np.int32)
    for _ in range(20):
        alpha = rng.dirichlet(np.ones(m))
        inv_alpha = 1 / alpha
        g = rng.integers(0, 2, (n_patterns, m)).astype(float) @ inv_alpha
        a = float(inv_alpha.sum())
        W = np.minimum(rng.uniform(0.05, 1.5, n_pairs), 1.0)
        E = rng.exponential(0.01, n_pairs) * (rng.random(n_pairs) < 0.7)
        gamma = (m * rng.choice([0.0, 0.1, 0.3, 0.5, 0.8])) ** 2
        rho = float(2.0 ** rng.integers(-20, 8))
        full = _StageTerms(W, gamma).s_update(g[pattern], E, a, rho).copy()
        terms = _StageTerms(W, gamma)
        assert terms.can_prune
        pruned, nonzero = terms.s_update_pruned(g, pattern, E, a, rho)
        assert np.array_equal(full.view(np.int64), pruned.view(np.int64))   # same bits, signed zeros too
        assert np.array_equal(np.sort(nonzero), np.flatnonzero(full))
    with np.errstate(divide="ignore"):   # W = 0 (fixw coassoc mode) keeps the full update
        assert not _StageTerms(np.array([0.0, 1.0]), 1.0).can_prune


def test_pruned_s_update_reused_plan_is_bitwise_full_update():
    """Repeated pruned updates on one stage (the plan of gathers reused while the survivors and E stay, the
    previous support reset to 0) equal a fresh full update at every call, including after E changes and
    when the surviving patterns grow, shrink or vanish."""
    from ensclust.methods.spce import _StageTerms
    rng = np.random.default_rng(16)
    n_pairs, n_patterns, m = 3000, 40, 8
    pattern = rng.integers(0, n_patterns, n_pairs).astype(np.int32)
    patterns = rng.integers(0, 2, (n_patterns, m)).astype(float)
    W = np.minimum(rng.uniform(0.05, 1.5, n_pairs), 1.0)
    gamma = (m * 0.4) ** 2
    terms = _StageTerms(W, gamma)
    E = rng.exponential(0.01, n_pairs)
    alpha = np.full(m, 1 / m)
    reused = same_nonzero = 0
    previous = None
    for step in range(40):
        if step % 10 == 9:   # a new Y: new distances
            E = rng.exponential(0.01, n_pairs) * (rng.random(n_pairs) < 0.7)
        if step % 4 == 3:    # a new alpha: usually other survivors
            alpha = rng.dirichlet(np.ones(m) * rng.choice([0.2, 1.0, 50.0]))
        inv_alpha = 1 / alpha
        g = patterns @ inv_alpha
        a = float(inv_alpha.sum())
        rho = float(2.0 ** rng.integers(-10, 4)) if step % 3 else 0.0
        plan_before = terms._plan
        pruned, nonzero = terms.s_update_pruned(g, pattern, E, a, rho)
        reused += terms._plan is plan_before
        same_nonzero += nonzero is previous   # an unchanged nonzero set comes back as the same array
        previous = nonzero
        full = _StageTerms(W, gamma).s_update(g[pattern], E, a, rho)
        assert np.array_equal(full.view(np.int64), pruned.view(np.int64)), step
        ws = terms.weighted_s(pruned)   # rewritten on the supports only after the first call
        assert np.array_equal(ws.view(np.int64), (terms.W2 * full).view(np.int64)), step
        assert np.array_equal(np.sort(nonzero), np.flatnonzero(full)), step
    big = np.full(m, 1e-9)   # every pattern below the threshold: S = 0 everywhere after a nonzero S
    pruned, nonzero = terms.s_update_pruned(patterns @ big, pattern, E, float(big.sum()), 1.0)
    assert not np.any(pruned) and nonzero.shape[0] == 0
    assert reused >= 10 and same_nonzero >= 5   # the reuse paths were exercised
    # a next stage taking over this stage's buffers (its S holds values of the last call) starts clean
    pruned, _ = terms.s_update_pruned(g, pattern, E, a, 0.5)
    W_next = np.minimum(rng.uniform(0.05, 1.5, n_pairs), 1.0)
    for prune in (True, False):
        next_terms = _StageTerms(W_next, gamma, previous=terms)
        assert next_terms._S is terms._S and next_terms.work is terms.work
        full = _StageTerms(W_next, gamma).s_update(g[pattern], E, a, 0.5).copy()
        got = (next_terms.s_update_pruned(g, pattern, E, a, 0.5)[0] if prune
               else next_terms.s_update(g[pattern], E, a, 0.5))
        assert np.array_equal(full.view(np.int64), got.view(np.int64))
        terms = next_terms


def test_table_components_reuse_and_lazy_indicator_embedding():
    """components() answers a repeated nonzero set from its last call and recomputes on any change; the
    indicator Y of a spectrum with more than c components is built on first read, equal to the eager one."""
    from ensclust.methods._spce_spectrum import _indicator_embedding, indicator_spectrum
    rng = np.random.default_rng(17)
    P = rng.integers(0, 5, (60, 6))
    table = build_pair_table(P)
    previous = None
    for step in range(12):
        if step % 3 == 0 or previous is None:
            S_free = rng.uniform(0.1, 1, table.n_free) * (rng.random(table.n_free) < rng.choice([0.005, 0.02, 0.1]))
        nonzero = np.flatnonzero(S_free)
        k, comp = table.components(S_free, nonzero.copy())
        ref_k, ref = connected_components(upper_matrix(table, S_free), directed=False)
        assert k == ref_k and np.array_equal(comp, ref)
        assert table.free_nonzero == nonzero.shape[0] and np.array_equal(table.free_nonzero_index, nonzero)
        assert np.array_equal(table.free_nonzero_sorted, nonzero)   # also when the last answer is reused
        rescaled = S_free * 0.5   # same nonzero set, other values: the reused layout takes the new values
        table.components(rescaled, nonzero)
        direct, merged = upper_matrix(table, rescaled, layout=table.kept_layout), upper_matrix(table, rescaled)
        assert np.array_equal(direct.data, merged.data) and np.array_equal(direct.indices, merged.indices)
        table.components(S_free, nonzero)
        if step % 3:
            assert comp is previous   # same nonzero set: the last answer
        previous = comp
        for c in (1, 2, max(1, k - 1)):
            if k > c:
                spec = indicator_spectrum(comp, k, c)
                eager = _indicator_embedding(comp, np.bincount(comp, minlength=k), c, comp.shape[0])
                assert np.array_equal(spec.embedding.weight, eager.weight)
                assert np.array_equal(spec.embedding.comp, eager.comp) and spec.embedding.extra.shape == (60, 0)
                assert spec.embedding is spec.embedding and np.array_equal(spec.values, np.zeros(c + 1))


def test_lobpcg_fit_with_warm_start():
    """n > dense_limit: the warm start from the members' indicators is built and LOBPCG runs in the fit
    (n <= dense_limit never reaches LOBPCG, so the fit skips that warm start)."""
    P, y = _noisy_ensemble(5, n=90, noise=0.1)
    method = get_method("spce", theta=0.1, dense_limit=20)
    labels = method.fit_predict(P, 3)
    assert method.diagnostics_["lobpcg_calls"] > 0 and ari(y, labels) > 0.9
    assert get_method("spce", theta=0.1).fit(P, 3).diagnostics_["lobpcg_calls"] == 0


@pytest.mark.parametrize("variant", ["spce", "spce-w", "spce-fixw"])
def test_fast_fit_is_bitwise_full_update_fit(variant, monkeypatch):
    """The whole fit with the fast paths (pruned S-update with reused plans, components reused for a
    repeated nonzero set) equals the fit with the full update on every free pair and fresh components at
    every iteration: same labels, rho path, branches, objective values and S (bit for bit), over several
    ensembles and thetas."""
    from ensclust.methods import _spce_pairs
    from ensclust.methods import spce as spce_module
    for seed, theta in ((0, 0.0), (1, 0.1), (2, 0.3), (3, 0.5), (4, 0.7)):
        P, _ = _noisy_ensemble(20 + seed, n=60, noise=0.35)
        fits = []
        for prune in (True, False):
            monkeypatch.setattr(spce_module._StageTerms, "prune", prune)
            monkeypatch.setattr(_spce_pairs.PairTable, "reuse_components", prune)
            method = get_method(variant, theta=theta)
            labels = method.fit_predict(P, 3)
            fits.append((labels, method.diagnostics_, method.consensus_matrix_))
        (la, da, Sa), (lb, db, Sb) = fits
        assert np.array_equal(la, lb)
        for key in ("rho", "branch", "objective", "objective_eq6", "n_components_trace", "alpha"):
            assert da[key] == db[key], (variant, theta, key)
        assert (Sa != Sb).nnz == 0


def test_dense_block_laplacian_eigenpairs_bitwise():
    """The dense Laplacian written directly gives the same eigenpairs, bit for bit, as densifying the sparse
    D - S (zeros must stay +0.0: their sign steers LAPACK's reflectors)."""
    import scipy.linalg
    from scipy import sparse

    from ensclust.methods._spce_spectrum import _block_laplacian, _component_eigenpairs, _dense_laplacian
    rng = np.random.default_rng(15)
    n = 80
    A = np.triu(rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < 0.2), 1)
    A[np.arange(n - 1), np.arange(1, n)] = 0.5   # a path: one connected component
    S_sym = sparse.csr_matrix(A + A.T)
    idx = np.arange(10, 70)
    for block in (None, idx):
        vals, vecs, _ = _component_eigenpairs(S_sym, block, 4, None, 0, 2000, 1e-8, 300)
        L, _ = _block_laplacian(S_sym, block)
        sub = S_sym if block is None else S_sym[block][:, block]
        assert np.array_equal(_dense_laplacian(sub).view(np.int64), L.toarray().view(np.int64))   # +0.0 zeros
        ref_vals, ref_vecs = scipy.linalg.eigh(L.toarray(), subset_by_index=[1, 4])
        assert np.array_equal(vals, ref_vals) and np.array_equal(vecs, ref_vecs)


def test_group_minimum_with_empty_groups():
    from ensclust.methods.spce import _group_minimum
    rng = np.random.default_rng(18)
    sizes = np.array([0, 3, 0, 0, 1, 5, 0])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    values = rng.uniform(0, 10, sizes.sum())
    expected = [values[a:b].min() if b > a else np.inf for a, b in zip(starts[:-1], starts[1:], strict=True)]
    assert np.array_equal(_group_minimum(values, starts), expected)
    assert np.array_equal(_group_minimum(np.zeros(0), np.zeros(3, dtype=np.int64)), [np.inf, np.inf])


def test_pair_distances_subset_is_bitwise_full():
    """Distances computed for a row-ordered subset of the pairs (Gram path with several row blocks, and the
    column path) equal the entries of the distances of all pairs, bit for bit; the pruned S-update fed
    with them equals the one fed with the full array."""
    from ensclust.methods.spce import PairDistances, _StageTerms
    rng = np.random.default_rng(19)
    n = 300
    rows, cols = np.triu_indices(n, 1)
    rows, cols = rows.astype(np.int32), cols.astype(np.int32)
    comp = rng.integers(0, 3, n)
    work = {}
    for r in (3, 8):
        Y = Embedding(comp=comp, weight=np.where(comp == 0, 1.0 / np.sum(comp == 0), 0.0),
                      extra=rng.standard_normal((n, r)) / np.sqrt(n))
        full = Y.sqdist(rows, cols, block_entries=n * 37)
        subset = np.flatnonzero(rng.random(rows.shape[0]) < 0.2)
        part = Y.sqdist(rows[subset], cols[subset], block_entries=n * 37)
        assert np.array_equal(part.view(np.int64), full[subset].view(np.int64))
        if r > 4:   # the Gram path against its formula, block by block with a two-array fancy index
            step = max(1, (n * 37) // n)
            ref = Y.weight[rows] + Y.weight[cols]
            ref[comp[rows] == comp[cols]] = 0.0
            sq = np.einsum("ij,ij->i", Y.extra, Y.extra)
            ref += sq[rows] + sq[cols]
            VT = np.ascontiguousarray(Y.extra.T)
            for start in range(0, n, step):
                sel = (rows >= start) & (rows < start + step)
                ref[sel] -= 2.0 * (Y.extra[start:start + step] @ VT)[rows[sel] - start, cols[sel]]
            ref = np.maximum(ref, 0.0)
            assert np.array_equal(full.view(np.int64), ref.view(np.int64))
        for _ in range(2):   # Gram blocks written into a kept buffer (reused across calls): the same bits
            kept = Y.sqdist(rows[subset], cols[subset], block_entries=n * 37, work=work)
            assert np.array_equal(kept.view(np.int64), part.view(np.int64))
    Y = Embedding(comp=comp, weight=np.zeros(n), extra=rng.standard_normal((n, 7)) / np.sqrt(n))
    full = Y.sqdist(rows, cols)
    pattern = rng.integers(0, 30, rows.shape[0]).astype(np.int32)
    patterns = rng.integers(0, 2, (30, 6)).astype(float)
    W = np.minimum(rng.uniform(0.05, 1.5, rows.shape[0]), 1.0)
    lazy_terms, full_terms = _StageTerms(W, 3.0), _StageTerms(W, 3.0)
    lazy = PairDistances(Y, rows, cols)
    for step in range(6):
        inv_alpha = 1 / rng.dirichlet(np.ones(6) * 0.5)
        g, a, rho = patterns @ inv_alpha, float(inv_alpha.sum()), 2.0 ** (step - 3)
        S_lazy, nz_lazy = lazy_terms.s_update_pruned(g, pattern, lazy, a, rho)
        S_lazy = S_lazy.copy()
        S_full, nz_full = full_terms.s_update_pruned(g, pattern, full, a, rho)
        assert np.array_equal(S_lazy.view(np.int64), S_full.view(np.int64)) and np.array_equal(nz_lazy, nz_full)
        assert np.array_equal(lazy_terms.sorted_nonzero(), np.sort(nz_lazy))   # read off the sorted visits
        assert full_terms.sorted_nonzero() is None   # distances given as an array: no sorted visits known
    assert np.array_equal(lazy.full(), full)


def test_fast_fit_is_bitwise_full_update_fit_many_clusters(monkeypatch):
    """As test_fast_fit_is_bitwise_full_update_fit with c = 8 (Y has more than 4 eigenvector columns, the
    Gram-block distances) and LOBPCG on the large components (dense_limit below n)."""
    from ensclust.methods import _spce_pairs
    from ensclust.methods import spce as spce_module
    P, _ = _noisy_ensemble(31, n=160, c=8, noise=0.3)
    for theta in (0.1, 0.3):
        fits = []
        for fast in (True, False):
            monkeypatch.setattr(spce_module._StageTerms, "prune", fast)
            monkeypatch.setattr(_spce_pairs.PairTable, "reuse_components", fast)
            method = get_method("spce", theta=theta, dense_limit=60)
            labels = method.fit_predict(P, 8)
            fits.append((labels, method.diagnostics_, method.consensus_matrix_))
        (la, da, Sa), (lb, db, Sb) = fits
        assert np.array_equal(la, lb)
        for key in ("rho", "branch", "objective", "objective_eq6", "n_components_trace", "alpha"):
            assert da[key] == db[key], (theta, key)
        assert (Sa != Sb).nnz == 0 and np.array_equal(Sa.data, Sb.data)
        if theta == 0.1:   # the paths named above were taken
            assert da["lobpcg_calls"] > 0 and min(da["n_components_trace"]) < 8 - 4


@pytest.mark.parametrize("variant", ["spce", "spce-fixw"])
def test_initial_weights_by_pattern_is_bitwise_formula(variant):
    """W of eq. (13) built per pattern where S = 0 and by the formula elsewhere equals the formula on every
    pair, bit for bit (sparse S, dense S above half the pairs, and S = 0 everywhere)."""
    rng = np.random.default_rng(20)
    method = get_method(variant, theta=0.1)
    n_pairs, n_patterns, m = 4000, 50, 10
    pattern = rng.integers(0, n_patterns, n_pairs).astype(np.int32)
    inv_alpha = 1 / rng.dirichlet(np.ones(m))
    g = rng.integers(0, 2, (n_patterns, m)).astype(float) @ inv_alpha
    a = float(inv_alpha.sum())
    for density in (0.0, 0.05, 0.4, 0.9, 1.0):
        S = np.where(rng.random(n_pairs) < density, rng.uniform(0, 1, n_pairs), 0.0)
        S[rng.random(n_pairs) < 0.02] = 1.0
        for lam in (0.5, 30.0, 1e4):
            G = g[pattern]
            expected = self_paced_weights(a * S * S - 2.0 * S * G + G, lam)
            W = method._initial_weights(S, g, pattern, a, lam, None)
            assert np.array_equal(W.view(np.int64), expected.view(np.int64)), (density, lam)
            junk = rng.uniform(-5, 5, n_pairs)   # a recycled buffer (the previous stage's W)
            W = method._initial_weights(S, g, pattern, a, lam, None, out=junk)
            assert np.array_equal(W.view(np.int64), expected.view(np.int64)), (density, lam)
    B = np.array([-1e-17, 0.0, 1e-300, 0.25, 4.0])
    assert np.array_equal(self_paced_weights(B, 1.0), [1.0, 1.0, 1.0, 1.0, 0.125])


@pytest.mark.parametrize("fill", [0.02, 0.6])
def test_lobpcg_operator_is_the_block_laplacian(fill, monkeypatch):
    """The operator handed to LOBPCG equals D - S of the block, bit for bit: sparse below the fill
    threshold, densified above it (written directly, not via the sparse difference), with the decision
    taken on the nnz the sparse D - S would have."""
    from scipy import sparse

    from ensclust.methods import _spce_spectrum
    from ensclust.methods._spce_spectrum import DENSE_OPERATOR_FILL, _block_laplacian, _component_eigenpairs
    rng = np.random.default_rng(21)
    n = 120
    A = np.triu(rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < fill), 1)
    A[np.arange(n - 1), np.arange(1, n)] = 0.25   # one connected component
    S_sym = sparse.csr_matrix(A + A.T)
    seen = []
    real_lobpcg = _spce_spectrum.lobpcg

    def spy(L, X, **kwargs):
        seen.append(L)
        return real_lobpcg(L, X, **kwargs)

    monkeypatch.setattr(_spce_spectrum, "lobpcg", spy)
    idx = np.arange(5, n)
    for block in (None, idx):
        _component_eigenpairs(S_sym, block, 3, None, 0, 10, 1e-8, 50)
        ref, _ = _block_laplacian(S_sym, block)
        m = ref.shape[0]
        operator = seen[-1]
        if ref.nnz > DENSE_OPERATOR_FILL * m * m:
            assert fill > 0.3 and isinstance(operator, np.ndarray)
            assert np.array_equal(operator.view(np.int64), ref.toarray().view(np.int64))   # +0.0 zeros too
        else:
            assert fill < 0.3 and sparse.issparse(operator)
            assert np.array_equal(operator.toarray().view(np.int64), ref.toarray().view(np.int64))
            assert operator.nnz == ref.nnz

"""SPCE test oracle (specs/spce.md section 8) and agreement with a literal dense reference (spec 3.6)."""

import numpy as np
import pytest
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ensclust.methods import get_method
from ensclust.methods._spce_pairs import build_pair_table
from ensclust.methods._spce_reference import s_update
from ensclust.methods._spce_spectrum import Embedding, smallest_eigenpairs
from ensclust.methods.spce import (
    alpha_update,
    expand_blocks,
    lambda_schedule,
    member_losses,
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
    S = upper_matrix(table, S_free, np.flatnonzero(S_free)).toarray()
    S = S + S.T + np.eye(n)
    Wd = np.ones((n, n))
    Wd[table.free_rows, table.free_cols] = W
    Wd[table.free_cols, table.free_rows] = W
    dense = [np.sum(((S - conn(P[:, i])) * Wd) ** 2) for i in range(m)]
    assert np.allclose(member_losses(table, W * W, S_free), dense)
    nonzero = np.flatnonzero(S_free)   # per-pattern sums over the nonzero pairs only: the same bits
    assert np.array_equal(member_losses(table, W * W, S_free, nonzero=nonzero), member_losses(table, W * W, S_free))


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


def test_lobpcg_component_matches_dense_eigh():
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
        S = expand_blocks(method.consensus_matrix_, method.microcluster_assignment_).toarray()
        assert np.allclose(S, ref_S, atol=1e-9)
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
# The fast path's building blocks against the plain computations (bit for bit); the whole fit is tested
# against the dense reference in test_spce_reference.py.
def test_pair_table_bit_masks_match_member_by_member():
    """The pair table from the co-association product with bit masks (m <= 62) equals the one from counts and
    member-by-member agreement patterns (the route of wider ensembles), whatever the row blocking."""
    from ensclust.methods import _spce_pairs
    rng = np.random.default_rng(12)
    for n, m, k in ((40, 7, 3), (120, 20, 6), (75, 30, 300)):   # k = 300: labels beyond one byte
        P = rng.integers(0, k, (n, m))
        P[:, 0] = np.repeat(np.arange(4), n // 4 + 1)[:n]
        P = np.column_stack([np.unique(col, return_inverse=True)[1] for col in P.T])
        rows, cols, counts = _spce_pairs._upper_pairs(P)
        for entries in (n * 7, n * 40, 20_000_000):   # row blocks of 7, of 40 (uneven), of ceil(n/8)
            blocked = _spce_pairs._upper_pairs(P, max_block_entries=entries)
            for x, y in zip(blocked, (rows, cols, counts), strict=True):
                assert x.dtype == y.dtype and np.array_equal(x, y)
            mask_rows, mask_cols, masks = _spce_pairs._upper_pairs(P, max_block_entries=entries, bit_masks=True)
            assert np.array_equal(mask_rows, rows) and np.array_equal(mask_cols, cols)
            assert np.array_equal(np.bitwise_count(masks.astype(np.uint64)), counts)
        free = counts < m
        by_keys = _spce_pairs._agreement_patterns(P, rows[free], cols[free], keys=masks[free])
        generic = _spce_pairs._agreement_patterns(P, rows[free], cols[free])
        assert np.array_equal(by_keys[0], generic[0]) and by_keys[0].dtype == generic[0].dtype
        assert np.array_equal(by_keys[1], generic[1])


def test_stage_s_update_is_bitwise_plain_update():
    """The fit's S-update (stage terms precomputed, written into the workspace buffers) equals the plain
    update of eq. (16)/(17), bit for bit, over repeated calls of one stage and across stages."""
    from ensclust.methods._spce_pairs import build_pair_table
    from ensclust.methods._spce_spectrum import Embedding
    from ensclust.methods.spce import _Stage, _Workspace
    rng = np.random.default_rng(14)
    n, m = 70, 9
    P = np.column_stack([rng.integers(0, 3, n) for _ in range(m)])
    table = build_pair_table(P)
    work = _Workspace(rng.uniform(0, 1, table.n_free))
    for stage_index in range(4):
        W = np.minimum(rng.uniform(0.05, 1.5, table.n_free), 1.0)
        gamma = (m * [0.0, 0.1, 0.3, 0.6][stage_index]) ** 2
        stage = _Stage(table, W, gamma)
        for _ in range(6):
            comp = rng.integers(0, 3, n)
            Y = Embedding(comp=comp, weight=np.where(comp == 0, 1.0 / max(1, np.sum(comp == 0)), 0.0),
                          extra=rng.standard_normal((n, int(rng.choice([0, 2, 6])))) / np.sqrt(n))
            alpha = rng.dirichlet(np.ones(m) * rng.choice([0.2, 1.0, 50.0]))
            inv_alpha = 1 / alpha
            g, a = table.patterns_f @ inv_alpha, float(inv_alpha.sum())
            rho = float(2.0 ** rng.integers(-10, 6)) if rng.random() < 0.8 else 0.0
            nonzero = stage.s_update(work, table, Y, g, a, rho)
            E = Y.sqdist(table.free_rows, table.free_cols)
            plain = s_update(g[table.pattern], E, W, a, rho, gamma)
            assert np.array_equal(work.S.view(np.int64), plain.view(np.int64))   # signed zeros too
            assert np.array_equal(nonzero, np.flatnonzero(plain))
            assert np.array_equal(work.ws.view(np.int64), (stage.W2 * plain).view(np.int64))


def test_pair_distances_subset_is_bitwise_full():
    """Distances computed for a row-ordered subset of the pairs (Gram path with several row blocks, and the
    column path) equal the entries of the distances of all pairs, bit for bit."""
    rng = np.random.default_rng(19)
    n = 300
    rows, cols = np.triu_indices(n, 1)
    rows, cols = rows.astype(np.int32), cols.astype(np.int32)
    comp = rng.integers(0, 3, n)
    for r in (3, 8):
        Y = Embedding(comp=comp, weight=np.where(comp == 0, 1.0 / np.sum(comp == 0), 0.0),
                      extra=rng.standard_normal((n, r)) / np.sqrt(n))
        full = Y.sqdist(rows, cols, block_entries=n * 37)
        subset = np.flatnonzero(rng.random(rows.shape[0]) < 0.2)
        part = Y.sqdist(rows[subset], cols[subset], block_entries=n * 37)
        assert np.array_equal(part.view(np.int64), full[subset].view(np.int64))
        dense = np.sum((np.where((comp == 0)[:, None], Y.weight[:, None] ** 0.5, 0.0)[rows]
                        - np.where((comp == 0)[:, None], Y.weight[:, None] ** 0.5, 0.0)[cols]) ** 2, axis=1)
        dense += np.sum((Y.extra[rows] - Y.extra[cols]) ** 2, axis=1)
        assert np.allclose(full, dense, atol=1e-12)


def test_lobpcg_fit_with_warm_start():
    """n > dense_limit: the warm start from the members' indicators is built and LOBPCG runs in the fit
    (n <= dense_limit never reaches LOBPCG, so the fit skips that warm start)."""
    P, y = _noisy_ensemble(5, n=90, noise=0.1)
    method = get_method("spce", theta=0.1, dense_limit=20)
    labels = method.fit_predict(P, 3)
    assert method.diagnostics_["lobpcg_calls"] > 0 and ari(y, labels) > 0.9
    assert get_method("spce", theta=0.1).fit(P, 3).diagnostics_["lobpcg_calls"] == 0


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
        sizes = rng.integers(1, 4, sub.shape[0]).astype(float)   # rows standing for groups of points
        Lw, deg = _block_laplacian(S_sym, block, sizes)
        assert np.array_equal(_dense_laplacian(sub, deg, np.sqrt(sizes)).view(np.int64),
                              Lw.toarray().view(np.int64))
        ref_vals, ref_vecs = scipy.linalg.eigh(L.toarray(), subset_by_index=[1, 4])
        assert np.array_equal(vals, ref_vals) and np.array_equal(vecs, ref_vecs)


def test_lowrank_laplacian_matches_sparse_coassociation():
    """The factored operator of the initial S = S_hat = B B^T / m (eq. 2) gives the product of the sparse
    L = D - S_hat of the pair table, on the whole graph and on a component's rows."""
    from scipy import sparse

    from ensclust.core.labels import one_hot
    from ensclust.methods._spce_pairs import build_pair_table
    from ensclust.methods._spce_spectrum import _lowrank_laplacian
    from ensclust.methods.spce import upper_matrix
    P, _ = _noisy_ensemble(3, n=90, noise=0.3)
    n, m = P.shape
    table = build_pair_table(P)
    S_upper = upper_matrix(table, table.pattern_counts()[table.pattern] / m, np.arange(table.n_free))
    S_sym = (S_upper + S_upper.T).tocsr()
    B = one_hot(P)
    assert np.allclose(S_sym.toarray() + np.eye(n), (B @ B.T).toarray() / m, atol=1e-15)
    X = np.random.default_rng(0).standard_normal((n, 4))
    for idx in (None, np.arange(10, 70)):
        sub = S_sym if idx is None else S_sym[idx][:, idx]
        deg = np.asarray(sub.sum(axis=1)).ravel()
        F = B if idx is None else B[idx]
        Xs = X if idx is None else X[idx]
        expected = (sparse.diags(deg) - sub) @ Xs
        ones = np.ones(F.shape[0])
        assert np.allclose(_lowrank_laplacian(F, deg, 1.0 / m, ones) @ Xs, expected, rtol=1e-12, atol=1e-12)
        assert np.allclose(_lowrank_laplacian(F, deg, 1.0 / m, ones) @ Xs[:, 0], expected[:, 0], rtol=1e-12,
                           atol=1e-12)
        # rows standing for groups of points: the group matrix diag(d) - N^1/2 S N^1/2 with d = S sizes
        sizes = np.random.default_rng(1).integers(1, 5, F.shape[0]).astype(float)
        dw = sub @ sizes
        sq = sparse.diags(np.sqrt(sizes))
        expected = (sparse.diags(dw) - sq @ sub @ sq) @ Xs
        assert np.allclose(_lowrank_laplacian(F, dw, 1.0 / m, sizes) @ Xs, expected, rtol=1e-12, atol=1e-12)


def _expand_groups(S_groups, sizes):
    """The point matrix of a group matrix: S[a[p], a[q]] between groups, 1 inside a group, 0 diagonal."""
    a = np.repeat(np.arange(sizes.shape[0]), sizes.astype(int))
    S = S_groups[np.ix_(a, a)]
    S[a[:, None] == a[None, :]] = 1.0
    np.fill_diagonal(S, 0.0)
    return S, a


@pytest.mark.parametrize("rank_test", ["eigen", "dense"])
def test_group_spectrum_matches_point_spectrum(rank_test):
    """Rows standing for groups of points: the eigenvalues and the pair distances of the group spectrum are
    those of the expanded point Laplacian, including within-group eigenpairs (group 0 hangs on weak edges, so
    its two within-group eigenvectors, eigenvalue 3 + d_0, are among the c smallest and enter Y)."""
    rng = np.random.default_rng(21)
    s, c = 30, 5
    sizes = rng.integers(1, 4, s).astype(float)
    sizes[0] = 3.0
    A = np.triu(rng.uniform(0.5, 1.0, (s, s)) * (rng.random((s, s)) < 0.6), 1)
    A[0, 1:] = 1e-3 * (A[0, 1:] > 0) + 1e-3 * (A[0, 1:] == 0) * (np.arange(1, s) == 1)
    S_groups = A + A.T
    S_points, a = _expand_groups(S_groups, sizes)
    L = np.diag(S_points.sum(axis=1)) - S_points
    vals, vecs = np.linalg.eigh(L)
    assert np.sum(np.isclose(vals[:c], 3.0 + S_groups[0] @ sizes)) == 2       # the setup: within pairs in Y
    spec = smallest_eigenpairs(sparse.csr_matrix(np.triu(S_groups, 1)), c, rank_test=rank_test, sizes=sizes)
    assert np.allclose(spec.values, vals[:c + 1], atol=1e-9)
    assert spec.embedding.within is not None and spec.embedding.within[0] == pytest.approx(2.0 / 3.0)
    Y = vecs[:, :c]
    rows, cols = np.triu_indices(s, 1)
    E_points = np.sum((Y[:, None, :] - Y[None, :, :]) ** 2, axis=2)
    first = np.searchsorted(a, np.arange(s))                                   # one point of each group
    assert np.allclose(spec.embedding.sqdist(rows, cols), E_points[first[rows], first[cols]], atol=1e-9)
    assert spec.trace == pytest.approx(np.sum(vals[:c]), abs=1e-9)
    assert spec.within_partial == 0
    # a cut through the two-dimensional within-group eigenspace is counted (its distances are the average)
    within_value = 3.0 + S_groups[0] @ sizes
    cuts = [cc for cc in range(2, 12) if np.sum(np.isclose(vals[:cc], within_value)) == 1]
    assert cuts
    for cc in cuts:
        part = smallest_eigenpairs(sparse.csr_matrix(np.triu(S_groups, 1)), cc, rank_test=rank_test, sizes=sizes)
        assert part.within_partial == 1 and part.embedding.within[0] == pytest.approx(1.0 / 3.0)

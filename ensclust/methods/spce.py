"""SPCE: self-paced clustering ensemble (Zhou, Du, Liu, Shen, Fan & Li, IEEE TNNLS 2020), and its ablations.

specs/spce.md. SPCE learns a consensus matrix S from the base connectivity matrices S^(i), easy pairs first:

    min  sum_i (1/alpha_i) ||(S - S^(i)) . W||_F^2 - lambda ||W||_1 + gamma ||S||_0 + rho tr(Y^T L Y)   (eq. 10)
    s.t. S . Omega = S_hat . Omega,  0 <= S, W <= 1,  alpha on the simplex,  Y^T Y = I,

with self-paced pair weights W (eq. 13), the l0 penalty gamma = m^2 theta^2 (eq. 25) and the rank constraint
rank(L) = n - c relaxed to the trace term whose weight rho adapts (Algorithm 1). The clusters are the
connected components of S != 0 (spec 3.5).

Registry names: ``spce`` (the method), ``spce-w`` (W fixed to 1, the paper's "SPCE-W"), ``spce-fixw``
(W frozen at its initial value W0, "SPCE-fixW"), spec 4.5.

How the fit is organised (spec section 6):

* The fit runs on the microclusters of the ensemble (points with identical label rows): S, W, G and Y are
  constant on their blocks (the pairs inside one are Omega-ones, S = 1), so every pair of microclusters
  stands for sizes_u sizes_v point pairs, and the sums over pairs and points carry those weights. This is the
  point-level algorithm, not an approximation (the spectrum's within-microcluster eigenpairs are known in
  closed form, see :mod:`ensclust.methods._spce_spectrum`); Tdt2's 9394 points are 1647 microclusters under
  20 K-means members, so the pair arrays and the eigenproblems shrink accordingly.
* :mod:`ensclust.methods._spce_pairs` keeps only the pairs with a positive co-association count and, for each
  free pair, its agreement pattern (which members put it together); G = sum_i S^(i)/alpha_i and the
  alpha-update sums are products over the distinct patterns. No n x n x m stack is built.
* :class:`_Workspace` owns the pair-sized arrays of one fit (S, W^2 S, the threshold mask, the last pair
  distances); :class:`_Stage` holds what is fixed while W is fixed and performs the S-update of
  eq. (16)/(17) on the free pairs.
* :mod:`ensclust.methods._spce_spectrum` gives Y and the rank-test eigenvalues (eq. 18) from the connected
  components of S != 0 (Theorem 1): the null space from the component indicators, the few smallest nonzero
  eigenpairs from a dense ``eigh`` of small components and LOBPCG on large ones.
* :mod:`ensclust.methods._spce_reference` is the plain dense implementation of spec 3.6 (``solver="reference"``,
  small n) that the fast path is tested against. Everything is float64 (the rank test uses absolute
  tolerances). Measurements and the history of the fast path: results/bench/spce_s6/README.md.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ensclust.core.labels import cluster_counts, one_hot, relabel_first_appearance
from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import kmeans_labels, spectral_clustering
from ensclust.errors import UserError
from ensclust.methods import register
from ensclust.methods._spce_pairs import PairTable, build_pair_table
from ensclust.methods._spce_reference import alpha_update, lambda_schedule, reference_fit, self_paced_weights
from ensclust.methods._spce_spectrum import Embedding, Spectrum, indicator_spectrum, smallest_eigenpairs
from ensclust.methods.base import ConsensusMethod, Param

DEFAULT_SCHEDULE = (0.9, 0.8, 0.7, 0.6, 0.5)
DEFAULT_INNER_CAPS = (5, 5, 5, 5, 20)


class _Workspace:
    """The pair-sized arrays of one fit, owned by the fit and reused by every stage and inner iteration.

    Attributes
    ----------
    S : float (F,), S on the free pairs.
    ws : float (F,), W^2 S (eq. 21).
    below : bool (F,), the pairs below the l0 threshold in the last S-update.
    distances : (Y, E) of the last distance computation, reused when a rho-halving step keeps Y.
    """

    def __init__(self, S: np.ndarray):
        self.S = S
        self.ws = np.empty_like(S)
        self.below = np.empty(S.shape, dtype=bool)
        self.distances = (None, None)

    def pair_distances(self, Y: Embedding, table: PairTable) -> np.ndarray:
        """E_pq = ||y_p - y_q||^2 of the free pairs (eq. 16)."""
        last_Y, last_E = self.distances
        if last_Y is Y:
            return last_E
        E = Y.sqdist(table.free_rows, table.free_cols)
        self.distances = (Y, E)
        return E


class _Stage:
    """The quantities fixed while W is fixed (one self-paced stage)."""

    def __init__(self, table: PairTable, W: np.ndarray, gamma: float):
        self.W = W
        self.W2 = W * W
        self.half_inv_w2 = 0.5 / self.W2                   # 1 / (2 W^2) of eq. (16)
        self.sqrt_gamma_over_w = np.sqrt(gamma) / W         # sqrt(tau) sqrt(a) of eq. (17)
        # sum of W^2 over the free pairs that member i puts together (the alpha-update losses, eq. 21)
        self.same_w = member_weight_sums(table, self.W2)
        # sum_pq W_pq over all n^2 point pairs: W = 1 on the Omega pairs and the diagonal
        n = table.n_objects
        self.sum_w = (n * n - 2.0 * table.n_free_objects) + 2.0 * float(np.dot(W, table.pair_weight))

    def s_update(self, work: _Workspace, table: PairTable, Y: Embedding, g: np.ndarray, a: float,
                 rho: float) -> np.ndarray:
        """S on the free pairs (eq. 16/17), written into ``work.S``; returns its nonzero pairs (increasing).

        C a = G - rho E / (2 W^2) is compared with sqrt(gamma) sqrt(a) / W (C < sqrt(tau), both sides times
        a > 0), then C is clipped at 1 ([CODE] order: threshold first).
        """
        Ca = np.multiply(work.pair_distances(Y, table), self.half_inv_w2, out=work.S)
        Ca *= -rho
        Ca += g[table.pattern]
        below = np.less(Ca, np.multiply(self.sqrt_gamma_over_w, np.sqrt(a), out=work.ws), out=work.below)
        Ca /= a
        np.minimum(Ca, 1.0, out=Ca)
        np.copyto(Ca, 0.0, where=below)
        np.multiply(self.W2, Ca, out=work.ws)
        return np.flatnonzero(Ca)

    def member_losses(self, work: _Workspace, table: PairTable, nonzero: np.ndarray) -> np.ndarray:
        """loss_i = ||(S - S^(i)) . W||_F^2 of every member (eq. 21), see :func:`member_losses`."""
        return member_losses(table, self.W2, work.S, self.same_w, nonzero=nonzero, ws=work.ws)


class _SPCEBase(ConsensusMethod):
    variant = "spce"
    may_return_other_k = True  # connected components of S (spec 3.5, AMBIGUITY A6)
    randomized = False          # deterministic unless a fallback with k-means is used
    # 1: LOBPCG's result is checked for missed eigenpairs (points with identical label rows) and re-solved
    # when one is found (results/bench/spce_eig_s8); no label changed in the 26 audited fits
    # 2: the fit runs on microclusters (same algorithm, other floating-point order; results/bench/spce_s15)
    revision = 2
    params = {
        "theta": Param(0.5, low=0.0, high=1.0, high_open=True,
                       doc="l0 threshold; gamma = m^2 theta^2 (eq. 25); theta = 0 switches the l0 term off",
                       source="spec 4.1: no default in the paper; 0.5 = worked example of Sec. III-E; "
                              "tables tune it over 0:0.9:0.1 (Sec. IV-C)"),
        "schedule": Param(DEFAULT_SCHEDULE, type="list[float]",
                          doc="agreement levels r of the self-paced stages; lambda = 2 m^2 r (1-r) (eq. 23)",
                          source="Algorithm 1 / [CODE] qq = 0.9:-0.1:0.5"),
        "inner_caps": Param(DEFAULT_INNER_CAPS, type="list[int]",
                            doc="maximum inner iterations of each stage (one per stage)",
                            source="[CODE] maxiter = 5, and 20 for the last stage (spec A1)"),
        "rho0": Param(1.0, low=0.0, low_open=True, doc="initial weight rho of the rank (trace) term",
                      source="Sec. III-E (rho = 1); [CODE] lambda = 1"),
        "rank_test": Param("eigen", type="str", choices=("eigen", "components", "dense"),
                           doc="eigen: [CODE] eigenvalue-sum test with tolerances on the exact spectrum; "
                               "components: count the components of S != 0 (Theorem 1); dense: full eigh of L",
                           source="spec 3.4 step 4 and AMBIGUITY A2"),
        "tol_fewer": Param(1e-9, low=0.0, doc="sum of the c smallest eigenvalues above this -> rho *= 2",
                           source="[CODE] fn1 > 1e-9"),
        "tol_more": Param(1e-11, low=0.0, doc="sum of the c+1 smallest eigenvalues below this -> rho /= 2",
                          source="[CODE] fn2 < 1e-11"),
        "alpha_floor": Param(1e-12, low=0.0, low_open=True,
                             doc="lower bound of alpha_i (1/alpha_i enters G and a)",
                             source="spec 3.4 step 3 guard (not in the paper)"),
        "fallback": Param("none", type="str", choices=("none", "kmeans-y", "spectral-s"),
                          doc="when the number of components != c: none (faithful, output the components), "
                              "kmeans-y (k-means on the rows of Y) or spectral-s (spectral clustering of S)",
                          source="spec AMBIGUITY A6 (a deviation from the paper, flagged in diagnostics)"),
        "dense_limit": Param(2000, type="int", low=2,
                             doc="components of up to this many microclusters use a dense eigh; larger ones LOBPCG",
                             source="ensclust choice (speed)"),
        "eig_tol": Param(1e-8, low=0.0, low_open=True, doc="LOBPCG residual tolerance",
                         source="ensclust choice"),
        "eig_maxiter": Param(300, type="int", low=1, doc="LOBPCG iteration budget", source="ensclust choice"),
        "solver": Param("fast", type="str", choices=("fast", "reference"),
                        doc="fast: pair table + component eigenpairs; reference: the plain dense n x n "
                            "algorithm of spec 3.6 (n <= 2000, for validation; rank test on the dense spectrum)",
                        source="ensclust choice (the reference is what the fast path is tested against)"),
    }

    @classmethod
    def _check_params(cls, values, where=""):
        stages, caps = values["schedule"], values["inner_caps"]
        prefix = f"{where}: " if where else ""
        if len(stages) != len(caps):
            raise UserError(f"{prefix}spce: 'schedule' has {len(stages)} stages but 'inner_caps' has {len(caps)}")
        if any(not 0.0 < r < 1.0 for r in stages):
            raise UserError(f"{prefix}spce: every schedule value must lie in (0, 1), got {values['schedule']!r}")
        if any(cap < 1 for cap in caps):
            raise UserError(f"{prefix}spce: every inner cap must be >= 1, got {values['inner_caps']!r}")

    # -- pieces ------------------------------------------------------------------------------------
    def _spectrum(self, table: PairTable, S_free: np.ndarray, nonzero: np.ndarray, c: int,
                  previous: Embedding | None, factor=None) -> Spectrum:
        """Y and the spectrum of L = D - S (eq. 18) from the connected components of S != 0 (Theorem 1).

        ``factor``: ``(B, 1/m)`` when S is the co-association S_hat = B B^T / m (eq. 2), see
        :func:`smallest_eigenpairs`."""
        S_upper = upper_matrix(table, S_free, nonzero)
        k, comp = connected_components(S_upper, directed=False)
        if k > c and self.rank_test != "dense":   # more than c components: Y is made of indicators
            return indicator_spectrum(comp.astype(np.int32), k, c, self.rank_test, table.sizes)
        return smallest_eigenpairs(S_upper, c, rank_test=self.rank_test, previous=previous,
                                   dense_limit=self.dense_limit, tol=self.eig_tol, maxiter=self.eig_maxiter,
                                   components=(k, comp), factor=factor, sizes=table.sizes)

    def _weights(self, S_free, g, pattern, a, lam, shat_free):
        """W of eq. (13) on the free pairs: B = sum_i (S - S^(i))^2 / alpha_i = a S^2 - 2 S G + G, G = g[pattern]."""
        if self.variant == "spce-w":
            return np.ones_like(S_free)
        if self.variant == "spce-fixw" and self.fixw_mode == "coassoc":
            return shat_free.copy()
        G = g[pattern]
        return self_paced_weights(a * S_free * S_free - 2.0 * S_free * G + G, lam)

    def _fit(self, members, n_clusters, X, rng):
        if self.solver == "reference":
            return self._reference(members, n_clusters)
        return self._run(members, n_clusters, rng)

    def _reference(self, members, c):
        if self.fallback != "none":
            raise UserError("spce: solver=reference outputs the connected components of S; use fallback=none")
        labels, S, diag = reference_fit(
            members, c, theta=self.theta, variant=self.variant, schedule=self.schedule, inner_caps=self.inner_caps,
            rho0=self.rho0, tol_fewer=self.tol_fewer, tol_more=self.tol_more, alpha_floor=self.alpha_floor,
            fixw_mode=getattr(self, "fixw_mode", "initial"))
        diag.update(variant=self.variant, solver="reference", n_iter=int(sum(diag["inner_iterations"])),
                    rank_target_reached=bool(diag["n_components"] == c), fallback_applied=False)
        self.diagnostics_ = diag
        self.n_iter_ = diag["n_iter"]
        self.consensus_matrix_ = sparse.csr_matrix(S)
        return labels

    def _run(self, members, n_clusters, rng):
        n, m = members.shape
        c = n_clusters
        gamma = m * m * self.theta ** 2                  # eq. (25)
        micro = compute_microclusters(members)
        members = micro.members                          # one row per microcluster from here on
        table = build_pair_table(members, sizes=micro.sizes)
        n_rows = table.n
        shat_free = table.pattern_counts()[table.pattern] / m
        work = _Workspace(shat_free.copy())              # S <- S_hat (Sec. III-E)
        alpha = np.full(m, 1.0 / m)
        rho = float(self.rho0)
        # Y from S_hat (eq. 18). Warm start for the iterative eigensolver: random mixtures of the members'
        # cluster indicators, which are piecewise constant on the co-association blocks and so lie close to
        # the wanted low eigenvectors (a fixed seed keeps the method deterministic). Only LOBPCG reads it, and
        # only components larger than dense_limit go to LOBPCG: none when n <= dense_limit.
        # S_hat = B B^T / m is low rank (eq. 2): LOBPCG multiplies by B and B^T (O(n m) per vector) instead of
        # by the sparse S_hat, whose nonzeros can approach n^2 (every pair that one member puts together).
        factor = None
        if n_rows > self.dense_limit:
            B = one_hot(members)
            mix = B @ np.random.default_rng(0).standard_normal((int(cluster_counts(members).sum()), c + 1))
            factor = (B, 1.0 / m)
        else:
            mix = np.zeros((n_rows, 0))
        start = Embedding(comp=np.zeros(n_rows, dtype=np.int32), weight=np.zeros(n_rows), extra=mix)
        nonzero = np.arange(table.n_free)
        spec = self._spectrum(table, work.S, nonzero, c, start, factor=factor)
        del factor
        lobpcg_calls, lobpcg_not_converged = spec.lobpcg_calls, spec.lobpcg_not_converged
        within_partial = spec.within_partial
        Y = spec.embedding
        W = None
        diag = {"variant": self.variant, "gamma": gamma, "n_micro": n_rows,
                "n_pairs": int(table.n_free_objects + table.n_ones_objects),
                "n_free_pairs": int(table.n_free_objects), "n_fixed_one_pairs": int(table.n_ones_objects),
                "n_patterns": int(table.patterns.shape[0]),
                "n_components_initial": spec.n_components, "lambda": [], "inner_iterations": [],
                "rho": [], "branch": [], "n_components_trace": [], "objective": [], "objective_no_rank": [],
                "objective_eq6": [], "stage_of_iteration": [], "exit_test_passed": []}
        for stage_index, (r, cap) in enumerate(zip(self.schedule, self.inner_caps, strict=True)):
            lam = lambda_schedule(r, m)                  # eq. (23)
            diag["lambda"].append(lam)
            if W is None or self.variant == "spce":     # eq. (13) at every stage; once for the ablations
                inv_alpha = 1.0 / alpha
                W = self._weights(work.S, table.patterns_f @ inv_alpha, table.pattern, float(inv_alpha.sum()),
                                  lam, shat_free)
            stage = _Stage(table, W, gamma)
            passed = False
            it = 0
            for it in range(cap):
                inv_alpha = 1.0 / alpha
                a = float(inv_alpha.sum())
                g = table.patterns_f @ inv_alpha        # G = sum_i S^(i) / alpha_i, per agreement pattern
                nonzero = stage.s_update(work, table, Y, g, a, rho)               # eq. (16)/(17)
                Y_old = Y
                spec = self._spectrum(table, work.S, nonzero, c, Y_old)           # eq. (18)
                lobpcg_calls += spec.lobpcg_calls
                lobpcg_not_converged += spec.lobpcg_not_converged
                within_partial += spec.within_partial
                losses = stage.member_losses(work, table, nonzero)
                alpha = alpha_update(losses, self.alpha_floor)                     # eq. (21)
                nnz = n + 2.0 * float(table.pair_weight[nonzero].sum()) + 2.0 * table.n_ones_objects
                data_term = float(np.sum(losses / alpha))
                no_rank = data_term - lam * stage.sum_w + gamma * nnz
                diag["objective_no_rank"].append(no_rank)
                diag["objective"].append(no_rank + 2.0 * rho * spec.trace)
                diag["objective_eq6"].append(float(np.sqrt(losses).sum()) - lam * stage.sum_w + gamma * nnz)
                diag["stage_of_iteration"].append(stage_index)
                diag["n_components_trace"].append(spec.n_components)
                if self.rank_test == "components":
                    fewer = spec.n_components < c
                    more = spec.n_components > c
                else:                                    # [CODE] test on the eigenvalue sums (spec 3.4)
                    fewer = float(np.sum(spec.values[:c])) > self.tol_fewer
                    more = (not fewer) and float(np.sum(spec.values[:c + 1])) < self.tol_more
                if fewer:
                    rho *= 2.0
                    branch = "double"
                elif more:
                    rho /= 2.0
                    branch = "halve"   # Y stays Y_old
                elif it > 0:
                    branch = "exit"
                else:
                    branch = "keep"
                if branch != "halve":
                    Y = spec.embedding
                diag["rho"].append(rho)
                diag["branch"].append(branch)
                if branch == "exit":
                    passed = True
                    break
            diag["inner_iterations"].append(it + 1)
            diag["exit_test_passed"].append(passed)

        # numbered in order of first appearance over the points, as connected_components of the point graph
        labels = relabel_first_appearance(spec.labels[micro.assignment])
        k = spec.n_components
        S_upper = upper_matrix(table, work.S, nonzero)
        diag.update({
            "n_components": k, "rank_target_reached": bool(k == c), "converged": bool(diag["exit_test_passed"][-1]),
            "n_iter": int(sum(diag["inner_iterations"])), "alpha": alpha.tolist(), "rho_final": rho,
            "fallback_needed": bool(k != c), "fallback_applied": False,
            "lobpcg_calls": lobpcg_calls, "lobpcg_not_converged": lobpcg_not_converged,
            "within_group_partial": within_partial,
        })
        # the learned graph as block values: points p, q have S[a[p], a[q]], a = microcluster_assignment_
        # (the diagonal 1 is also the value inside a microcluster); expand_blocks gives the point matrix
        self.consensus_matrix_ = (S_upper + S_upper.T + sparse.identity(n_rows, format="csr")).tocsr()
        self.microcluster_assignment_ = micro.assignment
        if k != c and self.fallback != "none":
            labels = self._fallback_labels(Y, c, rng)
            diag["fallback_applied"] = True
            diag["fallback"] = self.fallback
        self.diagnostics_ = diag
        self.n_iter_ = diag["n_iter"]
        return labels

    def _fallback_labels(self, Y: Embedding, c, rng):
        """k-means on the point rows of Y's block-constant part, or spectral clustering of the point matrix S."""
        assignment = self.microcluster_assignment_
        if self.fallback == "kmeans-y":
            return kmeans_labels(dense_embedding(Y, c)[assignment], c, random_state=rng)
        return spectral_clustering(expand_blocks(self.consensus_matrix_, assignment), c, random_state=rng)


def expand_blocks(blocks: sparse.csr_matrix, assignment: np.ndarray) -> sparse.csr_matrix:
    """The point matrix whose (p, q) entry is ``blocks[assignment[p], assignment[q]]`` (CSR)."""
    E = sparse.csr_matrix((np.ones(assignment.shape[0]), (np.arange(assignment.shape[0]), assignment)),
                          shape=(assignment.shape[0], blocks.shape[0]))
    return (E @ blocks @ E.T).tocsr()


def upper_matrix(table: PairTable, S_free: np.ndarray, nonzero: np.ndarray) -> sparse.csr_matrix:
    """CSR of the nonzero S_pq, p < q: the free pairs ``nonzero`` (increasing indices of the pairs with
    S != 0) plus the Omega-ones (value 1).

    The free pairs are stored in CSR order, so their matrix is assembled without sorting and added to the
    table's constant Omega-one part (a linear merge of two canonical CSR matrices).
    """
    n = table.n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(table.free_rows[nonzero], minlength=n), out=indptr[1:])
    free_part = sparse.csr_matrix((S_free[nonzero], table.free_cols[nonzero], indptr), shape=(n, n))
    free_part.has_sorted_indices = True
    if table.n_ones == 0:
        return free_part
    return (free_part + table.ones_upper).tocsr()


def member_weight_sums(table: PairTable, W2: np.ndarray) -> np.ndarray:
    """sum over the free point pairs that member i puts together of W^2 (fixed within a stage)."""
    per_pattern = np.bincount(table.pattern, weights=W2 * table.pair_weight, minlength=table.patterns.shape[0])
    return table.patterns_tf @ per_pattern


def member_losses(table: PairTable, W2: np.ndarray, S_free: np.ndarray, same_w=None, nonzero=None,
                  ws=None) -> np.ndarray:
    """loss_i = ||(S - S^(i)) . W||_F^2 for every member (eq. 21), from the free pairs only.

    Omega pairs contribute nothing (there S = S^(i) for every i). For binary S^(i) and the symmetric pair
    (p, q) counted twice: loss_i = 2 [sum W^2 S^2 - 2 sum_{same_i} W^2 S + sum_{same_i} W^2] (spec 6), every
    free pair weighted by the point pairs it stands for (``table.pair_weight``).
    ``same_w``: :func:`member_weight_sums` when the caller has it; ``nonzero``: increasing indices of the
    pairs with S != 0 (the per-pattern sums then skip the zero terms: adding +0.0 changes no partial sum,
    so the result is the same); ``ws``: W^2 S when the caller keeps it.
    """
    if table.n_free == 0:
        return np.zeros(table.m)
    if same_w is None:
        same_w = member_weight_sums(table, W2)
    if ws is None:
        ws = W2 * S_free
    ws = ws * table.pair_weight
    total = float(np.dot(ws, S_free))
    if nonzero is None:
        per_pattern_ws = np.bincount(table.pattern, weights=ws, minlength=table.patterns.shape[0])
    else:
        per_pattern_ws = np.bincount(table.pattern[nonzero], weights=ws[nonzero], minlength=table.patterns.shape[0])
    same_ws = table.patterns_tf @ per_pattern_ws
    return np.maximum(2.0 * (total - 2.0 * same_ws + same_w), 0.0)


def dense_embedding(Y: Embedding, c: int) -> np.ndarray:
    """Y as an explicit n x c matrix (indicator columns of the chosen components, then the extra vectors)."""
    n = Y.comp.shape[0]
    chosen = np.unique(Y.comp[Y.weight > 0])
    cols = [np.where(Y.comp == j, np.sqrt(Y.weight), 0.0) for j in chosen]
    out = np.zeros((n, c))
    mats = [np.column_stack(cols)] if cols else []
    if Y.extra.shape[1]:
        mats.append(Y.extra)
    if mats:
        full = np.column_stack(mats)[:, :c]
        out[:, :full.shape[1]] = full
    return out


@register
class SPCE(_SPCEBase):
    """SPCE: self-paced weights W recomputed at every stage (Algorithm 1)."""

    name = "spce"
    variant = "spce"
    summary = "self-paced clustering ensemble: consensus S learned easy-to-hard, l0 + rank constraint"


@register
class SPCENoW(_SPCEBase):
    """SPCE-W: every pair weight fixed to 1 (spec 4.5; the minus sign means 'without W')."""

    name = "spce-w"
    variant = "spce-w"
    summary = "SPCE ablation without self-paced weights (W = 1)"


@register
class SPCEFixW(_SPCEBase):
    """SPCE-fixW: W computed once at the first stage (W0, Sec. III-E) and never updated (spec 4.5, A5)."""

    name = "spce-fixw"
    variant = "spce-fixw"
    summary = "SPCE ablation with W frozen at its initial value"
    params = {
        **_SPCEBase.params,
        "fixw_mode": Param("initial", type="str", choices=("initial", "coassoc"),
                           doc="initial: W0 = min(lambda/(2B), 1) at r = 0.9; coassoc: W = S_hat",
                           source="spec AMBIGUITY A5 (initial = the operational definition)"),
    }

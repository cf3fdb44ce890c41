"""SPCE: self-paced clustering ensemble (Zhou, Du, Liu, Shen, Fan & Li, IEEE TNNLS 2020), and its ablations.

specs/spce.md. SPCE learns a consensus matrix S from the base connectivity matrices S^(i), easy pairs first:

    min  sum_i (1/alpha_i) ||(S - S^(i)) . W||_F^2 - lambda ||W||_1 + gamma ||S||_0 + rho tr(Y^T L Y)   (eq. 10)
    s.t. S . Omega = S_hat . Omega,  0 <= S, W <= 1,  alpha on the simplex,  Y^T Y = I,

with self-paced pair weights W (eq. 13), the l0 penalty gamma = m^2 theta^2 (eq. 25) and the rank constraint
rank(L) = n - c relaxed to the trace term whose weight rho adapts (Algorithm 1). The clusters are the
connected components of S != 0 (spec 3.5).

Registry names: ``spce`` (the method), ``spce-w`` (W fixed to 1, the paper's "SPCE-W"), ``spce-fixw``
(W frozen at its initial value W0, "SPCE-fixW"), spec 4.5.

Implementation notes (spec section 6):

* The n x n x m stack of base matrices is never built. Only pairs with a positive co-association count are
  stored, and the base clusterings enter through each free pair's agreement pattern
  (:mod:`ensclust.methods._spce_pairs`): G = sum_i S^(i)/alpha_i is a product over the distinct patterns.
* The eigenvectors (eq. 18) come from the connected components of S (Theorem 1): exact null space from the
  component indicators plus the few smallest nonzero eigenpairs of the component blocks
  (:mod:`ensclust.methods._spce_spectrum`), instead of a dense O(n^3) ``eig`` of L.
* Everything is float64 (the rank test uses absolute tolerances).
* Fixed cost per inner iteration (issue #7), all bit-for-bit equal to the plain computation (tests): the
  S-update skips whole agreement patterns whose G is below the smallest threshold of their pairs, which
  can only give S = 0, and reuses its gathers while the surviving patterns and Y stay
  (:meth:`_StageTerms.s_update_pruned`); the components of S != 0 come from the nonzero pairs and the pair
  table's CSR layout (reused when the nonzero pairs repeat), and Y needs no matrix while there are more
  than c of them (it is not even built when the rank test then keeps the previous Y); the per-pattern loss
  sums skip the zero pairs. BLAS runs single-threaded for n <= 3000 with one library scan per process, none
  when OMP_NUM_THREADS / OPENBLAS_NUM_THREADS already pin it to one thread.
* Small theta on large sets (issue #7, Texture theta = 0.1: 9e6 free pairs, ~1e6 visited per update), again
  bit for bit: the pair distances E are computed only for the visited pairs (:class:`PairDistances`), W of
  eq. (13) per pattern where S = 0, the pair-sized buffers carried from stage to stage, the component search
  and the upper S work on the kept pairs only (merge of sorted positions, CSR layout reused for S), and
  the pair table comes from one block-wise upper-triangle product with the bit masks in it. What remains
  is mostly LOBPCG on the large component (~2/3 of a fit), whose operator, start and tolerances are part
  of the result and were left alone.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ensclust.core.labels import cluster_counts, one_hot
from ensclust.core.spectral import kmeans_labels, spectral_clustering
from ensclust.errors import UserError
from ensclust.methods import register
from ensclust.methods._spce_pairs import PairTable, build_pair_table
from ensclust.methods._spce_reference import reference_fit
from ensclust.methods._spce_spectrum import Embedding, indicator_spectrum, smallest_eigenpairs
from ensclust.methods.base import ConsensusMethod, Param

DEFAULT_SCHEDULE = (0.9, 0.8, 0.7, 0.6, 0.5)
DEFAULT_INNER_CAPS = (5, 5, 5, 5, 20)


def lambda_schedule(r: float, m: int) -> float:
    """Self-paced age lambda of stage r (eq. 23): 2((r-1)^2 r + r^2 (1-r)) m^2 (= 2 m^2 r (1-r))."""
    return 2.0 * ((r - 1.0) ** 2 * r + r ** 2 * (1.0 - r)) * m * m


def self_paced_weights(B: np.ndarray, lam: float) -> np.ndarray:
    """W = min(lambda / (2 B), 1) (eq. 13); B = 0 gives W = 1 (MATLAB: Inf capped at 1)."""
    W = np.ones_like(B)
    np.divide(lam, 2.0 * B, out=W, where=B > 0)   # element-wise the same as the masked form, no gathers
    return np.minimum(W, 1.0, out=W)


def s_update(G: np.ndarray, E: np.ndarray, W: np.ndarray, a: float, rho: float, gamma: float) -> np.ndarray:
    """Closed-form S on free pairs (eq. 16/17): C = (G - rho E / (2 W^2)) / a, zero below sqrt(tau), clip at 1.

    sqrt(tau) = sqrt(gamma) / (W sqrt(a)). Order as in [CODE]: threshold first, then clip values above 1.
    """
    return _StageTerms(W, gamma).s_update(G, E, a, rho)


class _StageTerms:
    """Quantities fixed while W is fixed (one self-paced stage), so each S-update is a few passes.

    The S-update writes into buffers owned by the stage: the returned S is valid until the next call.
    ``previous``: the terms of the previous stage, whose pair-sized buffers (S, W^2 S, the pruned update's
    scratch) are taken over (its S must not be read any more; fresh 72 MB buffers cost page faults).
    The full-size 1/(2 W^2) and sqrt(gamma)/W are only built for the full update; the pruned update
    computes them on the pairs it gathers (the same element-wise operations, so the same bits).
    """

    prune = True  # class switch for the tests: False forces the full S-update on every free pair

    def __init__(self, W: np.ndarray, gamma: float, previous: _StageTerms | None = None):
        self.W = W
        self.sqrt_gamma = np.sqrt(gamma)
        recycled = None if previous is None else previous.W2   # the previous stage's W^2 is not read again
        if recycled is not None and recycled.shape == W.shape and recycled is not W:
            self.W2 = np.multiply(W, W, out=recycled)
        else:
            self.W2 = W * W
        # Pruning by pattern (s_update_pruned) needs 0 < W <= 1, which eq. (13) and W = 1 guarantee.
        self.can_prune = self.prune and bool(W.size == 0 or (W.min() > 0.0 and W.max() <= 1.0))
        self._sgw = None
        self._plan = None       # the pruned update's gathers for one survivor set (a _Plan)
        self._last_nonzero = None   # (plan, nonzero mask over the plan's pairs, nonzero pair indices)
        reuse = previous is not None and previous._S.shape == W.shape
        self._S = previous._S if reuse else np.empty_like(W)
        # pairs of _S that may be nonzero; None: anywhere (not yet known). A taken-over S is zero outside
        # the previous stage's support, so only that support needs resetting.
        self._S_support = previous._S_support if reuse else None
        self.work = previous.work if reuse else np.empty_like(W)
        self.scratch = previous.scratch if reuse else {}   # index buffers of the pruned update's plans
        self._ws_support = None   # support of the W^2 S in self.work when it holds this stage's values
        self._full_terms = None

    def _full_update_terms(self):
        if self._full_terms is None:
            W = self.W
            self._full_terms = (0.5 / (W * W), self.sqrt_gamma / W, np.empty_like(W), np.empty(W.shape, dtype=bool))
        return self._full_terms

    @property
    def half_inv_w2(self) -> np.ndarray:
        return self._full_update_terms()[0]

    @property
    def sqrt_gamma_over_w(self) -> np.ndarray:
        return self._full_update_terms()[1]

    def weighted_s(self, S_free: np.ndarray) -> np.ndarray:
        """W^2 S (element-wise) in the stage's work buffer.

        After a pruned update S is zero outside its support, where W^2 S is +0.0 (W > 0), so once the
        buffer holds W^2 S of this stage only the previous and the new support are rewritten; each entry
        is the same product as in the full multiplication."""
        ws = self.work
        support = self._S_support if S_free is self._S else None
        if support is not None and self._ws_support is not None:
            ws[self._ws_support] = 0.0
            ws[support] = self.W2[support] * S_free[support]
        else:
            np.multiply(self.W2, S_free, out=ws)
        self._ws_support = support
        return ws

    def sorted_nonzero(self) -> np.ndarray | None:
        """The nonzero pairs of the last pruned update in increasing order, or None when unknown.

        Read off the plan's visited pairs in increasing order (known when its distances were computed for
        them): the nonzero pairs are those of them with S != 0, so no sort is needed."""
        plan = self._plan
        if self._S_support is None or plan is None or plan._sorted is None or self._S_support is not plan.pairs:
            return None
        visited = plan._sorted
        return visited[self._S[visited] != 0.0]

    def s_update(self, G, E, a, rho):
        # C a = G - rho E / (2 W^2); compare C a with sqrt(gamma) sqrt(a) / W (same as C < sqrt(tau)).
        self._S_support = None
        half_inv_w2, sqrt_gamma_over_w, threshold, below = self._full_update_terms()
        Ca = np.multiply(E, half_inv_w2, out=self._S)
        Ca *= -rho
        Ca += G
        below = np.less(Ca, np.multiply(sqrt_gamma_over_w, np.sqrt(a), out=threshold), out=below)
        Ca /= a
        np.minimum(Ca, 1.0, out=Ca)
        np.copyto(Ca, 0.0, where=below)
        return Ca

    def s_update_pruned(self, g, pattern, E, a, rho, by_pattern=None, pattern_start=None):
        """:meth:`s_update` computed only on the pairs that can end up nonzero; bit-for-bit the same S.

        ``g``: G per agreement pattern (G = g[pattern]). Why whole patterns can be skipped: E >= 0 and
        rho >= 0, so the rounded C a = G - rho E / (2 W^2) is <= G, and the rounded threshold
        sqrt(gamma)/W * sqrt(a) of every pair of pattern u is >= t_u = min_u(sqrt(gamma)/W) * sqrt(a)
        (rounding is monotone; the minimum runs over the pairs of u). A pair whose pattern has g < t_u is
        therefore below its threshold and gets S = 0, exactly as in the full update.
        The pairs are visited pattern by pattern (``by_pattern``: stable argsort of ``pattern``, with group
        boundaries ``pattern_start``), so the work is proportional to the pairs of the surviving patterns.
        ``E``: the distances of every free pair, or a :class:`PairDistances` that computes them for the
        visited pairs only (at small theta only ~1/9 of the pairs survive on Texture, and the distances
        of all pairs were the most expensive step of an iteration after the eigensolver).
        Returns S and the indices of its nonzero entries (grouped by pattern, increasing inside a group).

        Consecutive calls of a stage usually keep the same surviving patterns (and E, while Y is reverted),
        so the gathers that depend only on them (positions, the thresholds' sqrt(gamma)/W, 1/(2 W^2) and
        the pattern of every visited pair) are kept in a plan and reused, and E / (2 W^2) of the visited
        pairs while E stays; the arithmetic on the gathered values is the same, element by element
        (E_p * (1/(2 W_p^2)) whether gathered before or after the product). Only the pairs written by the
        previous call are reset to 0.
        """
        if by_pattern is None:
            by_pattern = np.argsort(pattern, kind="stable")
            pattern_start = np.concatenate([[0], np.cumsum(np.bincount(pattern, minlength=g.shape[0]))])
        if self._sgw is None:   # sqrt(gamma)/W in pattern order (= (sqrt(gamma)/W)[by_pattern], element-wise)
            self._sgw = self.sqrt_gamma / self.W[by_pattern]
            self._pattern_floor = _group_minimum(self._sgw, pattern_start)   # min of sqrt(gamma)/W per pattern
        sqrt_a = np.sqrt(a)
        survive = g >= self._pattern_floor * sqrt_a
        plan = self._plan
        if plan is None or _differ(plan.survive, survive):
            survivors = np.flatnonzero(survive)
            first = pattern_start[survivors]
            lengths = pattern_start[survivors + 1] - first
            ends = np.cumsum(lengths)
            total = int(ends[-1]) if ends.shape[0] else 0
            order = np.arange(total) + np.repeat(first - (ends - lengths), lengths)   # positions, pattern order
            pairs = by_pattern[order]
            w = self.W[pairs]
            plan = _Plan(survive=survive, sgw=self._sgw[order], visited_pattern=np.repeat(survivors, lengths),
                         pairs=pairs, half_inv_w2=0.5 / (w * w))
            self._plan = plan
        if plan.eh_of is not E:   # E / (2 W^2) of the visited pairs: fixed while the plan and E are
            plan.eh = plan.distances(E, self.scratch) * plan.half_inv_w2
            plan.eh_of = E
        Ca = np.multiply(plan.eh, -rho)
        Ca += g[plan.visited_pattern]
        below = Ca < plan.sgw * sqrt_a
        Ca /= a
        np.minimum(Ca, 1.0, out=Ca)
        Ca[below] = 0.0
        pairs = plan.pairs
        S = self._S
        if self._S_support is None:
            S.fill(0.0)
        elif self._S_support is not pairs:
            S[self._S_support] = 0.0
        S[pairs] = Ca
        self._S_support = pairs
        # The same nonzero pairs as last time (the usual case) come back as the same array, which lets the
        # component search recognise them at no cost.
        kept = Ca != 0.0
        last = self._last_nonzero
        if last is not None and last[0] is plan and not _differ(last[1], kept):
            return S, last[2]
        nonzero = pairs[kept]
        self._last_nonzero = (plan, kept, nonzero)
        return S, nonzero


class _Plan:
    """The pruned S-update's gathers for one set of surviving patterns (see s_update_pruned)."""

    def __init__(self, survive, sgw, visited_pattern, pairs, half_inv_w2):
        self.survive = survive                  # surviving patterns (bool per pattern)
        self.sgw = sgw                          # sqrt(gamma)/W of the visited pairs, pattern order
        self.visited_pattern = visited_pattern  # their pattern
        self.pairs = pairs                      # their free-pair index
        self.half_inv_w2 = half_inv_w2          # their 1/(2 W^2)
        self.eh, self.eh_of = None, None        # E / (2 W^2) of the visited pairs, and the E it came from
        self._sorted, self._slot = None, None

    def distances(self, E, scratch: dict) -> np.ndarray:
        """E of the visited pairs (pattern order), from the full array or computed for them only.

        ``scratch``: a dict holding pair-sized index buffers across plans (allocated on first use)."""
        if not isinstance(E, PairDistances):
            return E[self.pairs]
        if self._sorted is None:   # the visited pairs in increasing (CSR) order, and where each one sits
            mark, slot = scratch.get("mark"), scratch.get("slot")
            if mark is None or mark.shape[0] != E.n_pairs:
                mark = scratch["mark"] = np.zeros(E.n_pairs, dtype=bool)
                slot = scratch["slot"] = np.empty(E.n_pairs, dtype=np.int64)
            else:
                mark.fill(False)
            mark[self.pairs] = True
            self._sorted = np.flatnonzero(mark)
            slot[self._sorted] = np.arange(self._sorted.shape[0])
            self._slot = slot[self.pairs]
        return E.at(self._sorted)[self._slot]


class PairDistances:
    """E_pq = ||y_p - y_q||^2 of the free pairs, computed on demand for a subset (same bits as for all).

    :meth:`Embedding.sqdist` works element by element (the Gram blocks are the same row blocks of the same
    n x n products whatever pairs are asked for), so the distances of a row-ordered subset equal the
    corresponding entries of the full array bit for bit.
    """

    def __init__(self, Y: Embedding, rows: np.ndarray, cols: np.ndarray, work: dict | None = None):
        self.Y, self.rows, self.cols = Y, rows, cols
        self.n_pairs = int(rows.shape[0])
        self.work = work   # scratch buffers of Embedding.sqdist, kept across the calls of one fit
        self._full = None
        self._asked = False

    def at(self, pairs: np.ndarray) -> np.ndarray:
        """Distances of the free pairs ``pairs`` (increasing indices).

        The first request computes only those pairs (Y usually changes at every iteration); a second one
        for the same Y (rho halved, Y kept, other surviving patterns) computes all pairs once and serves
        every later request from them, as many requests would otherwise repeat the work."""
        if self._full is None and self._asked:
            self.full()
        self._asked = True
        if self._full is not None:
            return self._full[pairs]
        return self.Y.sqdist(self.rows[pairs], self.cols[pairs], work=self.work)

    def full(self) -> np.ndarray:
        if self._full is None:
            self._full = self.Y.sqdist(self.rows, self.cols, work=self.work)
        return self._full


def _differ(a: np.ndarray, b: np.ndarray) -> bool:
    """True unless a and b have the same shape and entries (np.array_equal with less call overhead)."""
    return a.shape != b.shape or bool((a != b).any())


def _group_minimum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Minimum of values[starts[u]:starts[u+1]] for every group u; +inf for an empty group."""
    out = np.full(starts.shape[0] - 1, np.inf)
    nonempty = np.flatnonzero(starts[1:] > starts[:-1])
    if nonempty.shape[0]:
        out[nonempty] = np.minimum.reduceat(values, starts[nonempty])
    return out


def alpha_update(losses: np.ndarray, floor: float) -> np.ndarray:
    """alpha_i = sqrt(loss_i) / sum_j sqrt(loss_j) (eq. 21); uniform when every loss is 0 (spec 3.4 guard)."""
    root = np.sqrt(np.maximum(losses, 0.0))
    total = root.sum()
    m = losses.shape[0]
    if total <= 0:
        return np.full(m, 1.0 / m)
    alpha = np.maximum(root / total, floor)
    return alpha / alpha.sum()


class _SPCEBase(ConsensusMethod):
    variant = "spce"
    may_return_other_k = True  # connected components of S (spec 3.5, AMBIGUITY A6)
    randomized = False          # deterministic unless a fallback with k-means is used
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
                             doc="components up to this size use a dense eigh; larger ones LOBPCG",
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
    def _spectrum(self, table: PairTable, S_free: np.ndarray, c: int, previous: Embedding | None,
                  nonzero=None, sorted_nonzero=None):
        # The components first: with more than c of them Y is made of indicators and no matrix is needed.
        k, comp = table.components(S_free, nonzero, sorted_nonzero)
        if k > c and self.rank_test != "dense":
            return indicator_spectrum(comp, k, c, self.rank_test)
        return smallest_eigenpairs(upper_matrix(table, S_free, layout=table.kept_layout), c,
                                   rank_test=self.rank_test, previous=previous, dense_limit=self.dense_limit,
                                   tol=self.eig_tol, maxiter=self.eig_maxiter, components=(k, comp))

    def _initial_weights(self, S_free, g, pattern, a, lam, shat_free, out=None):
        """W of eq. (13) on the free pairs, from B = a S^2 - 2 S G + G with G = g[pattern].

        Where S = 0 (most pairs after the first stage at small theta) every product is 0 and B = G exactly,
        so W there depends only on the pattern: it is computed once per pattern and gathered; only the
        pairs with S != 0 go through the formula (same operations, same order, so the same bits).
        ``out``: a pair-sized buffer that may receive W on that path (the previous stage's W).
        """
        if self.variant == "spce-w":
            return np.ones_like(S_free)
        if self.variant == "spce-fixw" and self._params.get("fixw_mode") == "coassoc":
            return shat_free.copy()
        nonzero = np.flatnonzero(S_free)
        if 2 * nonzero.shape[0] > S_free.shape[0]:
            G = g[pattern]
            return self_paced_weights(a * S_free * S_free - 2.0 * S_free * G + G, lam)
        per_pattern = self_paced_weights(g, lam)
        if out is None or out.shape != S_free.shape:
            W = per_pattern[pattern]
        else:   # mode="clip": unbuffered (the indices are valid, so the same values as a plain gather)
            W = np.take(per_pattern, pattern, mode="clip", out=out)
        S_nz, G_nz = S_free[nonzero], g[pattern[nonzero]]
        W[nonzero] = self_paced_weights(a * S_nz * S_nz - 2.0 * S_nz * G_nz + G_nz, lam)
        return W

    # -- the algorithm -----------------------------------------------------------------------------
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
        stages, caps = self.schedule, self.inner_caps
        gamma = m * m * self.theta ** 2
        table = build_pair_table(members)
        shat_free = table.pattern_counts()[table.pattern] / m
        S_free = shat_free.copy()                        # S <- S_hat (Sec. III-E)
        alpha = np.full(m, 1.0 / m)
        rho = float(self.rho0)
        # Y from S_hat (eq. 18). Warm start for the iterative eigensolver: random mixtures of the members'
        # cluster indicators, which are piecewise constant on the co-association blocks and so lie close to
        # the wanted low eigenvectors (a fixed seed keeps the method deterministic). Only LOBPCG reads it, and
        # only components larger than dense_limit go to LOBPCG: none when n <= dense_limit.
        if n > self.dense_limit:
            mix = one_hot(members) @ np.random.default_rng(0).standard_normal((int(cluster_counts(members).sum()),
                                                                               c + 1))
        else:
            mix = np.zeros((n, 0))
        start = Embedding(comp=np.zeros(n, dtype=np.int32), weight=np.zeros(n), extra=mix)
        spec = self._spectrum(table, S_free, c, start)
        lobpcg_calls, lobpcg_not_converged = spec.lobpcg_calls, spec.lobpcg_not_converged
        Y = spec.embedding
        W = None
        terms = None
        E, E_of = None, None
        sqdist_work = {}
        free_rows, free_cols = table.free_rows, table.free_cols
        diag = {"variant": self.variant, "gamma": gamma, "n_pairs": table.n_pairs, "n_free_pairs": table.n_free,
                "n_fixed_one_pairs": table.n_ones, "n_patterns": int(table.patterns.shape[0]),
                "n_components_initial": spec.n_components, "lambda": [], "inner_iterations": [],
                "rho": [], "branch": [], "n_components_trace": [], "objective": [], "objective_no_rank": [],
                "objective_eq6": [], "stage_of_iteration": [], "exit_test_passed": []}
        for stage, (r, cap) in enumerate(zip(stages, caps, strict=True)):
            lam = lambda_schedule(r, m)
            diag["lambda"].append(lam)
            inv_alpha = 1.0 / alpha
            a = float(inv_alpha.sum())
            g = table.patterns_f @ inv_alpha
            G = None
            if W is None or self.variant == "spce":   # eq. (13) at every stage; once for the ablations
                W = self._initial_weights(S_free, g, table.pattern, a, lam, shat_free, out=W)
            sum_w = (n * n - 2 * table.n_free) + 2.0 * float(W.sum())
            terms = _StageTerms(W, gamma, previous=terms)   # takes over the previous stage's buffers
            same_w = member_weight_sums(table, terms.W2)
            passed = False
            it = 0
            for it in range(cap):
                if it > 0:
                    inv_alpha = 1.0 / alpha
                    a = float(inv_alpha.sum())
                    g = table.patterns_f @ inv_alpha
                    G = None
                if Y is not E_of:  # Y is unchanged after a revert: reuse its distances
                    E, E_of = PairDistances(Y, free_rows, free_cols, sqdist_work), Y   # where they are read
                if terms.can_prune:                                          # eq. (16)/(17)
                    S_free, nonzero = terms.s_update_pruned(g, table.pattern, E, a, rho, table.by_pattern,
                                                            table.pattern_start)
                else:
                    G = g[table.pattern] if G is None else G
                    S_free, nonzero = terms.s_update(G, E.full(), a, rho), None
                Y_old = Y
                spec = self._spectrum(table, S_free, c, Y_old, nonzero,      # eq. (18)
                                      terms.sorted_nonzero if nonzero is not None else None)
                lobpcg_calls += spec.lobpcg_calls
                lobpcg_not_converged += spec.lobpcg_not_converged
                losses = member_losses(table, terms.W2, S_free, same_w, table.free_nonzero_index,
                                       ws=terms.weighted_s(S_free))
                alpha = alpha_update(losses, self.alpha_floor)               # eq. (21)
                nnz = n + 2 * table.free_nonzero + 2 * table.n_ones
                data_term = float(np.sum(losses / alpha))
                no_rank = data_term - lam * sum_w + gamma * nnz
                diag["objective_no_rank"].append(no_rank)
                diag["objective"].append(no_rank + 2.0 * rho * spec.trace)
                diag["objective_eq6"].append(float(np.sqrt(losses).sum()) - lam * sum_w + gamma * nnz)
                diag["stage_of_iteration"].append(stage)
                diag["n_components_trace"].append(spec.n_components)
                if self.rank_test == "components":
                    fewer = spec.n_components < c
                    more = spec.n_components > c
                else:
                    fewer = float(np.sum(spec.values[:c])) > self.tol_fewer
                    more = (not fewer) and float(np.sum(spec.values[:c + 1])) < self.tol_more
                if fewer:
                    rho *= 2.0
                    branch = "double"
                elif more:
                    rho /= 2.0
                    branch = "halve"   # Y stays Y_old (the new one is not even built when indicators)
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

        labels = spec.labels
        k = spec.n_components
        S_upper = upper_matrix(table, S_free)
        diag.update({
            "n_components": k, "rank_target_reached": bool(k == c), "converged": bool(diag["exit_test_passed"][-1]),
            "n_iter": int(sum(diag["inner_iterations"])), "alpha": alpha.tolist(), "rho_final": rho,
            "fallback_needed": bool(k != c), "fallback_applied": False,
            "lobpcg_calls": lobpcg_calls, "lobpcg_not_converged": lobpcg_not_converged,
        })
        if k != c and self.fallback != "none":
            labels = self._fallback_labels(S_upper, Y, c, n, rng)
            diag["fallback_applied"] = True
            diag["fallback"] = self.fallback
        self.diagnostics_ = diag
        self.n_iter_ = diag["n_iter"]
        self.consensus_matrix_ = (S_upper + S_upper.T + sparse.identity(n, format="csr")).tocsr()
        return labels

    def _fallback_labels(self, S_upper, Y: Embedding, c, n, rng):
        if self.fallback == "kmeans-y":
            return kmeans_labels(dense_embedding(Y, c), c, random_state=rng)
        affinity = (S_upper + S_upper.T + sparse.identity(n, format="csr")).tocsr()
        return spectral_clustering(affinity, c, random_state=rng)


def upper_matrix(table: PairTable, S_free: np.ndarray, nonzero_sorted: np.ndarray | None = None,
                 layout=None) -> sparse.csr_matrix:
    """CSR of the nonzero S_pq, p < q: the free pairs with S != 0 plus the Omega-ones (value 1).

    ``nonzero_sorted``: flatnonzero(S_free) when the caller has it. ``layout``: the ``kept_layout`` that
    PairTable.components left behind for this S_free's nonzero set; the matrix is then written straight
    into it (the same indptr, indices and values as merging the free part with the ones).

    The free pairs are stored in CSR order, so their matrix is assembled without sorting; the constant
    Omega-one part is built once and added (a linear merge of two canonical CSR matrices).
    """
    n = table.n
    if layout is not None:
        indptr, indices, free_slots, free_index = layout
        data = np.ones(indices.shape[0])
        data[free_slots] = S_free[free_index]
        out = sparse.csr_matrix((data, indices, indptr), shape=(n, n))
        out.has_sorted_indices = True
        return out
    keep = np.flatnonzero(S_free) if nonzero_sorted is None else nonzero_sorted
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(table.free_rows[keep], minlength=n), out=indptr[1:])
    free_part = sparse.csr_matrix((S_free[keep], table.free_cols[keep], indptr), shape=(n, n))
    free_part.has_sorted_indices = True
    if table.n_ones == 0:
        return free_part
    ones = getattr(table, "_ones_csr", None)
    if ones is None:
        ones = sparse.coo_matrix((np.ones(table.n_ones), (table.one_rows, table.one_cols)), shape=(n, n)).tocsr()
        ones.sort_indices()
        table._ones_csr = ones
    return (free_part + ones).tocsr()


def member_weight_sums(table: PairTable, W2: np.ndarray) -> np.ndarray:
    """sum over the free pairs that member i puts together of W^2 (fixed within a stage)."""
    per_pattern = np.bincount(table.pattern, weights=W2, minlength=table.patterns.shape[0])
    return table.patterns_tf @ per_pattern


def member_losses(table: PairTable, W2: np.ndarray, S_free: np.ndarray, same_w=None, nonzero=None,
                  out=None, ws=None) -> np.ndarray:
    """loss_i = ||(S - S^(i)) . W||_F^2 for every member (eq. 21), from the free pairs only.

    Omega pairs contribute nothing (there S = S^(i) for every i). For binary S^(i) and the symmetric pair
    (p, q) counted twice: loss_i = 2 [sum W^2 S^2 - 2 sum_{same_i} W^2 S + sum_{same_i} W^2] (spec 6).
    ``nonzero``: optional indices of the pairs with S != 0, increasing within each agreement pattern; the
    per-pattern sums then skip the zero terms and add the others in the same order (adding +0.0 changes no
    partial sum, so the result is bit-for-bit the same). ``out``: buffer for W^2 S; ``ws``: W^2 S when the
    caller has it (see _StageTerms.weighted_s).
    """
    if table.n_free == 0:
        return np.zeros(table.m)
    if same_w is None:
        same_w = member_weight_sums(table, W2)
    if ws is None:
        ws = np.multiply(W2, S_free, out=out)
    total = float(np.dot(ws, S_free))
    if nonzero is None:
        per_pattern_ws = np.bincount(table.pattern, weights=ws, minlength=table.patterns.shape[0])
    else:
        per_pattern_ws = np.bincount(table.pattern[nonzero], weights=ws[nonzero],
                                     minlength=table.patterns.shape[0])
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

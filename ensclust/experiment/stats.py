"""Significance tests: between two methods' per-repetition scores (paired / Student / Welch t-test, the
tables' dagger marks), and of several methods over several data sets (Friedman test with the Iman-Davenport
correction and the Nemenyi critical difference, Demsar JMLR 2006)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats


def pvalue(a: dict, b: dict, kind: str = "paired") -> float:
    """Two-sided p-value of the difference between two methods' scores.

    ``a`` and ``b`` map repetition -> score. ``paired`` (default) uses ``scipy.stats.ttest_rel`` on the
    repetitions both methods finished (they share ensembles, so the pairing is by repetition);
    ``student`` / ``welch`` use ``ttest_ind`` with equal / unequal variances on all values. Identical
    samples (zero variance of the differences and zero mean difference) give p = 1; fewer than two values
    give NaN (no test). Differences are "constant" up to rounding (a spread of at most
    :data:`ROUNDING_TOL` times the scores' magnitude): the same score computed from different partitions
    can differ in its last bits, and a t statistic of rounding noise is meaningless (SciPy warns of
    catastrophic cancellation there).
    """
    if kind == "paired":
        reps = sorted(set(a) & set(b))
        if len(reps) < 2:
            return math.nan
        x = np.array([a[r] for r in reps], dtype=float)
        y = np.array([b[r] for r in reps], dtype=float)
        d = x - y
        tol = _rounding_tol(x, y)
        if np.ptp(d) <= tol:
            # constant difference: zero -> no evidence; non-zero -> perfectly consistent difference
            return 1.0 if abs(float(np.mean(d))) <= tol else 0.0
        return float(stats.ttest_rel(x, y).pvalue)
    x = np.array(list(a.values()), dtype=float)
    y = np.array(list(b.values()), dtype=float)
    if x.size < 2 or y.size < 2:
        return math.nan
    tol = _rounding_tol(x, y)
    if np.ptp(x) <= tol and np.ptp(y) <= tol:
        return 1.0 if abs(float(np.mean(x) - np.mean(y))) <= tol else 0.0
    return float(stats.ttest_ind(x, y, equal_var=(kind == "student")).pvalue)


#: Relative size of a difference of scores that is rounding, not a difference (see :func:`pvalue`).
ROUNDING_TOL = 1e-12


def _rounding_tol(x: np.ndarray, y: np.ndarray) -> float:
    return ROUNDING_TOL * max(1.0, float(np.max(np.abs(x))), float(np.max(np.abs(y))))


# ---------------------------------------------------------------------------------------------------------
# Average ranks over data sets (Demsar 2006): rank the methods on each data set (1 = best, ties get the
# average rank), average the ranks over data sets, test whether the average ranks differ (Friedman chi^2,
# Iman-Davenport F) and report the Nemenyi critical difference CD = q_alpha * sqrt(k (k + 1) / (6 N))
# (q_alpha = studentized range quantile / sqrt(2)). Two methods whose average ranks differ by less than CD
# are not significantly different.


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Critical value q_alpha of the two-tailed Nemenyi test for k methods (Demsar 2006, Table 5a)."""
    if k < 2:
        raise ValueError("the Nemenyi test needs at least two methods")
    return float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf) / math.sqrt(2.0))


def rank_rows(scores: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Rank each row (data set) of an N x k score matrix: 1 = best, ties share the average rank."""
    data = -scores if higher_is_better else scores
    return np.vstack([stats.rankdata(row, method="average") for row in data])


@dataclass
class FriedmanResult:
    methods: list
    datasets: list
    average_ranks: dict
    chi2: float
    chi2_pvalue: float
    iman_davenport_f: float
    iman_davenport_pvalue: float
    critical_difference: float
    alpha: float
    dropped: list = field(default_factory=list)

    @property
    def n_datasets(self) -> int:
        return len(self.datasets)

    def table(self) -> pd.DataFrame:
        """Methods sorted by average rank, with the CD and whether each differs from the best method."""
        rows = sorted(self.average_ranks.items(), key=lambda kv: kv[1])
        best = rows[0][1]
        return pd.DataFrame({
            "method": [m for m, _ in rows],
            "average_rank": [r for _, r in rows],
            "diff_to_best": [r - best for _, r in rows],
            "significantly_worse_than_best": [bool(r - best > self.critical_difference) for _, r in rows],
        })

    def summary(self) -> str:
        return (f"Friedman over N={self.n_datasets} data sets, k={len(self.methods)} methods: chi2={self.chi2:.3f} "
                f"(p={self.chi2_pvalue:.3g}), Iman-Davenport F={self.iman_davenport_f:.3f} "
                f"(p={self.iman_davenport_pvalue:.3g}); Nemenyi CD(alpha={self.alpha})={self.critical_difference:.3f}"
                + (f"; dropped data sets with missing scores: {', '.join(self.dropped)}" if self.dropped else ""))


def friedman_nemenyi(scores: pd.DataFrame, *, alpha: float = 0.05, higher_is_better: bool = True,
                     missing: str = "drop-datasets") -> FriedmanResult:
    """Friedman test + Nemenyi CD on a data-set x method score table (rows = data sets, columns = methods).

    ``missing``: "drop-datasets" (default) removes data sets with any missing score and lists them in
    ``dropped``; "drop-methods" removes methods with any missing score instead; "error" raises.
    """
    table = scores.apply(pd.to_numeric, errors="coerce")
    dropped: list = []
    if table.isna().any().any():
        if missing == "drop-datasets":
            bad = table.index[table.isna().any(axis=1)]
            dropped = [str(b) for b in bad]
            table = table.drop(index=bad)
        elif missing == "drop-methods":
            bad = table.columns[table.isna().any(axis=0)]
            dropped = [f"method {b}" for b in bad]
            table = table.drop(columns=bad)
        else:
            raise ValueError("missing scores in the table")
    N, k = table.shape
    if N < 2 or k < 2:
        raise ValueError(f"need at least 2 data sets and 2 methods with complete scores, got {N} x {k}")
    ranks = rank_rows(table.to_numpy(dtype=float), higher_is_better)
    R = ranks.mean(axis=0)
    chi2 = 12.0 * N / (k * (k + 1)) * (np.sum(R**2) - k * (k + 1) ** 2 / 4.0)
    chi2_p = float(stats.chi2.sf(chi2, k - 1))
    denom = N * (k - 1) - chi2
    if denom > 0:
        ff = (N - 1) * chi2 / denom
        ff_p = float(stats.f.sf(ff, k - 1, (k - 1) * (N - 1)))
    else:  # identical rankings on every data set
        ff, ff_p = math.inf, 0.0
    cd = nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * N))
    return FriedmanResult(methods=[str(c) for c in table.columns], datasets=[str(i) for i in table.index],
                          average_ranks={str(m): float(r) for m, r in zip(table.columns, R, strict=True)},
                          chi2=float(chi2), chi2_pvalue=chi2_p, iman_davenport_f=float(ff),
                          iman_davenport_pvalue=ff_p, critical_difference=float(cd), alpha=alpha, dropped=dropped)

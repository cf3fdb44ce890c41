"""Significance tests between two methods' per-repetition scores."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def pvalue(a: dict, b: dict, kind: str = "paired") -> float:
    """Two-sided p-value of the difference between two methods' scores.

    ``a`` and ``b`` map repetition -> score. ``paired`` (default) uses ``scipy.stats.ttest_rel`` on the
    repetitions both methods finished (they share ensembles, so the pairing is by repetition);
    ``student`` / ``welch`` use ``ttest_ind`` with equal / unequal variances on all values. Identical
    samples (zero variance of the differences and zero mean difference) give p = 1; fewer than two values
    give NaN (no test).
    """
    if kind == "paired":
        reps = sorted(set(a) & set(b))
        if len(reps) < 2:
            return math.nan
        x = np.array([a[r] for r in reps], dtype=float)
        y = np.array([b[r] for r in reps], dtype=float)
        d = x - y
        if np.all(d == d[0]):
            # constant difference: zero -> no evidence; non-zero -> perfectly consistent difference
            return 1.0 if d[0] == 0 else 0.0
        return float(stats.ttest_rel(x, y).pvalue)
    x = np.array(list(a.values()), dtype=float)
    y = np.array(list(b.values()), dtype=float)
    if x.size < 2 or y.size < 2:
        return math.nan
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return 1.0 if x[0] == y[0] else 0.0
    return float(stats.ttest_ind(x, y, equal_var=(kind == "student")).pvalue)

"""Synthetic ensembles with planted normal / anomalous partitions (RCEC paper Sec. 5.1, Fig. 3).

specs/rcec.md 4.4 and R17. The ground truth has ``n_clusters`` clusters of ``cluster_size`` points.

* normal partition: half of the clusters (chosen at random) are "normal" - 20 % of their points get a label drawn
  uniformly from the other labels; the other half are "anomalous" - 80 % relabelled the same way;
* anomalous partition: every cluster anomalous (80 % relabelled);
* extremely anomalous partition: one true cluster kept intact, the other points randomly permuted and cut into
  groups of ``cluster_size`` with no relation to the truth (spec R17's recommended reading).
"""

from __future__ import annotations

import numpy as np

from ensclust.rng import check_random_state

KINDS = ("normal", "anomalous", "extreme")


def _relabel_fraction(y: np.ndarray, truth: np.ndarray, cluster: int, fraction: float, n_clusters: int, rng):
    # select from the true cluster, not from y, so points moved in earlier are not moved twice
    idx = np.flatnonzero(truth == cluster)
    k = int(round(fraction * idx.size))
    chosen = rng.choice(idx, size=k, replace=False)
    others = np.array([c for c in range(n_clusters) if c != cluster])
    y[chosen] = rng.choice(others, size=k)


def synthetic_partition(kind: str, truth: np.ndarray, n_clusters: int, rng) -> np.ndarray:
    """One partition of the given kind built from the planted ``truth``."""
    y = truth.copy()
    if kind == "normal":
        normal = rng.permutation(n_clusters)[: n_clusters // 2]
        for c in range(n_clusters):
            _relabel_fraction(y, truth, c, 0.2 if c in normal else 0.8, n_clusters, rng)
    elif kind == "anomalous":
        for c in range(n_clusters):
            _relabel_fraction(y, truth, c, 0.8, n_clusters, rng)
    elif kind == "extreme":
        keep = int(rng.integers(n_clusters))
        rest = rng.permutation(np.flatnonzero(truth != keep))
        size = int(np.sum(truth == keep))
        y = np.full(truth.shape, 0)
        y[rest] = 1 + np.arange(rest.size) // size
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return y


def rcec_synthetic_ensemble(n_extra: int, kind: str, *, n_normal=10, n_clusters=10, cluster_size=10,
                            random_state=None):
    """``n_normal`` normal partitions plus ``n_extra`` partitions of ``kind``; returns ``(members, truth)``."""
    rng = check_random_state(random_state)
    truth = np.repeat(np.arange(n_clusters), cluster_size)
    cols = [synthetic_partition("normal", truth, n_clusters, rng) for _ in range(n_normal)]
    cols += [synthetic_partition(kind, truth, n_clusters, rng) for _ in range(n_extra)]
    return np.column_stack(cols), truth

"""Clustering quality metrics, all computed from one contingency table.

Conventions follow the papers' reference code (see the specs):

* ``acc``      best one-to-one matching between clusters and classes (Hungarian), also when the numbers
               of clusters and classes differ (unmatched points count as errors).
* ``nmi``      I(T;Y) normalised by the ``arithmetic`` (2I/(H1+H2), EC-CMS and AWEC code), ``geometric``,
               ``max`` (Huang's LWEA/PTA/ECPCS code, Zhou's group) or ``min`` of the two entropies.
               Two single-cluster labelings give 1 (identical); one constant labeling against a non-constant
               one gives 0.
* ``ari``      Hubert-Arabie adjusted Rand index; 0 in the degenerate case where the expected index equals
               the maximum (as the reference ``RandIndex`` code returns), except identical labelings -> 1.
* ``fscore``   pair-counting F-measure (EC-CMS ``compute_f``, AWEC ``ClusteringMeasure``): precision and recall
               over unordered same-cluster / same-class pairs; P = 1 if no predicted pair, R = 1 if no true pair,
               F = 0 if P + R = 0.
* ``fmeasure`` class-matching F-measure: sum over classes of n_c/n * max over clusters of F(class, cluster).
* ``purity``   sum over clusters of the largest class count, divided by n.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from scipy.optimize import linear_sum_assignment

from ensclust.errors import UserError, unknown_name_error

NMI_AVERAGES = ("arithmetic", "geometric", "max", "min")


def _as_labels(labels, name: str) -> np.ndarray:
    arr = np.asarray(labels).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    _, inv = np.unique(arr, return_inverse=True)
    return inv.astype(np.int64)


def contingency(y_true, y_pred) -> np.ndarray:
    """Dense contingency table ``C[i, j] = #{true class i, predicted cluster j}`` (labels made 0..k-1)."""
    t = _as_labels(y_true, "y_true")
    p = _as_labels(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.size} labels but y_pred has {p.size}")
    table = sparse.coo_matrix((np.ones(t.size, dtype=np.int64), (t, p)), shape=(t.max() + 1, p.max() + 1))
    return table.toarray()


def _comb2(x):
    x = np.asarray(x, dtype=np.float64)
    return x * (x - 1.0) / 2.0


def _entropy(counts: np.ndarray, n: float) -> float:
    p = counts[counts > 0] / n
    return float(-(p * np.log(p)).sum())


def _mutual_info(table: np.ndarray) -> float:
    n = table.sum()
    rows = table.sum(axis=1, keepdims=True)
    cols = table.sum(axis=0, keepdims=True)
    nz = table > 0
    outer = (rows @ cols)[nz]
    vals = table[nz]
    return float(max((vals / n * np.log(vals * n / outer)).sum(), 0.0))


def nmi(y_true, y_pred, average: str = "arithmetic") -> float:
    """Normalised mutual information with the chosen normalisation (see module docstring)."""
    if average not in NMI_AVERAGES:
        raise unknown_name_error("NMI normalisation", average, NMI_AVERAGES)
    table = contingency(y_true, y_pred)
    n = table.sum()
    h_true = _entropy(table.sum(axis=1), n)
    h_pred = _entropy(table.sum(axis=0), n)
    if h_true == 0.0 and h_pred == 0.0:
        return 1.0
    if h_true == 0.0 or h_pred == 0.0:
        return 0.0
    mi = _mutual_info(table)
    denom = {
        "arithmetic": (h_true + h_pred) / 2.0,
        "geometric": np.sqrt(h_true * h_pred),
        "max": max(h_true, h_pred),
        "min": min(h_true, h_pred),
    }[average]
    return float(min(mi / denom, 1.0))


def ari(y_true, y_pred) -> float:
    """Hubert-Arabie adjusted Rand index from the contingency table."""
    table = contingency(y_true, y_pred)
    n = table.sum()
    sum_cells = _comb2(table).sum()
    sum_rows = _comb2(table.sum(axis=1)).sum()
    sum_cols = _comb2(table.sum(axis=0)).sum()
    total = _comb2(n)
    expected = sum_rows * sum_cols / total if total > 0 else 0.0
    maximum = (sum_rows + sum_cols) / 2.0
    if maximum == expected:
        # Degenerate case (e.g. a single cluster on both sides): identical labelings agree perfectly.
        return 1.0 if table.shape[0] == table.shape[1] and np.count_nonzero(table) == table.shape[0] else 0.0
    return float((sum_cells - expected) / (maximum - expected))


def fscore(y_true, y_pred) -> float:
    """Pair-counting F-measure (precision/recall over same-cluster vs same-class pairs)."""
    table = contingency(y_true, y_pred)
    tp = _comb2(table).sum()
    same_pred = _comb2(table.sum(axis=0)).sum()
    same_true = _comb2(table.sum(axis=1)).sum()
    precision = tp / same_pred if same_pred > 0 else 1.0
    recall = tp / same_true if same_true > 0 else 1.0
    if precision + recall == 0:
        return 0.0
    return float(2 * precision * recall / (precision + recall))


def fmeasure(y_true, y_pred) -> float:
    """Class-matching F-measure: sum_c n_c/n max_k F(c, k)."""
    table = contingency(y_true, y_pred).astype(np.float64)
    n = table.sum()
    class_sizes = table.sum(axis=1, keepdims=True)
    cluster_sizes = table.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(table > 0, 2 * table / (class_sizes + cluster_sizes), 0.0)
    return float((class_sizes.ravel() / n * f.max(axis=1)).sum())


def purity(y_true, y_pred) -> float:
    """Fraction of points in the majority class of their cluster."""
    table = contingency(y_true, y_pred)
    return float(table.max(axis=0).sum() / table.sum())


def best_matching(y_true, y_pred) -> dict[int, int]:
    """Hungarian one-to-one map from predicted cluster id to true class id (0-based ids after relabelling)."""
    table = contingency(y_true, y_pred)
    rows, cols = linear_sum_assignment(-table)
    return {int(c): int(r) for r, c in zip(rows, cols, strict=True)}


def acc(y_true, y_pred) -> float:
    """Clustering accuracy under the best one-to-one matching of clusters to classes."""
    table = contingency(y_true, y_pred)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / table.sum())


METRICS = {
    "acc": acc,
    "nmi": nmi,
    "ari": ari,
    "fscore": fscore,
    "fmeasure": fmeasure,
    "purity": purity,
}


def consensus_fro(method) -> float:
    """Frobenius norm of a fitted method's ``consensus_matrix_`` as the method holds it (dense or sparse; NaN
    when the method keeps none). EC-CMS Table III reports its relative change across ADMM penalties."""
    C = getattr(method, "consensus_matrix_", None)
    if C is None:
        return math.nan
    if hasattr(C, "multiply"):  # scipy.sparse
        return float(np.sqrt(C.multiply(C).sum()))
    return float(np.linalg.norm(np.asarray(C, dtype=np.float64)))


#: Metrics of the fitted method rather than of its labels: filled by the experiment runner after the fit,
#: absent (NaN) for the base-clustering rows.
FIT_METRICS = {
    "consensus_fro": consensus_fro,
}


def check_metric_names(names, where: str = "") -> list[str]:
    """Validate label metric names (case-insensitive), returning them lower-cased."""
    out = []
    for name in names:
        key = str(name).lower()
        if key not in METRICS:
            raise unknown_name_error("metric", name, METRICS, where)
        out.append(key)
    return out


def label_metrics(names) -> list[str]:
    """The names in ``names`` that score labels (:data:`METRICS`), dropping the fit metrics."""
    return [n for n in names if str(n).lower() not in FIT_METRICS]


def evaluate(y_true, y_pred, metrics=("acc", "nmi", "ari", "fscore"), nmi_average: str = "arithmetic") -> dict:
    """All requested metrics of ``y_pred`` against ``y_true`` as a dict ``{name: value}``."""
    y_true = np.asarray(y_true).ravel()
    y_pred = np.asarray(y_pred).ravel()
    if y_true.shape != y_pred.shape:
        raise UserError(f"labels have length {y_pred.size} but the ground truth has {y_true.size}")
    out = {}
    for name in check_metric_names(label_metrics(metrics)):
        fn = METRICS[name]
        out[name] = fn(y_true, y_pred, average=nmi_average) if name == "nmi" else fn(y_true, y_pred)
    return out


def member_scores(members, y_true, metrics=("acc", "nmi", "ari", "fscore"), nmi_average="arithmetic") -> dict:
    """Metric of every base clustering (column of ``members``): ``{metric: array of length m}``.

    The papers' "KM-avg"/"KM-best" (or "Base clusterings average/best") rows are the mean and the maximum
    of these values over the pool or the ensemble. A member of an incomplete ensemble (-1 = not labelled) is
    scored on the points it labels.
    """
    members = np.asarray(members)
    y_true = np.asarray(y_true)
    per_member = []
    for j in range(members.shape[1]):
        keep = members[:, j] != -1
        per_member.append(evaluate(y_true[keep], members[keep, j], metrics, nmi_average))
    return {k: np.array([d[k] for d in per_member]) for k in per_member[0]} if per_member else {}

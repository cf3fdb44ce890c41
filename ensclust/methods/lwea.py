"""LWEA: locally weighted evidence accumulation (Huang, Wang & Lai, IEEE TCYB 48(5) 2018, Section III-C).

Average-link agglomerative clustering of the locally weighted co-association matrix (Eq. 8-9; building
blocks in :mod:`ensclust.core.lwca`), distance ``1 - LWCA``, cut at exactly k clusters like MATLAB's
``cluster(Z, 'maxclust', k)`` (authors' ``runLWEA.m``; specs/baselines/huang_family.md 1.3).

Deterministic. Tie rule: when several merges are at exactly the same distance SciPy's NN-chain order is used
(``ensclust.core.hierarchy``); MATLAB's ``linkage`` may pick another pair, which is the only source of
difference to the authors' code.

Objects with identical label vectors (microclusters) have identical LWCA rows, so by default
(``hac="microclusters"``) the average-link tree is built on the microclusters as size-weighted leaves plus
their internal merges (:func:`ensclust.core.microclusters.microcluster_average_link_labels`): the same
dendrogram and cut as the object-level HAC up to exact ties, in O(n_micro^2) time and memory.
``hac="objects"`` runs SciPy's ``linkage`` on the n(n-1)/2 object distances (no n x n matrix either).
"""

from __future__ import annotations

import numpy as np

from ensclust.core.hierarchy import hac_labels
from ensclust.core.lwca import eci, lwca_condensed_distance, micro_lwca
from ensclust.core.microclusters import compute_microclusters, microcluster_average_link_labels
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

THETA = Param(0.4, type="float", low=0.0, low_open=True,
              doc="ECI parameter: ECI = exp(-H / (theta M)); larger -> weights closer to 1 (plain CA)",
              source="authors' demo_LWEA.m / demo_LWGP.m (para_theta = 0.4), also EC-CMS's demo; "
                     "paper recommends [0.2, 1]")


HAC = Param("microclusters", type="str", choices=("microclusters", "objects"),
            doc="average-link HAC on size-weighted microclusters (fast, same tree) or on all objects (SciPy)",
            source="ensclust choice (speed); both equal the authors' object-level linkage up to exact ties")


def eci_diagnostics(w: np.ndarray) -> dict:
    """Summary of the cluster weights (JSON-serialisable)."""
    return {"eci_min": float(w.min()), "eci_mean": float(w.mean()), "eci_max": float(w.max()),
            "n_base_clusters": int(w.size)}


@register
class LWEA(ConsensusMethod):
    """Locally weighted evidence accumulation: average-link HAC on the LWCA matrix."""

    name = "lwea"
    accepts_missing = True
    missing_doc = "ECI from the labelled part of each cluster (p_ij over the points member q labels), LWCA averaged over the members labelling both points; a missing entry is its own value for the microclusters"
    summary = "locally weighted evidence accumulation (ECI-weighted co-association + average-link HAC)"
    params = {"theta": THETA, "hac": HAC}

    def _fit(self, members, n_clusters, X, rng):
        w = eci(members, self.theta)
        self.diagnostics_.update(eci_diagnostics(w))
        if members.shape[0] == 1:
            return np.zeros(1, dtype=np.int64)
        if self.hac == "objects":
            d = lwca_condensed_distance(members, self.theta, cluster_weights=w)
            return hac_labels(distance=d, n_clusters=n_clusters, linkage="average")
        micro = compute_microclusters(members)
        S = micro_lwca(micro, w)   # LWCA between microclusters
        self.diagnostics_["n_micro"] = micro.n_micro
        return microcluster_average_link_labels(S, micro, n_clusters)

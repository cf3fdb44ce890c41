"""LWGP: locally weighted graph partitioning (Huang, Wang & Lai, IEEE TCYB 48(5) 2018, Section III-D).

The object-cluster bipartite graph with link weight ECI(C_j) between object i and each cluster C_j that
contains it (``C = B diag(ECI)``), partitioned by Tcut (authors' ``runLWGP.m``; specs/baselines/
huang_family.md 1.4). Only the small K x K eigenproblem is solved. The final k-means is randomised and is
seeded from ``random_state``.
"""

from __future__ import annotations

from ensclust.core.lwca import eci, weighted_indicator
from ensclust.core.tcut import tcut
from ensclust.errors import UserError
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod
from ensclust.methods.lwea import THETA, eci_diagnostics


@register
class LWGP(ConsensusMethod):
    """Locally weighted graph partitioning: Tcut of the ECI-weighted object-cluster bipartite graph."""

    name = "lwgp"
    accepts_missing = True
    missing_doc = "ECI as for lwea; a missing entry is no edge of the ECI-weighted object-cluster graph"
    summary = "locally weighted graph partitioning (Tcut on the ECI-weighted object-cluster graph)"
    params = {"theta": THETA}
    randomized = True


    def _fit(self, members, n_clusters, X, rng):
        w = eci(members, self.theta)
        self.diagnostics_.update(eci_diagnostics(w))
        if n_clusters > w.size:
            # runLWGP.m errors here too (its Tcut needs at least k clusters on the small side)
            raise UserError(f"lwgp: the ensemble has only {w.size} base clusters in total, fewer than "
                            f"n_clusters={n_clusters}")
        C = weighted_indicator(members, w)
        return tcut(C, n_clusters, random_state=rng)

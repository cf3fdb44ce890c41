"""PTGP: probability trajectory based graph partitioning (Huang, Lai & Wang, IEEE TKDE 28(5) 2016, Sec. 5.2).

Bipartite graph between microclusters and base clusters with link weight = mean PTS between microcluster i
and the microclusters of cluster j (Def. 11: ``C = PTS B~ diag(1 / (1^T B~))``, denominators count
microclusters), partitioned by Tcut (authors' ``runPTGP_v2.m``; specs/baselines/huang_family.md 2.5).
The Tcut k-means is randomised and is seeded from ``random_state``. When Tcut cannot run (fewer base clusters
than k) the code catches the error and returns one cluster; so do we (``diagnostics_['tcut_failed']``).

Isolated microclusters (no link in the elite-neighbour graph: they share no base cluster with any other
microcluster) get PTS 1e-20 in their whole row and column in the code, *including their own diagonal*, so
their links to their own clusters vanish; with identical members every microcluster is isolated and the
code's PTGP collapses to one cluster. Default here (``isolated_self='one'``): an isolated microcluster keeps
self-similarity 1, so it links to the clusters that contain it (identical members are then returned
unchanged). ``isolated_self='code'`` reproduces the code. Non-isolated microclusters are unaffected, and
isolated ones are rare on real ensembles (``diagnostics_['n_isolated']``).
"""

from __future__ import annotations

import numpy as np

from ensclust.core.tcut import tcut
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param
from ensclust.methods.pta import PTS_PARAMS, pts_for


@register
class PTGP(ConsensusMethod):
    """Tcut of the PTS-weighted microcluster-cluster bipartite graph."""

    name = "ptgp"
    accepts_missing = True
    missing_doc = "PTS as for pta-*; a missing entry is no edge of the microcluster-cluster graph"
    summary = "probability trajectory graph partitioning (Tcut on the PTS-weighted microcluster-cluster graph)"
    params = {
        **PTS_PARAMS,
        "isolated_self": Param("one", type="str", choices=("one", "code"),
                               doc="self-similarity of isolated microclusters in the PTGP graph: 1, or the "
                                   "code's 1e-20",
                               source="ensclust deviation for a degenerate case (see module docstring); "
                                      "'code' = runPTGP_v2.m + computePTS_fast_v3.m"),
    }
    randomized = True

    def _fit(self, members, n_clusters, X, rng):
        res = pts_for(self, members)
        S = res.similarity
        if self.isolated_self == "one" and res.isolated.any():
            iso = np.flatnonzero(res.isolated)
            S[iso, iso] = 1.0
        Bm = res.micro.indicator()
        counts = np.asarray(Bm.sum(axis=0)).ravel()           # microclusters per base cluster (>= 1)
        C = np.asarray(Bm.T @ S).T / counts[None, :]   # PTS B~ diag(1/counts); PTS symmetric
        if n_clusters > C.shape[1]:
            self.diagnostics_["tcut_failed"] = True
            return np.zeros(members.shape[0], dtype=np.int64)
        micro_labels = tcut(C, n_clusters, random_state=rng)
        return res.micro.to_objects(micro_labels)

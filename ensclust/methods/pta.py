"""PTA: probability trajectory accumulation (Huang, Lai & Wang, IEEE TKDE 28(5) 2016, Section 5.1).

Agglomerative clustering of the microclusters with distance ``1 - PTS`` (each microcluster one unweighted
leaf, as the paper's Def. 10 and ``runPTA_v2.m`` do), cut at exactly k clusters, labels mapped back to the
objects (specs/baselines/huang_family.md 2.4). PTS is built in :mod:`ensclust.core.pts`.

Deterministic. Tie rule as in ``ensclust.core.hierarchy`` (SciPy's merge order on exact distance ties).
When there are fewer microclusters than k the code returns one cluster per microcluster; so do we (the only
case with fewer than k clusters). ``cut="code"`` follows the authors' code where the cut height is tied
(more than k clusters, e.g. isolated microclusters all at distance 1; issue 18); default ``"exact"``.
"""

from __future__ import annotations

from ensclust.core.hierarchy import hac_labels
from ensclust.core.pts import probability_trajectory_similarity
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

PTS_PARAMS = {
    "K": Param(None, type="int", low=0, allow_none=True,
               doc="number of elite neighbours (None: rule)",
               source="authors' demo_PTA_PTGP.m: K = min(20, floor(sqrt(n_micro)/2)); "
                      "paper Sec. 6.1: floor(sqrt(n_micro)/2)"),
    "T": Param(None, type="int", low=1, allow_none=True,
               doc="random-walk length (None: rule)",
               source="authors' demo_PTA_PTGP.m: T = min(20, floor(sqrt(n_micro)/2)); "
                      "paper Sec. 6.1: floor(sqrt(n_micro)/2)"),
    "rule": Param("code", type="str", choices=("code", "paper"),
                  doc="default rule for K and T when they are None: 'code' caps both at 20, 'paper' does not",
                  source="specs/baselines/huang_family.md 2.3 (code rule recommended)"),
    "dtype": Param("auto", type="str", choices=("auto", "float64", "float32"),
                   doc="precision of the random-walk products: auto = float32 above 2500 microclusters "
                       "(~2x faster, PTS relative error ~1e-6), else float64",
                   source="ensclust choice (speed goal of issue #10); float64 = the authors' double precision"),
}


def pts_for(method, members):
    """PTS of ``members`` with the method's K, T, rule and dtype; records K, T and n_micro in diagnostics."""
    res = probability_trajectory_similarity(members, method.K, method.T, rule=method.rule, dtype=method.dtype)
    method.diagnostics_.update({"n_micro": res.micro.n_micro, "K": res.n_neighbors, "T": res.n_steps,
                                "n_isolated": int(res.isolated.sum()),
                                "pts_dtype": str(res.similarity.dtype)})
    return res


class _PTA(ConsensusMethod):
    linkage = "average"
    params = {
        **PTS_PARAMS,
        "cut": Param("exact", type="str", choices=("exact", "code"),
                     doc="'exact': undo the last k-1 merges (always k clusters); 'code': undo every merge at "
                         "or above the height of merge n_micro-k+1, so a tie at the cut height gives more "
                         "than k clusters",
                     source="specs/baselines/huang_family.md 0.2 (exact); issue 18: the authors' runPTA_v2.m "
                            "(linkage + cluster(Z, 'maxclust', k)) returns more than k clusters where the cut "
                            "height is tied (code)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        res = pts_for(self, members)
        k = min(n_clusters, res.micro.n_micro)
        micro_labels = hac_labels(res.similarity, k, linkage=self.linkage, cut=self.cut)
        return res.micro.to_objects(micro_labels)


@register
class PTAAverage(_PTA):
    """PTA with average linkage on the microclusters (the "PTA" of EC-CMS Table VII)."""

    name = "pta-al"
    accepts_missing = True
    missing_doc = "microclusters treat a missing entry as its own value; their co-association is over the members labelling both, then PTS as usual"
    linkage = "average"
    summary = "probability trajectory accumulation, average linkage on microclusters"


@register
class PTAComplete(_PTA):
    """PTA with complete linkage on the microclusters."""

    name = "pta-cl"
    accepts_missing = True
    missing_doc = "microclusters treat a missing entry as its own value; their co-association is over the members labelling both, then PTS as usual"
    linkage = "complete"
    summary = "probability trajectory accumulation, complete linkage on microclusters"


@register
class PTASingle(_PTA):
    """PTA with single linkage on the microclusters (computed by the code, not reported in the papers)."""

    name = "pta-sl"
    accepts_missing = True
    missing_doc = "microclusters treat a missing entry as its own value; their co-association is over the members labelling both, then PTS as usual"
    linkage = "single"
    summary = "probability trajectory accumulation, single linkage on microclusters"

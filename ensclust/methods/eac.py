"""EAC: evidence accumulation clustering (Fred & Jain, TPAMI 2005).

specs/baselines/coassociation.md section 2: agglomerative clustering of the co-association matrix
(distance 1 - A) with single, average or complete linkage, cut at exactly c clusters (section 3: the MATLAB
``cluster(...,'maxclust')`` rule, which ``fcluster`` does not follow when heights tie).
"""

from __future__ import annotations

from ensclust.core.coassoc import coassociation
from ensclust.core.hierarchy import hac_labels
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param


class _EAC(ConsensusMethod):
    linkage = "average"
    params = {
        "dtype": Param("float32", type="str", choices=("float32", "float64"),
                       doc="precision of the co-association matrix (float32 is exact for counts)",
                       source="ensclust choice; counts are exact, only the division by m rounds"),
    }

    def _fit(self, members, n_clusters, X, rng):
        A = coassociation(members, dtype=self.dtype)
        return hac_labels(A, n_clusters, linkage=self.linkage)


@register
class EACAverage(_EAC):
    """EAC with average linkage (UPGMA) - the default EAC of the EC-CMS paper (Table VI)."""

    name = "eac-al"
    accepts_missing = True
    missing_doc = "co-association over the members that label both points (pairs labelled together by no member: 0), then average link"
    linkage = "average"
    summary = "evidence accumulation, average linkage on the co-association matrix"


@register
class EACSingle(_EAC):
    """EAC with single linkage (Fred & Jain's original choice)."""

    name = "eac-sl"
    missing_doc = ("single / complete link follow the extreme co-association entries, which pairs labelled "
                   "together by few members produce: ARI about 0.0-0.1 at 50 % missing on planted data")
    linkage = "single"
    summary = "evidence accumulation, single linkage on the co-association matrix"


@register
class EACComplete(_EAC):
    """EAC with complete linkage."""

    name = "eac-cl"
    missing_doc = ("single / complete link follow the extreme co-association entries, which pairs labelled "
                   "together by few members produce: ARI about 0.0-0.1 at 50 % missing on planted data")
    linkage = "complete"
    summary = "evidence accumulation, complete linkage on the co-association matrix"

"""Extra EAC checks (issue #4): exactly c clusters on heavily tied co-association values, dtype choice."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage

from ensclust.core.coassoc import coassociation
from ensclust.core.hierarchy import condensed_distance
from ensclust.methods import get_method
from ensclust.testing import planted_ensemble


def _tied_members():
    # three members on 12 objects: co-association takes only the values 0, 1/3, 2/3, 1
    rng = np.random.default_rng(0)
    return np.column_stack([rng.integers(0, 3, 12) for _ in range(3)])


@pytest.mark.parametrize("name", ["eac-al", "eac-sl", "eac-cl"])
def test_eac_exactly_k_where_fcluster_gives_fewer(name):
    members = _tied_members()
    method = {"eac-al": "average", "eac-sl": "single", "eac-cl": "complete"}[name]
    Z = linkage(condensed_distance(coassociation(members, dtype=np.float64)), method=method)
    fewer = [k for k in range(2, 12) if len(np.unique(fcluster(Z, k, "maxclust"))) < k]
    assert fewer, "the example must contain height ties"
    for k in range(2, 12):
        assert len(np.unique(get_method(name).fit_predict(members, k))) == k


@pytest.mark.parametrize("name", ["eac-al", "eac-sl", "eac-cl"])
def test_eac_float32_and_float64_agree(name):
    members, _ = planted_ensemble(n=100, c=4, m=10, random_state=1)
    a = get_method(name).fit_predict(members, 4)
    b = get_method(name, dtype="float64").fit_predict(members, 4)
    assert np.array_equal(a, b)

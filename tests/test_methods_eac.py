import numpy as np
import pytest

from ensclust.methods import get_method
from ensclust.testing import check_method_properties


@pytest.mark.parametrize("name", ["eac-al", "eac-sl", "eac-cl"])
def test_eac_properties(name):
    check_method_properties(name)


def test_eac_identical_members_all_linkages():
    y = np.array([0, 0, 1, 1, 2, 2, 2])
    for name in ["eac-al", "eac-sl", "eac-cl"]:
        out = get_method(name).fit_predict(np.column_stack([y] * 4), 3)
        assert out.tolist() == [0, 0, 1, 1, 2, 2, 2]

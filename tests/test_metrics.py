import numpy as np
import pytest
from sklearn import metrics as skm

from ensclust import metrics as M


def test_hand_computed_values():
    y = [0, 0, 0, 1, 1, 1]
    p = [0, 0, 1, 1, 2, 2]
    # contingency [[2,1,0],[0,1,2]] -> best matching 2 + 2 = 4 of 6
    assert M.acc(y, p) == pytest.approx(4 / 6)
    # purity: clusters {0,0},{0,1},{1,1} -> 2+1+2 = 5 of 6
    assert M.purity(y, p) == pytest.approx(5 / 6)
    # pairs: same cluster 3 pairs, of which 2 same class; same class pairs 6 -> P=2/3, R=1/3
    assert M.fscore(y, p) == pytest.approx(2 * (2 / 3) * (1 / 3) / (2 / 3 + 1 / 3))
    # class-matching F: class 0 best with cluster 0: 2*2/(3+2)=0.8 ; class 1 with cluster 2: 0.8
    assert M.fmeasure(y, p) == pytest.approx(0.8)


def test_acc_with_different_cluster_counts():
    assert M.acc([0, 0, 1, 1], [0, 0, 0, 0]) == pytest.approx(0.5)
    assert M.acc([0, 0, 1, 1], [0, 1, 2, 3]) == pytest.approx(0.5)


@pytest.mark.parametrize("avg", ["arithmetic", "geometric", "max", "min"])
def test_nmi_matches_sklearn(avg):
    rng = np.random.default_rng(0)
    for _ in range(5):
        a = rng.integers(0, 4, 200)
        b = rng.integers(0, 6, 200)
        assert M.nmi(a, b, avg) == pytest.approx(skm.normalized_mutual_info_score(a, b, average_method=avg))


def test_ari_matches_sklearn():
    rng = np.random.default_rng(1)
    for _ in range(5):
        a = rng.integers(0, 4, 150)
        b = np.where(rng.random(150) < 0.7, a, rng.integers(0, 4, 150))
        assert M.ari(a, b) == pytest.approx(skm.adjusted_rand_score(a, b))


def test_permutation_invariance_and_perfect_agreement():
    y = np.array([3, 3, 5, 5, 9, 9, 9])
    p = np.array([1, 1, 0, 0, 2, 2, 2])
    for name in M.METRICS:
        assert M.evaluate(y, p, [name])[name] == pytest.approx(1.0)


def test_degenerate_cases():
    assert M.ari([0, 0, 0], [0, 0, 0]) == 1.0
    assert M.ari([0, 1, 2], [0, 0, 0]) == 0.0
    assert M.nmi([0, 0, 1], [0, 0, 0]) == 0.0
    assert M.fscore([0, 1, 2], [0, 1, 2]) == 1.0  # no pairs at all: P = R = 1


def test_unknown_metric_and_nmi_average():
    from ensclust.errors import UserError

    with pytest.raises(UserError, match="did you mean 'nmi'"):
        M.evaluate([0, 1], [0, 1], ["nmii"])
    with pytest.raises(UserError):
        M.nmi([0, 1], [0, 1], "mean")


def test_member_scores():
    members = np.array([[0, 0], [0, 1], [1, 1], [1, 0]])
    s = M.member_scores(members, [0, 0, 1, 1], ["acc"])
    assert s["acc"].tolist() == [1.0, 0.5]

"""LWEA, LWGP, PTA-AL/CL/SL, PTGP, ECPCS-HC/MC: shared properties, spec oracles and the EC-CMS numbers."""

import numpy as np
import pytest
from test_huang_lwca import F30_GT, f30_members

from ensclust.core.labels import check_members
from ensclust.errors import UserError
from ensclust.methods import get_method, get_method_class
from ensclust.metrics import ari
from ensclust.testing import check_method_properties, planted_ensemble, same_partition

HUANG = ["lwea", "lwgp", "pta-al", "pta-cl", "pta-sl", "ptgp", "ecpcs-hc", "ecpcs-mc"]


@pytest.mark.parametrize("name", HUANG)
def test_properties(name):
    check_method_properties(name)


@pytest.mark.parametrize("name", HUANG)
def test_determinism_and_defaults_documented(name):
    members, _ = planted_ensemble(n=60, c=3, m=8, random_state=7)
    a = get_method(name).fit_predict(members, 3, random_state=11)
    b = get_method(name).fit_predict(members, 3, random_state=11)
    assert np.array_equal(a, b)
    for pname, p in get_method_class(name).params.items():
        assert p.source, f"{name}.{pname} has no documented source"


def test_lwea_f30_recovers_ground_truth():
    # specs/eccms.md 8.1: LWEA (average link on the LWCA) recovers gt
    assert same_partition(get_method("lwea").fit_predict(f30_members(), 3), F30_GT)


def test_lwea_large_theta_equals_eac():
    # L4: theta -> infinity gives ECI -> 1, LWCA -> CA, LWEA -> EAC-AL
    members, _ = planted_ensemble(n=80, c=4, m=10, random_state=2)
    a = get_method("lwea", theta=1e12).fit_predict(members, 4)
    b = get_method("eac-al", dtype="float64").fit_predict(members, 4)
    assert same_partition(a, b)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pta_fewer_microclusters_than_k_and_ptgp_code_mode():
    y = np.repeat([0, 1], 5)
    members = np.column_stack([y] * 3)
    # 2 microclusters, k = 3: one cluster per microcluster (the code's behaviour)
    assert same_partition(get_method("pta-al").fit_predict(members, 3), y)
    # identical members: every microcluster isolated; the code's PTGP graph is degenerate -> 1 cluster,
    # ensclust's default keeps self-similarity 1 and returns the partition
    assert same_partition(get_method("ptgp").fit_predict(members, 2), y)
    out = get_method("ptgp", isolated_self="code").fit_predict(members, 2, random_state=0)
    assert len(np.unique(out)) == 1


def test_ptgp_tcut_failure_returns_one_cluster_and_lwgp_errors():
    members = np.column_stack([np.repeat([0, 1], 5)] * 2)   # K = 4 base clusters
    m = get_method("ptgp")
    assert np.all(m.fit_predict(members, 5) == 0) and m.diagnostics_["tcut_failed"]
    with pytest.raises(UserError):
        get_method("lwgp").fit_predict(members, 5)


def test_pts_parameters_reported():
    members, _ = planted_ensemble(n=90, c=3, m=10, random_state=4)
    m = get_method("pta-al", K=3, T=4)
    m.fit(members, 3)
    assert m.diagnostics_["K"] == 3 and m.diagnostics_["T"] == 4
    m = get_method("pta-al", rule="paper").fit(members, 3)
    n_micro = m.diagnostics_["n_micro"]
    assert m.diagnostics_["K"] == int(np.floor(np.sqrt(n_micro) / 2))


def test_ecpcs_mc_votes_first_index():
    members, y = planted_ensemble(n=90, c=3, m=10, random_state=5)
    m = get_method("ecpcs-mc").fit(members, 3, random_state=0)
    assert ari(m.labels_, y) > 0.9
    assert m.diagnostics_["n_meta_clusters"] <= 3


# -- the EC-CMS protocol on the authors' pools (specs/eccms.md 8.3 and paper Table IV) ------------------
def _runs(data_dir, name, n_runs):
    from scipy.io import loadmat

    d = loadmat(str(data_dir / "pools" / f"eccms_{name}.mat"))
    P, y = d["members"], d["gt"].ravel()
    rs = np.random.RandomState(1)
    for _ in range(n_runs):
        yield check_members(P[:, np.argsort(rs.rand(100), kind="stable")[:20]]), y


def _mean_std(data_dir, method, name):
    scores = [ari(y, get_method(method).fit_predict(P, len(np.unique(y)))) for P, y in _runs(data_dir, name, 20)]
    return round(float(np.mean(scores)), 3), round(float(np.std(scores, ddof=1)), 3)


def test_lwea_ecoli_protocol_equals_paper(data_dir):
    # eccms.md 8.2: first 20 pool columns -> ARI 0.4306; 8.3: 20 runs -> 0.430 +- 0.030 (= paper Table IV)
    from scipy.io import loadmat

    d = loadmat(str(data_dir / "pools" / "eccms_ecoli.mat"))
    assert round(ari(d["gt"].ravel(), get_method("lwea").fit_predict(d["members"][:, :20], 8)), 4) == 0.4306
    assert _mean_std(data_dir, "lwea", "ecoli") == (0.430, 0.030)


@pytest.mark.parametrize("method, expected", [("pta-al", (0.323, 0.027)), ("pta-cl", (0.323, 0.029)),
                                              ("ecpcs-hc", (0.317, 0.039)), ("lwea", (0.348, 0.038))])
def test_deterministic_methods_umist_equal_paper(data_dir, method, expected):
    # EC-CMS Table IV, UMIST column (ARI mean +- std over the 20 runs)
    assert _mean_std(data_dir, method, "umist") == expected


@pytest.mark.parametrize("name", ["lwea", "ecpcs-hc"])
def test_microcluster_hac_equals_object_hac_in_methods(name):
    members, _ = planted_ensemble(n=120, c=4, m=10, random_state=9, k_range=(4, 9))
    a = get_method(name, hac="microclusters").fit_predict(members, 4)
    b = get_method(name, hac="objects").fit_predict(members, 4)
    assert same_partition(a, b)


@pytest.mark.parametrize("name", ["pta-al", "pta-cl", "pta-sl"])
def test_pta_code_cut_more_clusters_at_a_tied_height(name):
    # 5 groups, identical members: every microcluster is isolated (PTS 1e-20 between them), so all merges
    # happen at distance 1 - 1e-20 == 1.0; asking for 3 clusters cuts at that tied height. The exact cut
    # returns 3 clusters, the code's cut undoes every merge at that height and returns the 5 groups.
    y = np.repeat(np.arange(5), 4)
    members = np.column_stack([y] * 4)
    exact = get_method(name).fit_predict(members, 3)
    code = get_method(name, cut="code").fit_predict(members, 3)
    assert len(np.unique(exact)) == 3
    assert len(np.unique(code)) == 5 and same_partition(code, y)


@pytest.mark.parametrize("name", ["pta-al", "pta-cl", "pta-sl"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pta_code_cut_equals_exact_without_tie(name, seed):
    members, _ = planted_ensemble(n=150, c=4, m=12, random_state=seed)
    m = get_method(name, cut="code")
    code = m.fit_predict(members, 4)
    exact = get_method(name).fit_predict(members, 4)
    assert len(np.unique(code)) == 4
    assert code.tobytes() == exact.tobytes()

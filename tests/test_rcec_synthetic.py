"""The RCEC paper's synthetic claim (Fig. 3) on a small instance, and the generator's structure."""

import numpy as np

from ensclust.methods import get_method
from ensclust.metrics import nmi
from ensclust.synthetic import rcec_synthetic_ensemble, synthetic_partition


def test_generator_kinds():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(10), 10)
    normal = synthetic_partition("normal", truth, 10, rng)
    moved = [(normal[truth == c] != c).sum() for c in range(10)]
    assert sorted(moved) == [2] * 5 + [8] * 5
    anomalous = synthetic_partition("anomalous", truth, 10, rng)
    assert all((anomalous[truth == c] != c).sum() == 8 for c in range(10))
    extreme = synthetic_partition("extreme", truth, 10, rng)
    sizes = np.bincount(extreme)
    assert len(sizes) == 10 and np.all(sizes == 10)
    kept = [c for c in range(10) if len(np.unique(extreme[truth == c])) == 1]
    assert len(kept) >= 1
    members, y = rcec_synthetic_ensemble(3, "extreme", random_state=1)
    assert members.shape == (100, 13)


def test_rcec_robust_where_hbgf_degrades():
    def mean_nmi(method, params, extra):
        scores = []
        for rep in range(3):
            members, y = rcec_synthetic_ensemble(extra, "anomalous", random_state=100 + rep)
            scores.append(nmi(y, get_method(method, **params).fit_predict(members, 10, random_state=rep), "max"))
        return np.mean(scores)

    rcec_clean, rcec_noisy = mean_nmi("rcec", {"beta": 4.0}, 0), mean_nmi("rcec", {"beta": 4.0}, 10)
    hbgf_clean, hbgf_noisy = mean_nmi("hbgf", {}, 0), mean_nmi("hbgf", {}, 10)
    # Adding 10 anomalous partitions to 10 normal ones costs RCEC less than half of what it costs HBGF.
    assert hbgf_clean - hbgf_noisy > 2 * (rcec_clean - rcec_noisy)
    assert rcec_noisy > hbgf_noisy


def test_figure_oracle_rows_and_resume(tmp_path, monkeypatch):
    from ensclust.figures import rcec_synthetic as fig

    methods = {"HBGF": ("hbgf", {}, {}), "RCEC": ("rcec", {}, {"beta": [1, 12]})}
    kw = dict(n_extra=range(2), kinds=("anomalous",), repetitions=2, methods=methods)
    records = fig.run(tmp_path, **kw)
    table = __import__("pandas").read_csv(tmp_path / "table.csv", index_col=[0, 1])
    assert {"Ave", "HBGF", "RCEC (oracle)", "RCEC (beta=12)"} <= set(table.columns)
    assert (table["RCEC (oracle)"] >= table["RCEC (beta=12)"]).all()
    rcec = records[records["method"] == "RCEC"].groupby(["n_extra", "params"])["nmi"].mean()
    for extra in (0, 1):
        assert table.loc[("anomalous", extra), "RCEC (oracle)"] == round(rcec.loc[extra].max(), 4)
    assert (tmp_path / "fig3.png").stat().st_size > 0 and (tmp_path / "oracle_choice.csv").exists()

    def no_fit(*a, **k):
        raise AssertionError("a finished record was recomputed")

    monkeypatch.setattr(fig, "get_method", no_fit)
    again = fig.run(tmp_path, **kw)  # everything is on disk: nothing is fitted again
    assert len(again) == len(records)

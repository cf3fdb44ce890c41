"""Incomplete ensembles: missing labels (NaN, or a declared value such as -1) end to end.

The shared blocks are checked against brute-force definitions (co-association over the members labelling
both points, ECI over the labelled part of each cluster, microclusters with a missing entry as a value of its
own); every method with ``accepts_missing`` is run on planted data with 10 / 30 / 50 % missing entries; every
other method must refuse with one line naming those that accept.
"""

from __future__ import annotations

import numpy as np
import pytest

from ensclust.cli import main as cli_main
from ensclust.core.coassoc import _divide_by_labelled_both, coassociation, coassociation_counts
from ensclust.core.labels import MISSING_LABEL, check_members, one_hot
from ensclust.core.lwca import cluster_uncertainty, lwca_condensed_distance, lwca_matrix
from ensclust.core.microclusters import compute_microclusters, microcluster_coassociation
from ensclust.errors import UserError
from ensclust.methods import get_method, list_methods
from ensclust.methods.base import methods_accepting_missing
from ensclust.metrics import ari
from ensclust.testing import planted_ensemble

#: the methods verified below; a change to this set must be deliberate (and tested here)
ACCEPTING = {"awec-h", "awec-s", "cspa", "eac-al", "eccms", "ecpcs-hc", "ecpcs-mc", "hbgf", "kc", "lwea", "lwgp",
             "mcla", "pta-al", "pta-cl", "pta-sl", "ptgp"}
FRACTIONS = (0.1, 0.3, 0.5)
#: graceful degradation: mean ARI over the seeds at each missing fraction must reach at least this
MIN_MEAN_ARI = {0.1: 0.9, 0.3: 0.8, 0.5: 0.6}
SEEDS = (0, 1, 2)


def with_missing(members: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Float copy of ``members`` with a random ``fraction`` of the entries set to NaN."""
    out = members.astype(np.float64)
    out[np.random.default_rng(100 + seed).random(out.shape) < fraction] = np.nan
    return out


def brute_coassociation(members: np.ndarray, weights=None) -> np.ndarray:
    """C_ij = sum_q w_q [both labelled, same cluster] / sum_q w_q [both labelled], by loops."""
    n, m = members.shape
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
    C = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            both = (members[i] >= 0) & (members[j] >= 0)
            den = w[both].sum()
            C[i, j] = (w[both] * (members[i, both] == members[j, both])).sum() / den if den > 0 else 0.0
    return C


# -- input ------------------------------------------------------------------------------------------------
def test_check_members_missing_representations():
    raw = np.array([[1.0, 5.0], [np.nan, 5.0], [2.0, np.nan], [2.0, 7.0]])
    out = check_members(raw)
    np.testing.assert_array_equal(out, [[0, 0], [MISSING_LABEL, 0], [1, MISSING_LABEL], [1, 1]])
    ints = np.array([[1, 5], [-1, 5], [2, -1], [2, 7]])
    np.testing.assert_array_equal(check_members(ints, missing=-1), out)
    np.testing.assert_array_equal(check_members(np.where(ints == -1, 0, ints + 1), missing=0), out)
    # a complete matrix is relabelled exactly as before
    np.testing.assert_array_equal(check_members(np.array([[3, 1], [3, 2]])), [[0, 0], [0, 1]])


@pytest.mark.parametrize("bad, match", [
    (np.array([[1, -1], [2, 3]]), "declare it"),
    (np.array([[1.0, np.inf], [2.0, 3.0]]), "Inf"),
    (np.array([[np.nan, 1.0], [np.nan, 2.0]]), "labels no point"),
    (np.array([[np.nan, np.nan], [1.0, 2.0]]), "labelled by no member"),
    (np.array([[0.5, 1.0], [1.0, 1.0]]), "non-integer"),
])
def test_check_members_refusals_are_one_line(bad, match):
    with pytest.raises(UserError, match=match) as exc:
        check_members(bad)
    assert "\n" not in str(exc.value)


# -- shared blocks ----------------------------------------------------------------------------------------
def _small_missing(seed=0, n=30, m=6, fraction=0.3):
    members, _ = planted_ensemble(n=n, c=3, m=m, random_state=seed, k_range=(2, 5))
    return check_members(with_missing(members, fraction, seed))


def test_one_hot_has_no_edge_for_a_missing_entry():
    M = _small_missing()
    B = one_hot(M).toarray()
    labelled = (M != MISSING_LABEL).sum(axis=1)
    np.testing.assert_array_equal(B.sum(axis=1), labelled)
    assert set(np.unique(B)) <= {0.0, 1.0}


@pytest.mark.parametrize("seed", [0, 1])
def test_coassociation_over_members_labelling_both(seed):
    M = _small_missing(seed)
    expected = brute_coassociation(M)
    np.testing.assert_allclose(coassociation(M, dtype=np.float64), expected, atol=1e-12)
    np.testing.assert_allclose(coassociation(M, dtype=np.float64, dense=False).toarray(), expected, atol=1e-12)
    np.testing.assert_allclose(np.diag(coassociation(M)), 1.0)
    np.testing.assert_allclose(coassociation(M), expected, atol=1e-6)                     # float32
    # the sparse form, one row block at a time (3 rows a block here)
    blocked = _divide_by_labelled_both(coassociation_counts(M).astype(np.float64), M, block_bytes=8 * 3 * len(M))
    np.testing.assert_allclose(blocked.toarray(), expected, atol=1e-12)
    w = np.random.default_rng(seed).random(M.shape[1]) + 0.1
    np.testing.assert_allclose(coassociation(M, dtype=np.float64, weights=w), brute_coassociation(M, w), atol=1e-12)
    np.testing.assert_allclose(coassociation(M, dtype=np.float64, weights=w, dense=False).toarray(),
                               brute_coassociation(M, w), atol=1e-12)


def test_zero_denominator_gives_zero_not_nan():
    # points 0 and 3 are never labelled by the same member
    M = check_members(np.array([[0, np.nan], [0, 1], [1, 1], [np.nan, 0]], dtype=float))
    C = coassociation(M, dtype=np.float64)
    assert np.all(np.isfinite(C)) and C[0, 3] == 0.0 and C[3, 0] == 0.0
    np.testing.assert_allclose(np.diag(C), 1.0)


def test_microclusters_keep_theorem_1():
    """Within a microcluster every similarity is equal: MCA over microclusters = object-level CA."""
    M = _small_missing(2, n=40, m=4, fraction=0.2)
    micro = compute_microclusters(M)
    mca = microcluster_coassociation(micro)
    C = coassociation(M, dtype=np.float64)
    a = micro.assignment
    off = ~np.eye(len(a), dtype=bool)
    np.testing.assert_allclose(mca[np.ix_(a, a)][off], C[off], atol=1e-12)
    # objects of one microcluster share the missing pattern
    for r in range(micro.n_micro):
        rows = M[a == r]
        assert (rows == rows[0]).all()


def test_eci_over_the_labelled_part_of_each_cluster():
    M = _small_missing(3)
    H = cluster_uncertainty(M)
    expected = []
    for q in range(M.shape[1]):
        for label in range(M[:, q].max() + 1):
            inside = M[:, q] == label
            h = 0.0
            for r in range(M.shape[1]):
                part = M[inside, r]
                part = part[part >= 0]
                if part.size:
                    p = np.bincount(part) / part.size
                    p = p[p > 0]
                    h -= (p * np.log2(p)).sum()
            expected.append(h)
    np.testing.assert_allclose(H, expected, atol=1e-12)


def test_lwca_dense_and_microcluster_forms_agree():
    M = _small_missing(4)
    A = lwca_matrix(M)
    d = lwca_condensed_distance(M)
    iu = np.triu_indices(M.shape[0], 1)
    np.testing.assert_allclose(1.0 - A[iu], d, atol=1e-12)
    assert np.all(np.isfinite(A))


# -- methods ----------------------------------------------------------------------------------------------
def test_the_declared_set_is_the_tested_set():
    assert set(methods_accepting_missing()) == ACCEPTING
    for name in ACCEPTING:
        assert list_methods()[name].missing_doc, f"{name}: say how missing labels are treated"


@pytest.mark.parametrize("name", sorted(ACCEPTING))
def test_accepting_method_degrades_gracefully(name):
    c = 3
    scores = {f: [] for f in FRACTIONS}
    for seed in SEEDS:
        members, y = planted_ensemble(n=150, c=c, m=20, random_state=seed, k_range=(3, 6))
        for fraction in FRACTIONS:
            M = with_missing(members, fraction, seed)
            labels = get_method(name).fit_predict(M, c, random_state=seed)
            assert labels.dtype.kind in "iu" and labels.shape == (150,)
            assert labels.min() == 0 and labels.max() <= c - 1
            scores[fraction].append(ari(y, labels))
    for fraction, values in scores.items():
        assert np.mean(values) >= MIN_MEAN_ARI[fraction], (name, fraction, values)
    # deterministic, and the declared -1 gives the same labels as NaN
    members, _ = planted_ensemble(n=150, c=c, m=20, random_state=0, k_range=(3, 6))
    M = with_missing(members, 0.3, 0)
    first = get_method(name).fit_predict(M, c, random_state=7)
    again = get_method(name).fit_predict(np.where(np.isnan(M), -1, M).astype(np.int64), c, random_state=7,
                                         missing=-1)
    np.testing.assert_array_equal(first, again)
    est = get_method(name).fit(M, n_clusters=c, random_state=7)
    if est.consensus_matrix_ is not None:
        assert np.all(np.isfinite(np.asarray(est.consensus_matrix_)))


@pytest.mark.parametrize("name", sorted(set(list_methods()) - ACCEPTING))
def test_other_methods_refuse_in_one_line(name):
    members, _ = planted_ensemble(n=30, c=3, m=6, random_state=0)
    X = np.random.default_rng(0).random((30, 4))
    with pytest.raises(UserError) as exc:
        get_method(name).fit_predict(with_missing(members, 0.1, 0), 3, X=X, random_state=0)
    msg = str(exc.value)
    assert "\n" not in msg and f"'{name}' does not accept missing labels" in msg
    assert "methods that do: " + ", ".join(sorted(ACCEPTING)) in msg


# -- command line -----------------------------------------------------------------------------------------
def _write_csvs(tmp_path):
    members, y = planted_ensemble(n=90, c=3, m=12, random_state=5, k_range=(3, 5))
    mask = np.random.default_rng(5).random(members.shape) < 0.3
    nan_csv = tmp_path / "partial.csv"
    rows = [",".join(f"m{j}" for j in range(members.shape[1])) + ",truth"]
    rows += [",".join("" if mask[i, j] else str(members[i, j]) for j in range(members.shape[1])) + f",{y[i]}"
             for i in range(members.shape[0])]
    nan_csv.write_text("\n".join(rows) + "\n")
    int_csv = tmp_path / "partial_int.csv"
    int_csv.write_text("\n".join(",".join("-1" if mask[i, j] else str(members[i, j])
                                          for j in range(members.shape[1])) for i in range(members.shape[0])) + "\n")
    return nan_csv, int_csv, int(mask.sum())


class _Result:
    def __init__(self, exit_code, output):
        self.exit_code, self.output = exit_code, output


class _Runner:
    """``ensclust`` in-process through its console entry point (exit codes and one-line errors included)."""

    def __init__(self, capsys):
        self.capsys = capsys

    def invoke(self, _main, argv):
        try:
            _main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
        out = self.capsys.readouterr()
        return _Result(code, out.out + out.err)


def test_cli_consensus_with_missing_labels(tmp_path, capsys):
    nan_csv, int_csv, n_missing = _write_csvs(tmp_path)
    runner = _Runner(capsys)
    out = tmp_path / "labels.txt"
    res = runner.invoke(cli_main, ["consensus", "--pool", str(nan_csv), "--y-key", "truth", "-k", "3", "-m", "lwea",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"({n_missing} labels missing)" in res.output
    assert float(res.output.split("ARI ")[1].split(",")[0]) >= 0.8
    from_nan = out.read_text()
    assert "nan" not in from_nan.lower()
    assert sorted(set(int(v) for v in from_nan.split())) == [0, 1, 2]
    res = runner.invoke(cli_main, ["consensus", "--pool", str(int_csv), "--missing", "-1", "-k", "3", "-m", "lwea",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text() == from_nan
    # undeclared -1: one line, exit 2, with the hint
    res = runner.invoke(cli_main, ["consensus", "--pool", str(int_csv), "-k", "3", "-m", "lwea", "--out", str(out)])
    assert res.exit_code == 2 and "--missing -1" in res.output and "Traceback" not in res.output
    # a method without support: one line naming those with it, exit 2
    res = runner.invoke(cli_main, ["consensus", "--pool", str(nan_csv), "--y-key", "truth", "-k", "3", "-m", "eac-sl",
                                   "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "methods that do: awec-h" in lines[0]


def test_cli_pool_import_reports_and_round_trips(tmp_path, capsys):
    _nan_csv, int_csv, n_missing = _write_csvs(tmp_path)
    runner = _Runner(capsys)
    h5 = tmp_path / "partial.h5"
    res = runner.invoke(cli_main, ["pool", "import", str(int_csv), "--missing", "-1", "--out", str(h5)])
    assert res.exit_code == 0, res.output
    assert f"missing:  {n_missing} of {90 * 12} labels" in res.output
    res = runner.invoke(cli_main, ["pool", "import", str(h5)])   # the file declares its missing label
    assert res.exit_code == 0, res.output
    assert f"missing:  {n_missing} of" in res.output
    out = tmp_path / "labels.txt"
    res = runner.invoke(cli_main, ["consensus", "--pool", str(h5), "-k", "3", "-m", "hbgf", "--out", str(out)])
    assert res.exit_code == 0, res.output


def test_cli_methods_documents_missing_support(capsys):
    res = _Runner(capsys).invoke(cli_main, ["methods", "lwea", "eac-sl", "sc"])
    assert res.exit_code == 0
    text = res.output
    assert "lwea: " in text and "[accepts missing labels]" in text.split("\n")[0]
    assert "    missing labels: ECI from the labelled part" in text
    assert "missing labels: refused (single / complete link" in text

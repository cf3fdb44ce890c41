"""SPCE's fast path against its plain dense reference (``solver="reference"``, spec 3.6), both through the
public estimator: the same partition, rho path, branches, inner iterations and S (to rounding)."""

import numpy as np
import pytest

from ensclust.errors import UserError
from ensclust.methods import get_method
from ensclust.methods.spce import expand_blocks
from ensclust.testing import same_partition


def _ensemble(seed, n, c, m, noise):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), -(-n // c))[:n]
    members = np.column_stack([rng.permutation(c)[np.where(rng.random(n) < noise, rng.integers(0, c, n), y)]
                               for _ in range(m)])
    return members


def _agree(members, c, **params):
    fast = get_method(params.pop("name", "spce"), **params)
    ref = fast.__class__(**{**fast.get_params(), "solver": "reference"})
    fast.fit(members, c)
    ref.fit(members, c)
    df, dr = fast.diagnostics_, ref.diagnostics_
    assert same_partition(fast.labels_, ref.labels_)
    assert df["rho"] == dr["rho"] and df["branch"] == dr["branch"]
    assert df["inner_iterations"] == dr["inner_iterations"] and df["n_components"] == dr["n_components"]
    assert np.allclose(df["alpha"], dr["alpha"], rtol=1e-9, atol=1e-12)
    n = members.shape[0]
    S_ref = ref.consensus_matrix_.toarray()
    S_fast = expand_blocks(fast.consensus_matrix_, fast.microcluster_assignment_).toarray()
    assert np.allclose(S_fast, S_ref, atol=1e-9)
    assert np.array_equal(np.diag(S_ref), np.ones(n))
    return df


@pytest.mark.parametrize("variant", ["spce", "spce-w", "spce-fixw"])
@pytest.mark.parametrize("seed", range(8))
def test_fast_matches_reference(variant, seed):
    theta = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8][seed]
    members = _ensemble(200 + seed, n=60, c=3, m=10, noise=0.3)
    _agree(members, 3, name=variant, theta=theta)


@pytest.mark.parametrize("rank_test", ["eigen", "components", "dense"])
def test_fast_matches_reference_rank_tests(rank_test):
    members = _ensemble(7, n=48, c=4, m=12, noise=0.35)
    for theta in (0.1, 0.3):
        _agree(members, 4, theta=theta, rank_test=rank_test)


def test_fast_matches_reference_many_clusters_and_lobpcg():
    """c = 8 (more than 4 eigenvector columns: the Gram-block distances) and components larger than
    dense_limit (LOBPCG with its warm start) against the dense eigh of the reference."""
    members = _ensemble(31, n=160, c=8, m=20, noise=0.3)
    seen_lobpcg = False
    for theta in (0.1, 0.3):
        d = _agree(members, 8, theta=theta, dense_limit=60, eig_tol=1e-10, eig_maxiter=2000)
        seen_lobpcg |= d["lobpcg_calls"] > 0
    assert seen_lobpcg


def test_fast_matches_reference_wide_ensemble():
    """m = 70 members: agreement patterns wider than one 64-bit word."""
    members = _ensemble(41, n=40, c=2, m=70, noise=0.25)
    _agree(members, 2, theta=0.2)


def test_reference_refuses_large_n_and_fallback():
    members = _ensemble(1, n=30, c=2, m=4, noise=0.2)
    with pytest.raises(UserError):
        get_method("spce", solver="reference", fallback="kmeans-y").fit(members, 2)
    from ensclust.methods import _spce_reference
    big = np.zeros((_spce_reference.REFERENCE_MAX_N + 1, 2), dtype=int)
    with pytest.raises(UserError):
        get_method("spce", solver="reference").fit(big, 1)

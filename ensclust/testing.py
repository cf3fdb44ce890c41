"""Synthetic ensembles and the property checks every consensus method must pass.

Used by the test-suite (and usable by anyone adding a method)::

    from ensclust.testing import check_method_properties
    check_method_properties("eac-al")
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ensclust.metrics import ari
from ensclust.rng import check_random_state


def planted_partition(n: int, c: int) -> np.ndarray:
    """Balanced ground truth 0..c-1 in blocks (n points)."""
    return np.repeat(np.arange(c), int(np.ceil(n / c)))[:n]


def planted_ensemble(n=120, c=3, m=20, *, noise_fraction=0.3, flip=0.1, random_state=0, k_range=None):
    """A label matrix whose members recover a planted partition, with a fraction of noisy members.

    Good members copy the planted labels (optionally split into more clusters when ``k_range`` is given)
    with a fraction ``flip`` of points relabelled at random; noisy members are uniformly random labelings.
    Returns ``(members, y)``.
    """
    rng = check_random_state(random_state)
    y = planted_partition(n, c)
    n_noisy = int(round(noise_fraction * m))
    cols = []
    for q in range(m):
        if q < m - n_noisy:
            lab = y.copy()
            if k_range is not None:
                k = int(rng.integers(k_range[0], k_range[1] + 1))
                # split clusters further: refine the planted partition (still consistent with y)
                extra = rng.integers(0, max(1, k // c), size=n)
                lab = lab * max(1, k // c) + extra
            idx = rng.random(n) < flip
            lab[idx] = rng.integers(0, lab.max() + 1, size=int(idx.sum()))
        else:
            lab = rng.integers(0, c, size=n)
        cols.append(lab)
    members = np.column_stack(cols)
    order = rng.permutation(m)
    return members[:, order], y


def blobs_with_members(n=150, c=3, m=10, random_state=0):
    """Well-separated Gaussian blobs, their features and a K-means ensemble (k = c) on them.

    For methods that need the features as well as the members. Returns ``(X, members, y)``.
    """
    from sklearn.cluster import KMeans
    from sklearn.datasets import make_blobs

    rng = check_random_state(random_state)
    X, y = make_blobs(n_samples=n, centers=c, cluster_std=1.0, random_state=int(rng.integers(1 << 30)))
    cols = [KMeans(c, n_init=1, random_state=int(rng.integers(1 << 30))).fit_predict(X) for _ in range(m)]
    return X, np.column_stack(cols), y


def same_partition(a, b) -> bool:
    """True when two labelings are equal up to renaming the clusters."""
    return ari(a, b) == 1.0 and len(np.unique(a)) == len(np.unique(b))


def check_method_properties(name, params=None, *, n=90, c=3, seed=0, min_ari=0.9, check_k=True):
    """Assert the shared properties of a consensus method (raises AssertionError on failure).

    1. m identical copies of a partition -> that partition (up to relabelling).
    2. relabelling any member and permuting the member order does not change the result
       (compared up to relabelling; for randomised methods with the same seed).
    3. planted clusters with 30% noisy members are recovered (ARI >= min_ari).
    4. exactly c clusters unless the method declares ``may_return_other_k``.
    """
    from ensclust.methods import get_method, get_method_class

    params = dict(params or {})
    cls = get_method_class(name)
    rng = np.random.default_rng(seed)
    X = None
    if cls.needs_features:
        X, members, y = blobs_with_members(n=n, c=c, m=10, random_state=seed)
    else:
        members, y = planted_ensemble(n=n, c=c, m=20, random_state=seed)

    # 1. identical partitions
    identical = np.column_stack([y] * 10)
    out = get_method(name, **params).fit_predict(identical, c, X=X, random_state=seed)
    assert same_partition(out, y), f"{name}: identical members not returned (ARI {ari(out, y):.3f})"

    # 2. relabelling + member order
    base = get_method(name, **params).fit_predict(members, c, X=X, random_state=seed)
    perm_members = members[:, rng.permutation(members.shape[1])].copy()
    for q in range(perm_members.shape[1]):
        mapping = rng.permutation(perm_members[:, q].max() + 1) + 7
        perm_members[:, q] = mapping[perm_members[:, q]]
    again = get_method(name, **params).fit_predict(perm_members, c, X=X, random_state=seed)
    if not cls.randomized:
        assert same_partition(base, again), f"{name}: result changed under member relabelling/reordering"
    else:
        assert ari(base, again) >= min_ari, f"{name}: unstable under relabelling (ARI {ari(base, again):.3f})"

    # 3. planted recovery
    score = ari(base, y)
    assert score >= min_ari, f"{name}: planted clusters not recovered (ARI {score:.3f} < {min_ari})"

    # 4. number of clusters
    if check_k and not cls.may_return_other_k:
        assert len(np.unique(base)) == c, f"{name}: returned {len(np.unique(base))} clusters, expected {c}"
    return base


def shared_data_dir() -> Path | None:
    """The papers' data directory (``ENSCLUST_DATA`` or ../shared/datasets) when it exists, else None."""
    env = os.environ.get("ENSCLUST_DATA")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared" / "datasets", here / "datasets"]
    for path in candidates:
        if path.is_dir() and (path / "MANIFEST.csv").exists():
            return path
    return None


#: Fixture F30 of specs/awec.md 8.1 and specs/eccms.md 8.1: ground truth and ten base clusterings (1-based
#: digit strings, one string per base clustering, n = 30, c = 3).
F30_TRUTH_STRING = "111111111122222222223333333333"
F30_MEMBER_STRINGS = (
    "111111121122222222212222212222", "111111111122222222223333333333", "131111142122222222222334344444",
    "412114444412212555253233233433", "111111211111212122212222222222", "131211113122233222221333333333",
    "111113444442222322223332333331", "111111121122225441443333535555", "111111111122222222222222112222",
    "111311111122222222223331313333",
)


def f30_fixture() -> tuple[np.ndarray, np.ndarray]:
    """``(members, truth)`` of the F30 fixture: members n x 10 relabelled 0-based, truth 0..2."""
    from ensclust.core.labels import check_members

    members = check_members(np.array([[int(ch) for ch in row] for row in F30_MEMBER_STRINGS]).T)
    truth = np.array([int(ch) for ch in F30_TRUTH_STRING]) - 1
    return members, truth


def invoke_cli(capsys, *argv) -> tuple[int, str, str]:
    """Run ``ensclust ARGV`` in-process (tests); returns ``(exit code, stdout, stderr)`` from pytest's capsys."""
    from ensclust.cli import main

    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(result, *fragments) -> None:
    """Check that an :func:`invoke_cli` result is a user error: exit code 2 and ONE stderr line
    ``ensclust: error: ...`` containing every fragment (the standard for bad input: no traceback)."""
    code, _, err = result
    assert code == 2, result
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ensclust: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])

"""A pool generator's code revision guards stored cells against a changed pool.

A cell's fingerprint holds the pool *spec*, not the members, so a change in a generator's code (or in the
K-means / eigensolver it calls) would silently leave cells computed on another pool. The pinned checksums
below fail on any such change: then raise ``GENERATOR_REVISIONS[<generator>]`` in ensclust/pools/generate.py
(the pool cache key and every fingerprint of that generator's cells change with it, so they are recomputed)
and pin the new checksums here.
"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from ensclust.experiment.config import ExperimentConfig, load_config_text
from ensclust.experiment.plan import plan_cells
from ensclust.pools import GENERATOR_REVISIONS, generate_members, members_checksum, pool_identity, pool_key

_X, _ = make_blobs(n_samples=240, centers=4, n_features=6, cluster_std=2.0, random_state=3)
_XPOS = np.abs(_X)  # non-negative rows, like term weights, for the cosine and min_df variants

# spec, input, first 16 hex digits of the members checksum under the current revisions
PINNED = {
    "kmeans_c": ({"generator": "kmeans", "k": "c", "size": 6}, _X, "6f1fed468a78985d"),
    "kmeans_range_subset": ({"generator": "kmeans", "k": [2, "sqrt"], "size": 6, "feature_ratio": [0.5, 1.0]},
                            _X, "f12f4833b3fd893f"),
    "kmeans_random_init": ({"generator": "kmeans", "k": "c", "size": 6, "init": "random"}, _X, "c428128090453c1e"),
    "kmeans_cosine": ({"generator": "kmeans", "k": "c", "size": 6, "kmeans_metric": "cosine", "min_df": 2},
                      _XPOS, "536ea6067e59aeda"),
    "kmeans_block_l2": ({"generator": "kmeans", "k": "c", "size": 6, "feature_ratio": [0.6, 1.0],
                         "feature_subset": "block", "feature_block": 3, "subset_normalize": "l2"},
                        _XPOS, "d6342bd7f7c83b71"),
    "spectral": ({"generator": "spectral", "k": "c", "size": 9}, _X, "6647b13e0b538bfe"),
}


@pytest.mark.parametrize("case", sorted(PINNED))
def test_generated_members_are_pinned_to_the_generator_revision(case):
    spec, X, pinned = PINNED[case]
    members, _, _ = generate_members(X, spec, n_clusters=4, seed=7)
    assert GENERATOR_REVISIONS == {"kmeans": 0, "spectral": 0}, "revision raised: pin the new checksums below"
    assert members_checksum(members)[:16] == pinned, (
        f"the {spec['generator']} generator now returns other members for the same spec and seed: raise "
        f"GENERATOR_REVISIONS['{spec['generator']}'] in ensclust/pools/generate.py and pin the new checksum")


CONFIG = """name: t
datasets:
  - name: iris
  - name: wine
    label: wine-spectral
    pool: {generator: spectral, k: c, size: 27}
methods:
  - name: eac-al
"""


def test_a_generator_revision_enters_only_its_own_pools_keys_and_fingerprints(monkeypatch):
    before = load_config_text(CONFIG, "cfg.yaml")
    cells_before = plan_cells(before)
    fp_before = {c["dataset"]: c["fingerprint"] for c in cells_before}
    saved = before.to_dict()
    assert all("pool_revision" not in d for d in saved["datasets"])  # revision 0: keys of older files unchanged

    class _Dataset:  # what pool_identity reads of a loaded dataset
        name, n_samples, n_features, n_clusters, meta = "wine", 178, 13, 3, {"sha256": "x"}

    spectral = {"generator": "spectral", "k": "c", "size": 27}
    key_before = pool_key(pool_identity(_Dataset, spectral, seed=0))
    kmeans_key = pool_key(pool_identity(_Dataset, {"generator": "kmeans", "k": "c"}, seed=0))
    monkeypatch.setitem(GENERATOR_REVISIONS, "spectral", 1)

    after = load_config_text(CONFIG, "cfg.yaml")
    cells_after = plan_cells(after)
    fp_after = {c["dataset"]: c["fingerprint"] for c in cells_after}
    assert fp_after["wine-spectral"] != fp_before["wine-spectral"] and fp_after["iris"] == fp_before["iris"]
    assert pool_key(pool_identity(_Dataset, spectral, seed=0)) != key_before
    assert pool_key(pool_identity(_Dataset, {"generator": "kmeans", "k": "c"}, seed=0)) == kmeans_key
    # a saved experiment keeps the revision its cells were computed under (a committed cells.csv takes its
    # fingerprints from that plan), and the new revision is saved with a new config
    assert [c["fingerprint"] for c in plan_cells(ExperimentConfig.from_dict(saved))] == [c["fingerprint"] for c in cells_before]
    resaved = after.to_dict()
    assert [d.get("pool_revision") for d in resaved["datasets"]] == [None, 1]
    assert [c["fingerprint"] for c in plan_cells(ExperimentConfig.from_dict(resaved))] == [c["fingerprint"] for c in cells_after]

"""The plan of an experiment: every cell (dataset x method x parameter point x repetition) in a stable order.

A cell is a dict with ``dataset``, ``method`` (row label), ``method_name`` (registry name), ``scope``
(pseudo-methods only), ``point`` (index in the method's grid), ``params`` (canonical JSON), ``rep`` (-1 for
a pool-level statistic), ``seed`` and ``fingerprint``. The fingerprint hashes everything in the config that
determines the cell's result (the dataset, its preprocessing, its pool spec and the pool generator's code
revision, the ensemble draws, the seed, the metrics, the method, its code revision and its parameters, the
repetition), so a stored result is reused only while all of these are unchanged (the arrays themselves are
checked by the runner's inputs digests). The number of repetitions is not part of it: the r-th ensemble does
not depend on how many are drawn (:mod:`ensclust.pools.draws`), so raising it keeps the finished repetitions.
The store and the runner both plan through this module (neither imports the other for it).
"""

from __future__ import annotations

import hashlib

from ensclust.experiment.config import ExperimentConfig, canonical_json
from ensclust.rng import derive_seed


def _draw_spec(ensemble: dict) -> dict:
    """The part of ``ensemble`` that decides a repetition's draw: all but the number of repetitions."""
    return {k: v for k, v in ensemble.items() if k != "repetitions"}


def plan_cells(config: ExperimentConfig) -> list[dict]:
    """Every cell of the experiment in a stable order (dataset, method, point, repetition)."""
    cells = []
    reps = config.ensemble["repetitions"]
    for ds in config.datasets:
        ds_fp = canonical_json({"name": ds.name, "preprocess": ds.preprocess, "params": ds.params, "pool": ds.pool,
                                "n_clusters": ds.n_clusters, "x_key": ds.x_key, "y_key": ds.y_key,
                                "ensemble": _draw_spec(config.ensemble), "seed": config.seed, "metrics": config.metrics,
                                "nmi_average": config.nmi_average, "std_ddof": config.std_ddof})
        if ds.pool_revision:  # like a method's revision: counts from 1 on, so older cells keep their fingerprints
            ds_fp += f"\x1fpoolrev{ds.pool_revision}"
        for method in config.methods:
            rep_list = ([-1] if (method.is_pseudo and method.scope == "pool")
                        else list(range(min(reps, method.repetitions or reps))))
            for point_index, params in enumerate(method.points):
                pjson = canonical_json(params)
                # a method's code revision counts only from 1 on: the cells of unrevised methods keep the
                # fingerprints they had before revisions existed
                revision = f"\x1frev{method.revision}" if method.revision else ""
                for rep in rep_list:
                    fingerprint = hashlib.sha256(
                        f"{ds_fp}\x1f{method.name}\x1f{method.scope}\x1f{pjson}\x1f{rep}{revision}".encode()
                    ).hexdigest()[:20]
                    cells.append({
                        "dataset": ds.label, "method": method.label, "method_name": method.name,
                        "scope": method.scope if method.is_pseudo else None,
                        "point": point_index, "params": pjson, "rep": rep,
                        "seed": derive_seed(config.seed, ds.label, rep, method.label, pjson),
                        "fingerprint": fingerprint,
                    })
    return cells

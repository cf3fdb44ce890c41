"""Pools of base clusterings: generated (with an HDF5 cache) or imported from a file, and ensemble draws.

Example::

    from ensclust.data import load_dataset
    from ensclust.pools import get_pool, draw_ensembles
    ds = load_dataset("ecoli")
    pool = get_pool(ds, {"generator": "kmeans", "k": [2, "sqrt"], "size": 100}, seed=0)
    for cols in draw_ensembles(pool.size, mode="randperm_stream", size=20, repetitions=20, seed=1):
        members = pool.columns(cols)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ensclust.errors import UserError
from ensclust.pools.cache import PoolCacheWarning, cache_path, pool_key, read_cached, write_cached
from ensclust.pools.draws import DRAW_MODES, draw_ensembles, required_pool_size
from ensclust.pools.generate import (
    GENERATOR_REVISIONS,
    GENERATORS,
    generate_members,
    generator_revision,
    normalize_spec,
    resolve_k_range,
)
from ensclust.pools.importer import import_pool
from ensclust.pools.pool import Pool, members_checksum

__all__ = [
    "Pool",
    "get_pool",
    "import_pool",
    "draw_ensembles",
    "generate_members",
    "normalize_spec",
    "resolve_k_range",
    "required_pool_size",
    "pool_identity",
    "DRAW_MODES",
    "GENERATORS",
    "GENERATOR_REVISIONS",
    "generator_revision",
    "PoolCacheWarning",
]

DEFAULT_CACHE_DIR = "results/cache/pools"


def pool_identity(dataset, spec: dict, seed: int) -> dict:
    """Everything that determines a generated pool (hashed into the cache key)."""
    spec = {k: v for k, v in normalize_spec(spec).items() if k != "first"}
    identity = {
        "dataset": {
            "name": dataset.name,
            "sha256": dataset.meta.get("sha256"),
            "preprocess": dataset.meta.get("preprocess", "none"),
            "params": dataset.meta.get("params"),
            "n": dataset.n_samples,
            "d": dataset.n_features,
            "n_clusters": dataset.n_clusters,
        },
        "generator": spec,
        "seed": int(seed),
    }
    revision = generator_revision(spec)
    if revision:  # from 1 on only: revision 0 keeps the cache keys pools had before revisions existed
        identity["generator_revision"] = revision
    return identity


def _resolve_pool_file(file, data_dir) -> Path:
    from ensclust.data import resolve_data_dir

    path = Path(file).expanduser()
    if path.is_absolute() or path.exists():
        return path
    return resolve_data_dir(data_dir) / path


def _file_pool(dataset, spec: dict, data_dir) -> Pool:
    from ensclust.data import file_sha256, get_pool_entry, load_dataset

    path = _resolve_pool_file(spec["file"], data_dir)
    if not path.exists():
        raise UserError(f"{path}: pool file not found; check pool.file (relative to the data directory) or --data-dir")
    entry = get_pool_entry(path.stem) if path.parent.name == "pools" else None
    members_key = spec.get("members_key") or (entry or {}).get("members_key")
    y_key = spec.get("y_key") or (entry or {}).get("y_key")
    pool = import_pool(path, members_key=members_key, y_key=y_key, layout=spec.get("layout", "auto"),
                       missing=spec.get("missing"))
    if pool.y is None and entry is not None and entry.get("labels_from"):
        # e.g. drec_control.mat holds only E; its rows are aligned with control.mat
        pool.y = load_dataset(entry["labels_from"], data_dir=data_dir).y
        pool.meta["y_from"] = entry["labels_from"]
    if dataset is not None:
        if dataset.n_samples != pool.n_samples:
            raise UserError(
                f"{path}: the pool has {pool.n_samples} rows but dataset '{dataset.name}' has {dataset.n_samples} "
                "samples; use the pool without a dataset (omit the dataset name) or a matching pool"
            )
        if pool.y is None:
            pool.y = dataset.y
            pool.meta["y_from"] = dataset.name
        pool.meta["y_matches_dataset"] = bool(np.array_equal(pool.y, dataset.y))
    digest = file_sha256(path)
    pool.meta.update(
        {
            "key": "file-" + digest[:24],
            "file_sha256": digest,
            "generator": {**spec},
            "dataset": {"name": dataset.name if dataset is not None else (entry or {}).get("dataset", path.stem)},
            "cache": "off",
        }
    )
    if entry is not None:
        pool.meta["registry"] = {k: entry[k] for k in ("name", "dataset", "rows_aligned", "papers") if k in entry}
    return pool


def get_pool(
    dataset_or_None,
    spec: dict,
    *,
    seed: int,
    data_dir=None,
    cache_dir=DEFAULT_CACHE_DIR,
    progress: bool = False,
) -> Pool:
    """Build (or fetch from the cache) a generated pool, or load an authors' pool file.

    Parameters
    ----------
    dataset_or_None : Dataset or None
        The (preprocessed) data the members are computed on. ``None`` only for ``source: file``.
    spec : dict
        The config's ``pool:`` block (see :mod:`ensclust.pools.generate`); ``source: file`` with ``file``
        (relative to the data directory), optional ``members_key``, ``y_key``, ``layout``. ``first: N``
        keeps only the first N members. ``seed: S`` (generated pools) overrides the ``seed`` argument: another
        draw of the same pool spec.
    seed : int
        Master seed of the pool; member j uses ``derive_seed("pool-member", seed, j)``.
    data_dir : path, optional
        Data directory for pool files (see :func:`ensclust.data.resolve_data_dir`).
    cache_dir : path or None
        Folder of the HDF5 cache; ``None`` disables caching.
    progress : bool
        Show a tqdm bar while generating.
    """
    seed = int((spec or {}).get("seed", seed))
    spec = normalize_spec(spec)
    first = spec.get("first")
    if spec["source"] == "file":
        pool = _file_pool(dataset_or_None, spec, data_dir)
    else:
        if dataset_or_None is None:
            raise UserError("pool source 'generate' needs a dataset (features); give datasets[].name or use source: file")
        ds = dataset_or_None
        identity = pool_identity(ds, spec, seed)
        key = pool_key(identity)
        path = cache_path(cache_dir, key) if cache_dir is not None else None
        pool, status = None, "off"
        if path is not None:
            existed = path.exists()
            pool = read_cached(path, key, ds.n_samples, spec["size"])
            status = "hit" if pool is not None else ("rebuilt" if existed else "miss")
        if pool is None:
            members, ks, seeds = generate_members(ds.X, spec, n_clusters=ds.n_clusters, seed=seed, progress=progress)
            pool = Pool(
                members=members,
                ks=ks,
                seeds=seeds,
                meta={
                    "generator": {**identity["generator"], "seed": int(seed)},
                    "dataset": identity["dataset"],
                    "members_sha256": members_checksum(members),
                },
            )
            if path is not None:
                write_cached(path, key, pool)
        pool.y = ds.y
        pool.meta.update({"key": key, "source": "generate", "cache": status, "path": str(path) if path else None})
    if first is not None:
        if not 1 <= first <= pool.size:
            raise UserError(f"pool spec: first={first} but the pool has {pool.size} members")
        pool = Pool(
            members=pool.members[:, :first], ks=pool.ks[:first], seeds=pool.seeds[:first], y=pool.y,
            meta={**pool.meta, "first": first},
        )
    return pool

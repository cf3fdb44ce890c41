"""HDF5 cache of generated pools: ``<cache_dir>/<key>.h5``.

Layout: datasets ``members`` (n x m int32), ``ks`` (m,) and ``seeds`` (m,) int64; attributes ``key``,
``generator`` (JSON of the resolved spec and seed), ``dataset`` (JSON: name, sha256, preprocess, n),
``dataset_sha256``, ``members_sha256`` and ``format_version``. The key is a content hash of everything
that determines the members, so any change of data, preprocessing, generator or seed makes a new file.

Reads are verified (shape, attributes, members checksum); a corrupt or truncated file gives a one-line
warning and is rebuilt. Writes go to a temporary file in the same folder and are ``os.replace``d into
place, so a concurrent reader never sees half a pool.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ensclust.errors import EnsclustWarning
from ensclust.pools.pool import Pool, members_checksum

FORMAT_VERSION = 1


class PoolCacheWarning(EnsclustWarning):
    """A cached pool was unreadable or failed verification and is being rebuilt, or could not be written.

    The CLI prints it as one line ``ensclust: warning: ...`` (see ``ensclust.cli.main``)."""


def pool_key(identity: dict) -> str:
    """Content key: sha256 of the canonical JSON of the pool identity (first 24 hex digits)."""
    text = json.dumps({"format_version": FORMAT_VERSION, **identity}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cache_path(cache_dir, key: str) -> Path:
    return Path(cache_dir) / f"{key}.h5"


def read_cached(path: Path, key: str, n: int, m: int) -> Pool | None:
    """The cached pool, or None when absent; warns and returns None when it fails verification."""
    import h5py

    if not path.exists():
        return None
    try:
        with h5py.File(path, "r") as fh:
            attrs = dict(fh.attrs)
            members = fh["members"][()]
            ks = fh["ks"][()]
            seeds = fh["seeds"][()]
        problems = []
        if attrs.get("key") != key:
            problems.append("key attribute differs")
        if members.shape != (n, m) or members.dtype != np.int32:
            problems.append(f"members shape {members.shape} {members.dtype}, expected ({n}, {m}) int32")
        if ks.shape != (m,) or seeds.shape != (m,):
            problems.append("ks/seeds length differs")
        if not problems and attrs.get("members_sha256") != members_checksum(members):
            problems.append("members checksum differs")
        if problems:
            raise ValueError("; ".join(problems))
        meta = {
            "generator": json.loads(attrs["generator"]),
            "dataset": json.loads(attrs["dataset"]),
            "members_sha256": attrs["members_sha256"],
        }
    except Exception as exc:  # noqa: BLE001 - anything unreadable is rebuilt
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        warnings.warn(f"pool cache {path} is corrupt or truncated ({detail}); rebuilding it", PoolCacheWarning, stacklevel=3)
        return None
    return Pool(members=members, ks=ks.astype(np.int64), seeds=seeds.astype(np.int64), meta=meta)


def write_cached(path: Path, key: str, pool: Pool) -> None:
    """Write atomically: temp file in the same folder, then ``os.replace`` (mode 0666 minus the umask).

    A cache that cannot be written is not an error: the pool is in memory, so a :class:`PoolCacheWarning`
    says so and the run goes on (the next run generates the pool again)."""
    try:
        _write_cached(path, key, pool)
    except OSError as exc:
        reason = exc.strerror or str(exc).splitlines()[0]
        warnings.warn(f"pool cache {path} cannot be written ({reason}); going on without caching this pool",
                      PoolCacheWarning, stacklevel=3)


def _write_cached(path: Path, key: str, pool: Pool) -> None:
    import h5py

    from ensclust.experiment.store import file_mode

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".h5.tmp", dir=path.parent)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as fh:
            fh.create_dataset("members", data=np.ascontiguousarray(pool.members, dtype=np.int32),
                              compression="gzip", compression_opts=4, shuffle=True)
            fh.create_dataset("ks", data=np.asarray(pool.ks, dtype=np.int64))
            fh.create_dataset("seeds", data=np.asarray(pool.seeds, dtype=np.int64))
            fh.attrs["key"] = key
            fh.attrs["format_version"] = FORMAT_VERSION
            fh.attrs["generator"] = json.dumps(pool.meta["generator"], sort_keys=True)
            fh.attrs["dataset"] = json.dumps(pool.meta["dataset"], sort_keys=True, default=str)
            fh.attrs["dataset_sha256"] = str(pool.meta["dataset"].get("sha256", ""))
            fh.attrs["members_sha256"] = pool.meta["members_sha256"]
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

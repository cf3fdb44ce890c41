"""The dataset registry (``ensclust/data/registry.yaml``, package data), the data directory and cached file
checksums."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from importlib import resources
from pathlib import Path

import yaml

from ensclust.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout when ensclust runs from one (not in a wheel)


def default_registry() -> Path:
    """The registry shipped with ensclust: ``registry.yaml`` of this package (package data)."""
    return Path(str(resources.files("ensclust.data").joinpath("registry.yaml")))


def registry_path() -> Path:
    """``ENSCLUST_REGISTRY`` when set, else the packaged :func:`default_registry`."""
    env = os.environ.get("ENSCLUST_REGISTRY")
    return Path(env).expanduser() if env else default_registry()


@functools.lru_cache(maxsize=4)
def _load_registry(path: str, mtime: float) -> dict:
    with open(path) as fh:
        doc = yaml.safe_load(fh) or {}
    datasets = {e["name"]: e for e in doc.get("datasets", [])}
    pools = {e["name"]: e for e in doc.get("pools", [])}
    return {"datasets": datasets, "pools": pools}


def load_registry() -> dict:
    """``{"datasets": {name: entry}, "pools": {name: entry}}``; a missing registry file is a UserError."""
    path = registry_path()
    if not path.is_file():
        where = "ENSCLUST_REGISTRY" if os.environ.get("ENSCLUST_REGISTRY") else "the ensclust package data"
        raise UserError(f"{path}: dataset registry not found (from {where}); set ENSCLUST_REGISTRY to a "
                        "registry.yaml or reinstall ensclust")
    return _load_registry(str(path), path.stat().st_mtime)


def list_registry(kind: str = "datasets") -> dict:
    """Registry entries by name: ``kind="datasets"`` (default) or ``"pools"``."""
    if kind not in ("datasets", "pools"):
        raise ValueError("kind must be 'datasets' or 'pools'")
    return dict(load_registry()[kind])


def resolve_data_dir(data_dir=None) -> Path:
    """The data directory: ``data_dir`` argument (``--data-dir``), then ``ENSCLUST_DATA``, then ``./datasets``.

    ``./datasets`` of a checkout holds only the registry; when it has no data files and the papers' folder
    ``../shared/datasets`` (next to the repository) exists, that folder is used instead, so the paper
    configs run from a fresh clone on the project machine.
    """
    if data_dir:
        return Path(data_dir).expanduser()
    env = os.environ.get("ENSCLUST_DATA")
    if env:
        return Path(env).expanduser()
    local = Path("datasets")
    if local.is_dir() and any(p.suffix.lower() in (".mat", ".h5", ".hdf5", ".npz", ".csv") for p in local.iterdir()):
        return local
    shared = REPO_ROOT.parent / "shared" / "datasets"
    if shared.is_dir():
        return shared
    return local


# ---------------------------------------------------------------------------------------------------------
# Checksums, cached by (path, size, mtime) so `ensclust data list` does not re-hash 45 MB every time.


_CHECKSUM_DIR: list = []  # innermost checksum_cache_dir() last


@contextlib.contextmanager
def checksum_cache_dir(path):
    """Keep the checksum sidecar (``sha256.json``) in ``path`` inside the block (``pool build --cache-dir``)."""
    _CHECKSUM_DIR.append(Path(path))
    try:
        yield
    finally:
        _CHECKSUM_DIR.pop()


def _checksum_cache_file() -> Path:
    if _CHECKSUM_DIR:
        return _CHECKSUM_DIR[-1] / "sha256.json"
    return Path(os.environ.get("ENSCLUST_CACHE_DIR", "results/cache")) / "sha256.json"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path, *, use_cache: bool = True) -> str:
    """sha256 of a file; remembered in ``results/cache/sha256.json`` (``$ENSCLUST_CACHE_DIR``, or the folder of
    :func:`checksum_cache_dir`) keyed by path, size and mtime."""
    path = Path(path).resolve()
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    cache_file = _checksum_cache_file()
    cache = {}
    if use_cache and cache_file.exists():
        try:
            cache = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            cache = {}
    if key in cache:
        return cache[key]
    digest = _sha256_file(path)
    if use_cache:
        cache = {k: v for k, v in cache.items() if not k.startswith(f"{path}|")}
        cache[key] = digest
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(cache, indent=0, sort_keys=True))
            os.replace(tmp, cache_file)
        except OSError:
            pass  # a read-only working folder only costs the re-hash next time
    return digest


def check_entry(entry: dict, data_dir: Path) -> tuple[str, Path | None, str | None]:
    """Status of one registry entry: ``(status, path, sha256)``.

    status is ``present`` (checksum matches or none recorded), ``missing``, ``mismatch`` or
    ``no-file`` (pool-only dataset whose features are not available).
    """
    file = entry.get("file")
    if not file:
        return "no-file", None, None
    path = data_dir / file
    if not path.exists():
        return "missing", path, None
    digest = file_sha256(path)
    expected = entry.get("sha256")
    if expected and expected != digest:
        return "mismatch", path, digest
    return "present", path, digest


def get_entry(name: str) -> dict | None:
    """A dataset registry entry by canonical name or alias (case-insensitive), or None."""
    datasets = load_registry()["datasets"]
    if name in datasets:
        return datasets[name]
    low = name.lower()
    for entry in datasets.values():
        if entry["name"].lower() == low or low in [a.lower() for a in entry.get("aliases", [])]:
            return entry
    return None


def get_pool_entry(name: str) -> dict | None:
    pools = load_registry()["pools"]
    return pools.get(name)


def require_file(entry: dict, data_dir: Path) -> Path:
    """The entry's file in ``data_dir`` or a UserError saying what is missing."""
    if not entry.get("file"):
        pools = ", ".join(entry.get("pools", [])) or "none"
        raise UserError(
            f"dataset '{entry['name']}': the features are not available (pool only: {pools}); "
            "use the pool with a config 'pool: {source: file, ...}' and omit the dataset name"
        )
    path = data_dir / entry["file"]
    if not path.exists():
        raise UserError(
            f"{path}: file not found for registry dataset '{entry['name']}'; set --data-dir or ENSCLUST_DATA "
            "to the folder holding the datasets"
        )
    return path

"""The :class:`Pool` record: a matrix of base clusterings (one per column) with provenance."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Pool:
    """Base clusterings of one dataset.

    Attributes
    ----------
    members : ndarray of int32, n x m
        Column j is base clustering j with labels 0..k_j-1 (consecutive), and -1 where member j did not label
        the point (an incomplete ensemble, imported only; see :data:`ensclust.core.labels.MISSING_LABEL`).
    ks : ndarray of int64, (m,)
        The k each member was asked for (generated pools) or its number of clusters (imported pools).
    seeds : ndarray of int64, (m,)
        The seed member j was generated with (-1 for imported members).
    y : ndarray of int64 or None
        Ground truth 0..c-1: the file's labels for an imported pool, the dataset's labels for a generated one.
    meta : dict
        ``key`` (content key), ``members_sha256``, ``generator`` (the resolved generator config), ``dataset``
        (name, sha256, preprocess), ``source`` (generate / file), ``path`` (file or cache file), ``cache``
        (hit / miss / rebuilt / off).
    """

    members: np.ndarray
    ks: np.ndarray
    seeds: np.ndarray
    y: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(self.members.shape[0])

    @property
    def size(self) -> int:
        return int(self.members.shape[1])

    @property
    def n_clusters(self) -> int | None:
        """c from the ground truth, if known."""
        return int(self.y.max()) + 1 if self.y is not None and self.y.size else None

    def columns(self, idx) -> np.ndarray:
        """The n x len(idx) label matrix of the chosen members (int64, -1 = missing; pass ``missing=-1`` to
        ``fit`` when the pool has missing entries)."""
        return np.asarray(self.members[:, np.asarray(idx)], dtype=np.int64)

    @property
    def n_missing(self) -> int:
        """Number of missing entries (points a member did not label)."""
        return int(np.count_nonzero(self.members == -1))

    def cluster_counts(self) -> np.ndarray:
        """Actual number of clusters of every member (may be below ``ks`` when k-means emptied a cluster)."""
        return self.members.max(axis=0).astype(np.int64) + 1

    def __repr__(self) -> str:
        name = self.meta.get("dataset", {}).get("name") or self.meta.get("path", "")
        return f"Pool({name!r}, n={self.n_samples}, m={self.size}, k={self.ks.min()}..{self.ks.max()})"


def members_checksum(members: np.ndarray) -> str:
    """sha256 of the int32 member matrix in C order, with its shape (stored in the cache and verified)."""
    arr = np.ascontiguousarray(members, dtype=np.int32)
    h = hashlib.sha256(str(arr.shape).encode())
    h.update(arr.tobytes())
    return h.hexdigest()


def relabel_columns(members) -> np.ndarray:
    """Each column to consecutive ids 0..k_j-1 (sorted order of its values), as int32."""
    arr = np.asarray(members)
    out = np.empty(arr.shape, dtype=np.int32)
    for j in range(arr.shape[1]):
        _, inv = np.unique(arr[:, j], return_inverse=True)
        out[:, j] = inv.ravel()
    return out

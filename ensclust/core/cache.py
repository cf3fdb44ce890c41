"""Caller-owned result caches for deterministic solver stages (the ``memory=`` parameter of some methods).

A method that exposes ``memory`` (scikit-learn's convention, as in ``AgglomerativeClustering(memory=...)``)
wraps its deterministic, expensive stage with ``check_memory(memory).cache(func)``. ``memory`` is

* ``None`` (default): no caching, every fit computes everything;
* a folder path or a :class:`joblib.Memory`: results are stored on disk (shared between processes);
* a :class:`SolveCache`: results are kept in this process, bounded in bytes (the experiment runner owns one
  per data set, so that e.g. AWEC-H and AWEC-S, which learn the same topology, solve once per cell pair).

The cache belongs to whoever passes it: results never depend on what else ran in the process, and there is
no module-level state. A cached call returns exactly what a fresh call would return because only functions
of their arguments are cached (no random state enters them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np


def _nbytes(value) -> int:
    """Bytes of the arrays held by a (nested) result; other objects count as 0."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if hasattr(value, "data") and hasattr(value, "indices") and hasattr(value, "indptr"):  # scipy CSR/CSC
        return int(value.data.nbytes + value.indices.nbytes + value.indptr.nbytes)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


class SolveCache:
    """In-process cache of function results, bounded in bytes, with :class:`joblib.Memory`'s ``cache`` API.

    Parameters
    ----------
    max_bytes : int
        Bytes of arrays kept; when a new result does not fit, the least recently used results go first. A
        result larger than the bound is not kept. 0 keeps nothing.

    Notes
    -----
    The object is a handle: ``copy.deepcopy`` (hence ``sklearn.base.clone`` of an estimator holding it) returns
    the same cache, and a pickled cache arrives empty (a worker process starts its own, so nothing large is
    shipped with every task). Access is locked, so threads of one worker may share it.
    """

    def __init__(self, max_bytes: int = 768 * 2**20):
        self.max_bytes = int(max_bytes)
        self._entries: OrderedDict[str, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- handle semantics -----------------------------------------------------------------------------
    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state):
        self.__init__(state["max_bytes"])

    def __repr__(self) -> str:
        return f"SolveCache(max_bytes={self.max_bytes}, entries={len(self._entries)}, bytes={self._bytes})"

    def __len__(self) -> int:
        return len(self._entries)

    # -- joblib.Memory interface ----------------------------------------------------------------------
    def cache(self, func):
        """``func`` wrapped so that a call with the same arguments (hashed with :func:`joblib.hash`) returns the
        stored result; the wrapper also has ``check_call_in_cache(*args, **kwargs)`` like joblib's."""
        import functools

        import joblib

        name = f"{func.__module__}.{func.__qualname__}"

        def key(args, kwargs) -> str:
            return joblib.hash((name, args, kwargs))

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            k = key(args, kwargs)
            with self._lock:
                if k in self._entries:
                    self._entries.move_to_end(k)
                    self.hits += 1
                    return self._entries[k][0]
                self.misses += 1
            result = func(*args, **kwargs)
            self._store(k, result)
            return result

        def check_call_in_cache(*args, **kwargs) -> bool:
            with self._lock:
                return key(args, kwargs) in self._entries

        wrapper.check_call_in_cache = check_call_in_cache
        return wrapper

    def _store(self, key: str, result) -> None:
        size = _nbytes(result)
        with self._lock:
            if size > self.max_bytes or key in self._entries:
                return
            while self._entries and self._bytes + size > self.max_bytes:
                _, (_, old) = self._entries.popitem(last=False)
                self._bytes -= old
            self._entries[key] = (result, size)
            self._bytes += size

    def clear(self) -> None:
        """Forget every stored result."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0


def check_memory(memory):
    """The cache object of a ``memory`` parameter: None -> no caching, a path -> :class:`joblib.Memory`,
    an object with a ``cache`` method -> itself (scikit-learn's ``check_memory``, which raises ValueError
    for anything else)."""
    from sklearn.utils.validation import check_memory as _sk_check_memory

    return _sk_check_memory(memory)


def cached_call(memory, func, *args):
    """``func(*args)`` through the cache of a ``memory`` parameter (:func:`check_memory`).

    Returns ``(result, hit)``: ``hit`` tells whether the result came from the cache (False without a cache, or
    for a cache object without ``check_call_in_cache``). AWEC-H/-S, ACMK-KM/-SC and RSEC-H/-Z share their
    solves through it.
    """
    solve = check_memory(memory).cache(func)
    check = getattr(solve, "check_call_in_cache", None)
    hit = bool(check(*args)) if check is not None else False
    return solve(*args), hit

"""Which pool columns form the ensemble of each repetition.

Modes (``ensemble.mode`` in a config):

``first``            the first ``size`` columns, the same in every repetition.
``random``           ``size`` columns without replacement per repetition from ``Generator(seed)``.
``disjoint``         repetition r takes columns r*size .. (r+1)*size-1 (SPCE protocol A: 200 members ->
                     10 subsets of 20, in generation order).
``fresh``            the same indices as ``disjoint``; the pool holds size*repetitions freshly generated
                     members, so every repetition has its own new base clusterings (ACMK).
``randperm_stream``  EC-CMS, bit-exact with MATLAB ``rng(seed); p = randperm(pool)`` once per run from ONE
                     stream: ``rs = RandomState(seed)``; per repetition
                     ``argsort(rs.rand(pool_size), kind="stable")[:size]`` (specs/eccms.md 4).
``randperm_per_run`` AWEC, bit-exact with ``RandStream('mt19937ar', 'Seed', i)`` + ``randperm`` for run
                     i = 1..R: ``argsort(RandomState(seed - 1 + i).rand(pool_size), kind="stable")[:size]``.
                     ``seed`` is an offset: ``seed=1`` (the default of this mode) gives the paper's streams
                     1..R; ``seed=0`` is treated as 1 as well, so both the config default and 1 reproduce AWEC.
"""

from __future__ import annotations

import numpy as np

from ensclust.errors import UserError, unknown_name_error

DRAW_MODES = ("first", "random", "disjoint", "fresh", "randperm_stream", "randperm_per_run")


def required_pool_size(mode: str, size: int, repetitions: int) -> int:
    """Smallest pool the draw needs (``fresh`` / ``disjoint`` need ``size * repetitions`` members)."""
    return size * repetitions if mode in ("disjoint", "fresh") else size


def draw_ensembles(pool_size: int, *, mode: str, size: int, repetitions: int, seed: int) -> list[np.ndarray]:
    """Column indices (int64, 0-based) of the ensemble of every repetition.

    Parameters
    ----------
    pool_size : int
        Number of members in the pool.
    mode : str
        One of :data:`DRAW_MODES` (see the module docstring).
    size : int
        Members per ensemble (M).
    repetitions : int
        Number of repetitions (R).
    seed : int
        Seed of the draw (``random``, ``randperm_stream``; offset for ``randperm_per_run``).
    """
    if mode not in DRAW_MODES:
        raise unknown_name_error("ensemble mode", mode, DRAW_MODES)
    pool_size, size, repetitions = int(pool_size), int(size), int(repetitions)
    if size < 1 or repetitions < 1:
        raise UserError(f"ensemble size and repetitions must be >= 1 (got size={size}, repetitions={repetitions})")
    need = required_pool_size(mode, size, repetitions)
    if pool_size < need:
        what = f"{size} x {repetitions} repetitions" if need != size else f"{size}"
        raise UserError(
            f"ensemble mode '{mode}' needs a pool of at least {what} = {need} members, the pool has {pool_size}; "
            "raise pool.size or lower ensemble.size/repetitions"
        )
    if mode == "first":
        return [np.arange(size, dtype=np.int64) for _ in range(repetitions)]
    if mode in ("disjoint", "fresh"):
        return [np.arange(r * size, (r + 1) * size, dtype=np.int64) for r in range(repetitions)]
    if mode == "random":
        rng = np.random.default_rng(seed)
        return [rng.permutation(pool_size)[:size].astype(np.int64) for _ in range(repetitions)]
    if mode == "randperm_stream":
        rs = np.random.RandomState(int(seed))
        return [np.argsort(rs.rand(pool_size), kind="stable")[:size].astype(np.int64) for _ in range(repetitions)]
    offset = max(int(seed), 1) - 1
    return [
        np.argsort(np.random.RandomState(offset + i).rand(pool_size), kind="stable")[:size].astype(np.int64)
        for i in range(1, repetitions + 1)
    ]

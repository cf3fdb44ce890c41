"""All randomness goes through an explicit :class:`numpy.random.Generator`.

Seeds for sub-tasks (dataset, repetition, method) are derived with :func:`derive_seed`, a stable hash,
so the same config and seed give byte-identical results whatever order the cells run in.
"""

from __future__ import annotations

import hashlib

import numpy as np


def check_random_state(random_state=None) -> np.random.Generator:
    """Turn ``None`` / int / Generator / SeedSequence into a :class:`numpy.random.Generator`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng(0)
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.integer | int):
        return np.random.default_rng(int(random_state))
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {type(random_state)!r}")


def derive_seed(*parts) -> int:
    """A stable 63-bit seed from any printable parts (e.g. master seed, dataset, repetition, method)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


def int_seed(rng: np.random.Generator) -> int:
    """Draw an int seed from ``rng`` for libraries that want an int (scikit-learn, METIS, KaHyPar)."""
    return int(rng.integers(0, 2**31 - 1))

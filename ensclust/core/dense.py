"""Element-wise operations on large dense matrices, tile by tile (no n x n temporary)."""

from __future__ import annotations

import numpy as np


def symmetrize_inplace(M: np.ndarray, block: int = 256) -> np.ndarray:
    """``M <- (M + M^T) / 2`` in place and return ``M``.

    The same element-wise operations as ``(M + M.T) / 2``, so the same bits, but tile by tile: a whole-matrix
    ``M += M.T`` needs an n x n temporary and reads ``M.T`` with stride n.
    """
    n = M.shape[0]
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        for j0 in range(i0, n, block):
            j1 = min(j0 + block, n)
            tile = M[i0:i1, j0:j1] + M[j0:j1, i0:i1].T
            tile *= 0.5
            M[i0:i1, j0:j1] = tile
            M[j0:j1, i0:i1] = tile.T
    return M

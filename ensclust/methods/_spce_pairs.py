"""Pair bookkeeping for SPCE without the n x n x m stack of base matrices (specs/spce.md section 6).

SPCE only ever changes the *free* pairs (p < q with 0 < count_pq < m, where count_pq is how many base
clusterings put p and q together): pairs with count m are fixed at S = 1 and pairs with count 0 at S = 0
(the Omega constraint of eq. 6). Everything the algorithm needs about a free pair from the base clusterings is
which members put it together, i.e. an m-bit *agreement pattern*. There are usually far fewer distinct
patterns than pairs, so

* G_pq = sum_i S^(i)_pq / alpha_i  is one matrix-vector product over the patterns plus a gather, and
* the per-member sums of the alpha-update (eq. 21) are a ``bincount`` over the patterns.

Memory is O(#pairs with count > 0) instead of the O(m n^2) of the authors' code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ensclust.core.labels import one_hot


@dataclass
class PairTable:
    """Upper-triangle pairs (p < q) with a positive co-association count, grouped by row.

    Attributes
    ----------
    n, m : number of points and of base clusterings.
    free_rows, free_cols : int32 arrays (F,), the free pairs (0 < count < m, Omega_pq = 0); rows are
        non-decreasing (CSR order).
    one_rows, one_cols : int32 arrays, the pairs with count == m (Omega_pq = 1, S_pq fixed at 1).
    pattern : int32 (F,), for each free pair the index of its agreement pattern.
    patterns : bool (U, m), patterns[u, i] = True when member i puts the pairs of pattern u together.
    """

    n: int
    m: int
    free_rows: np.ndarray
    free_cols: np.ndarray
    one_rows: np.ndarray
    one_cols: np.ndarray
    pattern: np.ndarray
    patterns: np.ndarray

    @property
    def n_free(self) -> int:
        return int(self.free_rows.shape[0])

    @property
    def n_ones(self) -> int:
        return int(self.one_rows.shape[0])

    @property
    def n_pairs(self) -> int:
        return self.n_free + self.n_ones

    def pattern_counts(self) -> np.ndarray:
        """Co-association count of every pattern (how many members agree)."""
        return self.patterns.sum(axis=1).astype(np.int64)


def _upper_pairs(members: np.ndarray, max_block_entries: int = 20_000_000):
    """Rows, cols (int32) and counts (int32) of the pairs p < q put together by at least one member.

    The co-association counts come from the sparse one-hot product computed one row block at a time, so the
    temporary memory stays bounded even when most pairs have a positive count.
    """
    n, _ = members.shape
    B = one_hot(members, dtype=np.int32)
    BT = B.T.tocsr()
    block = max(1, int(max_block_entries // max(n, 1)))
    rows, cols, counts = [], [], []
    for start in range(0, n, block):
        stop = min(n, start + block)
        prod = (B[start:stop] @ BT).tocsr()
        prod.sort_indices()
        coo = prod.tocoo()
        r = coo.row.astype(np.int64) + start
        keep = coo.col > r
        rows.append(r[keep].astype(np.int32))
        cols.append(coo.col[keep].astype(np.int32))
        counts.append(coo.data[keep].astype(np.int32))
        del prod, coo, r, keep
    if not rows:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, empty
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(counts)


def _agreement_patterns(members: np.ndarray, rows: np.ndarray, cols: np.ndarray):
    """Distinct agreement patterns of the given pairs and each pair's pattern index."""
    n_pairs = rows.shape[0]
    m = members.shape[1]
    if n_pairs == 0:
        return np.zeros(0, dtype=np.int32), np.zeros((0, m), dtype=bool)
    pattern_id = np.zeros(n_pairs, dtype=np.int64)
    # 62 members per word keeps the packed key inside int64; wider ensembles are combined word by word.
    for first in range(0, m, 62):
        key = np.zeros(n_pairs, dtype=np.int64)
        for bit, i in enumerate(range(first, min(m, first + 62))):
            lab = members[:, i].astype(np.int32)
            key |= (lab[rows] == lab[cols]).astype(np.int64) << bit
        if first == 0:
            pattern_id = key
        else:
            _, pattern_id = np.unique(np.column_stack([pattern_id, key]), axis=0, return_inverse=True)
            pattern_id = pattern_id.ravel().astype(np.int64)
        if first + 62 < m:
            _, pattern_id = np.unique(pattern_id, return_inverse=True)
    _, first_index, inverse = np.unique(pattern_id, return_index=True, return_inverse=True)
    inverse = inverse.ravel().astype(np.int32)
    # The boolean pattern rows, read off one representative pair of each pattern.
    rep_r, rep_c = rows[first_index], cols[first_index]
    patterns = members[rep_r, :] == members[rep_c, :]
    return inverse, patterns


def build_pair_table(members: np.ndarray) -> PairTable:
    """The :class:`PairTable` of a relabelled n x m label matrix."""
    n, m = members.shape
    rows, cols, counts = _upper_pairs(members)
    is_one = counts == m
    del counts
    one_rows, one_cols = rows[is_one], cols[is_one]
    np.logical_not(is_one, out=is_one)
    free_rows, free_cols = rows[is_one], cols[is_one]
    del rows, cols, is_one
    pattern, patterns = _agreement_patterns(members, free_rows, free_cols)
    return PairTable(n=n, m=m, free_rows=free_rows, free_cols=free_cols, one_rows=one_rows, one_cols=one_cols,
                     pattern=pattern, patterns=patterns)

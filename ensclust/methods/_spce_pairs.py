"""Pair bookkeeping for SPCE without the n x n x m stack of base matrices (specs/spce.md section 6).

SPCE only ever changes the *free* pairs (p < q with 0 < count_pq < m, where count_pq is how many base
clusterings put p and q together): pairs with count m are fixed at S = 1 and pairs with count 0 at S = 0
(the Omega constraint of eq. 6). Everything the algorithm needs about a free pair from the base clusterings is
which members put it together, i.e. an m-bit *agreement pattern*. There are usually far fewer distinct
patterns than pairs, so

* G_pq = sum_i S^(i)_pq / alpha_i  is one matrix-vector product over the patterns plus a gather, and
* the per-member sums of the alpha-update (eq. 21) are a ``bincount`` over the patterns.

Memory is O(#pairs with count > 0) instead of the O(m n^2) of the authors' code.

The rows of the table may stand for groups of points (``sizes``): SPCE runs on microclusters (points with
identical label rows), and a pair of groups (u, v) then stands for sizes[u] * sizes[v] point pairs with the same
pattern (``pair_weight``); the pairs inside a group all have count m (Omega-ones, S fixed at 1) and are only
counted (``n_ones_objects``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ensclust.core.labels import cluster_counts, one_hot

#: largest m whose agreement bit masks the int64 co-association product gives exactly
BIT_MASK_MAX_M = 62


@dataclass
class PairTable:
    """Upper-triangle pairs (p < q) with a positive co-association count.

    Attributes
    ----------
    n, m : number of points and of base clusterings.
    free_rows, free_cols : int32 arrays (F,), the free pairs (0 < count < m, Omega_pq = 0); rows are
        non-decreasing and columns increasing within a row (CSR order).
    one_rows, one_cols : int32 arrays, the pairs with count == m (Omega_pq = 1, S_pq fixed at 1).
    pattern : int32 (F,), for each free pair the index of its agreement pattern.
    patterns : bool (U, m), patterns[u, i] = True when member i puts the pairs of pattern u together;
        numbered in increasing order of the bit mask (bit i = member i agrees).

    sizes : float (n,), the number of points each row stands for (1 when the rows are points).

    Derived on construction: ``patterns_f`` / ``patterns_tf`` (float copies for G = patterns @ (1/alpha) and
    the per-member sums), ``ones_upper`` (CSR of the Omega-ones, value 1), ``pair_weight`` (float (F,), the
    point pairs each free pair stands for), ``n_objects``, ``n_free_objects`` and ``n_ones_objects`` (point
    and point-pair counts, the Omega-ones inside the groups included).
    """

    n: int
    m: int
    free_rows: np.ndarray
    free_cols: np.ndarray
    one_rows: np.ndarray
    one_cols: np.ndarray
    pattern: np.ndarray
    patterns: np.ndarray
    sizes: np.ndarray | None = None

    def __post_init__(self):
        self.sizes = np.ones(self.n) if self.sizes is None else np.asarray(self.sizes, dtype=np.float64)
        self.pair_weight = self.sizes[self.free_rows] * self.sizes[self.free_cols]
        self.n_objects = int(self.sizes.sum())
        self.n_free_objects = float(self.pair_weight.sum())
        inside = float(np.sum(self.sizes * (self.sizes - 1.0))) / 2.0
        self.n_ones_objects = float(np.dot(self.sizes[self.one_rows], self.sizes[self.one_cols])) + inside
        self.patterns_f = self.patterns.astype(np.float64)
        self.patterns_tf = self.patterns.T.astype(np.float64)
        ones = sparse.coo_matrix((np.ones(self.n_ones), (self.one_rows, self.one_cols)), shape=(self.n, self.n))
        self.ones_upper = ones.tocsr()
        self.ones_upper.sort_indices()

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


def _upper_pairs(members: np.ndarray, max_block_entries: int = 20_000_000, bit_masks: bool = False):
    """Rows, cols (int32) and counts (int32) of the pairs p < q put together by at least one member.

    ``bit_masks=True`` (m <= BIT_MASK_MAX_M): the third array holds the agreement bit masks instead
    (int64, bit i = member i puts p and q together): the left factor's
    indicator columns of member i are weighted by 2^i, so the product sums distinct powers of two (exact
    integer arithmetic). Same pairs (mask > 0 <=> count > 0), no second pass over the pairs.

    The co-association counts come from the sparse one-hot product computed one row block at a time, so the
    temporary memory stays bounded even when most pairs have a positive count. A block of rows only needs
    the columns from its first row on (the upper triangle), so each block multiplies by the indicator rows
    from there; eight or more blocks keep the part below the diagonal that is computed small. Exact integer
    counts, rows in order and sorted columns: the same arrays whatever the blocking.
    """
    n, m = members.shape
    if bit_masks:
        if m > BIT_MASK_MAX_M:
            raise ValueError(f"bit masks of {m} members do not fit in int64")
        B = one_hot(members, dtype=np.int64)
        left = B.copy()
        left.data = left.data * np.repeat(np.left_shift(np.int64(1), np.arange(m, dtype=np.int64)),
                                          cluster_counts(members))[left.indices]
        out_dtype = np.int64
    else:
        B = left = one_hot(members, dtype=np.int32)
        out_dtype = np.int32
    block = max(1, min(int(max_block_entries // max(n, 1)), -(-n // 8)))
    rows, cols, counts = [], [], []
    for start in range(0, n, block):
        stop = min(n, start + block)
        prod = (left[start:stop] @ B[start:].T).tocsr()
        prod.sort_indices()
        # local row and column numbers (both relative to start): col > row is the upper triangle
        local_rows = np.repeat(np.arange(stop - start, dtype=np.int32), np.diff(prod.indptr))
        keep = prod.indices > local_rows
        rows.append(local_rows[keep] + np.int32(start))
        cols.append(prod.indices[keep].astype(np.int32) + np.int32(start))
        counts.append(prod.data[keep].astype(out_dtype))
        del prod, local_rows, keep
    if not rows:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, empty.astype(out_dtype)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(counts)


def _agreement_patterns(members: np.ndarray, rows: np.ndarray, cols: np.ndarray, keys: np.ndarray | None = None):
    """Distinct agreement patterns of the given pairs and each pair's pattern index.

    ``keys``: the pairs' bit masks (m <= BIT_MASK_MAX_M); without them (wider ensembles) the patterns are
    compared member by member, 62 members per int64 word. Patterns are numbered in increasing order of
    their key.
    """
    n_pairs = rows.shape[0]
    m = members.shape[1]
    if n_pairs == 0:
        return np.zeros(0, dtype=np.int32), np.zeros((0, m), dtype=bool)
    if keys is not None:
        keys, inverse = np.unique(keys, return_inverse=True)
        # the pattern rows are the bits of the sorted distinct keys
        bits = np.unpackbits(keys.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        return inverse.ravel().astype(np.int32), bits[:, :m].astype(bool)
    pattern_id = np.zeros(n_pairs, dtype=np.int64)
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
    _, first_index, inverse = np.unique(pattern_id, return_index=True, return_inverse=True)
    # The boolean pattern rows, read off one representative pair of each pattern.
    patterns = members[rows[first_index], :] == members[cols[first_index], :]
    return inverse.ravel().astype(np.int32), patterns


def build_pair_table(members: np.ndarray, sizes: np.ndarray | None = None) -> PairTable:
    """The :class:`PairTable` of a relabelled n x m label matrix; ``sizes``: the points each row stands for
    (microclusters, whose rows are distinct), None for points."""
    n, m = members.shape
    if m <= BIT_MASK_MAX_M:   # pairs and their agreement bit masks from one product
        rows, cols, keys = _upper_pairs(members, bit_masks=True)
        is_one = keys == (1 << m) - 1
    else:
        rows, cols, counts = _upper_pairs(members)
        is_one = counts == m
        keys = None
        del counts
    one_rows, one_cols = rows[is_one], cols[is_one]
    np.logical_not(is_one, out=is_one)
    free_rows, free_cols = rows[is_one], cols[is_one]
    free_keys = None if keys is None else keys[is_one]
    del is_one, keys, rows, cols
    pattern, patterns = _agreement_patterns(members, free_rows, free_cols, keys=free_keys)
    return PairTable(n=n, m=m, free_rows=free_rows, free_cols=free_cols, one_rows=one_rows, one_cols=one_cols,
                     pattern=pattern, patterns=patterns, sizes=sizes)

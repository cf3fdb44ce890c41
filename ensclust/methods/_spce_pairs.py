"""Pair bookkeeping for SPCE without the n x n x m stack of base matrices (specs/spce.md section 6).

SPCE only ever changes the *free* pairs (p < q with 0 < count_pq < m, where count_pq is how many base
clusterings put p and q together): pairs with count m are fixed at S = 1 and pairs with count 0 at S = 0
(the Omega constraint of eq. 6). Everything the algorithm needs about a free pair from the base clusterings is
which members put it together, i.e. an m-bit *agreement pattern*. There are usually far fewer distinct
patterns than pairs, so

* G_pq = sum_i S^(i)_pq / alpha_i  is one matrix-vector product over the patterns plus a gather, and
* the per-member sums of the alpha-update (eq. 21) are a ``bincount`` over the patterns.

Memory is O(#pairs with count > 0) instead of the O(m n^2) of the authors' code.

The table also keeps the CSR layout of all positive pairs (free and fixed-one), so the connected components of
S != 0, needed at every inner iteration, come from one mask and one ``connected_components`` call
(:meth:`PairTable.components`) without assembling and adding scipy sparse matrices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ensclust.core.labels import cluster_counts, one_hot

try:  # the undirected labelling kernel behind scipy's connected_components, called on prepared CSR arrays
    from scipy.sparse.csgraph._traversal import _connected_components_undirected
except ImportError:  # pragma: no cover - other scipy versions: the public function (same labels)
    _connected_components_undirected = None

#: n up to which the co-association counts come from one dense product (n^2 float32 entries: 16 MB at 2000)
DENSE_COUNTS_LIMIT = 2000
#: largest m whose agreement bit masks the dense product gives exactly (float32: integers below 2^24)
DENSE_KEYS_MAX_M = 24
#: largest m whose agreement bit masks the sparse int64 product gives (and the packed keys hold)
SPARSE_KEYS_MAX_M = 62


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
    all_cols: np.ndarray | None = None
    all_indptr: np.ndarray | None = None
    free_pos: np.ndarray | None = None
    all_rows: np.ndarray | None = None
    #: class switch for the tests: False recomputes the components even for a repeated nonzero set
    reuse_components: ClassVar[bool] = True

    def __post_init__(self):
        # Float copies of the patterns in the exact layouts the products have always used (C order for
        # G = patterns @ (1/alpha), the transposed view's F order for the per-member sums), built once.
        self.patterns_f = self.patterns.astype(np.float64)
        self.patterns_tf = self.patterns.T.astype(np.float64)
        self._one_pos = None   # positions of the Omega-ones among all pairs, on first use
        self._last_components = None   # (nonzero, k, comp) of the last components() call
        # free pairs grouped by pattern (increasing position inside each group), for the pruned S-update
        self.by_pattern = _stable_argsort(self.pattern, self.patterns.shape[0])
        self.pattern_start = np.zeros(self.patterns.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.pattern, minlength=self.patterns.shape[0]), out=self.pattern_start[1:])
        if self.all_rows is not None:
            self._free_of_pos = np.full(self.all_cols.shape[0], -1, dtype=np.int64)
            self._free_of_pos[self.free_pos] = np.arange(self.free_pos.shape[0])

    def components(self, S_free: np.ndarray, nonzero: np.ndarray | None = None,
                   sorted_nonzero=None) -> tuple[int, np.ndarray]:
        """Connected components of the graph S != 0 (free pairs with S_pq != 0 plus the Omega-ones).

        Same graph, hence the same labels (numbered by their smallest point), as ``connected_components`` of
        the assembled upper-triangle matrix. ``nonzero``: the indices of the free pairs with S != 0 (any
        order) when the caller has them. Side results for the rest of the iteration: ``free_nonzero``
        (= count_nonzero(S_free)), ``free_nonzero_index`` (= ``nonzero``, else flatnonzero(S_free)),
        ``free_nonzero_sorted`` (= flatnonzero(S_free), read off the kept positions) and ``kept_layout``
        (indptr, indices of the kept pairs in CSR order, the slots of the free ones among them and their
        free-pair indices: the upper S without a merge, see ``spce.upper_matrix``).
        ``sorted_nonzero``: optional callable giving the same indices in increasing order (or None), asked
        only when the components must be computed (then the kept positions come from a merge, not a mark
        over all pairs).
        """
        if self.all_cols is None:
            raise ValueError("this PairTable was built without its CSR layout")
        if nonzero is None:
            nonzero = np.flatnonzero(S_free)
            sorted_nonzero = _constant(nonzero)   # flatnonzero is increasing
        self.free_nonzero_index = nonzero
        self.free_nonzero = int(nonzero.shape[0])   # = count_nonzero(S_free), for the objective
        # Successive S-updates often keep exactly the same nonzero pairs: the same graph, the same answer.
        last = self._last_components
        if last is not None and self.reuse_components and (last[0] is nonzero or np.array_equal(last[0], nonzero)):
            self.free_nonzero_sorted, self.kept_layout = last[3], last[4]
            return last[1], last[2]
        k, comp = self._label_components(nonzero, None if sorted_nonzero is None else sorted_nonzero())
        self._last_components = (nonzero, k, comp, self.free_nonzero_sorted, self.kept_layout)
        return k, comp

    def _label_components(self, nonzero: np.ndarray, nonzero_sorted: np.ndarray | None = None
                          ) -> tuple[int, np.ndarray]:
        if self._one_pos is None:
            self._one_pos = np.flatnonzero(self._free_of_pos < 0)
        # the kept positions in CSR order: the Omega-ones plus the nonzero free pairs
        if nonzero_sorted is None:
            # as the increasing positions of a mark over all pairs (a byte per pair; sorting the ~1e6 kept
            # positions cost 5x more)
            keep = self._sorted_positions(self._one_pos, self.free_pos[nonzero])
            free_sorted = self._free_of_pos[keep]
            free_slots = np.flatnonzero(free_sorted >= 0)
            self.free_nonzero_sorted = free_sorted[free_slots]
        elif nonzero_sorted.shape[0] == self.free_pos.shape[0]:   # every free pair (S = S_hat): all pairs
            keep = np.arange(self.all_cols.shape[0])
            free_slots = self.free_pos
            self.free_nonzero_sorted = nonzero_sorted
        else:
            # merging two increasing, disjoint position lists: Omega-one i lands after i ones and after the
            # free positions below it; the free pairs fill the other slots in order. O(kept pairs).
            free_positions = self.free_pos[nonzero_sorted]
            one_slots = np.searchsorted(free_positions, self._one_pos) + np.arange(self._one_pos.shape[0])
            is_free = np.ones(free_positions.shape[0] + self._one_pos.shape[0], dtype=bool)
            is_free[one_slots] = False
            free_slots = np.flatnonzero(is_free)
            keep = np.empty(is_free.shape[0], dtype=np.int64)
            keep[one_slots] = self._one_pos
            keep[free_slots] = free_positions
            self.free_nonzero_sorted = nonzero_sorted
        if keep.shape[0] == self.all_cols.shape[0]:   # all pairs kept
            indptr, indices = self.all_indptr.astype(np.int32), self.all_cols
        else:
            indptr = np.searchsorted(keep, self.all_indptr).astype(np.int32)
            indices = self.all_cols[keep]
        # CSR layout of the upper S (kept pairs) and where its free entries sit, for spce.upper_matrix
        self.kept_layout = (indptr, indices, free_slots, self.free_nonzero_sorted)
        if _connected_components_undirected is None:
            graph = sparse.csr_matrix((np.ones(keep.shape[0]), indices, indptr), shape=(self.n, self.n))
            k, comp = connected_components(graph, directed=False)
            return int(k), comp.astype(np.int32)
        # the transposed graph (CSC of the kept pairs: rows increasing within each column) in O(kept pairs);
        # a CSC layout of all pairs prepared once cost more to build and to filter than this conversion
        transposed = sparse.csr_matrix((np.ones(keep.shape[0], dtype=np.int8), indices, indptr),
                                       shape=(self.n, self.n)).tocsc()
        comp = np.empty(self.n, dtype=np.int32)
        k = _connected_components_undirected(indices, indptr, transposed.indices.astype(np.int32, copy=False),
                                             transposed.indptr.astype(np.int32, copy=False), comp)
        return int(k), comp

    def _sorted_positions(self, *parts: np.ndarray) -> np.ndarray:
        """np.sort(np.concatenate(parts)) for distinct positions among all pairs, via a mark and flatnonzero."""
        mark = getattr(self, "_mark", None)
        if mark is None:
            mark = self._mark = np.zeros(self.all_cols.shape[0], dtype=bool)
        else:
            mark.fill(False)
        for part in parts:
            mark[part] = True
        return np.flatnonzero(mark)

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


def _constant(value):
    return lambda: value


def _stable_argsort(values: np.ndarray, bound: int) -> np.ndarray:
    """Stable argsort of non-negative integers below ``bound`` (radix sort when they fit in 16 bits)."""
    if bound <= 1 << 16:
        values = values.astype(np.uint16)
    return np.argsort(values, kind="stable")


def _upper_pairs(members: np.ndarray, max_block_entries: int = 20_000_000, bit_masks: bool = False):
    """Rows, cols (int32) and counts (int32) of the pairs p < q put together by at least one member.

    ``bit_masks=True`` (m <= SPARSE_KEYS_MAX_M): the third array holds the agreement bit masks instead
    (int64, bit i = member i puts p and q together, the keys of :func:`_packed_keys`): the left factor's
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
        if m > SPARSE_KEYS_MAX_M:
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


def _upper_pairs_dense(members: np.ndarray):
    """:func:`_upper_pairs` for small n: the counts from one dense float32 product (exact: integers <= m).

    Gives the same arrays as the block-wise sparse product (row-major order = CSR order, sorted columns).
    """
    n, _ = members.shape
    indicators = one_hot(members, dtype=np.float32).toarray()
    counts = indicators @ indicators.T
    flat = np.flatnonzero(np.triu(counts > 0.5, 1))
    rows, cols = np.divmod(flat, n)
    return rows.astype(np.int32), cols.astype(np.int32), counts.ravel()[flat].astype(np.int32)


def _upper_pair_keys_dense(members: np.ndarray):
    """Rows, cols (int32, CSR order) and agreement bit masks (int64) of the pairs p < q put together by at
    least one member, for small n and m <= DENSE_KEYS_MAX_M, from one dense float32 product.

    With the one-hot columns of member i weighted by 2^i, entry (p, q) of the product is the pair's bit mask
    (bit i = member i puts p and q together): a sum of distinct powers of two below 2^24, exact in float32
    whatever the summation order. The same pairs as :func:`_upper_pairs_dense` (mask > 0 <=> count > 0) and
    the same masks as :func:`_packed_keys`.
    """
    n, m = members.shape
    if m > DENSE_KEYS_MAX_M:
        raise ValueError(f"bit masks of {m} members are not exact in float32")
    indicators = one_hot(members, dtype=np.float32).toarray()
    weighted = indicators * np.repeat(np.exp2(np.arange(m, dtype=np.float32)), cluster_counts(members))
    masks = weighted @ indicators.T
    flat = np.flatnonzero(np.triu(masks > 0.5, 1))
    rows, cols = np.divmod(flat, n)
    return rows.astype(np.int32), cols.astype(np.int32), masks.ravel()[flat].astype(np.int64)


def _packed_keys(members: np.ndarray, rows: np.ndarray, cols: np.ndarray, block: int = 1 << 20) -> np.ndarray:
    """Agreement bit mask of every pair (bit i = member i puts p and q together), for m <= 62.

    Equal to the member-by-member key of :func:`_agreement_patterns`, but with one comparison of the two
    label rows per pair, written as 0/1 bytes, 8 members per 64-bit word; one multiplication by
    0x0102040810204080 then gathers the 8 low bits of a word into its top byte. ``rows`` must be
    non-decreasing (CSR order). Block-wise over the pairs, so the temporaries stay below ~80 MB.
    """
    n, m = members.shape
    top = int(members.max()) if members.size else 0
    small = members.astype(np.uint8 if top < 256 else np.uint16 if top < 65536 else np.int64)
    n_words = (m + 7) // 8
    keys = np.zeros(rows.shape[0], dtype=np.uint64)
    same = np.zeros((min(block, rows.shape[0]), 8 * n_words), dtype=bool)
    magic, shift = np.uint64(0x0102040810204080), np.uint64(56)
    for start in range(0, rows.shape[0], block):
        stop = min(rows.shape[0], start + block)
        # rows are non-decreasing: repeat each label row as often as it occurs (a sequential copy, several
        # times faster than gathering the rows)
        first, last = int(rows[start]), int(rows[stop - 1])
        repeats = np.bincount(rows[start:stop] - first, minlength=last - first + 1)
        part = same[:stop - start]
        np.equal(np.repeat(small[first:last + 1], repeats, axis=0), small[cols[start:stop]], out=part[:, :m])
        words = part.view("<u8")
        out = keys[start:stop]
        for w in range(n_words):
            out |= ((words[:, w] * magic) >> shift) << np.uint64(8 * w)
    return keys.astype(np.int64)


def _agreement_patterns(members: np.ndarray, rows: np.ndarray, cols: np.ndarray, packed: bool = True,
                        keys: np.ndarray | None = None):
    """Distinct agreement patterns of the given pairs and each pair's pattern index.

    Patterns are numbered in increasing order of their bit mask (bit i = member i agrees); ``packed=False``
    forces the member-by-member computation used for m > 62 or unsorted rows (the same result). ``keys``:
    the pairs' bit masks when the caller has them (m <= 62).
    """
    n_pairs = rows.shape[0]
    m = members.shape[1]
    if n_pairs == 0:
        return np.zeros(0, dtype=np.int32), np.zeros((0, m), dtype=bool)
    if m <= 62 and packed and (keys is not None or np.all(rows[1:] >= rows[:-1])):
        if keys is None:
            keys = _packed_keys(members, rows, cols)
        if m <= 22:   # distinct keys through a 2^m lookup table (<= 20 MB) instead of sorting the pairs
            present = np.zeros(1 << m, dtype=bool)
            present[keys] = True
            keys_present = np.flatnonzero(present)
            lookup = np.empty(1 << m, dtype=np.int32)
            lookup[keys_present] = np.arange(keys_present.shape[0], dtype=np.int32)
            keys, inverse = keys_present, lookup[keys]
        else:
            keys, inverse = np.unique(keys, return_inverse=True)
        # the pattern rows are the bits of the sorted distinct keys
        bits = np.unpackbits(keys.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        return inverse.ravel().astype(np.int32), bits[:, :m].astype(bool)
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
    keys = None
    if n <= DENSE_COUNTS_LIMIT and m <= DENSE_KEYS_MAX_M:   # pairs and bit masks from one product
        rows, cols, keys = _upper_pair_keys_dense(members)
        is_one = keys == (1 << m) - 1
    elif n > DENSE_COUNTS_LIMIT and m <= SPARSE_KEYS_MAX_M:   # the same from the block-wise sparse product
        rows, cols, keys = _upper_pairs(members, bit_masks=True)
        is_one = keys == (1 << m) - 1
    else:
        rows, cols, counts = (_upper_pairs_dense if n <= DENSE_COUNTS_LIMIT else _upper_pairs)(members)
        is_one = counts == m
        del counts
    one_rows, one_cols = rows[is_one], cols[is_one]
    all_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=all_indptr[1:])
    all_cols, all_rows = cols, rows
    np.logical_not(is_one, out=is_one)
    free_pos = np.flatnonzero(is_one)
    free_rows, free_cols = rows[is_one], cols[is_one]
    free_keys = None if keys is None else keys[is_one]
    del is_one, keys
    pattern, patterns = _agreement_patterns(members, free_rows, free_cols, keys=free_keys)
    return PairTable(n=n, m=m, free_rows=free_rows, free_cols=free_cols, one_rows=one_rows, one_cols=one_cols,
                     pattern=pattern, patterns=patterns, all_cols=all_cols, all_indptr=all_indptr,
                     free_pos=free_pos, all_rows=all_rows)

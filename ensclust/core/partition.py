"""Graph and hypergraph partitioner wrappers (METIS via ``pymetis``, Mt-KaHyPar via ``mtkahypar``).

Shared by the Strehl & Ghosh baselines (specs/baselines/strehl_ghosh.md sections 0-3):

* :func:`integer_weights`     ClusterPack's ``ints``: scale to a total of 10^8 and round (section 0).
* :func:`metis_partition`     seeded METIS on a symmetric sparse weighted graph (CSPA, MCLA).
* :func:`hypergraph_partition`  Mt-KaHyPar, deterministic preset, seeded (HGPA).
* :func:`hyperedge_cut`       recount of the weighted hyperedge cut (test oracle HGPA O3).
* :func:`canonical_column_order`  an order of the one-hot columns that does not depend on member order or
  label names, so that partitioner input (and hence output) is invariant to both.

Both partitioners are deterministic for a fixed seed; the seed is always drawn from the run's Generator.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path

import numpy as np
from scipy import sparse

#: ClusterPack's ``ints`` target total (strehl_ghosh.md section 0).
INTS_TOTAL = 10**8

_MTK_LOCK = threading.Lock()
_MTK_INITIALIZER = None
#: Mt-KaHyPar's deterministic preset as an ini file (the binding's ``context_from_preset`` has no seed: the
#: deterministic algorithms read the context's seed, which only a configuration file can set)
_MTK_PRESET_INI = Path(__file__).resolve().parent.parent / "data" / "mtkahypar_deterministic.ini"
#: hyperedges with at least this many pins are skipped by the preset's coarsening and FM gains
#: (``maxnet-ignore=1000``); consensus hyperedges are base clusters, often larger than 1000 objects, so the
#: limit is lifted (the objective counted them anyway, the optimiser did not see them)
_MTK_MAXNET_IGNORE = 2**31 - 1
#: coarsening stops at ``c-t * k`` vertices (preset: 160); with 160 a k = 26 consensus hypergraph of a few
#: thousand vertices is not coarsened at all and every initial run works on the full hypergraph. 40 cut the
#: time 2-4x with cuts within the seed-to-seed spread (results/bench/graph_s6/README.md)
_MTK_CONTRACTION_LIMIT = 40


def integer_weights(values, total: int = INTS_TOTAL, *, denominator: float | None = None) -> np.ndarray:
    """ClusterPack ``ints``: ``round(x * total / sum(x))`` as int64.

    MATLAB's ``round`` rounds halves away from zero; for non-negative x that is ``floor(y + 0.5)``, which is
    used here (NumPy's ``round`` would round halves to even). ``denominator`` overrides ``sum(x)`` when the
    sum is over a larger array than ``values`` (e.g. all off-diagonal entries given by a lookup table).
    """
    x = np.asarray(values, dtype=np.float64)
    if np.any(x < 0):
        raise ValueError("integer_weights needs non-negative values")
    denom = float(x.sum()) if denominator is None else float(denominator)
    if denom <= 0:
        return np.zeros(x.shape, dtype=np.int64)
    return np.floor(x * (float(total) / denom) + 0.5).astype(np.int64)


def canonical_column_order(B) -> np.ndarray:
    """Order of the columns of a 0/1 sparse matrix by the lexicographic order of their sorted row lists.

    The set of columns of the one-hot matrix does not depend on the order of the members or on the label
    names, so sorting the columns this way makes every partitioner input built from them invariant to both.
    Equal columns (the same cluster in two members) are interchangeable, so their relative order is moot.
    """
    csc = sparse.csc_matrix(B)
    csc.sort_indices()
    ptr, idx = csc.indptr, csc.indices
    keys = [tuple(idx[ptr[j]:ptr[j + 1]].tolist()) for j in range(csc.shape[1])]
    return np.array(sorted(range(csc.shape[1]), key=keys.__getitem__), dtype=np.int64)


def _graph_arrays(W, check_symmetric: bool, prepared: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays of a symmetric weighted graph without self loops and without zero edges."""
    if prepared and sparse.isspmatrix_csr(W):
        # caller guarantees: symmetric, zero diagonal, no explicit zeros - avoid an nnz-sized copy
        return W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data
    W = sparse.csr_matrix(W, copy=True)
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    if check_symmetric and (W != W.T).nnz:
        raise ValueError("METIS needs a symmetric adjacency matrix")
    return W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data


def metis_partition(W, n_parts: int, *, seed: int, vweights=None, recursive: bool = True,
                    ufactor: int | None = None, check_symmetric: bool = True,
                    prepared: bool = False) -> np.ndarray:
    """METIS partition of the graph with symmetric sparse integer weight matrix ``W`` into ``n_parts``.

    Parameters
    ----------
    W : (N, N) sparse/dense symmetric matrix of non-negative integer edge weights; the diagonal is ignored
        and zero entries are no edges.
    n_parts : number of parts.
    seed : METIS random seed (same seed -> same partition).
    vweights : optional length-N positive integer vertex weights.
    recursive : multilevel recursive bisection (``METIS_PartGraphRecursive``, the METIS 5 call matching
        ClusterPack's ``pmetis``) when True, k-way otherwise.
    ufactor : METIS imbalance (1/1000); None keeps METIS's default (1 for recursive, 30 for k-way).
    check_symmetric : verify the symmetry (skip it for large matrices symmetric by construction).
    prepared : ``W`` is a CSR matrix that is symmetric, has a zero diagonal and no stored zeros; it is then
        used as is (saves a copy of the largest array, e.g. CSPA's co-association graph).

    Returns
    -------
    (N,) int64 part index per vertex.
    """
    import pymetis

    n = W.shape[0]
    k = int(n_parts)
    if k <= 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    indptr, indices, data = _graph_arrays(W, check_symmetric, prepared)
    if data.size and (np.any(data <= 0) or not np.all(data == np.round(data))):
        raise ValueError("METIS edge weights must be positive integers")
    opts = {"seed": int(seed)}
    if ufactor is not None:
        opts["ufactor"] = int(ufactor)
    kwargs = {}
    if data.size:
        kwargs["eweights"] = data.astype(np.int64)
    if vweights is not None:
        vw = np.asarray(vweights, dtype=np.int64)
        if vw.shape != (n,) or np.any(vw < 0):
            raise ValueError("vweights must be N non-negative integers")
        kwargs["vweights"] = vw
    _, membership = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(indptr, indices), recursive=recursive,
                                       options=pymetis.Options(**opts), **kwargs)
    return np.asarray(membership, dtype=np.int64)


def _mtkahypar():
    """The process-wide Mt-KaHyPar initializer (one thread), created on first use.

    ``mtkahypar.initialize`` sets up the library's thread pool; it is called once per process with one thread
    (the machine is shared and results must not depend on thread scheduling).
    """
    global _MTK_INITIALIZER
    import mtkahypar

    with _MTK_LOCK:
        if _MTK_INITIALIZER is None:
            _MTK_INITIALIZER = mtkahypar.initialize(1, False)
    return mtkahypar, _MTK_INITIALIZER


def _mtk_context(init, seed: int, ip_runs: int):
    """Context of the deterministic preset with ``seed``, no hyperedge-size limit, ``ip_runs`` initial runs
    and a contraction limit of 40 k."""
    text = _MTK_PRESET_INI.read_text()
    for key, value in (("maxnet-ignore", _MTK_MAXNET_IGNORE), ("i-runs", int(ip_runs)),
                       ("c-t", _MTK_CONTRACTION_LIMIT)):
        text, count = re.subn(rf"(?m)^{key}=.*$", f"{key}={value}", text)
        if count != 1:
            raise RuntimeError(f"{_MTK_PRESET_INI}: no single '{key}=' line")
    text += f"\nseed={int(seed)}\n"
    fd, path = tempfile.mkstemp(suffix=".ini", prefix="ensclust_mtk_")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        return init.context_from_file(path)
    finally:
        os.unlink(path)


def hypergraph_partition(incidence, n_parts: int, *, seed: int, edge_weights=None, node_weights=None,
                         eps: float = 0.05, objective: str = "cut", ip_runs: int = 5) -> tuple[np.ndarray, int]:
    """Mt-KaHyPar (deterministic preset) partition of a hypergraph into ``n_parts`` blocks.

    Parameters
    ----------
    incidence : (N, E) sparse 0/1 matrix; column e lists the pins of hyperedge e.
    n_parts : number of blocks.
    seed : Mt-KaHyPar seed; the deterministic preset with a fixed seed repeats its result exactly, and
        different seeds give different partitions.
    edge_weights : optional length-E positive integer hyperedge weights (default 1).
    node_weights : optional length-N positive integer vertex weights (default 1).
    eps : allowed imbalance: every block weight <= (1 + eps) * ceil(total / n_parts).
    objective : "cut" (weighted hyperedge cut, hMETIS's objective) or "km1" (connectivity - 1).
    ip_runs : initial-partitioning runs per bisection of the coarsest hypergraph (the preset has 20; with
        the coarser contraction limit 5 runs gave cuts within the seed-to-seed spread at a third of the
        time, results/bench/graph_s6/README.md).

    Returns
    -------
    (labels, objective value reported by Mt-KaHyPar)

    Notes
    -----
    Preset changes (all measured, results/bench/graph_s6/README.md): the seed reaches the partitioner (the
    binding's ``set_seed`` only seeds the non-deterministic presets, so every seed gave the same partition);
    hyperedges of any size take part in coarsening and refinement (the preset skips those of >= 1000 pins);
    ``ip_runs`` initial runs; coarsening down to 40 k vertices instead of 160 k. Hyperedges with fewer than two pins are dropped: they are never cut.
    """
    H = sparse.csc_matrix(incidence)
    H.sort_indices()
    n, n_edges = H.shape
    k = int(n_parts)
    if k <= 1 or n == 0:
        return np.zeros(n, dtype=np.int64), 0
    if k >= n:
        return np.arange(n, dtype=np.int64), 0
    mtk, init = _mtkahypar()
    ew = np.ones(n_edges, dtype=np.int64) if edge_weights is None else np.asarray(edge_weights, dtype=np.int64)
    nw = np.ones(n, dtype=np.int64) if node_weights is None else np.asarray(node_weights, dtype=np.int64)
    if ew.shape != (n_edges,) or nw.shape != (n,) or np.any(ew <= 0) or np.any(nw <= 0):
        raise ValueError("hypergraph weights must be positive integers, one per hyperedge / vertex")
    sizes = np.diff(H.indptr)
    keep = np.flatnonzero(sizes > 1)
    edges = [H.indices[H.indptr[e]:H.indptr[e + 1]].tolist() for e in keep]
    objectives = {"cut": mtk.Objective.CUT, "km1": mtk.Objective.KM1}
    if objective not in objectives:
        raise ValueError(f"objective must be 'cut' or 'km1', got {objective!r}")
    with _MTK_LOCK:
        ctx = _mtk_context(init, seed, ip_runs)
        ctx.set_partitioning_parameters(k, float(eps), objectives[objective])
        ctx.logging = False
        hg = init.create_hypergraph(ctx, n, len(edges), edges, nw.tolist(), ew[keep].tolist())
        part = hg.partition(ctx)
        labels = np.asarray(part.get_partition(), dtype=np.int64)
        value = int(part.cut()) if objective == "cut" else int(part.km1())
    return labels, value


def hyperedge_cut(incidence, labels, edge_weights=None) -> int:
    """Weighted number of hyperedges whose pins fall in two or more blocks (hMETIS's hyperedge cut)."""
    H = sparse.csc_matrix(incidence)
    labels = np.asarray(labels)
    ew = np.ones(H.shape[1], dtype=np.int64) if edge_weights is None else np.asarray(edge_weights, np.int64)
    cut = 0
    for e in range(H.shape[1]):
        pins = H.indices[H.indptr[e]:H.indptr[e + 1]]
        if pins.size and np.unique(labels[pins]).size > 1:
            cut += int(ew[e])
    return cut

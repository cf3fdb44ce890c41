"""Base-clustering generators: K-means members and spectral members (SPCE bandwidth grid).

Every member j gets its own seed ``derive_seed("pool-member", seed, j)``, so member j is the same whatever
the pool size, and one member can be regenerated alone. All members use one K-means run (``n_init=1``),
as the papers do.

Spec keys (the config's ``pool:`` block, see :func:`normalize_spec`):

``generator``      ``kmeans`` (default) or ``spectral``.
``k``              ``c`` (every member k = c; ACMK, SPCE, RCEC), ``[lo, hi]`` (k uniform per member in
                   lo..hi; ``"c"`` and ``"sqrt"`` = ceil(sqrt(n)) allowed as bounds; EC-CMS/AWEC use
                   ``[2, sqrt]``), or ``random`` = ``[c, min(ceil(sqrt n), 50)]`` (the default).
``size``           number of members.
``feature_ratio``  null, a ratio r (each member sees round(r d) random features) or ``[lo, hi]`` (ratio
                   drawn uniformly per member; RCEC 0.6..1.0, specs/rcec.md 4.2).
``feature_subset`` ``member`` (default: a new subset per member), ``pool`` (one subset shared by the
                   whole pool) or ``block`` (members j in the same block j // feature_block share one subset:
                   RCEC's recommended reading R9 - one subset per repetition, with ``fresh`` draws of
                   ``feature_block`` members per repetition).
``feature_block``  block size for ``feature_subset: block``.
``min_df``         drop the features that are non-zero in fewer than ``min_df`` samples before anything else
                   (default: keep all). Document-frequency filtering of a term matrix: CLUTO's k1b has 21839
                   terms, 13879 of them in at least 2 documents - the d of RCEC's Table 1 (specs/rcec.md R16).
                   Feature ratios then apply to the kept features. Applied to the preprocessed matrix: per-column
                   weights (idf) are unchanged by it, row norms are not (irrelevant to ``kmeans_metric: cosine``).
``subset_normalize`` ``none`` (default) or ``l2``: rescale every row of the feature subset to unit length
                   before K-means. tf-idf rows are unit length on the full vocabulary but not after a subset;
                   RCEC does not say whether it re-normalises (specs/rcec.md R11), and on Tr11 the base
                   K-means NMI at 60% features rises from 0.35 to about 0.5 with it (results/rcec_table2_tr11*).
``kmeans_metric``  ``euclidean`` (default: Lloyd's K-means, scikit-learn) or ``cosine``: spherical K-means
                   (Dhillon & Modha 2001; MATLAB ``kmeans(..., 'Distance', 'cosine')``): rows scaled to unit
                   length, each point assigned to the centroid of largest cosine, centroids = normalised
                   member sums, an empty cluster takes the point farthest from its centroid. It is invariant to
                   the length of each row, so ``subset_normalize`` makes no difference with it. The usual
                   K-means for tf-idf text; RCEC does not name its K-means variant (specs/rcec.md 4.2).
``init``           K-means seeding: ``k-means++`` (default; SPCE recommendation) or ``random`` (random
                   samples, like Deng Cai's ``litekmeans`` used by the AWEC/ACMK code).
``max_iter``       K-means iterations (default 100, as litekmeans and MATLAB's kmeans).
``sigmas``         spectral only: multipliers of d-bar (default SPCE's 0.01 .. 100 grid); member j uses
                   ``sigmas[j % len(sigmas)]``, so a pool of 9 R members holds R repetitions of the grid.
``seed``           the pool's master seed (default: the config's ``seed``): another draw of the same spec, e.g. to
                   measure how much a table moves with the pool when the paper's own pool is not published.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from ensclust.data.preprocess import preprocess
from ensclust.errors import UserError, unknown_name_error
from ensclust.pools.pool import relabel_columns
from ensclust.rng import derive_seed

GENERATORS = ("kmeans", "spectral")
# The code revision of each generator, like a method's ``revision``: bump it whenever a change of the
# generator's code (or of a library it calls) changes the members it returns for the same spec and seed.
# From 1 on it enters the pool cache key and every cell fingerprint (a cell's stored result is reused only
# while its pool is the one it was computed on); 0 leaves the keys they had before revisions existed.
# tests/test_pool_generator_revision.py pins each generator's members on fixed inputs and fails, naming this
# table, when they change.
GENERATOR_REVISIONS = {"kmeans": 0, "spectral": 0}
KMEANS_METRICS = ("euclidean", "cosine")
SPCE_SIGMAS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 50.0, 100.0)
DEFAULT_K_MAX = 50
SPECTRAL_MAX_N = 12000  # dense n x n kernel: 12000^2 float32 = 576 MB

SPEC_KEYS = {
    "source", "generator", "k", "size", "feature_ratio", "feature_subset", "feature_block", "subset_normalize", "init", "max_iter",
    "kmeans_metric", "min_df",
    "sigmas", "file", "members_key", "y_key", "layout", "first", "missing", "seed",
}


def generator_revision(spec: dict | None) -> int:
    """The code revision of the generator that builds a ``pool:`` spec (0 for imported pools)."""
    spec = spec or {}
    if spec.get("source", "file" if spec.get("file") else "generate") != "generate":
        return 0
    return GENERATOR_REVISIONS.get(spec.get("generator", "kmeans"), 0)


def normalize_spec(spec: dict | None) -> dict:
    """Fill defaults and validate a ``pool:`` spec (unknown keys are an error with a suggestion)."""
    from ensclust.errors import did_you_mean

    spec = dict(spec or {})
    for key in spec:
        if key not in SPEC_KEYS:
            raise UserError(f"pool spec: unknown key '{key}'{did_you_mean(key, SPEC_KEYS)}; valid: {', '.join(sorted(SPEC_KEYS))}")
    out = {
        "source": spec.get("source", "file" if spec.get("file") else "generate"),
        "generator": spec.get("generator", "kmeans"),
        "k": spec.get("k", "random"),
        "size": spec.get("size", 100),
        "feature_ratio": spec.get("feature_ratio"),
        "feature_subset": spec.get("feature_subset", "member"),
        "init": spec.get("init", "k-means++"),
        "max_iter": int(spec.get("max_iter", 100)),
    }
    if out["source"] not in ("generate", "file"):
        raise unknown_name_error("pool source", out["source"], ("generate", "file"), "pool spec")
    if out["source"] == "file":
        if spec.get("seed") is not None:
            raise UserError("pool spec: seed applies to generated pools (a pool file is what it is)")
        if not spec.get("file"):
            raise UserError("pool spec: source 'file' needs 'file: <path relative to the data directory>'")
        out = {"source": "file", "file": spec["file"]}
        for key in ("members_key", "y_key", "layout", "first", "missing"):
            if spec.get(key) is not None:
                out[key] = spec[key]
        return out
    if out["generator"] not in GENERATORS:
        raise unknown_name_error("pool generator", out["generator"], GENERATORS, "pool spec")
    if out["init"] not in ("k-means++", "random"):
        raise unknown_name_error("k-means init", out["init"], ("k-means++", "random"), "pool spec")
    if out["feature_subset"] not in ("member", "pool", "block"):
        raise unknown_name_error("feature_subset", out["feature_subset"], ("member", "pool", "block"), "pool spec")
    normalize_rows = spec.get("subset_normalize", "none")
    if normalize_rows not in ("none", "l2"):
        raise unknown_name_error("subset_normalize", str(normalize_rows), ("none", "l2"), "pool spec")
    if normalize_rows != "none":  # only when set, so the cache keys of existing pools do not change
        out["subset_normalize"] = normalize_rows
    metric = spec.get("kmeans_metric", "euclidean")
    if metric not in KMEANS_METRICS:
        raise unknown_name_error("kmeans_metric", str(metric), KMEANS_METRICS, "pool spec")
    if metric != "euclidean":  # only when set, so the cache keys of existing pools do not change
        if out["generator"] != "kmeans":
            raise UserError("pool spec: kmeans_metric applies to the kmeans generator only")
        out["kmeans_metric"] = metric
    min_df = spec.get("min_df")
    if min_df is not None:
        if not isinstance(min_df, int) or isinstance(min_df, bool) or min_df < 1:
            raise UserError(f"pool spec: min_df must be an integer >= 1, got {min_df!r}")
        if min_df > 1:  # only when it filters, so the cache keys of existing pools do not change
            out["min_df"] = min_df
    if out["feature_subset"] == "block":
        block = spec.get("feature_block")
        if not isinstance(block, int) or isinstance(block, bool) or block < 1:
            raise UserError(f"pool spec: feature_subset 'block' needs feature_block: <members per block>, got {block!r}")
        out["feature_block"] = block
    if int(out["size"]) < 1:
        raise UserError(f"pool spec: size must be >= 1, got {out['size']}")
    out["size"] = int(out["size"])
    if out["generator"] == "spectral":
        out["sigmas"] = [float(s) for s in spec.get("sigmas", SPCE_SIGMAS)]
    if spec.get("first") is not None:
        out["first"] = int(spec["first"])
    return out


def resolve_k_range(k_spec, n: int, c: int | None) -> tuple[int, int]:
    """The inclusive k range of a spec (see the module docstring); it must lie within 1..n."""
    sqrt_n = math.ceil(math.sqrt(n))

    def bound(v) -> int:
        if isinstance(v, str):
            if v == "c":
                if c is None:
                    raise UserError("pool spec: k uses 'c' but the number of clusters is unknown")
                return int(c)
            if v == "sqrt":
                return sqrt_n
            if v.isdigit():
                return int(v)
            raise UserError(f"pool spec: k bound '{v}' is not an integer, 'c' or 'sqrt'")
        return int(v)

    if k_spec in ("c", None):
        lo = hi = bound("c")
    elif k_spec == "random":
        if c is None:
            raise UserError("pool spec: k 'random' = [c, min(sqrt n, 50)] needs the number of clusters")
        lo, hi = int(c), max(int(c), min(sqrt_n, DEFAULT_K_MAX))
    elif isinstance(k_spec, list | tuple) and len(k_spec) == 2:
        lo, hi = bound(k_spec[0]), bound(k_spec[1])
    elif isinstance(k_spec, int | np.integer) or (isinstance(k_spec, str) and k_spec.isdigit()):
        lo = hi = int(k_spec)
    else:
        raise UserError(f"pool spec: k must be 'c', 'random', an integer or [lo, hi], got {k_spec!r}")
    if lo > hi:
        raise UserError(f"pool spec: k range [{lo}, {hi}] is empty (lo > hi)")
    if lo < 1 or hi > n:
        raise UserError(f"pool spec: k range [{lo}, {hi}] must lie within 1..n={n}")
    return lo, hi


def member_seed(seed: int, j: int) -> int:
    """Seed of member j: depends only on the master seed and j (not on the pool size)."""
    return derive_seed("pool-member", int(seed), int(j))


def _ratio_range(ratio):
    if ratio is None:
        return None
    if isinstance(ratio, list | tuple):
        lo, hi = float(ratio[0]), float(ratio[1])
    else:
        lo = hi = float(ratio)
    if not (0 < lo <= hi <= 1):
        raise UserError(f"pool spec: feature_ratio must lie in (0, 1] with lo <= hi, got {ratio!r}")
    return lo, hi


def _feature_subset(rng: np.random.Generator, d: int, ratio_range) -> np.ndarray:
    lo, hi = ratio_range
    r = lo if lo == hi else float(rng.uniform(lo, hi))
    n_feat = max(1, int(round(r * d)))
    return np.sort(rng.choice(d, size=n_feat, replace=False))


def kept_features(X, min_df: int) -> np.ndarray:
    """Indices of the features that are non-zero in at least ``min_df`` samples (pool key ``min_df``)."""
    if sparse.issparse(X):
        Xc = sparse.csc_matrix(X, copy=True)
        Xc.sum_duplicates()
        Xc.eliminate_zeros()
        df = np.diff(Xc.indptr)
    else:
        df = (np.asarray(X) != 0).sum(axis=0)
    keep = np.flatnonzero(df >= min_df)
    if keep.size == 0:
        raise UserError(f"pool spec: min_df={min_df} keeps no feature")
    return keep


def _kmeans(X, k: int, seed: int, init: str, max_iter: int, metric: str = "euclidean") -> np.ndarray:
    if metric == "cosine":
        return _spherical_kmeans(X, k, seed, init, max_iter)
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=k, init=init, n_init=1, max_iter=max_iter, algorithm="lloyd", random_state=seed % (2**32))
    return km.fit_predict(X)


def _spherical_kmeans(X, k: int, seed: int, init: str, max_iter: int) -> np.ndarray:
    """Spherical K-means (cosine similarity, unit-length centroids), one run from a seeded start.

    Seeding: ``random`` = k distinct random points; ``k-means++`` = k-means++ on the cosine distance
    1 - cos (for unit rows proportional to the squared Euclidean distance, so the usual D^2 sampling).
    Lloyd iterations stop when no label changes or after ``max_iter`` passes. All-zero rows (possible
    on a feature subset) have cosine 0 to every centroid.
    """
    from sklearn.preprocessing import normalize

    X = normalize(sparse.csr_matrix(X, dtype=np.float64) if sparse.issparse(X) else np.asarray(X, np.float64))
    n = X.shape[0]
    if not 1 <= k <= n:
        raise UserError(f"spherical k-means: k={k} must lie within 1..n={n}")
    rng = np.random.default_rng(seed % (2**32))

    def rows(idx):
        R = X[idx]
        return R.toarray() if sparse.issparse(R) else np.array(R, dtype=np.float64)

    if init == "random":
        C = rows(np.sort(rng.choice(n, size=k, replace=False)))
    else:  # k-means++ on 1 - cos
        first = int(rng.integers(n))
        C = np.zeros((k, X.shape[1]))
        C[0] = rows([first])[0]
        dist = np.maximum(1.0 - np.asarray(X @ C[0]).ravel(), 0.0)
        for j in range(1, k):
            total = dist.sum()
            i = int(rng.choice(n, p=dist / total)) if total > 0 else int(rng.integers(n))
            C[j] = rows([i])[0]
            dist = np.minimum(dist, np.maximum(1.0 - np.asarray(X @ C[j]).ravel(), 0.0))
    def unit(M):
        norms = np.linalg.norm(M, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return M / norms

    C = unit(C)
    XT = X.T.tocsr() if sparse.issparse(X) else X.T  # d x n: centroid sums as one sparse-dense product
    labels = None
    for _ in range(max(1, int(max_iter))):
        S = np.asarray(X @ np.ascontiguousarray(C.T))
        new = S.argmax(axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=k)
        for j in np.flatnonzero(counts == 0):  # empty cluster: take the point farthest from its centroid
            own = S[np.arange(n), labels]
            own[counts[labels] <= 1] = np.inf  # never empty another cluster
            i = int(own.argmin())
            counts[labels[i]] -= 1
            labels[i] = j
            counts[j] = 1
            S[i, :] = -np.inf
            S[i, j] = 1.0
        onehot = np.zeros((n, k))
        onehot[np.arange(n), labels] = 1.0
        C = unit(np.asarray(XT @ onehot).T)
    return labels.astype(np.int64)


def member_plan(spec: dict, n: int, d: int, c: int | None, seed: int, indices) -> list[dict]:
    """Per-member k, seed and feature subset, each a function of (seed, j) only."""
    lo, hi = resolve_k_range(spec["k"], n, c)
    ratio = _ratio_range(spec.get("feature_ratio"))
    shared = None
    if ratio is not None and spec.get("feature_subset") == "pool":
        shared = _feature_subset(np.random.default_rng(derive_seed("pool-features", int(seed))), d, ratio)
    block = spec.get("feature_block") if ratio is not None and spec.get("feature_subset") == "block" else None
    plan = []
    for j in indices:
        s = member_seed(seed, j)
        rng = np.random.default_rng(s)
        k = int(rng.integers(lo, hi + 1))
        if block is not None:
            block_rng = np.random.default_rng(derive_seed("pool-features", int(seed), int(j) // block))
            feats = _feature_subset(block_rng, d, ratio)
        else:
            feats = shared if shared is not None else (_feature_subset(rng, d, ratio) if ratio is not None else None)
        plan.append({"j": int(j), "k": k, "seed": s, "features": feats})
    return plan


def generate_members(X, spec: dict, *, n_clusters: int | None, seed: int, progress: bool = False, indices=None):
    """Generate members ``indices`` (default 0..size-1) of the pool described by ``spec``.

    Returns ``(members int32 n x m, ks int64, seeds int64)``.
    """
    spec = normalize_spec(spec)
    if spec.get("min_df"):
        X = X[:, kept_features(X, spec["min_df"])]
    n, d = X.shape
    indices = list(range(spec["size"])) if indices is None else list(indices)
    plan = member_plan(spec, n, d, n_clusters, seed, indices)
    bar = _progress(len(plan), f"{spec['generator']} pool", progress)
    cols = []
    # One BLAS/OpenMP thread per process: single small K-means runs gain nothing from threads, and on a
    # shared machine oversubscription made them 3x slower (measured); parallelism belongs to the runner.
    limiter = threadpool_limits(limits=1)
    try:
        if spec["generator"] == "kmeans":
            for p in plan:
                Xj = X if p["features"] is None else X[:, p["features"]]
                if spec.get("subset_normalize") == "l2":
                    Xj = preprocess(Xj, "l2")  # all-zero rows stay zero
                cols.append(_kmeans(Xj, p["k"], p["seed"], spec["init"], spec["max_iter"],
                                    spec.get("kmeans_metric", "euclidean")))
                bar.update(1)
        else:
            cols = _spectral_members(X, spec, plan, seed, bar)
    finally:
        bar.close()
        limiter.restore_original_limits()
    members = relabel_columns(np.column_stack(cols)) if cols else np.zeros((n, 0), np.int32)
    ks = np.array([p["k"] for p in plan], dtype=np.int64)
    seeds = np.array([p["seed"] for p in plan], dtype=np.int64)
    return members, ks, seeds


class _NoBar:
    def update(self, _n=1):
        pass

    def close(self):
        pass


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="member", leave=False)


def mean_pairwise_distance(X) -> float:
    """d-bar: the mean Euclidean distance over all pairs i < j (block-wise, no n x n copy kept)."""
    from sklearn.metrics import pairwise_distances

    n = X.shape[0]
    if n < 2:
        return 0.0
    total = 0.0
    block = 2048
    for start in range(0, n, block):
        D = pairwise_distances(X[start : start + block], X, metric="euclidean")
        total += float(D.sum())
    return total / (n * (n - 1))  # the diagonal is zero, so the full sum counts every pair twice


def gaussian_kernel(X, sigma: float, dtype=np.float64) -> np.ndarray:
    """K_ij = exp(-||x_i - x_j||^2 / (2 sigma^2)) with a zero diagonal (NJW; specs/spce.md 4.3)."""
    from sklearn.metrics import pairwise_distances

    n = X.shape[0]
    K = np.empty((n, n), dtype=dtype)
    block = 2048  # row blocks: the float64 distances of one block only, never a second n x n matrix
    for start in range(0, n, block):
        D2 = pairwise_distances(X[start : start + block], X, metric="sqeuclidean")
        K[start : start + block] = np.exp(D2 * (-1.0 / (2.0 * sigma * sigma)))
    np.fill_diagonal(K, 0.0)
    return K


def _spectral_members(X, spec: dict, plan: list[dict], seed: int, bar) -> list[np.ndarray]:
    """SPCE protocol B: NJW spectral clustering of Gaussian kernels over sigma = d-bar * grid.

    The embedding of a sigma does not depend on the member, so it is computed once per sigma (with the
    largest k needed) and members only differ in their k-means seed (10 replicates, as recommended).
    Degrees are guarded with eps (sigma = 0.01 d-bar underflows to an almost diagonal kernel).
    """
    from ensclust.core.spectral import kmeans_labels, spectral_embedding

    n = X.shape[0]
    if n > SPECTRAL_MAX_N:
        raise UserError(
            f"spectral pool: n={n} needs a dense {n}x{n} kernel; limit is {SPECTRAL_MAX_N} samples - use the kmeans generator"
        )
    if sparse.issparse(X):
        X = X.toarray() if X.shape[1] <= 20000 else X
    sigmas = spec["sigmas"]
    dbar = mean_pairwise_distance(X)
    if dbar == 0:
        raise UserError("spectral pool: all samples are identical (mean pairwise distance 0)")
    dtype = np.float32 if n > 4000 else np.float64
    by_sigma: dict[int, list[dict]] = {}
    for p in plan:
        by_sigma.setdefault(p["j"] % len(sigmas), []).append(p)
    labels = {}
    for s_idx, members in sorted(by_sigma.items()):
        if any(p["features"] is not None for p in members):
            raise UserError("spectral pool: feature_ratio is only supported by the kmeans generator")
        K = gaussian_kernel(X, dbar * sigmas[s_idx], dtype=dtype)
        deg = K.sum(axis=1)
        eps = np.finfo(np.float64).eps
        if np.any(deg <= eps):
            # Adding eps to the diagonal gives isolated points a self-loop: D > 0 and their own eigen-direction.
            K[np.arange(n), np.arange(n)] = np.where(deg <= eps, eps, 0.0).astype(dtype)
        kmax = max(p["k"] for p in members)
        V = spectral_embedding(K, kmax, random_state=derive_seed("spectral-embedding", int(seed), s_idx), normalize_rows=False)
        del K
        for p in members:
            U = V[:, : p["k"]]
            norms = np.linalg.norm(U, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            labels[p["j"]] = kmeans_labels(U / norms, p["k"], random_state=p["seed"], n_init=10)
            bar.update(1)
    return [labels[p["j"]] for p in plan]

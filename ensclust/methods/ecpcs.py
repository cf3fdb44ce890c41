"""ECPCS: enhanced ensemble clustering via fast propagation of cluster-wise similarities
(Huang, Wang, Peng, Lai & Kwoh, IEEE TSMC-S 51(1) 2021; authors' ``ECPCS_HC.m`` / ``ECPCS_MC.m``,
specs/baselines/huang_family.md section 3).

1. Cluster graph: Jaccard similarity of every pair of base clusters (Eq. 8; ``simxjac``).
2. Propagation: t-step random-walk trajectory similarity ``Z`` of the cluster graph
   (:func:`ensclust.core.pts.propagate_similarity`, ``computePTS_II.m``; Eqs. 9-13), its t steps summed in
   closed form from one eigendecomposition of the symmetrised walk (exact; ``reversible_trajectory_sum``).
3. ECPCS-HC: enhanced co-association ``ECA_ij = (1/M) sum_q Z[pi_q(i), pi_q(j)]`` with ``diag(Z) = 1``
   (Eq. 14, ``getECA.m``), then average-link HAC cut at exactly k (deterministic; tie rule of
   ``ensclust.core.hierarchy``).
   ECPCS-MC: Ncut meta-clustering of the clusters on ``Z`` (Cour-Yu-Shi ``ncutW_2`` with Yu-Shi
   discretisation, randomised and seeded from ``random_state``), then every object goes to the meta-cluster
   holding the largest fraction of its clusters (Eq. 17; first index on ties, as MATLAB's ``max``).

ECA depends only on the label vectors, so it is built for pairs of microclusters (ECA = 1 inside one), and
the average-link HAC runs on the size-weighted microclusters by default (same tree up to exact ties,
:func:`ensclust.core.microclusters.microcluster_average_link_labels`); ``hac="objects"`` expands it to the
object pairs of SciPy's condensed vector instead. No dense n x n matrix either way.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, sparse

from ensclust.core.hierarchy import hac_labels
from ensclust.core.labels import cluster_counts, has_missing, labelled_both, one_hot
from ensclust.core.microclusters import (
    compute_microclusters,
    expand_condensed_distance,
    microcluster_average_link_labels,
)
from ensclust.core.pts import propagate_similarity
from ensclust.core.spectral import discretize
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param
from ensclust.methods.lwea import HAC


def cluster_jaccard(members: np.ndarray) -> np.ndarray:
    """Dense K x K Jaccard similarity |C_a n C_b| / |C_a u C_b| of all base clusters (``one_hot`` order)."""
    B = one_hot(members, dtype=np.float64).tocsc()
    inter = (B.T @ B).toarray()
    sizes = np.diag(inter).copy()
    union = sizes[:, None] + sizes[None, :] - inter
    return inter / union


def clustering_owner(members: np.ndarray) -> np.ndarray:
    """Index of the base clustering that owns each of the K clusters."""
    return np.repeat(np.arange(members.shape[1]), cluster_counts(members))


def cluster_similarity(members: np.ndarray, n_steps: int) -> np.ndarray:
    """ECPCS's propagated cluster-wise similarity Z (K x K, diagonal 1 except isolated clusters)."""
    return propagate_similarity(cluster_jaccard(members), n_steps)


def eca_micro(members: np.ndarray, Z: np.ndarray, micro) -> np.ndarray:
    """Enhanced co-association between microclusters: ``B~ Z_bd B~^T / M`` with ``diag(Z) = 1``.

    Z_bd keeps the within-clustering diagonal blocks of Z only (the other blocks are never used by Eq. 14).
    """
    owner = clustering_owner(members)
    Zbd = np.where(owner[:, None] == owner[None, :], Z, 0.0)
    np.fill_diagonal(Zbd, 1.0)
    Bm = micro.indicator()
    left = np.asarray(Bm @ Zbd)                    # n_micro x K
    E = np.asarray(Bm @ left.T).T                 # (B~ Z_bd B~^T)
    if has_missing(micro.members):
        # incomplete ensemble: average over the members labelling both microclusters (missing rows of B~ are
        # zero, so the sum already skips the others), as the co-association does (ensclust.core.coassoc)
        denom = labelled_both(micro.members)
        np.divide(E, denom, out=E, where=denom > 0)
    else:
        E /= members.shape[1]
    return E


T_PARAM = Param(20, type="int", low=1,
                doc="number of random-walk steps of the cluster-similarity propagation",
                source="authors' ECPCS_HC.m / ECPCS_MC.m default (t = 20) and the paper, Sec. V "
                       "('set to 20 for all experiments')")


@register
class ECPCSHC(ConsensusMethod):
    """ECPCS-HC: average-link HAC on the enhanced co-association matrix."""

    name = "ecpcs-hc"
    accepts_missing = True
    missing_doc = "cluster Jaccard over the labelled points; enhanced co-association averaged over the members labelling both microclusters"
    summary = "propagated cluster-wise similarities -> enhanced co-association + average-link HAC"
    params = {"t": T_PARAM, "hac": HAC}

    def _fit(self, members, n_clusters, X, rng):
        n = members.shape[0]
        if n == 1:
            return np.zeros(1, dtype=np.int64)
        Z = cluster_similarity(members, self.t)
        micro = compute_microclusters(members)
        E = eca_micro(members, Z, micro)
        self.diagnostics_["n_micro"] = micro.n_micro
        if self.hac == "microclusters":
            return microcluster_average_link_labels(E, micro, n_clusters)
        d = expand_condensed_distance(E, micro.assignment)
        return hac_labels(distance=d, n_clusters=n_clusters, linkage="average")


def ncut_meta(W: np.ndarray, n_groups: int, *, random_state=None) -> np.ndarray:
    """Cour-Yu-Shi Ncut of a small dense affinity as in ECPCS's ``ncutW_2`` (spectral_and_kmeans.md 4.1).

    Entries below 1e-6 are dropped, the graph is regularised with offset 0.5 (the diagonal gets +0.5 while the
    normalising degree is row sum + 1 - the code's quirk, kept), the top eigenvectors of
    ``D^-1/2 W D^-1/2`` are mapped back by ``D^-1/2``, scaled to norm sqrt(n) with a non-positive first entry,
    and discretised (Yu & Shi, at most 21 rounds as in ``discretisation.m``).
    """
    W = np.array(W, dtype=np.float64)
    W[W < 1e-6] = 0.0
    if np.abs(W - W.T).max() > 1e-10:
        raise ValueError("ncut_meta needs a symmetric affinity")
    n = W.shape[0]
    offset = 0.5
    abs_sum = np.abs(W).sum(axis=1)
    d = abs_sum + 2 * offset
    W[np.diag_indices(n)] += 0.5 * (abs_sum - W.sum(axis=1)) + offset
    dr = 1.0 / np.sqrt(d + np.finfo(float).eps)
    Pm = W * dr[:, None] * dr[None, :]
    # only the n_groups largest eigenpairs are used: a partial symmetric solver (LAPACK syevr on an index
    # range) instead of the full decomposition; columns reversed to descending order as before
    _, vecs = linalg.eigh((Pm + Pm.T) / 2.0, subset_by_index=[n - n_groups, n - 1], check_finite=False)
    V = vecs[:, ::-1] * dr[:, None]
    V *= np.sqrt(n) / np.linalg.norm(V, axis=0, keepdims=True)
    first = np.sign(V[0])
    V *= np.where(first != 0, -first, 1.0)[None, :]
    return discretize(V, random_state=random_state, max_iter=21)


@register
class ECPCSMC(ConsensusMethod):
    """ECPCS-MC: Ncut meta-clustering of the clusters on the propagated similarity, then majority voting."""

    name = "ecpcs-mc"
    accepts_missing = True
    missing_doc = "cluster Jaccard over the labelled points; a point votes only through the members that label it"
    summary = "propagated cluster-wise similarities -> Ncut meta-clustering + voting"
    params = {"t": T_PARAM}
    randomized = True
    # 1: propagation in closed form and a partial eigensolver in ncut_meta; the Yu-Shi discretisation moves
    # some labels on rounding alone (2 of 160 EC-CMS Table IV cells, results/bench/ecpcs_s8)
    revision = 1
    may_return_other_k = True   # the discretisation may leave meta-clusters unused (paper Sec. IV-D)

    def _fit(self, members, n_clusters, X, rng):
        Z = cluster_similarity(members, self.t)
        n_groups = min(n_clusters, Z.shape[0])
        meta = ncut_meta(Z, n_groups, random_state=rng)          # meta-cluster of each base cluster
        B = one_hot(members, dtype=np.float64)
        M = sparse.csr_matrix((np.ones(meta.size), (np.arange(meta.size), meta)),
                              shape=(meta.size, int(meta.max()) + 1))
        counts = np.asarray((B @ M).todense())                    # clusters of meta r that contain i
        sizes = np.asarray(M.sum(axis=0)).ravel()
        score = counts / sizes[None, :]                           # MATLAB mean = sum / count
        self.diagnostics_["n_meta_clusters"] = int(sizes.size)
        return np.argmax(score, axis=1)                           # first maximal index, like max()

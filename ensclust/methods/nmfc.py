"""NMFC: consensus clustering by symmetric orthogonal tri-NMF of the co-association matrix.

Li, Ding & Jordan, ICDM 2007; specs/baselines/nmf_family.md section 1. Minimises ||A - Q S Q^T||_F^2 with
Q, S >= 0 by the multiplicative rules of Ding et al. (KDD 2006); the co-association A = B B^T / m is only used
through products, so no n x n matrix is formed. Labels are argmax_j (Q S^{1/2})_ij.

Choices where no original code exists (documented per the spec): random U(0,1) start with diagonal S,
eps = 1e-12, stop at relative objective change < 1e-6 or 500 iterations.

Note (contradicts nmf_family.md oracle N1): these orthogonal rules do not decrease ||A - Q S Q^T|| monotonically;
the objective rises over stretches of iterations while Q becomes more orthogonal (tests/test_nmf_family.py).
"""

from __future__ import annotations

import numpy as np

from ensclust.core.labels import cluster_counts, one_hot
from ensclust.core.trinmf import ConnectivityOperator, trinmf, trinmf_labels
from ensclust.methods import register
from ensclust.methods._nmf_runs import N_RUNS, run_several
from ensclust.methods.base import ConsensusMethod, Param


@register
class NMFC(ConsensusMethod):
    """NMF-based consensus clustering (orthogonal tri-factorisation of the co-association matrix)."""

    name = "nmfc"
    randomized = True
    may_return_other_k = True  # argmax can leave a factor column unused
    summary = "NMF consensus: symmetric orthogonal tri-NMF of the co-association matrix"
    params = {
        "tol": Param(1e-6, low=0.0, doc="relative objective change to stop", source="nmf_family.md 1"),
        "max_iter": Param(500, type="int", low=1, doc="iteration cap", source="nmf_family.md 1"),
        "n_runs": N_RUNS,
    }

    def _fit(self, members, n_clusters, X, rng):
        m = members.shape[1]
        M = ConnectivityOperator(one_hot(members), np.full(int(cluster_counts(members).sum()), 1.0 / m))

        def once(r):
            Q, S, hist = trinmf(M, n_clusters, r, tol=self.tol, max_iter=self.max_iter)
            return trinmf_labels(Q, S), {"objective": hist, "n_iter": len(hist) - 1,
                                         "converged": len(hist) - 1 < self.max_iter}

        return run_several(once, self.n_runs, n_clusters, rng, self.diagnostics_)

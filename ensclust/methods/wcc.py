"""WCC: weighted consensus clustering (Li & Ding, SDM 2008); specs/baselines/nmf_family.md section 2.

Weights w on the simplex over the base partitions; the weighted connectivity M_w = sum_q w_q B_q B_q^T is
factorised as Q S Q^T (the NMFC tri-NMF), and w is re-estimated by the quadratic program
min_{w in simplex} w^T G w - 2 f^T w with G_qr = <M_q, M_r>_F = ||B_q^T B_r||_F^2 and f_q = <M_q, Q S Q^T>_F.
No original code exists; this is the spec's reconstruction (confidence medium-low): alternate 50 tri-NMF steps
and one exact w-step until the objective changes by < tol. Anomalous partitions get small weights.
"""

from __future__ import annotations

import numpy as np

from ensclust.core.labels import cluster_offsets, one_hot
from ensclust.core.simplex import simplex_qp
from ensclust.core.trinmf import ConnectivityOperator, trinmf, trinmf_labels, trinmf_objective
from ensclust.methods import register
from ensclust.methods._nmf_runs import N_RUNS, run_several
from ensclust.methods.base import ConsensusMethod, Param


@register
class WCC(ConsensusMethod):
    """Weighted consensus clustering: tri-NMF of the weighted connectivity, partition weights by a QP."""

    name = "wcc"
    randomized = True
    may_return_other_k = True
    summary = "weighted consensus clustering (tri-NMF + partition weights by QP on the simplex)"
    params = {
        "inner_iter": Param(50, type="int", low=1, doc="tri-NMF steps between two weight updates",
                            source="nmf_family.md 2 (e.g. 50)"),
        "tol": Param(1e-6, low=0.0, doc="relative objective change to stop", source="nmf_family.md 1"),
        "max_outer": Param(30, type="int", low=1, doc="weight updates at most", source="ensclust choice"),
        "n_runs": N_RUNS,
    }

    def _fit(self, members, n_clusters, X, rng):
        B = one_hot(members)
        offsets = cluster_offsets(members)
        m = members.shape[1]
        blocks = [B[:, offsets[q]:offsets[q + 1]] for q in range(m)]
        # G_qr = ||B_q^T B_r||_F^2 from contingency tables (O(n) each)
        G = np.array([[float((blocks[q].T @ blocks[r]).power(2).sum()) for r in range(m)] for q in range(m)])

        def once(r):
            w = np.full(m, 1.0 / m)
            Q = S = None
            history = []
            for _ in range(self.max_outer):
                M = ConnectivityOperator(B, np.repeat(w, np.diff(offsets)))
                Q, S, hist = trinmf(M, n_clusters, r, tol=0.0, max_iter=self.inner_iter, Q0=Q, S0=S)
                QS = [blk.T @ Q for blk in blocks]
                f = np.array([float(((bq @ S) * bq).sum()) for bq in QS])
                w = simplex_qp(G, -2.0 * f)  # exact; min w^T G w - 2 f^T w
                M = ConnectivityOperator(B, np.repeat(w, np.diff(offsets)))
                history.append(trinmf_objective(M, Q, S))
                if len(history) > 1 and abs(history[-2] - history[-1]) <= self.tol * abs(history[-2]):
                    break
            return trinmf_labels(Q, S), {"objective": history, "n_iter": len(history), "weights": w.tolist()}

        return run_several(once, self.n_runs, n_clusters, rng, self.diagnostics_)

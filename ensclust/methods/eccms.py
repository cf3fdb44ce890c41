"""EC-CMS: ensemble clustering via co-association matrix self-enhancement.

Jia, Tao, Wang & Wang, IEEE TNNLS 2023 (arXiv 2205.05937); authors' MATLAB code ``github.com/Siritao/EC-CMS``;
implementation spec ``specs/eccms.md``.

Pipeline (spec 3.1-3.2, code ``run_EC_CMS``):

1. the plain co-association matrix ``CA`` (Fred & Jain) gives the high-confidence matrix
   ``H = CA * [CA >= alpha]`` with a zero diagonal (code ``getHC``);
2. the matrix to enhance ``A`` is LWCA (theta = 0.4; default), the plain CA (``ca="eac"``, Table VI) or PTA's
   probability-trajectory similarity over microclusters (``ca="pta"``, Table VII);
3. the ADMM of paper Algorithm 1 (:mod:`ensclust.methods._eccms_solver`) returns the enhanced matrix C;
4. average-link HAC on ``1 - C`` cut at exactly c clusters.

Solving the fixed linear system: ``2 Phi + (gamma1 + gamma2) I`` is inverted once per connected component of
the high-confidence graph (Cholesky, LAPACK potrf/potri), after permuting the points so that components are
contiguous; each ADMM iteration is then one GEMM per component (``sum_b 2 n_b^2 n`` flops, not ``2 n^3``) plus
in-place element-wise updates on row chunks (a component full of twins - points with identical label rows -
multiplies by the inverse of its k x k group matrix instead, k = the number of distinct rows: exact, 5-7x fewer
flops on the large pools). An explicit block inverse rather than the factor is
kept because two triangular solves cost as many flops as one GEMM with the inverse and run slower; the blocks
are well conditioned (eigenvalues in [g1+g2, g1+g2+4 max-degree]). See the solver module for details.

Code vs paper (spec section 5); the defaults follow the authors' code, as the spec recommends:

* ``stopping``: "code" (non-squared relative changes, strict <, max_iter 100) or "paper" (squared, <=) (A2);
* ``lock_diagonal``: False = code (E_ii free), True = paper's Omega containing the diagonal (A4);
* ``triangle``: which entries of the (not exactly symmetric) C feed the linkage: "lower" = code
  (MATLAB ``squareform`` reads C(i, j) with i > j), "upper", or "mean" = (C + C^T)/2 (A8);
* distances ``1 - C`` may be negative (C is not boxed, only F); they are shifted by a constant, which keeps the
  average-link merge order (A10).

Precision: ``dtype="auto"`` (default) uses float64 up to 4000 points - it reproduces the spec's numbers to ~1e-12 -
and float32 above (LS, Texture, ISOLET, USPS), which halves memory and time; float32 agrees with float64 to ~1e-6
on C (the spec's Ecoli first-20 numbers and labels are reproduced) but near-tied merges can differ.
"""

from __future__ import annotations

import numpy as np

from ensclust.core.coassoc import coassociation
from ensclust.core.hierarchy import hac_labels
from ensclust.core.lwca import lwca_matrix
from ensclust.methods import register
from ensclust.methods._eccms_solver import high_confidence_matrix, objective, solve
from ensclust.methods.base import ConsensusMethod, Param

_SRC_PAPER = "paper Sec. IV-A1 (recommended value)"
#: dtype="auto" switches to float32 above this many points (memory: six n x n arrays)
AUTO_FLOAT32_ABOVE = 4000


def condensed_from_asymmetric(C: np.ndarray, triangle: str = "lower", *, block: int = 512) -> np.ndarray:
    """Condensed distance vector ``1 - C`` (SciPy order: pairs i < j, row-major) from a non-symmetric C.

    ``triangle="lower"`` reads ``C[j, i]`` for the pair (i < j) - MATLAB ``squareform(C, 'tovector')`` order -,
    ``"upper"`` reads ``C[i, j]`` and ``"mean"`` their average. Negative distances (C > 1) are shifted so that
    the minimum is 0: a constant shift does not change average-link merges (spec 3.2, A10).
    """
    n = C.shape[0]
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    pos = 0
    for start in range(0, n, block):
        stop = min(start + block, n)
        upper = C[start:stop] if triangle in ("upper", "mean") else None
        lower_t = C[:, start:stop].T if triangle in ("lower", "mean") else None
        for r, i in enumerate(range(start, stop)):
            if triangle == "lower":
                row = lower_t[r, i + 1:]
            elif triangle == "upper":
                row = upper[r, i + 1:]
            else:
                row = 0.5 * (np.asarray(upper[r, i + 1:], dtype=np.float64) + lower_t[r, i + 1:])
            np.subtract(1.0, row, out=out[pos:pos + row.size])
            pos += row.size
    low = out.min() if out.size else 0.0
    if low < 0:
        out -= low
    return out


@register
class ECCMS(ConsensusMethod):
    """EC-CMS (Jia et al., TNNLS 2023): self-enhanced co-association matrix + average-link HAC."""

    name = "eccms"
    accepts_missing = True
    missing_doc = "CA / LWCA / PTS over the members labelling both points (ca=eac|lwca|pta), high-confidence entries from that CA"
    summary = "co-association matrix self-enhancement (ADMM on LWCA with a high-confidence Laplacian), average link"
    params = {
        "alpha": Param(0.8, low=0.0, high=1.0, doc="high-confidence threshold: pairs with CA >= alpha form Omega",
                       source=_SRC_PAPER + "; best 0.75 on Ecoli, 0.7 on Caltech20"),
        "lambda": Param(0.4, low=0.0, low_open=True, doc="weight of ||E||_F^2 (noise term)",
                        source=_SRC_PAPER + "; robust on [0.01, 1]"),
        "gamma1": Param(1.0, low=0.0, low_open=True, doc="ADMM penalty of A = C + E",
                        source="paper Sec. IV-A1 and code solver.m (r1 = 1); Table III varies it"),
        "gamma2": Param(1.0, low=0.0, low_open=True, doc="ADMM penalty of C = F",
                        source="paper Sec. IV-A1 and code solver.m (r2 = 1); Table III varies it"),
        "tol": Param(1e-2, low=0.0, low_open=True, doc="stopping threshold epsilon on the relative changes",
                     source="paper Algorithm 1 and code solver.m (e = 1e-2)"),
        "max_iter": Param(100, type="int", low=1, doc="iteration cap of the ADMM",
                          source="code solver.m (max_iter = 100; the paper states none)"),
        "ca": Param("lwca", type="str", choices=("lwca", "eac", "pta"),
                    doc="matrix to enhance: LWCA, plain CA (Table VI) or PTA's PTS over microclusters (Table VII)",
                    source="paper Sec. III (LWCA); Tables VI-VII for eac/pta"),
        "theta": Param(0.4, low=0.0, low_open=True, doc="LWCA's ECI parameter",
                       source="authors' code para_theta = 0.4 (not stated in the paper; spec A3)"),
        "laplacian": Param(True, type="bool", doc="keep tr(C^T Phi C); off = Table VIII ablation 'w/o tr(C^T Phi C)'",
                           source="paper Eq. 5; Table VIII"),
        "completion": Param(True, type="bool", doc="keep Psi_Omega(E) = 0; off = Table VIII ablation",
                            source="paper Eq. 5; Table VIII"),
        "stopping": Param("code", type="str", choices=("code", "paper"),
                          doc="code: non-squared ratios, strict <; paper: squared ratios, <=",
                          source="spec A2 (code reproduces the paper's numbers)"),
        "lock_diagonal": Param(False, type="bool", doc="lock E_ii = 0 too (paper's Omega); code leaves it free",
                               source="spec A4 (code: H's diagonal zeroed before the lock)"),
        "triangle": Param("lower", type="str", choices=("lower", "upper", "mean"),
                          doc="entries of the asymmetric C read by the linkage (lower = MATLAB squareform)",
                          source="spec A8 (code run_EC_CMS.m)"),
        "dtype": Param("auto", type="str", choices=("auto", "float64", "float32"),
                       doc="precision of the ADMM arrays; auto = float64 up to n = 4000 points, float32 above",
                       source="ensclust choice: float64 = MATLAB double; float32 (half memory and time) reproduces "
                              "the spec's Ecoli numbers and F30 to 1e-5"),
        "pta_neighbors": Param(None, type="int", low=0, allow_none=True,
                               doc="PTA elite neighbours K when ca=pta (None: min(20, floor(sqrt(n_micro)/2)))",
                               source="PTA/EC-CMS demo code (specs/baselines/huang_family.md 2.3)"),
        "pta_steps": Param(None, type="int", low=1, allow_none=True,
                           doc="PTA random-walk length T when ca=pta (None: same rule as K)",
                           source="PTA/EC-CMS demo code"),
    }

    def _fit(self, members, n_clusters, X, rng):
        p = self._params
        dtype = p["dtype"]
        if dtype == "auto":
            dtype = "float32" if members.shape[0] > AUTO_FLOAT32_ABOVE else "float64"
        dtype = np.dtype(dtype)
        micro = None
        if p["ca"] == "pta":
            # spec 3.3 / A5: PTS over microclusters; H from the microcluster co-association (MCA)
            from ensclust.core.pts import probability_trajectory_similarity

            res = probability_trajectory_similarity(members, p["pta_neighbors"], p["pta_steps"])
            micro = res.micro
            plain = res.mca
            A = res.similarity
        else:
            plain = coassociation(members, dtype=np.float64, dense=False)
            # built directly in the solver's dtype: no float64 n x n copy stays alive during the ADMM
            A = (coassociation(members, dtype=dtype) if p["ca"] == "eac"
                 else lwca_matrix(members, p["theta"], dtype=dtype))
        H = high_confidence_matrix(plain, p["alpha"])
        del plain
        C, info = solve(A, H, p["lambda"], gamma1=p["gamma1"], gamma2=p["gamma2"], tol=p["tol"],
                        max_iter=p["max_iter"], stopping=p["stopping"], lock_diagonal=p["lock_diagonal"],
                        laplacian=p["laplacian"], completion=p["completion"], dtype=dtype)
        del A
        n_nodes = C.shape[0]
        self.diagnostics_ = {
            "n_iter": info["n_iter"],
            "converged": info["converged"],
            "stop_ratio": info["stop_ratio"],
            "primal_residual1": info["primal_residual1"],
            "primal_residual2": info["primal_residual2"],
            "n_high_confidence": int(H.nnz),
            "n_blocks": info["n_blocks"],
            "largest_component": info["largest_component"],
            "gemm_cost_ratio": info["gemm_cost_ratio"],
            "c_min": float(C.min()),
            "c_max": float(C.max()),
            "dtype": str(dtype),
        }
        if micro is not None:
            self.diagnostics_["n_microclusters"] = int(n_nodes)
        self.consensus_matrix_ = C
        if n_nodes < n_clusters:
            raise ValueError(f"only {n_nodes} microclusters for {n_clusters} clusters")
        dvec = condensed_from_asymmetric(C, p["triangle"])
        labels = hac_labels(distance=dvec, n_clusters=n_clusters, linkage="average")
        if micro is not None:
            labels = micro.to_objects(labels)
        return labels


__all__ = ["ECCMS", "condensed_from_asymmetric", "objective"]

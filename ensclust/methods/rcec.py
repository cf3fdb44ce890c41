"""RCEC: robust convex ensemble clustering (Gao, Yamada, Kaski, Mamitsuka, Zhu, IJCAI 2016).

Model (paper Eq. 2, specs/rcec.md section 2): with L the stacked n x K one-hot assignment matrix,

    J(X) = ||L - X||_F^2 + lambda * tr((X^T X + gamma I)^{1/2}) + beta * sum_j ||X_.j||_2,   X >= 0,

solved by the multiplicative update of paper Eq. 5 (spec 3.3),

    X <- X o sqrt( (2L + lambda X H^-) / (2X + beta X D + lambda X H^+) ),
    H = (X^T X + gamma I)^{-1/2} = H^+ - H^-,   D = diag(1 / (||X_.j|| + varsigma)),

then normalised-cut spectral clustering of X X^T (spec 3.5) computed from the thin SVD of D^{-1/2} X, so the
n x n kernel is never formed. Each iteration costs O(n K^2 + K^3) (X^T X, one K x K eigendecomposition, one
n x K by K x K product, X H^+) and O(n K + K^2) memory, as the paper states; when n < K the n x n
eigendecomposition of X X^T gives H and X H in O(n^2 K + n K^2) (:func:`gram_spectrum`).

The printed derivative uses D_jj = 1/||X_.j||^2 (spec R1), which is the fixed-point rule of a different,
non-convex penalty; the gradient of beta ||X_.j|| needs 1/||X_.j||. ``l21_weight="norm"`` (default) is the
correct rule; ``l21_weight="squared"`` reproduces the printed one for comparison.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ensclust.core.labels import one_hot
from ensclust.core.spectral import ncut_linear_kernel
from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

_TINY = 1e-300


def rcec_objective(L: np.ndarray, X: np.ndarray, lam: float, gamma: float, beta: float, s=None) -> float:
    """J(X) of paper Eq. 2 (the constant sqrt(gamma) per zero singular value included).

    ``s``: the singular values of X when already known.
    """
    if s is None:
        s = np.linalg.svd(X, compute_uv=False)  # min(n, K) singular values; the other K - len(s) are zero
    nuclear = np.sqrt(s**2 + gamma).sum() + (X.shape[1] - s.size) * np.sqrt(gamma)
    return float(((L - X) ** 2).sum() + lam * nuclear + beta * np.linalg.norm(X, axis=0).sum())


def rcec_gradient(L, X, lam, gamma, beta, varsigma=0.0):
    """Gradient 2X - 2L + lambda X H + beta X D of J at X > 0 (spec section 2)."""
    w, Q = np.linalg.eigh(X.T @ X + gamma * np.eye(X.shape[1]))
    H = (Q / np.sqrt(w)) @ Q.T
    D = 1.0 / (np.linalg.norm(X, axis=0) + varsigma)
    return 2 * X - 2 * L + lam * X @ H + beta * X * D[None, :]


def gram_spectrum(X: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """H = (X^T X + gamma I)^{-1/2} (K x K), X H when n < K (else None) and the singular values of X.

    When n < K the Gram matrix X^T X has rank <= n, so the n x n eigendecomposition X X^T = U diag(l) U^T gives,
    with M = U^T X (its rows are sqrt(l) times X's right singular vectors),

        H = gamma^{-1/2} I + M^T diag(f) M,   X H = gamma^{-1/2} X + U diag(l f) M,
        f(l) = ((l + gamma)^{-1/2} - gamma^{-1/2}) / l = -1 / (sqrt(gamma) sqrt(l + gamma) (sqrt(l + gamma) + sqrt(gamma))),

    f written without the division by l, so a zero eigenvalue needs no guard: an n x n eigendecomposition and
    O(n^2 K + n K^2 / 2) products (H by a symmetric rank-n update) replace the thin SVD of X and the product
    X H (ORL: n = 400, K = 1200). Otherwise H comes from the K x K eigendecomposition of X^T X + gamma I; there
    X H would cost as much as X H^- itself, so none is returned.
    """
    n, K = X.shape
    if n < K:
        lam, U = linalg.eigh(X @ X.T, check_finite=False)
        lam = np.clip(lam, 0.0, None)
        root_g, root_l = np.sqrt(gamma), np.sqrt(lam + gamma)
        f = -1.0 / (root_g * root_l * (root_l + root_g))
        M = U.T @ X
        # H = gamma^{-1/2} I - F^T F with F = sqrt(-f) M (f < 0): numpy computes F^T F as a symmetric rank-n
        # update (syrk) and mirrors it, so H is exactly symmetric
        F = np.sqrt(-f)[:, None] * M
        H = F.T @ F
        np.negative(H, out=H)
        H[np.diag_indices(K)] += 1.0 / root_g
        XH = X / root_g + U @ ((lam * f)[:, None] * M)
        return H, XH, np.sqrt(lam)
    w, Q = np.linalg.eigh(X.T @ X + gamma * np.eye(K))
    w = np.clip(w, gamma, None)
    return (Q / np.sqrt(w)) @ Q.T, None, np.sqrt(w - gamma)


def inverse_sqrt_gram(X: np.ndarray, gamma: float) -> np.ndarray:
    """H = (X^T X + gamma I)^{-1/2} (see :func:`gram_spectrum`)."""
    return gram_spectrum(X, gamma)[0]


def rcec_update(L, X, lam, gamma, beta, *, varsigma=1e-10, squared=False, H=None, XH=None):
    """One multiplicative step of paper Eq. 5 (spec 3.3); returns the new X.

    ``H`` and ``XH`` = X H of the current X when already known (:func:`gram_spectrum`). H = H^+ - H^-, so
    X H^- = X H^+ - X H when X H comes from the decomposition (n < K: one n x K x K product per step instead of
    two; X H^- >= 0, so the difference is clipped at 0 against rounding); otherwise X H^- is the product itself.
    """
    if H is None:
        H, XH, _ = gram_spectrum(X, gamma)
    H_pos = np.maximum(H, 0.0)
    XH_pos = X @ H_pos
    XH_neg = X @ (H_pos - H) if XH is None else np.maximum(XH_pos - XH, 0.0)
    norms = np.linalg.norm(X, axis=0)
    D = 1.0 / (norms**2 + varsigma) if squared else 1.0 / (norms + varsigma)
    numer = 2.0 * L + lam * XH_neg
    denom = 2.0 * X + beta * X * D[None, :] + lam * XH_pos
    return X * np.sqrt(numer / np.maximum(denom, _TINY))


@register
class RCEC(ConsensusMethod):
    """Robust convex ensemble clustering (smoothed nuclear norm + column-wise l2,1 penalty).

    Parameters
    ----------
    lambda : weight of the smoothed nuclear norm (paper: 0.1).
    gamma : smoothing constant of tr((X^T X + gamma I)^{1/2}) (paper: 0.01).
    beta : weight of the l2,1 column penalty; removes base clusters with n_j <= beta^2/4 when lambda = 0
        (paper grid {0.01, 1, 2, 4, ..., 20}; spec 4.1 fixed default 12).
    l21_weight : "norm" (correct gradient, default) or "squared" (the paper's printed 1/||x||^2, spec R1).
    tol, max_iter : stop when |J_t - J_{t-1}| / |J_{t-1}| < tol or after max_iter steps (spec R4).
    assign : final Ncut discretisation, "discretize" (Yu-Shi, as Shi's Ncut code) or "kmeans" (spec R7).
    """

    name = "rcec"
    randomized = True
    summary = "robust convex ensemble clustering (nuclear + l2,1 norms, multiplicative update, Ncut)"
    params = {
        "lambda": Param(0.1, low=0.0, doc="weight of the smoothed nuclear norm", source="paper Sec. 4 (lambda = 0.1)"),
        "gamma": Param(0.01, low=0.0, low_open=True, doc="smoothing constant", source="paper Sec. 4 (gamma = 0.01)"),
        "beta": Param(12.0, low=0.0, doc="weight of the l2,1 column penalty",
                      source="paper grid {0.01,1,2,4,...,20}; fixed default 12 from specs/rcec.md 4.1"),
        "l21_weight": Param("norm", type="str", choices=("norm", "squared"),
                            doc="D_jj = 1/||x_j|| (correct) or 1/||x_j||^2 (as printed)", source="specs/rcec.md R1"),
        "varsigma": Param(1e-10, low=0.0, doc="guard for zero columns", source="specs/rcec.md R2"),
        "tol": Param(1e-6, low=0.0, doc="relative objective change to stop", source="specs/rcec.md 3.4"),
        "max_iter": Param(500, type="int", low=1, doc="iteration cap", source="specs/rcec.md 3.4"),
        "assign": Param("discretize", type="str", choices=("discretize", "kmeans"),
                        doc="Ncut discretisation", source="specs/rcec.md R7 (Yu-Shi as in Shi's Ncut code)"),
    }

    def solve(self, L: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Minimise J from a U(0,1) start (spec R3); objective history in ``diagnostics_``."""
        p = self._params
        lam, gamma, beta = p["lambda"], p["gamma"], p["beta"]
        # Strictly positive start: a multiplicative update never revives an exact zero.
        X = rng.uniform(1e-3, 1.0, size=L.shape)
        H, XH, s = gram_spectrum(X, gamma)
        history = [rcec_objective(L, X, lam, gamma, beta, s=s)]
        converged = False
        for _ in range(p["max_iter"]):
            X = rcec_update(L, X, lam, gamma, beta, varsigma=p["varsigma"], squared=p["l21_weight"] == "squared",
                             H=H, XH=XH)
            # one decomposition per iteration serves both J(X_t) and the next step's H, X H
            H, XH, s = gram_spectrum(X, gamma)
            history.append(rcec_objective(L, X, lam, gamma, beta, s=s))
            if abs(history[-2] - history[-1]) <= p["tol"] * max(abs(history[-2]), _TINY):
                converged = True
                break
        self.diagnostics_.update(objective=history, n_iter=len(history) - 1, converged=converged)
        return X

    def _fit(self, members, n_clusters, X_features, rng):
        L = one_hot(members).toarray()
        X = self.solve(L, rng)
        self.assignment_ = X
        # The multiplicative update approaches an exact zero only asymptotically, so a column counts as removed
        # when its norm fell below 1e-3 of the largest column norm.
        col_norm = np.linalg.norm(X, axis=0)
        self.diagnostics_["n_removed_clusters"] = int((col_norm <= 1e-3 * max(col_norm.max(), _TINY)).sum())
        labels, n_zero = ncut_linear_kernel(X, n_clusters, rng, assign=self.assign)
        self.diagnostics_["n_zero_rows"] = n_zero
        return labels

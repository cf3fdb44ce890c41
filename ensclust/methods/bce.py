"""BCE: Bayesian cluster ensembles (Wang, Shan & Banerjee, SDM 2009 / Stat. Anal. Data Min. 2011).

specs/baselines/robust_family.md section 8 (confidence high: the original MATLAB ``learnBCE`` / ``bceEstep`` /
``bceMstep`` was read in full by the spec author).

Generative model (LDA-like): every object s draws a mixture theta_s ~ Dirichlet(alpha) over the k consensus
clusters; for every base clustering n it draws a consensus cluster z ~ Discrete(theta_s) and then its observed
base label x_sn ~ Discrete(beta_n[z]). Fitting is variational EM:

* E-step, per object: phi_{s,i,n} ~ exp(psi(gamma_si) - psi(sum_i gamma_si)) beta_n(i, x_sn) (normalised over i),
  gamma_s = alpha + sum_n phi_{s,:,n}; iterated until the relative L1 change of phi and of gamma is <= 0.01
  (at most 499 sweeps, as the reference loop ``while e > 0.01 && t < 500`` with t starting at 1).
  Every E-step restarts from phi = 1/k, gamma = alpha + V_s/k (the reference code does not warm-start).
* M-step: beta_n(i, q) = sum_s phi_{s,i,n} [x_sn = q] + lap, rows normalised; alpha by Minka's linear-time
  Newton-Raphson for the Dirichlet with step halving while any alpha <= 0 (tolerance 1e-3, <= 500 steps).
* Outer loop until sum_n |beta_n^new - beta_n|_1 / sum_n sum beta_n <= 0.01 (at most 499 iterations).
* Labels: argmax_i gamma_si of the last E-step (first index on ties); fewer than k labels can occur.

The E-step runs for all objects at once with a per-object "still iterating" mask, which gives exactly the
per-object loop of the reference code (objects are independent given alpha and beta); a loop version is kept
(:func:`estep_loop`) as the test oracle. Missing labels (the reference code's 0) cannot occur here because the
members arrive relabelled 0..k_q-1, so every object has V_s = m observed labels.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, polygamma

from ensclust.methods import register
from ensclust.methods.base import ConsensusMethod, Param

_REALMIN = np.finfo(np.float64).tiny  # MATLAB realmin, guards the phi normaliser


def _observed_beta(beta: list[np.ndarray], members: np.ndarray) -> np.ndarray:
    """(n, k, m) array of beta_q(i, x_sq): the likelihood of each object's observed label under every cluster."""
    return np.stack([beta[q][:, members[:, q]].T for q in range(members.shape[1])], axis=2)


def estep(alpha: np.ndarray, beta: list[np.ndarray], members: np.ndarray, *, tol: float = 0.01,
          max_sweeps: int = 499):
    """Variational E-step for all objects at once (``bceEstep`` applied to every row).

    Returns ``phi`` (n, k, m), ``gamma`` (n, k) and the number of sweeps each object took.
    """
    n, m = members.shape
    k = alpha.shape[0]
    obs = _observed_beta(beta, members)
    phi = np.full((n, k, m), 1.0 / k)
    gamma = np.tile(alpha + m / k, (n, 1))
    active = np.ones(n, dtype=bool)
    sweeps = np.zeros(n, dtype=np.int64)
    for _ in range(max_sweeps):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        g = gamma[idx]
        weight = np.exp(digamma(g) - digamma(g.sum(axis=1, keepdims=True)))
        new_phi = weight[:, :, None] * obs[idx]
        new_phi = new_phi / (new_phi + _REALMIN).sum(axis=1, keepdims=True)
        new_gamma = alpha[None, :] + new_phi.sum(axis=2)
        e1 = np.abs(new_phi - phi[idx]).sum(axis=(1, 2)) / phi[idx].sum(axis=(1, 2))
        e2 = np.abs(new_gamma - g).sum(axis=1) / g.sum(axis=1)
        phi[idx] = new_phi
        gamma[idx] = new_gamma
        sweeps[idx] += 1
        active[idx[np.maximum(e1, e2) <= tol]] = False
    return phi, gamma, sweeps


def estep_loop(alpha: np.ndarray, beta: list[np.ndarray], members: np.ndarray, *, tol: float = 0.01,
               max_sweeps: int = 499):
    """Object-by-object E-step, a direct transcription of the reference loop (test oracle for :func:`estep`)."""
    n, m = members.shape
    k = alpha.shape[0]
    phi_all = np.zeros((n, k, m))
    gamma_all = np.zeros((n, k))
    for s in range(n):
        obs = np.stack([beta[q][:, members[s, q]] for q in range(m)], axis=1)  # k x m
        phi = np.full((k, m), 1.0 / k)
        gamma = alpha + m / k
        for _ in range(max_sweeps):
            new_phi = np.exp(digamma(gamma) - digamma(gamma.sum()))[:, None] * obs
            new_phi = new_phi / (new_phi + _REALMIN).sum(axis=0, keepdims=True)
            new_gamma = alpha + new_phi.sum(axis=1)
            err = max(np.abs(new_phi - phi).sum() / phi.sum(), np.abs(new_gamma - gamma).sum() / gamma.sum())
            phi, gamma = new_phi, new_gamma
            if err <= tol:
                break
        phi_all[s], gamma_all[s] = phi, gamma
    return phi_all, gamma_all


def update_beta(phi: np.ndarray, members: np.ndarray, sizes: np.ndarray, lap: float) -> list[np.ndarray]:
    """M-step for beta: expected label counts per consensus cluster plus Laplace smoothing, rows normalised."""
    beta = []
    for q in range(members.shape[1]):
        counts = np.zeros((phi.shape[1], int(sizes[q])))
        # scatter-add phi[s, :, q] into column x_sq (one column per base cluster)
        np.add.at(counts.T, members[:, q], phi[:, :, q])
        counts += lap
        beta.append(counts / counts.sum(axis=1, keepdims=True))
    return beta


def update_alpha(alpha: np.ndarray, gamma: np.ndarray, *, tol: float = 1e-3, max_steps: int = 500):
    """Dirichlet MLE of alpha from the variational gammas by Minka's Newton-Raphson (linear-time Hessian inverse).

    Each step is halved until every alpha stays positive (``bceMstep``). Returns ``(alpha, n_steps)``.
    """
    n_obj = gamma.shape[0]
    suff = (digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))).sum(axis=0)
    a = alpha.copy()
    steps = 0
    err = np.inf
    while err > tol and steps < max_steps:
        grad = suff + n_obj * (digamma(a.sum()) - digamma(a))
        h = -n_obj * polygamma(1, a)
        z = n_obj * polygamma(1, a.sum())
        c = (grad / h).sum() / (1.0 / z + (1.0 / h).sum())
        delta = (grad - c) / h
        if not np.all(np.isfinite(delta)):
            break
        eta = 1.0
        new = a - delta
        while np.any(new <= 0):
            eta /= 2.0
            if eta < 1e-300:  # cannot happen for finite delta and positive a; guards an endless loop
                new = a
                break
            new = a - eta * delta
        err = np.abs(new - a).sum() / a.sum()
        a = new
        steps += 1
    return a, steps


@register
class BCE(ConsensusMethod):
    """Bayesian cluster ensembles (variational EM of an LDA-like model of the label matrix).

    Randomised through the initial alpha ~ U(0,1)^k and beta rows ~ U(0,1) normalised, drawn from the
    run's generator (the reference code uses MATLAB ``rand``; one fit per ensemble, as the spec recommends).
    The result can have fewer than ``n_clusters`` labels (``may_return_other_k``).

    Diagnostics: ``n_iter`` (outer EM iterations), ``converged``, ``beta_change`` (relative L1 change per
    iteration, the stopping criterion), ``max_estep_sweeps``, ``alpha``.
    """

    name = "bce"
    summary = "Bayesian cluster ensembles: variational EM of an LDA-like model of the base labels"
    randomized = True
    may_return_other_k = True
    params = {
        "lap": Param(1e-6, low=0.0, doc="Laplace smoothing added to the beta counts",
                     source="BCE original code (learnBCE/BCE.m lapParam = 1e-6); spec section 8"),
        "tol": Param(0.01, low=0.0, low_open=True,
                     doc="outer-loop tolerance on the relative L1 change of beta",
                     source="BCE original code learnBCE.m (epsilon = 0.01)"),
        "max_iter": Param(499, type="int", low=1,
                          doc="maximum outer EM iterations (reference: while t < 500 from t = 1)",
                          source="BCE original code learnBCE.m (time = 500)"),
        "estep_tol": Param(0.01, low=0.0, low_open=True,
                           doc="E-step tolerance on the relative L1 change of phi and gamma",
                           source="BCE original code bceEstep.m (epsilon = 0.01)"),
        "estep_max_iter": Param(499, type="int", low=1, doc="maximum E-step sweeps per object",
                                source="BCE original code bceEstep.m (time = 500)"),
    }

    def _fit(self, members, n_clusters, X, rng):
        k = n_clusters
        sizes = members.max(axis=0) + 1
        alpha = rng.random(k)
        beta = []
        for q in range(members.shape[1]):
            b = rng.random((k, int(sizes[q])))
            beta.append(b / b.sum(axis=1, keepdims=True))

        history = []
        max_sweeps = 0
        converged = False
        gamma = None
        for _ in range(self.max_iter):
            phi, gamma, sweeps = estep(alpha, beta, members, tol=self.estep_tol, max_sweeps=self.estep_max_iter)
            max_sweeps = max(max_sweeps, int(sweeps.max()))
            new_beta = update_beta(phi, members, sizes, self.lap)
            alpha, _ = update_alpha(alpha, gamma)
            change = sum(np.abs(b - nb).sum() for b, nb in zip(beta, new_beta, strict=True)) / sum(b.sum() for b in beta)
            history.append(float(change))
            beta = new_beta
            if change <= self.tol:
                converged = True
                break
        self.diagnostics_ = {
            "n_iter": len(history),
            "converged": converged,
            "beta_change": history,
            "max_estep_sweeps": max_sweeps,
            "alpha": [float(a) for a in alpha],
        }
        self.gamma_ = gamma
        return np.argmax(gamma, axis=1)

"""Shared parameters of the NMF-family baselines: several random starts combined (specs/rcec.md R12)."""

from __future__ import annotations

from ensclust.core.spectral import consensus_of_runs
from ensclust.methods.base import Param

N_RUNS = Param(1, type="int", low=1,
               doc="random initialisations; several runs are combined by Ncut on their co-association",
               source="1 (ACMK/SPCE protocols); RCEC runs NMF baselines 5 times (specs/rcec.md 4.3, R12)")


def run_several(fit_once, n_runs: int, n_clusters: int, rng, diagnostics: dict):
    """Call ``fit_once(rng) -> (labels, diag)`` ``n_runs`` times and combine; keep the first run's diagnostics."""
    outs = [fit_once(rng) for _ in range(n_runs)]
    diagnostics.update(outs[0][1])
    diagnostics["n_runs"] = n_runs
    return consensus_of_runs([o[0] for o in outs], n_clusters, rng)

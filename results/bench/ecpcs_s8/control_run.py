"""Rerun committed ECPCS cells with the propagation of main (``order=syrk``: its dense branch, bit for bit) or
the same step-by-step sums in another summation order (``order=gemm``: a rounding-only control), to show
whether a label change of the closed form is rounding-level (the control moves the same labels).

    PYTHONPATH=/work/wt-ecpcs python control_run.py {syrk,gemm} <results root> <ensclust run arguments...>

The worktree's ncut_meta (partial eigensolver) stays in place unless ``ECPCS_FULL_EIGH=1``.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from diagnose_changes import full_ncut, old_propagate  # noqa: E402

from ensclust.cli import main  # noqa: E402
from ensclust.methods import ecpcs  # noqa: E402

order, root = sys.argv[1], sys.argv[2]
ecpcs.cluster_similarity = lambda members, n_steps: old_propagate(ecpcs.cluster_jaccard(members), n_steps, order)
if os.environ.get("ECPCS_FULL_EIGH") == "1":
    ecpcs.ncut_meta = full_ncut
main(["run", *sys.argv[3:], "--quiet", "--results", root])

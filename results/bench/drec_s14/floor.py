"""DREC on the USPS pool (first 20 members): CPU time of a whole fit against the stages no implementation of
DREC with this eigen-solver can skip.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/drec_s14/floor.py \
        > results/bench/drec_s14/floor.json

Floor: the dense representation (K x K eigenproblem, n_micro x K factors), the n_micro^2 affinity (P P^T)^4 and
its normalisation, one Cholesky factorisation of sigma I - M (the cheapest top-k route measured for a top
spectrum packed next to 1: 70-145 products' worth, against the hundreds of products Lanczos needs here), and
the k-means on the embedding. Not in the floor: ARPACK's bounded first try (10 restarts) and the block steps.
"""
import json
import os
import time

import numpy as np
from scipy.linalg import cho_factor

import ensclust.methods.drec as drec
from ensclust.core.microclusters import compute_microclusters
from ensclust.core.spectral import kmeans_labels, normalized_affinity, spectral_embedding
from ensclust.data.io import read_arrays
from ensclust.methods import get_method


def cpu(fn, *args, **kwargs):
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t0


pool = read_arrays(os.path.join(os.environ.get("ENSCLUST_DATA", "../shared/datasets"), "pools/eccms_usps.mat"))
members = np.asarray(pool["members"])[:, :20].astype(np.int64)
out = {"load_avg": [round(x, 2) for x in os.getloadavg()], "lambda": {}}
for lam in (1.0, 100.0):
    micro = compute_microclusters(members)
    (U, R, _), t_rep = cpu(drec.dense_representation, micro.indicator(), lam)
    L, t_aff = cpu(drec.lrr_affinity, U, R)
    M, t_norm = cpu(normalized_affinity, L)
    A = -M
    A[np.diag_indices(M.shape[0])] += 1.0 + 1e-4
    _, t_chol = cpu(cho_factor, A, overwrite_a=True, check_finite=False)
    del A
    V, t_embed = cpu(spectral_embedding, L, 10, random_state=np.random.default_rng(0))
    _, t_km = cpu(kmeans_labels, V, 10, random_state=np.random.default_rng(0), n_init=100)
    _, t_fit = cpu(get_method("drec", **{"lambda": lam}).fit_predict, members, 10, random_state=0)
    floor = t_rep + t_aff + t_norm + t_chol + t_km
    out["lambda"][str(lam)] = {"n_micro": int(micro.n_micro), "fit_cpu_s": round(t_fit, 2),
                               "dense_representation": round(t_rep, 2), "affinity": round(t_aff, 2),
                               "normalisation": round(t_norm, 2), "cholesky": round(t_chol, 2),
                               "kmeans": round(t_km, 2), "embedding_now": round(t_embed, 2),
                               "floor_s": round(floor, 2), "fit_over_floor": round(t_fit / floor, 2)}
print(json.dumps(out, indent=1))

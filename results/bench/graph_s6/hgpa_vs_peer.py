"""HGPA before/after vs the peer (ensembleclustering 1.0.2 ``hgpa``, KaHyPar) on the same pools, one run.

Usage (from the repository root, one BLAS thread)::

    git archive main ensclust | tar -x -C /tmp/hgpa_before     # the code before the change
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python results/bench/graph_s6/hgpa_vs_peer.py \\
        --before /tmp/hgpa_before --peer-python /tmp/peer_venv/bin/python --seeds 10

The peer venv: ``pip install --no-deps ensembleclustering`` plus numpy scipy scikit-learn pymetis kahypar.
Each (implementation, pool) runs in its own process over all seeds, interleaved pool by pool; per call the
CPU time (``time.process_time``) of the consensus call only; the peer's call includes its Python hypergraph
construction (it is part of its ``hgpa``). Quality: ARI against the truth and the hyperedge cut of the
returned labels counted on the object hypergraph, unit weights (the peer's objective) and size weights
(ensclust's default objective), averaged over the seeds.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

POOLS = {
    "digits": ("digits", {"generator": "kmeans", "k": [2, "sqrt"], "size": 20}),
    "isolet": (None, {"source": "file", "file": "pools/eccms_isolet.mat"}),
    "usps": (None, {"source": "file", "file": "pools/eccms_usps.mat"}),
}

CHILD = r'''
import sys, json, time, hashlib, resource
import numpy as np
from scipy import sparse
kind, path, nseeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = np.load(path); m, y, c = d["members"], d["y"], int(d["c"])
if kind == "peer":
    from ensembleclustering import ClusterEnsembles as CE
    call = lambda seed: CE.hgpa(m.T.astype(float), c, seed)
else:
    from ensclust.methods import get_method
    call = lambda seed: get_method("hgpa").fit_predict(m, c, random_state=seed)
from sklearn.metrics import adjusted_rand_score
cols = []
for q in range(m.shape[1]):
    _, inv = np.unique(m[:, q], return_inverse=True)
    cols.append(inv.ravel())
offs = np.concatenate([[0], np.cumsum([col.max() + 1 for col in cols])])
H = sparse.csc_matrix((np.ones(m.size), (np.tile(np.arange(m.shape[0]), m.shape[1]),
                       np.concatenate([col + offs[q] for q, col in enumerate(cols)]))))
H.sort_indices()
size = np.diff(H.indptr)
out = []
for seed in range(nseeds):
    t0 = time.process_time(); lab = np.asarray(call(seed)); cpu = time.process_time() - t0
    cut = np.array([np.unique(lab[H.indices[H.indptr[e]:H.indptr[e + 1]]]).size > 1 for e in range(H.shape[1])])
    out.append({"seed": seed, "cpu": cpu, "ari": adjusted_rand_score(y, lab), "k": int(np.unique(lab).size),
                "cut_unit": int(cut.sum()), "cut_size": int(size[cut].sum()),
                "hash": hashlib.sha1(lab.astype(np.int64).tobytes()).hexdigest()[:12]})
print(json.dumps({"calls": out, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--peer-python", required=True)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", default="results/bench/graph_s6/hgpa_vs_peer.json")
    args = ap.parse_args()
    from ensclust.data import load_dataset
    from ensclust.pools import get_pool

    tmp = tempfile.mkdtemp(prefix="hgpa_bench_")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    results = {}
    for name, (ds, spec) in POOLS.items():
        dataset = load_dataset(ds) if ds else None
        pool = get_pool(dataset, spec, seed=0, data_dir=None, cache_dir="results/cache/pools")
        m = np.asarray(pool.members)[:, :20]
        y = np.asarray(pool.y if pool.y is not None else dataset.y)
        path = os.path.join(tmp, f"{name}.npz")
        np.savez(path, members=m, y=y, c=int(np.unique(y).size))
        runs = {"before": ([sys.executable], os.path.abspath(args.before)), "after": ([sys.executable], os.getcwd()),
                "peer": ([args.peer_python], None)}
        for who, (py, root) in runs.items():
            e = dict(env)
            if root:
                e["PYTHONPATH"] = root
            kind = "peer" if who == "peer" else "ensclust"
            # cwd=tmp: ``python -c`` puts the working folder first on sys.path, which must not shadow PYTHONPATH
            res = subprocess.run(py + ["-c", CHILD, kind, path, str(args.seeds)], env=e, capture_output=True,
                                 text=True, check=True, cwd=tmp)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            calls = r["calls"]
            summary = {k: float(np.mean([c[k] for c in calls])) for k in ("ari", "cut_unit", "cut_size")}
            summary.update(cpu_median=float(np.median([c["cpu"] for c in calls])),
                           cpu_min=float(np.min([c["cpu"] for c in calls])), peak_mb=r["peak_mb"],
                           ari_sd=float(np.std([c["ari"] for c in calls])),
                           distinct_partitions=len({c["hash"] for c in calls}), hash_seed0=calls[0]["hash"],
                           k_min=min(c["k"] for c in calls))
            results.setdefault(name, {})[who] = {"summary": summary, "calls": calls}
            print(name, who, json.dumps(summary), flush=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()

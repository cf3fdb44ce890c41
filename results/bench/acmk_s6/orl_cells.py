"""Recompute Orlraws ACMK-KM cells of results/acmk_small/cells.csv with several code versions in one process.

    python results/bench/acmk_s6/orl_cells.py --lam 0.001 --code new --code old=/tmp/old_acmk \
        --code old_b16=/tmp/old_acmk_b16

Same pool (kmeans, k = c, 100 members, seed 0), draws (fresh, 10 x 10, seed 1), l2 preprocessing and cell
seeds as the committed cells; prints per code and repetition ACC / NMI and whether the labels hash equals the
committed one. ``old_b16`` is the old code with only BLOCK_ELEMENTS changed (a pure summation-order change),
to show how far rounding alone moves a 50-iteration ACMK run.
"""

import argparse
import csv
import json

import numpy as np

# the old or new acmk module, loaded as the benchmark script loads it (same folder)
from bench_acmk import _load_code as load  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lam", type=float, default=0.001)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--code", action="append")
    ap.add_argument("--cells", default="results/acmk_small/cells.csv")
    args = ap.parse_args()
    from ensclust.data import load_dataset
    from ensclust.experiment.runner import labels_sha256
    from ensclust.metrics import acc, nmi
    from ensclust.pools import get_pool
    from ensclust.pools.draws import draw_ensembles

    committed = {}
    for r in csv.DictReader(open(args.cells)):
        if r["dataset"] == "Orlraws" and r["method_name"] == "acmk-km" and json.loads(r["params"]) == {"lambda": args.lam}:
            committed[int(r["rep"])] = r
    ds = load_dataset("orlraws10p", preprocess="l2")
    pool = get_pool(ds, {"source": "generate", "generator": "kmeans", "k": "c", "size": 100}, seed=0)
    draws = draw_ensembles(100, mode="fresh", size=10, repetitions=10, seed=1)
    members_all = np.asarray(pool.members)
    for spec in args.code:
        mod = load(spec)
        mod.clear_admm_cache()
        rows = []
        for rep in range(args.reps):
            cell = committed[rep]
            members = members_all[:, draws[rep]]
            est = mod.ACMKKMeans(lambda_=args.lam)
            lab = est.fit_predict(members, ds.n_clusters, X=ds.X, random_state=int(cell["seed"]))
            a, m = float(acc(ds.y, lab)), float(nmi(ds.y, lab, average="max"))
            same = labels_sha256(lab) == cell["labels_sha256"]
            rows.append((a, m, same, float(cell["acc"]), float(cell["nmi"])))
        acc_d = max(abs(r[0] - r[3]) for r in rows)
        nmi_d = max(abs(r[1] - r[4]) for r in rows)
        print(json.dumps({"code": spec.split("=")[0], "lambda": args.lam, "same_hash": sum(r[2] for r in rows),
                          "reps": len(rows), "mean_acc": round(np.mean([r[0] for r in rows]), 4),
                          "mean_nmi": round(np.mean([r[1] for r in rows]), 4),
                          "committed_mean_acc": round(np.mean([r[3] for r in rows]), 4),
                          "committed_mean_nmi": round(np.mean([r[4] for r in rows]), 4),
                          "max_abs_dacc": round(acc_d, 4), "max_abs_dnmi": round(nmi_d, 4)}), flush=True)


if __name__ == "__main__":
    main()

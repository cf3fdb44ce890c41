"""Recomputed RSEC cells (a run folder's cells/*.json) against a config's committed cells.csv: labels equal, and
the change of every grid point's mean and of the oracle-tuned (best point) value per metric.

    python results/bench/rsec_s21/table_check.py /tmp/k21/awec_tables2_4_small results/awec_tables2_4_small
"""
import glob
import json
import sys

import pandas as pd

run, committed = sys.argv[1], sys.argv[2]
rows = []
for f in glob.glob(f"{run}/cells/*.json"):
    d = json.load(open(f))
    if d.get("labels_sha256") is None or not d.get("metrics"):
        continue
    rows.append({"dataset": d["dataset"], "method": d["method"], "point": d["point"], "rep": d["rep"],
                 "labels": d["labels_sha256"], **d["metrics"]})
new = pd.DataFrame(rows)
old = pd.read_csv(f"{committed}/cells.csv").rename(columns={"labels_sha256": "labels"})
key = ["dataset", "method", "point", "rep"]
m = old.merge(new, on=key, suffixes=("_o", "_n"))
m = m[m.labels_o.notna()]
print(f"{len(m)} cells compared, {(m.labels_o == m.labels_n).sum()} labels equal")
for met in [c[:-2] for c in m.columns if c.endswith("_n") and c[:-2] in ("acc", "ari", "nmi", "fscore")]:
    g = m.groupby(["dataset", "method", "point"])[[met + "_o", met + "_n"]].mean()
    point = (g[met + "_n"] - g[met + "_o"]).abs().groupby(level=[0, 1]).max()
    best = g.groupby(level=[0, 1]).max()
    best["max point-mean change"] = point
    print(f"\n{met}: oracle (best point) value before / after, largest change of a point mean")
    print(best.round(4).to_string())

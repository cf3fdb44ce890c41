"""Compare two cells.csv files cell by cell: identical labels_sha256 and score differences per dataset/method.

    python results/bench/robust_s7/compare_cells.py REFERENCE/cells.csv NEW/cells.csv
"""

import sys

import pandas as pd

ref = pd.read_csv(sys.argv[1])
new = pd.read_csv(sys.argv[2])
key = ["dataset", "method", "point", "rep"]
m = new.merge(ref, on=key, suffixes=("_new", "_ref"))
metrics = [c for c in ("ari", "nmi", "fscore", "acc") if c + "_new" in m]
for (ds, meth), g in m.groupby(["dataset", "method"]):
    same = (g.labels_sha256_new == g.labels_sha256_ref).sum()
    diffs = {c: float((g[c + "_new"] - g[c + "_ref"]).abs().max()) for c in metrics}
    means = {c: float(g[c + "_new"].mean() - g[c + "_ref"].mean()) for c in metrics}
    print(f"{ds} | {meth} | {same}/{len(g)} identical labels | max |d| {diffs} | mean d {means}")

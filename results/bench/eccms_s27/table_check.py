"""Committed EC-CMS cells before / after the bordered inverse: labels, per-cell and per-row (tabled mean) changes.

Usage: python table_check.py BEFORE_REV CONFIG [CONFIG ...]   (run from the repository root, after
`ensclust run CONFIG --method ... --force` recomputed the EC-CMS rows in results/CONFIG)
"""

import io
import subprocess
import sys

import pandas as pd

rev, configs = sys.argv[1], sys.argv[2:]
KEY = ["dataset", "method", "point", "rep"]
for config in configs:
    path = f"results/{config}/cells.csv"
    old = pd.read_csv(io.StringIO(subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True,
                                                 check=True).stdout))
    new = pd.read_csv(path)
    old, new = (f[(f.method_name == "eccms") & (f.rep >= 0)] for f in (old, new))
    both = old.merge(new, on=KEY, suffixes=("_old", "_new"))
    metrics = [m for m in ("ari", "nmi", "fscore", "acc") if f"{m}_old" in both]
    same = int((both.labels_sha256_old == both.labels_sha256_new).sum())
    cell = max(float((both[f"{m}_new"] - both[f"{m}_old"]).abs().max()) for m in metrics)
    rows = both.groupby(["dataset", "method", "point"])[[f"{m}_{s}" for m in metrics for s in ("old", "new")]].mean()
    row = max(float((rows[f"{m}_new"] - rows[f"{m}_old"]).abs().max()) for m in metrics)
    print(f"{config}: {len(both)} cells, labels equal {same}, largest cell change {cell:.4f}, "
          f"largest change of a row mean {row:.4f}")
    for ds, g in both.groupby("dataset"):
        diff = int((g.labels_sha256_old != g.labels_sha256_new).sum())
        print(f"    {ds}: {len(g)} cells, {diff} with other labels")

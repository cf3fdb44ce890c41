"""Printed means of the table CSVs: HEAD vs working tree, per config (max |diff|, cells > 0.005)."""
import subprocess, io, sys, pandas as pd
files = subprocess.run(["git", "diff", "--name-only", "--", "results/*/table_*.csv"], capture_output=True, text=True).stdout.split()
tot = []
for f in files:
    old = pd.read_csv(io.StringIO(subprocess.run(["git", "show", f"HEAD:{f}"], capture_output=True, text=True).stdout))
    new = pd.read_csv(f)
    key = [c for c in ("metric", "method", "dataset") if c in old.columns]
    m = old.merge(new, on=key, suffixes=("_old", "_new"))
    m["d"] = (m["mean_new"] - m["mean_old"]).abs()
    m["file"] = f
    tot.append(m[key + ["file", "mean_old", "mean_new", "d"]])
if tot:
    t = pd.concat(tot)
    for f, g in t.groupby("file"):
        print(f"{f}: {len(g)} cells, changed {(g['d'] > 0).sum()}, max |diff| {g['d'].max():.4f}, > 0.005: {(g['d'] > 0.005).sum()}")
    print(t[t["d"] > 0.005].round(4).to_string(index=False))

"""Markdown tables of runs.jsonl (bench.py) and floor.jsonl: CPU s median / min per implementation, ratios of
medians measured in the same run, peak RSS, labels hash (first 10 hex digits; '*' if it varied between
repetitions) and ARI."""
import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def markdown(df, fmt="{:.3f}"):
    cells = [[fmt.format(v) if isinstance(v, float) else str(v) for v in r] for r in df.itertuples(index=False)]
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells])


runs = pd.DataFrame([json.loads(line) for line in open(HERE / "runs.jsonl")])
runs = runs[runs.get("error").isna()] if "error" in runs else runs
rows = []
for (ds, meth), g in runs.groupby(["dataset", "method"], sort=False):
    med = g.groupby("impl")["cpu_s"].median()
    row = {"data set": ds, "method": meth, "reps": int(g.groupby("impl").size().min())}
    for impl in ("before", "after", "pce"):
        gi = g[g["impl"] == impl]
        if gi.empty:
            continue
        hashes = gi["labels_sha256"].unique()
        row[f"{impl} CPU s med / min"] = f"{gi['cpu_s'].median():.2f} / {gi['cpu_s'].min():.2f}"
        row[f"{impl} peak MB"] = f"{gi['peak_mb'].max():.0f}"
        row[f"{impl} labels"] = hashes[0][:10] + ("*" if len(hashes) > 1 else "")
        row[f"{impl} ARI"] = f"{gi['ari'].iloc[0]:.4f}"
    row["before / after"] = f"{med['before'] / med['after']:.2f}" if {"before", "after"} <= set(med.index) else ""
    row["PCE / after"] = f"{med['pce'] / med['after']:.2f}" if {"pce", "after"} <= set(med.index) else ""
    rows.append(row)
table = pd.DataFrame(rows)
print(markdown(table))
if (HERE / "floor.jsonl").exists():
    fl = pd.DataFrame([json.loads(line) for line in open(HERE / "floor.jsonl")])
    print()
    print(markdown(fl))

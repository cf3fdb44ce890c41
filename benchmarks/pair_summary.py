"""Markdown table of a pairs.csv written by benchmarks/pair_bench.py: before / after per entry, CPU ratio.

    python benchmarks/pair_summary.py results/bench/<folder>/pairs.csv
"""
import csv
import json
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["entry"], {})[r["side"]] = r
print("| method | params | data set | n | CPU s before | CPU s after | before / after | peak MB before / after | "
      "labels (hash) | ARI |")
print("|---|---|---|---|---|---|---|---|---|---|")
for sides in by.values():
    b, a = sides.get("before"), sides.get("after")
    if not (b and a):
        continue
    same = "same" if b["labels_hash"] == a["labels_hash"] else f"{b['labels_hash']} -> {a['labels_hash']}"
    params = ", ".join(f"{k}={v}" for k, v in json.loads(a["params"] or "{}").items())
    print(f"| {a['method']} | {params} | {a['dataset'].removeprefix('eccms_')} | {b['n']} | {float(b['cpu_s']):.2f} | "
          f"{float(a['cpu_s']):.2f} | {float(b['cpu_s']) / float(a['cpu_s']):.2f}x | "
          f"{float(b['peak_mb']):.0f} / {float(a['peak_mb']):.0f} | {same} ({a['labels_hash']}) | "
          f"{float(a['ari']):.4f} |")

"""Markdown table of a pairs.csv written by benchmarks/pair_bench.py: before / after per data set, CPU ratio.

    python benchmarks/pair_summary.py results/bench/<folder>/pairs.csv
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["dataset"], {})[r["side"]] = r
print("| data set | n | CPU s before | CPU s after | before / after | peak MB before / after | labels (hash) | ARI |")
print("|---|---|---|---|---|---|---|---|")
for name, sides in by.items():
    b, a = sides.get("before"), sides.get("after")
    if not (b and a):
        continue
    same = "same" if b["labels_hash"] == a["labels_hash"] else f"{b['labels_hash']} -> {a['labels_hash']}"
    print(f"| {name.removeprefix('eccms_')} | {b['n']} | {float(b['cpu_s']):.2f} | {float(a['cpu_s']):.2f} | "
          f"{float(b['cpu_s']) / float(a['cpu_s']):.2f}x | {float(b['peak_mb']):.0f} / {float(a['peak_mb']):.0f} | "
          f"{same} ({a['labels_hash']}) | {float(a['ari']):.4f} |")

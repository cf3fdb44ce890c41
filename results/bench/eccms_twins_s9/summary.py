"""Markdown table of pairs.csv (benchmarks/pair_bench.py output): before / after per data set, CPU ratio."""
import csv
import sys
from pathlib import Path

rows = list(csv.DictReader(open(Path(__file__).with_name("pairs.csv"))))
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
sys.exit(0)

"""Summarise an audit run: python compare.py PREFIX CONFIG_NAME TUNE_METRIC [COMMITTED_RESULTS_DIR]

PREFIX: the OUT_PREFIX given to audit.py (PREFIX.calls.jsonl, PREFIX.fits.jsonl); the runner's own cells.csv
is read from PREFIX/CONFIG_NAME/cells.csv and compared with COMMITTED_RESULTS_DIR/CONFIG_NAME/cells.csv
(default /work/main/results). Prints markdown: misses per mode, per-fit label changes and CPU, per-theta means
and the oracle-tuned (best mean TUNE_METRIC) table entry with each solver."""
import collections
import json
import sys

import numpy as np
import pandas as pd

prefix, config, tune = sys.argv[1], sys.argv[2], sys.argv[3]
committed_root = sys.argv[4] if len(sys.argv) > 4 else "/work/main/results"
calls = [json.loads(x) for x in open(prefix + ".calls.jsonl")]
fits = [json.loads(x) for x in open(prefix + ".fits.jsonl")]
done = {(r["cell"], r["mode"]) for r in fits}
calls = [r for r in calls if (r["cell"], r["mode"]) in done]   # only finished fits (a run may be stopped)

# 1. the unpatched path reproduces the committed cells
try:
    mine = pd.read_csv(f"{prefix}/{config}/cells.csv")
except FileNotFoundError:  # run still going: the finished cells' records
    import glob
    mine = pd.DataFrame([json.load(open(f)) for f in sorted(glob.glob(f"{prefix}/{config}/cells/*.json"))])
ref = pd.read_csv(f"{committed_root}/{config}/cells.csv")
key = ["dataset", "method", "params", "rep"]
if len(mine):
    m = mine.merge(ref, on=key, suffixes=("", "_ref"))
    print(f"cells run: {len(mine)}; matched to committed: {len(m)}; labels_sha256 equal: "
          f"{int((m.labels_sha256 == m.labels_sha256_ref).sum())}")
else:
    print("no runner cells stored under PREFIX")

# 2. misses
# a miss with max |eigenvalue error| <= 0.01 is a near-tie inside a cluster at LOBPCG's accuracy ("soft")
print("\n| solver | fits | LOBPCG calls (audited) | calls with a miss, error > 0.01 | missed eigenpairs in them | "
      "calls with a soft miss (error <= 0.01) | fits with >= 1 miss | max abs eigenvalue error |")
print("|---|---|---|---|---|---|---|---|")
for mode in ("orig", "fix"):
    c = [r for r in calls if r["mode"] == mode]
    f = [r for r in fits if r["mode"] == mode]
    hard = [r for r in c if r["miss"] and r["max_abs_diff"] > 1e-2]
    soft = [r for r in c if r["miss"] and r["max_abs_diff"] <= 1e-2]
    print(f"| {mode} | {len(f)} | {len(c)} ({sum(r.get('audited', True) for r in c)}) | {len(hard)} | "
          f"{sum(r['n_missed'] for r in hard)} | {len(soft)} | {sum(r['misses'] > 0 for r in f)} | "
          f"{max([r['max_abs_diff'] for r in c] or [0]):.3g} |")
print("\nmissed calls (committed solver): call index within the fit, s, q, missed, max |error|, iterations")
for r in calls:
    if r["miss"]:
        print(f"- {r['mode']} {r['cell']} call {r['call']}: s {r['s']}, q {r['q']}, missed {r['n_missed']}, "
              f"max err {r['max_abs_diff']:.3g}, iterations {r['iters']}")

# 3. per fit: labels, CPU
by = collections.defaultdict(dict)
for r in fits:
    by[r["cell"]][r["mode"]] = r
print("\n| cell | labels | CPU s committed solver | CPU s with check | LOBPCG calls | dACC | dNMI | dARI |")
print("|---|---|---|---|---|---|---|---|")
rows = []
for cell, d in by.items():
    if "orig" not in d or "fix" not in d:
        continue
    o, x = d["orig"], d["fix"]
    same = o["labels_sha256"] == x["labels_sha256"]
    ds, meth, params, rep = cell.split("|")
    rows.append(dict(dataset=ds, method=meth, params=params, rep=int(rep), same=same, cpu_o=o["cpu_s"], cpu_x=x["cpu_s"],
                     **{f"{k}_o": v for k, v in o["scores"].items()}, **{f"{k}_x": v for k, v in x["scores"].items()}))
    dl = {k: x["scores"][k] - o["scores"][k] for k in o["scores"]}
    print(f"| {cell} | {'same' if same else 'CHANGED'} | {o['cpu_s']:.1f} | {x['cpu_s']:.1f} | "
          f"{o['lobpcg_calls']} / {x['lobpcg_calls']} | {dl['acc']:+.4f} | {dl['nmi']:+.4f} | {dl['ari']:+.4f} |")
df = pd.DataFrame(rows)
if len(df):
    print(f"\nfits compared: {len(df)}, labels changed: {int((~df.same).sum())}; CPU sum committed solver "
          f"{df.cpu_o.sum():.1f} s, with check {df.cpu_x.sum():.1f} s (ratio {df.cpu_x.sum() / df.cpu_o.sum():.3f})")
    # my recomputed scores of the committed solver equal the committed metrics?
    chk = df.merge(ref.assign(rep=ref.rep.astype(int)), on=["dataset", "method", "params", "rep"])
    for k in ("ari", "nmi", "acc"):
        if k in chk:
            print(f"  recomputed {k} vs committed: max |diff| {np.abs(chk[k + '_o'] - chk[k]).max():.2e}")
    for ds, g in df.groupby("dataset"):
        print(f"\n{ds}: per-theta means over repetitions (committed solver -> with check)")
        print("| theta | reps | ACC | NMI | ARI |")
        print("|---|---|---|---|---|")
        means = {}
        for params, h in g.groupby("params"):
            mo = {k: h[k + "_o"].mean() for k in ("acc", "nmi", "ari")}
            mx = {k: h[k + "_x"].mean() for k in ("acc", "nmi", "ari")}
            means[params] = (mo, mx, len(h))
            print(f"| {params} | {len(h)} | " + " | ".join(f"{mo[k]:.4f} -> {mx[k]:.4f}" for k in ("acc", "nmi", "ari"))
                  + " |")
        best_o = max(means, key=lambda p: means[p][0][tune])
        best_x = max(means, key=lambda p: means[p][1][tune])
        print(f"oracle ({tune}) theta: committed solver {best_o}, with check {best_x}; table entry "
              + ", ".join(f"{k.upper()} {means[best_o][0][k]:.4f} -> {means[best_x][1][k]:.4f}"
                          for k in ("acc", "nmi", "ari")))

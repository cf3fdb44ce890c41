"""What a revision bump of the SPCE methods would recompute: committed cells and their stored fit times.

    python revision_cost.py [RESULTS_DIR]      (default: results)

Every SPCE / SPCE-W / SPCE-fixW cell gets a new fingerprint; only cells with n > dense_limit (2000) can reach
LOBPCG, so only those can change labels. Times: the stored time_s of timing.csv (wall seconds at the load of
the original run)."""
import glob
import sys

import pandas as pd

root = sys.argv[1] if len(sys.argv) > 1 else "results"
rows = []
for f in sorted(glob.glob(f"{root}/*/cells.csv")):
    c = pd.read_csv(f)
    if "method_name" not in c:
        continue
    c = c[c.method_name.astype(str).str.startswith("spce")]
    if not len(c):
        continue
    t = pd.read_csv(f.replace("cells.csv", "timing.csv"))
    c = c.merge(t[["dataset", "method", "point", "rep", "time_s"]], on=["dataset", "method", "point", "rep"], how="left")
    big = c[c.n > 2000]
    rows.append(dict(experiment=f.split("/")[-2], spce_cells=len(c), time_h=c.time_s.sum() / 3600,
                     cells_n_gt_2000=len(big), time_n_gt_2000_h=big.time_s.sum() / 3600,
                     datasets_n_gt_2000=", ".join(f"{d} ({g.n.iloc[0]}, {len(g)})" for d, g in big.groupby("dataset"))))
df = pd.DataFrame(rows)
print("| " + " | ".join(df.columns) + " |")
print("|" + "---|" * len(df.columns))
for r in df.itertuples(index=False):
    print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r) + " |")
print(f"\ntotal: {df.spce_cells.sum()} cells, {df.time_h.sum():.1f} h stored wall time; n > 2000: "
      f"{df.cells_n_gt_2000.sum()} cells, {df.time_n_gt_2000_h.sum():.1f} h")

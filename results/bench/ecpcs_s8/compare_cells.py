"""Recomputed cells (a fresh results root) against results/<config>/cells.csv as committed on main.

    python compare_cells.py <fresh results root> <config> [<config> ...]

For each config: how many recomputed cells keep their labels hash, the changed ones, and the largest change
of a table entry (mean ARI / NMI over the repetitions of one data set x method x grid point) and of a single
repetition.
"""
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[3]
REF = "main"     # the committed results before this branch
KEY = ["dataset", "method", "point", "params", "rep"]


def compare(root, config):
    new = pd.read_csv(Path(root) / config / "cells.csv")
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{REF}:results/{config}/cells.csv"],
                          capture_output=True, text=True, check=True).stdout
    old = pd.read_csv(io.StringIO(text))
    new = new[new["rep"] >= 0]
    m = new.merge(old, on=KEY, suffixes=("_new", "_old"))
    same = m["labels_sha256_new"] == m["labels_sha256_old"]
    print(f"## {config}: {len(m)} committed cells recomputed, {same.sum()} same labels, {(~same).sum()} changed"
          + (f" ({len(new) - len(m)} recomputed cells not in the committed file)" if len(m) < len(new) else ""))
    for col in ("ari", "nmi"):
        m[f"d_{col}"] = m[f"{col}_new"] - m[f"{col}_old"]
    if (~same).any():
        ch = m[~same]
        print(ch[["dataset", "method", "point", "rep", "ari_old", "ari_new", "nmi_old", "nmi_new"]]
              .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    g = m.groupby(["dataset", "method", "point"])[["ari_new", "ari_old", "nmi_new", "nmi_old"]].mean()
    d_ari = (g["ari_new"] - g["ari_old"]).abs()
    d_nmi = (g["nmi_new"] - g["nmi_old"]).abs()
    print(f"max |d mean ARI| = {d_ari.max():.5f}, max |d mean NMI| = {d_nmi.max():.5f} over {len(g)} table "
          f"entries; max |d ARI| of one rep = {m['d_ari'].abs().max():.5f}, NMI {m['d_nmi'].abs().max():.5f}")
    if d_ari.max() > 0.005 or d_nmi.max() > 0.005:
        print("entries above 0.005:")
        print(g[(d_ari > 0.005) | (d_nmi > 0.005)].to_string(float_format=lambda v: f"{v:.4f}"))
    print()


if __name__ == "__main__":
    for cfg in sys.argv[2:]:
        compare(sys.argv[1], cfg)

"""Are the committed cells of the generated-pool configs computed on the pools the current code builds?

For every config with generated pools: rebuild each data set's pool from scratch (no cache), recompute one cheap
committed cell per data set (the pool-level KM row where there is one, else the first ok cell of a fast method)
and report whether its labels hash (or score, for the KM rows) matches the committed cells.csv.

    ENSCLUST_DATA=... OMP_NUM_THREADS=1 python results/checks/pool_staleness_s10/pool_stale.py \
        [--awec-first] [CONFIG ...]

``--awec-first`` tries AWEC-H first (the AWEC configs without a KM row).
"""

import sys
import time
from pathlib import Path

import pandas as pd

from ensclust.experiment.config import load_config
from ensclust.experiment.plan import plan_cells
from ensclust.experiment.runner import prepare_dataset, run_cell

CHEAP = ["km-avg", "km-best", "lwea", "eac", "cspa", "hbgf", "ptgp", "lwgp", "mcla", "ecpcs-hc", "pta"]
ROOT = Path(__file__).resolve().parents[3]  # the repository


def check(name: str) -> None:
    path = ROOT / "ensclust/configs/paper" / f"{name}.yaml"
    text = path.read_text()
    if "source: generate" not in text and "generator:" not in text:
        return
    cfg = load_config(path)
    csv = ROOT / "results" / name / "cells.csv"
    if not csv.exists():
        print(f"{name}: no cells.csv", flush=True)
        return
    df = pd.read_csv(csv)
    df = df[df.status == "ok"]
    planned = plan_cells(cfg)
    for ds in cfg.datasets:
        sub = df[df.dataset == ds.label]
        if sub.empty or ds.pool.get("source") == "file":
            continue
        pick = next((s.sort_values("rep").iloc[0] for m in CHEAP
                     if not (s := sub[sub.method_name == m]).empty), None)
        if pick is None:
            print(f"{name} {ds.label}: no cheap committed cell ({sorted(set(sub.method_name))[:4]})", flush=True)
            continue
        cell = next(c for c in planned if c["dataset"] == ds.label and c["method"] == pick.method
                    and c["rep"] == pick.rep and c["point"] == pick.point)
        start = time.time()
        try:
            ctx = prepare_dataset(cfg, ds.label, cache_dir=None)
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"{name} {ds.label}: prepare failed {exc}", flush=True)
            continue
        ctx.memory, ctx.blas_threads = "off", 1
        record = run_cell(ctx, cell)
        metric = next(c for c in df.columns if c in ("acc", "nmi", "ari", "fscore"))
        ours, theirs = record["metrics"].get(metric), pick[metric]
        if isinstance(pick.labels_sha256, str):
            same = record["labels_sha256"] == pick.labels_sha256
        else:  # a pool statistic has no labels
            same = abs(ours - theirs) < 1e-12
        print(f"{name} {ds.label} {pick.method} r{pick.rep}: {'SAME' if same else 'STALE'} "
              f"{metric} now {ours:.6f} committed {theirs:.6f} ({time.time() - start:.0f}s)", flush=True)


if __name__ == "__main__":
    if "--awec-first" in sys.argv:
        CHEAP.insert(0, "awec-h")
    names = [a for a in sys.argv[1:] if a != "--awec-first"]
    for config_name in names or sorted(p.stem for p in (ROOT / "ensclust/configs/paper").glob("*.yaml")):
        check(config_name)

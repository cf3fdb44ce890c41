"""Writes the members of every spce entry of benchmarks/spce.yaml to /tmp/spce6/<entry>.npz (run from the repository root)."""
import numpy as np, json, sys
from ensclust.bench import load_entries
from ensclust.data import load_dataset
from ensclust.pools import get_pool
ents = [e for e in load_entries("benchmarks") if e["method"] == "spce"]
meta = []
for i, e in enumerate(ents):
    ds = None
    if e["dataset"] is not None:
        ds = load_dataset(e["dataset"], data_dir="/work/shared/datasets", preprocess=e["preprocess"])
    spec = {k: v for k, v in e["pool"].items() if k != "first"}
    pool = get_pool(ds, spec, seed=0, data_dir="/work/shared/datasets", cache_dir="results/cache/pools")
    M = np.asarray(pool.members)[:, :e["ensemble_size"]]
    y = pool.y if pool.y is not None else ds.y
    c = e["n_clusters"] or (ds.n_clusters if ds is not None else int(np.unique(y).size))
    name = (e["dataset"] or e["pool"]["file"].split("/")[-1][:-4]) + f"_t{e['params']['theta']}"
    np.savez(f"/tmp/spce6/{name}.npz", members=M, y=y, c=c, theta=e["params"]["theta"])
    meta.append(name); print(name, M.shape, c, flush=True)
json.dump(meta, open("/tmp/spce6/entries.json", "w"))

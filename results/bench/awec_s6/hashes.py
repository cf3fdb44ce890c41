"""Label hashes + CPU of the awec benchmark entries (first three, or those given) with the ensclust on PYTHONPATH."""
import hashlib, sys, time, json
import numpy as np
import ensclust
from ensclust.bench import load_entries
from ensclust.data import load_dataset
from ensclust.pools import get_pool
from ensclust.methods import get_method
bench = sys.argv[1]
entries = [e for e in load_entries(bench) if e["method"].startswith("awec")]
for e in entries:
    ds = load_dataset(e["dataset"], data_dir=None, preprocess=e["preprocess"]) if e["dataset"] else None
    pool = get_pool(ds, {k: v for k, v in e["pool"].items() if k != "first"}, seed=0, data_dir=None, cache_dir="results/cache/pools")
    members = np.asarray(pool.members)[:, :e["ensemble_size"]]
    y = pool.y if pool.y is not None else ds.y
    c = e["n_clusters"] or (ds.n_clusters if ds is not None else int(np.unique(y).size))
    m = get_method(e["method"], **e["params"])
    t = time.process_time()
    lab = m.fit_predict(members, c, random_state=0)
    cpu = time.process_time() - t
    h = hashlib.sha256(np.ascontiguousarray(lab, dtype=np.int32).tobytes()).hexdigest()[:16]
    print(json.dumps({"method": e["method"], "params": e["params"], "n": members.shape[0], "hash": h, "cpu_s": round(cpu, 2), "src": ensclust.__file__}), flush=True)

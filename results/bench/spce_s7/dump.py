"""members of the benchmark entries -> /tmp/spce7/<name>.npz"""
import sys, numpy as np
from ensclust.data import load_dataset
from ensclust.pools import get_pool
D = "/work/shared/datasets"
entries = {
  "texture": (None, None, {"source": "file", "file": "pools/eccms_texture.mat"}, 20),
  "ls": (None, None, {"source": "file", "file": "pools/eccms_ls.mat"}, 20),
  "tdt2": ("tdt2", None, {"generator": "kmeans", "k": "c", "size": 60}, 20),
}
for name in sys.argv[1:]:
    dsname, pre, spec, M = entries[name]
    ds = load_dataset(dsname, data_dir=D, preprocess=pre) if dsname else None
    pool = get_pool(ds, spec, seed=0, data_dir=D, cache_dir="/work/wt-spce/results/cache/pools")
    mem = np.asarray(pool.members)
    y = pool.y if pool.y is not None else ds.y
    c = ds.n_clusters if ds is not None else int(np.unique(y).size)
    np.savez(f"/tmp/spce7/{name}.npz", members=mem, y=y, c=c)
    print(name, mem.shape, c, flush=True)

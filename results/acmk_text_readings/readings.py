"""ACMK KM-avg on the text sets Tr11 / Tr12 / Tr31 under several readings of the unstated preprocessing (issue #18).

Stand-alone (numpy / scipy / scikit-learn + ensclust.metrics only). For each reading (features x K-means variant) it
builds the base K-means members as the ACMK protocol does (spec 4.2 / 4.4): 10 repetitions, each with v = 10 fresh
K-means runs on the full X with k = c clusters and different random initialisations; KM-avg of a repetition is the
mean metric over its 10 members; the row is mean +- sample std (ddof = 1) over the 10 repetitions.
Member seed: 1000 * repetition + member (the same seeds for every reading, so readings are compared on common
random numbers). ACC and NMI are ensclust.metrics.acc / ensclust.metrics.nmi (natural log; the normalisation does
not depend on the log base). NMI is given under max (spec A12 default), arithmetic and sqrt (geometric).

Usage:  python readings.py [--datasets tr11,tr12,tr31] [--readings NAME,...] [--out readings.csv]
Environment: ENSCLUST_DATA (directory with tr11.mat, tr12.mat, tr31.mat, tr11_tfidf.mat, tr31_tfidf.mat).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import numpy as np
import scipy.io as sio
import scipy.sparse as sp
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.preprocessing import normalize

from ensclust.metrics import acc, nmi

DATA = os.environ.get("ENSCLUST_DATA", "/work/shared/datasets")
REPS, V = 10, 10
NMI_AVERAGES = ("max", "arithmetic", "geometric")

# Paper KM-avg (Table 2 ACC, Table 3 NMI; mean, std over 10 repetitions).
PAPER = {
    "tr11": {"acc": (0.5176, 0.0225), "nmi": (0.4726, 0.0257)},
    "tr12": {"acc": (0.4772, 0.0210), "nmi": (0.3931, 0.0218)},
    "tr31": {"acc": (0.3982, 0.0054), "nmi": (0.0610, 0.0035)},
}
LABEL = {"tr11": "Tr11", "tr12": "Tr12", "tr31": "Tr31"}


# ---------------------------------------------------------------- data and features

def load(name: str):
    d = sio.loadmat(os.path.join(DATA, name + ".mat"))
    X = sp.csr_matrix(d["X"], dtype=np.float64)
    y = np.asarray(d["Y" if "Y" in d else "y"]).ravel().astype(int)
    return X, y


def _idf(X, kind: str) -> np.ndarray:
    n = X.shape[0]
    df = np.asarray((X > 0).sum(axis=0)).ravel().astype(float)
    if kind == "log":            # log(N / df)
        return np.log(n / np.maximum(df, 1.0))
    if kind == "smooth":         # scikit-learn default: log((1 + N) / (1 + df)) + 1
        return np.log((1.0 + n) / (1.0 + df)) + 1.0
    raise ValueError(kind)


def _scale_cols(X, s: np.ndarray):
    return sp.csr_matrix(X @ sp.diags(s))


def _sublinear(X):
    X = X.copy().tocsr()
    X.data = 1.0 + np.log(X.data)
    return X


def feat_raw(X):
    return X


def feat_l2(X):
    return normalize(X, norm="l2")


def feat_l1(X):
    return normalize(X, norm="l1")


def feat_tfidf_smooth(X):
    return normalize(_scale_cols(X, _idf(X, "smooth")), norm="l2")


def feat_tfidf_log(X):
    return normalize(_scale_cols(X, _idf(X, "log")), norm="l2")


def feat_tfidf_sublin_log(X):
    return normalize(_scale_cols(_sublinear(X), _idf(X, "log")), norm="l2")


def feat_tfidf_log_raw(X):
    """tf x log(N/df), rows not normalised."""
    return _scale_cols(X, _idf(X, "log"))


def feat_minmax(X):
    """(x - min) / (max - min) per column. The shift by min is a translation, which leaves Euclidean K-means
    unchanged, so only the scaling is applied (keeps X sparse)."""
    Xd = X.tocsc()
    mx = Xd.max(axis=0).toarray().ravel()
    mn = Xd.min(axis=0).toarray().ravel()
    rng = mx - mn
    return _scale_cols(X, np.where(rng > 0, 1.0 / np.where(rng > 0, rng, 1.0), 0.0))


def feat_zscore(X):
    """(x - mean) / std per column (population std); centring is a translation (no effect on Euclidean
    K-means), so only the scaling is applied."""
    m = np.asarray(X.mean(axis=0)).ravel()
    m2 = np.asarray(X.multiply(X).mean(axis=0)).ravel()
    sd = np.sqrt(np.maximum(m2 - m * m, 0.0))
    return _scale_cols(X, np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0))


def feat_minmax_l2(X):
    return normalize(feat_minmax(X), norm="l2")


def feat_zscore_l2(X):
    return normalize(feat_zscore(X), norm="l2")


FEATURES = {
    "raw": ("raw term counts", feat_raw),
    "l2": ("counts, unit rows (current acmk_text `preprocess: l2`)", feat_l2),
    "l1": ("counts / document length (l1 rows)", feat_l1),
    "tfidf": ("tf x (log((1+N)/(1+df))+1), unit rows (sklearn default = `preprocess: tfidf`)", feat_tfidf_smooth),
    "tfidf_log": ("tf x log(N/df), unit rows", feat_tfidf_log),
    "tfidf_sublin": ("(1+log tf) x log(N/df), unit rows", feat_tfidf_sublin_log),
    "tfidf_log_raw": ("tf x log(N/df), rows not normalised", feat_tfidf_log_raw),
    "tfidf_mat": ("the *_tfidf.mat file (LMKCF)", None),
    "minmax": ("min-max per column", feat_minmax),
    "zscore": ("z-score per column", feat_zscore),
    "minmax_l2": ("min-max per column, then unit rows", feat_minmax_l2),
    "zscore_l2": ("z-score per column, then unit rows", feat_zscore_l2),
}


def features(name: str, fkey: str):
    if fkey == "tfidf_mat":
        path = os.path.join(DATA, name + "_tfidf.mat")
        if not os.path.exists(path):
            return None
        return load(name + "_tfidf")
    X, y = load(name)
    return FEATURES[fkey][1](X), y


# ---------------------------------------------------------------- K-means variants (one run = one member)

def km_sklearn_pp1(X, k, seed):
    """scikit-learn Lloyd, greedy k-means++ (2 + log k candidates), n_init = 1, max_iter = 100 (= ensclust's
    `generator: kmeans` pool)."""
    return KMeans(n_clusters=k, init="k-means++", n_init=1, max_iter=100, algorithm="lloyd",
                  random_state=seed).fit(X).labels_


def km_sklearn_random(X, k, seed):
    """scikit-learn Lloyd, k random samples as centres, n_init = 1, max_iter = 100 (= ensclust's pool with
    `init: random`; empty clusters are relocated, not dropped)."""
    return KMeans(n_clusters=k, init="random", n_init=1, max_iter=100, algorithm="lloyd",
                  random_state=seed).fit(X).labels_


def km_sklearn_default(X, k, seed):
    """scikit-learn KMeans defaults before 1.4: greedy k-means++, n_init = 10 (best inertia), max_iter = 300."""
    return KMeans(n_clusters=k, n_init=10, random_state=seed).fit(X).labels_


def km_matlab(X, k, seed):
    """MATLAB kmeans defaults: plain k-means++ (one candidate per centre), 1 replicate, batch Lloyd,
    MaxIter 100 (no online phase, as MATLAB's default)."""
    C, _ = kmeans_plusplus(X, k, random_state=seed, n_local_trials=1)
    return KMeans(n_clusters=k, init=C, n_init=1, max_iter=100, algorithm="lloyd").fit(X).labels_


def km_litekmeans(X, k, seed):
    """litekmeans defaults (MATLAB): k random samples as centres, batch Lloyd, MaxIter 100, 1 replicate;
    clusters that become empty are dropped (the result can have < k clusters)."""
    rs = np.random.RandomState(seed)
    n = X.shape[0]
    Xc = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    sq = np.asarray(Xc.multiply(Xc).sum(axis=1)).ravel() if sp.issparse(Xc) else (Xc ** 2).sum(1)
    C = Xc[rs.choice(n, k, replace=False)]
    C = C.toarray() if sp.issparse(C) else C
    last = None
    for _ in range(100):
        d = -2.0 * np.asarray(Xc @ C.T) + (C ** 2).sum(1)[None, :] + sq[:, None]
        lab = d.argmin(1)
        if last is not None and np.array_equal(lab, last):
            break
        last = lab
        u, lab = np.unique(lab, return_inverse=True)
        E = sp.csr_matrix((np.ones(n), (np.arange(n), lab)), shape=(n, len(u)))
        cnt = np.asarray(E.sum(0)).ravel()
        C = np.asarray((sp.diags(1.0 / cnt) @ E.T @ Xc).todense() if sp.issparse(Xc) else (E.T @ Xc) / cnt[:, None])
    return last


def km_spherical(X, k, seed):
    """Spherical (cosine) K-means as MATLAB kmeans(..., 'Distance', 'cosine'): rows to unit length, plain
    k-means++ seeding on 1 - cos, assignment by max cosine, centroid = normalised mean, MaxIter 100."""
    rs = np.random.RandomState(seed)
    Xn = sp.csr_matrix(normalize(X, norm="l2"))
    n = Xn.shape[0]
    idx = [rs.randint(n)]
    dmin = 1.0 - np.asarray(Xn @ Xn[idx[0]].T.toarray()).ravel()
    for _ in range(1, k):
        p = np.maximum(dmin, 0.0)
        i = rs.choice(n, p=p / p.sum()) if p.sum() > 0 else rs.randint(n)
        idx.append(i)
        dmin = np.minimum(dmin, 1.0 - np.asarray(Xn @ Xn[i].T.toarray()).ravel())
    C = Xn[idx].toarray()
    last = None
    for _ in range(100):
        lab = np.asarray(Xn @ C.T).argmax(1)
        if last is not None and np.array_equal(lab, last):
            break
        last = lab
        E = sp.csr_matrix((np.ones(n), (np.arange(n), lab)), shape=(n, k))
        S = np.asarray((E.T @ Xn).todense())
        nrm = np.linalg.norm(S, axis=1)
        keep = nrm > 0
        C[keep] = S[keep] / nrm[keep, None]        # an empty cluster keeps its old centre
    return last


KMEANS = {
    "skl_pp1": ("sklearn Lloyd, greedy k-means++, 1 run, max_iter 100 (ensclust pool)", km_sklearn_pp1),
    "skl_random": ("sklearn Lloyd, random-sample init, 1 run, max_iter 100 (ensclust pool `init: random`)",
                   km_sklearn_random),
    "skl_n10": ("sklearn KMeans defaults < 1.4 (greedy k-means++, best of n_init=10, max_iter 300)", km_sklearn_default),
    "matlab": ("MATLAB-like kmeans (plain k-means++, 1 replicate, max_iter 100)", km_matlab),
    "lite": ("litekmeans-like (random samples, 1 replicate, empty clusters dropped)", km_litekmeans),
    "cosine": ("spherical (cosine) K-means, k-means++ on 1 - cos, 1 run", km_spherical),
}

# Readings run by default: (feature key, K-means key).
DEFAULT_READINGS = (
    [(f, "skl_pp1") for f in ("raw", "l2", "l1", "tfidf", "tfidf_log", "tfidf_sublin", "tfidf_mat", "tfidf_log_raw",
                              "minmax", "zscore", "minmax_l2", "zscore_l2")]
    + [(f, "matlab") for f in ("raw", "l2", "tfidf", "tfidf_log", "tfidf_mat", "minmax", "zscore", "tfidf_sublin")]
    + [(f, "lite") for f in ("raw", "l2", "tfidf", "tfidf_log", "tfidf_mat", "minmax", "zscore", "tfidf_sublin")]
    + [(f, "skl_n10") for f in ("raw", "l2", "tfidf", "tfidf_mat", "tfidf_sublin")]
    + [(f, "skl_random") for f in ("raw", "l2", "tfidf", "tfidf_sublin", "tfidf_mat", "l1")]
    + [("l1", "matlab"), ("l1", "lite")]
    + [(f, "cosine") for f in ("l2", "tfidf", "tfidf_log", "tfidf_sublin", "minmax", "zscore")]
)


# ---------------------------------------------------------------- protocol

def km_avg(name: str, fkey: str, kkey: str):
    got = features(name, fkey)
    if got is None:
        return None
    X, y = got
    c = len(np.unique(y))
    fn = KMEANS[kkey][1]
    per_rep = {m: [] for m in ["acc"] + [f"nmi_{a}" for a in NMI_AVERAGES]}
    nclust = []
    t0 = time.time()
    for r in range(REPS):
        vals = {m: [] for m in per_rep}
        for j in range(V):
            lab = np.asarray(fn(X, c, 1000 * r + j)).ravel()
            nclust.append(len(np.unique(lab)))
            vals["acc"].append(acc(y, lab))
            for a in NMI_AVERAGES:
                vals[f"nmi_{a}"].append(nmi(y, lab, average=a))
        for m in per_rep:
            per_rep[m].append(float(np.mean(vals[m])))
    out = {"dataset": name, "features": fkey, "kmeans": kkey, "seconds": round(time.time() - t0, 1),
           "mean_clusters": round(float(np.mean(nclust)), 2)}
    for m, xs in per_rep.items():
        out[m] = float(np.mean(xs))
        out[m + "_std"] = float(np.std(xs, ddof=1))
    p = PAPER[name]
    out["match_max"] = abs(out["acc"] - p["acc"][0]) <= p["acc"][1] and abs(out["nmi_max"] - p["nmi"][0]) <= p["nmi"][1]
    out["match_any_nmi"] = abs(out["acc"] - p["acc"][0]) <= p["acc"][1] and any(
        abs(out[f"nmi_{a}"] - p["nmi"][0]) <= p["nmi"][1] for a in NMI_AVERAGES)
    return out


FIELDS = ["dataset", "features", "kmeans", "acc", "acc_std", "nmi_max", "nmi_max_std", "nmi_arithmetic",
          "nmi_arithmetic_std", "nmi_geometric", "nmi_geometric_std", "match_max", "match_any_nmi", "mean_clusters",
          "seconds"]


def check_tfidf_files(names=("tr11", "tr31")):
    """The *_tfidf.mat files against (1 + log tf) x log(N/df), unit rows, computed from the count files."""
    for name in names:
        X, y = load(name)
        T, yt = load(name + "_tfidf")
        diff = abs(feat_tfidf_sublin_log(X) - T).max()
        same = len(set(zip(y.tolist(), yt.tolist()))) == len(np.unique(y)) == len(np.unique(yt))
        print(f"{name}: max |tfidf_sublin(counts) - {name}_tfidf.mat| = {diff:.2e}; same partition of the "
              f"documents (labels up to renaming): {same}", flush=True)


def markdown(path: str) -> str:
    """The readings table of README.md from readings.csv: one row per reading, per data set ACC and NMI (max;
    arithmetic in brackets) as mean +- std over the 10 repetitions; the last column names the data sets where
    ACC and max-NMI are both within the paper's std of the paper's mean ("arith"/"sqrt": only with that NMI)."""
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    sets = [s for s in ("tr11", "tr12", "tr31") if any(r["dataset"] == s for r in rows)]
    keys = list(dict.fromkeys((r["features"], r["kmeans"]) for r in rows))
    kord, ford = ["skl_pp1", "matlab", "lite", "skl_random", "cosine", "skl_n10"], list(FEATURES)
    keys.sort(key=lambda fk: (kord.index(fk[1]), ford.index(fk[0])))
    by = {(r["dataset"], r["features"], r["kmeans"]): r for r in rows}
    lines = ["| # | features | K-means | " + " | ".join(f"{LABEL[s]} ACC | {LABEL[s]} NMI max (arith)" for s in sets)
             + " | within paper std |", "|" + "---|" * (4 + 2 * len(sets))]
    lines.append("| | **paper** | | " + " | ".join(
        f"{PAPER[s]['acc'][0]:.4f} ± {PAPER[s]['acc'][1]:.4f} | {PAPER[s]['nmi'][0]:.4f} ± {PAPER[s]['nmi'][1]:.4f}"
        for s in sets) + " | |")
    for i, (f, k) in enumerate(keys, 1):
        cells, match = [], []
        for s in sets:
            r = by.get((s, f, k))
            if r is None:
                cells += ["", ""]
                continue
            p = PAPER[s]
            if abs(float(r["acc"]) - p["acc"][0]) <= p["acc"][1]:
                ok = [a for a, col in (("max", "nmi_max"), ("arith", "nmi_arithmetic"), ("sqrt", "nmi_geometric"))
                      if abs(float(r[col]) - p["nmi"][0]) <= p["nmi"][1]]
                if ok:
                    match.append(f"**{LABEL[s]}**" if "max" in ok else f"{LABEL[s]} ({'/'.join(ok)})")
            cells += [f"{float(r['acc']):.4f} ± {float(r['acc_std']):.4f}",
                      f"{float(r['nmi_max']):.4f} ± {float(r['nmi_max_std']):.4f} ({float(r['nmi_arithmetic']):.4f})"]
        lines.append(f"| {i} | {FEATURES[f][0]} | {k} | " + " | ".join(cells) + f" | {', '.join(match)} |")
    return "\n".join(lines)


def fig3_scale(names=("tr31", "tr11", "tr12"), runs=3):
    """Scale of the K-means term of Eq. 7 at the start (spec A14 Fig. 3 hint: Tr31 "Obj" ~1e7): ||X||_F^2 and the
    summed SSE of v = 10 single K-means bases (mean SSE of `runs` skl_pp1 runs x 10) per feature reading."""
    for name in names:
        X, y = load(name)
        c = len(np.unique(y))
        for f in ("raw", "l2", "tfidf_sublin"):
            Z = FEATURES[f][1](X)
            sse = np.mean([KMeans(n_clusters=c, n_init=1, max_iter=100, random_state=s).fit(Z).inertia_
                           for s in range(runs)])
            print(f"{name} {f:13s} ||X||_F^2 = {Z.multiply(Z).sum():.3g}   10 x SSE of one base = {10 * sse:.3g}",
                  flush=True)


def tr31_members(runs=3):
    """Cluster sizes of raw-count Tr31 members under k-means++ and random-sample seeding, and where the k-means++
    seeds fall in the document-length distribution."""
    X, y = load("tr31")
    c = len(np.unique(y))
    length = np.asarray(X.sum(axis=1)).ravel()
    for kkey in ("skl_pp1", "skl_random"):
        for s in range(runs):
            sizes = np.sort(np.bincount(KMEANS[kkey][1](X, c, s)))[::-1]
            print(f"tr31 raw {kkey:10s} seed {s}: cluster sizes {sizes.tolist()}", flush=True)
    for s in range(runs):
        _, idx = kmeans_plusplus(X, c, random_state=s)
        pct = [round(float((length < length[i]).mean()), 3) for i in idx]
        print(f"tr31 raw greedy k-means++ seed {s}: length percentiles of the {c} seed documents {pct}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="tr11,tr12,tr31")
    ap.add_argument("--readings", default="", help="comma list of FEATURE:KMEANS (default: the built-in list)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "readings.csv"))
    ap.add_argument("--check-tfidf-files", action="store_true", help="compare the *_tfidf.mat files and exit")
    ap.add_argument("--fig3-scale", action="store_true", help="print the K-means term scale and exit")
    ap.add_argument("--tr31-members", action="store_true", help="print raw Tr31 member cluster sizes and exit")
    ap.add_argument("--markdown", action="store_true", help="print the README table from --out and exit")
    a = ap.parse_args(argv)
    if a.fig3_scale:
        fig3_scale()
        return 0
    if a.tr31_members:
        tr31_members()
        return 0
    if a.markdown:
        print(markdown(a.out))
        return 0
    if a.check_tfidf_files:
        check_tfidf_files()
        return 0
    readings = ([tuple(s.split(":")) for s in a.readings.split(",")] if a.readings else DEFAULT_READINGS)
    rows = []
    done = set()
    if os.path.exists(a.out):                      # resume: keep rows already computed
        with open(a.out) as fh:
            for r in csv.DictReader(fh):
                rows.append(r)
                done.add((r["dataset"], r["features"], r["kmeans"]))
    # cheap readings first on every data set, the 10-restart ones (10x the cost) last
    jobs = [(name, f, k) for slow in (False, True) for name in a.datasets.split(",") for f, k in readings
            if (k == "skl_n10") == slow]
    for name, fkey, kkey in jobs:
        if (name, fkey, kkey) in done:
            continue
        res = km_avg(name, fkey, kkey)
        if res is None:
            continue
        rows.append({k: (f"{v:.4f}" if isinstance(v, float) and k not in ("seconds", "mean_clusters") else v)
                     for k, v in res.items()})
        print(f"{name:5s} {fkey:14s} {kkey:8s} ACC {res['acc']:.4f}+-{res['acc_std']:.4f} "
              f"NMI max {res['nmi_max']:.4f}+-{res['nmi_max_std']:.4f} arith {res['nmi_arithmetic']:.4f} "
              f"sqrt {res['nmi_geometric']:.4f} k~{res['mean_clusters']} ({res['seconds']} s)", flush=True)
        with open(a.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

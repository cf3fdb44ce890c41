"""Chance level of a balanced partition on Tr31: ACC and NMI (max-normalised, as ACMK's tables) of random
7-way partitions with equal block sizes, the kind HGPA's balance constraint returns, against Tr31's labels.

    ENSCLUST_DATA=../shared/datasets python results/acmk_sensitivity_hgpa/chance_level.py \
        > results/acmk_sensitivity_hgpa/chance_level.json
"""
import json

import numpy as np

from ensclust import metrics
from ensclust.data import load_dataset

y = load_dataset("tr31").y
n, k, draws = y.size, np.unique(y).size, 1000
rng = np.random.default_rng(0)
blocks = np.repeat(np.arange(k), -(-n // k))[:n]
acc, nmi = [], []
for _ in range(draws):
    labels = rng.permutation(blocks)
    acc.append(metrics.acc(y, labels))
    nmi.append(metrics.nmi(y, labels, average="max"))
summary = {"n": int(n), "k": int(k), "draws": draws,
           "class_sizes": np.unique(y, return_counts=True)[1].tolist()}
for name, values in (("acc", np.array(acc)), ("nmi", np.array(nmi))):
    summary[name] = {"mean": round(float(values.mean()), 4), "std": round(float(values.std(ddof=1)), 4),
                     "p2.5": round(float(np.percentile(values, 2.5)), 4),
                     "p97.5": round(float(np.percentile(values, 97.5)), 4)}
print(json.dumps(summary, indent=1))

"""RCEC Fig. 3: NMI of each method as normal / anomalous / extremely anomalous partitions are added.

specs/rcec.md 4.4: 10 normal partitions of a 100-point, 10-cluster truth plus n' partitions of one kind,
n' in 0..10, 20 repetitions, RCEC with lambda = 0.1, gamma = 0.01 and beta from the paper's grid. "Ave" is the
average NMI of the input partitions. Results are written atomically as CSV / Markdown and a PNG plot.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ensclust.experiment.store import atomic_write_text
from ensclust.methods import get_method
from ensclust.metrics import member_scores, nmi
from ensclust.rng import derive_seed
from ensclust.synthetic import rcec_synthetic_ensemble

DEFAULT_METHODS = {
    "HBGF": ("hbgf", {}),
    "ECMC": ("ecmc", {}),
    "NMFC": ("nmfc", {"n_runs": 5}),
    "WCC": ("wcc", {"n_runs": 5}),
    "INA": ("ina", {"n_runs": 5}),
    "RCEC": ("rcec", {"beta": 4.0}),
}


def run(out_dir, *, n_extra=range(0, 11), kinds=("normal", "anomalous", "extreme"), repetitions=20, seed=0,
        nmi_average="max", methods=None, progress=None) -> pd.DataFrame:
    """Run the experiment; returns the per-repetition records (also written to ``out_dir``)."""
    methods = DEFAULT_METHODS if methods is None else methods
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for kind in kinds:
        for extra in n_extra:
            for rep in range(repetitions):
                members, y = rcec_synthetic_ensemble(extra, kind, random_state=derive_seed(seed, kind, extra, rep))
                rows.append(dict(kind=kind, n_extra=extra, rep=rep, method="Ave",
                                 nmi=float(member_scores(members, y, ["nmi"], nmi_average)["nmi"].mean())))
                for label, (name, params) in methods.items():
                    labels = get_method(name, **params).fit_predict(
                        members, 10, random_state=derive_seed(seed, kind, extra, rep, label))
                    rows.append(dict(kind=kind, n_extra=extra, rep=rep, method=label,
                                     nmi=nmi(y, labels, nmi_average)))
                if progress is not None:
                    progress.update(1)
    records = pd.DataFrame(rows)
    _write(records, out_dir, dict(repetitions=repetitions, seed=seed, nmi_average=nmi_average,
                                  methods={k: [v[0], v[1]] for k, v in methods.items()}))
    return records


def _markdown(table: pd.DataFrame) -> str:
    flat = table.reset_index()
    head = "| " + " | ".join(map(str, flat.columns)) + " |"
    rule = "|" + "---|" * len(flat.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in flat.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _write(records: pd.DataFrame, out_dir: Path, settings: dict) -> None:
    atomic_write_text(out_dir / "cells.csv", records.to_csv(index=False))
    table = records.groupby(["kind", "n_extra", "method"])["nmi"].mean().unstack("method").round(4)
    atomic_write_text(out_dir / "table.csv", table.to_csv())
    atomic_write_text(out_dir / "table.md", "# RCEC Fig. 3 (synthetic), mean NMI over repetitions\n\n"
                       f"settings: `{json.dumps(settings)}`\n\n" + _markdown(table) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(dict.fromkeys(records["kind"]))
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.5 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        sub = table.loc[kind]
        for method in sub.columns:
            ax.plot(sub.index, sub[method], marker="o", ms=3, label=method)
        ax.set_title(f"+ {kind} partitions")
        ax.set_xlabel("number of added partitions n'")
        ax.set_ylabel("NMI")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    tmp = out_dir / "fig3.png.tmp"
    fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    tmp.replace(out_dir / "fig3.png")

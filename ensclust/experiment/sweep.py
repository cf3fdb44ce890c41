"""Parameter sweeps: one method, one parameter over a grid, on one or more datasets.

A sweep is an ordinary experiment (same runner, same store, ``results/sweep_<method>_<param>/``) whose
method uses tuning ``each`` (every grid point is its own row). Defaults, chosen to be cheap and to give
independent repetitions (as ACMK's protocol): K-means pool with k = c, ensemble mode ``fresh`` (every
repetition has its own members), ``--ensemble-size 20`` members x ``--repetitions 10``, so the pool holds
20 x 10 members; metrics ACC, NMI, ARI; seed 0. ``--config`` reuses a config's datasets, pool, ensemble,
metrics and seed instead.

Outputs: ``sweep.csv`` (dataset, parameter value, metric, mean, std, n, n_failed) and ``sweep.png`` (one
panel per metric, one line per dataset, shaded +- std), plus the usual cells.csv and tables.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.config import ExperimentConfig, load_document, validate_config
from ensclust.experiment.grid import parse_grid
from ensclust.experiment.store import ResultStore, atomic_write_text, slug
from ensclust.experiment.yamlio import Located


def parse_assignment(text: str, option: str) -> tuple[str, object]:
    if "=" not in text:
        raise UserError(f"{option} '{text}' must look like NAME=VALUE")
    name, value = text.split("=", 1)
    name, value = name.strip(), value.strip()
    if not name:
        raise UserError(f"{option} '{text}' must look like NAME=VALUE")
    return name, _scalar(value)


def _scalar(value: str):
    from ensclust.experiment.yamlio import load_yaml

    if ":" in value and not value.startswith(("{", "[")):
        return value  # a grid spec such as 0:0.9:0.1 stays a string
    try:
        return load_yaml(value, "value").data
    except UserError:
        return value


def build_sweep_config(method: str, param: str, grid, *, datasets=(), fixed=None, repetitions=10,
                       ensemble_size=20, pool_size=None, metrics=None, seed=0, base_config=None,
                       name=None) -> ExperimentConfig:
    """The ad-hoc experiment of a sweep (see the module docstring for the defaults)."""
    method_entry = {"name": method, "label": method, "grid": {param: grid}, "tuning": "each"}
    if fixed:
        method_entry["params"] = dict(fixed)
    if base_config is not None:
        doc = load_document(base_config)
        data = dict(doc.data) if isinstance(doc.data, dict) else {}
        for key in ("methods", "compare_to", "name", "outputs", "description", "tune_metric", "compare_param"):
            data.pop(key, None)
        if datasets:
            data["datasets"] = [{"name": d, "label": d} for d in datasets]
        if metrics:
            data["metrics"] = list(metrics)
        if repetitions is not None:
            data["ensemble"] = {**(data.get("ensemble") or {}), "repetitions": repetitions}
        if ensemble_size is not None:
            data["ensemble"] = {**(data.get("ensemble") or {}), "size": ensemble_size}
        if pool_size is not None:
            data["pool"] = {**(data.get("pool") or {}), "size": pool_size}
        file = str(base_config)
    else:
        reps = repetitions or 10
        size = ensemble_size or 20
        data = {
            "seed": seed,
            "datasets": [{"name": d, "label": d} for d in (datasets or ["iris"])],
            "pool": {"source": "generate", "generator": "kmeans", "k": "c", "size": pool_size or size * reps},
            "ensemble": {"mode": "fresh", "size": size, "repetitions": reps, "seed": 1},
            "metrics": list(metrics or ["acc", "nmi", "ari"]),
        }
        file = "ensclust sweep"
    data["name"] = name or f"sweep_{slug(method)}_{slug(param)}"
    data["methods"] = [method_entry]
    data["outputs"] = ["csv", "markdown"]
    data["tune_metric"] = data["metrics"][0] if data.get("metrics") else "ari"
    return validate_config(Located(data=data, file=file, lines={}))


def sweep_frame(config: ExperimentConfig, cells: pd.DataFrame) -> pd.DataFrame:
    method = config.methods[0]
    (param,) = method.grid
    rows = []
    ok = cells[cells["status"] == "ok"]
    for ds in config.datasets:
        for i, point in enumerate(method.points):
            sub = ok[(ok["dataset"] == ds.label) & (ok["point"] == i)]
            total = cells[(cells["dataset"] == ds.label) & (cells["point"] == i)]
            for metric in config.metrics:
                vals = sub[metric].astype(float)
                rows.append({"dataset": ds.label, param: point[param], "metric": metric,
                             "mean": float(vals.mean()) if len(vals) else math.nan,
                             "std": float(vals.std(ddof=config.std_ddof)) if len(vals) > config.std_ddof else math.nan,
                             "n": int(len(vals)), "n_failed": int(len(total) - len(vals))})
    return pd.DataFrame(rows)


def write_sweep_outputs(root, config: ExperimentConfig | None = None, log_x: bool | None = None) -> list[Path]:
    from ensclust.experiment.plots import plot_sweep

    root = Path(root)
    store = ResultStore(root)
    config = config or store.load_config()
    frame = sweep_frame(config, store.load_cells())
    (param,) = config.methods[0].grid
    csv_path = root / "sweep.csv"
    atomic_write_text(csv_path, frame.to_csv(index=False, lineterminator="\n"))
    if log_x is None:
        spec = config.methods[0].grid[param]
        log_x = isinstance(spec, str) and spec.lower().startswith("log:")
    png_path = root / "sweep.png"
    plot_sweep(frame, param, config.metrics, png_path, title=f"{config.methods[0].name}: metric vs {param}",
               log_x=log_x)
    return [csv_path, png_path]


def grid_values(spec) -> list:
    return parse_grid(spec, "--param")

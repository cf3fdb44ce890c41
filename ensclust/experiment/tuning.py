"""Tuning policies: turn the per-cell results of a method into one table row per (dataset, metric).

* ``fixed``: the declared parameter values (one point).
* ``oracle-best-mean``: the grid point with the best mean over repetitions of ``tune_metric`` (with
  ``tune_metric: per-metric`` each metric picks its own best point, as the AWEC paper does). Only points
  that finished the most repetitions compete (a point with failed repetitions is not compared on fewer
  runs); ties go to the first point in grid order.
  With ``tuned_by: LABEL`` the row takes the point chosen for row LABEL (the same grid) instead of its own:
  e.g. a paper's ablation rows at the setting tuned for its full model.
* ``oracle-per-repetition``: in every repetition the point with the best ``tune_metric`` value (per metric
  with ``per-metric``); the row is the mean over repetitions of those values.
* ``each``: every grid point is its own row, labelled ``Label [a=0.1, b=2]``.
* ``average``: in every repetition the mean of the metric over all grid points (a row that reports an average
  over settings, e.g. ACMK-GF's "average results among the 10 base results"); the row is the mean over
  repetitions of those averages. No oracle: the ground truth chooses nothing. A repetition counts only when
  every grid point finished in it (an average over fewer points would be another quantity).

All oracle policies choose on the ground truth, as the papers do; the policy and the chosen values are
written in every caption and in the table CSV, never hidden.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ensclust.experiment.config import ExperimentConfig, MethodSpec
from ensclust.metrics import FIT_METRICS, label_metrics


@dataclass
class Row:
    dataset: str
    method: str  # row label
    metric: str
    values: dict = field(default_factory=dict)  # rep -> value (empty for pool statistics)
    mean: float = math.nan
    std: float = math.nan
    n: int = 0
    n_failed: int = 0
    policy: str = "fixed"
    params: str = ""
    pseudo: bool = False
    method_spec: str = ""  # config label of the method (differs from `method` for policy 'each')
    used: list = field(default_factory=list)  # (point, rep) of the cells behind the row (for timing)


def _fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def format_params(params: dict, keys=None) -> str:
    keys = list(params) if keys is None else [k for k in keys if k in params]
    return ", ".join(f"{k}={_fmt_value(params[k])}" for k in keys)


def _stats(values: list, ddof: int) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    arr = np.asarray(values, dtype=float)
    std = float(arr.std(ddof=ddof)) if arr.size > ddof else math.nan
    return float(arr.mean()), std


def _point_values(sub: pd.DataFrame, metric: str) -> dict[int, dict]:
    """point -> {rep: value} over ok cells."""
    out: dict[int, dict] = {}
    ok = sub[sub["status"] == "ok"]
    for point, rep, value in zip(ok["point"], ok["rep"], ok[metric], strict=True):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        out.setdefault(int(point), {})[int(rep)] = float(value)
    return out


def summarize(config: ExperimentConfig, cells: pd.DataFrame) -> list[Row]:
    """All table rows (every dataset x method x metric) under each method's tuning policy."""
    rows: list[Row] = []
    reps = config.ensemble["repetitions"]
    missing = [m for m in config.metrics if m not in cells.columns]
    if missing:  # a metric added to the config after these cells were computed: no value until they rerun
        cells = cells.assign(**dict.fromkeys(missing, math.nan))
    # one pass over the cells (a boolean mask per dataset x method was the cost of every report)
    groups = dict(iter(cells.groupby(["dataset", "method"], sort=False))) if len(cells) else {}
    empty = cells.iloc[0:0]
    for method in config.methods:
        for ds in config.datasets:
            sub = groups.get((ds.label, method.label), empty)
            chooser = None if method.tuned_by is None else groups.get((ds.label, method.tuned_by), empty)
            rows.extend(_method_rows(config, method, ds.label, sub, reps, chooser))
    return rows


def _incomplete_grid(considered: int, total: int) -> str:
    """Suffix that says an oracle chose among fewer grid points than the config lists (a partial run): the
    choice, and any significance mark against it, may change once the rest has run."""
    return "" if considered >= total else f"; grid incomplete: chosen among {considered} of {total} points"


def _method_rows(config: ExperimentConfig, method: MethodSpec, dataset: str, sub: pd.DataFrame, reps: int,
                 chooser: pd.DataFrame | None = None):
    """The rows of one method on one data set; ``chooser``: the cells of the ``tuned_by`` row, whose values of the
    tune metric choose the point (None: this row's own)."""
    ddof = config.std_ddof
    grid_keys = list(method.grid)
    if method.is_pseudo:
        out = []
        for metric in config.metrics:
            row = Row(dataset, method.label, metric, policy=f"{method.name} over {method.scope}", pseudo=True,
                      method_spec=method.label)
            ok = sub[sub["status"] == "ok"]
            row.used = [(0, int(r)) for r in ok["rep"]]
            if method.scope == "pool":
                if len(ok):
                    row.mean = float(ok[metric].iloc[0])
                    std = ok[f"{metric}_std"].iloc[0] if f"{metric}_std" in ok else math.nan
                    row.std = float(std) if std is not None and not pd.isna(std) else math.nan
                    row.n = 1
                row.n_failed = int((sub["status"] != "ok").sum())
            else:
                row.values = {int(r): float(v) for r, v in zip(ok["rep"], ok[metric], strict=True)}
                row.mean, row.std = _stats(list(row.values.values()), ddof)
                row.n, row.n_failed = len(row.values), reps - len(row.values)
            out.append(row)
        return out

    per_metric = {metric: _point_values(sub, metric) for metric in config.metrics}

    def make_row(metric, values, policy, params, label=None, used=None):
        mean, std = _stats(list(values.values()), ddof)
        return Row(dataset, label or method.label, metric, values=dict(values), mean=mean, std=std,
                   n=len(values), n_failed=reps - len(values), policy=policy, params=params,
                   method_spec=method.label, used=list(used or []))

    rows = []
    if method.tuning in ("fixed", "each"):
        for point_index, point in enumerate(method.points):
            label = method.label
            if method.tuning == "each" and grid_keys:
                label = f"{method.label} [{format_params(point, grid_keys)}]"
            for metric in config.metrics:
                vals = per_metric[metric].get(point_index, {})
                rows.append(make_row(metric, vals, method.tuning, format_params(point), label,
                                     [(point_index, r) for r in sorted(vals)]))
        return rows

    if method.tuning == "average":
        for metric in config.metrics:
            by_point = per_metric[metric]
            points = range(len(method.points))
            complete = [rep for rep in range(reps) if points and all(rep in by_point.get(p, {}) for p in points)]
            values = {rep: float(np.mean([by_point[p][rep] for p in points])) for rep in complete}
            rows.append(make_row(metric, values, "average",
                                 f"average over {len(points)} grid points"
                                 + (f" ({format_params(method.points[0], grid_keys)} .. "
                                    f"{format_params(method.points[-1], grid_keys)})" if grid_keys else ""),
                                 used=[(p, rep) for rep in complete for p in points]))
        return rows

    for metric in config.metrics:
        tune = config.tune_metric
        if tune == "per-metric":  # a fit metric (e.g. a matrix norm) is no score: read it where labels tune
            tune = metric if metric not in FIT_METRICS else label_metrics(config.metrics)[0]
        if chooser is not None:
            tune_vals = _point_values(chooser, tune)
            policy = f"{method.tuning} of {method.tuned_by} on {tune.upper()}"
        else:
            tune_vals = per_metric.get(tune) or _point_values(sub, tune)
            policy = f"{method.tuning} on {tune.upper()}"
        target = per_metric[metric]
        if method.tuning == "oracle-best-mean":
            counts = {p: len(v) for p, v in tune_vals.items()}
            if not counts:
                rows.append(make_row(metric, {}, policy, "no finished cell"))
                continue
            most = max(counts.values())
            best_point, best_mean = None, -math.inf
            for p in sorted(counts):
                if counts[p] != most:
                    continue
                m = float(np.mean(list(tune_vals[p].values())))
                if m > best_mean:
                    best_point, best_mean = p, m
            chosen_vals = target.get(best_point, {})
            considered = sum(1 for c in counts.values() if c == most)
            rows.append(make_row(metric, chosen_vals, policy,
                                 (format_params(method.points[best_point], grid_keys) or "(no grid)")
                                 + _incomplete_grid(considered, len(method.points)),
                                 used=[(best_point, r) for r in sorted(chosen_vals)]))
        else:  # oracle-per-repetition
            chosen = {}
            values = {}
            for rep in range(reps):
                best_point, best_val = None, -math.inf
                for p in sorted(tune_vals):
                    v = tune_vals[p].get(rep)
                    if v is not None and v > best_val and rep in target.get(p, {}):
                        best_point, best_val = p, v
                if best_point is not None:
                    chosen[rep] = best_point
                    values[rep] = target[best_point][rep]
            counts = Counter(chosen.values())
            desc = "; ".join(f"{format_params(method.points[p], grid_keys)} (x{c})"
                             for p, c in sorted(counts.items(), key=lambda pc: (-pc[1], pc[0])))
            with_cells = sum(1 for v in tune_vals.values() if v)
            rows.append(make_row(metric, values, policy,
                                 ("per repetition: " + desc + _incomplete_grid(with_cells, len(method.points)))
                                 if desc else "no finished cell",
                                 used=sorted((p, r) for r, p in chosen.items())))
    return rows


def rows_frame(rows: list[Row]) -> pd.DataFrame:
    return pd.DataFrame([{
        "dataset": r.dataset, "method": r.method, "metric": r.metric, "mean": r.mean, "std": r.std, "n": r.n,
        "n_failed": r.n_failed, "policy": r.policy, "params": r.params, "pseudo": r.pseudo,
        "values": json.dumps({str(k): v for k, v in sorted(r.values.items())}),
    } for r in rows])

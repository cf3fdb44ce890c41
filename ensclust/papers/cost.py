"""Cost estimates for planned cells, before anything runs (``ensclust reproduce --dry-run``).

A pending cell's CPU time is estimated, in this order, from

1. ``recorded``: the median fit time of the same row (method label) on the same data set in the same
   results folder (``timing.csv``: other repetitions or grid points that did run); ``recorded-wall`` when
   every such record holds only a wall time (fits from before ``cpu_s`` was recorded, see below);
2. ``recorded-elsewhere``: the median fit time of the same method at the same n in any results folder, with
   the same parameters where such fits exist (parameters such as EC-CMS's ``ca`` change the cost tenfold);
3. ``model``: a per-method power law ``t = a * n^b * m^c`` fitted by least squares in log space on every
   recorded fit and the benchmark entries (``results/bench/**/bench.csv``) of that method; with fewer than
   three distinct n the exponent of n is fixed at 2 and of m at 1 (the co-association cost);
4. ``unknown``: no fit of the method was ever timed (counted apart, never as zero).

A pending cell whose method shares its solve with a cell priced before it (same data set, repetition and
parameters, methods of one ``solve_group``, e.g. RSEC-H / RSEC-Z; the runner runs the two one after the other)
is priced as ``shared solve``: the post-processing only (its own row's recorded median where the row has run,
capped at a second; a second where it has not). With ``from_scratch`` the finished cells are priced the
same way (what rerunning everything would cost; ``reproduce --dry-run --from-scratch``).

The recorded times are CPU seconds (``cpu_s`` of timing.csv) where recorded, else the wall seconds of the
fit (older runs; single-threaded fits on a shared 2-core machine, so wall time exceeds CPU time when the
machine was loaded, and often older, slower code): treat the totals as +- 50 %, and the ``recorded-wall`` part
as an upper bound until those fits are run again.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ensclust.experiment.plan import plan_cells
from ensclust.experiment.store import ResultStore
from ensclust.methods import solve_group

#: the estimate sources a dry-run line names, in this order (module docstring)
ESTIMATE_SOURCES = ("recorded", "recorded-wall", "recorded-elsewhere", "model", "unknown")
PSEUDO_COST_S = 0.05  # a base-clustering statistic: scoring the members, no fit
SHARED_SOLVE_COST_S = 1.0  # a fit that reuses its partner's solve: post-processing only
_BUILTIN_N = {"iris": 150, "wine": 178, "digits": 1797, "breast_cancer_sklearn": 569}


@dataclass
class ConfigEstimate:
    config: str
    planned: int
    finished: int
    pending: int
    seconds: dict = field(default_factory=lambda: defaultdict(float))  # estimate source -> CPU seconds
    cells: dict = field(default_factory=lambda: defaultdict(int))  # estimate source -> pending cells
    by_method: dict = field(default_factory=lambda: defaultdict(float))  # registry name -> CPU seconds

    @property
    def total_s(self) -> float:
        return sum(v for k, v in self.seconds.items() if k != "unknown")

    @property
    def unknown(self) -> int:
        return self.cells.get("unknown", 0)


def _recorded_rows(results_root: Path) -> pd.DataFrame:
    """Every recorded fit: config, dataset, method, method_name, n, m, time_s, wall_only (cells.csv and
    timing.csv are written from the same records in the same order)."""
    frames = []
    for timing_path in sorted(Path(results_root).glob("*/timing.csv")):
        cells_path = timing_path.with_name("cells.csv")
        if not cells_path.exists():
            continue
        try:
            cells = pd.read_csv(cells_path, usecols=["dataset", "method", "method_name", "params", "rep", "n", "m",
                                                     "status"], dtype={"params": str})
            timing = pd.read_csv(timing_path)
        except (ValueError, pd.errors.ParserError, OSError):
            continue  # an unreadable folder contributes nothing to the estimates
        if len(cells) != len(timing) or not (cells["method"].values == timing["method"].values).all():
            continue
        # CPU seconds where recorded (fits since cpu_s exists), else wall seconds (about CPU for the
        # single-threaded fits, more under load)
        cpu = timing["cpu_s"] if "cpu_s" in timing else pd.Series(np.nan, index=timing.index)
        frame = cells.assign(time_s=cpu.fillna(timing["time_s"]).values, wall_only=cpu.isna().values,
                             config=timing_path.parent.name)
        frames.append(frame[(frame["status"] == "ok") & (frame["rep"] >= 0) & frame["time_s"].notna()])
    columns = ["config", "dataset", "method", "method_name", "params", "n", "m", "time_s", "wall_only"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def _bench_rows(bench_root: Path) -> pd.DataFrame:
    frames = []
    for path in sorted(Path(bench_root).glob("**/bench.csv")):
        try:
            b = pd.read_csv(path)
        except (ValueError, pd.errors.ParserError, OSError):
            continue
        if {"method", "n", "M", "time_s"} <= set(b.columns):
            b = b[b["time_s"].notna() & b["n"].notna() & b["M"].notna()]
            frames.append(pd.DataFrame({"method_name": b["method"], "n": b["n"], "m": b["M"], "time_s": b["time_s"]}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["method_name", "n", "m", "time_s"])


class CostModel:
    """Per-method estimates of one fit's CPU seconds (module docstring)."""

    def __init__(self, results_root="results", reference_root="results"):
        roots = list(dict.fromkeys([Path(results_root), Path(reference_root)]))
        self.recorded = pd.concat([_recorded_rows(r) for r in roots], ignore_index=True)
        bench = _bench_rows(Path(reference_root) / "bench")
        by_row = self.recorded.groupby(["config", "dataset", "method"])
        self._same_row = by_row["time_s"].median().to_dict()
        self._wall_only_row = by_row["wall_only"].all().to_dict()
        self._same_params = self.recorded.groupby(["method_name", "params", "n"])["time_s"].median().to_dict()
        self._same_n = self.recorded.groupby(["method_name", "n"])["time_s"].median().to_dict()
        both = pd.concat([self.recorded[["method_name", "n", "m", "time_s"]], bench], ignore_index=True)
        both = both[(both["time_s"] > 0) & (both["n"] > 0) & (both["m"] > 0)]
        self._laws = {name: self._fit(g) for name, g in both.groupby("method_name")}

    @staticmethod
    def _fit(g: pd.DataFrame) -> tuple[float, float, float]:
        logn, logm, logt = (np.log(g[c].to_numpy(float)) for c in ("n", "m", "time_s"))
        if len(np.unique(g["n"])) >= 3:
            design = np.column_stack([np.ones_like(logn), logn] + ([logm] if len(np.unique(g["m"])) >= 3 else []))
            coef, *_ = np.linalg.lstsq(design, logt, rcond=None)
            b = float(coef[1])
            c = float(coef[2]) if len(coef) > 2 else 1.0
            a = float(np.median(logt - b * logn - c * logm))
            return a, b, c
        return float(np.median(logt - 2 * logn - logm)), 2.0, 1.0

    def same_row(self, config: str, dataset: str, method: str) -> float | None:
        """Median recorded fit time of one row (config, data set, method label), None when it has none."""
        t = self._same_row.get((config, dataset, method))
        return None if t is None or math.isnan(t) else float(t)

    def estimate(self, config: str, dataset: str, method: str, method_name: str, params: str, n, m
                 ) -> tuple[float, str]:
        """(seconds, source) for one pending cell."""
        t = self._same_row.get((config, dataset, method))
        if t is not None:
            return float(t), "recorded-wall" if self._wall_only_row[(config, dataset, method)] else "recorded"
        if n is not None:
            t = self._same_params.get((method_name, params, n), self._same_n.get((method_name, n)))
            if t is not None:
                return float(t), "recorded-elsewhere"
            law = self._laws.get(method_name)
            if law is not None and m:
                a, b, c = law
                return float(math.exp(a + b * math.log(n) + c * math.log(m))), "model"
        return math.nan, "unknown"


def dataset_sizes(config, results_root: Path) -> dict:
    """n of every data set of a config: from its finished cells, else from the registry."""
    from ensclust.data.registry import list_registry

    sizes = {}
    cells_path = Path(results_root) / config.name / "cells.csv"
    if cells_path.exists():
        try:
            frame = pd.read_csv(cells_path, usecols=["dataset", "n"])
            sizes = frame.dropna().groupby("dataset")["n"].first().astype(int).to_dict()
        except (ValueError, pd.errors.ParserError):
            sizes = {}
    datasets, pools = list_registry("datasets"), list_registry("pools")
    pool_by_file = {str(p.get("file")): p for p in pools.values()}
    for ds in config.datasets:
        if ds.label in sizes:
            continue
        entry = None
        if ds.pool.get("source") == "file":
            entry = pool_by_file.get(str(ds.pool.get("file")))
        if entry is None and ds.name is not None:
            entry = datasets.get(ds.name) or datasets.get(str(ds.name).lower())
        if entry is not None and entry.get("n"):
            sizes[ds.label] = int(entry["n"])
        elif ds.name in _BUILTIN_N:
            sizes[ds.label] = _BUILTIN_N[ds.name]
        elif ds.params.get("n_samples"):
            sizes[ds.label] = int(ds.params["n_samples"])
    return sizes


def estimate_config(config, results_root, model: CostModel, from_scratch: bool = False) -> ConfigEstimate:
    """Planned / finished / pending cells of one config and the estimated CPU time of the pending ones.

    ``from_scratch``: price every planned cell, finished or not (a finished cell by its own row's recorded
    times): what running the config again from nothing would cost. ``finished`` still counts the finished ones.
    """
    store = ResultStore(Path(results_root) / config.name)
    planned = plan_cells(config)
    sizes = dataset_sizes(config, Path(results_root))
    est = ConfigEstimate(config.name, len(planned), 0, 0)
    size = config.ensemble["size"]
    solves = set()  # (dataset, rep, solve group, params) of the pending cells priced so far
    for cell in planned:
        if store.read_cell(cell) is not None:
            est.finished += 1
            if not from_scratch:
                continue
        est.pending += 1
        group = solve_group(cell["method_name"])
        key = (cell["dataset"], cell["rep"], group, cell["params"])
        if cell["scope"] is not None:
            t, source = PSEUDO_COST_S, "recorded"
        elif group is not None and key in solves:
            # the runner runs this cell right after its partner and reuses that solve (methods.base.solve_group):
            # what remains is the post-processing (k-means on n x k): its own row's recorded time where the row
            # has run (those fits reused the solve too), else a constant - a second at most
            t = model.same_row(config.name, cell["dataset"], cell["method"])
            t, source = (SHARED_SOLVE_COST_S if t is None else min(t, SHARED_SOLVE_COST_S)), "shared solve"
        else:
            if group is not None:
                solves.add(key)
            t, source = model.estimate(config.name, cell["dataset"], cell["method"], cell["method_name"],
                                       cell["params"], sizes.get(cell["dataset"]), size)
        est.cells[source] += 1
        if not math.isnan(t):
            est.seconds[source] += t
            est.by_method[cell["method_name"]] += t
    return est


def format_seconds(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"

"""Assemble a paper table from every experiment folder that contributes to it.

For each cell of the paper's table (a row of its long CSV) the manifest's sources are tried in order of
preference; the first whose comparison has the cell (:func:`ensclust.experiment.compare.compare`) gives it,
and any later source that has it too is named in ``also`` (a preference decides, never silently). A cell no
source has is kept with the most specific reason it is missing.

Provenance marks (letters after the number; the caption explains them):

* ``r<n>``: computed over n repetitions where the paper used more;
* ``t``: the source runs a trimmed protocol (its ``protocol`` text is in the caption);
* ``s``: a substitute data set (the paper's is not available);
* ``p``: a generated pool where the authors published theirs;
* ``i``: a tuned row chose among fewer grid points than the config lists (failed or unfinished cells);
* ``†``: significantly worse than the best row of its experiment (paired t-test, as in our own tables).

"Within" means |ours - paper| <= the paper's std, or <= :data:`DEFAULT_TOLERANCE` where it prints none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.compare import (
    METRIC_ALIASES,
    compare,
    paper_number,
    read_paper_csv,
    resolve_paper_csv,
)
from ensclust.experiment.config import canonical_json
from ensclust.experiment.report import DAGGER, METRIC_NAMES, build_tables, latex_escape
from ensclust.experiment.store import ResultStore
from ensclust.papers.manifest import Manifest, Source, TableSpec
from ensclust.pools import normalize_spec

DEFAULT_TOLERANCE = 0.02
TIME_METRICS = ("time_s",)
MARKS = {
    "r": "computed over fewer repetitions than the paper (the number follows the letter)",
    "t": "trimmed protocol (see below)",
    "s": "substitute data set (the paper's is not available)",
    "p": "generated pool where the authors published theirs",
    "i": "tuned among fewer grid points than the config lists",
    "o": "computed by an older revision of the method's code (the next run of the config recomputes it)",
}
COLUMNS = ["table", "metric", "method", "dataset", "param", "paper_mean", "paper_std", "ours_mean", "ours_std",
           "ours_n", "diff", "abs_diff", "tolerance", "within", "status", "marks", "worse", "source", "also",
           "ours_label", "ours_dataset", "policy", "params", "reason", "cause", "cause_kind"]
#: |ours - paper| of the base K-means row above which the data set's other deviations are put down to the pool
POOL_DEVIATION = 0.05
#: |ours - paper| above which a compared cell is a deviation the scorecard lists and explains (within the paper's
#: std or not: a paper std wider than this does not explain the difference)
DEVIATION = 0.05


def _open_deviations(frame: pd.DataFrame) -> pd.Series:
    """Mask of the compared cells without a cause yet that are outside tolerance or more than DEVIATION off."""
    off = (frame["within"] != "yes") | (pd.to_numeric(frame["abs_diff"], errors="coerce") > DEVIATION)
    return (frame["status"] == "compared") & (frame["cause"] == "") & off


@dataclass
class _SourceRun:
    """One contributing experiment folder, compared with one paper table."""

    source: Source
    config: object
    tables: list
    compared: pd.DataFrame  # one row per paper row, same order
    outdated: set = field(default_factory=set)  # row labels computed by an older revision of their method


def paper_frame(manifest: Manifest, spec: TableSpec) -> pd.DataFrame:
    """The paper table's long CSV (every printed cell), or the declared layout for a paper that prints none."""
    if spec.has_paper_csv:
        return read_paper_csv(resolve_paper_csv(f"{manifest.paper_tables}/{spec.table}.csv"))
    rows = [{"table": spec.table, "metric": spec.metric, "method": m, "dataset": d, "mean": "", "std": "",
             "bold": "", "param": ""} for m in spec.rows for d in spec.columns]
    return pd.DataFrame(rows, dtype=str)


def load_experiment(results_root, name: str, cache: dict | None = None):
    """(config, cells, timing, tables) of one experiment folder, or None when it has no results; ``cache``
    (a dict) keeps them for the other tables the folder contributes to."""
    if cache is not None and name in cache:
        return cache[name]
    root = Path(results_root) / name
    loaded = None
    if (root / "cells.csv").exists():
        store = ResultStore(root)
        config, cells = store.load_config(), store.load_cells()
        loaded = (config, cells, store.load_timing(), build_tables(config, cells))
    if cache is not None:
        cache[name] = loaded
    return loaded


def _load_source(results_root: Path, source: Source, paper: pd.DataFrame, cache: dict | None) -> _SourceRun | None:
    loaded = load_experiment(results_root, source.config, cache)
    if loaded is None:
        return None
    config, cells, timing, tables = loaded
    frame = paper.copy()
    if source.substitute:
        frame["dataset"] = frame["dataset"].map(lambda d: source.substitute.get(d, d))
    result = compare(config, cells, frame, timing, tables=tables)
    return _SourceRun(source, config, tables, result, _outdated_labels(config))


def _marks(run: _SourceRun, row, manifest: Manifest, paper_dataset: str) -> list[str]:
    marks = []
    pool_statistic = str(row["policy"]).endswith("over pool")
    if not pool_statistic and 0 < row["ours_n"] < manifest.repetitions and row["metric"] not in TIME_METRICS:
        marks.append(f"r{int(row['ours_n'])}")
    if run.source.protocol:
        marks.append("t")
    if paper_dataset in run.source.substitute:
        marks.append("s")
    if paper_dataset in manifest.authors_pools:
        spec = next((d for d in run.config.datasets if d.label == row["ours_dataset"]), None)
        if spec is not None and spec.pool.get("source") == "generate":
            marks.append("p")
    if "grid incomplete" in str(row["policy"]):
        marks.append("i")
    label = str(row["ours_label"])
    if any(label == old or label.startswith(old + " [") for old in run.outdated):
        marks.append("o")   # a grid point of an 'each' row is labelled "<label> [<point>]" (tuning.py)
    return marks


def _outdated_labels(config) -> set:
    """Row labels of ``config`` (as its results folder recorded it) whose method's code has been revised since:
    their stored cells are what the older code computed (``ConsensusMethod.revision``)."""
    from ensclust.methods import get_method_class

    outdated = set()
    for method in config.methods:
        if method.is_pseudo:
            continue  # a base-clustering statistic: no method code
        try:
            current = get_method_class(method.name).revision
        except UserError:
            continue  # a plug-in that is not loaded here: nothing to compare
        if method.revision != current:
            outdated.add(method.label)
    return outdated


def is_worse(tables: list, row) -> bool:
    """Whether the cell a comparison row was matched with is marked significantly worse in ``tables`` (the
    experiment's own paired t-test against its best row)."""
    table = {t.metric: t for t in tables}.get(METRIC_ALIASES.get(str(row["metric"]).strip().lower(), ""))
    cell = table.cells.get((row["ours_label"], row["ours_dataset"])) if table is not None else None
    return bool(cell is not None and cell.worse)


_REASON_RANK = ("dataset not in config", "method not in config")  # least specific first


def _reason_rank(reason: str) -> int:
    for i, generic in enumerate(_REASON_RANK):
        if reason.startswith(generic):
            return i
    return len(_REASON_RANK)


def assemble_table(manifest: Manifest, spec: TableSpec, results_root="results", cache: dict | None = None
                   ) -> pd.DataFrame:
    """One row per cell of the paper table (:data:`COLUMNS`), in the paper CSV's order. ``cache``: see
    :func:`load_experiment`."""
    paper = paper_frame(manifest, spec)
    runs = []
    not_run = []
    for source in spec.sources:
        run = _load_source(Path(results_root), source, paper, cache)
        if run is None:
            not_run.append(source.config)
        else:
            runs.append(run)
    out = []
    for i, p in enumerate(paper.itertuples(index=False)):
        rec = dict.fromkeys(COLUMNS, "")
        rec.update(table=spec.table, metric=p.metric, method=p.method, dataset=p.dataset, param=p.param,
                   paper_mean=math.nan, paper_std=math.nan, ours_mean=math.nan, ours_std=math.nan, ours_n=0,
                   diff=math.nan, abs_diff=math.nan, tolerance=math.nan, worse=False, status="missing")
        hits = [(run, run.compared.iloc[i]) for run in runs if run.compared.iloc[i]["status"] == "compared"
                or (not spec.has_paper_csv and run.compared.iloc[i]["ours_label"] != "")]
        if hits:
            run, row = hits[0]
            substitute = p.dataset in run.source.substitute
            tolerance = row["paper_std"] if not math.isnan(row["paper_std"]) else DEFAULT_TOLERANCE
            rec.update(paper_mean=row["paper_mean"], paper_std=row["paper_std"], ours_mean=row["ours_mean"],
                       ours_std=row["ours_std"], ours_n=int(row["ours_n"]), ours_label=row["ours_label"],
                       ours_dataset=row["ours_dataset"],
                       policy=row["policy"], params=row["params"], source=run.source.config,
                       marks=" ".join(_marks(run, row, manifest, p.dataset)), worse=is_worse(run.tables, row),
                       also="; ".join(f"{r.source.config} ({rr['ours_mean']:.4f})" for r, rr in hits[1:]))
            if not spec.has_paper_csv:
                rec.update(status="ours only", reason="the paper prints no number for this cell")
            elif substitute:
                rec.update(status="substitute", reason=f"substitute data set {run.source.substitute[p.dataset]}")
            elif METRIC_ALIASES.get(str(row["metric"]).lower()) in TIME_METRICS:
                rec.update(status="timed", diff=row["ours_mean"] / row["paper_mean"])
            else:
                rec.update(status="compared", diff=row["diff"], abs_diff=row["abs_diff"], tolerance=tolerance,
                           within="yes" if row["abs_diff"] <= tolerance + 1e-12 else "no")
        else:
            if runs:
                reasons = [(_reason_rank(r.compared.iloc[i]["reason"]), r.compared.iloc[i]["reason"],
                            r.source.config) for r in runs]
                rank, reason, config = max(reasons, key=lambda x: x[0])
                rec["reason"] = reason if rank < len(_REASON_RANK) else f"{reason} ({config})"
                if rank == 0:
                    rec["reason"] = "no contributing config covers this data set"
            else:
                rec["reason"] = "no contributing config has results"
            if not_run and rec["reason"].startswith("no contributing config"):
                rec["reason"] += f" (not run yet: {', '.join(not_run)})"
            paper_mean, paper_std = paper_number(p.mean), paper_number(p.std)
            if not math.isnan(paper_mean):
                percent = paper_mean > 1.5 and METRIC_ALIASES.get(str(p.metric).lower()) not in TIME_METRICS
                rec["paper_mean"] = paper_mean / 100 if percent else paper_mean
                rec["paper_std"] = paper_std / 100 if percent else paper_std
            elif str(p.mean).strip():
                rec.update(status="not a number", reason=f"the paper prints '{p.mean}'")
            else:
                rec.update(status="no paper value" if not hits else rec["status"])
        if rec["within"] != "yes":
            rec["cause"] = manifest.cause_of(spec.table, p.dataset, p.method, p.metric)
            rec["cause_kind"] = "recorded" if rec["cause"] else ""
        out.append(rec)
    if spec.offsets:
        _fill_offsets(spec, runs, out)
    frame = pd.DataFrame(out, columns=COLUMNS)
    if not spec.has_paper_csv:
        frame.loc[frame["status"] == "missing", "status"] = "no paper value"
    return frame


def _metric_key(metric) -> str:
    return METRIC_ALIASES.get(str(metric).lower(), str(metric).lower())


def _pool_reading(pool: dict) -> dict:
    """The part of a pool spec that defines its members: all of a generated pool's spec (its seed included, which
    :func:`_pool_draw` reads), an imported pool's file and how it is read - the pool module's own normal form of
    a file spec, without the generator keys a config's top-level ``pool:`` block or the defaults leave beside it."""
    return normalize_spec(pool) if pool.get("source") == "file" else pool


def _data_reading(results_root, config: str, label: str, cache: dict | None) -> dict | None:
    """What a config feeds its methods for the data set ``label``: file, preprocessing, parameters and pool
    spec (None when the config has no results or no such data set). Two configs see the same inputs only when
    these agree; the label alone does not say it (e.g. Tr11 as unit rows of counts or as log tf-idf)."""
    loaded = load_experiment(results_root, config, cache) if config else None
    if loaded is None:
        return None
    for spec in loaded[0].datasets:
        if spec.label == label:
            return {"name": spec.name, "preprocess": spec.preprocess, "params": spec.params,
                    "pool": _pool_reading(spec.pool),
                    "n_clusters": spec.n_clusters, "x_key": spec.x_key, "y_key": spec.y_key}
    return None


def _point_means(results_root, config: str, cache: dict | None) -> pd.DataFrame | None:
    """Mean of every metric per (data set, row, parameter point) over the finished repetitions of a config."""
    loaded = load_experiment(results_root, config, cache)
    if loaded is None:
        return None
    cells = loaded[1]
    cells = cells[(cells["status"] == "ok") & (cells["rep"] >= 0)]
    metrics = [c for c in cells.columns if c in set(METRIC_ALIASES.values())]
    groups = cells.groupby(["dataset", "method", "params"], sort=False)
    return groups[metrics].mean().join(groups.size().rename("runs")).reset_index()


def _method_spec(config, label: str):
    """The method entry of a loaded config whose row label is ``label`` (None when there is none)."""
    return next((m for m in config.methods if m.label == label), None)


def _averaged_row(results_root, config: str, labels, cache: dict | None) -> bool:
    """Whether a row of ``config`` labelled one of ``labels`` is an average over its grid points (tuning
    ``average``): its points are its parts, not alternative settings."""
    loaded = load_experiment(results_root, config, cache)
    if loaded is None:
        return False
    return any((spec := _method_spec(loaded[0], label)) is not None and spec.tuning == "average"
               for label in labels)


def _same_computation(results_root, source: str, label: str, config: str, cache: dict | None) -> set:
    """Labels of the grid rows of ``config`` that compute what row ``label`` of ``source`` computes, up to the
    parameters they vary: the same registry method with the same fixed parameters (e.g. EC-CMS Table VII's "PTA"
    row and the "PTA-AL" row of a grid over PTA's K and T). Empty when either config has no results."""
    loaded = [load_experiment(results_root, c, cache) if c else None for c in (source, config)]
    if loaded[0] is None or loaded[1] is None:
        return set()
    spec = _method_spec(loaded[0][0], label)
    if spec is None or spec.is_pseudo:
        return set()
    return {m.label for m in loaded[1][0].methods
            if m.name == spec.name and m.grid and not m.is_pseudo
            and m.params == {k: v for k, v in spec.params.items() if k not in m.grid}}


def attribute_to_setting(manifest: Manifest, frames: dict[str, pd.DataFrame], results_root="results",
                         cache: dict | None = None) -> None:
    """Put down to the parameter setting the deviations that our own grid brackets.

    For an open deviation (:func:`_open_deviations`: compared, no cause yet, outside tolerance or more than
    :data:`DEVIATION` off) the grid of the row in the cell's source
    config, then in each of the table's own and the manifest's ``sensitivity`` configs (same data set label; row
    label = ours or the paper's, or a grid row of the same computation: :func:`_same_computation`), gives the mean
    of the metric at every parameter point. When at least two points were run and the
    paper's value lies in [lowest mean - tolerance, highest mean + tolerance], the deviation is one of setting:
    some point of our grid comes as close to the paper's number as its tolerance allows or brackets it, so the
    paper's unstated (or differently selected) setting explains it (``cause_kind = "setting"``). Otherwise the
    ranges that were checked stay with the open deviation (``reason``, the scorecard's "checked" column), so the
    list says which settings are ruled out. Changes ``frames`` in place.
    """
    point_means = {}  # config -> its per-point means (every open cell of every table asks again)
    table_sensitivity = {t.table: t.sensitivity for t in manifest.tables}
    for table, frame in frames.items():
        open_cells = _open_deviations(frame)
        for idx in frame.index[open_cells]:
            row = frame.loc[idx]
            metric = _metric_key(row["metric"])
            reading = _data_reading(results_root, row["source"], row["ours_dataset"], cache)
            checked = []
            for config in dict.fromkeys([row["source"], *table_sensitivity.get(table, []), *manifest.sensitivity]):
                if config != row["source"] and \
                        _data_reading(results_root, config, row["ours_dataset"], cache) != reading:
                    continue  # another reading of the data set (preprocessing, pool): its grid says nothing here
                labels = {row["ours_label"], row["method"],
                          *_same_computation(results_root, row["source"], row["ours_label"], config, cache)}
                if _averaged_row(results_root, config, labels, cache):
                    continue  # the row averages over its grid: the points are its parts, not other settings
                if config and config not in point_means:
                    point_means[config] = _point_means(results_root, config, cache)
                means = point_means.get(config)
                if means is None or metric not in means:
                    continue
                points = means[(means["dataset"] == row["ours_dataset"]) & means["method"].isin(labels)]
                grid = points[metric].dropna()
                if len(grid) < 2:
                    continue
                lo, hi, tol = float(grid.min()), float(grid.max()), float(row["tolerance"])
                if lo - tol <= row["paper_mean"] <= hi + tol:
                    runs = int(points["runs"].min())
                    frame.at[idx, "cause"] = (f"setting: over the {len(grid)} parameter points of {config} "
                                              f"(>= {runs} runs each) our mean ranges {lo:.3f}..{hi:.3f}, which "
                                              f"brackets the paper's {row['paper_mean']:.3f} (within {tol:g})")
                    frame.at[idx, "cause_kind"] = "setting"
                    break
                checked.append(f"over the {len(grid)} points of {config} ours ranges {lo:.3f}..{hi:.3f}")
            else:
                if checked:
                    _add_checked(frame, idx, "not the setting: " + "; ".join(checked))


def attribute_to_pool(manifest: Manifest, frames: dict[str, pd.DataFrame]) -> None:
    """Put down to the pool the deviations of a data set whose base K-means row already deviates.

    The base row (``manifest.base_row``: the mean score of the base clusterings) measures the pool itself,
    before any consensus method runs. Where ours differs from the paper's by more than :data:`POOL_DEVIATION`
    on a data set and metric (in any table of the paper; per column where the table's columns are a
    parameter), the inputs of every consensus row there differ from the paper's, so a deviation of such a
    row without a recorded cause (an open deviation, :func:`_open_deviations`) gets the cause "pool differs" with
    the base row's numbers
    (``cause_kind = "pool"``). Recorded causes are kept; the base row itself is never attributed to itself.
    Changes ``frames`` in place.
    """
    if not manifest.base_row:
        return
    base = {}
    for frame in frames.values():
        rows = frame[(frame["method"] == manifest.base_row) & (frame["status"] == "compared")]
        for r in rows.itertuples(index=False):
            base.setdefault((_metric_key(r.metric), r.dataset, str(r.param)), r)
    for frame in frames.values():
        open_cells = _open_deviations(frame) & (frame["method"] != manifest.base_row)
        for idx in frame.index[open_cells]:
            row = frame.loc[idx]
            key = (_metric_key(row["metric"]), row["dataset"])
            b = base.get((*key, str(row["param"]))) or base.get((*key, ""))
            if b is None or not abs(b.diff) > POOL_DEVIATION:
                continue
            frame.at[idx, "cause"] = (f"pool differs from the paper's: its {manifest.base_row} row is {b.diff:+.3f} "
                                      f"off here (ours {b.ours_mean:.3f}, paper {b.paper_mean:.3f})")
            frame.at[idx, "cause_kind"] = "pool"


def _row_protocol(config, label: str):
    """What a row of a config computes, whatever its label: method, parameter points, tuning, scope,
    repetitions and code revision (None when the config has no such row)."""
    spec = _method_spec(config, label)
    if spec is None:
        return None
    return (spec.name, canonical_json(spec.points), spec.tuning, spec.scope, spec.repetitions, spec.revision,
            canonical_json(config.ensemble))


def _pool_draw(reading: dict, config_seed: int) -> tuple[dict, int]:
    """A data reading split into what defines its pool spec (everything but the pool's seed) and the seed of its
    draw (the pool's own, else the config's)."""
    spec = {**reading, "pool": {k: v for k, v in reading["pool"].items() if k != "seed"}}
    return spec, reading["pool"].get("seed", config_seed)


def _tabled_values(tables: list) -> dict:
    """(data set label, row label, metric) -> the row's tabled mean, each row under its own tuning policy, read
    from the tables :func:`load_experiment` built (its ``build_tables``), as the config's tables print it."""
    return {(cell.row.dataset, cell.row.method, table.metric): cell.row.mean
            for table in tables for cell in table.cells.values()}


def attribute_to_pool_draw(manifest: Manifest, frames: dict[str, pd.DataFrame], results_root="results",
                           cache: dict | None = None) -> None:
    """Put down to the pool draw the deviations that other draws of the same generated pool bracket.

    Where the paper's pool is not published, ours is generated, and the paper's numbers come from one unknown
    draw of it. The manifest's ``pool_draws`` configs rerun rows on other draws (a pool ``seed`` other than the
    table's) of the same data reading and pool spec, with the same row protocol (method, parameter points,
    tuning, repetitions, ensembles) and the same tuning metric. For an open deviation (:func:`_open_deviations`)
    whose source pool is generated, the row's tabled value on the table's draw and on
    each other draw (under the row's own policy: a fixed point's mean, an oracle's choice per metric or per
    repetition, exactly as a table of that draw prints it) gives a range; when at least three draws were run and
    the paper's value lies in [lowest - tolerance, highest + tolerance], the deviation is within what the pool
    draw alone moves (``cause_kind = "pool draw"``); otherwise the range is noted in ``reason`` (the draw is
    ruled out). Changes ``frames`` in place.
    """
    if not manifest.pool_draws:
        return
    tabled = {}
    for frame in frames.values():
        open_cells = _open_deviations(frame)
        for idx in frame.index[open_cells]:
            row = frame.loc[idx]
            source = load_experiment(results_root, row["source"], cache)
            reading = _data_reading(results_root, row["source"], row["ours_dataset"], cache)
            if source is None or reading is None or reading["pool"].get("source", "generate") != "generate":
                continue
            protocol = _row_protocol(source[0], row["ours_label"])
            if protocol is None:
                continue
            spec_key, own_seed = _pool_draw(reading, source[0].seed)
            metric = _metric_key(row["metric"])
            means, configs = [float(row["ours_mean"])], []
            for config in manifest.pool_draws:
                loaded = load_experiment(results_root, config, cache)
                if loaded is None or _row_protocol(loaded[0], row["ours_label"]) != protocol \
                        or loaded[0].tune_metric != source[0].tune_metric:
                    continue
                labels = [spec.label for spec in loaded[0].datasets
                          if (draw := _pool_draw(_data_reading(results_root, config, spec.label, cache),
                                                 loaded[0].seed))[0] == spec_key and draw[1] != own_seed]
                if config not in tabled:
                    tabled[config] = _tabled_values(loaded[3])
                values = [tabled[config].get((label, row["ours_label"], metric), math.nan) for label in labels]
                values = [v for v in values if not math.isnan(v)]
                if values:
                    means += values
                    configs.append(config)
            if len(means) < 3:
                continue
            lo, hi, tol = min(means), max(means), float(row["tolerance"])
            if lo - tol <= row["paper_mean"] <= hi + tol:
                frame.at[idx, "cause"] = (f"pool draw: over {len(means)} draws of the generated pool (the table's and "
                                          f"{len(means) - 1} more, {', '.join(configs)}) our mean ranges "
                                          f"{lo:.3f}..{hi:.3f}, which brackets the paper's {row['paper_mean']:.3f} "
                                          f"(within {tol:g})")
                frame.at[idx, "cause_kind"] = "pool draw"
            else:  # what was checked stays with the open deviation (the scorecard lists it)
                _add_checked(frame, idx, f"not the pool draw: over {len(means)} draws ours ranges {lo:.3f}..{hi:.3f}")


def _add_checked(frame: pd.DataFrame, idx, text: str) -> None:
    """Record on an open deviation one more explanation that was checked and ruled out (``reason`` column)."""
    before = frame.at[idx, "reason"]
    frame.at[idx, "reason"] = f"{before}; {text}" if before else text


#: two-sided p-value (Welch's or the one-sample t-test) at or above which a deviation is within the spread
SPREAD_P = 0.05


def attribute_to_spread(manifest: Manifest, frames: dict[str, pd.DataFrame], min_diff: float = 0.0) -> None:
    """Put down to the run-to-run spread the open deviations that are not significant.

    A cell compared with ``|ours - paper| > min_diff`` and no cause yet, where ours has a std over at least two
    runs, is tested from the means and stds: where the paper prints a std, by Welch's two-sample t-test (the
    paper's over ``manifest.repetitions`` runs, ours over ``ours_n``); where it prints none, by a one-sample
    t-test of our runs against the paper's number (its own spread is then ignored, which only makes the test
    stricter). At p >= :data:`SPREAD_P` the difference is not distinguishable from the spread of the runs
    (``cause_kind = "spread"``), whatever its size; every other deviation stays open. Runs last, after the
    recorded, setting and pool causes. Changes ``frames`` in place.
    """
    from scipy.stats import t as student_t
    from scipy.stats import ttest_ind_from_stats

    for frame in frames.values():
        open_cells = ((frame["status"] == "compared") & (frame["cause"] == "")
                      & (pd.to_numeric(frame["abs_diff"], errors="coerce") > min_diff))
        for idx in frame.index[open_cells]:
            row = frame.loc[idx]
            paper_std, ours_std = paper_number(row["paper_std"]), paper_number(row["ours_std"])
            n_ours = paper_number(row["ours_n"])
            n_ours = 0 if math.isnan(n_ours) else int(n_ours)
            ours, paper = float(row["ours_mean"]), float(row["paper_mean"])
            if math.isnan(ours_std) or n_ours < 2:
                continue
            if not math.isnan(paper_std):
                if paper_std + ours_std <= 0:
                    continue
                p = float(ttest_ind_from_stats(ours, ours_std, n_ours, paper, paper_std, manifest.repetitions,
                                               equal_var=False).pvalue)
                against = f"paper {paper:.3f} +- {paper_std:.3f} over {manifest.repetitions}"
                test = "Welch t-test"
            else:
                if ours_std <= 0:
                    continue
                t_stat = (ours - paper) / (ours_std / math.sqrt(n_ours))
                p = float(2.0 * student_t.sf(abs(t_stat), n_ours - 1))
                against = f"the paper's {paper:.3f} (no std printed)"
                test = "one-sample t-test"
            if p >= SPREAD_P:
                frame.at[idx, "cause"] = (f"spread: not significant ({test} p = {p:.2f}; ours {ours:.3f} +- "
                                          f"{ours_std:.3f} over {n_ours} runs, {against})")
                frame.at[idx, "cause_kind"] = "spread"


def _param_dict(text: str) -> dict:
    """'gamma1=1;gamma2=0.01;...' or 'gamma1=1 [gamma2=0.01]' -> {'gamma1': 1.0, 'gamma2': 0.01} (numeric
    values only; other pieces are ignored)."""
    out = {}
    for piece in str(text).replace("[", ";").replace("]", ";").replace(",", ";").split(";"):
        key, sep, value = piece.strip().partition("=")
        if sep:
            try:
                out[key.strip()] = float(value)
            except ValueError:
                pass
    return out


def _fill_offsets(spec: TableSpec, runs: list, out: list) -> None:
    """Cells the paper prints relative to a reference setting (``offsets: {marker, reference, relative}``),
    e.g. EC-CMS Table III. ``marker`` cells are offsets: our mean at the cell's setting - our mean at the
    reference setting; ``relative`` cells (optional) are relative changes |ours - ours_ref| / ours_ref of their
    own metric (Table III's ||C||_F, recorded as ``consensus_fro``). Settings are read from the grid rows of the
    same experiment (row label 'gamma1=1 [gamma2=0.01]' for the paper's 'gamma1=1;gamma2=0.01;...'); the
    reference is the row the paper's ``reference`` cells matched; cells at the reference setting take it."""
    marker, reference = spec.offsets["marker"], spec.offsets["reference"]
    relative = spec.offsets.get("relative")
    refs = {(r["metric"], r["dataset"]): r for r in out
            if reference in str(r["param"]) and r["status"] == "compared"}
    for rec in out:
        param = str(rec["param"])
        is_relative = bool(relative) and relative in param
        if rec["status"] != "missing" or not (marker in param or reference in param or is_relative):
            continue
        ref = (next((r for (_, d), r in refs.items() if d == rec["dataset"]), None) if is_relative
               else refs.get((rec["metric"], rec["dataset"])))
        if ref is None or not isinstance(rec["paper_mean"], float) or math.isnan(rec["paper_mean"]):
            continue
        run = next(r for r in runs if r.source.config == ref["source"])
        table = {t.metric: t for t in run.tables}.get(METRIC_ALIASES.get(str(rec["metric"]).lower(), ""))
        if reference in param:
            value, label = ref["ours_mean"], ref["ours_label"]
        else:
            wanted = _param_dict(param)
            best = None
            for (label, dataset), cell in (table.cells.items() if table is not None else []):
                got = _param_dict(label)
                if dataset == ref["ours_dataset"] and got and all(wanted.get(k) == v for k, v in got.items()) \
                        and (best is None or len(got) > len(best[0])):
                    best = (got, label, cell.row.mean)
            if best is None and is_relative and wanted == _param_dict(ref["param"]):
                best = (wanted, ref["ours_label"], None)  # the reference setting itself
            if best is None:
                continue
            label, value = best[1], best[2]
            if is_relative:
                base = table.cells.get((ref["ours_label"], ref["ours_dataset"]))
                if base is None or not base.row.mean:
                    continue
                value = abs((base.row.mean if value is None else value) - base.row.mean) / base.row.mean
            else:
                value -= ref["ours_mean"]
        diff = value - rec["paper_mean"]
        tolerance = rec["paper_std"] if not math.isnan(rec["paper_std"]) else DEFAULT_TOLERANCE
        policy = ("relative change from the reference setting" if is_relative
                  else ref["policy"] if reference in param else "offset from the reference setting")
        rec.update(status="compared", ours_mean=value, ours_label=label, ours_n=ref["ours_n"],
                   source=ref["source"], diff=diff, abs_diff=abs(diff), tolerance=tolerance, reason="",
                   within="yes" if abs(diff) <= tolerance + 1e-12 else "no", policy=policy)


# -- layout as the paper prints it ------------------------------------------------------------------------------
def _layout(frame: pd.DataFrame, spec: TableSpec):
    """(metric blocks with their rows, columns, key of a cell): first-appearance order of the paper CSV, or
    the declared column order. Columns are data sets, or the values of ``param`` (``columns_from: param``)."""
    by_param = spec.columns_from == "param"
    col_field, row_field = ("param", "dataset") if by_param else ("dataset", "param")
    columns = list(spec.columns) if spec.columns else list(dict.fromkeys(frame[col_field]))
    blocks = []
    for metric in dict.fromkeys(frame["metric"]):
        sub = frame[frame["metric"] == metric]
        blocks.append((metric, list(dict.fromkeys(zip(sub["method"], sub[row_field], strict=True)))))

    def key(metric, method, row_value, column):
        dataset, param = (row_value, column) if by_param else (column, row_value)
        return metric, method, param, dataset

    return blocks, columns, key


def _row_label(method: str, param: str, several: bool) -> str:
    return f"{method} ({param})" if several and param else method


def _fmt(x, decimals=3) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{decimals}f}"


def cell_parts(rec) -> tuple[str, str, str]:
    """(ours text with dagger, marks, paper text) of one assembled cell."""
    if rec is None:
        return "", "", ""
    timed = METRIC_ALIASES.get(str(rec["metric"]).lower()) in TIME_METRICS
    paper = _fmt(rec["paper_mean"], 4)
    if timed and paper:
        paper = f"{rec['paper_mean']:.3g} s"
    if rec["status"] not in ("compared", "substitute", "timed", "ours only"):
        return "–", "", paper
    ours = _fmt(rec["ours_mean"])
    if not math.isnan(rec["ours_std"]):
        ours += f" ± {_fmt(rec['ours_std'])}"
    if rec["status"] == "timed":
        ours = f"{rec['ours_mean']:.3g} s"
    return ours + (DAGGER if rec["worse"] else ""), rec["marks"].replace(" ", ","), paper


def caption_lines(manifest: Manifest, spec: TableSpec, frame: pd.DataFrame) -> list[str]:
    used = [s for s in spec.sources if s.config in set(frame["source"])]
    lines = [f"{spec.title}. Each cell: ours mean ± std over repetitions (the paper's value in parentheses)."]
    present = {m.rstrip("0123456789") for marks in frame["marks"] for m in str(marks).split() if m}
    if present:
        lines.append("Marks: " + "; ".join(f"{k}: {v}" for k, v in MARKS.items() if k in present)
                     + f" (paper: {manifest.repetitions} repetitions).")
    if frame["worse"].any():
        lines.append(f"{DAGGER}: significantly worse than the best row of its experiment (paired t-test over the "
                     "shared repetitions, p < 0.05).")
    if (frame["status"] == "timed").any():
        lines.append("Run times are wall seconds of one fit on this machine (2 shared cores); the paper's machine "
                     "differs: compare ratios, not values.")
    for s in used:
        extra = []
        if s.protocol:
            extra.append(f"trimmed protocol: {s.protocol}")
        if s.substitute:
            extra.append("substitutes: " + ", ".join(f"{k} -> {v}" for k, v in s.substitute.items()))
        lines.append(f"Source {s.config} ({s.tier} tier)" + (": " + "; ".join(extra) if extra else "") + ".")
    if spec.notes:
        lines.append(spec.notes)
    return lines


def _missing_summary(frame: pd.DataFrame) -> list[str]:
    missing = frame[frame["status"] == "missing"]
    out = []
    for reason, grp in missing.groupby("reason", sort=True):
        what = sorted({f"{m}/{d}" for m, d in zip(grp["method"], grp["dataset"], strict=True)})
        out.append(f"{len(grp)} not computed - {reason}: " + ", ".join(what[:12]) + (", ..." if len(what) > 12
                                                                                  else ""))
    return out


def table_markdown(manifest: Manifest, spec: TableSpec, frame: pd.DataFrame) -> str:
    blocks, columns, key = _layout(frame, spec)
    index = {(r["metric"], r["method"], r["param"], r["dataset"]): r for r in frame.to_dict("records")}
    lines = [f"## {spec.title}", ""] + [" ".join(caption_lines(manifest, spec, frame)), ""]
    for metric, rows in blocks:
        name = METRIC_NAMES.get(str(metric).lower(), str(metric))
        several = len({m for m, _ in rows}) < len(rows) and spec.columns_from == "dataset"
        lines += [f"**{name}**", "", "| Method | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for method, param in rows:
            cols = []
            for d in columns:
                ours, marks, paper = cell_parts(index.get(key(metric, method, param, d)))
                text = ours + (f"<sup>{marks}</sup>" if marks else "")
                cols.append(f"{text} ({paper})" if paper else text)
            lines.append(f"| {_row_label(method, param, several)} | " + " | ".join(cols) + " |")
        lines.append("")
    lines += [f"- {m}" for m in _missing_summary(frame)]
    return "\n".join(lines).rstrip() + "\n"


def table_latex(manifest: Manifest, spec: TableSpec, frame: pd.DataFrame) -> str:
    blocks, columns, key = _layout(frame, spec)
    index = {(r["metric"], r["method"], r["param"], r["dataset"]): r for r in frame.to_dict("records")}
    lines = [r"\begin{table}[htbp]", r"\centering", r"\scriptsize",
             rf"\caption{{{latex_escape(' '.join(caption_lines(manifest, spec, frame)))}}}",
             rf"\begin{{tabular}}{{l{'c' * len(columns)}}}", r"\toprule"]
    for metric, rows in blocks:
        name = METRIC_NAMES.get(str(metric).lower(), str(metric))
        several = len({m for m, _ in rows}) < len(rows) and spec.columns_from == "dataset"
        lines.append(latex_escape(name) + " & " + " & ".join(latex_escape(c) for c in columns) + r" \\")
        lines.append(r"\midrule")
        for method, param in rows:
            cols = []
            for d in columns:
                ours, marks, paper = cell_parts(index.get(key(metric, method, param, d)))
                text = latex_escape(ours) + (rf"\textsuperscript{{{latex_escape(marks)}}}" if marks else "")
                cols.append(f"{text} ({paper})" if paper else text)
            lines.append(latex_escape(_row_label(method, param, several)) + " & " + " & ".join(cols) + r" \\")
        lines.append(r"\midrule")
    lines[-1] = r"\bottomrule"
    lines += [r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"

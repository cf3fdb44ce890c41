"""Compare our tables with a paper's (``ensclust compare``).

Paper tables are long CSVs ``table,metric,method,dataset,mean,std,bold,param`` (see
``../shared/paper_tables/*/README.md``). A paper cell (metric, method, dataset) is matched with our row
whose paper name (the method's ``paper_method``, default its ``label``) equals the paper's ``method``
(case-insensitive) on the dataset whose ``label`` equals the paper's ``dataset``. When the paper prints
several rows for one method (e.g. EC-CMS "Proposed" fixed and tuned), a config method with
``paper_param`` matches only the paper row with that ``param`` (and is preferred there over a row without
``paper_param``, wherever it stands in the config); ``compare_param`` at the top of the
config restricts the whole comparison to one ``param`` value (e.g. ``ratio=60``).

Metric names map case-insensitively: ACC, NMI, ARI, F-score/F1/F1-score (pair-counting ``fscore``),
F-measure, Purity. Paper values above 1.5 for these [0, 1] scores are read as percentages.

Every paper cell appears in the output: compared, or missing with the reason (metric not computed,
dataset not in config / not run, method not implemented / not in config, no finished repetition).
"""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.config import ExperimentConfig
from ensclust.experiment.report import build_tables
from ensclust.experiment.store import ResultStore, atomic_write_text

METRIC_ALIASES = {"acc": "acc", "accuracy": "acc", "nmi": "nmi", "ari": "ari", "f-score": "fscore",
                  "fscore": "fscore", "f1": "fscore", "f1-score": "fscore", "f": "fscore", "f-measure": "fmeasure",
                  "fmeasure": "fmeasure", "purity": "purity", "time_s": "time_s", "time": "time_s",
                  "runtime": "time_s", "time (s)": "time_s",
                  # EC-CMS Table III prints the relative change of ||C||_F; the runner records ||C||_F
                  "c_fro_relative_change": "consensus_fro"}
PAPER_COLUMNS = ["table", "metric", "method", "dataset", "mean", "std", "bold", "param"]


def paper_tables_dir() -> Path | None:
    env = os.environ.get("ENSCLUST_PAPER_TABLES")
    candidates = [Path(env)] if env else []
    data = os.environ.get("ENSCLUST_DATA")
    if data:
        candidates.append(Path(data).parent / "paper_tables")
    here = Path(__file__).resolve().parents[2]
    candidates += [Path("../shared/paper_tables"), here.parent / "shared" / "paper_tables"]
    for c in candidates:
        if c.is_dir():
            return c
    return None


def resolve_paper_csv(path: str) -> Path:
    p = Path(path)
    if p.is_absolute() or p.exists():
        if not p.exists():
            raise UserError(f"{p}: paper table not found")
        return p
    base = paper_tables_dir()
    if base is not None and (base / p).exists():
        return base / p
    raise UserError(f"paper table '{path}' not found (relative to the current folder or "
                    f"{base or '../shared/paper_tables'}; set ENSCLUST_PAPER_TABLES)")


def paper_display_path(path: Path) -> str:
    """The paper table's path as the comparison files show it: relative to the default location
    ``../shared/paper_tables`` when it lies in the paper tables folder found, so that the files do not change
    with the machine or with ENSCLUST_DATA / ENSCLUST_PAPER_TABLES."""
    base = paper_tables_dir()
    if base is not None:
        try:
            return (Path("../shared/paper_tables") / Path(path).resolve().relative_to(base.resolve())).as_posix()
        except ValueError:
            pass
    return str(path)


def paper_number(text) -> float:
    """A paper cell's text as a float (NaN when empty or not a number; "+0.001" and "1,234" are read)."""
    if text is None:
        return math.nan
    s = str(text).strip().replace(",", "")
    if s == "" or s.lower() == "nan":
        return math.nan
    try:
        return float(s)
    except ValueError:
        return math.nan


def read_paper_csv(path) -> pd.DataFrame:
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read paper table ({exc.__class__.__name__})") from None
    missing = [c for c in ("metric", "method", "dataset", "mean") if c not in frame.columns]
    if missing:
        raise UserError(f"{path}: not a paper table (missing columns {', '.join(missing)}; expected "
                        f"{','.join(PAPER_COLUMNS)})")
    for col in PAPER_COLUMNS:
        if col not in frame.columns:
            frame[col] = ""
    return frame


def compare(config: ExperimentConfig, cells: pd.DataFrame, paper: pd.DataFrame,
            timing: pd.DataFrame | None = None, tables: list | None = None) -> pd.DataFrame:
    """One output row per paper cell (see the module docstring).

    Run-time cells (metric ``time_s``) are compared with our mean wall time of the fit over the cells
    behind the row (:func:`ensclust.experiment.report.timing_summary`) when ``timing`` is given;
    hardware differs, so treat those differences as orders of magnitude, not as reproduction errors.
    ``tables`` are the config's :func:`build_tables` when the caller has them already. ``ours_dataset`` is
    the config's column a compared paper cell was matched with.
    """
    from ensclust.experiment.report import timing_summary
    from ensclust.methods import list_methods

    tables = {t.metric: t for t in (tables if tables is not None else build_tables(config, cells))}
    times = {}
    wants_time = any(METRIC_ALIASES.get(str(m).strip().lower()) == "time_s" for m in paper["metric"].unique())
    if wants_time and timing is not None and len(timing) and len(cells):
        for r in timing_summary(config, cells, timing).itertuples(index=False):
            times[(r.method, r.dataset)] = (r.time_s, r.time_s_std, r.n_cells, r.policy, r.params)
    ran_datasets = set(cells.loc[cells["status"] == "ok", "dataset"]) if len(cells) else set()
    our_datasets = defaultdict(list)  # lower paper dataset name -> [(column label, paper_param)]
    for d in config.datasets:
        our_datasets[(d.paper_dataset or d.label).lower()].append((d.label, d.paper_param))
    by_paper_name = defaultdict(list)  # lower paper name -> [(row label, MethodSpec)]
    for m in config.methods:
        labels = [m.label]
        if m.tuning == "each" and m.grid:
            labels = sorted({key[0] for t in tables.values() for key in t.cells if key[0].startswith(m.label + " [")})
        for label in labels:
            name = (m.paper_method or m.label) if label == m.label else label
            by_paper_name[name.lower()].append((label, m))
    registered = set(list_methods()) | {"km-avg", "km-best"}

    dup_counts = paper.groupby(["metric", "method", "dataset"]).size().to_dict()
    out = []
    for _, p in paper.iterrows():
        base = {"table": p["table"], "metric": p["metric"], "method": p["method"], "dataset": p["dataset"],
                "param": p["param"], "paper_mean": paper_number(p["mean"]), "paper_std": paper_number(p["std"]),
                "ours_label": "", "ours_dataset": "", "ours_mean": math.nan, "ours_std": math.nan, "ours_n": 0, "diff": math.nan,
                "abs_diff": math.nan, "within_paper_std": "", "policy": "", "params": "", "status": "missing",
                "reason": "", "note": ""}
        metric = METRIC_ALIASES.get(str(p["metric"]).strip().lower())
        if dup_counts.get((p["metric"], p["method"], p["dataset"]), 0) > 1:
            base["note"] = "paper prints several rows for this cell (param differs)"

        def missing(reason, base=base):
            base["reason"] = reason
            out.append(base)

        if metric is None:
            missing(f"metric '{p['metric']}' is not a clustering score ensclust computes")
            continue
        if metric == "time_s" and timing is None:
            missing("run time: no timing.csv in the results")
            continue
        if metric != "time_s" and metric not in config.metrics:
            missing(f"metric {metric} not in config")
            continue
        if config.compare_param is not None and str(p["param"]) != config.compare_param:
            missing(f"param variant not in config (param={p['param']}; config compares {config.compare_param})")
            continue
        ds_entries = our_datasets.get(str(p["dataset"]).strip().lower(), [])
        ds_matches = [label for label, param in ds_entries if param is None or param == str(p["param"])]
        if not ds_matches:
            missing("dataset not in config" if not ds_entries else f"param variant not in config (param={p['param']})")
            continue
        ds_label = ds_matches[0]
        if ds_label not in ran_datasets:
            missing("dataset not run (no finished cell)")
            continue
        candidates = by_paper_name.get(str(p["method"]).strip().lower(), [])
        if not candidates and metric == "time_s":
            # a run-time row may annotate the name ("LWEA (baseline; no iterations)"): the row of the bare name
            candidates = by_paper_name.get(re.sub(r"\s*\(.*\)\s*$", "", str(p["method"])).strip().lower(), [])
        # a run time printed without a setting: the first row of that name (config order) stands for it
        unparamed_time = metric == "time_s" and not str(p["param"]).strip()
        candidates = [(label, m) for label, m in candidates
                      if m.paper_param is None or m.paper_param == p["param"] or unparamed_time]
        # a row mapped to exactly this param (e.g. "k=2") wins over a generic row of the same paper name,
        # whatever their order in the config
        candidates.sort(key=lambda c: c[1].paper_param is None)
        if not candidates:
            key = str(p["method"]).strip().lower()
            if any(m.paper_method and m.paper_method.lower() == key for m in config.methods) or \
                    any(m.label.lower() == key for m in config.methods):
                missing(f"param variant not in config (param={p['param']})")
            elif key in registered:
                missing("method not in config")
            else:
                missing("method not in config and no registered method of that name (not implemented or named differently)")
            continue
        label, method = candidates[0]
        if metric == "time_s":
            found = times.get((label, ds_label))
            if found is None or math.isnan(found[0]):
                missing("no finished repetition (all failed or not run)")
                continue
            from types import SimpleNamespace

            r = SimpleNamespace(mean=found[0], std=found[1], n=found[2], policy=found[3], params=found[4])
            base["note"] = (base["note"] + "; " if base["note"] else "") + "run time: hardware differs"
        else:
            cell = tables[metric].cells.get((label, ds_label))
            if cell is None or math.isnan(cell.row.mean):
                missing("no finished repetition (all failed or not run)")
                continue
            r = cell.row
        paper_mean, paper_std = base["paper_mean"], base["paper_std"]
        if math.isnan(paper_mean):
            # ours is kept beside a paper cell without a number (e.g. 'N/A', or a paper that prints none)
            base.update(ours_label=label, ours_dataset=ds_label, ours_mean=r.mean, ours_std=r.std, ours_n=r.n,
                        policy=r.policy, params=r.params)
            missing(f"paper value '{p['mean']}' is not a number")
            continue
        if paper_mean > 1.5 and metric != "time_s":
            paper_mean /= 100.0
            paper_std = paper_std / 100.0 if not math.isnan(paper_std) else paper_std
            base["note"] = (base["note"] + "; " if base["note"] else "") + "paper value in % (divided by 100)"
        diff = r.mean - paper_mean
        base.update(paper_mean=paper_mean, paper_std=paper_std, ours_label=label, ours_dataset=ds_label,
                    ours_mean=r.mean,
                    ours_std=r.std, ours_n=r.n, diff=diff, abs_diff=abs(diff), policy=r.policy, params=r.params,
                    status="compared",
                    within_paper_std="" if math.isnan(paper_std) else ("yes" if abs(diff) <= paper_std + 1e-12
                                                                       else "no"))
        if len(candidates) > 1:
            base["note"] = (base["note"] + "; " if base["note"] else "") + \
                f"also matches {', '.join(c[0] for c in candidates[1:])}"
        out.append(base)
    return pd.DataFrame(out)


def summary_line(result: pd.DataFrame) -> str:
    compared = result[result["status"] == "compared"]
    missing = result[result["status"] == "missing"]
    parts = [f"{len(compared)} cells compared"]
    if len(compared):
        parts.append(f"mean |diff| {compared['abs_diff'].mean():.4f}")
        with_std = compared[compared["within_paper_std"] != ""]
        if len(with_std):
            parts.append(f"within paper std {int((with_std['within_paper_std'] == 'yes').sum())}/{len(with_std)}")
    if len(missing):
        groups = []
        for reason, grp in missing.groupby("reason", sort=True):
            what = sorted(set(grp["method"] if "method" in reason else grp["dataset"] if "dataset" in reason
                              else grp["metric"]))
            names = ", ".join(map(str, what[:8])) + (", ..." if len(what) > 8 else "")
            groups.append(f"{len(grp)} {reason} [{names}]")
        parts.append(f"{len(missing)} missing: " + "; ".join(groups))
    else:
        parts.append("0 missing")
    return "; ".join(parts)


def _md(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4f}"
    return str(value).replace("|", "\\|")


def comparison_markdown(result: pd.DataFrame, paper_path, results_dir) -> str:
    lines = [f"# Comparison: {results_dir} vs {paper_display_path(paper_path)}", "", summary_line(result), ""]
    cols = ["metric", "method", "dataset", "param", "paper_mean", "paper_std", "ours_mean", "ours_std", "diff",
            "within_paper_std", "status", "reason"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for _, r in result.iterrows():
        lines.append("| " + " | ".join(_md(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


INDEX_TITLE = "# Comparison index:"  # first line of the combined comparison.md of several paper tables


@dataclass
class Comparison:
    """One paper table compared: the rows, the summary line and the files written."""

    paper_path: Path
    result: pd.DataFrame
    line: str
    paths: list[Path]

    @property
    def stem(self) -> str:
        return self.paper_path.stem


def comparison_index_markdown(comparisons: list[Comparison], results_dir) -> str:
    """The combined ``comparison.md`` when several paper tables are compared: one line per table."""
    lines = [f"{INDEX_TITLE} {results_dir} vs {len(comparisons)} paper tables", "",
             "| paper table | comparison | summary |", "|---|---|---|"]
    for c in comparisons:
        csv, md = (p.name for p in c.paths)
        lines.append(f"| {_md(paper_display_path(c.paper_path))} | [{md}]({md}) ([csv]({csv})) | {_md(c.line)} |")
    return "\n".join(lines) + "\n"


def run_compare(results_dir, paper=None) -> list[Comparison]:
    """Compare ``results_dir`` with one or several paper tables and write the comparison files.

    ``paper`` is a CSV path or a list of them; default: the config's ``compare_to``. One table writes
    ``comparison.csv`` / ``comparison.md``. Several write ``comparison_<stem>.csv`` / ``.md`` per table
    (``stem`` = the paper CSV's file name without extension, e.g. ``comparison_table2_ari.csv``) and an
    index ``comparison.md`` with each table's summary line; a ``comparison.csv`` left by an earlier
    single-table comparison is removed then, so no stale comparison remains beside the new ones.
    """
    from ensclust.experiment.config import compare_targets

    store = ResultStore(results_dir)
    config = store.load_config()
    papers = [paper] if isinstance(paper, str) else list(paper or [])
    papers = papers or compare_targets(config)
    if not papers:
        raise UserError(f"{results_dir}: the config has no compare_to; pass --paper CSV")
    paper_paths = [resolve_paper_csv(p) for p in papers]
    stems = [p.stem for p in paper_paths]
    for i, stem in enumerate(stems):
        if stems.index(stem) != i:
            raise UserError(f"paper tables {paper_paths[stems.index(stem)]} and {paper_paths[i]} share the file "
                            f"name '{stem}' (comparisons are written to comparison_<stem>.csv); compare them "
                            f"one at a time")
    store.ensure_aggregates(config)  # a run killed with SIGKILL left only cells/*.json
    cells, timing = store.load_cells(), store.load_timing()
    root = Path(results_dir)
    several = len(paper_paths) > 1
    comparisons = []
    for paper_path in paper_paths:
        result = compare(config, cells, read_paper_csv(paper_path), timing)
        suffix = f"_{paper_path.stem}" if several else ""
        csv_path, md_path = root / f"comparison{suffix}.csv", root / f"comparison{suffix}.md"
        atomic_write_text(csv_path, result.to_csv(index=False, lineterminator="\n"))
        atomic_write_text(md_path, comparison_markdown(result, paper_path, results_dir))
        comparisons.append(Comparison(paper_path, result, summary_line(result), [csv_path, md_path]))
    if several:
        atomic_write_text(root / "comparison.md", comparison_index_markdown(comparisons, results_dir))
        (root / "comparison.csv").unlink(missing_ok=True)
    return comparisons

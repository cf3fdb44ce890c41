"""Reproduce a paper: run the configs of its tables (a tier), assemble its tables as the paper prints them,
and write the scorecard.

Layout written under the results root::

    papers/<paper>/<table>.csv / .md / .tex   one assembled table per paper table (assemble.py)
    papers/<paper>/README.md                  the paper's tables with their counts
    REPRODUCTION.md                           the scorecard: per paper and table, cells computed / within

Everything here is derived from the experiment folders and the paper tables; rerunning it on the same
folders writes the same bytes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.store import ResultStore, atomic_write_text
from ensclust.papers.assemble import (
    DEFAULT_TOLERANCE,
    DEVIATION,
    POOL_DEVIATION,
    SPREAD_P,
    assemble_table,
    attribute_to_pool,
    attribute_to_pool_draw,
    attribute_to_setting,
    attribute_to_spread,
    table_latex,
    table_markdown,
)
from ensclust.papers.manifest import Manifest, available_papers, load_manifest

LARGEST_SHOWN = 12
#: the cause kinds assemble.py attributes (a deviation of any other kind, i.e. none, is unexplained)
EXPLAINED_KINDS = ("recorded", "setting", "pool", "pool draw", "spread")


@dataclass
class Counts:
    cells: int = 0  # result cells the paper prints a number for
    computed: int = 0  # ours exists (compared, substitute or timed)
    compared: int = 0  # compared with the paper (same data set)
    within: int = 0
    abs_diff_sum: float = 0.0

    def add(self, frame: pd.DataFrame) -> Counts:
        numeric = frame[frame["paper_mean"].notna() & (frame["status"] != "not a number")]
        compared = numeric[numeric["status"] == "compared"]
        self.cells += len(numeric)
        self.computed += int(numeric["status"].isin(["compared", "substitute", "timed"]).sum())
        self.compared += len(compared)
        self.within += int((compared["within"] == "yes").sum())
        self.abs_diff_sum += float(compared["abs_diff"].sum())
        return self

    def merge(self, other: Counts) -> Counts:
        for k in ("cells", "computed", "compared", "within", "abs_diff_sum"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        return self

    @property
    def mean_abs_diff(self) -> float:
        return self.abs_diff_sum / self.compared if self.compared else math.nan

    def row(self) -> list[str]:
        pct = lambda a, b: f"{100 * a / b:.0f} %" if b else "-"  # noqa: E731
        return [str(self.cells), f"{self.computed} ({pct(self.computed, self.cells)})", str(self.compared),
                f"{self.within} ({pct(self.within, self.cells)})",
                "-" if math.isnan(self.mean_abs_diff) else f"{self.mean_abs_diff:.4f}"]


def papers_of(name: str) -> list[str]:
    return available_papers() if str(name).lower() == "all" else [str(name).lower()]


def assemble_paper(manifest: Manifest, results_root="results", write=True, cache: dict | None = None
                   ) -> dict[str, pd.DataFrame]:
    """Assemble every table of a paper; write ``papers/<paper>/`` when ``write``. Returns the frames."""
    cache = {} if cache is None else cache
    root = Path(results_root) / "papers" / manifest.paper
    frames = {}
    index = [f"# {manifest.title}", "",
             "Written by `ensclust reproduce`: each paper table assembled from the experiment folders listed in "
             "its caption. See [../../REPRODUCTION.md](../../REPRODUCTION.md) for the scorecard.", "",
             "| table | result cells | computed | compared | within | mean abs. diff |", "|---|---|---|---|---|---|"]
    for spec in manifest.tables:
        frames[spec.table] = assemble_table(manifest, spec, results_root, cache)
    attribute_to_setting(manifest, frames, results_root, cache)
    attribute_to_pool(manifest, frames)
    attribute_to_pool_draw(manifest, frames, results_root, cache)
    attribute_to_spread(manifest, frames, DEVIATION)
    for spec in manifest.tables:
        frame = frames[spec.table]
        if write:
            atomic_write_text(root / f"{spec.table}.csv", frame.to_csv(index=False, lineterminator="\n"))
            atomic_write_text(root / f"{spec.table}.md", table_markdown(manifest, spec, frame))
            atomic_write_text(root / f"{spec.table}.tex", table_latex(manifest, spec, frame))
        counts = Counts().add(frame)
        index.append(f"| [{spec.title}]({spec.table}.md) | " + " | ".join(counts.row()) + " |")
    if write:
        dev = _deviations(manifest, frames)
        if len(dev):
            index += ["", f"## Every deviation above {DEVIATION}", "",
                      "Compared cells with |ours - paper| > 0.05, largest first, with their cause: recorded, setting "
                      "(our parameter grid brackets the paper's value), pool (the base row deviates on that data "
                      "set and metric) or none.", "",
                      "| table | metric | method | data set | param | ours | paper | diff | cause |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for r in dev.itertuples(index=False):
                cause = str(r.cause).replace("|", "/") or "not yet explained"
                index.append(f"| {r.table} | {r.metric} | {r.method} | {r.dataset} | {r.param} | {r.ours_mean:.4f} | "
                             f"{r.paper_mean:.4f} | {r.diff:+.4f} | {cause} |")
        atomic_write_text(root / "README.md", "\n".join(index) + "\n")
    return frames


def _deviations(manifest: Manifest, frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    for frame in frames.values():
        big = frame[(frame["status"] == "compared") & (frame["abs_diff"] > DEVIATION)]
        rows.append(big)
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    return out.sort_values("abs_diff", ascending=False, kind="stable")


def paper_counts(assembled: dict[str, tuple[Manifest, dict]]) -> tuple[dict[str, Counts | str], Counts]:
    """Per paper its counts (or the reason it was not assembled), and the total over the assembled papers."""
    per_paper, total = {}, Counts()
    for paper, (_, frames) in assembled.items():
        if isinstance(frames, str):
            per_paper[paper] = frames
            continue
        per_paper[paper] = Counts()
        for frame in frames.values():
            per_paper[paper].add(frame)
        total.merge(per_paper[paper])
    return per_paper, total


def scorecard_markdown(assembled: dict[str, tuple[Manifest, dict]]) -> str:
    per_paper, total = paper_counts(assembled)
    head = "| result cells | computed | compared | within tolerance | mean abs. diff |"
    lines = ["# Reproduction scorecard", "",
             "Written by `ensclust reproduce` from the experiment folders under `results/` and the papers' tables; "
             "never edited by hand. Result cells: every number the paper prints in a result table. Computed: "
             "we have the cell (on the paper's data set, a substitute, or a run time). Compared: computed on the "
             f"paper's data set. Within tolerance: |ours - paper| <= the paper's std, or <= {DEFAULT_TOLERANCE} "
             "where it prints none (percentages are of all result cells). Run-time cells count as computed, never "
             "as within (hardware differs). The assembled tables, with provenance marks, are in "
             "[papers/](papers/).", "",
             "| paper " + head, "|---|---|---|---|---|---|"]
    for paper, c in per_paper.items():
        if isinstance(c, Counts):
            lines.append(f"| [{paper}](papers/{paper}/README.md) | " + " | ".join(c.row()) + " |")
    lines.append("| **all** | " + " | ".join(total.row()) + " |")
    for paper, (manifest, frames) in assembled.items():
        if isinstance(frames, str):
            lines += ["", f"## {manifest.title}", "", f"Not assembled: {frames}"]
            continue
        lines += ["", f"## {manifest.title}", "", "| table " + head, "|---|---|---|---|---|---|"]
        for spec in manifest.tables:
            c = Counts().add(frames[spec.table])
            lines.append(f"| [{spec.title}](papers/{paper}/{spec.table}.md) | " + " | ".join(c.row()) + " |")
        dev = _deviations(manifest, frames)
        if len(dev):
            kinds = dev["cause_kind"].value_counts()
            recorded, setting, pool, draw, spread = (int(kinds.get(k, 0)) for k in EXPLAINED_KINDS)
            open_cells = dev[~dev["cause_kind"].isin(EXPLAINED_KINDS)]
            unexplained = len(open_cells)
            lines += ["", f"Deviations above {DEVIATION}: {len(dev)} cells ({recorded} with a recorded cause, "
                      f"{setting} put down to the setting: our own parameter grid brackets the paper's value, "
                      f"{pool} to the pool: the {manifest.base_row or 'base'} row itself deviates by more "
                      f"than {POOL_DEVIATION} on that data set and metric, {draw} to the pool draw: other draws "
                      f"of our generated pool bracket the paper's value, {spread} within the run-to-run "
                      f"spread: t-test p >= {SPREAD_P} between our runs and the paper's mean ± std over its "
                      f"{manifest.repetitions} (Welch), or its number where it prints no std (one-sample); "
                      f"{unexplained} unexplained); the {min(LARGEST_SHOWN, len(dev))} largest:", "",
                      "| table | metric | method | data set | ours | paper | diff | known cause |",
                      "|---|---|---|---|---|---|---|---|"]
            for r in dev.head(LARGEST_SHOWN).itertuples(index=False):
                cause = str(r.cause).replace("|", "/") or "not yet explained"
                lines.append(f"| {r.table} | {r.metric} | {r.method} | {r.dataset} | {r.ours_mean:.4f} | "
                             f"{r.paper_mean:.4f} | {r.diff:+.4f} | {cause} |")
            if unexplained:
                # the to-do list of the fidelity work: every deviation without a cause, not only the largest
                lines += ["", f"Not yet explained ({len(open_cells)}):", "",
                          "| table | metric | method | data set | ours | paper | diff | source | checked |",
                          "|---|---|---|---|---|---|---|---|---|"]
                for r in open_cells.itertuples(index=False):
                    lines.append(f"| {r.table} | {r.metric} | {r.method} | {r.dataset} | {r.ours_mean:.4f} | "
                                 f"{r.paper_mean:.4f} | {r.diff:+.4f} | {r.source} | {r.reason or '-'} |")
    return "\n".join(lines) + "\n"


def status_totals(assembled: dict[str, tuple[Manifest, dict]]) -> list[str]:
    """One line per paper and one for all: the scorecard's totals."""
    per_paper, total = paper_counts(assembled)
    out = [f"{paper:<6} not assembled: {c}" if isinstance(c, str) else _status_line(paper, c)
           for paper, c in per_paper.items()]
    return out + [_status_line("all", total)]


def _status_line(name: str, c: Counts) -> str:
    cells, computed, compared, within, diff = c.row()
    return (f"{name:<6} {cells:>5} result cells, {computed:>11} computed, {compared:>5} compared, "
            f"{within:>11} within tolerance, mean abs. diff {diff}")


def assemble_all(papers: list[str], results_root="results", write=True) -> dict[str, tuple[Manifest, dict]]:
    """Assemble the papers' tables and (when all papers are assembled and ``write``) the scorecard."""
    assembled, cache = {}, {}
    for paper in papers:
        manifest = load_manifest(paper)
        try:
            assembled[paper] = (manifest, assemble_paper(manifest, results_root, write=write, cache=cache))
        except UserError as exc:  # e.g. the paper tables are not on this machine: say so, go on
            assembled[paper] = (manifest, str(exc))
    return assembled


def write_scorecard(results_root="results") -> tuple[Path, dict]:
    """Assemble every paper and write ``REPRODUCTION.md`` (the scorecard covers all papers, always);
    returns its path and the assembled papers."""
    assembled = assemble_all(available_papers(), results_root, write=True)
    path = Path(results_root) / "REPRODUCTION.md"
    atomic_write_text(path, scorecard_markdown(assembled))
    return path, assembled


# -- running ---------------------------------------------------------------------------------------------------
@dataclass
class PlannedConfig:
    name: str
    config: object  # ExperimentConfig


def plan_configs(manifests: list[Manifest], tier: str, table: str | None = None) -> list[PlannedConfig]:
    """The configs behind the manifests' tables in ``tier`` (each once), loaded and validated."""
    from ensclust.experiment.config import load_config
    from ensclust.papers.manifest import config_path

    origin = {n: m.origin for m in manifests for n in m.configs(tier, table)}
    return [PlannedConfig(n, load_config(config_path(n, origin[n]))) for n in origin]


def estimates(plan: list[PlannedConfig], results_root="results", from_scratch: bool = False):
    from ensclust.papers.cost import CostModel, estimate_config

    model = CostModel(results_root)
    return [estimate_config(p.config, results_root, model, from_scratch) for p in plan]


#: how many methods the dry run's "largest by method" line names
DRY_RUN_TOP_METHODS = 8


def dry_run_lines(plan: list[PlannedConfig], results_root="results", from_scratch: bool = False) -> list[str]:
    """Per config and in total: planned / finished / pending fits and the estimated CPU time (no run starts).

    ``from_scratch``: the estimate covers every planned fit (the "priced" column), not only the pending ones.
    """
    from ensclust.papers.cost import ESTIMATE_SOURCES, format_seconds

    lines = [f"{'config':<36} {'planned':>8} {'finished':>9} {'pending':>8} {'est. CPU':>9}  estimate from"]
    if from_scratch:
        lines[0] = lines[0].replace(" pending", "  priced") + " (from scratch: every planned fit)"
    total = {"planned": 0, "finished": 0, "pending": 0, "seconds": 0.0, "unknown": 0}
    by_source = defaultdict(float)  # estimate source -> CPU seconds over every config
    by_method = defaultdict(float)  # registry name -> CPU seconds over every config
    for est in estimates(plan, results_root, from_scratch):
        basis = ", ".join(f"{est.cells[k]} {k}" for k in ESTIMATE_SOURCES if est.cells.get(k))
        lines.append(f"{est.config:<36} {est.planned:>8} {est.finished:>9} {est.pending:>8} "
                     f"{format_seconds(est.total_s):>9}  {basis or '-'}")
        for key, value in (("planned", est.planned), ("finished", est.finished), ("pending", est.pending),
                           ("seconds", est.total_s), ("unknown", est.unknown)):
            total[key] += value
        for source, seconds in est.seconds.items():
            by_source[source] += seconds
        for name, seconds in est.by_method.items():
            by_method[name] += seconds
    unknown = f" (+ {total['unknown']} fits with no estimate)" if total["unknown"] else ""
    if by_source["recorded-wall"]:  # old records: wall time under load, often of older code - an upper bound
        unknown += f" ({format_seconds(by_source['recorded-wall'])} of it from wall-time-only records)"
    if by_source["model"]:  # extrapolated from other sizes: the cost of a solve on microclusters follows the pool,
        # not n and m alone (RSEC on an EC-CMS pool: 666 s measured against 42 s from the law), so say how much
        unknown += f" ({format_seconds(by_source['model'])} of it from the power-law model, no fit of that row yet)"
    # where the time goes: the methods that carry most of the estimate (the speed work's targets)
    largest = sorted(by_method.items(), key=lambda item: -item[1])[:DRY_RUN_TOP_METHODS]
    if largest:
        lines.append("largest by method: " + ", ".join(f"{name} {format_seconds(sec)}" for name, sec in largest))
    lines.append(f"{'total (' + str(len(plan)) + ' configs)':<36} {total['planned']:>8} {total['finished']:>9} "
                 f"{total['pending']:>8} {format_seconds(total['seconds']):>9}{unknown}")
    return lines


def run_configs(plan: list[PlannedConfig], results_root="results", *, jobs=1, executor="local", scheduler=None,
                data_dir=None, quiet=False, echo=print) -> list[tuple[str, str]]:
    """Run the configs, cheapest pending work first, and compare each with its paper tables.

    Returns (config name, reason) for each config that could not run (e.g. its data is missing: reported and
    skipped) or whose run left failed cells that were not failed before it (cells a committed result already
    records as failed, with their reason, do not count: rerunning the tier must not fail on them).
    """
    from ensclust.errors import UserError
    from ensclust.experiment.compare import run_compare
    from ensclust.experiment.config import compare_targets
    from ensclust.experiment.runner import run_experiment

    order = sorted(zip(plan, estimates(plan, results_root), strict=True), key=lambda pe: pe[1].total_s)
    failures = []
    for p, est in order:
        if not quiet:
            echo(f"== {p.name}: {est.pending} of {est.planned} fits to run")
        before = _failed_cells(Path(results_root) / p.config.name)
        try:
            root = run_experiment(p.config, results_root=results_root, jobs=jobs, executor=executor,
                                  scheduler=scheduler, data_dir=data_dir, quiet=True if quiet else False)
            if compare_targets(p.config):
                run_compare(root)
        except UserError as exc:
            failures.append((p.name, str(exc)))
            continue
        new = {key: error for key, error in _failed_cells(root).items() if key not in before}
        if new:
            (dataset, method, _, rep), error = next(iter(new.items()))
            failures.append((p.name, f"{len(new)} cells failed in this run; first: {dataset}/{method} rep {rep}: "
                                     f"{error}"))
    return failures


def _failed_cells(root: Path) -> dict[tuple, str]:
    """(dataset, method, point, rep) -> error of the failed cells recorded in ``root``/cells.csv (none if absent)."""
    if not (root / "cells.csv").exists():
        return {}
    cells = ResultStore(root).load_cells()
    failed = cells[cells["status"] != "ok"]
    return {(r.dataset, r.method, int(r.point), int(r.rep)): str(r.error) for r in failed.itertuples(index=False)}


# -- a user's method in a paper's table ------------------------------------------------------------------------
WITH_SEPARATOR = "--with-"


def with_method_configs(manifest: Manifest, spec, tier: str, method: str, params: dict, label: str | None
                        ) -> list[PlannedConfig]:
    """One config per source of the table (in ``tier``) with the same data sets, pools, draws, repetitions,
    metrics and seed, whose only row is ``method``: it runs under exactly the table's protocol."""
    import yaml

    from ensclust.experiment.config import load_config_text, load_document
    from ensclust.experiment.store import slug
    from ensclust.papers.manifest import config_path

    label = label or method.rsplit(":", 1)[-1]
    planned = []
    for name in dict.fromkeys(s.config for s in spec.sources if s.in_tier(tier)):
        path = config_path(name, manifest.origin)
        data = dict(load_document(path).data)
        data["name"] = f"{name}{WITH_SEPARATOR}{slug(label)}"
        data["methods"] = [{"name": method, "label": label, "params": params}]
        data["description"] = f"{label} under the protocol of {name} (ensclust reproduce --with)"
        config = load_config_text(yaml.safe_dump(data, sort_keys=False), f"{path} (--with {method})")
        planned.append(PlannedConfig(config.name, config))
    if not planned:
        raise UserError(f"table {spec.table} has no source config in the {tier} tier")
    return planned


def with_rows(manifest: Manifest, spec, plan: list[PlannedConfig], results_root="results") -> pd.DataFrame:
    """The row of the --with method: per paper column, its cell under the first source that has it, with the
    dagger of a paired t-test against the best row of that source's experiment (same repetitions)."""
    import dataclasses

    from ensclust.experiment.compare import compare
    from ensclust.experiment.report import build_tables
    from ensclust.papers.assemble import COLUMNS, is_worse, load_experiment, paper_frame

    paper = paper_frame(manifest, spec)
    label = plan[0].config.methods[0].label
    columns = paper[["table", "metric", "dataset", "param"]].drop_duplicates().assign(
        method=label, mean="", std="", bold="")
    found: dict[int, dict] = {}
    for p in plan:
        base_name = p.name.split(WITH_SEPARATOR)[0]
        source = next(s for s in spec.sources if s.config == base_name)
        mine = load_experiment(results_root, p.name)
        base = load_experiment(results_root, base_name)
        if mine is None:
            continue
        config, cells = mine[0], mine[1]
        if base is not None:  # test against the source's rows: same ensembles, paired by repetition
            config = dataclasses.replace(base[0], methods=base[0].methods + mine[0].methods)
            cells = pd.concat([base[1], mine[1]], ignore_index=True)
        tables = build_tables(config, cells)
        frame = columns.copy()
        if source.substitute:
            frame["dataset"] = frame["dataset"].replace(source.substitute)
        result = compare(config, cells, frame, None, tables=tables)
        for i, (_, row) in enumerate(result.iterrows()):
            if i in found or row["ours_label"] != label:
                continue
            found[i] = {"ours_mean": row["ours_mean"], "ours_std": row["ours_std"], "ours_n": row["ours_n"],
                        "worse": is_worse(tables, row), "source": p.name,
                        "marks": "s" if columns.iloc[i]["dataset"] in source.substitute else ""}
    out = []
    for i, c in enumerate(columns.itertuples(index=False)):
        rec = dict.fromkeys(COLUMNS, "")
        rec.update(table=c.table, metric=c.metric, method=f"{label} (yours)", dataset=c.dataset, param=c.param,
                   paper_mean=math.nan, paper_std=math.nan, ours_mean=math.nan, ours_std=math.nan, ours_n=0,
                   diff=math.nan, abs_diff=math.nan, tolerance=math.nan, worse=False, status="missing",
                   reason="not run")
        if i in found:
            rec.update(found[i], status="ours only", reason="")
        out.append(rec)
    return pd.DataFrame(out, columns=COLUMNS)


def write_with_table(manifest: Manifest, spec, plan: list[PlannedConfig], results_root="results") -> Path:
    """The assembled table with the --with method's row added: papers/<paper>/<table>--with-<label>.*"""
    from ensclust.papers.assemble import assemble_table, table_latex, table_markdown

    base = assemble_table(manifest, spec, results_root)
    frame = pd.concat([base, with_rows(manifest, spec, plan, results_root)], ignore_index=True)
    stem = plan[0].name.split(WITH_SEPARATOR)[1]
    root = Path(results_root) / "papers" / manifest.paper
    atomic_write_text(root / f"{spec.table}{WITH_SEPARATOR}{stem}.csv", frame.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(root / f"{spec.table}{WITH_SEPARATOR}{stem}.tex", table_latex(manifest, spec, frame))
    path = root / f"{spec.table}{WITH_SEPARATOR}{stem}.md"
    atomic_write_text(path, table_markdown(manifest, spec, frame))
    return path


def check_against(plan: list[PlannedConfig], results_root, reference_root) -> tuple[list[str], bool]:
    """Compare each config's cells.csv with the one under ``reference_root`` (e.g. the committed results):
    (one line per config, whether all that have a reference are byte-identical)."""
    lines, same = [], True
    for p in plan:
        ours, ref = Path(results_root) / p.name / "cells.csv", Path(reference_root) / p.name / "cells.csv"
        if not ref.exists() or not ours.exists():
            lines.append(f"{p.name}: {'no reference' if not ref.exists() else 'not run'}")
            continue
        a, b = ours.read_bytes(), ref.read_bytes()
        if a == b:
            lines.append(f"{p.name}: cells.csv identical to {ref}")
            continue
        same = False
        rows_a, rows_b = a.decode().splitlines(), set(b.decode().splitlines())
        differing = sum(1 for row in rows_a[1:] if row not in rows_b)
        lines.append(f"{p.name}: cells.csv DIFFERS from {ref} ({differing} of {len(rows_a) - 1} rows not in it)")
    return lines, same

"""Paper manifests: which experiment configs make up each table of a paper, in which tier.

One YAML file per paper in ``ensclust/papers/manifests/`` (package data)::

    paper: acmk                      # the name used on the command line
    title: ...                       # the paper, as cited in the scorecard
    paper_tables: acmk               # folder of the paper's table CSVs (../shared/paper_tables/<folder>)
    repetitions: 10                  # repetitions behind each of the paper's cells (fewer are marked)
    authors_pools: [Ecoli, ...]      # paper dataset names the authors published pools for (a generated pool
                                     # there is marked)
    tables:
      - table: table2_acc            # the paper table CSV's stem
        title: "Table 2: ACC ..."
        columns: [...]               # optional: column order when the CSV's order is not the paper's
        columns_from: param          # optional: the paper's columns are the values of `param` (e.g. RCEC's
                                     # feature ratios), not data sets
        offsets: {marker: "offset vs default", reference: "absolute value at default"}
                                     # optional: cells printed as offsets from a reference setting
        sources:                     # in order of preference: the first that has a cell gives it
          - config: acmk_small       # ensclust/configs/paper/<config>.yaml, results in results/<config>/
            tier: quick              # quick (also in full) or full (default)
            protocol: "..."          # how it departs from the paper's protocol (printed in the caption)
            substitute: {Lung: lung_discrete}   # paper dataset -> our column: a substitute data set
        sensitivity: [eccms_table6_grid]   # optional: as the paper-wide list below, for this table's rows only
                                     # (rows of the same label mean another thing in another table)
    causes:                          # known causes of deviations, quoted by the scorecard
      - {table: table2_acc, dataset: Yale, method: "*", cause: "..."}   # optional metric: NMI (default "*")
    sensitivity: [acmk_sensitivity]  # optional: configs that run rows over parameter grids; a deviation that
                                     # their grid brackets is put down to the setting (scorecard)
    pool_draws: [awec_pool_draws]    # optional: configs that rerun rows on other draws (pool `seed`) or
                                     # readings of a generated pool; a deviation that the other draws of the
                                     # same spec bracket is put down to the pool draw (scorecard)
    base_row: KM-avg                 # optional: the paper's row of the mean base K-means score; where ours
                                     # differs from it by more than 0.05 (same data set and metric), the
                                     # other rows' deviations there are attributed to the pool (scorecard)

A table without a paper CSV (the SPCE paper prints none) lists ``rows``, ``columns`` and ``metric``
instead of relying on the CSV, and its cells are ours only.

Further manifests (a protocol of your own, laid out the same way) are read from the folders in
``$ENSCLUST_MANIFESTS`` (separated by ``os.pathsep``); their configs are looked up beside the manifest first.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from ensclust.errors import UserError, unknown_name_error

TIERS = ("quick", "full")
PAPERS = ("acmk", "awec", "eccms", "rcec", "spce")
_TOP_KEYS = ("paper", "title", "paper_tables", "repetitions", "authors_pools", "tables", "causes", "base_row",
             "sensitivity", "pool_draws")
_TABLE_KEYS = ("table", "title", "columns", "columns_from", "rows", "metric", "sources", "notes", "offsets",
               "sensitivity")
_SOURCE_KEYS = ("config", "tier", "protocol", "substitute")
_CAUSE_KEYS = ("table", "dataset", "method", "metric", "cause")


@dataclass(frozen=True)
class Source:
    config: str
    tier: str = "full"
    protocol: str = ""
    substitute: dict = field(default_factory=dict)  # paper dataset name -> our column label

    def in_tier(self, tier: str) -> bool:
        return tier == "full" or self.tier == "quick"


@dataclass
class TableSpec:
    table: str
    title: str
    sources: list
    columns: list | None = None
    rows: list | None = None
    metric: str | None = None
    notes: str = ""
    columns_from: str = "dataset"  # or "param"
    offsets: dict | None = None  # {marker, reference}: cells printed as offsets from a reference setting
    sensitivity: list = field(default_factory=list)  # grids for this table's rows only (before the paper's)

    @property
    def has_paper_csv(self) -> bool:
        return self.rows is None


@dataclass(frozen=True)
class Cause:
    cause: str
    table: str = "*"
    dataset: str = "*"
    method: str = "*"
    metric: str = "*"

    def matches(self, table: str, dataset: str, method: str, metric: str = "") -> bool:
        pairs = ((table, self.table), (dataset, self.dataset), (method, self.method), (metric, self.metric))
        return all(fnmatch.fnmatchcase(str(value).lower(), pattern.lower()) for value, pattern in pairs)


@dataclass
class Manifest:
    paper: str
    title: str
    paper_tables: str
    repetitions: int
    tables: list
    authors_pools: list = field(default_factory=list)
    causes: list = field(default_factory=list)
    base_row: str = ""  # the paper's base K-means row (mean member score), "" when it has none
    sensitivity: list = field(default_factory=list)  # configs running rows over parameter grids
    pool_draws: list = field(default_factory=list)  # configs rerunning rows on other draws of generated pools
    origin: Path | None = None  # the folder of a manifest from $ENSCLUST_MANIFESTS (its configs live there)

    def table(self, key: str) -> TableSpec:
        """A table by its CSV stem, or by a short name: '2', 'table2', 'IV'."""
        key = str(key).strip().lower()
        for t in self.tables:
            stem = t.table.lower()
            if key in (stem, stem.split("_")[0], stem.split("_")[0].removeprefix("table")):
                return t
        raise unknown_name_error(f"table of paper '{self.paper}'", key, [t.table for t in self.tables],
                                 "--table")

    def configs(self, tier: str, table: str | None = None) -> list[str]:
        """The configs of ``tier`` (of one table when given), each once, in manifest order; the whole paper's
        full tier ends with its ``sensitivity`` and ``pool_draws`` configs (they explain deviations of every
        table)."""
        tables = [self.table(table)] if table else self.tables
        names = [s.config for t in tables for s in t.sources if s.in_tier(tier)]
        if not table and tier == "full":
            names += [c for t in tables for c in t.sensitivity] + self.sensitivity + self.pool_draws
        return list(dict.fromkeys(names))

    def cause_of(self, table: str, dataset: str, method: str, metric: str = "") -> str:
        for c in self.causes:
            if c.matches(table, dataset, method, metric):
                return c.cause
        return ""


def _check_keys(data, allowed, where: str) -> dict:
    if not isinstance(data, dict):
        raise UserError(f"{where}: must be a mapping, got {type(data).__name__}")
    for key in data:
        if key not in allowed:
            raise unknown_name_error("key", key, allowed, where)
    return data


def parse_manifest(data: dict, where: str) -> Manifest:
    """Validate a manifest document (one-line UserErrors naming the file and entry)."""
    _check_keys(data, _TOP_KEYS, where)
    for key in ("paper", "title", "tables"):
        if key not in data:
            raise UserError(f"{where}: missing required key '{key}'")
    tables = []
    for i, t in enumerate(data["tables"] or []):
        tw = f"{where}: tables[{i}]"
        _check_keys(t, _TABLE_KEYS, tw)
        sources = []
        for j, s in enumerate(t.get("sources") or []):
            sw = f"{tw}.sources[{j}]"
            s = {"config": s} if isinstance(s, str) else s
            _check_keys(s, _SOURCE_KEYS, sw)
            tier = s.get("tier", "full")
            if tier not in TIERS:
                raise unknown_name_error("tier", tier, TIERS, sw)
            sources.append(Source(config=str(s["config"]), tier=tier, protocol=str(s.get("protocol") or ""),
                                  substitute=dict(s.get("substitute") or {})))
        if t.get("columns_from", "dataset") not in ("dataset", "param"):
            raise UserError(f"{tw}: columns_from must be 'dataset' or 'param', got {t['columns_from']!r}")
        if ("rows" in t) != ("metric" in t):
            raise UserError(f"{tw}: a table without a paper CSV needs both 'rows' and 'metric'")
        tables.append(TableSpec(table=str(t["table"]), title=str(t.get("title") or t["table"]), sources=sources,
                                columns=t.get("columns"), rows=t.get("rows"), metric=t.get("metric"),
                                notes=str(t.get("notes") or ""), columns_from=t.get("columns_from", "dataset"),
                                offsets=t.get("offsets"),
                                sensitivity=[str(c) for c in t.get("sensitivity") or []]))
    causes = [Cause(**_check_keys(c, _CAUSE_KEYS, f"{where}: causes[{i}]"))
              for i, c in enumerate(data.get("causes") or [])]
    return Manifest(paper=str(data["paper"]), title=str(data["title"]),
                    paper_tables=str(data.get("paper_tables") or data["paper"]),
                    repetitions=int(data.get("repetitions") or 10), tables=tables,
                    authors_pools=list(data.get("authors_pools") or []), causes=causes,
                    base_row=str(data.get("base_row") or ""),
                    sensitivity=[str(c) for c in data.get("sensitivity") or []],
                    pool_draws=[str(c) for c in data.get("pool_draws") or []])


def _extra_manifests() -> dict[str, Path]:
    """Manifests in ``$ENSCLUST_MANIFESTS``: the YAML files there with top-level ``paper`` and ``tables``
    keys (the experiment configs they use may sit in the same folder)."""
    found = {}
    for folder in filter(None, os.environ.get("ENSCLUST_MANIFESTS", "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.yaml")):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError):
                data = None
            if isinstance(data, dict) and "paper" in data and "tables" in data:
                found.setdefault(path.stem.lower(), path)
    return found


def available_papers() -> list[str]:
    """The built-in papers, then the manifests found in ``$ENSCLUST_MANIFESTS``."""
    return list(PAPERS) + [p for p in _extra_manifests() if p not in PAPERS]


def load_manifest(paper: str) -> Manifest:
    """The manifest of ``paper`` (one of :func:`available_papers`)."""
    key = str(paper).lower()
    extra = _extra_manifests()
    if key in PAPERS:
        where = f"manifest {key}.yaml"
        text = resources.files("ensclust.papers").joinpath("manifests", f"{key}.yaml").read_text(encoding="utf-8")
    elif key in extra:
        where = str(extra[key])
        text = extra[key].read_text(encoding="utf-8")
    else:
        raise unknown_name_error("paper", paper, available_papers() + ["all"], "PAPER")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{where}: malformed YAML ({exc.__class__.__name__})") from None
    manifest = parse_manifest(data, where)
    if key not in PAPERS:
        manifest.origin = extra[key].parent
    return manifest


def config_dir() -> Path:
    """The folder of the paper configs: ``ensclust/configs/paper`` (package data, read with importlib.resources)."""
    return Path(str(resources.files("ensclust.configs").joinpath("paper")))


def config_path(name: str, origin: Path | None = None) -> Path:
    """The YAML of config ``name``: beside its manifest (``origin``) first, then in :func:`config_dir`."""
    folders = ([origin] if origin is not None else []) + [config_dir()]
    for folder in folders:
        path = Path(folder) / f"{name}.yaml"
        if path.exists():
            return path
    known = [p.stem for folder in folders for p in Path(folder).glob("*.yaml")]
    raise unknown_name_error("paper config", name, known, " or ".join(str(f) for f in folders))

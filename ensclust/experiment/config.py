"""Experiment configs (YAML): loading and validation with one-line errors naming file, line and key.

The schema is the contract in the project brief (``name``, ``seed``, ``datasets``, ``pool``, ``ensemble``,
``methods``, ``metrics``, ``nmi_average``, ``tune_metric``, ``outputs``, ``compare_to`` = one paper CSV or a
list of them). Optional keys added here (all with defaults, so paper configs need not set them):

* top level: ``std_ddof`` (1 = sample std, MATLAB's ``std``), ``decimals`` (3, digits in tables and for
  the best/second ranking), ``ttest`` (``paired`` | ``student`` | ``welch``), ``alpha`` (0.05, significance
  level), ``compare_param`` (only paper rows whose ``param`` column equals this are compared), ``data_dir``.
* dataset: ``n_clusters`` (override c), ``x_key`` / ``y_key`` (variable names in the data file),
  ``paper_dataset`` / ``paper_param`` (the paper CSV's dataset name and ``param`` value this column is
  compared with, when one paper dataset appears as several columns, e.g. RCEC's feature ratios).
* method: ``paper_method`` (row name in the paper CSV when it differs from ``label``), ``paper_param``
  (which paper row to match when the paper prints several rows of that method, e.g. fixed vs tuned),
  ``repetitions`` (run only the first r repetitions of this row, for a baseline too slow for all of them;
  its table cells then average r runs, the paired t-test uses the repetitions both rows have, and the
  tables' caption says which rows ran fewer - put it in the label too, e.g. ``ECMC (3 runs)``), ``tuned_by``
  (the label of another row with the same grid: this row reports the point that row's oracle-best-mean chose,
  e.g. ablation rows at the setting tuned for the full model).
* tuning ``each``: every grid point becomes its own table row, labelled ``Label [a=0.1, b=2]``; ``average``:
  one row, the metric averaged over the grid points in every repetition (e.g. ACMK-GF over the v bases).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ensclust.data.preprocess import PREPROCESS
from ensclust.errors import UserError, did_you_mean, unknown_name_error
from ensclust.experiment.grid import expand_grid, parse_grid
from ensclust.experiment.yamlio import Located, load_yaml, load_yaml_file
from ensclust.metrics import FIT_METRICS, METRICS, NMI_AVERAGES, label_metrics

PSEUDO_METHODS = ("km-avg", "km-best")
TUNING_POLICIES = ("fixed", "oracle-best-mean", "oracle-per-repetition", "each", "average")
DRAW_MODES = ("first", "random", "disjoint", "fresh", "randperm_stream", "randperm_per_run")
OUTPUTS = ("csv", "latex", "markdown", "png")
TTESTS = ("paired", "student", "welch")
BUILTIN_DATASETS = ("iris", "wine", "digits", "breast_cancer_sklearn", "blobs", "moons", "circles", "aniso")
DATA_SUFFIXES = (".mat", ".h5", ".hdf5", ".npz", ".csv")

TOP_KEYS = ("name", "description", "seed", "datasets", "pool", "ensemble", "methods", "metrics", "nmi_average",
            "tune_metric", "outputs", "compare_to", "std_ddof", "decimals", "ttest", "alpha", "compare_param",
            "data_dir")
DATASET_KEYS = ("name", "label", "preprocess", "params", "pool", "n_clusters", "x_key", "y_key", "paper_dataset",
                "paper_param")
# Pool keys are those the pool generators understand (one list, owned by ensclust.pools.generate).
from ensclust.pools.generate import SPEC_KEYS as _POOL_SPEC_KEYS  # noqa: E402
from ensclust.pools.generate import generator_revision  # noqa: E402

POOL_KEYS = tuple(sorted(_POOL_SPEC_KEYS))
ENSEMBLE_KEYS = ("mode", "size", "repetitions", "seed")
METHOD_KEYS = ("name", "label", "params", "grid", "tuning", "scope", "paper_method", "paper_param", "repetitions",
               "tuned_by")

DEFAULT_POOL = {"source": "generate", "generator": "kmeans", "k": "c", "size": 100, "feature_ratio": None}
DEFAULT_ENSEMBLE = {"mode": "random", "size": 20, "repetitions": 10, "seed": 1}


@dataclass
class DatasetSpec:
    label: str
    name: str | None = None
    preprocess: str = "none"
    params: dict = field(default_factory=dict)
    pool: dict = field(default_factory=dict)
    n_clusters: int | None = None
    x_key: str | None = None
    y_key: str | None = None
    paper_dataset: str | None = None
    paper_param: str | None = None
    # the pool generator's code revision (ensclust.pools.generate.GENERATOR_REVISIONS), part of the cell
    # fingerprint; saved with the config so that committed cells keep the fingerprints they were computed under
    pool_revision: int = 0


@dataclass
class MethodSpec:
    name: str
    label: str
    params: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    tuning: str = "fixed"
    scope: str = "pool"
    paper_method: str | None = None
    paper_param: str | None = None
    points: list = field(default_factory=list)  # expanded, validated parameter dicts
    repetitions: int | None = None  # None: all of the ensemble's repetitions
    revision: int = 0  # the method's code revision (ConsensusMethod.revision), part of the cell fingerprint
    tuned_by: str | None = None  # label of the row whose oracle-best-mean point this row takes (same grid)

    @property
    def is_pseudo(self) -> bool:
        return self.name in PSEUDO_METHODS


@dataclass
class ExperimentConfig:
    name: str
    datasets: list
    methods: list
    pool: dict
    ensemble: dict
    seed: int = 0
    description: str = ""
    metrics: list = field(default_factory=lambda: ["acc", "nmi", "ari"])
    nmi_average: str = "arithmetic"
    tune_metric: str = "ari"
    outputs: list = field(default_factory=lambda: ["csv", "latex", "markdown"])
    compare_to: str | list | None = None  # one paper CSV or a list of them (see compare_targets)
    std_ddof: int = 1
    decimals: int = 3
    ttest: str = "paired"
    alpha: float = 0.05
    compare_param: str | None = None
    data_dir: str | None = None
    source: str = ""  # the config file path (informational)

    def to_dict(self) -> dict:
        out = asdict(self)
        # revision 0 is implied: older experiment.json files have no such keys
        for method in out["methods"]:
            if not method["revision"]:
                del method["revision"]
            if method["tuned_by"] is None:  # older experiment.json files have no such key
                del method["tuned_by"]
        for dataset in out["datasets"]:
            if not dataset["pool_revision"]:
                del dataset["pool_revision"]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> ExperimentConfig:
        d = dict(d)
        d["datasets"] = [DatasetSpec(**x) for x in d["datasets"]]
        d["methods"] = [MethodSpec(**x) for x in d["methods"]]
        return cls(**d)

    def dataset(self, label: str) -> DatasetSpec:
        return next(ds for ds in self.datasets if ds.label == label)

    def method(self, label: str) -> MethodSpec:
        return next(m for m in self.methods if m.label == label)


# --------------------------------------------------------------------------------------------------------
def _known_datasets() -> list[str]:
    names = list(BUILTIN_DATASETS)
    try:
        from ensclust.data import list_registry
    except ImportError:
        return names
    try:
        reg = list_registry()
    except Exception:  # a broken registry is reported when the dataset is loaded
        return names
    items = reg.keys() if isinstance(reg, dict) else reg
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and "name" in item:
            names.append(str(item["name"]))
        elif hasattr(item, "name"):
            names.append(str(item.name))
    return names


class _Validator:
    def __init__(self, doc: Located):
        self.doc = doc

    def err(self, path, message) -> UserError:
        return UserError(f"{self.doc.where(tuple(path))}: {message}")

    def where(self, path) -> str:
        return self.doc.where(tuple(path))

    def mapping(self, value, path, allowed) -> dict:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise self.err(path, f"must be a mapping (key: value), got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                raise unknown_name_error("key", key, allowed, self.where(tuple(path) + (key,)))
        return value

    def choice(self, value, path, choices, kind):
        if not isinstance(value, str) or value.lower() not in choices:
            raise unknown_name_error(kind, value, choices, self.where(path))
        return value.lower()

    def integer(self, value, path, low=None, high=None) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float) or float(value) != int(value):
            raise self.err(path, f"must be an integer, got {value!r}")
        value = int(value)
        if low is not None and value < low:
            raise self.err(path, f"value {value} is out of range: must be >= {low}")
        if high is not None and value > high:
            raise self.err(path, f"value {value} is out of range: must be <= {high}")
        return value

    def string(self, value, path, allow_none=False):
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float) or str(value).strip() == "":
            raise self.err(path, f"must be a non-empty string, got {value!r}")
        return str(value)


def _slug_ok(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9_.\-]+", name) is not None


def validate_pool(v: _Validator, spec: dict, path) -> dict:
    spec = v.mapping(spec, path, POOL_KEYS)
    out = dict(spec)
    if "source" in out:
        out["source"] = v.choice(out["source"], path + ("source",), ("generate", "file"), "pool source")
    if "generator" in out:
        out["generator"] = v.choice(out["generator"], path + ("generator",), ("kmeans", "spectral"), "pool generator")
    if "size" in out and out["size"] is not None:
        out["size"] = v.integer(out["size"], path + ("size",), low=1)
    if "first" in out and out["first"] is not None:
        out["first"] = v.integer(out["first"], path + ("first",), low=1)
    if "seed" in out:  # another draw of a generated pool (default: the config's seed)
        out["seed"] = v.integer(out["seed"], path + ("seed",), low=0)
        if out.get("source", "file" if out.get("file") else "generate") == "file":
            raise v.err(path + ("seed",), "applies to generated pools only (a pool file is what it is)")
    if "k" in out:
        k = out["k"]
        if isinstance(k, str):
            if k not in ("c", "random"):
                raise v.err(path + ("k",), f"must be 'c', 'random' or a range [lo, hi], got '{k}'")
        elif isinstance(k, list):
            if len(k) != 2:
                raise v.err(path + ("k",), f"range must have two entries [lo, hi], got {k}")
            for i, part in enumerate(k):
                if isinstance(part, str):
                    if part not in ("sqrt", "c"):
                        raise v.err(path + ("k", i), f"must be an integer, 'c' or 'sqrt', got '{part}'")
                else:
                    v.integer(part, path + ("k", i), low=2)
            if all(isinstance(p, int) for p in k) and k[0] > k[1]:
                raise v.err(path + ("k",), f"range [lo, hi] needs lo <= hi, got {k}")
        else:
            v.integer(k, path + ("k",), low=2)
    if out.get("feature_ratio") is not None:
        fr = out["feature_ratio"]
        if not isinstance(fr, list) or len(fr) != 2:
            raise v.err(path + ("feature_ratio",), f"must be a range [low, high] in (0, 1], got {fr!r}")
        for i, r in enumerate(fr):
            if isinstance(r, bool) or not isinstance(r, int | float) or not 0 < r <= 1:
                raise v.err(path + ("feature_ratio", i), f"value {r!r} is out of range: must be in (0, 1]")
        if fr[0] > fr[1]:
            raise v.err(path + ("feature_ratio",), f"range [low, high] needs low <= high, got {fr}")
    return out


def _validate_dataset(v: _Validator, entry, i: int, default_pool: dict, known: list[str]) -> DatasetSpec:
    path = ("datasets", i)
    if isinstance(entry, str):
        entry = {"name": entry}
    entry = v.mapping(entry, path, DATASET_KEYS)
    name = v.string(entry.get("name"), path + ("name",), allow_none=True)
    if name is not None:
        is_path = name.lower().endswith(DATA_SUFFIXES) or "/" in name or "\\" in name
        if not is_path and name.lower() not in {k.lower() for k in known}:
            raise unknown_name_error("dataset", name, known, v.where(path + ("name",)))
    label = v.string(entry.get("label", name), path + ("label",), allow_none=True)
    pool = {**default_pool, **validate_pool(v, entry.get("pool") or {}, path + ("pool",))}
    if name is None and pool.get("source") != "file":
        raise v.err(path, "a dataset without 'name' needs a file pool (pool: {source: file, file: ...})")
    if label is None:
        label = Path(str(pool.get("file", "dataset"))).stem
    if pool.get("source") == "file" and not pool.get("file"):
        raise v.err(path + ("pool",), "pool source 'file' needs 'file: <path relative to the data dir>'")
    preprocess = v.choice(entry.get("preprocess", "none"), path + ("preprocess",), PREPROCESS, "preprocessing")
    params = v.mapping(entry.get("params") or {}, path + ("params",), list((entry.get("params") or {}).keys()))
    n_clusters = entry.get("n_clusters")
    if n_clusters is not None:
        n_clusters = v.integer(n_clusters, path + ("n_clusters",), low=2)
    return DatasetSpec(label=label, name=name, preprocess=preprocess, params=dict(params), pool=pool,
                       n_clusters=n_clusters, x_key=entry.get("x_key"), y_key=entry.get("y_key"),
                       paper_dataset=v.string(entry.get("paper_dataset"), path + ("paper_dataset",), allow_none=True),
                       paper_param=v.string(entry.get("paper_param"), path + ("paper_param",), allow_none=True),
                       pool_revision=generator_revision(pool))


def _grid_values(m: MethodSpec) -> list[tuple]:
    return [tuple(point[k] for k in m.grid) for point in m.points]


def _check_tuned_by(v, m: MethodSpec, methods: list, path: tuple) -> None:
    """``tuned_by: LABEL``: the row reports the grid point LABEL's oracle-best-mean chose (e.g. the ablation rows
    of a table at the setting tuned for the full model), so both rows need the same grid, in the same order."""
    labels = [x.label for x in methods if x.label != m.label]
    ref = next((x for x in methods if x.label == m.tuned_by and x is not m), None)
    if ref is None:
        raise unknown_name_error("row label", m.tuned_by, labels or ["(no other row)"], v.where(path))
    if m.tuning != "oracle-best-mean" or ref.tuning != "oracle-best-mean" or ref.tuned_by is not None:
        raise v.err(path, f"tuned_by needs tuning oracle-best-mean on this row and on '{ref.label}' (which must "
                    "choose its own point)")
    if list(m.grid) != list(ref.grid) or _grid_values(m) != _grid_values(ref):
        raise v.err(path, f"tuned_by needs the grid of '{ref.label}' (the same parameters and values, in order)")


def _validate_method(v: _Validator, entry, i: int) -> MethodSpec:
    from ensclust.methods import get_method_class, is_plugin_spec, method_names

    path = ("methods", i)
    if isinstance(entry, str):
        entry = {"name": entry}
    entry = v.mapping(entry, path, METHOD_KEYS)
    name = v.string(entry.get("name"), path + ("name",))
    # registered names are case-insensitive; a plug-in 'path/to/file.py:Class' or 'module:Class' is kept as written
    key = name if is_plugin_spec(name) else name.lower()
    if key not in PSEUDO_METHODS and not is_plugin_spec(key) and key not in method_names():
        raise unknown_name_error("method", name, method_names() + list(PSEUDO_METHODS), v.where(path + ("name",)))
    label = v.string(entry.get("label", name), path + ("label",))
    params = entry.get("params") or {}
    if not isinstance(params, dict):
        raise v.err(path + ("params",), "must be a mapping of parameter: value")
    if key in PSEUDO_METHODS and params:
        raise v.err(path + ("params",), f"pseudo-method '{key}' has no parameters")
    grid = entry.get("grid") or {}
    if not isinstance(grid, dict):
        raise v.err(path + ("grid",), "must be a mapping of parameter: grid")
    tuning = v.choice(entry.get("tuning", "oracle-best-mean" if grid else "fixed"), path + ("tuning",),
                      TUNING_POLICIES, "tuning policy")
    scope = "pool"
    if key in PSEUDO_METHODS:
        scope = v.choice(entry.get("scope", "pool"), path + ("scope",), ("pool", "ensemble"), "scope")
        if grid:
            raise v.err(path + ("grid",), f"pseudo-method '{key}' has no parameters to grid over")
        points = [{}]
    else:
        if "scope" in entry:
            raise v.err(path + ("scope",), "'scope' only applies to the pseudo-methods km-avg / km-best")
        cls = get_method_class(key, where=v.where(path + ("name",)))
        params = _declared_names(v, cls, params, path + ("params",))
        grid = _declared_names(v, cls, grid, path + ("grid",))
        for pname in list(params) + list(grid):
            if pname not in cls.params:
                raise unknown_name_error(f"parameter for method '{key}'", pname, list(cls.params) or
                                         ["(this method has no parameters)"],
                                         v.where(path + (("grid" if pname in grid else "params"), pname)))
        for pname in grid:
            if pname in params:
                raise v.err(path + ("grid", pname), f"parameter '{pname}' is both fixed (params) and gridded")
            values = parse_grid(grid[pname], v.where(path + ("grid", pname)))
            for value in values:
                cls.params[pname].validate(pname, value, v.where(path + ("grid", pname)))
        if grid and tuning == "fixed":
            raise v.err(path + ("tuning",), "a grid needs tuning oracle-best-mean, oracle-per-repetition, "
                        "each or average (or use 'ensclust sweep'); fixed means the declared values only")
        for pname, value in params.items():
            cls.params[pname].validate(pname, value, v.where(path + ("params", pname)))
        cls.check_params(params, where=v.where(path + ("params",)))
        points = []
        for point in expand_grid(grid, params, v.where(path + ("grid",))):
            full = cls.check_params(point, where=v.where(path + ("grid",) if grid else path + ("params",)))
            # keep only the declared (non-default-filled) values, validated/converted
            points.append({k: full[k] for k in point})
    return MethodSpec(name=key, label=label, params=dict(params), grid={k: grid[k] for k in grid},
                      tuning=tuning, scope=scope,
                      paper_method=v.string(entry.get("paper_method"), path + ("paper_method",), allow_none=True),
                      paper_param=v.string(entry.get("paper_param"), path + ("paper_param",), allow_none=True),
                      points=points,
                      repetitions=(None if entry.get("repetitions") is None
                                   else v.integer(entry["repetitions"], path + ("repetitions",), low=1)),
                      tuned_by=v.string(entry.get("tuned_by"), path + ("tuned_by",), allow_none=True),
                      revision=0 if key in PSEUDO_METHODS else int(cls.revision))


def _declared_names(v: _Validator, cls, values: dict, path) -> dict:
    """Parameters under their declared names: ``lambda_`` (the Python spelling) is read as ``lambda``."""
    out = {}
    for pname, value in values.items():
        declared = cls.declared_name(str(pname))
        if declared in out:
            raise v.err(path + (pname,), f"parameter '{declared}' is given twice (as '{declared}' and '{pname}')")
        out[declared] = value
    return out


def _validate_compare_to(v: _Validator, value):
    """``compare_to``: one paper CSV path or a non-empty list of them, with distinct file-name stems.

    A string stays a string (experiment.json of existing runs is unchanged); a list stays a list. The stems
    must differ because each listed table's comparison is written to ``comparison_<stem>.csv``.
    """
    if value is None:
        return None

    def path_string(item, path):
        if not isinstance(item, str) or not item.strip():
            raise v.err(path, f"must be a paper table CSV path (a non-empty string), got {item!r}")
        return item

    if not isinstance(value, list):
        return path_string(value, ("compare_to",))
    if not value:
        raise v.err(("compare_to",), "must be a paper table CSV path or a non-empty list of them")
    items = [path_string(item, ("compare_to", i)) for i, item in enumerate(value)]
    seen = {}
    for i, item in enumerate(items):
        stem = Path(item).stem
        if stem in seen:
            raise v.err(("compare_to", i), f"file name stem '{stem}' repeats compare_to[{seen[stem]}] (each "
                                           f"table's comparison is written to comparison_<stem>.csv)")
        seen[stem] = i
    return items


def compare_targets(config: ExperimentConfig) -> list[str]:
    """The paper tables a config compares with, as a list (empty when it has no ``compare_to``)."""
    if not config.compare_to:
        return []
    return [config.compare_to] if isinstance(config.compare_to, str) else list(config.compare_to)


def validate_config(doc: Located) -> ExperimentConfig:
    """Validate a parsed document and build the :class:`ExperimentConfig` (raises one-line UserErrors)."""
    v = _Validator(doc)
    top = v.mapping(doc.data, (), TOP_KEYS)
    for required in ("name", "datasets", "methods"):
        if required not in top:
            raise v.err((), f"missing required key '{required}'")
    name = v.string(top["name"], ("name",))
    if not _slug_ok(name):
        raise v.err(("name",), f"'{name}' must use only letters, digits, '_', '-' and '.' (it names a folder)")
    seed = v.integer(top.get("seed", 0), ("seed",), low=0)
    pool = {**DEFAULT_POOL, **validate_pool(v, top.get("pool") or {}, ("pool",))}

    ens = {**DEFAULT_ENSEMBLE, **v.mapping(top.get("ensemble") or {}, ("ensemble",), ENSEMBLE_KEYS)}
    ens["mode"] = v.choice(ens["mode"], ("ensemble", "mode"), DRAW_MODES, "ensemble mode")
    ens["size"] = v.integer(ens["size"], ("ensemble", "size"), low=1)
    ens["repetitions"] = v.integer(ens["repetitions"], ("ensemble", "repetitions"), low=1)
    ens["seed"] = v.integer(ens["seed"], ("ensemble", "seed"), low=0)

    if not isinstance(top["datasets"], list) or not top["datasets"]:
        raise v.err(("datasets",), "must be a non-empty list")
    known = _known_datasets()
    datasets = [_validate_dataset(v, entry, i, pool, known) for i, entry in enumerate(top["datasets"])]
    seen: dict[str, int] = {}
    for i, ds in enumerate(datasets):
        if ds.label in seen:
            raise v.err(("datasets", i, "label"), f"duplicate dataset label '{ds.label}' (also datasets[{seen[ds.label]}])")
        seen[ds.label] = i
        psize = ds.pool.get("size")
        if ds.pool.get("source") == "generate" and psize is not None:
            need = ens["size"] * ens["repetitions"] if ens["mode"] in ("disjoint", "fresh") else ens["size"]
            if psize < need:
                raise v.err(("datasets", i, "pool") if "pool" in (top["datasets"][i] or {}) else ("pool", "size"),
                            f"pool size {psize} is too small for ensemble mode '{ens['mode']}' with size "
                            f"{ens['size']} x {ens['repetitions']} repetitions (needs >= {need})")

    if not isinstance(top["methods"], list) or not top["methods"]:
        raise v.err(("methods",), "must be a non-empty list")
    methods = [_validate_method(v, entry, i) for i, entry in enumerate(top["methods"])]
    seen = {}
    for i, m in enumerate(methods):
        if m.label in seen:
            raise v.err(("methods", i, "label"), f"duplicate method label '{m.label}' (also methods[{seen[m.label]}]);"
                        " give each row its own label (use paper_method to match the paper's row name)")
        seen[m.label] = i
    for i, m in enumerate(methods):
        if m.tuned_by is not None:
            _check_tuned_by(v, m, methods, ("methods", i, "tuned_by"))

    metrics = top.get("metrics", ["acc", "nmi", "ari"])
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, list) or not metrics:
        raise v.err(("metrics",), "must be a non-empty list of metric names")
    known = tuple(METRICS) + tuple(FIT_METRICS)
    metrics = [v.choice(m, ("metrics", i), known, "metric") for i, m in enumerate(metrics)]
    nmi_average = v.choice(top.get("nmi_average", "arithmetic"), ("nmi_average",), NMI_AVERAGES,
                           "NMI normalisation")
    tune_metric = top.get("tune_metric", metrics[0])
    tune_metric = v.choice(tune_metric, ("tune_metric",), tuple(label_metrics(metrics)) + ("per-metric",),
                           "tune metric (must be one of the listed label metrics or per-metric)")
    outputs = top.get("outputs", ["csv", "latex", "markdown"])
    if isinstance(outputs, str):
        outputs = [outputs]
    outputs = [v.choice(o, ("outputs", i), OUTPUTS, "output format") for i, o in enumerate(outputs)]
    std_ddof = v.integer(top.get("std_ddof", 1), ("std_ddof",), low=0, high=1)
    decimals = v.integer(top.get("decimals", 3), ("decimals",), low=1, high=8)
    ttest = v.choice(top.get("ttest", "paired"), ("ttest",), TTESTS, "t-test")
    alpha = top.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise v.err(("alpha",), f"value {alpha!r} is out of range: must be in (0, 1)")
    return ExperimentConfig(
        name=name, description=str(top.get("description", "") or ""), seed=seed, datasets=datasets,
        methods=methods, pool=pool, ensemble=ens, metrics=metrics, nmi_average=nmi_average,
        tune_metric=tune_metric, outputs=outputs,
        compare_to=_validate_compare_to(v, top.get("compare_to")),
        std_ddof=std_ddof, decimals=decimals, ttest=ttest, alpha=float(alpha),
        compare_param=v.string(top.get("compare_param"), ("compare_param",), allow_none=True),
        data_dir=v.string(top.get("data_dir"), ("data_dir",), allow_none=True),
        source=doc.file,
    )


def load_config(path) -> ExperimentConfig:
    """Read and validate an experiment YAML file (following its ``extends`` chain, see :func:`load_document`)."""
    return validate_config(load_document(path))


def load_document(path, _chain: tuple = ()) -> Located:
    """An experiment YAML file, merged with the config it ``extends``.

    ``extends: NAME`` (a packaged config such as ``acmk_text``) or ``extends: PATH.yaml`` (relative to the
    extending file) takes every top-level key of that config that the extending file does not set; a key the
    file sets replaces the base's whole value (no deep merge: a ``datasets`` or ``pool`` entry is restated in
    full, so a config reads the same however its base changes inside a key). The extending file must set its
    own ``name`` (the results folder). Bases may extend further; a cycle is an error. Error messages name the
    file and line where the offending value was written.
    """
    path = Path(path)
    doc = load_yaml_file(path)
    data = doc.data
    if not isinstance(data, dict) or "extends" not in data:
        return doc
    where = doc.where(("extends",))
    ref = data["extends"]
    if not isinstance(ref, str) or not ref.strip():
        raise UserError(f"{where}: must name a config: a packaged config's name or a YAML file relative to this one")
    if "name" not in data:
        raise UserError(f"{doc.where(())}: a config that extends another must set its own 'name' "
                        "(it names the results folder)")
    base_path = _base_config_path(ref.strip(), path.parent, where)
    chain = _chain + (path.resolve(),)
    if base_path.resolve() in chain:
        names = " -> ".join(p.stem for p in chain + (base_path.resolve(),))
        raise UserError(f"{where}: 'extends' makes a cycle ({names})")
    base = load_document(base_path, chain)
    if not isinstance(base.data, dict):
        raise UserError(f"{base.file}: the config extended by {path} must be a mapping of keys")
    merged, lines, files = {}, {(): doc.lines.get(())}, {}
    for key, value in base.data.items():
        if key not in data:
            merged[key] = value
            files[key] = base.file_of(key)
            lines.update((p, line) for p, line in base.lines.items() if p and p[0] == key)
    for key, value in data.items():
        if key != "extends":
            merged[key] = value
            lines.update((p, line) for p, line in doc.lines.items() if p and p[0] == key)
    return Located(data=merged, file=doc.file, lines=lines, files=files)


def _base_config_path(ref: str, folder: Path, where: str) -> Path:
    """The file named by an ``extends`` value: a YAML path relative to ``folder``, else a packaged config."""
    from ensclust.configs import packaged_config, packaged_names

    if ref.endswith((".yaml", ".yml")) or "/" in ref:
        candidate = folder / ref
        if candidate.is_file():
            return candidate
        raise UserError(f"{where}: config to extend not found: {candidate}")
    candidate = folder / f"{ref}.yaml"
    if candidate.is_file():
        return candidate
    found = packaged_config(ref)
    if found is None:
        raise unknown_name_error("config to extend", ref, packaged_names(), where)
    return found


def load_config_text(text: str, file: str = "<string>") -> ExperimentConfig:
    return validate_config(load_yaml(text, file))


def canonical_json(obj) -> str:
    """Stable JSON (sorted keys, no spaces) used in hashes and stored parameter strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


__all__ = ["ExperimentConfig", "DatasetSpec", "MethodSpec", "load_config", "load_config_text", "validate_config",
           "canonical_json", "compare_targets", "did_you_mean", "PSEUDO_METHODS"]

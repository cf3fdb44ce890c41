"""Performance vs ensemble size: an experiment config run once per ensemble size M (AWEC Fig. 5, issue #6).

Each size is an ordinary experiment: the config is loaded as written, ``ensemble.size`` is replaced by M and
the experiment is named ``m<M>``, so the runner stores it in ``<results>/<name>/m<M>/`` (resumable exactly
like ``ensclust run``; pools come from the shared cache, so a config with the pool spec and seed of another
experiment reuses its pools). Cell seeds do not depend on M, and with the draw modes that take a prefix of a
per-run permutation (``randperm_per_run``, ``randperm_stream``, ``first``) the ensemble of size 10 is the
first 10 members of the ensemble of size 20 of the same repetition: the sizes are nested, as in the paper.

The per-(dataset, method, M) rows are the runner's own table rows (:func:`ensclust.experiment.tuning.summarize`:
mean and std over repetitions under the method's tuning policy), so they equal the ``table_<metric>.csv`` of
``ensclust run`` on the same config at that size. Outputs in ``out_dir``: ``ensemble_size.csv`` (long format),
``ensemble_size.md`` (one table per metric and dataset, methods x M) and ``ensemble_size_<metric>.png`` (one
panel per dataset, one line per method, error bars = std over repetitions).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.config import ExperimentConfig, load_document, validate_config
from ensclust.experiment.plots import save_png
from ensclust.experiment.report import METRIC_NAMES
from ensclust.experiment.store import ResultStore, atomic_write_text
from ensclust.experiment.tuning import rows_frame, summarize
from ensclust.experiment.yamlio import Located

CSV_COLUMNS = ["dataset", "method", "M", "metric", "mean", "std", "n", "n_failed", "policy", "params", "pseudo"]


def parse_sizes(text: str) -> list[int]:
    """``"10,20,30"`` -> ``[10, 20, 30]`` (duplicates dropped, order kept); one-line UserError otherwise."""
    sizes = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise UserError(f"--sizes: '{part}' is not an integer (expected e.g. 10,20,30,40,50)") from None
        if value < 1:
            raise UserError(f"--sizes: ensemble size {value} must be >= 1")
        if value not in sizes:
            sizes.append(value)
    return sizes


def size_config(doc: Located, size: int) -> ExperimentConfig:
    """The config of ``doc`` with ``ensemble.size = size``, named ``m<size>`` (validated like any config)."""
    data = dict(doc.data)
    data["ensemble"] = {**(data.get("ensemble") or {}), "size": int(size)}
    data["name"] = f"m{int(size)}"
    return validate_config(Located(data=data, file=doc.file, lines=doc.lines, files=doc.files))


def _pool_size(spec: dict, seed: int, data_dir) -> int | None:
    """Members in a dataset's pool as far as they can be known cheaply (None: unknown, e.g. a missing file)."""
    if spec.get("first"):
        return int(spec["first"])
    if spec.get("source", "generate") == "generate":
        return int(spec["size"]) if spec.get("size") is not None else None
    from ensclust.pools import get_pool

    try:  # a file pool: read it once (no dataset needed to count its columns)
        return get_pool(None, spec, seed=seed, data_dir=data_dir, cache_dir=None).size
    except UserError:
        return None  # missing data: the runner skips the dataset with a warning, as `ensclust run` does


def check_sizes(config: ExperimentConfig, sizes: list[int], data_dir=None) -> None:
    """Raise a one-line UserError when an ensemble size does not fit a dataset's pool."""
    from ensclust.pools import required_pool_size

    ens = config.ensemble
    for ds in config.datasets:
        have = _pool_size(ds.pool, config.seed, data_dir or config.data_dir)
        if have is None:
            continue
        for size in sizes:
            need = required_pool_size(ens["mode"], size, ens["repetitions"])
            if need > have:
                how = f" x {ens['repetitions']} repetitions" if need != size else ""
                raise UserError(f"--sizes: ensemble size {size}{how} needs {need} members but the pool of dataset "
                                f"'{ds.label}' has {have} (ensemble mode '{ens['mode']}')")


def collect(configs: dict[int, ExperimentConfig], results_dir) -> pd.DataFrame:
    """Rows (dataset, method, M, metric, mean, std, ...) of every size's finished cells."""
    frames = []
    for size, cfg in configs.items():
        store = ResultStore(Path(results_dir) / cfg.name)
        if not (store.root / "cells.csv").exists():
            continue  # no cell of this size finished (e.g. every dataset was skipped)
        store.ensure_aggregates(cfg)
        frame = rows_frame(summarize(cfg, store.load_cells()))
        if len(frame):
            frames.append(frame.assign(M=size))
    if not frames:
        raise UserError(f"{results_dir}: no finished cell for any ensemble size")
    frame = pd.concat(frames, ignore_index=True)[CSV_COLUMNS]
    # config order (dataset, method, metric), then M: one line of the plot is a run of consecutive rows
    cfg = next(iter(configs.values()))
    order = {col: {v: i for i, v in enumerate(vals)} for col, vals in (
        ("dataset", [d.label for d in cfg.datasets]), ("method", list(dict.fromkeys(frame["method"]))),
        ("metric", cfg.metrics))}
    keys = frame.assign(**{f"_{c}": frame[c].map(o) for c, o in order.items()})
    keys = keys.sort_values(["_dataset", "_method", "_metric", "M"], kind="stable")
    return frame.loc[keys.index].reset_index(drop=True)


def run(config_path, sizes, *, metrics=None, out_dir=None, results_root="results", data_dir=None,
        quiet: bool = False, **run_options) -> pd.DataFrame:
    """Run ``config_path`` at every ensemble size and write the figure's files; returns the long table.

    ``run_options`` go to :func:`ensclust.experiment.runner.run_experiment` (jobs, executor, force, ...).
    """
    from ensclust.experiment.report import write_reports
    from ensclust.experiment.runner import run_experiment

    doc = load_document(config_path)
    base = validate_config(doc)
    sizes = list(sizes)
    if not sizes:
        raise UserError("--sizes: give at least one ensemble size")
    metrics = list(metrics or base.metrics)
    unknown = [m for m in metrics if m not in base.metrics]
    if unknown:
        raise UserError(f"--metrics: {', '.join(unknown)} not computed by {config_path} "
                        f"(its metrics: {', '.join(base.metrics)})")
    check_sizes(base, sizes, data_dir)
    configs = {size: size_config(doc, size) for size in sizes}
    results_dir = Path(results_root) / base.name
    cache_dir = str(Path(results_root) / "cache" / "pools")
    for cfg in configs.values():
        root = run_experiment(cfg, results_root=results_dir, cache_dir=cache_dir, data_dir=data_dir, quiet=quiet,
                              write_reports=False, **run_options)
        if (root / "cells.csv").exists():
            write_reports(root, config=cfg, quiet=True)  # the per-size tables, not printed
    frame = collect(configs, results_dir)
    frame = frame[frame["metric"].isin(metrics)].reset_index(drop=True)
    out_dir = Path(out_dir) if out_dir is not None else results_dir
    write_outputs(frame, out_dir, base, metrics)
    frame.attrs["out_dir"] = str(out_dir)
    return frame


# -- outputs ---------------------------------------------------------------------------------------------
def _text(mean: float, std: float, decimals: int) -> str:
    if mean is None or math.isnan(mean):
        return "--"
    return f"{mean:.{decimals}f}" + ("" if std is None or math.isnan(std) else f" ± {std:.{decimals}f}")


def markdown(frame: pd.DataFrame, config: ExperimentConfig, metrics) -> str:
    """One table per (metric, dataset): methods x M, plus the best method per M and the change min -> max M."""
    sizes = sorted(frame["M"].unique())
    reps = config.ensemble["repetitions"]
    lines = [f"# {config.name}: performance vs ensemble size M", "",
             f"Config `{config.source}` run once per M in {{{', '.join(map(str, sizes))}}} (results in "
             f"m<M>/); mean ± std over {reps} repetitions (std ddof={config.std_ddof}). "
             f"'Best' is the best non-base row per M; 'change' is mean(M={sizes[-1]}) - mean(M={sizes[0]}).", ""]
    for metric in metrics:
        for ds in [d.label for d in config.datasets]:
            sub = frame[(frame["metric"] == metric) & (frame["dataset"] == ds)]
            if not len(sub):
                continue
            lines += [f"## {METRIC_NAMES.get(metric, metric)} - {ds}", "",
                      "| Method | " + " | ".join(f"M={m}" for m in sizes) + " | change |",
                      "|---|" + "---|" * (len(sizes) + 1)]
            for method in dict.fromkeys(sub["method"]):
                rows = sub[sub["method"] == method].set_index("M")
                cols = [_text(rows.at[m, "mean"], rows.at[m, "std"], config.decimals) if m in rows.index else "--"
                        for m in sizes]
                first, last = (rows["mean"].get(sizes[0], math.nan), rows["mean"].get(sizes[-1], math.nan))
                change = "--" if math.isnan(first) or math.isnan(last) else f"{last - first:+.{config.decimals}f}"
                lines.append(f"| {method} | " + " | ".join(cols) + f" | {change} |")
            best = []
            for m in sizes:
                cand = sub[(sub["M"] == m) & ~sub["pseudo"].astype(bool) & sub["mean"].notna()]
                best.append(str(cand.loc[cand["mean"].idxmax(), "method"]) if len(cand) else "--")
            lines += ["| *Best* | " + " | ".join(best) + " | |", ""]
    return "\n".join(lines)


def plot(frame: pd.DataFrame, metric: str, datasets: list[str], path, title: str = "") -> Path:
    """One panel per dataset, one line per method (error bars = std); base-clustering rows dashed grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = frame[frame["metric"] == metric]
    datasets = [d for d in datasets if d in set(sub["dataset"])]
    methods = list(dict.fromkeys(sub["method"]))
    sizes = sorted(sub["M"].unique())
    # a small horizontal offset per method keeps overlapping error bars readable
    step = (min(np.diff(sizes)) if len(sizes) > 1 else 1) * 0.3 / max(len(methods), 1)
    n_panels = max(len(datasets), 1)
    fig, axes = plt.subplots(1, n_panels, figsize=(5.2 * n_panels, 4.0), squeeze=False)
    # tab10 without its grey (grey marks the base-clustering rows), then Dark2 for longer method lists
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7] + list(plt.get_cmap("Dark2").colors)
    markers = "os^Dv<>PX*"
    pseudo = sub.groupby("method", sort=False)["pseudo"].first().astype(bool)
    styles, index = {}, 0
    for method in methods:  # one style per method, the same in every panel
        if pseudo[method]:
            styles[method] = dict(color="0.5", linestyle="--", marker="x")
        else:
            styles[method] = dict(color=palette[index % len(palette)], linestyle="-",
                                  marker=markers[index % len(markers)])
            index += 1
    handles = {}
    for ax, ds in zip(axes[0], datasets, strict=False):
        for j, method in enumerate(methods):
            rows = sub[(sub["dataset"] == ds) & (sub["method"] == method)].sort_values("M")
            if not len(rows):
                continue
            x = rows["M"].to_numpy(dtype=float) + (j - (len(methods) - 1) / 2) * step
            y = rows["mean"].to_numpy(dtype=float)
            err = np.nan_to_num(rows["std"].to_numpy(dtype=float))
            handles[method] = ax.errorbar(x, y, yerr=err, label=method, markersize=3.5, capsize=2, linewidth=1.2,
                                          **styles[method])
        ax.set_title(ds)
        ax.set_xticks(sizes)
        ax.set_xlabel("ensemble size M")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        ax.grid(alpha=0.3)
    # the legend goes under the panels, so it never hides a line
    ncol = min(len(handles), 3 * n_panels) or 1
    legend_rows = -(-len(handles) // ncol)
    height = 4.0 + 0.22 * legend_rows
    fig.set_size_inches(5.2 * n_panels, height)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, (0.22 * legend_rows + 0.1) / height, 1, 1))
    return save_png(fig, path)


def write_outputs(frame: pd.DataFrame, out_dir: Path, config: ExperimentConfig, metrics) -> list[Path]:
    out_dir = Path(out_dir)
    paths = [out_dir / "ensemble_size.csv", out_dir / "ensemble_size.md"]
    atomic_write_text(paths[0], frame.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(paths[1], markdown(frame, config, metrics) + "\n")
    datasets = [d.label for d in config.datasets]
    for metric in metrics:
        paths.append(plot(frame, metric, datasets, out_dir / f"ensemble_size_{metric}.png",
                          title=f"{config.name}: {METRIC_NAMES.get(metric, metric)} vs ensemble size"))
    return paths

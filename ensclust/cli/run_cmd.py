"""``ensclust run`` and ``ensclust report``."""

from __future__ import annotations

from pathlib import Path

import click

from ensclust.errors import UserError

EXECUTORS = ("local", "dask")  # = ensclust.experiment.executors.EXECUTORS (not imported: keeps startup fast)


def parse_formats(text: str | None):
    if not text:
        return None
    from ensclust.experiment.config import OUTPUTS

    aliases = {"md": "markdown", "tex": "latex"}
    out = []
    for part in text.split(","):
        key = aliases.get(part.strip().lower(), part.strip().lower())
        if key not in OUTPUTS:
            from ensclust.errors import unknown_name_error

            raise unknown_name_error("format", part.strip(), OUTPUTS, "--format")
        out.append(key)
    return out


def execution_options(func):
    """--jobs / --executor / --scheduler / --force / --retry-failed / --quiet / --results / --data-dir / --memory."""
    options = [
        click.option("--jobs", "-j", type=int, default=1, show_default=True,
                     help="cells run in parallel (joblib loky processes; Dask workers for a local Dask cluster)"),
        click.option("--executor", type=click.Choice(EXECUTORS), default="local", show_default=True,
                     help="local (serial or joblib) or dask (distributed)"),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Dask scheduler address, e.g. tcp://HOST:8786 (default: start a local Dask cluster)"),
        click.option("--force", is_flag=True, help="recompute finished cells"),
        click.option("--retry-failed", is_flag=True, help="recompute the cells that failed before"),
        click.option("--quiet", "-q", is_flag=True, help="no progress bar and no tables on stdout"),
        click.option("--results", "results_root", default="results", show_default=True, metavar="DIR",
                     help="results root; the experiment goes to DIR/<name>/"),
        click.option("--data-dir", default=None, metavar="DIR",
                     help="datasets folder (default: $ENSCLUST_DATA, then ./datasets)"),
        click.option("--memory", type=click.Choice(("rss", "tracemalloc", "off")), default=None,
                     help="per-fit peak memory: rss (default on Linux; free), tracemalloc (Python/NumPy "
                          "allocations; slows allocation-heavy fits) or off"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def check_execution(jobs, executor, scheduler):
    """Reject inconsistent --jobs / --executor / --scheduler before any work starts."""
    from ensclust.experiment.executors import make_executor

    make_executor(executor, jobs, scheduler)


def _terminate_like_ctrl_c() -> None:
    """Treat SIGTERM (``kill``, a scheduler's time limit) like Ctrl-C.

    The runner then writes cells.csv and the tables of every finished cell before it exits. Background runs
    started with ``&`` ignore SIGINT, so without this a killed run left only its per-cell JSON files.
    """
    import signal

    def _raise(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not in the main thread (e.g. called from a test's worker thread)
        pass


@click.command("run")
@click.argument("config")
@execution_options
@click.option("--dataset", "only_datasets", multiple=True, metavar="LABEL",
              help="compute only this dataset (label as in the config; repeatable)")
@click.option("--method", "only_methods", multiple=True, metavar="LABEL",
              help="compute only this method row (label as in the config; repeatable)")
@click.option("--dry-run", is_flag=True, help="only print how many cells would run")
def run_command(config, jobs, executor, scheduler, force, retry_failed, quiet, results_root, data_dir, memory,
                only_datasets, only_methods, dry_run):
    """Run an experiment described in a YAML CONFIG and write its tables.

    CONFIG is a YAML file or the name of a config shipped with ensclust: 'demo', a paper table's config
    (e.g. 'eccms_table4_ari', see 'ensclust reproduce') or a figure's config.

    Finished cells are stored under RESULTS/<name>/cells/; a rerun resumes and skips them (use --force to
    recompute). Ctrl-C keeps every finished cell.

    \b
    Examples:
      ensclust run demo
      ensclust run eccms_table4_ari --jobs 2 --quiet
      ensclust run my_experiment.yaml --executor dask --scheduler tcp://10.0.0.5:8786
      ensclust run eccms_table4_ari --dataset Ecoli --method LWEA --dry-run
    """
    from ensclust.configs import resolve_config
    from ensclust.experiment.config import load_config
    from ensclust.experiment.runner import run_experiment

    check_execution(jobs, executor, scheduler)
    cfg = load_config(resolve_config(config))
    cell_filter = None
    if only_datasets or only_methods:
        from ensclust.errors import unknown_name_error

        ds_labels = [d.label for d in cfg.datasets]
        m_labels = [m.label for m in cfg.methods]
        for label in only_datasets:
            if label not in ds_labels:
                raise unknown_name_error("dataset label", label, ds_labels, "--dataset")
        for label in only_methods:
            if label not in m_labels:
                raise unknown_name_error("method label", label, m_labels, "--method")

        def cell_filter(cell):
            return ((not only_datasets or cell["dataset"] in only_datasets)
                    and (not only_methods or cell["method"] in only_methods))

    _terminate_like_ctrl_c()
    root = run_experiment(cfg, results_root=results_root, jobs=jobs, executor=executor, scheduler=scheduler,
                          force=force, retry_failed=retry_failed, quiet=quiet, data_dir=data_dir,
                          cell_filter=cell_filter, dry_run=click.echo if dry_run else False, memory=memory)
    if not dry_run:
        _print_summary(root, quiet)


def _print_summary(root: Path, quiet: bool) -> None:
    import pandas as pd

    cells_path = Path(root) / "cells.csv"
    if not cells_path.exists():
        click.echo(f"{root}: no cell finished", err=True)
        return
    cells = pd.read_csv(cells_path, keep_default_na=False, na_values=[""])
    failed = cells[cells["status"] != "ok"]
    line = f"{root}: {len(cells)} cells, {len(failed)} failed"
    if len(failed):
        first = failed.iloc[0]
        line += f" (e.g. {first['dataset']}/{first['method']} rep {first['rep']}: {first['error']})"
    click.echo(line, err=quiet)


@click.command("report")
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--format", "formats", default=None, metavar="LIST",
              help="comma-separated: csv,latex,markdown (default: the config's outputs)")
@click.option("--quiet", "-q", is_flag=True, help="do not print the tables")
def report_command(results_dir, formats, quiet):
    """Rebuild the tables of RESULTS_DIR from its cells.csv (one table per metric).

    When cells.csv is missing or older than the newest cells/*.json (a run killed with kill -9 writes only
    the per-cell files), cells.csv and timing.csv are first rebuilt from those files.

    Methods are rows, datasets columns, "mean ± std" over repetitions; best bold, second underlined; a
    dagger marks methods significantly worse than the best (paired t-test, p < 0.05; see
    ensclust/experiment/report.py for the exact rule).

    \b
    Examples:
      ensclust report results/demo
      ensclust report results/demo --format latex,markdown
    """
    from ensclust.experiment.report import write_reports

    if not Path(results_dir).is_dir():
        raise UserError(f"{results_dir}: no such results folder")
    write_reports(results_dir, formats=parse_formats(formats), quiet=quiet)


def add_commands(cli):
    cli.add_command(run_command)
    cli.add_command(report_command)

"""``ensclust run`` and ``ensclust report``."""

from __future__ import annotations

from pathlib import Path

import click

from ensclust.errors import CellsFailed, Interrupted, UserError

EXECUTORS = ("local", "dask")  # = ensclust.experiment.executors.EXECUTORS (not imported: keeps startup fast)
#: Where the data directory is looked for without --data-dir (ensclust.data.registry.resolve_data_dir;
#: a config's data_dir comes first).
DATA_DIR_SEARCH = ("$ENSCLUST_DATA, then ./datasets when it holds data files, then ../shared/datasets next to "
                   "the repository")
DATA_DIR_ORDER = f"the config's data_dir, then {DATA_DIR_SEARCH}"


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
        click.option("--force", is_flag=True, help="recompute finished cells (an interrupted forced run resumes without --force)"),
        click.option("--retry-failed", is_flag=True, help="recompute the cells that failed before"),
        click.option("--quiet", "-q", is_flag=True, help="no progress bar and no tables on stdout"),
        click.option("--results", "results_root", default="results", show_default=True, metavar="DIR",
                     help="results root; the experiment goes to DIR/<name>/"),
        click.option("--data-dir", default=None, metavar="DIR",
                     help=f"datasets folder (default: {DATA_DIR_ORDER})"),
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
@click.option("--blas-threads", type=click.IntRange(min=0), default=1, show_default=True,
              help="BLAS threads per fit (0: the library's default, all cores); parallelise with --jobs instead")
def run_command(config, jobs, executor, scheduler, force, retry_failed, quiet, results_root, data_dir, memory,
                only_datasets, only_methods, dry_run, blas_threads):
    """Run an experiment described in a YAML CONFIG and write its tables.

    CONFIG is a YAML file or the name of a config shipped with ensclust: 'demo', a paper table's config
    (e.g. 'eccms_table4_ari', see 'ensclust reproduce') or a figure's config.

    Finished cells are stored under RESULTS/<name>/cells/; a rerun resumes and skips them (use --force to
    recompute). Ctrl-C keeps every finished cell. Exit code 3 when some cells failed (the tables are
    still written; the first failure is printed), 2 for a user error.

    \b
    Examples:
      ensclust run demo
      ensclust run eccms_table4_ari --jobs 2 --quiet
      ensclust run my_experiment.yaml --executor dask --scheduler tcp://10.0.0.5:8786
      ensclust run eccms_table4_ari --dataset Ecoli --method LWEA --dry-run
    """
    from ensclust.configs import resolve_config
    from ensclust.experiment.config import load_config

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
    root = run_resumable(cfg, results_root=results_root, jobs=jobs, executor=executor, scheduler=scheduler,
                         force=force, retry_failed=retry_failed, quiet=quiet, data_dir=data_dir,
                         cell_filter=cell_filter, dry_run=click.echo if dry_run else False, memory=memory,
                         blas_threads=blas_threads)
    if not dry_run:
        _print_summary(root, quiet)


def run_resumable(cfg, *, results_root, **options) -> Path:
    """:func:`~ensclust.experiment.runner.run_experiment`; on Ctrl-C (or SIGTERM) an :class:`Interrupted`
    that says how many cells of the plan are stored and that a rerun resumes."""
    from ensclust.experiment.runner import plan_cells, run_experiment
    from ensclust.experiment.store import ResultStore

    try:
        return run_experiment(cfg, results_root=results_root, **options)
    except KeyboardInterrupt:
        planned = plan_cells(cfg)
        stored = len(ResultStore(Path(results_root) / cfg.name).read_planned(planned))
        raise Interrupted(f"{stored} of {len(planned)} cells are stored; rerun the same command to resume") from None


def _print_summary(root: Path, quiet: bool) -> None:
    """The last line of a run: its cell count, or :class:`CellsFailed` when some cells failed."""
    if not (Path(root) / "cells.csv").exists():
        click.echo(f"{root}: no cell finished", err=True)
        return
    cells = _read_cells(root)
    raise_if_cells_failed(root, cells)
    click.echo(f"{root}: {len(cells)} cells, 0 failed", err=quiet)


def _read_cells(root: Path):
    from ensclust.experiment.store import ResultStore

    return ResultStore(root).load_cells()


def raise_if_cells_failed(root: Path, cells=None) -> None:
    """:class:`CellsFailed` (exit code 3) naming the first failure when cells.csv of ``root`` has failed cells."""
    if cells is None:
        if not (Path(root) / "cells.csv").exists():
            return
        cells = _read_cells(root)
    failed = cells[cells["status"] != "ok"]
    if len(failed):
        first = failed.iloc[0]
        rep = "pool" if int(first["rep"]) < 0 else f"rep {int(first['rep'])}"
        raise CellsFailed(f"{root}: {len(failed)} of {len(cells)} cells failed; first failure: "
                          f"{first['dataset']}/{first['method']} {rep}: {first['error']}")


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

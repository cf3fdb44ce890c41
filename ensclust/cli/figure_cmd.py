"""``ensclust figure``: experiments of the papers' figures that are not a datasets x methods table."""

from __future__ import annotations

import click

from ensclust.cli.run_cmd import check_execution, execution_options


@click.group("figure")
def figure_group():
    """Run a paper figure's experiment and write its table and PNG.

    \b
    Examples:
      ensclust figure rcec-synthetic --out results/rcec_fig3_synthetic
      ensclust figure rcec-synthetic --repetitions 3 --max-extra 4 --quiet
    """


@figure_group.command("rcec-synthetic",
                      short_help="RCEC Fig. 3: NMI as normal / anomalous / extremely anomalous partitions are added.")
@click.option("--out", "out_dir", default="results/rcec_fig3_synthetic", show_default=True)
@click.option("--repetitions", default=20, show_default=True, type=click.IntRange(1))
@click.option("--max-extra", default=10, show_default=True, type=click.IntRange(0))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--quiet", is_flag=True, help="no progress bar")
def rcec_synthetic(out_dir, repetitions, max_extra, seed, quiet):
    """RCEC Fig. 3: NMI as normal / anomalous / extremely anomalous partitions are added."""
    from tqdm import tqdm

    from ensclust.experiment.store import ensure_dir
    from ensclust.figures import rcec_synthetic as exp

    ensure_dir(out_dir)  # an unwritable --out is a one-line error before any computation
    total = 3 * (max_extra + 1) * repetitions
    with tqdm(total=total, disable=quiet, desc="rcec-synthetic") as bar:
        records = exp.run(out_dir, n_extra=range(max_extra + 1), repetitions=repetitions, seed=seed, progress=bar)
    click.echo(f"wrote {out_dir}/table.csv, table.md, fig3.png ({len(records)} records)")


@figure_group.command("ensemble-size",
                      short_help="Metric vs ensemble size M (e.g. AWEC Fig. 5): run CONFIG once per M and plot "
                                 "every method.")
@click.argument("config")
@click.option("--sizes", default="10,20,30,40,50", show_default=True, metavar="LIST",
              help="comma-separated ensemble sizes M; the config runs once per size")
@click.option("--metrics", default=None, metavar="LIST", help="comma-separated metrics to plot (default: the config's)")
@click.option("--out", "out_dir", default=None, metavar="DIR",
              help="where ensemble_size.csv/.md/_<metric>.png go (default RESULTS/<name>/)")
@execution_options
def ensemble_size(config, sizes, metrics, out_dir, jobs, executor, scheduler, force, retry_failed, quiet,
                  results_root, data_dir, memory):
    """Metric vs ensemble size M (e.g. AWEC Fig. 5): run CONFIG once per M and plot every method.

    CONFIG is a YAML file or the name of a config shipped with ensclust (as for 'ensclust run').

    Each size is stored like 'ensclust run' in RESULTS/<name>/m<M>/ (resumable; --force recomputes); the
    rows are the runner's table rows (mean and std over repetitions) per dataset, method and M.

    \b
    Examples:
      ensclust figure ensemble-size awec_fig5_ensemble_size
      ensclust figure ensemble-size demo --sizes 5,10 --metrics ari --out /tmp/fig --quiet
    """
    from ensclust.configs import resolve_config
    from ensclust.figures import ensemble_size as exp

    check_execution(jobs, executor, scheduler)
    metric_list = [m.strip().lower() for m in metrics.split(",") if m.strip()] if metrics else None
    frame = exp.run(resolve_config(config), exp.parse_sizes(sizes), metrics=metric_list, out_dir=out_dir, results_root=results_root,
                    data_dir=data_dir, quiet=quiet, jobs=jobs, executor=executor, scheduler=scheduler, force=force,
                    retry_failed=retry_failed, memory=memory)
    if not quiet:
        for metric, sub in frame.groupby("metric", sort=False):
            click.echo(f"{metric} (mean over repetitions)")
            click.echo(sub.pivot_table(index=["dataset", "method"], columns="M", values="mean", sort=False)
                       .round(4).to_string())
    click.echo(f"wrote {frame.attrs['out_dir']}/ensemble_size.csv, .md and one PNG per metric ({len(frame)} rows)", err=quiet)


def add_commands(cli):
    cli.add_command(figure_group)

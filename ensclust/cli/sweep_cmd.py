"""``ensclust sweep``: one parameter of one method over a grid, with a CSV and a PNG plot."""

from __future__ import annotations

import click

from ensclust.cli.run_cmd import check_execution, execution_options, raise_if_cells_failed, run_resumable
from ensclust.errors import UserError


@click.command("sweep")
@click.option("--method", "-m", required=True, help="registered method name (see 'ensclust methods')")
@click.option("--param", "-p", "param", required=True, metavar="NAME=GRID",
              help="the swept parameter: NAME=0:0.9:0.1, NAME=log:1e-3:1e3:7 or NAME=[0.1,0.5]")
@click.option("--set", "fixed", multiple=True, metavar="NAME=VALUE", help="fix another parameter (repeatable)")
@click.option("--dataset", "-d", "datasets", multiple=True, metavar="NAME",
              help="dataset (repeatable; built-in, registry name or file); default iris")
@click.option("--config", "base_config", type=click.Path(dir_okay=False), default=None,
              help="reuse this config's datasets, pool, ensemble, metrics and seed")
@click.option("--repetitions", "-r", type=int, default=None, help="repetitions (default 10)")
@click.option("--ensemble-size", type=int, default=None, help="members per repetition (default 20)")
@click.option("--pool-size", type=int, default=None,
              help="pool size (default ensemble size x repetitions: fresh members for every repetition)")
@click.option("--metric", "metrics", multiple=True, help="metric (repeatable; default acc, nmi, ari)")
@click.option("--seed", type=int, default=0, show_default=True, help="master seed")
@click.option("--name", default=None, help="experiment name (default sweep_<method>_<param>)")
@execution_options
def sweep_command(method, param, fixed, datasets, base_config, repetitions, ensemble_size, pool_size, metrics,
                  seed, name, jobs, executor, scheduler, force, retry_failed, quiet, results_root, data_dir, memory):
    """Sweep one parameter of a method and plot metric vs parameter.

    Runs through the same runner and store as 'ensclust run' (resumable), in
    RESULTS/sweep_<method>_<param>/, and writes sweep.csv and sweep.png there. Exit code 3 when some
    cells failed (as for 'ensclust run').

    \b
    Examples:
      ensclust sweep --method lwea --param theta=0.1:0.9:0.1 --dataset iris --dataset wine
      ensclust sweep -m eccms -p lambda=log:1e-3:1e2:6 --set alpha=0.8 --config ensclust/configs/demo.yaml
      ensclust sweep -m eac-al -p dtype=[float32,float64] -d digits -r 5 --ensemble-size 10
    """
    from ensclust.experiment.sweep import build_sweep_config, parse_assignment, write_sweep_outputs

    check_execution(jobs, executor, scheduler)
    pname, grid = parse_assignment(param, "--param")
    fixed_params = dict(parse_assignment(f, "--set") for f in fixed)
    for label, value in (("--repetitions", repetitions), ("--ensemble-size", ensemble_size),
                         ("--pool-size", pool_size)):
        if value is not None and value < 1:
            raise UserError(f"{label} must be >= 1, got {value}")
    cfg = build_sweep_config(method, pname, grid, datasets=datasets, fixed=fixed_params, repetitions=repetitions,
                             ensemble_size=ensemble_size, pool_size=pool_size, metrics=metrics, seed=seed,
                             base_config=base_config, name=name)
    root = run_resumable(cfg, results_root=results_root, jobs=jobs, executor=executor, scheduler=scheduler,
                         force=force, retry_failed=retry_failed, quiet=True, data_dir=data_dir,
                         write_reports=True, memory=memory)
    paths = write_sweep_outputs(root, cfg)
    if not quiet:
        import pandas as pd

        frame = pd.read_csv(paths[0])
        click.echo(frame.pivot_table(index=["dataset", pname], columns="metric", values="mean", sort=False)
                   .round(4).to_string())
    click.echo("wrote " + ", ".join(map(str, paths)), err=quiet)
    raise_if_cells_failed(root)


def add_commands(cli):
    cli.add_command(sweep_command)

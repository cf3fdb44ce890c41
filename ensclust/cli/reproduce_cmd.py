"""``ensclust reproduce``: run a paper's tables (a tier), assemble them as the paper prints them, score them."""

from __future__ import annotations

import click

from ensclust.errors import CellsFailed, UserError


@click.command("reproduce")
@click.argument("paper", required=False, metavar="PAPER")
@click.option("--table", default=None, metavar="T", help="one table of the paper: its CSV stem or number, e.g. 2 or table2")
@click.option("--tier", type=click.Choice(("quick", "full")), default="full", show_default=True,
              help="quick: a cheap subset with at least one whole table per paper where one fits; full: everything")
@click.option("--dry-run", is_flag=True, help="print planned / finished / pending fits and the estimated CPU time")
@click.option("--from-scratch", is_flag=True,
              help="with --dry-run: price every planned fit, finished or not (the cost of rerunning from nothing)")
@click.option("--status", is_flag=True, help="print the scorecard's totals (cells computed / within) and exit")
@click.option("--assemble-only", is_flag=True, help="run nothing: assemble the tables and the scorecard from the results")
@click.option("--with", "with_method", default=None, metavar="METHOD",
              help="add METHOD's row to the table(s) under their protocol (a registered name or a plug-in)")
@click.option("--param", "with_params", multiple=True, metavar="KEY=VALUE", help="a parameter of the --with method")
@click.option("--label", "with_label", default=None, help="row label of the --with method (default: its name)")
@click.option("--jobs", "-j", type=int, default=1, show_default=True, help="cells run in parallel")
@click.option("--executor", type=click.Choice(("local", "dask")), default="local", show_default=True)
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://HOST:8786")
@click.option("--results", "results_root", default="results", show_default=True, metavar="DIR",
              help="results root: experiments in DIR/<config>/, tables in DIR/papers/, scorecard DIR/REPRODUCTION.md")
@click.option("--data-dir", default=None, metavar="DIR", help="datasets folder (default: $ENSCLUST_DATA, ./datasets, ../shared/datasets)")
@click.option("--check-against", "reference_root", default=None, metavar="DIR",
              help="after the run, compare each config's cells.csv with DIR/<config>/cells.csv (exit 1 if any differs)")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
def reproduce_command(paper, table, tier, dry_run, from_scratch, status, assemble_only, with_method, with_params, with_label, jobs,
                      executor, scheduler, results_root, data_dir, reference_root, quiet):
    """Reproduce a paper's tables: run their configs, lay them out as printed, write the scorecard.

    PAPER is acmk, awec, eccms, rcec, spce or all. The configs of its tables run; then every table is written
    as the paper prints it (results/papers/PAPER/) and the scorecard to results/REPRODUCTION.md.

    Finished cells are reused (a rerun resumes; a clone resumes from the committed cells.csv files).
    The configs run cheapest first.

    \b
    Examples:
      ensclust reproduce all --tier quick --dry-run
      ensclust reproduce all --tier quick --results results/quick --check-against results
      ensclust reproduce eccms --table 7 --tier quick
      ensclust reproduce awec --table 6 --with my_method.py:MyMethod --param alpha=0.5
      ensclust reproduce --status
    """
    from ensclust.papers import reproduce as rp

    if status:
        for line in rp.status_totals(rp.assemble_all(rp.available_papers(), results_root, write=False)):
            click.echo(line)
        return
    if paper is None:
        raise UserError("missing PAPER (one of acmk, awec, eccms, rcec, spce, all); or use --status")
    if table and str(paper).lower() == "all":
        raise UserError("--table needs one paper, not 'all'")
    if with_method and not table:
        raise UserError("--with needs --table: the table whose protocol the method runs under")
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")
    if scheduler and executor != "dask":
        raise UserError("--scheduler needs --executor dask")
    papers = rp.papers_of(paper)
    manifests = [rp.load_manifest(p) for p in papers]
    plan = rp.plan_configs(manifests, tier, table)
    if with_method:
        plan = rp.with_method_configs(manifests[0], manifests[0].table(table), tier, with_method,
                                      _parse_params(with_params), with_label)
    if from_scratch and not dry_run:
        raise UserError("--from-scratch goes with --dry-run (it prices the plan; nothing runs)")
    if dry_run:
        for line in rp.dry_run_lines(plan, results_root, from_scratch):
            click.echo(line)
        return
    failures = [] if assemble_only else rp.run_configs(plan, results_root, jobs=jobs, executor=executor,
                                                       scheduler=scheduler, data_dir=data_dir, quiet=quiet,
                                                       echo=click.echo)
    for name, reason in failures:
        click.echo(f"ensclust: warning: {name}: {reason}", err=True)
    if with_method:
        path = rp.write_with_table(manifests[0], manifests[0].table(table), plan, results_root)
        click.echo(f"wrote {path}")
        _raise_if_failed(failures)
        return
    card, assembled = rp.write_scorecard(results_root)
    for line in rp.status_totals(assembled):
        click.echo(line)
    click.echo(f"wrote {results_root}/papers/ and {card}")
    if reference_root:
        lines, same = rp.check_against(plan, results_root, reference_root)
        for line in lines:
            click.echo(line)
        if not same:
            raise SystemExit(1)
    _raise_if_failed(failures)


def _raise_if_failed(failures) -> None:
    """Exit code 3 when a config could not run or left new failed cells (each was printed as a warning)."""
    if failures:
        raise CellsFailed(f"{len(failures)} config(s) did not complete (see the warnings above); the tables are "
                          f"written from what finished")


def _parse_params(items) -> dict:
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--param '{item}': expected KEY=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise UserError(f"--param '{item}': the value is not a number, word or list") from None
    return out


def add_commands(cli):
    cli.add_command(reproduce_command)

"""``ensclust paper``: paper-specific tables and figures built from finished results (EC-CMS Table IX run
times, Table III offsets and the timing floor; ACMK Figs. 2-4; AWEC Figs. 3-4)."""

from __future__ import annotations

from pathlib import Path

import click

from ensclust.errors import UserError


def _paper_csv(path: str | None, default: str) -> Path:
    """``--paper`` as given, else ``default`` (e.g. ``eccms/table9_time.csv``) in the paper tables folder
    ($ENSCLUST_PAPER_TABLES, next to $ENSCLUST_DATA, or ../shared/paper_tables)."""
    from ensclust.experiment.compare import resolve_paper_csv

    return resolve_paper_csv(path or default)


def _paper_option(default: str):
    return click.option("--paper", "paper_csv", default=None, metavar="CSV",
                        help=f"the paper's table (default: {default} in the paper tables folder)")


@click.group("paper")
def paper_group():
    """Paper-specific tables and figures built from finished results (see each command's --help).

    \b
    Examples:
      ensclust paper eccms-table9 results/eccms_table4_proposed --out results/eccms_table9_time
      ensclust paper eccms-table3 results/eccms_table3_gamma_umist
      ensclust paper acmk-fig4 results/acmk_small
      ensclust paper awec-fig4 results/awec_tables2_4_small --out results/awec_fig4/fig4_nmi.png
      ensclust paper friedman ../shared/paper_tables/awec/table2_ari.csv --out results/awec_friedman
    """


# ---------------------------------------------------------------------------------------------------------
# EC-CMS


@paper_group.command("eccms-table9", short_help="EC-CMS Table IX: our run times beside the paper's")
@click.argument("results", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", "out_dir", required=True, metavar="DIR", help="where table9_time.csv / .md go")
@_paper_option("eccms/table9_time.csv")
def eccms_table9(results, out_dir, paper_csv):
    """EC-CMS Table IX: our run times (cells of RESULTS folders, cpu_times.csv in --out) beside the paper's.

    \b
    Examples:
      ensclust paper eccms-table9 --out results/eccms_table9_time results/eccms_table4_proposed \\
          results/eccms_table4_proposed_large results/eccms_table4_proposed_xl
    """
    from ensclust.papers.eccms_tables import table9

    table = table9(results, _paper_csv(paper_csv, "eccms/table9_time.csv"), out_dir)
    click.echo(table.to_string(index=False))


@paper_group.command("eccms-cpu")
@click.argument("datasets", nargs=-1, required=True)
@click.option("--out", "out_csv", required=True, metavar="CSV",
              help="CSV to append to (e.g. results/eccms_table9_time/cpu_times.csv)")
@click.option("--data-dir", default=None, metavar="DIR", help="datasets folder (default: $ENSCLUST_DATA, ...)")
def eccms_cpu(datasets, out_csv, data_dir):
    """CPU time of one EC-CMS fit on the paper's run-1 ensemble of each authors' pool (appends to --out).

    DATASETS are pool names: ecoli umist aggregation spf caltech20 fct texture ls. Run with
    OMP_NUM_THREADS=1 (single-threaded CPU time does not depend on other jobs of a shared machine).

    \b
    Examples:
      OMP_NUM_THREADS=1 ensclust paper eccms-cpu ecoli umist aggregation --out results/eccms_table9_time/cpu_times.csv
    """
    from ensclust.data.registry import resolve_data_dir
    from ensclust.papers.eccms_tables import measure_cpu

    measure_cpu(datasets, resolve_data_dir(data_dir), out_csv)


@paper_group.command("eccms-floor")
@click.argument("datasets", nargs=-1, required=True)
@click.option("--out", "out_csv", required=True, metavar="CSV",
              help="CSV to append to (e.g. results/eccms_table9_time/floor.csv); floor.md is written beside it")
@click.option("--data-dir", default=None, metavar="DIR", help="datasets folder (default: $ENSCLUST_DATA, ...)")
@click.option("--iters", default="results/eccms_table9_time/table9_time.csv", show_default=True, metavar="CSV",
              help="CSV with dataset / mean_iter (the Table IX runs); missing sets get one full solve")
@_paper_option("eccms/table9_time.csv")
def eccms_floor(datasets, out_csv, data_dir, iters, paper_csv):
    """Lower bound on one EC-CMS fit's CPU time: ADMM iterations x CPU time of one C-update's block GEMMs.

    \b
    Examples:
      OMP_NUM_THREADS=1 ensclust paper eccms-floor ecoli ls --out results/eccms_table9_time/floor.csv
    """
    import pandas as pd

    from ensclust.data.registry import resolve_data_dir
    from ensclust.papers.eccms_tables import floor_markdown, measure_floor

    known = None
    if iters and Path(iters).exists():
        known = pd.read_csv(iters).set_index("dataset")["mean_iter"].to_dict()
    measure_floor(datasets, resolve_data_dir(data_dir), out_csv, _paper_csv(paper_csv, "eccms/table9_time.csv"),
                  known_iter=known)
    click.echo(floor_markdown(out_csv))


@paper_group.command("eccms-table3", short_help="EC-CMS Table III: offsets from gamma1 = gamma2 = 1, beside the paper")
@click.argument("result_dir", type=click.Path(file_okay=False))
@_paper_option("eccms/table3_admm_params_umist.csv")
def eccms_table3(result_dir, paper_csv):
    """EC-CMS Table III: ARI / NMI / F-score per (gamma1, gamma2) as offsets from gamma1 = gamma2 = 1, beside
    the paper; writes table3_offsets.csv / .md into RESULT_DIR.

    \b
    Examples:
      ensclust paper eccms-table3 results/eccms_table3_gamma_umist
    """
    from ensclust.papers.eccms_tables import table3_offsets

    if not (Path(result_dir) / "cells.csv").exists():
        raise UserError(f"{result_dir}: no cells.csv (run 'ensclust run eccms_table3_gamma_umist' first)")
    table = table3_offsets(result_dir, _paper_csv(paper_csv, "eccms/table3_admm_params_umist.csv"), result_dir)
    click.echo(table.to_string(index=False))


# ---------------------------------------------------------------------------------------------------------
# ACMK


@paper_group.command("acmk-fig4", short_help="ACMK Fig. 4: ACC / NMI of ACMK-KM and ACMK-SC against lambda")
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--out", default=None, metavar="PNG", help="default: RESULTS_DIR/fig4_lambda.png (a CSV beside it)")
def acmk_fig4(results_dir, out):
    """ACMK Fig. 4: ACC / NMI of ACMK-KM and ACMK-SC against lambda (the '... Fig4' rows of RESULTS_DIR).

    \b
    Examples:
      ensclust paper acmk-fig4 results/acmk_small
    """
    from ensclust.papers.acmk_figures import figure4

    click.echo(figure4(results_dir, out))


@paper_group.command("acmk-fig2", short_help="ACMK Figs. 2-3: base results before / after refinement, objective per iteration")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.argument("configs", nargs=-1, required=True)
@click.option("--lambda", "lam", default=1.0, show_default=True, type=float, help="ACMK-KM's lambda")
def acmk_fig2(out_dir, configs, lam):
    """ACMK Figs. 2 and 3: ACC of every base clustering before and after the refinement, and the objective per
    ADMM iteration, re-running ACMK-KM on the first repetition's ensemble of every data set of CONFIGS
    (YAML files or packaged config names, e.g. acmk_small acmk_yale).

    \b
    Examples:
      ensclust paper acmk-fig2 results/acmk_fig2_refinement acmk_small acmk_yale
      ensclust paper acmk-fig2 results/acmk_fig2_refinement/lambda_0.01 acmk_small acmk_yale --lambda 0.01
    """
    from ensclust.configs import resolve_config
    from ensclust.papers.acmk_figures import figure2

    click.echo(figure2([resolve_config(c) for c in configs], out_dir, lam=lam))


# ---------------------------------------------------------------------------------------------------------
# AWEC


@paper_group.command("awec-fig4", short_help="AWEC Fig. 4: heat maps of AWEC-S / AWEC-H over the lambda x gamma grid")
@click.argument("results_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", required=True, metavar="PNG", help="PNG path (a CSV with the same stem is written beside it)")
@click.option("--metric", default="nmi", show_default=True)
def awec_fig4(results_dirs, out, metric):
    """AWEC Fig. 4: mean metric of AWEC-S / AWEC-H over the lambda x gamma grid, one heat map per data set,
    from the finished cells of RESULTS_DIRS (also of a run still going).

    \b
    Examples:
      ensclust paper awec-fig4 results/awec_tables2_4_small --out results/awec_fig4/fig4_nmi.png
    """
    from ensclust.papers.awec_figures import write_fig4

    out_path, n = write_fig4(results_dirs, out, metric)
    click.echo(f"wrote {out_path} and {out_path.with_suffix('.csv')} ({n} grid cells)")


@paper_group.command("friedman", short_help="AWEC Fig. 3: Friedman test and Nemenyi critical difference over data sets")
@click.argument("tables", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "out_dir", required=True, metavar="DIR")
@click.option("--metric", "metrics", multiple=True, help="metric to test (repeatable; default: every metric present)")
@click.option("--column", default="mean", show_default=True,
              help="score column (paper CSV: mean; 'ensclust compare' output: ours_mean)")
@click.option("--methods", default=None, metavar="LIST", help="comma-separated subset/order of methods")
@click.option("--datasets", default=None, metavar="LIST", help="comma-separated subset of data sets")
@click.option("--missing", default="drop-datasets", show_default=True,
              type=click.Choice(("drop-datasets", "drop-methods")))
@click.option("--alpha", default=0.05, show_default=True, type=float)
@click.option("--prefix", default="friedman", show_default=True)
@click.option("--title", default="")
def friedman(tables, out_dir, metrics, column, methods, datasets, missing, alpha, prefix, title):
    """Friedman test, Iman-Davenport correction and Nemenyi critical difference over several data sets (AWEC
    Fig. 3); writes <prefix>_<metric>.csv/.md/.png per metric.

    TABLES are long CSVs with columns metric, method, dataset and a score column (the paper-table format, or
    an 'ensclust compare' output with --column ours_mean).

    \b
    Examples:
      ensclust paper friedman ../shared/paper_tables/awec/table2_ari.csv --out results/awec_friedman
    """
    from ensclust.papers.friedman import run_friedman

    for result, paths in run_friedman(tables, out_dir, metrics=list(metrics) or None, column=column,
                                      methods=methods.split(",") if methods else None,
                                      datasets=datasets.split(",") if datasets else None, missing=missing,
                                      alpha=alpha, prefix=prefix, title=title):
        click.echo(result.summary())
        click.echo("wrote " + ", ".join(str(p) for p in paths))


def add_commands(cli):
    cli.add_command(paper_group)

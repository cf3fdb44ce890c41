"""``ensclust compare``: our tables vs a paper's."""

from __future__ import annotations

from pathlib import Path

import click

from ensclust.errors import UserError


@click.command("compare")
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--paper", "papers", multiple=True, metavar="CSV",
              help="paper table (table,metric,method,dataset,mean,std,bold,param); repeatable; default: the "
                   "config's compare_to, relative to ../shared/paper_tables or $ENSCLUST_PAPER_TABLES")
@click.option("--quiet", "-q", is_flag=True, help="print only the summary line(s)")
def compare_command(results_dir, papers, quiet):
    """Compare the results in RESULTS_DIR with the numbers a paper prints.

    Writes RESULTS_DIR/comparison.csv and comparison.md (ours vs paper per cell, the difference, whether it
    is within the paper's std) and prints a summary line: cells compared, mean absolute difference, and the
    paper cells missing on our side with the reason (method not implemented, dataset not run, ...).

    With several paper tables (compare_to a list in the config, or --paper repeated) each table gets
    comparison_<stem>.csv / .md (stem = the paper CSV's file name, e.g. comparison_table2_ari.csv) and
    comparison.md becomes an index with one summary line per table.

    \b
    Examples:
      ensclust compare results/eccms_table4_ari
      ensclust compare results/demo --paper ../shared/paper_tables/eccms/table6_eac_enhancement.csv
      ensclust compare results/awec_tables2_4_small --paper awec/table2_ari.csv --paper awec/table3_nmi.csv
    """
    from ensclust.experiment.compare import run_compare

    if not Path(results_dir).is_dir():
        raise UserError(f"{results_dir}: no such results folder")
    comparisons = run_compare(results_dir, list(papers))
    several = len(comparisons) > 1
    for c in comparisons:
        if not quiet:
            if several:
                click.echo(f"== {c.paper_path}")
            compared = c.result[c.result["status"] == "compared"]
            for _, r in compared.iterrows():
                within = {"yes": "  (within paper std)", "no": "  (outside paper std)"}.get(r["within_paper_std"], "")
                click.echo(f"{r['metric']:>8} {r['dataset']:<22} {r['method']:<28} paper {r['paper_mean']:.4f}  "
                           f"ours {r['ours_mean']:.4f}  diff {r['diff']:+.4f}{within}")
            click.echo("wrote " + ", ".join(map(str, c.paths)))
        click.echo(f"{c.stem}: {c.line}" if several else c.line)
    if several and not quiet:
        click.echo(f"wrote {Path(results_dir) / 'comparison.md'} (index of the {len(comparisons)} comparisons)")


def add_commands(cli):
    cli.add_command(compare_command)

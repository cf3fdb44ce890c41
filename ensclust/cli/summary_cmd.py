"""``ensclust summary``: index of all results with their comparison summaries."""

from __future__ import annotations

import click

from ensclust.errors import UserError


@click.command("summary")
@click.argument("root", default="results", type=click.Path(file_okay=False))
@click.option("--out", default=None, help="output file (default ROOT/README.md)")
def summary_command(root, out):
    """Write an index of every experiment under ROOT with its comparison summary lines.

    \b
    Examples:
      ensclust summary
      ensclust summary results --out results/README.md
    """
    from pathlib import Path

    from ensclust.experiment.summary import write_summary

    if not Path(root).is_dir():
        raise UserError(f"{root}: no such results folder; run an experiment first (ensclust run CONFIG)")
    click.echo(f"wrote {write_summary(root, out)}")


def add_commands(cli):
    cli.add_command(summary_command)

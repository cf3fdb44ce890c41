"""``ensclust figure``: experiments of the papers' figures that are not a datasets x methods table."""

from __future__ import annotations

import click
from tqdm import tqdm


@click.group("figure")
def figure_group():
    """Run a paper figure's experiment and write its table and PNG.

    \b
    Examples:
      ensclust figure rcec-synthetic --out results/rcec_fig3_synthetic
      ensclust figure rcec-synthetic --repetitions 3 --max-extra 4 --quiet
    """


@figure_group.command("rcec-synthetic")
@click.option("--out", "out_dir", default="results/rcec_fig3_synthetic", show_default=True)
@click.option("--repetitions", default=20, show_default=True, type=click.IntRange(1))
@click.option("--max-extra", default=10, show_default=True, type=click.IntRange(0))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--quiet", is_flag=True, help="no progress bar")
def rcec_synthetic(out_dir, repetitions, max_extra, seed, quiet):
    """RCEC Fig. 3: NMI as normal / anomalous / extremely anomalous partitions are added."""
    from ensclust.figures import rcec_synthetic as exp

    total = 3 * (max_extra + 1) * repetitions
    with tqdm(total=total, disable=quiet, desc="rcec-synthetic") as bar:
        records = exp.run(out_dir, n_extra=range(max_extra + 1), repetitions=repetitions, seed=seed, progress=bar)
    click.echo(f"wrote {out_dir}/table.csv, table.md, fig3.png ({len(records)} records)")


def add_commands(cli):
    cli.add_command(figure_group)

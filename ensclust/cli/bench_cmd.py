"""``ensclust bench``."""

from __future__ import annotations

import click

from ensclust.cli.run_cmd import DATA_DIR_SEARCH


@click.command("bench")
@click.option("--out", "out_dir", default="results/bench", show_default=True, help="output folder")
@click.option("--only", multiple=True, metavar="METHOD", help="benchmark only this method (repeatable)")
@click.option("--quick", is_flag=True, help="only entries on built-in datasets (no data files needed)")
@click.option("--benchmarks", "bench_dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="folder with the benchmark *.yaml files (default: ./benchmarks, else the benchmarks/ "
                   "folder of the ensclust repository)")
@click.option("--timeout", type=float, default=1800.0, show_default=True, help="seconds per entry")
@click.option("--data-dir", default=None, metavar="DIR", help=f"datasets folder (default: {DATA_DIR_SEARCH})")
def bench_command(out_dir, only, quick, bench_dir, timeout, data_dir):
    """Time every benchmark entry (benchmarks/*.yaml), each in a fresh subprocess.

    Writes OUT/bench.csv and OUT/bench.md (method, params, dataset, n, M, time s, peak MB, goal).
    Entries whose data is absent are listed as skipped.

    \b
    Examples:
      ensclust bench
      ensclust bench --quick
      ensclust bench --only lwea --only eccms --out results/bench
    """
    from ensclust.bench import run_bench

    if timeout <= 0:
        from ensclust.errors import UserError

        raise UserError(f"--timeout must be > 0, got {timeout}")
    rows, paths = run_bench(bench_dir, out_dir, only=only, quick=quick, timeout=timeout, data_dir=data_dir,
                            echo=click.echo)
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    click.echo(f"{len(rows)} entries (" + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + "); wrote "
               + ", ".join(map(str, paths)))


def add_commands(cli):
    cli.add_command(bench_command)

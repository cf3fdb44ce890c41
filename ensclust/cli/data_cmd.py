"""``ensclust data list`` and ``ensclust data info``: the dataset registry and one dataset's summary."""

from __future__ import annotations

import click

from ensclust.data import (
    BUILTIN_NAMES,
    PREPROCESS,
    check_entry,
    describe,
    list_registry,
    load_dataset,
    resolve_data_dir,
)
from ensclust.errors import UserError

_DATA_DIR = click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder with the data files (default: $ENSCLUST_DATA, then ./datasets when it holds data files, then "
         "../shared/datasets next to the repository).",
)


@click.group("data")
def data_group():
    """Datasets: list the registry and inspect a dataset."""


@data_group.command("list")
@_DATA_DIR
@click.option("--pools/--no-pools", default=True, show_default=True, help="Also list the authors' pools.")
@click.option("--paper", default=None, help="Only datasets used by this paper (acmk, awec, eccms, rcec, spce).")
def data_list(data_dir, pools, paper):
    """Registry datasets with their status: present, missing, MISMATCH (checksum) or pool-only.

    \b
    Examples:
      ensclust data list
      ensclust data list --data-dir ../shared/datasets --paper eccms
    """
    ddir = resolve_data_dir(data_dir)
    if not ddir.is_dir():
        import os

        source = ("--data-dir" if data_dir else "ENSCLUST_DATA" if os.environ.get("ENSCLUST_DATA")
                  else "default; ../shared/datasets is absent too")
        what = "is not a folder" if ddir.exists() else "does not exist"
        raise UserError(f"data directory {ddir} ({source}) {what}; pass --data-dir DIR or set ENSCLUST_DATA "
                        "to the folder holding the data files")
    click.echo(f"data directory: {ddir}")
    counts: dict[str, int] = {}
    rows = []
    for name, e in sorted(list_registry().items()):
        papers = sorted({p["paper"] for p in e.get("papers", [])})
        if paper and paper not in papers:
            continue
        status, _path, _digest = check_entry(e, ddir)
        counts[_status_text(status)] = counts.get(_status_text(status), 0) + 1
        shape = f"{e['n']}x{e['d'] if e.get('d') else '?'}"
        flag = " SUBSTITUTE" if e.get("substitute") else ""
        labels = ", ".join(sorted({f"{p['paper']}:{p['label']}" for p in e.get("papers", [])}))
        rows.append((name, _status_text(status), shape, str(e["c"]), (e.get("file") or "-"), labels + flag))
    _table(["name", "status", "n x d", "c", "file", "papers (label in the paper tables)"], rows)
    if pools:
        click.echo("")
        prow = []
        for name, e in sorted(list_registry("pools").items()):
            if paper and paper not in {p["paper"] for p in e.get("papers", [])}:
                continue
            status, _path, _digest = check_entry(e, ddir)
            counts[f"pools {_status_text(status)}"] = counts.get(f"pools {_status_text(status)}", 0) + 1
            prow.append((name, _status_text(status), f"{e['n']}x{e['m']}", str(e.get("c") or "-"), e["file"],
                         e.get("dataset", "")))
        _table(["pool", "status", "n x m", "c", "file", "dataset"], prow)
    click.echo("")
    click.echo("summary: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    click.echo(f"built-ins (no file needed): {', '.join(BUILTIN_NAMES)}")


def _status_text(status: str) -> str:
    return {"present": "present", "missing": "missing", "mismatch": "MISMATCH", "no-file": "pool-only"}[status]


def _table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False))
    click.echo(line.rstrip())
    for r in rows:
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=False)).rstrip())


@data_group.command("info")
@click.argument("name")
@_DATA_DIR
@click.option("--preprocess", type=click.Choice(PREPROCESS), default="none", show_default=True)
@click.option("--x-key", default=None, help="Variable holding the features (default: auto-detect).")
@click.option("--y-key", default=None, help="Variable holding the labels (default: auto-detect).")
def data_info(name, data_dir, preprocess, x_key, y_key):
    """Shape, sparsity, class sizes and provenance of a dataset (registry name, built-in or file).

    \b
    Examples:
      ensclust data info ecoli
      ensclust data info tr11 --preprocess tfidf
      ensclust data info my_data.mat --x-key fea --y-key gnd
    """
    ds = load_dataset(name, data_dir=data_dir, preprocess=preprocess, x_key=x_key, y_key=y_key)
    info = describe(ds)
    click.echo(f"dataset:     {info['name']}")
    click.echo(f"source:      {ds.meta.get('source')}  {info['path'] or ''}".rstrip())
    if ds.meta.get("x_key"):
        click.echo(f"variables:   X={ds.meta['x_key']}  y={ds.meta['y_key']}")
    click.echo(f"shape:       n={info['n']}  d={info['d']}  c={info['c']}")
    kind = "sparse (CSR)" if info["sparse"] else "dense"
    click.echo(f"storage:     {kind}, density {info['density']:.4f}")
    click.echo(f"preprocess:  {info['preprocess']}")
    click.echo(f"class sizes: {info['class_sizes']}  (largest {info['largest_class']}, smallest {info['smallest_class']})")
    values = ds.meta.get("label_values", [])
    if values and values != list(range(len(values))):
        shown = ", ".join(str(v) for v in values[:20]) + (", ..." if len(values) > 20 else "")
        click.echo(f"labels:      original values {shown} -> 0..{len(values) - 1}")
    click.echo(f"sha256:      {info['sha256']}")
    if ds.meta.get("checksum_mismatch"):
        click.echo("WARNING:     checksum differs from the registry (a different file version)")
    reg = ds.meta.get("registry") or {}
    for p in reg.get("papers", []):
        note = f" - {p['note']}" if p.get("note") else ""
        click.echo(f"paper:       {p['paper']} '{p['label']}' (preprocess {p['preprocess']}){note}")
    if reg.get("substitute"):
        click.echo(f"SUBSTITUTE:  {reg.get('note', '')}")


def add_commands(cli):
    cli.add_command(data_group)

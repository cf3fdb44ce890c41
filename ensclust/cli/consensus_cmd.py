"""``ensclust consensus``: one method on a user's own label matrix."""

from __future__ import annotations

from pathlib import Path

import click

from ensclust.errors import UserError

#: CSV column names taken for ground truth, not a base clustering (case-insensitive): with such a column
#: ``consensus`` needs --y-key (use it as the ground truth) or --no-y (use it as a member).
GROUND_TRUTH_NAMES = ("truth", "label", "labels", "y", "class", "target", "gnd", "gt")


@click.command("consensus")
@click.option("--pool", "pool_file", required=True, type=click.Path(dir_okay=False),
              help="label matrix: .mat, .h5, .npz or .csv (n x m or m x n; 0- or 1-based)")
@click.option("--first", type=int, default=None, help="use the first M members only")
@click.option("--n-clusters", "-k", type=int, required=True, help="number of consensus clusters")
@click.option("--method", "-m", required=True, help="registered method name (see 'ensclust methods')")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="method parameter (repeatable)")
@click.option("--features", default=None, type=click.Path(dir_okay=False),
              help="dataset file with the features, for methods that need them")
@click.option("--members-key", default=None, help="variable holding the label matrix in the pool file")
@click.option("--y-key", default=None, metavar="NAME",
              help="variable / CSV column (name or index) of the ground truth: not a member; ARI and NMI are "
                   "printed. A CSV column named " + "/".join(GROUND_TRUTH_NAMES) + " (any case) is refused "
                   "unless --y-key names it or --no-y is given")
@click.option("--missing", default=None, type=int, metavar="VALUE",
              help="label value that marks a point a member did not label (e.g. -1); NaN and empty CSV cells are "
                   "always missing. Only methods flagged 'accepts missing labels' in 'ensclust methods' take them")
@click.option("--no-y", is_flag=True, help="no ground truth: every CSV column is a member")
@click.option("--seed", type=int, default=0, show_default=True, help="random_state of the method")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="output file: one label per line (0-based)")
def consensus_command(pool_file, first, n_clusters, method, params, features, members_key, y_key, missing, no_y,
                      seed, out):
    """Run one consensus method on a label matrix and write one label per line.

    When the pool file holds ground truth (--y-key, or a .mat/.h5/.npz variable named like y/gnd/gt/label),
    ARI and NMI are printed as well.

    \b
    Examples:
      ensclust consensus --pool ../shared/datasets/pools/eccms_ecoli.mat --first 20 -k 8 -m lwea --out labels.csv
      ensclust consensus --pool my_labels.csv -k 3 -m eccms --param alpha=0.8 --param lambda=0.4 --out out.txt
      ensclust consensus --pool partial.csv --missing -1 -k 3 -m lwea --out out.txt
    """
    import numpy as np

    from ensclust.core.labels import MISSING_LABEL
    from ensclust.experiment.runner import labels_sha256
    from ensclust.experiment.store import atomic_write_text
    from ensclust.experiment.sweep import parse_assignment
    from ensclust.methods import get_method, get_method_class
    from ensclust.pools import import_pool

    if n_clusters < 2:
        raise UserError(f"--n-clusters must be >= 2, got {n_clusters}")
    cls = get_method_class(method, where="--method")
    param_dict = dict(parse_assignment(p, "--param") for p in params)
    estimator = get_method(cls.name, **cls.check_params(param_dict, where="--param"))
    if y_key is not None and no_y:
        raise UserError("--y-key and --no-y exclude each other")
    if y_key is None and not no_y and Path(pool_file).suffix.lower() == ".csv":
        from ensclust.data.io import csv_header

        named = [c for c in (csv_header(pool_file) or []) if c.strip().lower() in GROUND_TRUTH_NAMES]
        if named:
            raise UserError(f"{pool_file}: column '{named[0]}' looks like ground truth, not a base clustering; "
                            f"pass --y-key {named[0]} to use it as the ground truth, or --no-y to use it as a member")
    pool = import_pool(pool_file, members_key=members_key, y_key=y_key, missing=missing)
    if no_y:
        pool.y = None
    members = np.asarray(pool.members)
    if first is not None:
        if not 1 <= first <= members.shape[1]:
            raise UserError(f"--first {first}: the pool has {members.shape[1]} members")
        members = members[:, :first]
    X = None
    if cls.needs_features:
        if features is None:
            raise UserError(f"method '{cls.name}' needs the features: pass --features FILE")
        from ensclust.data import load_dataset

        X = load_dataset(features).X
    # the imported pool is relabelled 0..k-1 per member, so -1 is a missing entry (NaN, empty cell, --missing)
    labels = estimator.fit_predict(members, n_clusters, X=X, random_state=seed, missing=MISSING_LABEL)
    atomic_write_text(Path(out), "".join(f"{int(v)}\n" for v in labels))
    n_missing = int(np.count_nonzero(members == MISSING_LABEL))
    gaps = f" ({n_missing} labels missing)" if n_missing else ""
    line = (f"{cls.name}: {members.shape[0]} points, {members.shape[1]} members{gaps} -> {int(labels.max()) + 1} "
            f"clusters; labels sha256 {labels_sha256(labels)[:12]}; wrote {out}")
    if pool.y is not None:
        from ensclust.metrics import ari, nmi

        line += f"; vs ground truth ARI {ari(pool.y, labels):.4f}, NMI {nmi(pool.y, labels):.4f}"
    click.echo(line)


def add_commands(cli):
    cli.add_command(consensus_command)

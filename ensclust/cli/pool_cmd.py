"""``ensclust pool build|show|import``: generate, cache, inspect and import pools of base clusterings."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np

from ensclust.data import PREPROCESS, get_pool_entry, load_dataset
from ensclust.errors import UserError
from ensclust.pools import DEFAULT_CACHE_DIR, GENERATORS, Pool, get_pool, import_pool

_DATA_DIR = click.option("--data-dir", type=click.Path(file_okay=False), default=None,
                         help="Folder with the data files (default: $ENSCLUST_DATA, then ./datasets or ../shared/datasets).")


def _parse_k(text: str):
    """``c`` | ``random`` | ``7`` | ``2:sqrt`` / ``[2, sqrt]`` / ``2,50``."""
    t = text.strip().strip("[]()")
    for sep in (":", ","):
        if sep in t:
            lo, hi = (s.strip().strip("'\"") for s in t.split(sep, 1))
            return [int(lo) if lo.isdigit() else lo, int(hi) if hi.isdigit() else hi]
    return int(t) if t.isdigit() else t


def _parse_ratio(text: str | None):
    if text is None:
        return None
    t = text.strip().strip("[]()")
    for sep in (":", ","):
        if sep in t:
            lo, hi = t.split(sep, 1)
            return [float(lo), float(hi)]
    return float(t)


def _spec_options(f):
    options = [
        click.option("--generator", type=click.Choice(GENERATORS), default="kmeans", show_default=True),
        click.option("--k", "k", default="random", show_default=True,
                     help="c | random (= [c, min(ceil(sqrt n), 50)]) | N | LO:HI (e.g. 2:sqrt, 10:50)."),
        click.option("--size", type=int, default=100, show_default=True, help="Number of members."),
        click.option("--feature-ratio", default=None, help="R or LO:HI, e.g. 0.6:1.0 (random feature subsets)."),
        click.option("--feature-subset", type=click.Choice(["member", "pool"]), default="member", show_default=True,
                     help="A new feature subset per member, or one subset for the whole pool (RCEC R9)."),
        click.option("--init", type=click.Choice(["k-means++", "random"]), default="k-means++", show_default=True),
        click.option("--seed", type=int, default=0, show_default=True, help="Master seed of the pool."),
        click.option("--preprocess", type=click.Choice(PREPROCESS), default="none", show_default=True),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=DEFAULT_CACHE_DIR, show_default=True,
                     help="Folder of the pool cache; a folder other than the default also keeps the data files' "
                          "checksums (sha256.json)."),
    ]
    for option in reversed(options):  # click lists options in decoration order, bottom-up
        f = option(f)
    return f


def _build(dataset, generator, k, size, feature_ratio, feature_subset, init, seed, preprocess, cache_dir, data_dir,
           progress):
    from contextlib import nullcontext

    from ensclust.data.registry import checksum_cache_dir

    # a chosen --cache-dir holds everything the command caches: the data files' checksums (sha256.json) too
    own_dir = Path(cache_dir) != Path(DEFAULT_CACHE_DIR)
    with checksum_cache_dir(cache_dir) if own_dir else nullcontext():
        ds = load_dataset(dataset, data_dir=data_dir, preprocess=preprocess)
        spec = {"source": "generate", "generator": generator, "k": _parse_k(k), "size": size,
                "feature_ratio": _parse_ratio(feature_ratio), "feature_subset": feature_subset, "init": init}
        t0 = time.perf_counter()
        pool = get_pool(ds, spec, seed=seed, data_dir=data_dir, cache_dir=cache_dir, progress=progress)
    return ds, pool, time.perf_counter() - t0


@click.group("pool")
def pool_group():
    """Pools of base clusterings: build (cached), show, import."""


@pool_group.command("build")
@click.argument("dataset")
@_spec_options
@_DATA_DIR
@click.option("--progress/--no-progress", default=True, show_default=True)
def pool_build(dataset, generator, k, size, feature_ratio, feature_subset, init, seed, preprocess, cache_dir, data_dir,
               progress):
    """Generate a pool for DATASET (registry name, built-in or file) and store it in the HDF5 cache.

    A second build with the same data, preprocessing, generator and seed is a cache hit.

    \b
    Examples:
      ensclust pool build ecoli --k 2:sqrt --size 100
      ensclust pool build usps --k 10:50 --size 100 --seed 0
      ensclust pool build tr11 --preprocess tfidf --k c --size 30 --feature-ratio 0.6:1.0
      ensclust pool build iris --generator spectral --k c --size 9
    """
    ds, pool, seconds = _build(dataset, generator, k, size, feature_ratio, feature_subset, init, seed, preprocess,
                               cache_dir, data_dir, progress)
    click.echo(f"pool for {ds.name} (n={ds.n_samples}, d={ds.n_features}, c={ds.n_clusters}): m={pool.size} members, "
               f"k {pool.ks.min()}..{pool.ks.max()}")
    click.echo(f"cache {pool.meta['cache']}: {pool.meta['path']} ({seconds:.2f} s)")


@pool_group.command("show")
@click.argument("target")
@_spec_options
@_DATA_DIR
@click.option("--members", "show_members", is_flag=True, help="Print one line per member (k, cluster sizes, NMI to truth).")
@click.option("--pairwise/--no-pairwise", default=True, show_default=True, help="Mean pairwise NMI between members.")
def pool_show(target, generator, k, size, feature_ratio, feature_subset, init, seed, preprocess, cache_dir, data_dir,
              show_members, pairwise):
    """Summary of a pool: per-member k, cluster sizes, mean pairwise NMI, quality against the ground truth.

    TARGET is an authors' pool name (e.g. eccms_ecoli), a pool file (.mat/.h5/.npz/.csv, including a cache
    file), or a dataset name with the generator options of ``pool build`` (read from the cache).

    \b
    Examples:
      ensclust pool show eccms_ecoli --members
      ensclust pool show ecoli --k 2:sqrt --size 100
      ensclust pool show results/cache/pools/<key>.h5
    """
    entry = get_pool_entry(target)
    if entry is not None:
        pool = get_pool(None, {"source": "file", "file": entry["file"]}, seed=0, data_dir=data_dir)
    elif Path(target).suffix.lower() in (".mat", ".h5", ".hdf5", ".npz", ".csv"):
        # a path in the current folder, absolute, or relative to the data directory (like pool.file)
        pool = get_pool(None, {"source": "file", "file": target}, seed=0, data_dir=data_dir)
    else:
        _ds, pool, _ = _build(target, generator, k, size, feature_ratio, feature_subset, init, seed, preprocess,
                              cache_dir, data_dir, progress=False)
    _summarise(pool, show_members=show_members, pairwise=pairwise)


def _summarise(pool: Pool, *, show_members: bool, pairwise: bool) -> None:
    from ensclust.metrics import ari, nmi

    counts = pool.cluster_counts()
    M = pool.members
    known = M != -1     # missing entries (incomplete ensembles) are left out of every score below

    def score(metric, a, b, keep):
        return metric(a[keep], b[keep])

    name = pool.meta.get("dataset", {}).get("name", "")
    click.echo(f"pool:     {name}  n={pool.n_samples}  m={pool.size}  source={pool.meta.get('source', 'file')}")
    if pool.meta.get("path"):
        click.echo(f"file:     {pool.meta['path']}")
    click.echo(f"clusters: k per member {counts.min()}..{counts.max()} (mean {counts.mean():.1f})")
    n_missing = pool.n_missing
    if n_missing:
        partial = int(np.count_nonzero((~known).any(axis=0)))
        click.echo(f"missing:  {n_missing} of {M.size} labels ({100.0 * n_missing / M.size:.1f} %) in {partial} of "
                   f"{pool.size} members; {int(np.count_nonzero((~known).any(axis=1)))} points lack some label "
                   "(methods that accept missing labels: 'ensclust methods', flag 'accepts missing labels')")
    gen = pool.meta.get("generator")
    if gen:
        click.echo(f"config:   {json.dumps(gen, sort_keys=True, default=str)}")
    if pool.y is not None:
        nmis = np.array([score(nmi, pool.y, M[:, j], known[:, j]) for j in range(pool.size)])
        aris = np.array([score(ari, pool.y, M[:, j], known[:, j]) for j in range(pool.size)])
        c = int(pool.y.max()) + 1
        over = " (over the labelled points)" if n_missing else ""
        click.echo(f"truth:    c={c}; member NMI mean {nmis.mean():.4f} (std {nmis.std(ddof=1) if pool.size > 1 else 0:.4f}, "
                   f"best {nmis.max():.4f}); ARI mean {aris.mean():.4f} (best {aris.max():.4f}){over}")
    if pairwise and pool.size > 1:
        m = pool.size
        vals = [score(nmi, M[:, a], M[:, b], known[:, a] & known[:, b]) for a in range(m) for b in range(a + 1, m)
                if (known[:, a] & known[:, b]).any()]
        click.echo(f"diversity: mean pairwise NMI {np.mean(vals):.4f} over {len(vals)} pairs")
    if show_members:
        for j in range(pool.size):
            lab = M[known[:, j], j]
            sizes = np.bincount(lab)
            nmi_j = f"  NMI {nmi(pool.y[known[:, j]], lab):.4f}" if pool.y is not None else ""
            seed = f"  seed {pool.seeds[j]}" if pool.seeds[j] >= 0 else ""
            miss = f"  missing {int(np.count_nonzero(~known[:, j]))}" if n_missing else ""
            click.echo(f"  member {j:3d}: k={counts[j]:3d}  sizes min {sizes.min()} max {sizes.max()}{nmi_j}{seed}{miss}")


@pool_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--members-key", default=None, help="Variable of the label matrix (default: auto-detect).")
@click.option("--y-key", default=None, help="Variable / CSV column of the ground truth (optional).")
@click.option("--layout", type=click.Choice(["auto", "nm", "mn"]), default="auto", show_default=True,
              help="nm = samples in rows, mn = members in rows; auto uses the ground-truth length or the longer axis.")
@click.option("--missing", default=None, type=int, metavar="VALUE",
              help="Label value that marks a point a member did not label (e.g. -1); NaN and empty CSV cells "
                   "are always missing.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the pool as HDF5 (members n x m int32 with -1 = missing, ks, seeds, y) for use with "
                   "pool.file.")
def pool_import(file, members_key, y_key, layout, missing, out):
    """Import a label matrix (.mat/.h5/.csv/.npz, 0- or 1-based, n x m or m x n, optional ground truth).

    \b
    Examples:
      ensclust pool import my_members.csv --y-key truth
      ensclust pool import bcs.mat --members-key BCs --layout mn --out results/my_pool.h5
      ensclust pool import partial.csv --missing -1 --out results/partial.h5
    """
    pool = import_pool(file, members_key=members_key, y_key=y_key, layout=layout, missing=missing)
    _summarise(pool, show_members=False, pairwise=False)
    if out:
        import h5py

        out = Path(out)
        if out.suffix.lower() not in (".h5", ".hdf5"):
            raise UserError(f"{out}: --out must end in .h5 or .hdf5")
        from ensclust.experiment.store import ensure_dir

        ensure_dir(out.parent)
        tmp = out.with_name(out.name + ".tmp")
        try:
            with h5py.File(tmp, "w") as fh:
                fh["members"] = pool.members
                fh["ks"] = pool.ks
                fh["seeds"] = pool.seeds
                if pool.y is not None:
                    fh["y"] = pool.y
                fh.attrs["source"] = str(file)
                fh.attrs["members_sha256"] = pool.meta["members_sha256"]
                if pool.n_missing:
                    fh.attrs["missing_label"] = -1   # read back by import_pool: -1 = not labelled
            tmp.replace(out)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UserError(f"{out}: cannot write the file ({exc.strerror or str(exc).splitlines()[0]})") from None
        click.echo(f"written:  {out}")


def add_commands(cli):
    cli.add_command(pool_group)

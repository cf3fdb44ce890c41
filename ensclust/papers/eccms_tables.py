"""EC-CMS tables outside the datasets x methods grid: Table IX (run times, ours beside the paper's, from
finished experiment cells and single-threaded CPU measurements), the speed floor of one fit, Table III offsets.

The paper's Table IX lists MATLAB run times (R2020a, 2.3 GHz CPU, 16 GB) of one EC-CMS run per data set. Ours:
the CPU time of one single-threaded fit on the paper's first ensemble (``cpu``; robust to other jobs on a shared
machine) and the ``time_s`` of the runner's cells (wall clock of ``fit_predict``: LWCA, high-confidence matrix,
ADMM, average link) of the fixed-setting rows (alpha = 0.8, lambda = 0.4), averaged over the computed runs.

Command line (``ensclust paper --help``)::

    OMP_NUM_THREADS=1 ensclust paper eccms-cpu ecoli umist aggregation --out results/eccms_table9_time/cpu_times.csv
    OMP_NUM_THREADS=1 ensclust paper eccms-floor ecoli ls --out results/eccms_table9_time/floor.csv
    ensclust paper eccms-table9 --out results/eccms_table9_time \\
        results/eccms_table4_proposed results/eccms_table4_proposed_large results/eccms_table4_proposed_xl
    ensclust paper eccms-table3 results/eccms_table3_gamma_umist
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.store import ResultStore, atomic_write_text

FIXED_LABEL = "Proposed (alpha=0.8, lambda=0.4)"
#: pool file stem -> data set name in the paper tables
PAPER_NAMES = {"ecoli": "Ecoli", "umist": "UMIST", "aggregation": "Aggregation", "spf": "SPF", "caltech20": "Caltech20",
               "fct": "FCT", "texture": "Texture", "ls": "LS", "isolet": "ISOLET", "usps": "USPS"}


def collect_times(result_dirs, label: str = FIXED_LABEL) -> pd.DataFrame:
    """Per-dataset mean / min wall time, iterations and run count of the cells with method ``label``.

    Read from each folder's committed ``cells.csv`` and ``timing.csv`` (the store's checked readers; a cell's
    time is its timing row of the same data set, method, point and repetition), so a clone without the
    per-cell files gives the same table.
    """
    key = ["dataset", "method", "point", "rep"]
    frames = []
    for root in map(Path, result_dirs):
        store = ResultStore(root)
        timing = store.load_timing() if (root / "cells.csv").exists() else None
        if timing is None:
            continue
        cells = store.load_cells()
        ok = cells[(cells["method"] == label) & (cells["status"] == "ok")]
        frames.append(ok.merge(timing[[*key, "time_s"]], on=key)[["dataset", "n", "time_s", "n_iter"]]
                      .assign(source=root.name))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if frame.empty:
        return pd.DataFrame(columns=["dataset", "n", "runs", "ours_mean_s", "ours_min_s", "mean_iter", "source"])
    return frame.groupby("dataset").agg(n=("n", "first"), runs=("time_s", "size"), ours_mean_s=("time_s", "mean"),
                                        ours_min_s=("time_s", "min"), mean_iter=("n_iter", "mean"),
                                        source=("source", "first")).reset_index()


def paper_run1_ensemble(name: str, data_dir, ensemble_size: int = 20):
    """``(members, y)`` of the paper's first run on the authors' pool ``pools/eccms_<name>.mat``: columns
    ``argsort(RandomState(1).rand(100))[:ensemble_size]`` (spec 4, the rng(1) randperm stream's first draw)."""
    import numpy as np
    from scipy.io import loadmat

    pool = loadmat(str(Path(data_dir) / "pools" / f"eccms_{name.lower()}.mat"))
    cols = np.argsort(np.random.RandomState(1).rand(pool["members"].shape[1]), kind="stable")[:ensemble_size]
    return pool["members"][:, cols].astype(np.int64), pool["gt"].ravel()


def _append_row(out_csv, row: dict) -> None:
    """Append one measurement to ``out_csv`` (header when new), atomically: a run stopped mid-write or an
    unwritable path leaves the file as it was (the latter as a one-line error)."""
    out = Path(out_csv)
    old = out.read_text() if out.exists() else ""
    atomic_write_text(out, old + pd.DataFrame([row]).to_csv(header=not old, index=False, float_format="%.5g"))


def measure_cpu(datasets, data_dir, out_csv, *, alpha=0.8, lam=0.4, ensemble_size=20) -> pd.DataFrame:
    """CPU seconds (``time.process_time``) of one fit on the paper's run-1 ensemble of each authors' pool.

    Run with ``OMP_NUM_THREADS=1``: CPU time of a single-threaded process is not inflated by other jobs on a
    shared machine the way wall time is. Run 1 = columns ``argsort(RandomState(1).rand(100))[:20]`` (spec 4).
    Appends one row per dataset to ``out_csv`` (so datasets can be measured in several sessions).
    """
    import time

    import numpy as np

    from ensclust.methods import get_method
    from ensclust.metrics import ari

    rows = []
    for name in datasets:
        members, y = paper_run1_ensemble(name, data_dir, ensemble_size)
        model = get_method("eccms", alpha=alpha, **{"lambda": lam})
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        labels = model.fit_predict(members, int(np.unique(y).size))
        cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
        d = model.diagnostics_
        rows.append({"dataset": PAPER_NAMES.get(name.lower(), name), "n": members.shape[0], "cpu_s": cpu, "wall_s": wall, "n_iter": d["n_iter"],
                     "dtype": d["dtype"], "gemm_cost_ratio": d["gemm_cost_ratio"], "ari_run1": ari(y, labels)})
        print(rows[-1], flush=True)
        _append_row(out_csv, rows[-1])
    return pd.DataFrame(rows)


def measure_floor(datasets, data_dir, out_csv, paper_csv, *, alpha=0.8, lam=0.4, ensemble_size=20,
                  repeats=3, known_iter=None) -> pd.DataFrame:
    """Lower bound on one EC-CMS fit's CPU time: (ADMM iterations) x (CPU time of one C-update's GEMMs).

    The C-update (Eq. 9) multiplies the fixed block inverse of ``2 Phi + (g1 + g2) I`` (dense blocks, or the
    bordered block-diagonal form of :mod:`ensclust.core.spd_inverse` for large sparse ones) with a dense n x n
    right-hand side in every iteration; whatever else an implementation does, it cannot skip these products.
    Per data set (the paper's run-1 ensemble, alpha = 0.8, lambda = 0.4, the solver's dtype rule): the best of
    ``repeats`` single-threaded CPU times of exactly the solver's block GEMMs, one ADMM iteration measured
    as (best time of 4 iterations - best time of 1 iteration) / 3, and the iteration count (``known_iter[dataset]``, e.g.
    the mean over the runs of Table IX, else one full solve is run to count them). The floor is
    ``n_iter x gemm_s``; the 20x goal of issue #5 is the paper's Table IX time / 20. Run with
    ``OMP_NUM_THREADS=1``: CPU time of one thread does not depend on the other jobs of a shared machine.
    """
    import time

    import numpy as np

    from ensclust.core.coassoc import coassociation
    from ensclust.core.labels import check_members
    from ensclust.core.lwca import lwca_matrix
    from ensclust.methods._eccms_solver import high_confidence_matrix, laplacian_blocks, solve
    from ensclust.methods.eccms import AUTO_FLOAT32_ABOVE

    paper = pd.read_csv(paper_csv)
    paper = paper[paper["method"] == "Proposed"].set_index("dataset")["mean"].astype(float)
    rows = []
    for name in datasets:
        members = check_members(paper_run1_ensemble(name, data_dir, ensemble_size)[0])
        n = members.shape[0]
        dtype = np.dtype(np.float32 if n > AUTO_FLOAT32_ABOVE else np.float64)
        H = high_confidence_matrix(coassociation(members, dtype=np.float64, dense=False), alpha)
        A = lwca_matrix(members, 0.4, dtype=dtype)
        _, blocks, _ = laplacian_blocks(H, 1.0, 1.0)
        blocks = [blk.astype(dtype) for blk in blocks]
        rhs = np.random.default_rng(0).random((n, n)).astype(dtype)
        gemm = []
        for _ in range(repeats + 1):           # the first call warms up BLAS and is not counted
            start = time.process_time()
            for blk in blocks:
                _ = blk.apply(rhs[blk.start:blk.stop])
            gemm.append(time.process_time() - start)
        gemm = gemm[1:]
        iters = {1: [], 4: []}
        for _ in range(repeats):
            for k in (1, 4):
                start = time.process_time()
                solve(A, H, lam, max_iter=k, dtype=dtype)
                iters[k].append(time.process_time() - start)
        iters = {k: min(v) for k, v in iters.items()}
        label = PAPER_NAMES.get(name.lower(), name)
        n_iter = (known_iter or {}).get(label)
        if n_iter is None or not np.isfinite(n_iter):
            n_iter = solve(A, H, lam, dtype=dtype)[1]["n_iter"]
        ratio = sum(blk.inv.cost for blk in blocks) / n ** 2
        row = {"dataset": label, "n": n, "dtype": str(dtype), "gemm_cost_ratio": ratio,
               "gemm_s": min(gemm), "iteration_s": (iters[4] - iters[1]) / 3, "n_iter": float(n_iter)}
        row["floor_s"] = row["n_iter"] * row["gemm_s"]
        row["paper_s"] = float(paper.get(label, float("nan")))
        row["goal_20x_s"] = row["paper_s"] / 20
        row["floor_over_goal"] = row["floor_s"] / row["goal_20x_s"]
        rows.append(row)
        print(row, flush=True)
        _append_row(out_csv, row)
    return pd.DataFrame(rows)


def floor_markdown(floor_csv) -> str:
    """floor.md beside ``floor_csv`` (one row per data set, the last measurement wins); returns the text."""
    frame = pd.read_csv(floor_csv).drop_duplicates("dataset", keep="last")
    lines = ["| dataset | n | dtype | GEMM cost ratio | one C-update's GEMMs (s) | one ADMM iteration (s) | iterations |"
             " floor = iterations x GEMMs (s) | paper (s) | 20x goal (s) | floor / goal |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        lines.append(f"| {r['dataset']} | {r['n']} | {r['dtype']} | {r['gemm_cost_ratio']:.3f} | {r['gemm_s']:.4g} | "
                     f"{r['iteration_s']:.4g} | {r['n_iter']:.1f} | {r['floor_s']:.4g} | {r['paper_s']:.4g} | "
                     f"{r['goal_20x_s']:.3g} | {r['floor_over_goal']:.1f}x |")
    text = "\n".join(lines) + "\n"
    atomic_write_text(Path(floor_csv).with_suffix(".md"), text)
    return text


def table9(result_dirs, paper_csv, out_dir) -> pd.DataFrame:
    """Write table9_time.csv / .md (ours beside the paper's) into ``out_dir`` and return the frame."""
    paper = pd.read_csv(paper_csv)
    paper = paper[paper["method"] == "Proposed"][["dataset", "mean"]].rename(columns={"mean": "paper_s"})
    ours = collect_times(result_dirs)
    if ours.empty:
        raise UserError(f"no finished '{FIXED_LABEL}' cells (cells.csv + timing.csv) in "
                        + ", ".join(map(str, result_dirs)))
    table = paper.merge(ours, on="dataset", how="left")
    cpu_file = Path(out_dir) / "cpu_times.csv"
    if cpu_file.exists():
        cpu = pd.read_csv(cpu_file).drop_duplicates("dataset", keep="last")[["dataset", "cpu_s", "n_iter"]]
        table = table.merge(cpu.rename(columns={"n_iter": "cpu_run_iter"}), on="dataset", how="left")
    else:
        table["cpu_s"] = float("nan")
    table["speedup_cpu"] = table["paper_s"].astype(float) / table["cpu_s"]
    table["paper_s"] = table["paper_s"].astype(float)
    table["speedup_mean"] = table["paper_s"] / table["ours_mean_s"]
    table["speedup_best"] = table["paper_s"] / table["ours_min_s"]
    table["goal_20x_s"] = table["paper_s"] / 20
    table["goal_met_cpu"] = table["cpu_s"] <= table["goal_20x_s"]
    out = Path(out_dir)
    atomic_write_text(out / "table9_time.csv", table.to_csv(index=False, float_format="%.4g"))

    def fmt(v, spec=".4g", suffix=""):
        return "" if pd.isna(v) else f"{v:{spec}}{suffix}"

    lines = ["| dataset | paper (s) | ours CPU, 1 thread, run 1 (s) | speed-up (CPU) | 20x goal (s) | met |"
             " ours wall mean (s) | wall best (s) | runs | mean iter |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        met = "" if pd.isna(r["cpu_s"]) else ("yes" if r["goal_met_cpu"] else "no")
        lines.append(f"| {r['dataset']} | {r['paper_s']:.4g} | {fmt(r['cpu_s'])} | {fmt(r['speedup_cpu'], '.3g', 'x')} | "
                     f"{r['goal_20x_s']:.3g} | {met} | {fmt(r['ours_mean_s'])} | {fmt(r['ours_min_s'])} | "
                     f"{fmt(r['runs'], '.0f')} | {fmt(r['mean_iter'], '.1f')} |")
    atomic_write_text(out / "table9_time.md", "\n".join(lines) + "\n")
    return table


def table3_offsets(result_dir, paper_csv, out_dir=None) -> pd.DataFrame:
    """Table III: mean ARI / NMI / F-score per (gamma1, gamma2) as offsets from gamma1 = gamma2 = 1, beside the paper.

    The paper prints the default column as absolute values and every other column as an offset from it; the
    relative change of ||C||_F (its fourth row) is not stored in our cells and is not reproduced.
    """
    cells = pd.read_csv(Path(result_dir) / "cells.csv")
    cells = cells[cells["status"] == "ok"]
    params = cells["params"].map(json.loads)
    cells = cells.assign(gamma1=params.map(lambda p: float(p.get("gamma1", 1.0))),
                         gamma2=params.map(lambda p: float(p.get("gamma2", 1.0))))
    names = {"ari": "ARI", "nmi": "NMI", "fscore": "F-score"}
    means = cells.groupby(["gamma1", "gamma2"])[list(names)].mean()
    default = means.loc[(1.0, 1.0)]
    paper = pd.read_csv(paper_csv)
    rows = []
    for (g1, g2), vals in means.iterrows():
        key = f"gamma1={g1:g};gamma2={g2:g}" if g1 == 1.0 else f"gamma2={g2:g};gamma1={g1:g}"
        for metric, label in names.items():
            absolute = g1 == 1.0 and g2 == 1.0
            ours = vals[metric] if absolute else vals[metric] - default[metric]
            hit = paper[(paper["metric"] == label) & paper["param"].str.startswith(key + ";")]
            rows.append({"gamma1": g1, "gamma2": g2, "metric": label, "kind": "absolute" if absolute else "offset",
                         "ours": round(float(ours), 3),
                         "paper": float(hit["mean"].iloc[0]) if len(hit) else float("nan"),
                         "runs": int(((cells["gamma1"] == g1) & (cells["gamma2"] == g2)).sum())})
    table = pd.DataFrame(rows)
    if out_dir is not None:
        out = Path(out_dir)
        atomic_write_text(out / "table3_offsets.csv", table.to_csv(index=False))
        lines = ["| gamma1 | gamma2 | metric | kind | ours | paper |", "|---|---|---|---|---|---|"]
        for _, r in table.iterrows():
            lines.append(f"| {r['gamma1']:g} | {r['gamma2']:g} | {r['metric']} | {r['kind']} | {r['ours']:+.3f} | "
                         f"{r['paper']:+.3f} |")
        atomic_write_text(out / "table3_offsets.md", "\n".join(lines) + "\n")
    return table


"""Audit SPCE's LOBPCG eigenpairs against dense eigh, before and after the miss check.

    python audit.py OUT_PREFIX run <config> --dataset X --method SPCE --results DIR --quiet
    python audit.py OUT_PREFIX npz <file.npz> <theta> [n_members]

``run``: calls ``ensclust.cli.main(["run", ...])`` with two patches installed: ``runner.run_cell`` runs each
cell twice, once with the committed solver (``check_missed=False``) and once with the miss check, in
alternating order, and returns the committed solver's record to the runner (so DIR/<config>/cells.csv can be
compared with the committed cells.csv); ``_spce_spectrum._component_eigenpairs`` is wrapped so that every
LOBPCG call is also solved by dense ``scipy.linalg.eigh(L, subset_by_index=[0, q + 2])`` on the same
component. ``npz``: one fit of members[:, :n_members] (default 20) with each solver (ACC/NMI/ARI when the
file holds y). Env AUDIT_MAX_CALL=k: the dense reference only for the first k LOBPCG calls of a fit (the
later calls are recorded with ``audited`` false); AUDIT_DUMP=DIR: pickle the first missed problems.

Writes OUT_PREFIX.calls.jsonl (one line per LOBPCG call) and OUT_PREFIX.fits.jsonl (one line per fit).
CPU seconds: ``cpu_s`` is the runner's fit CPU minus the audit's own CPU (dense eigh, hashing).
"""
import hashlib
import json
import sys
import time

import numpy as np
import scipy.linalg

import ensclust.methods._spce_spectrum as ss

out_prefix, kind = sys.argv[1], sys.argv[2]
calls_f = open(out_prefix + ".calls.jsonl", "a")
fits_f = open(out_prefix + ".fits.jsonl", "a")
STATE = {"mode": "orig", "cell": None, "call": 0, "audit_cpu": 0.0, "misses": 0, "calls": 0, "labels": None}
EXACT = {}  # sha1 of the component's S -> exact eigenvalues (the two modes share the matrices until they differ)
ITERS = []
MAX_CALL = int(__import__("os").environ.get("AUDIT_MAX_CALL", "1000000"))  # dense reference only up to here
DUMP = __import__("os").environ.get("AUDIT_DUMP")  # directory: pickle the first missed problems of a fit

_lobpcg = ss.lobpcg


def counting_lobpcg(*args, **kwargs):
    vals, vecs, hist = _lobpcg(*args, retResidualNormsHistory=True, **kwargs)
    ITERS.append(len(hist))
    return vals, vecs


ss.lobpcg = counting_lobpcg
_orig = ss._component_eigenpairs


def wrapped(S_sym, idx, q, warm, rng_seed, dense_limit, tol, maxiter, factor=None):
    sub = S_sym if idx is None else S_sym[idx][:, idx]
    s = sub.shape[0]
    if s <= dense_limit or q + 1 >= s // 5:
        return _orig(S_sym, idx, q, warm, rng_seed, dense_limit, tol, maxiter, factor=factor)
    ITERS.clear()
    t0 = time.process_time()
    out = _orig(S_sym, idx, q, warm, rng_seed, dense_limit, tol, maxiter, factor=factor,
                check_missed=STATE["mode"] == "fix")
    solve_cpu = time.process_time() - t0
    iters = list(ITERS)
    t1 = time.process_time()
    h = hashlib.sha1()
    for a in (sub.indptr, sub.indices, sub.data):
        h.update(np.ascontiguousarray(a).tobytes())
    key = (h.hexdigest(), q)
    if STATE["call"] + 1 > MAX_CALL:  # no dense reference for this call: record the solve only
        STATE["call"] += 1
        STATE["calls"] += 1
        calls_f.write(json.dumps(dict(cell=STATE["cell"], mode=STATE["mode"], call=STATE["call"], s=s, q=q,
                                      nnz=int(sub.nnz), lowrank=factor is not None, solver=out[2], iters=iters,
                                      solve_cpu=solve_cpu, lobpcg=np.asarray(out[0]).tolist(), exact=None,
                                      miss=False, n_missed=0, max_abs_diff=0.0, audited=False, key=key[0])) + "\n")
        STATE["audit_cpu"] += time.process_time() - t1
        return out
    if key not in EXACT:
        L = ss._dense_laplacian(sub)
        EXACT[key] = scipy.linalg.eigh(L, subset_by_index=[0, min(q + 2, s - 1)], eigvals_only=True,
                                       overwrite_a=True, check_finite=False)
    exact = EXACT[key]
    vals = np.asarray(out[0])
    top = float(vals[-1])
    thr = top - 1e-6 * abs(top)
    n_exact_below = int(np.sum(exact[1:] < thr))
    n_ret_below = int(np.sum(vals < thr))
    miss = n_exact_below > n_ret_below
    STATE["call"] += 1
    STATE["calls"] += 1
    STATE["misses"] += int(miss)
    rec = dict(cell=STATE["cell"], mode=STATE["mode"], call=STATE["call"], s=s, q=q, nnz=int(sub.nnz),
               lowrank=factor is not None, solver=out[2], iters=iters, solve_cpu=solve_cpu,
               lobpcg=vals.tolist(), exact=exact.tolist(), miss=bool(miss), n_missed=n_exact_below - n_ret_below,
               max_abs_diff=float(np.max(np.abs(vals - exact[1:q + 1]))), audited=True, key=key[0])
    if miss and DUMP and STATE["mode"] == "orig" and STATE["misses"] <= 2:
        import os
        import pickle
        with open(os.path.join(DUMP, f"miss_{os.getpid()}_{STATE['calls']}_{len(EXACT)}.pkl"), "wb") as fh:
            pickle.dump(dict(sub=sub, q=q, warm=warm, seed=rng_seed, factor=None if factor is None else (
                factor[0] if idx is None else factor[0][idx], factor[1]), tol=tol, maxiter=maxiter,
                exact=exact, vals=vals, cell=STATE["cell"], call=STATE["call"]), fh)
    calls_f.write(json.dumps(rec) + "\n")
    calls_f.flush()
    STATE["audit_cpu"] += time.process_time() - t1
    return out


ss._component_eigenpairs = wrapped


def begin(cell, mode):
    STATE.update(mode=mode, cell=cell, call=0, audit_cpu=0.0, misses=0, calls=0, labels=None)


def fit_line(extra):
    line = dict(cell=STATE["cell"], mode=STATE["mode"], lobpcg_calls=STATE["calls"], misses=STATE["misses"],
                audit_cpu=STATE["audit_cpu"], **extra)
    fits_f.write(json.dumps(line) + "\n")
    fits_f.flush()


if kind == "run":
    import ensclust.experiment.runner as runner
    from ensclust.cli import main
    from ensclust.metrics import evaluate

    _hash = runner.labels_sha256

    def keep_hash(labels):
        STATE["labels"] = np.asarray(labels)
        return _hash(labels)

    runner.labels_sha256 = keep_hash
    _run_cell = runner.run_cell
    counter = [0]

    def run_cell(ctx, cell):
        modes = ("orig", "fix") if counter[0] % 2 == 0 else ("fix", "orig")
        counter[0] += 1
        name = f"{cell['dataset']}|{cell['method']}|{cell['params']}|{cell['rep']}"
        result = {}
        for mode in modes:
            begin(name, mode)
            rec = _run_cell(ctx, cell)
            scores = {}
            if STATE["labels"] is not None:
                scores = evaluate(ctx.y, STATE["labels"], ["acc", "nmi", "ari"], ctx.nmi_average)
                scores = {k: float(v) for k, v in scores.items()}
            fit_line(dict(labels_sha256=rec["labels_sha256"], status=rec["status"], error=rec.get("error"),
                          cpu_s=(rec["cpu_s"] or 0.0) - STATE["audit_cpu"], cpu_s_with_audit=rec["cpu_s"],
                          n_clusters_found=rec["n_clusters_found"], n_iter=rec["n_iter"], scores=scores))
            result[mode] = rec
        return result["orig"]

    runner.run_cell = run_cell
    main(sys.argv[3:])
elif kind == "npz":
    from ensclust.experiment.runner import labels_sha256
    from ensclust.methods import get_method

    path, theta = sys.argv[3], float(sys.argv[4])
    m = int(sys.argv[5]) if len(sys.argv) > 5 else 20
    d = np.load(path)
    members, c = d["members"][:, :m], int(d["c"])
    y = d["y"] if "y" in d else None
    for mode in ("orig", "fix"):
        begin(f"{path}|theta={theta}|m={m}", mode)
        t = time.process_time()
        labels = get_method("spce", theta=theta).fit_predict(members, c)
        cpu = time.process_time() - t
        scores = {}
        if y is not None:
            from ensclust.metrics import evaluate
            scores = {k: float(v) for k, v in evaluate(y, labels, ["acc", "nmi", "ari"], "geometric").items()}
        fit_line(dict(labels_sha256=labels_sha256(labels), cpu_s=cpu - STATE["audit_cpu"],
                      cpu_s_with_audit=cpu, scores=scores))

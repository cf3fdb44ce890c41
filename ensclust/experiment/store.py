"""The results store of one experiment: ``results/<name>/``.

Layout::

    experiment.json   the validated config (what the tables are rebuilt from)
    forced.json       while a --force run is unfinished: the cells it has still to recompute (a rerun
                      without --force resumes them)
    inputs.json       per data set, a digest of the inputs its cells were computed on (features, truth,
                      pool members, ensemble draws); a run that finds other inputs recomputes that data
                      set's stored cells
    cells/*.json      one record per finished cell, written atomically (temp file + os.replace); gitignored
    cells.csv         all finished cells of the current plan, one row per cell (per-repetition metrics);
                      deterministic: same config + seed -> byte-identical file (no timings in it);
                      rebuilt from cells/*.json by ``ensclust report`` / ``compare`` when missing or older
                      than the newest cell file (a run killed with SIGKILL never wrote it)
    timing.csv        wall time, CPU time, peak memory and environment id per cell (not deterministic, hence a
                      separate file)
    environment.json  what each environment id of timing.csv stands for: library versions, BLAS kernels and
                      threads, CPU (see ensclust.experiment.environment)
    table_<metric>.csv / tables.md / tables.tex   the reports

Every file is written to a temporary name in the same folder and moved into place with ``os.replace``,
so an interrupted run never leaves a half-written file: a rerun sees each cell either done or not done.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

import pandas as pd

from ensclust.errors import UserError
from ensclust.experiment.config import ExperimentConfig, canonical_json
from ensclust.experiment.plan import plan_cells

CELL_COLUMNS = ["dataset", "method", "method_name", "point", "params", "rep", "seed", "status",
                "labels_sha256", "n", "m", "n_clusters", "n_clusters_found", "n_iter", "converged"]
TIMING_COLUMNS = ["dataset", "method", "point", "rep", "time_s", "cpu_s", "peak_mem_mb", "mem_method", "env"]


def atomic_write_text(path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (``os.umask`` is set-and-return)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """Mode of the files ensclust writes: 0666 minus the umask (0644 with the usual umask 022), like ``open``."""
    return 0o666 & ~_umask()


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def ensure_dir(path) -> Path:
    """Create folder ``path`` with its parents; a folder that cannot be created is a :class:`UserError`."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserError(f"{path}: cannot create the folder (a file of that name exists)") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot create the folder ({_reason(exc)})") from None
    return path


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    The file gets the mode ``open`` would give it (0644 under umask 022; ``mkstemp`` alone makes it 0600).
    A destination that cannot be written (no permission, a file where a folder is expected, disk full) is a
    :class:`UserError` naming the path.
    """
    path = Path(path)
    ensure_dir(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UserError(f"{path}: cannot write the file ({_reason(exc)})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UserError(f"{path}: cannot write the file ({_reason(exc)})") from None
        raise


def read_csv_checked(path, what: str, remedy: str, **kwargs) -> pd.DataFrame:
    """``pd.read_csv`` of a file ensclust wrote; a truncated or damaged file is a one-line :class:`UserError`."""
    try:
        return pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{path}: corrupt or truncated {what} ({detail}); {remedy}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what} ({_reason(exc)})") from None


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-")[:40] or "x"


def cell_filename(dataset: str, method: str, params_json: str, rep: int) -> str:
    digest = hashlib.sha1(f"{dataset}\x1f{method}\x1f{params_json}".encode()).hexdigest()[:10]
    rep_part = "pool" if rep < 0 else f"r{rep:03d}"
    return f"{slug(dataset)}__{slug(method)}__{digest}__{rep_part}.json"


def _valid_inputs_entry(value) -> bool:
    """An ``inputs.json`` entry: {"base": digest, "draws": [digest, ...]}, or one digest string (older folders)."""
    if isinstance(value, str):
        return True
    return (isinstance(value, dict) and set(value) == {"base", "draws"} and isinstance(value["base"], str)
            and isinstance(value["draws"], list) and all(isinstance(d, str) for d in value["draws"]))


class ResultStore:
    """Reads and writes the files of one experiment folder."""

    def __init__(self, root):
        self.root = Path(root)
        self.cells_dir = self.root / "cells"
        self._committed: dict[str, dict] | None = None

    # -- config -----------------------------------------------------------------------------------
    def save_config(self, config: ExperimentConfig) -> None:
        atomic_write_text(self.root / "experiment.json", json.dumps(config.to_dict(), indent=2, default=str) + "\n")

    def load_config(self) -> ExperimentConfig:
        path = self.root / "experiment.json"
        if not path.exists():
            raise UserError(f"{self.root}: not a results folder (no experiment.json; run 'ensclust run CONFIG' first)")
        try:
            text = path.read_bytes()  # json.loads decodes (bad UTF-8 is a ValueError below)
        except OSError as exc:
            raise UserError(f"{path}: cannot read experiment.json ({_reason(exc)})") from None
        try:
            return ExperimentConfig.from_dict(json.loads(text))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{path}: corrupt or truncated experiment.json ({detail}); rerun the experiment "
                            "(ensclust run CONFIG) to rewrite it") from None

    # -- cells ------------------------------------------------------------------------------------
    def cell_path(self, cell: dict) -> Path:
        return self.cells_dir / cell_filename(cell["dataset"], cell["method"], cell["params"], cell["rep"])

    def read_cell(self, cell: dict) -> dict | None:
        path = self.cell_path(cell)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            record = self.committed_records().get(path.name)
            if record is None:
                return None
            record = dict(record)
        except (OSError, ValueError):
            return None  # unreadable -> recompute (cannot happen with atomic writes, but be safe)
        if record.get("fingerprint") != cell["fingerprint"]:
            return None  # stale: the config changed for this cell
        # The fingerprint covers the parameters, not their position in the grid: a cell computed under an
        # earlier order of the grid values keeps its result but takes the current plan's point index.
        record["point"] = cell["point"]
        return record

    def write_cell(self, record: dict) -> None:
        atomic_write_text(self.cell_path(record), json.dumps(record, sort_keys=True, default=str) + "\n")

    # -- small state files: forced.json, inputs.json -----------------------------------------------------
    def _read_state(self, name: str, kind: type, valid, shape: str, remedy: str):
        """The JSON content of ``<root>/name`` (``kind()`` when there is none yet); a file that cannot be read or
        is not a ``kind`` whose values pass ``valid`` is a one-line UserError naming ``remedy``."""
        path = self.root / name
        try:
            text = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no folder yet (or not a folder: the write says so)
            return kind()
        except OSError as exc:
            raise UserError(f"{path}: cannot read {name} ({_reason(exc)})") from None
        try:
            content = json.loads(text)
            values = content.values() if isinstance(content, dict) else content
            if not isinstance(content, kind) or not all(valid(v) for v in values):
                raise ValueError(f"not {shape}")
        except ValueError as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{path}: corrupt or truncated {name} ({detail}); {remedy}") from None
        return content

    def read_forced(self) -> set[str]:
        """``forced.json``: fingerprints of the cells a ``--force`` run selected and has not yet recomputed
        (an interrupted forced run resumes from it without ``--force``); empty when there is none."""
        return set(self._read_state("forced.json", list, lambda v: isinstance(v, str), "a list of cell fingerprints",
                                    "delete it and rerun with --force to recompute the cells it listed"))

    def write_forced(self, owed: set[str]) -> None:
        path = self.root / "forced.json"
        if owed:
            atomic_write_text(path, json.dumps(sorted(owed)) + "\n")
        else:
            path.unlink(missing_ok=True)

    def read_inputs(self) -> dict[str, dict | str]:
        """``inputs.json``: data set label -> digests of the inputs its stored cells were computed on (see
        :func:`ensclust.experiment.runner.inputs_digests`; a string in folders recorded before per-draw digests);
        empty when the folder has none yet."""
        return self._read_state("inputs.json", dict, _valid_inputs_entry,
                                "a mapping of data set labels to digests",
                                "delete it (the next run records the inputs again) or rerun the experiment with "
                                "--force")

    def write_inputs(self, inputs: dict) -> None:
        atomic_write_text(self.root / "inputs.json", json.dumps(dict(sorted(inputs.items())), indent=2) + "\n")

    # -- committed results (a clone has cells.csv but no cells/) ----------------------------------------
    def committed_records(self) -> dict[str, dict]:
        """The records of the committed ``cells.csv`` (+ ``timing.csv``), by cell file name, when ``cells/``
        holds no cell file (a fresh clone: ``cells/`` is not committed).

        ``cells.csv`` has no fingerprints; every row was written under the plan of ``experiment.json``, so a
        row takes the fingerprint its cell has in that plan, and :meth:`read_cell` reuses it only where the
        current plan's fingerprint is the same (the dataset, pool, draws, seed, method and parameters
        unchanged). Rows outside that plan are ignored. Empty when there is nothing to restore.
        """
        if self._committed is None:
            self._committed = {} if self._has_cell_files() else self._records_from_csv()
        return self._committed

    def persist_committed(self) -> int:
        """Write :meth:`committed_records` as cell files (before a run replaces ``experiment.json``, whose
        plan gave them their fingerprints); returns how many were written."""
        records = self.committed_records()
        for name, record in records.items():
            atomic_write_text(self.cells_dir / name, json.dumps(record, sort_keys=True, default=str) + "\n")
        return len(records)

    def _has_cell_files(self) -> bool:
        if not self.cells_dir.is_dir():
            return False
        with os.scandir(self.cells_dir) as entries:
            return any(e.name.endswith(".json") and not e.name.startswith(".") for e in entries)

    def _records_from_csv(self) -> dict[str, dict]:
        csv_path, config_path = self.root / "cells.csv", self.root / "experiment.json"
        if not (csv_path.exists() and config_path.exists()):
            return {}
        config = self.load_config()
        fingerprints = {(c["dataset"], c["method"], c["params"], c["rep"]): c["fingerprint"]
                        for c in plan_cells(config)}
        rows = _read_text_rows(csv_path)
        timing_path = self.root / "timing.csv"
        # timing.csv is written from the same records in the same order as cells.csv: pair them by position
        # (its point column may predate a reordered grid), checking that each pair is the same cell
        timing = _read_text_rows(timing_path) if timing_path.exists() else []
        if len(timing) != len(rows):
            timing = [{}] * len(rows)
        records = {}
        for row, t in zip(rows, timing, strict=True):
            if t and (t["dataset"], t["method"], t["rep"]) != (row["dataset"], row["method"], row["rep"]):
                t = {}
            key = (row["dataset"], row["method"], row["params"], int(row["rep"]))
            fingerprint = fingerprints.get(key)
            if fingerprint is None:
                continue
            record = {k: _parse_scalar(row.get(k, "")) for k in CELL_COLUMNS}
            record["params"] = row["params"]  # canonical JSON text, kept verbatim
            for k in ("dataset", "method", "method_name", "labels_sha256", "status"):
                record[k] = row[k] if row[k] != "" else None
            record["metrics"] = {m: float(row[m]) for m in config.metrics if row.get(m, "") != ""}
            record["metric_std"] = {m: float(row[f"{m}_std"]) for m in config.metrics
                                    if row.get(f"{m}_std", "") != ""}
            record["error"] = row.get("error") or None
            record["fingerprint"] = fingerprint
            record["time_s"] = _parse_scalar(t.get("time_s", ""))
            record["cpu_s"] = _parse_scalar(t.get("cpu_s", ""))  # absent in files written before it existed
            record["peak_mem_mb"] = _parse_scalar(t.get("peak_mem_mb", ""))
            record["mem_method"] = t.get("mem_method") or None
            record["env"] = t.get("env") or None  # absent in files written before it existed
            records[cell_filename(key[0], key[1], key[2], key[3])] = record
        return records

    # -- aggregated tables ------------------------------------------------------------------------
    def write_aggregates(self, config: ExperimentConfig, records: list[dict]) -> pd.DataFrame:
        """Write cells.csv and timing.csv for ``records`` (sorted by plan order); returns the cells frame."""
        cells = records_to_frame(config, records)
        atomic_write_text(self.root / "cells.csv", cells.to_csv(index=False, lineterminator="\n"))
        timing = pd.DataFrame([{k: r.get(k) for k in TIMING_COLUMNS} for r in records], columns=TIMING_COLUMNS)
        atomic_write_text(self.root / "timing.csv", timing.to_csv(index=False, lineterminator="\n"))
        self._write_environments(records)
        return cells

    def _write_environments(self, records: list[dict]) -> None:
        """``environment.json``: the description of every environment id the records name (from the cell
        records, else from the existing file: cells restored from a committed timing.csv carry the id only)."""
        path = self.root / "environment.json"
        known = self._read_state("environment.json", dict, lambda v: isinstance(v, dict),
                                 "an object of environment descriptions",
                                 "delete it (it only describes the env ids of timing.csv) and rerun")
        ids = {r.get("env") for r in records} - {None}
        found = {r["env"]: r["environment"] for r in records if r.get("env") and r.get("environment")}
        environments = {i: found.get(i, known.get(i)) for i in sorted(ids)}
        environments = {i: e for i, e in environments.items() if e is not None}
        if environments != known:
            atomic_write_text(path, json.dumps(environments, indent=2, sort_keys=True) + "\n")

    def aggregates_stale(self) -> bool:
        """True when cells.csv is missing or older than the newest cell JSON (e.g. after ``kill -9``).

        The runner writes cells.csv only when it finishes or is interrupted gracefully (Ctrl-C, SIGTERM);
        a killed run leaves just the per-cell files. Temporary files of interrupted writes do not count.
        """
        newest = None
        if self.cells_dir.is_dir():
            with os.scandir(self.cells_dir) as entries:
                for entry in entries:
                    if entry.name.endswith(".json") and entry.is_file():
                        mtime = entry.stat().st_mtime_ns
                        newest = mtime if newest is None else max(newest, mtime)
        if newest is None:
            return False
        path = self.root / "cells.csv"
        return not path.exists() or path.stat().st_mtime_ns < newest

    def rebuild_aggregates(self, config: ExperimentConfig) -> pd.DataFrame | None:
        """Rewrite cells.csv and timing.csv from the cell JSON files of the current plan.

        The cells are read exactly as a rerun would read them (plan order; a file whose fingerprint no longer
        matches the config is ignored), so the result is the file the run would have written had it ended
        normally. Returns the cells frame, or None when no cell of the plan has a file.
        """
        records = self.read_planned(plan_cells(config))
        return self.write_aggregates(config, records) if records else None

    def read_planned(self, cells: list[dict], known: dict[int, dict] | None = None) -> list[dict]:
        """The records of ``cells`` (a plan) in plan order: ``known[i]`` where given (records in memory),
        else the cell's file; cells with neither are left out."""
        known = known or {}
        return [r for r in (known.get(i) or self.read_cell(cell) for i, cell in enumerate(cells)) if r is not None]

    def ensure_aggregates(self, config: ExperimentConfig) -> bool:
        """Rebuild cells.csv / timing.csv if :meth:`aggregates_stale`; True when they were rewritten."""
        return self.aggregates_stale() and self.rebuild_aggregates(config) is not None

    def _rebuild_hint(self, name: str) -> str:
        if self.cells_dir.is_dir():
            return (f"delete it and run 'ensclust report {self.root}' to rebuild it from cells/, "
                    "or rerun the experiment")
        return f"rerun the experiment to rewrite {name} (this folder has no cells/ to rebuild it from)"

    def _check_frame(self, frame: pd.DataFrame, path: Path, required: list[str], complete: list[str]) -> pd.DataFrame:
        """A loaded cells.csv / timing.csv must have its columns and no row cut short (empty key fields)."""
        missing = [c for c in required if c not in frame.columns]
        problem = f"no column {', '.join(missing)}" if missing else None
        if problem is None:
            short = frame[complete].isna().any(axis=1).to_numpy().nonzero()[0]
            if short.size:
                problem = f"row {int(short[0]) + 2} is incomplete"  # + header line, 1-based
        if problem:
            raise UserError(f"{path}: corrupt or truncated {path.name} ({problem}); {self._rebuild_hint(path.name)}")
        return frame

    def load_cells(self) -> pd.DataFrame:
        path = self.root / "cells.csv"
        if not path.exists():
            raise UserError(f"{self.root}: no cells.csv (the experiment has not finished any cell yet)")
        frame = read_csv_checked(path, "cells.csv", self._rebuild_hint("cells.csv"),
                                 dtype={"params": str, "labels_sha256": str, "error": str},
                                 keep_default_na=False, na_values=[""])
        return self._check_frame(frame, path, CELL_COLUMNS, ["dataset", "method", "point", "rep", "status"])

    def load_timing(self) -> pd.DataFrame | None:
        path = self.root / "timing.csv"
        if not path.exists():
            return None
        frame = read_csv_checked(path, "timing.csv", self._rebuild_hint("timing.csv"))
        required = ["dataset", "method", "point", "rep", "time_s", "peak_mem_mb"]
        return self._check_frame(frame, path, required, ["dataset", "method", "point", "rep"])


def records_to_frame(config: ExperimentConfig, records: list[dict]) -> pd.DataFrame:
    metric_cols = list(config.metrics)
    std_cols = [f"{m}_std" for m in config.metrics]
    columns = CELL_COLUMNS + metric_cols + std_cols + ["error"]
    rows = []
    for r in records:
        row = {k: r.get(k) for k in CELL_COLUMNS}
        for m in metric_cols:
            row[m] = (r.get("metrics") or {}).get(m)
        for m in config.metrics:
            row[f"{m}_std"] = (r.get("metric_std") or {}).get(m)
        row["error"] = r.get("error")
        rows.append(row)
    frame = pd.DataFrame(rows, columns=columns)
    # numbers are written with full precision by pandas; round-trip stable (repr of float64)
    return frame


def _read_text_rows(path: Path) -> list[dict]:
    """The rows of a CSV file as dicts of strings (no type guessing: values are parsed one by one).

    A row with fewer or more fields than the header (a file cut short, or damaged) is a one-line
    :class:`UserError`: its cells would otherwise be resumed with missing or shifted values.
    """
    import csv

    remedy = "restore it (e.g. from git) or delete it to recompute its cells"
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            lines = [line for line in csv.reader(fh) if line]   # blank lines skipped, as csv.DictReader does
    except OSError as exc:
        raise UserError(f"{path}: cannot read {path.name} ({_reason(exc)})") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"{path}: corrupt or truncated {path.name} ({exc}); {remedy}") from None
    if not lines:
        return []
    header, *lines = lines
    for number, line in enumerate(lines, start=2):   # line 1 is the header
        if len(line) != len(header):
            raise UserError(f"{path}: corrupt or truncated {path.name} (line {number} has {len(line)} fields, "
                            f"the header {len(header)}); {remedy}")
    return [dict(zip(header, line, strict=True)) for line in lines]


def _parse_scalar(text: str):
    """A cells.csv / timing.csv field back to the Python value it was written from: '' -> None, 'True' /
    'False' -> bool, an integer literal -> int (seeds are 64-bit: never through float), else float, else
    the text."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def params_json(params: dict) -> str:
    return canonical_json(params)

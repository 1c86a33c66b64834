"""Reading an experiment output directory (the layout of ``docs/experiment-format.md``).

``results.csv`` (one row per run, complete or failed) is the index; each run's directory
``runs/TRACE/SCHEME/run-K/`` holds its time series (``series.csv``), one-way delay samples
(``delays.csv``) and sender telemetry (``telemetry.jsonl``). A run with a workload (several
flows, cross traffic) is in ``runs/TRACE/WORKLOAD/SCHEME/run-K/`` and also holds its per-flow
figures (``flows.csv``, ``flow-series.csv``); its ``trace`` is read as ``TRACE/WORKLOAD`` (the
link's own name stays in ``link``), so that every per-trace table and figure is one per link
and workload. Every reader validates what it reads
and raises :class:`~alcc_report.errors.ReportError` naming the file, line and field of the first
problem. A per-run file that is absent is not an error: the reader returns ``None`` and the
report says what is missing.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from alcc_report.errors import ReportError
from alcc_report.schemes import FAMILIES, RENAMED_FAMILIES

#: The columns of ``results.csv``, in the harness's order (more may follow).
RESULT_COLUMNS = [
    "trace",
    "scheme",
    "family",
    "cc",
    "underlay",
    "mode",
    "run",
    "status",
    "error",
    "duration_s",
    "capacity_mbps",
    "throughput_mbps",
    "utilization",
    "loss",
    "delay_p50_ms",
    "delay_p95_ms",
    "delay_p99_ms",
    "delay_mean_ms",
    "cpu_s",
    "dir",
]

#: The metric columns: numbers, or empty when unknown (failed runs).
METRIC_COLUMNS = RESULT_COLUMNS[RESULT_COLUMNS.index("duration_s") : RESULT_COLUMNS.index("dir")]

#: Columns newer harnesses write that the report reads when present, with the value it uses for
#: results written before them.
OPTIONAL_COLUMNS = {
    "label": "",
    "load_avg": math.nan,
    "direction": "down",
    "workload": "",
    "flows": 1.0,
    "flows_throughput_mbps": math.nan,
    "flows_delay_p95_ms": math.nan,
    "jain_index": math.nan,
    "jain_weighted_index": math.nan,
    "window_from_s": math.nan,
    "window_to_s": math.nan,
    "queued_at_end": math.nan,
    "departed_after_window": math.nan,
    "queued_at_log_end": math.nan,
}

#: The optional columns that hold numbers.
OPTIONAL_NUMBERS = [c for c, default in OPTIONAL_COLUMNS.items() if isinstance(default, float)]

#: The numeric columns of a run's ``flows.csv`` (``flow`` is its name).
FLOW_COLUMNS = [
    "weight",
    "start_s",
    "end_s",
    "bytes",
    "throughput_mbps",
    "share",
    "weight_share",
    "delay_p50_ms",
    "delay_p95_ms",
    "loss",
]

#: The numeric columns of a run's ``flow-series.csv`` (and ``flow``, the flow's name).
FLOW_SERIES_COLUMNS = ["start_s", "throughput_mbps", "delay_p95_ms"]

#: The columns of a run's ``series.csv`` (500 ms bins; an empty delay cell = no packet).
SERIES_COLUMNS = [
    "start_s",
    "capacity_mbps",
    "throughput_mbps",
    "sent_mbps",
    "delay_p50_ms",
    "delay_p95_ms",
    "delay_p99_ms",
]

#: The columns of a run's ``delays.csv``.
DELAY_COLUMNS = ["t_s", "delay_ms"]

#: The telemetry fields the report uses (Figure 1).
TELEMETRY_FIELDS = ["t", "flow", "window", "kernel_cwnd", "kernel_mss", "underlay_cwnd"]


@dataclass
class Experiment:
    """One experiment output directory: its runs and where their files are."""

    #: The output directory.
    root: Path
    #: The experiment's name (from ``results.json``; the directory name when absent).
    name: str
    #: Whether it ran with ``--quick`` (``None`` when ``results.json`` is absent).
    quick: bool | None
    #: One row per run, the columns of :data:`RESULT_COLUMNS` (metrics as floats, NaN = unknown).
    runs: pd.DataFrame
    #: Problems that did not stop the report (missing per-run files), one sentence each.
    notes: list[str] = field(default_factory=list)

    def ok_runs(self) -> pd.DataFrame:
        """The runs that completed (status ``ok``); failed runs are excluded from every figure."""
        return self.runs[self.runs["status"] == "ok"]

    def failed_runs(self) -> pd.DataFrame:
        """The runs that failed."""
        return self.runs[self.runs["status"] != "ok"]

    def run_dir(self, row: pd.Series) -> Path:
        """The directory of the run in ``row`` (its ``dir`` cell is relative to the root)."""
        return self.root / str(row["dir"])


def _number(text: str, path: Path, line: int, column: str) -> float:
    """Parses one metric cell: a float, or NaN when empty."""
    text = text.strip()
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ReportError(f"{path}: line {line}, field {column}: {text!r} is not a number") from None


def load_results(path: Path) -> pd.DataFrame:
    """Reads and validates ``results.csv``: required columns, status, family, numbers."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror}") from None
    rows = []
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                raise ReportError(f"{path}: empty file (expected the header line)")
            header = [h.strip() for h in header]
            missing = [c for c in RESULT_COLUMNS if c not in header]
            if missing:
                raise ReportError(f"{path}: line 1: missing columns {', '.join(missing)}")
            for cells in reader:
                line = reader.line_num
                if not cells or all(c.strip() == "" for c in cells):
                    continue
                if len(cells) != len(header):
                    raise ReportError(
                        f"{path}: line {line}: {len(cells)} fields, the header has {len(header)}"
                    )
                rows.append((line, dict(zip(header, cells, strict=True))))
        except csv.Error as e:
            raise ReportError(f"{path}: line {reader.line_num}: {e}") from None
        except UnicodeDecodeError as e:
            raise ReportError(f"{path}: not UTF-8 text ({e.reason})") from None
    records = []
    for line, cells in rows:
        record: dict[str, object] = {c: cells[c] for c in cells}
        for column in ("trace", "scheme", "status", "dir"):
            if cells[column].strip() == "":
                raise ReportError(f"{path}: line {line}, field {column}: empty")
        status = cells["status"].strip()
        if status not in ("ok", "failed"):
            raise ReportError(f"{path}: line {line}, field status: {status!r} is neither ok nor failed")
        family = RENAMED_FAMILIES.get(cells["family"].strip(), cells["family"].strip())
        if family not in FAMILIES:
            raise ReportError(
                f"{path}: line {line}, field family: {family!r} is not one of {', '.join(FAMILIES)}"
            )
        record["family"] = family
        try:
            record["run"] = int(cells["run"])
        except ValueError:
            raise ReportError(f"{path}: line {line}, field run: {cells['run']!r} is not an integer") from None
        for column in METRIC_COLUMNS:
            record[column] = _number(cells[column], path, line, column)
        for column in OPTIONAL_NUMBERS:
            if column in cells:
                record[column] = _number(cells[column], path, line, column)
        if status == "ok":
            for column in ("throughput_mbps", "delay_p95_ms"):
                if math.isnan(record[column]):  # type: ignore[arg-type]
                    raise ReportError(f"{path}: line {line}, field {column}: empty in a run with status ok")
        records.append(record)
    columns = header if records else RESULT_COLUMNS
    frame = pd.DataFrame.from_records(records, columns=columns)
    for column, default in OPTIONAL_COLUMNS.items():
        if column not in frame.columns:
            frame[column] = default
    for column in (
        "trace",
        "scheme",
        "family",
        "cc",
        "underlay",
        "mode",
        "status",
        "error",
        "dir",
        "label",
        "direction",
        "workload",
    ):
        frame[column] = frame[column].astype(str).str.strip()
    frame["flows"] = frame["flows"].fillna(1.0)
    frame["link"] = frame["trace"]
    named = frame["workload"] != ""
    frame.loc[named, "trace"] = frame.loc[named, "trace"] + "/" + frame.loc[named, "workload"]
    return frame


def load_experiment(root: Path) -> Experiment:
    """Reads an experiment directory: ``results.csv`` (required) and ``results.json`` (optional)."""
    root = Path(root)
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory")
    results = root / "results.csv"
    if not results.is_file():
        raise ReportError(f"{results}: missing (is {root} the output of `alcc experiment run`?)")
    runs = load_results(results)
    name, quick = root.resolve().name, None
    meta = root / "results.json"
    if meta.is_file():
        try:
            doc = json.loads(meta.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ReportError(f"{meta}: not valid JSON: {e}") from None
        if not isinstance(doc, dict):
            raise ReportError(f"{meta}: expected a JSON object")
        if isinstance(doc.get("name"), str):
            name = doc["name"]
        if isinstance(doc.get("quick"), bool):
            quick = doc["quick"]
    return Experiment(root=root, name=name, quick=quick, runs=runs)


def _read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    """Reads a numeric CSV with at least ``columns``; an empty cell is NaN, text is an error."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ReportError(f"{path}: empty file (expected the header line)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: malformed CSV: {str(e).strip()}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ReportError(f"{path}: line 1: missing columns {', '.join(missing)}")
    out = pd.DataFrame(index=frame.index)
    for column in columns:
        cells = frame[column].str.strip()
        values = pd.to_numeric(cells.replace("", np.nan), errors="coerce")
        bad = values.isna() & (cells != "")
        if bad.any():
            index = int(np.flatnonzero(bad.to_numpy())[0])
            raise ReportError(
                f"{path}: line {index + 2}, field {column}: {cells.iloc[index]!r} is not a number"
            )
        out[column] = values.astype(float)
    return out


def load_series(path: Path) -> pd.DataFrame | None:
    """A run's ``series.csv`` (the columns of :data:`SERIES_COLUMNS`), or ``None`` when absent."""
    if not path.is_file():
        return None
    return _read_csv(path, SERIES_COLUMNS)


def _with_names(path: Path, columns: list[str]) -> pd.DataFrame | None:
    """A per-run CSV with a text column ``flow`` and the numeric ``columns``, or ``None``."""
    if not path.is_file():
        return None
    numbers = _read_csv(path, columns)
    names = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "flow" not in names.columns:
        raise ReportError(f"{path}: line 1: missing columns flow")
    numbers.insert(0, "flow", names["flow"].str.strip())
    return numbers


def load_flows(path: Path) -> pd.DataFrame | None:
    """A run's ``flows.csv`` (``flow`` and :data:`FLOW_COLUMNS`), or ``None`` when absent."""
    return _with_names(path, FLOW_COLUMNS)


def load_flow_series(path: Path) -> pd.DataFrame | None:
    """A run's ``flow-series.csv`` (``flow`` and :data:`FLOW_SERIES_COLUMNS`, one row per flow and
    500 ms bin), or ``None`` when absent."""
    return _with_names(path, FLOW_SERIES_COLUMNS)


def load_delays(path: Path) -> np.ndarray | None:
    """The one-way delays (ms) of a run's ``delays.csv``, or ``None`` when absent."""
    if not path.is_file():
        return None
    frame = _read_csv(path, DELAY_COLUMNS)
    delays = frame["delay_ms"].to_numpy()
    if np.isnan(delays).any():
        index = int(np.flatnonzero(np.isnan(delays))[0])
        raise ReportError(f"{path}: line {index + 2}, field delay_ms: empty")
    return delays


def load_telemetry(path: Path) -> pd.DataFrame | None:
    """A run's ``telemetry.jsonl`` as columns t, flow, window, kernel_cwnd (bytes; NaN = null) and
    kernel_mss and underlay_cwnd (the BPF underlay's last written window, segments; 0 over a kernel
    congestion control), NaN in telemetry written before they were recorded.

    ``None`` when the file is absent. A last line cut short (the sender was stopped while
    writing it) is skipped; any other line that is not a JSON object with a numeric ``t`` is an
    error naming the line.
    """
    if not path.is_file():
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise ReportError(f"{path}: not UTF-8 text ({e.reason})") from None
    records = []
    last = max((i for i, text in enumerate(lines) if text.strip()), default=-1)
    for i, text in enumerate(lines):
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            if i == last:
                break
            raise ReportError(f"{path}: line {i + 1}: not valid JSON: {e.msg}") from None
        if not isinstance(doc, dict):
            raise ReportError(f"{path}: line {i + 1}: expected a JSON object")
        record = {}
        for name in TELEMETRY_FIELDS:
            value = doc.get(name)
            if name == "t" and not isinstance(value, int | float):
                raise ReportError(f"{path}: line {i + 1}, field t: missing or not a number")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ReportError(f"{path}: line {i + 1}, field {name}: {value!r} is not a number")
            record[name] = math.nan if value is None else float(value)
        records.append(record)
    return pd.DataFrame.from_records(records, columns=TELEMETRY_FIELDS)

"""The report's tables as formatted text cells, shared by the HTML and Markdown writers."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from alcc_report.fidelity import FLAG_PERCENT
from alcc_report.schemes import FAMILIES, Comparison


@dataclass
class Table:
    """A table of text cells."""

    #: Identifier of the table (``summary``, ``schemes``, ``failed``, ``fidelity``, ``cpu``).
    key: str
    #: Column headings.
    columns: list[str]
    #: Rows of cells, each as long as ``columns``.
    rows: list[list[str]]


def fmt(value: object, digits: int = 2) -> str:
    """A number with ``digits`` decimals, ``-`` when unknown (NaN or None), text as it is."""
    if value is None:
        return "-"
    if isinstance(value, float | int) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return "-"
        return f"{value:.{digits}f}"
    return str(value)


def signed_percent(value: float) -> str:
    """A percentage with its sign (``+4.2 %``), ``-`` when unknown."""
    return "-" if math.isnan(value) else f"{value:+.1f} %"


#: The plain-TCP schemes every scheme's throughput and p95 delay are compared with in the summary
#: (when the experiment ran them): kernel BBR, what most servers run today, and kernel CUBIC.
BASELINES: tuple[str, ...] = ("tcp-bbr", "tcp-cubic")


def summary_table(runs: pd.DataFrame) -> Table:
    """Per trace and scheme: runs completed of all, medians over completed runs of the metrics,
    and the median throughput and p95 delay as ratios to those of each of :data:`BASELINES` the
    experiment ran on the same trace (``-`` when that baseline has no completed run there)."""
    metrics = ["throughput_mbps", "utilization", "delay_p50_ms", "delay_p95_ms", "loss"]
    medians = {}
    for (trace, scheme), group in runs.groupby(["trace", "scheme"], sort=True):
        ok = group[group["status"] == "ok"]
        medians[(trace, scheme)] = (len(ok), len(group), ok[metrics].median())
    baselines = [b for b in BASELINES if b in set(runs["scheme"])]

    def ratio(mine: float, trace: object, baseline: str, metric: str) -> str:
        entry = medians.get((trace, baseline))
        theirs = entry[2][metric] if entry and entry[0] else math.nan
        if math.isnan(mine) or math.isnan(theirs) or theirs == 0:
            return "-"
        return f"{mine / theirs:.2f}"

    rows = []
    for (trace, scheme), (ok, total, med) in medians.items():
        row = [
            str(trace),
            str(scheme),
            f"{ok}/{total}",
            fmt(med["throughput_mbps"]),
            fmt(med["utilization"] * 100, 1),
            fmt(med["delay_p50_ms"], 1),
            fmt(med["delay_p95_ms"], 1),
            fmt(med["loss"] * 100, 2),
        ]
        for b in baselines:
            row.append(ratio(med["throughput_mbps"], trace, b, "throughput_mbps"))
            row.append(ratio(med["delay_p95_ms"], trace, b, "delay_p95_ms"))
        rows.append(row)
    columns = [
        "trace",
        "scheme",
        "ok runs",
        "throughput (Mbit/s)",
        "utilization (%)",
        "p50 delay (ms)",
        "p95 delay (ms)",
        "loss (%)",
    ]
    for b in baselines:
        columns += [f"throughput / {b}", f"p95 / {b}"]
    return Table("summary", columns, rows)


def failed_table(runs: pd.DataFrame) -> Table:
    """Every failed run with its error text (first line) and directory."""
    failed = runs[runs["status"] != "ok"].sort_values(["trace", "scheme", "run"])
    rows = []
    for _, row in failed.iterrows():
        error = str(row["error"]).strip().splitlines()
        rows.append(
            [
                str(row["trace"]),
                str(row["scheme"]),
                str(int(row["run"])),
                error[0] if error else "",
                str(row["dir"]),
            ]
        )
    return Table("failed", ["trace", "scheme", "run", "error", "directory"], rows)


def fidelity_rows(table: pd.DataFrame, comparison: Comparison) -> Table:
    """A fidelity table (see :mod:`alcc_report.fidelity`) formatted, headed by both sides' names."""
    rows = []
    for _, r in table.iterrows():
        rows.append(
            [
                str(r["trace"]),
                str(r["scheme"]),
                str(r["reference"]),
                f"{r['scheme_runs']}/{r['reference_runs']}",
                fmt(r["scheme_throughput_mbps"]),
                fmt(r["reference_throughput_mbps"]),
                signed_percent(r["throughput_diff_pct"]),
                fmt(r["scheme_p95_ms"], 1),
                fmt(r["reference_p95_ms"], 1),
                signed_percent(r["p95_diff_pct"]),
                f"> {FLAG_PERCENT:g} %" if r["flagged"] else "",
                str(r["window"]),
                str(r["note"]),
            ]
        )
    mine, theirs = comparison.subject_short, comparison.reference_short
    columns = [
        "trace",
        "scheme",
        f"against ({theirs})",
        f"runs ({mine}/{theirs})",
        f"{mine} tput (Mbit/s)",
        f"{theirs} tput (Mbit/s)",
        "tput diff",
        f"{mine} p95 (ms)",
        f"{theirs} p95 (ms)",
        "p95 diff",
        "flag",
        "window",
        "note",
    ]
    return Table(comparison.key, columns, rows)


def legend_table(runs: pd.DataFrame) -> Table:
    """What each scheme is: its family and the harness's label (the family's description for
    results written before the label column existed)."""
    rows = []
    for scheme, group in runs.groupby("scheme", sort=True):
        first = group.iloc[0]
        family = FAMILIES.get(str(first["family"]))
        label = str(first["label"]).strip() or (family.title if family else "")
        rows.append([str(scheme), str(first["family"]), label])
    return Table("schemes", ["scheme", "family", "what it is"], rows)


def cpu_rows(table: pd.DataFrame) -> Table:
    """The CPU table (see :mod:`alcc_report.cpu`) formatted."""
    rows = []
    for _, r in table.iterrows():
        ratio = "-" if math.isnan(r["ratio"]) else f"{r['ratio']:.2f}x"
        rows.append(
            [
                str(r["trace"]),
                str(r["scheme"]),
                str(r["runs"]),
                fmt(r["cpu_s"], 3),
                fmt(r["cpu_ms_per_s"], 1),
                str(r["baseline"]),
                ratio,
                str(r["note"]),
            ]
        )
    columns = ["trace", "scheme", "runs", "CPU (s, median)", "CPU (ms per s)", "baseline", "ratio", "note"]
    return Table("cpu", columns, rows)

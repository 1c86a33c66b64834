"""Runs with several flows and cross traffic (a spec's ``[[workloads]]``): the scheme's flows
together and apart, and what the scheme leaves to the competing (cross) flows.

- :func:`fairness_table`: per trace/workload and scheme, the scheme's aggregate throughput and
  p95 delay (its flows alone) beside the link's, and Jain's index plain and weighted.
- :func:`per_flow_table`: per trace/workload, scheme and flow, the medians over runs of each
  flow's throughput, share (while all the scheme's flows run), weight share and p95 delay.
- :func:`competing_table`: per trace/workload and cross flow, its throughput next to each
  scheme, and as a ratio to its throughput next to plain TCP (the first of :data:`BASELINES`
  that ran there): what the scheme's flows leave to it.

Medians are taken over completed runs (pandas).
"""

from __future__ import annotations

import math

import pandas as pd

from alcc_report.samples import RunFiles
from alcc_report.tables import Table, fmt

#: The schemes the cross flows' throughput is compared with, first found first.
BASELINES: tuple[str, ...] = ("tcp-cubic", "tcp-reno", "tcp-bbr")


def multi_flow_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with a workload (several flows or cross traffic)."""
    return runs[runs["workload"] != ""]


def fairness_table(runs: pd.DataFrame) -> Table | None:
    """Per trace/workload and scheme: completed runs of all, flows, medians of the scheme's and
    the link's throughput, the scheme's p95 delay and Jain's indices; ``None`` without workloads."""
    multi = multi_flow_runs(runs)
    if multi.empty:
        return None
    rows = []
    for (trace, scheme), group in multi.groupby(["trace", "scheme"], sort=False):
        ok = group[group["status"] == "ok"]
        med = ok[
            [
                "flows_throughput_mbps",
                "throughput_mbps",
                "flows_delay_p95_ms",
                "jain_index",
                "jain_weighted_index",
            ]
        ].median()
        rows.append(
            [
                str(trace),
                str(scheme),
                f"{len(ok)}/{len(group)}",
                fmt(float(group["flows"].max()), 0),
                fmt(med["flows_throughput_mbps"]),
                fmt(med["throughput_mbps"]),
                fmt(med["flows_delay_p95_ms"], 1),
                fmt(med["jain_index"], 3),
                fmt(med["jain_weighted_index"], 3),
            ]
        )
    columns = [
        "trace/workload",
        "scheme",
        "ok",
        "flows",
        "flows Mbit/s",
        "link Mbit/s",
        "flows p95 ms",
        "Jain",
        "Jain (weighted)",
    ]
    return Table("fairness", columns, rows)


def _flow_frame(files: RunFiles, runs: pd.DataFrame) -> pd.DataFrame:
    """Every completed run's ``flows.csv`` rows with the run's trace, scheme and run."""
    parts = []
    for _, row in runs[runs["status"] == "ok"].iterrows():
        flows = files.flows(row)
        if flows is None or flows.empty:
            continue
        flows = flows.copy()
        flows["trace"], flows["scheme"], flows["run"] = row["trace"], row["scheme"], row["run"]
        parts.append(flows)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def per_flow_table(files: RunFiles, runs: pd.DataFrame) -> Table | None:
    """Per trace/workload, scheme and flow (in the runs' order): runs, and the medians of the
    flow's throughput, share, weight share and p95 delay; ``None`` when no run has flows."""
    flows = _flow_frame(files, multi_flow_runs(runs))
    if flows.empty:
        return None
    rows = []
    for (trace, scheme, flow), group in flows.groupby(["trace", "scheme", "flow"], sort=False):
        med = group[["weight", "throughput_mbps", "share", "weight_share", "delay_p95_ms"]].median()
        rows.append(
            [
                str(trace),
                str(scheme),
                str(flow),
                str(len(group)),
                fmt(med["weight"], 0) if not math.isnan(med["weight"]) else "-",
                fmt(med["throughput_mbps"]),
                fmt(med["share"], 3),
                fmt(med["weight_share"], 3),
                fmt(med["delay_p95_ms"], 1),
            ]
        )
    columns = [
        "trace/workload",
        "scheme",
        "flow",
        "runs",
        "weight",
        "Mbit/s",
        "share",
        "weight share",
        "p95 ms",
    ]
    return Table("per-flow", columns, rows)


def competing_table(files: RunFiles, runs: pd.DataFrame) -> Table | None:
    """Per trace/workload, cross flow and scheme: the cross flow's median throughput and p95
    delay, and its throughput over its throughput next to the baseline; ``None`` without cross
    traffic."""
    flows = _flow_frame(files, multi_flow_runs(runs))
    if flows.empty:
        return None
    cross = flows[flows["flow"].str.startswith("cross-")]
    if cross.empty:
        return None
    rows = []
    for (trace, flow), group in cross.groupby(["trace", "flow"], sort=False):
        med = group.groupby("scheme", sort=False)[["throughput_mbps", "delay_p95_ms"]].median()
        baseline = next((b for b in BASELINES if b in med.index), None)
        base = med.loc[baseline, "throughput_mbps"] if baseline else math.nan
        for scheme, values in med.iterrows():
            ratio = values["throughput_mbps"] / base if base and not math.isnan(base) else math.nan
            rows.append(
                [
                    str(trace),
                    str(flow),
                    str(scheme),
                    fmt(values["throughput_mbps"]),
                    fmt(values["delay_p95_ms"], 1),
                    fmt(ratio, 2) + (f" of next to {baseline}" if baseline and not math.isnan(ratio) else ""),
                ]
            )
    columns = ["trace/workload", "cross flow", "next to scheme", "its Mbit/s (on)", "its p95 ms", "ratio"]
    return Table("competing", columns, rows)

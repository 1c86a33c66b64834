"""The uploads table: ratios to plain TCP on the same trace, the Java client against the Rust."""

from __future__ import annotations

import math

import pandas as pd

from alcc_report.load import METRIC_COLUMNS
from alcc_report.uplink import COLUMNS, uplink_table


def row(
    trace: str, scheme: str, run: int, tput: float | None, p95: float | None, direction: str = "up"
) -> dict:
    family, _, rest = scheme.partition("-")
    cc, _, underlay = rest.partition("@")
    if family == "tcp":
        cc, underlay = "none", rest
    return {
        "trace": trace,
        "scheme": scheme,
        "family": family,
        "cc": cc,
        "underlay": underlay,
        "run": run,
        "status": "ok" if tput is not None else "failed",
        "throughput_mbps": math.nan if tput is None else tput,
        "delay_p95_ms": math.nan if p95 is None else p95,
        "direction": direction,
    }


def frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in METRIC_COLUMNS:
        df[c] = pd.to_numeric(df.get(c, math.nan), errors="coerce")
    return df


def test_no_upload_no_table():
    assert uplink_table(frame([row("A", "tcp-reno", 0, 5.0, 100.0, direction="down")])) is None


def test_ratios_of_medians():
    rows = [
        row("A", "tcp-reno", 0, 10.0, 1000.0),
        row("A", "tcp-reno", 1, 8.0, 2000.0),
        row("A", "tcp-reno", 2, 9.0, 3000.0),
        row("A", "tcp-bbr", 0, 9.5, 100.0),
        row("A", "alcc-mdi@reno", 0, 8.0, 200.0),
        row("A", "alcc-mdi@reno", 1, 9.0, 400.0),
        row("A", "java-mdi@reno", 0, 7.2, 300.0),
        row("A", "java-mdi@reno", 1, None, None),
        # Another trace without plain TCP that completed, and a Java client with no Rust twin.
        row("B", "tcp-reno", 0, None, None),
        row("B", "java-copa@reno", 0, 4.0, 50.0),
    ]
    table = uplink_table(frame(rows))
    assert table is not None and table.columns == COLUMNS
    by = {(r[0], r[1]): r for r in table.rows}
    # Plain Reno: median 9 Mbit/s, 2000 ms; itself is the reference.
    assert by[("A", "tcp-reno")][2:] == ["3/3", "9.00", "2000.0", "tcp-reno", "-", "-", "-", "-"]
    # BBR is compared with Reno (the first plain upload of the list that ran).
    assert by[("A", "tcp-bbr")][5:8] == ["tcp-reno", "1.06", "0.05"]
    # Rust MDI: medians 8.5 Mbit/s and 300 ms.
    assert by[("A", "alcc-mdi@reno")][3:] == ["8.50", "300.0", "tcp-reno", "0.94", "0.15", "-", "-"]
    # Java MDI: one run ok, 7.2 Mbit/s and 300 ms; against Rust 7.2/8.5 and 300/300.
    assert by[("A", "java-mdi@reno")][2:] == [
        "1/2",
        "7.20",
        "300.0",
        "tcp-reno",
        "0.80",
        "0.15",
        "0.85",
        "1.00",
    ]
    assert by[("B", "java-copa@reno")][5:] == ["-", "-", "-", "-", "-"]

"""Fidelity and CPU maths on crafted tables, ellipse percentiles, Markdown tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from alcc_report.cpu import cpu_table
from alcc_report.fidelity import OWN_LOG, fidelity_table, percent_difference, window_label
from alcc_report.figures.region import operating_region
from alcc_report.load import METRIC_COLUMNS
from alcc_report.markdown import table_markdown
from alcc_report.tables import Table, failed_table, summary_table

from conftest import run_row


def frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in METRIC_COLUMNS:
        df[c] = pd.to_numeric(df.get(c, math.nan), errors="coerce")
    for c in ("error", "underlay"):
        df[c] = df.get(c, "").fillna("") if c in df else ""
    return df


def test_percent_difference():
    assert math.isclose(percent_difference(11.0, 10.0), 10.0)
    assert percent_difference(9.0, 10.0) == -10.0
    assert math.isnan(percent_difference(1.0, 0.0))
    assert math.isnan(percent_difference(math.nan, 1.0))


def test_fidelity_medians_diffs_and_flags():
    rows = [
        run_row("A", "alcc-copa@cubic", 0, throughput_mbps=9.0, delay_p95_ms=30.0),
        run_row("A", "alcc-copa@cubic", 1, throughput_mbps=11.0, delay_p95_ms=50.0),
        run_row("A", "alcc-copa@cubic", 2, throughput_mbps=10.5, delay_p95_ms=44.0),
        run_row("A", "alcc-copa@cubic", 3, status="failed", error="x"),
        run_row("A", "udp-copa", 0, throughput_mbps=10.0, delay_p95_ms=40.0),
        run_row("A", "udp-copa", 1, throughput_mbps=10.0, delay_p95_ms=40.0),
        run_row("A", "alcc-verus@reno", 0, throughput_mbps=5.0, delay_p95_ms=20.0),
        run_row("B", "alcc-copa@bbr", 0, throughput_mbps=8.0, delay_p95_ms=100.0),
        run_row("B", "udp-copa", 0, status="failed", error="y"),
    ]
    table = fidelity_table(frame(rows)).set_index(["trace", "scheme"])
    a = table.loc[("A", "alcc-copa@cubic")]
    # medians: alcc 10.5 Mbit/s and 44 ms over the three ok runs; our UDP Copa 10 and 40.
    assert (a["scheme_runs"], a["reference_runs"]) == (3, 2)
    assert math.isclose(a["scheme_throughput_mbps"], 10.5) and math.isclose(a["scheme_p95_ms"], 44.0)
    assert math.isclose(a["throughput_diff_pct"], 5.0)
    assert math.isclose(a["p95_diff_pct"], 10.0)
    assert not a["flagged"]
    verus = table.loc[("A", "alcc-verus@reno")]
    assert verus["reference"] == "udp-verus" and "no udp-verus runs" in verus["note"]
    assert math.isnan(verus["throughput_diff_pct"])
    b = table.loc[("B", "alcc-copa@bbr")]
    assert "every udp-copa run failed" in b["note"] and not b["flagged"]


def test_fidelity_flag_beyond_ten_percent():
    rows = [
        run_row("A", "alcc-copa@cubic", throughput_mbps=10.0, delay_p95_ms=44.1),
        run_row("A", "udp-copa", throughput_mbps=10.0, delay_p95_ms=40.0),
    ]
    row = fidelity_table(frame(rows)).iloc[0]
    assert row["flagged"] and "more than 10 %" in row["note"]


def test_fidelity_says_which_window_each_cell_is_over():
    windowed = {"window_from_s": 0.5, "window_to_s": 30.5}
    rows = [
        run_row("A", "alcc-copa@cubic", throughput_mbps=10.0, window_from_s=1.0, window_to_s=31.0),
        run_row("A", "udp-copa", throughput_mbps=10.0, **windowed),
        run_row("B", "alcc-copa@cubic", throughput_mbps=10.0, **windowed),
        run_row("B", "udp-copa", throughput_mbps=10.0),
        run_row("C", "alcc-copa@cubic", throughput_mbps=10.0),
        run_row("C", "udp-copa", throughput_mbps=10.0),
    ]
    table = fidelity_table(frame(rows)).set_index("trace")
    # A sender that starts later is judged over as long from its start: the same window.
    assert table.loc["A", "window"] == "30 s from each sender's start"
    assert "windows" not in table.loc["A", "note"]
    assert table.loc["B", "window"] == f"30 s from each sender's start + {OWN_LOG}"
    assert "judged over different windows" in table.loc["B", "note"]
    assert table.loc["C", "window"] == OWN_LOG
    assert window_label(frame(rows[:0])) == ""


def test_cpu_ratios_and_baselines():
    rows = [
        run_row("A", "tcp-cubic", 0, cpu_s=2.0),
        run_row("A", "tcp-cubic", 1, cpu_s=4.0),
        run_row("A", "tcp-reno", 0, cpu_s=1.0),
        run_row("A", "alcc-copa@cubic", 0, cpu_s=6.0),
        run_row("A", "alcc-copa@reno", 0, cpu_s=3.0),
        run_row("A", "alcc-copa@bbr", 0, cpu_s=9.0),
        run_row("A", "udp-copa", 0, cpu_s=1.5),
        run_row("A", "udp-copa", 1, status="failed"),
        run_row("B", "alcc-copa@cubic", 0, cpu_s=1.0),
    ]
    table = cpu_table(frame(rows)).set_index(["trace", "scheme"])
    assert math.isclose(table.loc[("A", "tcp-cubic"), "cpu_s"], 3.0)
    assert math.isclose(table.loc[("A", "tcp-cubic"), "ratio"], 1.0)
    assert table.loc[("A", "tcp-reno"), "baseline"] == "tcp-cubic"
    assert math.isclose(table.loc[("A", "alcc-copa@cubic"), "ratio"], 2.0)
    assert table.loc[("A", "alcc-copa@reno"), "baseline"] == "tcp-reno"
    assert math.isclose(table.loc[("A", "alcc-copa@reno"), "ratio"], 3.0)
    assert table.loc[("A", "alcc-copa@bbr"), "baseline"] == "tcp-cubic"
    assert math.isclose(table.loc[("A", "udp-copa"), "ratio"], 0.5)
    assert table.loc[("A", "udp-copa"), "runs"] == 1
    assert math.isclose(table.loc[("A", "alcc-copa@cubic"), "cpu_ms_per_s"], 600.0)
    b = table.loc[("B", "alcc-copa@cubic")]
    assert math.isnan(b["ratio"]) and "no completed tcp-cubic run" in b["note"]


def test_operating_region_percentiles():
    throughput = np.arange(1.0, 101.0)  # 1..100: p25 = 25.75, p50 = 50.5, p75 = 75.25
    delay = np.array([10.0, 20.0, 30.0, 40.0, 50.0])  # p25 = 20, p50 = 30, p75 = 40
    region = operating_region(throughput, delay)
    assert (region.throughput_p25, region.throughput_p50, region.throughput_p75) == (25.75, 50.5, 75.25)
    assert (region.delay_p25, region.delay_p50, region.delay_p75) == (20.0, 30.0, 40.0)
    centre, width, height = region.ellipse()
    assert centre == (30.0, 50.5) and width == 20.0 and height == 49.5
    assert operating_region(np.empty(0), delay) is None


def test_markdown_table_escapes_pipes():
    text = table_markdown(Table("x", ["a", "b|c"], [["1", "x|y"], ["", "z"]]))
    assert text.splitlines() == ["| a | b\\|c |", "| --- | --- |", "| 1 | x\\|y |", "|   | z |"]


def test_failed_table_first_line_of_error():
    rows = [run_row("A", "udp-copa", 2, status="failed", error="udp: timed out\ndetails")]
    table = failed_table(frame(rows))
    assert table.rows == [["A", "udp-copa", "2", "udp: timed out", "runs/A/udp-copa/run-2"]]


def test_operating_region_property_random_populations():
    rng = np.random.default_rng(7)
    for _ in range(200):
        throughput = rng.lognormal(1.0, 0.7, size=int(rng.integers(1, 300)))
        delay = rng.exponential(30.0, size=int(rng.integers(1, 300))) + 10.0
        region = operating_region(throughput, delay)
        (cx, cy), width, height = region.ellipse()
        # The ellipse's extreme points are the quartiles; the medians lie inside its bounding box.
        assert math.isclose(cx - width / 2, np.percentile(delay, 25))
        assert math.isclose(cx + width / 2, np.percentile(delay, 75))
        assert math.isclose(cy - height / 2, np.percentile(throughput, 25))
        assert math.isclose(cy + height / 2, np.percentile(throughput, 75))
        assert region.delay_p25 <= region.delay_p50 <= region.delay_p75
        assert region.throughput_p25 <= region.throughput_p50 <= region.throughput_p75


def test_summary_gives_ratios_to_bbr_and_cubic_on_the_same_trace():
    rows = [
        run_row("A", "tcp-bbr", 0, throughput_mbps=8.0, delay_p95_ms=200.0),
        run_row("A", "tcp-bbr", 1, throughput_mbps=10.0, delay_p95_ms=180.0),
        run_row("A", "tcp-cubic", 0, throughput_mbps=10.0, delay_p95_ms=2000.0),
        run_row("A", "alcc-sprout-ack@cubic", 0, throughput_mbps=8.6, delay_p95_ms=95.0),
        run_row("B", "tcp-bbr", 0, status="failed", error="x"),
        run_row("B", "alcc-sprout-ack@cubic", 0, throughput_mbps=5.0, delay_p95_ms=50.0),
    ]
    t = summary_table(frame(rows))
    ratios = ["throughput / tcp-bbr", "p95 / tcp-bbr", "throughput / tcp-cubic", "p95 / tcp-cubic"]
    assert t.columns[-4:] == ratios
    by = {(r[0], r[1]): r for r in t.rows}
    # Against BBR's medians on trace A (9 Mbit/s, 190 ms) and CUBIC's (10, 2000).
    assert by[("A", "alcc-sprout-ack@cubic")][-4:] == ["0.96", "0.50", "0.86", "0.05"]
    assert by[("A", "tcp-bbr")][-4:] == ["1.00", "1.00", "0.90", "0.10"]
    # No completed BBR run and no CUBIC run on trace B: no ratio.
    assert by[("B", "alcc-sprout-ack@cubic")][-4:] == ["-", "-", "-", "-"]
    # Without the baselines the table has no ratio columns.
    only = summary_table(frame([r for r in rows if not r["scheme"].startswith("tcp-")]))
    assert only.columns[-1] == "loss (%)"

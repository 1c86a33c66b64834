"""The BPF underlay's report parts: cwnd shares, the kernel-fidelity table, the side-by-side figure."""

from __future__ import annotations

import json
import math

import pandas as pd

from alcc_report.load import load_experiment
from alcc_report.report import build_report
from alcc_report.underlay import cwnd_shares, kernel_fidelity_rows

from conftest import run_row, write_results, write_series


def frame(rows):
    return pd.DataFrame(rows, columns=["window", "kernel_cwnd", "kernel_mss", "underlay_cwnd"])


def test_shares_count_at_or_above_equal_and_last_written():
    # 3000 B window at a 1000 B MSS: 3 segments; the last sample lags (kernel still at 3 while
    # the window grew to 5 and 5 was written).
    samples = frame(
        [(3000, 3000, 1000, 3), (2500, 3000, 1000, 3), (100, 2000, 1000, 2), (5000, 3000, 1000, 5)]
    )
    s = cwnd_shares(samples)
    assert s["n"] == 4
    assert s["at_or_above"] == 0.75
    assert s["equal"] == 0.75  # 100 B rounds up to the 2-segment floor
    assert s["target"] == 0.75
    empty = cwnd_shares(frame([(math.nan, 3000, 1000, 0)]))
    assert empty["n"] == 0 and math.isnan(empty["at_or_above"])
    # Older telemetry without an MSS: no equality share.
    assert math.isnan(cwnd_shares(frame([(3000, 3000, math.nan, math.nan)]))["equal"])


def write_telemetry(run_dir, samples):
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {"t": i * 0.01, "flow": 1, "window": w, "kernel_cwnd": k, "kernel_mss": 1000, "underlay_cwnd": u}
        )
        for i, (w, k, u) in enumerate(samples)
    ]
    (run_dir / "telemetry.jsonl").write_text("\n".join(lines) + "\n")


def test_report_compares_follow_with_the_kernel_and_draws_them_side_by_side(tmp_path):
    rows = [
        run_row("T", "tcp-reno", throughput_mbps=10.0, delay_p95_ms=40.0),
        run_row("T", "alcc-reno@alcc:follow", throughput_mbps=9.0, delay_p95_ms=44.0),
        run_row("T", "alcc-copa@alcc:follow"),
    ]
    write_results(tmp_path, rows)
    for scheme in ("tcp-reno", "alcc-reno@alcc:follow", "alcc-copa@alcc:follow"):
        write_series(tmp_path / f"runs/T/{scheme}/run-0", [5.0, 8.0], [20.0, 25.0])
    write_telemetry(tmp_path / "runs/T/tcp-reno/run-0", [(None, 10000, 0), (None, 12000, 0)])
    write_telemetry(tmp_path / "runs/T/alcc-reno@alcc:follow/run-0", [(10000, 10000, 10), (12000, 10000, 12)])
    experiment = load_experiment(tmp_path)
    table = kernel_fidelity_rows(experiment.runs)
    # Only reno has a kernel twin; copa is left out.
    assert [r[:4] for r in table.rows] == [["T", "alcc-reno@alcc:follow", "tcp-reno", "1/1"]]
    assert table.rows[0][6] == "-10.0 %" and table.rows[0][9] == "+10.0 %"
    report = build_report(experiment)
    section = {s.key: s for s in report.sections}["underlay"]
    assert [f.key for f in section.figures] == ["cwnd-pair-T-reno"]
    shares = {r[1]: r for r in section.tables[0].rows}
    assert shares["alcc-reno@alcc:follow"][4:] == ["50.0 %", "50.0 %", "50.0 %"]

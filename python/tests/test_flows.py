"""Runs with several flows and cross traffic: the fairness, per-flow and competing-flow tables
and the per-flow throughput figure (paper Figure 22), from a crafted experiment directory."""

from __future__ import annotations

import csv
import math

from alcc_report.flows import competing_table, fairness_table, per_flow_table
from alcc_report.load import RESULT_COLUMNS, load_experiment
from alcc_report.report import build_report
from alcc_report.samples import RunFiles

from conftest import run_row, write_series

EXTRA = [
    "workload",
    "flows",
    "flows_throughput_mbps",
    "flows_delay_p95_ms",
    "jain_index",
    "jain_weighted_index",
]
FLOWS_HEADER = (
    "flow,weight,start_s,end_s,bytes,throughput_mbps,share,weight_share,delay_p50_ms,delay_p95_ms,loss"
)


def flows_csv(rates: list[float], cross: float | None, weights=(1, 2)) -> str:
    total = sum(rates)
    lines = [FLOWS_HEADER]
    for i, (rate, w) in enumerate(zip(rates, weights, strict=True)):
        lines.append(
            f"flow-{i},{w},0,10,{int(rate * 1.25e6)},{rate},{rate / total},{w / sum(weights)},30,40,0"
        )
    if cross is not None:
        lines.append(f"cross-tcp-cubic,,2,6,{int(cross * 5e5)},{cross},,,50,60,0")
    return "\n".join(lines) + "\n"


def crafted(tmp_path):
    """Trace L, workload w (2 weighted flows and an on/off CUBIC flow): alcc-copa+coupled gets
    3:6 and leaves CUBIC 6 Mbit/s; tcp-cubic (2 runs) 6:3 and leaves it 3 and 4; a failed
    alcc-copa+uncoupled run; one run without a workload."""
    specs = [
        ("alcc-copa+coupled", 0, [3.0, 6.0], 6.0, 0.9, 1.0),
        ("tcp-cubic", 0, [6.0, 3.0], 3.0, 0.9, 0.5),
        ("tcp-cubic", 1, [5.0, 4.0], 4.0, 0.98, 0.7),
    ]
    rows = []
    for scheme, run, rates, cross, jain, weighted in specs:
        d = f"runs/L/w/{scheme}/run-{run}"
        rows.append(
            run_row(
                "L",
                scheme,
                run,
                dir=d,
                workload="w",
                flows=2,
                flows_throughput_mbps=sum(rates),
                flows_delay_p95_ms=40.0,
                jain_index=jain,
                jain_weighted_index=weighted,
            )
        )
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "flows.csv").write_text(flows_csv(rates, cross))
        series = ["start_s,flow,throughput_mbps,delay_p95_ms"]
        for t in range(6):
            for i, rate in enumerate(rates):
                series.append(f"{t * 0.5},flow-{i},{rate},40")
            series.append(f"{t * 0.5},cross-tcp-cubic,{cross if 2 <= t <= 4 else 0},")
        (tmp_path / d / "flow-series.csv").write_text("\n".join(series) + "\n")
        write_series(tmp_path / d, [9.0] * 6, [40.0] * 6)
    failed = run_row("L", "alcc-copa+uncoupled", status="failed", error="x", workload="w", flows=2)
    failed["dir"] = "runs/L/w/alcc-copa+uncoupled/run-0"
    rows.append(failed)
    single = run_row("L", "tcp-cubic", 0)
    write_series(tmp_path / single["dir"], [9.0] * 6, [40.0] * 6)
    rows.append(single)
    columns = RESULT_COLUMNS + EXTRA
    with (tmp_path / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in columns})
    return load_experiment(tmp_path)


def test_workload_runs_are_their_own_trace(tmp_path):
    experiment = crafted(tmp_path)
    runs = experiment.runs
    assert list(runs["trace"]) == ["L/w"] * 4 + ["L"]
    assert list(runs["link"]) == ["L"] * 5
    assert list(runs["workload"]) == ["w"] * 4 + [""]
    assert list(runs["flows"]) == [2, 2, 2, 2, 1]
    assert math.isnan(runs["jain_index"].iloc[4])


def test_fairness_per_flow_and_competing_tables(tmp_path):
    experiment = crafted(tmp_path)
    files = RunFiles(experiment)
    fairness = {(r[0], r[1]): r for r in fairness_table(experiment.runs).rows}
    assert set(fairness) == {
        ("L/w", "alcc-copa+coupled"),
        ("L/w", "tcp-cubic"),
        ("L/w", "alcc-copa+uncoupled"),
    }
    assert fairness[("L/w", "tcp-cubic")][2:] == ["2/2", "2", "9.00", "8.00", "40.0", "0.940", "0.600"]
    assert fairness[("L/w", "alcc-copa+uncoupled")][2] == "0/1"
    per_flow = {(r[1], r[2]): r for r in per_flow_table(files, experiment.runs).rows}
    # tcp-cubic's flow-0: 6 and 5 Mbit/s over two runs, shares 6/9 and 5/9.
    assert per_flow[("tcp-cubic", "flow-0")][3:8] == ["2", "1", "5.50", "0.611", "0.333"]
    assert per_flow[("alcc-copa+coupled", "flow-1")][5:7] == ["6.00", "0.667"]
    competing = {r[2]: r for r in competing_table(files, experiment.runs).rows}
    # CUBIC's cross flow: 3.5 next to plain CUBIC (median of 3 and 4), 6 next to coupled alcc.
    assert competing["tcp-cubic"][3] == "3.50"
    assert competing["tcp-cubic"][5] == "1.00 of next to tcp-cubic"
    assert competing["alcc-copa+coupled"][5] == "1.71 of next to tcp-cubic"
    assert competing_table(files, experiment.runs[experiment.runs["scheme"] == "none"]) is None


def test_no_workload_no_section(tmp_path):
    experiment = crafted(tmp_path)
    experiment.runs = experiment.runs[experiment.runs["workload"] == ""]
    assert fairness_table(experiment.runs) is None
    assert "flows" not in {s.key for s in build_report(experiment).sections}


def test_report_has_the_per_flow_figure(tmp_path):
    report = build_report(crafted(tmp_path))
    section = {s.key: s for s in report.sections}["flows"]
    assert [t.key for t in section.tables] == ["fairness", "per-flow", "competing"]
    assert [f.key for f in section.figures] == ["flows-L_w"]
    assert section.figures[0].png.startswith(b"\x89PNG\r\n\x1a\n")
    # The existing figures are per link and workload too.
    fig5 = {s.key: s for s in report.sections}["fig5"]
    assert sorted(f.key for f in fig5.figures) == ["fig5-L", "fig5-L_w"]

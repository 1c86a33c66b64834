"""Reading and validating the experiment directory."""

from __future__ import annotations

import math

import pytest

from alcc_report.errors import ReportError
from alcc_report.load import load_delays, load_experiment, load_series, load_telemetry

from conftest import run_row, write_results, write_series, write_telemetry


def test_results_parse_types_and_failed_rows(tmp_path):
    write_results(
        tmp_path,
        [
            run_row("t", "tcp-cubic", throughput_mbps=9.5),
            run_row("t", "alcc-copa@cubic", run=1, status="failed", error='boom, "quoted"\nsecond line'),
        ],
    )
    exp = load_experiment(tmp_path)
    assert list(exp.runs["scheme"]) == ["tcp-cubic", "alcc-copa@cubic"]
    assert exp.runs["throughput_mbps"].iloc[0] == 9.5
    assert math.isnan(exp.runs["throughput_mbps"].iloc[1])
    assert exp.runs["run"].tolist() == [0, 1]
    assert exp.runs["error"].iloc[1] == 'boom, "quoted"\nsecond line'
    assert len(exp.ok_runs()) == 1 and len(exp.failed_runs()) == 1
    assert exp.name == tmp_path.name and exp.quick is None


def test_results_json_name_and_quick(tmp_path):
    write_results(tmp_path, [run_row("t", "tcp-cubic")])
    (tmp_path / "results.json").write_text('{"name": "demo", "quick": true, "spec": {}, "runs": []}')
    exp = load_experiment(tmp_path)
    assert (exp.name, exp.quick) == ("demo", True)


def test_missing_results(tmp_path):
    with pytest.raises(ReportError, match=r"results\.csv: missing"):
        load_experiment(tmp_path)


def test_bad_number_names_line_and_field(tmp_path):
    write_results(
        tmp_path, [run_row("t", "tcp-cubic"), run_row("t", "tcp-cubic", run=1, delay_p95_ms="fast")]
    )
    with pytest.raises(
        ReportError, match=r"results\.csv: line 3, field delay_p95_ms: 'fast' is not a number"
    ):
        load_experiment(tmp_path)


def test_bad_status_and_missing_column(tmp_path):
    write_results(tmp_path, [run_row("t", "tcp-cubic", status="done")])
    with pytest.raises(ReportError, match=r"line 2, field status: 'done'"):
        load_experiment(tmp_path)
    (tmp_path / "results.csv").write_text("trace,scheme\nt,tcp-cubic\n")
    with pytest.raises(ReportError, match=r"line 1: missing columns family, cc"):
        load_experiment(tmp_path)


def test_ok_run_without_throughput_is_an_error(tmp_path):
    write_results(tmp_path, [run_row("t", "tcp-cubic", throughput_mbps="")])
    with pytest.raises(ReportError, match="field throughput_mbps: empty in a run with status ok"):
        load_experiment(tmp_path)


def test_short_row(tmp_path):
    write_results(tmp_path, [run_row("t", "tcp-cubic")])
    with (tmp_path / "results.csv").open("a") as f:
        f.write("t,tcp-cubic,tcp\n")
    with pytest.raises(ReportError, match=r"line 3: 3 fields, the header has 20"):
        load_experiment(tmp_path)


def test_series_empty_delay_cells_are_nan(tmp_path):
    write_series(tmp_path, [1.0, 2.0, 3.0], [10.0, None, 12.5])
    series = load_series(tmp_path / "series.csv")
    assert series["throughput_mbps"].tolist() == [1.0, 2.0, 3.0]
    assert series["delay_p50_ms"].iloc[0] == 10.0 and math.isnan(series["delay_p50_ms"].iloc[1])
    assert load_series(tmp_path / "absent.csv") is None


def test_series_text_cell(tmp_path):
    write_series(tmp_path, [1.0, 2.0], [10.0, 11.0])
    text = (tmp_path / "series.csv").read_text().replace("2.0,2.0", "2.0,lots")
    (tmp_path / "series.csv").write_text(text)
    with pytest.raises(ReportError, match=r"series\.csv: line 3, field sent_mbps: 'lots' is not a number"):
        load_series(tmp_path / "series.csv")


def test_delays(tmp_path):
    (tmp_path / "delays.csv").write_text("t_s,delay_ms\n0.1,10.5\n0.2,11\n")
    assert load_delays(tmp_path / "delays.csv").tolist() == [10.5, 11.0]
    (tmp_path / "delays.csv").write_text("t_s,delay_ms\n0.1,\n")
    with pytest.raises(ReportError, match=r"line 2, field delay_ms: empty"):
        load_delays(tmp_path / "delays.csv")
    (tmp_path / "delays.csv").write_text("")
    with pytest.raises(ReportError, match="empty file"):
        load_delays(tmp_path / "delays.csv")


def test_telemetry_nulls_and_truncated_last_line(tmp_path):
    write_telemetry(tmp_path, [(0.0, None, 14480), (0.01, 20000, 14480)])
    with (tmp_path / "telemetry.jsonl").open("a") as f:
        f.write('{"t": 0.02, "flow": 1, "win')
    tel = load_telemetry(tmp_path / "telemetry.jsonl")
    assert len(tel) == 2
    assert math.isnan(tel["window"].iloc[0]) and tel["window"].iloc[1] == 20000
    assert tel["kernel_cwnd"].tolist() == [14480, 14480]


def test_telemetry_bad_middle_line(tmp_path):
    (tmp_path / "telemetry.jsonl").write_text('{"t": 0, "flow": 1}\nnot json\n{"t": 1, "flow": 1}\n')
    with pytest.raises(ReportError, match=r"telemetry\.jsonl: line 2: not valid JSON"):
        load_telemetry(tmp_path / "telemetry.jsonl")
    (tmp_path / "telemetry.jsonl").write_text('{"t": 0, "flow": 1, "window": "big"}\n{"t": 1}\n')
    with pytest.raises(ReportError, match=r"line 1, field window: 'big' is not a number"):
        load_telemetry(tmp_path / "telemetry.jsonl")


def test_extra_columns_at_the_end_are_kept(tmp_path):
    write_results(tmp_path, [run_row("t", "tcp-cubic")])
    lines = (tmp_path / "results.csv").read_text().splitlines()
    lines = [lines[0] + ",wall_s,max_rss_kb", lines[1] + ",11.5,5120"]
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    runs = load_experiment(tmp_path).runs
    columns = list(runs.columns)
    assert columns[columns.index("wall_s") :] == [
        "wall_s",
        "max_rss_kb",
        "label",
        "load_avg",
        "direction",
        "workload",
        "flows",
        "flows_throughput_mbps",
        "flows_delay_p95_ms",
        "jain_index",
        "jain_weighted_index",
        "window_from_s",
        "window_to_s",
        "queued_at_end",
        "departed_after_window",
        "queued_at_log_end",
        "link",
    ]
    # Results written before the common window have none: their figures are over their own log.
    assert runs["window_to_s"].isna().all()
    # Without workloads: one flow, the trace is the link.
    assert (runs["workload"].iloc[0], runs["flows"].iloc[0], runs["link"].iloc[0]) == ("", 1.0, "t")
    # Results written before the direction column were downloads.
    assert runs["direction"].iloc[0] == "down"
    assert runs["throughput_mbps"].iloc[0] == 8.0 and runs["wall_s"].iloc[0] == "11.5"
    # load_avg, when written, is a number.
    lines = [lines[0] + ",label,load_avg", lines[1] + ",x,3.25"]
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    assert load_experiment(tmp_path).runs["load_avg"].iloc[0] == 3.25


def test_results_of_the_old_native_family_read_as_udp(tmp_path):
    write_results(tmp_path, [run_row("t", "udp-copa"), run_row("t", "udp-verus", family="native")])
    runs = load_experiment(tmp_path).runs
    assert runs["family"].tolist() == ["udp", "udp"]
    # Without a label column every run reads an empty label (the legend falls back to the family).
    assert runs["label"].tolist() == ["", ""]
    write_results(tmp_path, [run_row("t", "udp-copa", family="quic")])
    with pytest.raises(ReportError, match=r"line 2, field family: 'quic' is not one of tcp, alcc, udp"):
        load_experiment(tmp_path)

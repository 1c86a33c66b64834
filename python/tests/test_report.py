"""The whole report: crafted edge cases, a fixture from real `alcc sim` runs, the command line."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from alcc_report.cli import main
from alcc_report.html import render_html
from alcc_report.load import load_experiment
from alcc_report.report import build_report

from conftest import run_row, write_results, write_series, write_telemetry


def sections(report):
    return {s.key: s for s in report.sections}


def crafted(tmp_path):
    """One trace: tcp-cubic (telemetry with window null), alcc-copa@cubic (telemetry), a failed
    udp-copa run and alcc-verus without udp-verus; one run each."""
    rows = [
        run_row("T", "tcp-cubic"),
        run_row("T", "alcc-copa@cubic", throughput_mbps=7.0, delay_p95_ms=30.0),
        run_row("T", "udp-copa", status="failed", error="alcc get: connection refused"),
        run_row("T", "alcc-verus@cubic"),
    ]
    write_results(tmp_path, rows)
    for scheme in ("tcp-cubic", "alcc-copa@cubic", "alcc-verus@cubic"):
        write_series(tmp_path / f"runs/T/{scheme}/run-0", [5.0, 8.0, 7.5, 9.0], [20.0, 25.0, None, 30.0])
    (tmp_path / "runs/T/alcc-copa@cubic/run-0/delays.csv").write_text(
        "t_s,delay_ms\n0.1,20\n0.2,22\n0.3,35\n"
    )
    write_telemetry(tmp_path / "runs/T/alcc-copa@cubic/run-0", [(0.0, 10000, 20000), (0.1, 15000, 30000)])
    write_telemetry(tmp_path / "runs/T/tcp-cubic/run-0", [(0.0, None, 20000)])
    return tmp_path


def test_crafted_report_sections(tmp_path):
    report = build_report(load_experiment(crafted(tmp_path)))
    by_key = sections(report)
    assert [f.key for f in by_key["fig5"].figures] == ["fig5-T"]
    assert [f.key for f in by_key["fig6"].figures] == ["fig6-T"]
    assert [f.key for f in by_key["fig7"].figures] == ["fig7-T"]
    assert [f.key for f in by_key["pantheon"].figures] == ["pantheon-T"]
    # Figure 1 only for ALCC schemes with telemetry: copa has it, verus does not, tcp is not ALCC.
    assert [f.key for f in by_key["fig1"].figures] == ["fig1-T-alcc-copa_cubic"]
    assert "at or above the window in 100% of 2 samples" in by_key["fig1"].figures[0].caption
    for figure in report.figures():
        assert figure.png.startswith(b"\x89PNG\r\n\x1a\n")
    failed = by_key["failed"].tables[0].rows
    assert failed == [["T", "udp-copa", "0", "alcc get: connection refused", "runs/T/udp-copa/run-0"]]
    fidelity = {r[1]: r for r in by_key["fidelity"].tables[0].rows}
    assert fidelity["alcc-copa@cubic"][-1] == "every udp-copa run failed"
    assert fidelity["alcc-verus@cubic"][-1] == "no udp-verus runs on this trace"
    notes = [r[0] for r in by_key["notes"].tables[0].rows]
    assert "runs/T/alcc-verus@cubic/run-0/telemetry.jsonl is missing" in notes
    # The failed run is excluded from the figures: its files are never looked for.
    assert not any("udp-copa" in n for n in notes)


def test_html_is_self_contained(tmp_path):
    report = build_report(load_experiment(crafted(tmp_path)))
    html = render_html(report)
    assert html.count("<img ") == len(report.figures()) == 5
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', html)
    assert sources, "expected image sources and section links"
    for source in sources:
        assert source.startswith("data:image/png;base64,") or source.startswith("#"), source
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert 'id="render-check"' in html


def test_simulated_fixture_report(simulated, tmp_path):
    out = tmp_path / "out" / "r.html"
    assert main([str(simulated), "--out", str(out)]) == 0
    html = out.read_text()
    md = (tmp_path / "out" / "r.md").read_text()
    figures = sorted(p.name for p in (tmp_path / "out" / "report-figures").glob("*.png"))
    assert figures == [
        "fig5-synthetic.png",
        "fig6-synthetic.png",
        "fig7-synthetic.png",
        "pantheon-synthetic.png",
    ]
    for name in figures:
        assert f"](report-figures/{name})" in md
    assert html.count("<img ") == 4
    # The failing scheme's runs are listed with alcc's own error text.
    failed_rows = [line for line in md.splitlines() if line.startswith("| synthetic | udp-verus |")]
    assert len(failed_rows) == 2 + 1  # two failed runs + one summary row
    assert any("absent.trace" in line for line in failed_rows)
    fidelity = [line for line in md.splitlines() if "| alcc-copa@cubic | udp-copa |" in line]
    assert len(fidelity) == 1 and re.search(r"[+-]\d+\.\d %", fidelity[0])
    cpu = [line for line in md.splitlines() if line.startswith("| synthetic | alcc-copa@cubic | 2 |")]
    assert len(cpu) == 1 and "| tcp-cubic |" in cpu[0] and re.search(r"\d\.\d\dx", cpu[0])


def test_single_run_experiment(alcc_bin, tmp_path):
    import make_fixture

    make_fixture.build_simulated(tmp_path, alcc_bin, ["alcc-copa@cubic"], runs=1, duration=5)
    report = build_report(load_experiment(tmp_path))
    by_key = sections(report)
    assert len(by_key["fig6"].figures) == 1 and len(by_key["fig7"].figures) == 1
    cpu_rows = by_key["cpu"].tables[0].rows
    assert cpu_rows[0][6] == "-" and "no completed tcp-cubic run" in cpu_rows[0][7]


def test_cli_errors_without_traceback(tmp_path):
    write_results(tmp_path, [run_row("T", "tcp-cubic", cpu_s="lots")])
    done = subprocess.run(
        [sys.executable, "-m", "alcc_report.cli", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"alcc-report: {tmp_path}/results.csv: line 2, field cpu_s: 'lots' is not a number"
    )
    assert "Traceback" not in done.stderr


def test_cli_malformed_run_file(tmp_path, capsys):
    write_results(tmp_path, [run_row("T", "tcp-cubic")])
    run_dir = tmp_path / "runs/T/tcp-cubic/run-0"
    write_series(run_dir, [1.0, 2.0], [3.0, 4.0])
    (run_dir / "delays.csv").write_text("t_s,delay_ms\n0.1,oops\n")
    assert main([str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"alcc-report: {run_dir}/delays.csv: line 2, field delay_ms: 'oops' is not a number"
    )


def test_cli_not_a_directory(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 1
    assert "not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("empty_csv", ["", "trace,scheme\n"])
def test_cli_bad_results_header(tmp_path, capsys, empty_csv):
    (tmp_path / "results.csv").write_text(empty_csv)
    assert main([str(tmp_path)]) == 1
    assert "results.csv" in capsys.readouterr().err


def test_all_runs_failed_and_empty_results(tmp_path):
    rows = [
        run_row("T", "alcc-copa@cubic", status="failed", error="refused"),
        run_row("T", "udp-copa", status="failed", error="timeout"),
    ]
    write_results(tmp_path / "a", rows)
    report = build_report(load_experiment(tmp_path / "a"))
    assert report.figures() == []
    by_key = sections(report)
    assert len(by_key["failed"].tables[0].rows) == 2
    note = by_key["fidelity"].tables[0].rows[0][-1]
    assert note == "every udp-copa run failed; every alcc-copa@cubic run failed"
    assert by_key["cpu"].tables == [] and by_key["fig5"].empty == "No completed run with data."
    write_results(tmp_path / "b", [])
    assert main([str(tmp_path / "b")]) == 0
    assert "0 runs on 0 traces" in (tmp_path / "b" / "report.md").read_text()


def test_fidelity_section_says_what_it_compares(tmp_path):
    rows = [
        run_row("T", "alcc-copa@cubic", label="alcc's copa above kernel cubic (kernel mode)"),
        run_row("T", "udp-copa", label="alcc's own copa over UDP (not its authors' program)"),
    ]
    write_results(tmp_path, rows)
    by_key = sections(build_report(load_experiment(tmp_path)))
    fidelity = by_key["fidelity"]
    assert fidelity.title == "Fidelity: ALCC-X against our own UDP X"
    assert "not X's authors' program" in fidelity.text
    assert fidelity.tables[0].columns[2:4] == ["against (our UDP)", "runs (alcc/our UDP)"]
    legend = {r[0]: r[1:] for r in by_key["summary"].tables[1].rows}
    assert legend["udp-copa"] == ["udp", "alcc's own copa over UDP (not its authors' program)"]
    # Without the authors' programs the report says so instead of comparing with them.
    for key in ("paper-claim", "faithfulness"):
        assert by_key[key].tables == [] and "did not run in this experiment" in by_key[key].empty


def test_the_authors_programs_are_compared_with_ours_and_alcc(tmp_path):
    rows = [
        run_row("T", "alcc-copa@cubic", throughput_mbps=4.5, delay_p95_ms=40.0),
        run_row("T", "udp-copa", throughput_mbps=4.8, delay_p95_ms=36.0),
        run_row("T", "ref-copa", throughput_mbps=5.0, delay_p95_ms=40.0),
        run_row("T", "ref-verus:r=2", throughput_mbps=3.0),
    ]
    write_results(tmp_path, rows)
    by_key = sections(build_report(load_experiment(tmp_path)))
    claim = by_key["paper-claim"]
    assert claim.title == "The paper's claim: ALCC-X against the authors' X"
    [row] = claim.tables[0].rows
    assert row[:3] == ["T", "alcc-copa@cubic", "ref-copa"] and row[6] == "-10.0 %" and row[9] == "+0.0 %"
    [row] = by_key["faithfulness"].tables[0].rows
    assert row[:3] == ["T", "udp-copa", "ref-copa"] and row[6] == "-4.0 %" and row[9] == "-10.0 %"
    assert by_key["faithfulness"].tables[0].columns[4:6] == [
        "our UDP tput (Mbit/s)",
        "authors' tput (Mbit/s)",
    ]

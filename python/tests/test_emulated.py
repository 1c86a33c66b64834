"""End to end over the real emulator (root): a small experiment by the harness (`alcc experiment
run`: tcp-cubic, alcc-copa over kernel CUBIC, alcc's own Copa over UDP, 5 s each on a synthetic
cellular trace), then the report with every figure, rendered in headless Chromium. The run
takes /tmp/alcc-emu.lock so that it never overlaps another emulator run."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from alcc_report.cli import main
from alcc_report.load import load_experiment
from alcc_report.render_check import find_browser
from alcc_report.report import build_report

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the emulator needs root (network namespaces, TUN)")

SPEC = """
name = "report-e2e"
duration_s = 5
runs = 1
delay_ms = 10
queue_bytes = 2000000
schemes = ["tcp-cubic", "alcc-copa", "udp-copa"]

[[traces]]
name = "synthetic"
generate = { kind = "cellular", seed = 1, duration_s = 30 }
"""


def _namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def test_experiment_report_over_the_emulator(alcc_bin, tmp_path, capsys):
    for tool in ("curl", "flock"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    help_text = subprocess.run([str(alcc_bin), "--help"], capture_output=True, text=True, check=False).stdout
    if "experiment" not in help_text.split("Commands:")[-1]:
        pytest.skip(f"{alcc_bin} has no `experiment` command: rebuild it (cargo build --release -p alcc-cli)")
    spec, out = tmp_path / "spec.toml", tmp_path / "out"
    spec.write_text(SPEC)
    before = _namespaces()
    command = [
        "flock",
        "/tmp/alcc-emu.lock",
        str(alcc_bin),
        "experiment",
        "run",
        str(spec),
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    experiment = load_experiment(out)
    assert len(experiment.ok_runs()) == 3, experiment.runs[["scheme", "status", "error"]].to_string()
    report = build_report(experiment)
    assert sorted({f.section for f in report.figures()}) == ["fig1", "fig5", "fig6", "fig7", "pantheon"]
    rows = {r[1]: r for s in report.sections if s.key == "fidelity" for r in s.tables[0].rows}
    assert rows["alcc-copa"][2] == "udp-copa" and rows["alcc-copa"][6].endswith("%")
    browser_args = ["--check-render"] if find_browser() else []
    assert main([str(out), *browser_args]) == 0
    if browser_args:
        assert "render check: 5 of 5 images loaded" in capsys.readouterr().out
    # No namespace left behind: a new alcc-PID-N namespace whose `alcc link` process is gone
    # leaked (other engineers' live runs may have theirs meanwhile).
    new = [n.split("-") for n in _namespaces() - before if n.startswith("alcc-")]
    leaked = [n for n in new if len(n) > 1 and n[1].isdigit() and not os.path.exists(f"/proc/{n[1]}")]
    assert not leaked, leaked

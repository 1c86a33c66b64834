"""End to end over the real emulator (root): three short downloads through `alcc link` (tcp-cubic,
alcc-copa over kernel CUBIC, native Copa over UDP) in the experiment layout, then the report,
with every figure, rendered in headless Chromium. Each emulator run takes /tmp/alcc-emu.lock."""

from __future__ import annotations

import os
import subprocess

import pytest

from alcc_report.cli import main
from alcc_report.load import load_experiment
from alcc_report.render_check import find_browser
from alcc_report.report import build_report

import make_fixture

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the emulator needs root (network namespaces, TUN)")


def _namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def test_emulated_experiment_report(alcc_bin, tmp_path, capsys):
    if subprocess.run(["which", "curl"], capture_output=True, check=False).returncode != 0:
        pytest.skip("curl is not installed")
    before = _namespaces()
    schemes = ["tcp-cubic", "alcc-copa@cubic", "native-copa"]
    make_fixture.build_emulated(tmp_path, alcc_bin, schemes, seconds=6)
    experiment = load_experiment(tmp_path)
    failed = experiment.failed_runs()
    assert failed.empty, failed[["scheme", "error"]].to_string()
    for scheme in schemes:
        run_dir = tmp_path / f"runs/synthetic/{scheme}/run-0"
        for name in (
            "downlink.log",
            "series.csv",
            "delays.csv",
            "telemetry.jsonl",
            "rusage.json",
            "result.json",
        ):
            assert (run_dir / name).is_file(), f"{run_dir}/{name}"
    report = build_report(experiment)
    assert sorted({f.section for f in report.figures()}) == ["fig1", "fig5", "fig6", "fig7", "pantheon"]
    browser_args = ["--check-render"] if find_browser() else []
    assert main([str(tmp_path), *browser_args]) == 0
    if browser_args:
        assert "render check: 5 of 5 images loaded" in capsys.readouterr().out
    # No namespace left behind: a new alcc-PID-N namespace whose `alcc link` process is gone
    # leaked (other engineers' live runs may have theirs meanwhile).
    new = [n.split("-") for n in _namespaces() - before if n.startswith("alcc-")]
    leaked = [n for n in new if len(n) > 1 and n[1].isdigit() and not os.path.exists(f"/proc/{n[1]}")]
    assert not leaked, leaked

"""The report renders in headless Chromium with every image loaded (skips without Chromium)."""

from __future__ import annotations

import pytest

from alcc_report.cli import main
from alcc_report.html import write_html
from alcc_report.load import load_experiment
from alcc_report.render_check import check_render, find_browser
from alcc_report.report import build_report

needs_browser = pytest.mark.skipif(
    find_browser() is None, reason="headless Chromium not installed (apt-get install chromium)"
)


@needs_browser
def test_simulated_report_renders_with_every_image(simulated, tmp_path, capsys):
    html = tmp_path / "report.html"
    shot = tmp_path / "shot.png"
    assert main([str(simulated), "--out", str(html), "--check-render", "--screenshot", str(shot)]) == 0
    out = capsys.readouterr().out
    assert "render check: 4 of 4 images loaded (4 in the file)" in out
    assert shot.read_bytes().startswith(b"\x89PNG")


@needs_browser
def test_a_broken_image_is_caught(simulated, tmp_path):
    report = build_report(load_experiment(simulated))
    fig5 = next(s for s in report.sections if s.key == "fig5")
    fig5.figures[0].png = b"not a png"
    html = tmp_path / "broken.html"
    write_html(report, html)
    result = check_render(html)
    assert (result.expected, result.images, result.loaded) == (4, 4, 3)
    assert not result.ok

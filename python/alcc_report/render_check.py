"""Checking that a report renders in headless Chromium with every image loaded.

Chromium loads the report with a virtual-time budget, runs its inline check script (see
:mod:`alcc_report.html`) and dumps the DOM; the check reads ``data-images`` and ``data-loaded``
of ``#render-check`` and compares both with the number of ``<img>`` tags in the file. Optionally
it also takes a screenshot of the page.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from alcc_report.errors import ReportError

#: Browser executables tried in order.
BROWSERS = ("chromium", "chromium-browser", "google-chrome")

#: Virtual time Chromium gives the page before dumping the DOM (ms).
VIRTUAL_TIME_BUDGET_MS = 10000

#: Wall-clock limit of one Chromium invocation (s).
TIMEOUT_S = 180

_MARK = re.compile(r'<p[^>]*id="render-check"[^>]*>')
_ATTR = re.compile(r'data-(images|loaded)="(\d*)"')


@dataclass(frozen=True)
class RenderResult:
    """What Chromium saw."""

    #: ``<img>`` tags in the HTML file.
    expected: int
    #: Images the page counted after loading.
    images: int
    #: Images that decoded (complete and naturalWidth > 0).
    loaded: int

    @property
    def ok(self) -> bool:
        """Every image of the file was present and loaded."""
        return self.expected == self.images == self.loaded


def find_browser() -> str | None:
    """The path of a Chromium executable, or ``None``."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(browser: str, args: list[str], profile: str) -> subprocess.CompletedProcess:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *args,
    ]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ReportError(f"{browser}: no answer within {TIMEOUT_S} s") from None


def check_render(html_path: Path, screenshot: Path | None = None, browser: str | None = None) -> RenderResult:
    """Loads ``html_path`` in headless Chromium and counts the images that loaded.

    Raises :class:`ReportError` when no browser is found or Chromium's output has no check mark.
    """
    browser = browser or find_browser()
    if browser is None:
        raise ReportError(
            f"no headless browser found (tried {', '.join(BROWSERS)}; apt-get install chromium)"
        )
    html_path = Path(html_path).resolve()
    expected = len(re.findall(r"<img\b", html_path.read_text(encoding="utf-8")))
    url = html_path.as_uri()
    with tempfile.TemporaryDirectory(prefix="alcc-report-chromium-") as profile:
        done = _run(browser, [f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}", "--dump-dom", url], profile)
        mark = _MARK.search(done.stdout)
        if done.returncode != 0 or mark is None:
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise ReportError(f"{browser} did not render {html_path} (exit {done.returncode}): {tail}")
        attrs = dict(_ATTR.findall(mark.group(0)))
        if not attrs.get("images") or not attrs.get("loaded"):
            raise ReportError(f"{html_path}: the page's check script did not run in {browser}")
        if screenshot is not None:
            screenshot = Path(screenshot).resolve()
            shot = _run(
                browser,
                [
                    f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
                    f"--screenshot={screenshot}",
                    "--window-size=1400,4000",
                    "--hide-scrollbars",
                    url,
                ],
                profile,
            )
            if shot.returncode != 0 or not screenshot.is_file():
                raise ReportError(
                    f"{browser} did not write the screenshot {screenshot} (exit {shot.returncode})"
                )
    return RenderResult(expected=expected, images=int(attrs["images"]), loaded=int(attrs["loaded"]))

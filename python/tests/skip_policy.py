"""pytest's side of alcc's skip policy (the Rust side is crates/alcc-testenv).

A test that cannot run here (no root, no Chromium, no alcc binary) skips with ``pytest.skip`` or
``pytest.mark.skipif`` as usual; this plugin (registered by ``conftest.py``) makes every such skip

- visible: a ``pytest::NODEID<TAB>reason`` line in ``$ALCC_SKIP_LOG`` when it is set (``make test``
  sets it and ends with one line listing every skip, Rust's and pytest's);
- a failure in CI: when ``CI`` is set (to anything but empty, ``0`` or ``false``; ``.ci/run`` sets
  ``CI=true``) the test is reported failed with the reason (an error when it skipped in its
  setup, as ``skipif`` marks do; an error of collection when a whole module skipped, as
  ``pytest.importorskip`` at module level does, which stops the run).

:func:`trace_dir` is the shared traces' directory, the same default as the Rust tests'.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The variable that makes a skip a failure.
STRICT_VAR = "CI"

#: The variable naming the file skips are appended to.
LOG_VAR = "ALCC_SKIP_LOG"

REPO = Path(__file__).resolve().parents[2]


def strict() -> bool:
    """Whether a skip is a failure here."""
    return os.environ.get(STRICT_VAR, "") not in ("", "0", "false", "FALSE", "False")


def trace_dir() -> Path:
    """``$ALCC_TRACE_DIR``, else ``shared/traces`` beside the repository."""
    value = os.environ.get("ALCC_TRACE_DIR", "")
    return Path(value) if value else REPO.parent / "shared" / "traces"


def _reason(report: pytest.TestReport) -> str:
    """The skip's reason (pytest keeps it as ``(file, line, "Skipped: reason")``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").replace("\n", " ").replace("\t", " ")


def _apply(report: pytest.TestReport | pytest.CollectReport, nodeid: str) -> None:
    """A skip's report becomes a failure in CI; otherwise the skip goes to ``$ALCC_SKIP_LOG``."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _reason(report)
    if strict():
        report.outcome = "failed"
        report.longrepr = f"{nodeid} cannot run here: {reason} (a skip is a failure when {STRICT_VAR} is set)"
        return
    log = os.environ.get(LOG_VAR, "")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"pytest::{nodeid}\t{reason}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test's skip (in its body or its setup)."""
    outcome = yield
    _apply(outcome.get_result(), item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A whole module's skip (``pytest.importorskip`` or ``pytest.skip(allow_module_level=True)``
    at import), which no test's report shows."""
    outcome = yield
    _apply(outcome.get_result(), collector.nodeid)

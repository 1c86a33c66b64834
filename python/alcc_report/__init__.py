"""alcc-report: the report of an `alcc experiment run` output directory.

The layout of that directory (``results.csv``, ``runs/TRACE/SCHEME/run-K/...``) is documented in
``docs/experiment-format.md``. :mod:`alcc_report.load` reads it, :mod:`alcc_report.fidelity` and
:mod:`alcc_report.cpu` compute the tables, :mod:`alcc_report.figures` draws the paper's figures,
:mod:`alcc_report.html` and :mod:`alcc_report.markdown` write the report, and
:mod:`alcc_report.render_check` checks in headless Chromium that it shows every image.
"""

from alcc_report.errors import ReportError

__all__ = ["ReportError"]

"""Writing the report as one self-contained HTML file: PNG images as base64 ``data:`` URIs, the
style inline, no external reference.

A small inline script marks, once the page has loaded, how many ``<img>`` elements the page has
and how many decoded (``complete`` and ``naturalWidth > 0``) in the attributes ``data-images``
and ``data-loaded`` of the element ``#render-check``; :mod:`alcc_report.render_check` reads them
from the DOM that headless Chromium dumps.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from alcc_report.figures.common import Figure
from alcc_report.report import Report
from alcc_report.tables import Table

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; }
nav a { margin-right: 1em; }
.empty { color: #777; font-style: italic; }
"""

CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var images = document.getElementsByTagName('img');
  var loaded = 0;
  for (var i = 0; i < images.length; i++) {
    if (images[i].complete && images[i].naturalWidth > 0) { loaded++; }
  }
  var mark = document.getElementById('render-check');
  mark.setAttribute('data-images', String(images.length));
  mark.setAttribute('data-loaded', String(loaded));
  mark.textContent = loaded + ' of ' + images.length + ' images loaded';
});
"""


def _is_number(cell: str) -> bool:
    text = cell.replace("%", "").replace("x", "").strip()
    try:
        float(text)
    except ValueError:
        return False
    return True


def table_html(table: Table) -> str:
    """An HTML ``<table>`` of ``table``, every cell escaped; numeric cells right-aligned."""
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if _is_number(c) else f"<td>{escape(c)}</td>" for c in row
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table id="table-{escape(table.key)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def figure_html(figure: Figure) -> str:
    """A ``<figure>`` with the PNG inline as a ``data:`` URI and its caption."""
    data = base64.b64encode(figure.png).decode("ascii")
    return (
        f'<figure id="{escape(figure.key)}"><img alt="{escape(figure.title)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{escape(figure.caption)}</figcaption></figure>'
    )


def render_html(report: Report) -> str:
    """The complete HTML document of ``report``."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(report.title)}</title>",
        f"<style>{STYLE}</style>",
        "</head><body>",
        f"<h1>{escape(report.title)}</h1>",
        f"<p>{escape(report.preamble)}</p>",
        "<nav>"
        + "".join(f'<a href="#{escape(s.key)}">{escape(s.title)}</a>' for s in report.sections)
        + "</nav>",
    ]
    for section in report.sections:
        parts.append(f'<section id="{escape(section.key)}"><h2>{escape(section.title)}</h2>')
        parts.append(f"<p>{escape(section.text)}</p>")
        if not section.tables and not section.figures:
            parts.append(f'<p class="empty">{escape(section.empty)}</p>')
        parts.extend(table_html(t) for t in section.tables)
        parts.extend(figure_html(f) for f in section.figures)
        parts.append("</section>")
    parts.append('<p id="render-check" data-images="" data-loaded=""></p>')
    parts.append(f"<script>{CHECK_SCRIPT}</script>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html(report: Report, path: Path) -> None:
    """Writes the HTML report to ``path``."""
    path.write_text(render_html(report), encoding="utf-8")

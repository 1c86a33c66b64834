"""Writing the report as Markdown: the same sections and tables, the figures as PNG files in a
directory next to the Markdown file (``report-figures/`` by default), linked relatively."""

from __future__ import annotations

from pathlib import Path

from alcc_report.report import Report
from alcc_report.tables import Table


def _cell(text: str) -> str:
    """A table cell: pipes escaped, line breaks flattened."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip() or " "


def table_markdown(table: Table) -> str:
    """A GitHub-flavoured Markdown table of ``table``."""
    lines = [
        "| " + " | ".join(_cell(c) for c in table.columns) + " |",
        "|" + "|".join(" --- " for _ in table.columns) + "|",
    ]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows)
    return "\n".join(lines)


def render_markdown(report: Report, figure_dir: str) -> str:
    """The Markdown text of ``report``; figure ``K`` is linked as ``figure_dir/K.png``."""
    parts = [f"# {report.title}", "", report.preamble, ""]
    for section in report.sections:
        parts += [f"## {section.title}", "", section.text, ""]
        if not section.tables and not section.figures:
            parts += [f"_{section.empty}_", ""]
        for table in section.tables:
            parts += [table_markdown(table), ""]
        for figure in section.figures:
            parts += [f"![{figure.title}]({figure_dir}/{figure.key}.png)", "", f"*{figure.caption}*", ""]
    return "\n".join(parts)


def write_markdown(report: Report, path: Path, figure_dir_name: str = "report-figures") -> Path:
    """Writes ``path`` and the PNG files into ``figure_dir_name`` beside it; returns that directory."""
    figure_dir = path.parent / figure_dir_name
    figure_dir.mkdir(parents=True, exist_ok=True)
    for old in figure_dir.glob("*.png"):
        old.unlink()
    for figure in report.figures():
        (figure_dir / f"{figure.key}.png").write_bytes(figure.png)
    path.write_text(render_markdown(report, figure_dir_name), encoding="utf-8")
    return figure_dir

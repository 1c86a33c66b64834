"""The ``alcc-report`` command: ``alcc-report DIR [--out FILE] [--check-render] [--screenshot F]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from alcc_report.errors import ReportError
from alcc_report.html import write_html
from alcc_report.load import load_experiment
from alcc_report.markdown import write_markdown
from alcc_report.render_check import check_render
from alcc_report.report import build_report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="alcc-report",
        description="Write report.html (self-contained) and report.md (with report-figures/*.png) "
        "from the output directory of `alcc experiment run`.",
    )
    parser.add_argument("dir", type=Path, help="the experiment output directory (with results.csv)")
    parser.add_argument(
        "--out", type=Path, help="the HTML file (default DIR/report.html); report.md goes beside it"
    )
    parser.add_argument(
        "--check-render",
        action="store_true",
        help="then load the report in headless Chromium and fail unless every image loaded",
    )
    parser.add_argument(
        "--screenshot", type=Path, help="with --check-render: also save a PNG screenshot here"
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    """Writes the report (and checks it); returns the exit status."""
    experiment = load_experiment(args.dir)
    report = build_report(experiment)
    html_path = args.out or args.dir / "report.html"
    html_path.parent.mkdir(parents=True, exist_ok=True)
    md_path = html_path.with_suffix(".md")
    write_html(report, html_path)
    figure_dir = write_markdown(report, md_path)
    print(html_path)
    print(md_path)
    print(f"{figure_dir}/ ({len(report.figures())} figures)")
    if args.check_render or args.screenshot:
        result = check_render(html_path, screenshot=args.screenshot)
        print(
            f"render check: {result.loaded} of {result.images} images loaded ({result.expected} in the file)"
        )
        if args.screenshot:
            print(args.screenshot)
        if not result.ok:
            print("alcc-report: render check failed", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: expected errors are one line on stderr and exit status 1, no traceback."""
    args = parse_args(argv)
    try:
        return run(args)
    except ReportError as e:
        print(f"alcc-report: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"alcc-report: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

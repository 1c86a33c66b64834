"""The Pantheon-style summary: throughput against 95th-percentile one-way delay, per trace.

As in Pantheon's reports (Yan et al., USENIX ATC 2018), the delay axis is logarithmic and
reversed, so that better (more throughput, less delay) is up and to the right. Each small marker
is one completed run (its ``throughput_mbps`` and ``delay_p95_ms`` from ``results.csv``); the
large marker is the scheme's median over runs of both.
"""

from __future__ import annotations

from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.samples import RunFiles


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per trace with at least one completed run."""
    figures = []
    ok = files.experiment.ok_runs()
    for trace, runs in ok.groupby("trace", sort=True):
        fig, axes = new_figure(1, 1, size=(8.0, 5.5))
        ax = axes[0][0]
        for scheme, of_scheme in runs.groupby("scheme", sort=True):
            color = palette(scheme)
            ax.scatter(of_scheme["delay_p95_ms"], of_scheme["throughput_mbps"], color=color, s=18, alpha=0.6)
            median_delay = float(of_scheme["delay_p95_ms"].median())
            median_tput = float(of_scheme["throughput_mbps"].median())
            ax.scatter([median_delay], [median_tput], color=color, s=90, edgecolor="black", label=scheme)
            ax.annotate(
                scheme, (median_delay, median_tput), xytext=(6, 6), textcoords="offset points", fontsize=8
            )
        if (runs["delay_p95_ms"] > 0).all():
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.invert_xaxis()
        ax.set_ylim(0, float(runs["throughput_mbps"].max()) * 1.2 or 1.0)
        ax.set_xlabel("95th percentile one-way delay (ms, log scale, reversed)")
        ax.set_ylabel("average throughput (Mbit/s)")
        ax.set_title(f"{trace}: throughput against p95 delay (small: runs, large: median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        figures.append(
            Figure(
                key=f"pantheon-{safe_key(trace)}",
                section="pantheon",
                title=f"Throughput against p95 delay: {trace}",
                caption=(
                    f"{trace}: each small marker is one run, the large marker the median over runs; "
                    "better is up and to the right."
                ),
                png=to_png(fig),
            )
        )
    return figures

"""Per-flow throughput over time (like the ALCC paper's Figure 22): for each trace and workload,
one panel per scheme with each of its flows' delivered throughput per 500 ms bin, the cross
traffic's flows dashed in black and grey, and the link's capacity shaded. One run per scheme is
shown, the completed run with the lowest index.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.figures.timeseries import first_runs
from alcc_report.samples import RunFiles

#: Line styles of the cross flows, by name prefix.
CROSS_STYLES = {"cross-tcp": ("black", "--"), "cross-udp": ("0.45", ":")}


def _style(flow: str, index: int):
    """Colour and line style of ``flow``: tab10 by flow index, cross flows black/grey dashed."""
    for prefix, style in CROSS_STYLES.items():
        if flow.startswith(prefix):
            return style
    return plt.get_cmap("tab10").colors[index % 10], "-"


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per trace/workload whose runs have a ``flow-series.csv``."""
    del palette  # flows are coloured by flow, not by scheme
    figures = []
    ok = files.experiment.ok_runs()
    chosen = first_runs(ok[ok["workload"] != ""])
    for trace, runs in chosen.groupby("trace", sort=False):
        loaded = [(row, files.flow_series(row), files.series(row)) for _, row in runs.iterrows()]
        loaded = [(row, fs, s) for row, fs, s in loaded if fs is not None and len(fs) > 0]
        if not loaded:
            continue
        fig, axes = new_figure(len(loaded), 1, size=(10.0, 2.4 * len(loaded) + 0.8), sharex=True, sharey=True)
        for (row, flow_series, series), ax in zip(loaded, axes[:, 0], strict=True):
            width = 0.5
            if series is not None and len(series) > 1:
                width = float(np.median(np.diff(series["start_s"])))
                ax.fill_between(
                    series["start_s"] + width / 2,
                    series["capacity_mbps"],
                    step="mid",
                    color="0.9",
                    label="capacity",
                )
            for i, (flow, bins) in enumerate(flow_series.groupby("flow", sort=False)):
                color, style = _style(str(flow), i)
                ax.plot(
                    bins["start_s"] + width / 2,
                    bins["throughput_mbps"],
                    color=color,
                    ls=style,
                    lw=1.1,
                    label=flow,
                )
            ax.set_title(f"{row['scheme']} (run {int(row['run'])})", fontsize="medium", loc="left")
            ax.set_ylabel("Mbit/s")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="upper right", fontsize="x-small", ncols=3)
        axes[-1][0].set_xlabel("time since the emulator started (s); the clients start at 0.5 s")
        figures.append(
            Figure(
                key=f"flows-{safe_key(str(trace))}",
                section="flows",
                title=f"Per-flow throughput over time: {trace}",
                caption=(
                    f"{trace}: each flow's delivered throughput per 500 ms bin (from the emulator's flow "
                    "log), one panel per scheme, the cross traffic dashed, the link's capacity shaded; "
                    "one run per scheme."
                ),
                png=to_png(fig),
            )
        )
    return figures

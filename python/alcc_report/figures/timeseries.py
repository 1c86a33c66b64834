"""Figure 5 of the ALCC paper: instantaneous throughput and delay over time, per trace.

Upper panel: the trace's capacity (shaded) and each scheme's delivered throughput per 500 ms bin;
lower panel: each scheme's median one-way delay per bin on a logarithmic axis (the paper's
"lower part ... in logarithmic scale"). One run per scheme is shown, the completed run with the
lowest index, so that the curves are instantaneous values, not averages.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.samples import RunFiles


def first_runs(ok: pd.DataFrame) -> pd.DataFrame:
    """The completed run with the lowest index per (trace, scheme)."""
    return ok.sort_values(["trace", "scheme", "run"]).groupby(["trace", "scheme"], sort=True).head(1)


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per trace with at least one run that has a ``series.csv``."""
    figures = []
    chosen = first_runs(files.experiment.ok_runs())
    for trace, runs in chosen.groupby("trace", sort=True):
        loaded = [(row, files.series(row)) for _, row in runs.iterrows()]
        loaded = [(row, s) for row, s in loaded if s is not None and len(s) > 0]
        if not loaded:
            continue
        fig, axes = new_figure(2, 1, size=(10.0, 6.5), sharex=True)
        top, bottom = axes[0][0], axes[1][0]
        _, reference = loaded[0]
        width = float(np.median(np.diff(reference["start_s"]))) if len(reference) > 1 else 0.5
        top.fill_between(
            reference["start_s"] + width / 2,
            reference["capacity_mbps"],
            step="mid",
            color="0.85",
            label="capacity",
        )
        for row, series in loaded:
            scheme = str(row["scheme"])
            mid = series["start_s"] + width / 2
            top.plot(mid, series["throughput_mbps"], color=palette(scheme), lw=1.2, label=scheme)
            delay = series["delay_p50_ms"].where(series["delay_p50_ms"] > 0)
            bottom.plot(mid, delay, color=palette(scheme), lw=1.2, label=scheme)
        top.set_ylabel("throughput (Mbit/s)")
        top.set_ylim(bottom=0)
        top.legend(loc="upper right", fontsize="small", ncols=2)
        top.set_title(f"{trace}: throughput and delay over time (run {', '.join(_run_labels(loaded))})")
        bottom.set_yscale("log")
        bottom.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        bottom.yaxis.set_major_formatter(ScalarFormatter())
        bottom.yaxis.set_minor_formatter(NullFormatter())
        bottom.set_ylabel("one-way delay, bin median (ms)")
        bottom.set_xlabel("time (s)")
        bottom.grid(True, which="both", alpha=0.3)
        top.grid(True, alpha=0.3)
        figures.append(
            Figure(
                key=f"fig5-{safe_key(trace)}",
                section="fig5",
                title=f"Throughput and delay over time: {trace}",
                caption=(
                    f"{trace}: delivered throughput per 500 ms bin against the trace's capacity (grey), "
                    "and the median one-way delay per bin (log scale); one run per scheme."
                ),
                png=to_png(fig),
            )
        )
    return figures


def _run_labels(loaded) -> list[str]:
    return sorted({str(int(row["run"])) for row, _ in loaded})

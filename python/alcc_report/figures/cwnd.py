"""Figure 1 of the ALCC paper: the application-layer window against the kernel's cwnd over time.

The paper draws the application layer's window (solid) inside TCP CUBIC's congestion window
(dashed), showing that the kernel's window is an envelope the application controls within. Here
the two come from the sender's telemetry (``window`` and ``kernel_cwnd``, bytes) of one
completed run (the lowest index) per trace and ALCC scheme, for the flow with the most samples.
An unbounded application window (``null``) leaves a gap in the solid line. Over alcc's BPF
underlay (``@alcc``, issue 10) the kernel cwnd is held above the window (``hold``) or equals it
in whole segments (``follow``); the caption gives both shares.
"""

from __future__ import annotations

import numpy as np

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.figures.timeseries import first_runs
from alcc_report.samples import RunFiles
from alcc_report.underlay import cwnd_shares, share_text


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per (trace, ALCC scheme) whose chosen run has telemetry with a kernel cwnd."""
    figures = []
    ok = files.experiment.ok_runs()
    chosen = first_runs(ok[ok["family"] == "alcc"])
    for _, row in chosen.iterrows():
        telemetry = files.telemetry(row)
        if telemetry is None or telemetry.empty:
            continue
        flow = telemetry["flow"].value_counts().idxmax() if telemetry["flow"].notna().any() else np.nan
        samples = telemetry if np.isnan(flow) else telemetry[telemetry["flow"] == flow]
        if samples["kernel_cwnd"].isna().all() and samples["window"].isna().all():
            continue
        trace, scheme = str(row["trace"]), str(row["scheme"])
        fig, axes = new_figure(1, 1, size=(10.0, 4.5))
        ax = axes[0][0]
        color = palette(scheme)
        t = samples["t"] - samples["t"].min()
        ax.plot(t, samples["window"] / 1000.0, color=color, lw=1.3, label=f"{scheme} window (application)")
        ax.plot(t, samples["kernel_cwnd"] / 1000.0, color="black", lw=1.1, ls="--", label="kernel cwnd")
        top = max(samples["window"].max(skipna=True), samples["kernel_cwnd"].max(skipna=True)) / 1000.0
        ax.set_ylim(0, top * 1.25 if np.isfinite(top) and top > 0 else None)
        ax.set_xlabel("time since the flow's first sample (s)")
        ax.set_ylabel("window (kB)")
        ax.set_title(f"{trace}: {scheme}, application window and kernel cwnd (run {int(row['run'])})")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="upper right")
        share = share_text(cwnd_shares(samples))
        figures.append(
            Figure(
                key=f"fig1-{safe_key(trace)}-{safe_key(scheme)}",
                section="fig1",
                title=f"Application window and kernel cwnd: {trace}, {scheme}",
                caption=(
                    f"{trace}, {scheme}, run {int(row['run'])}: the controller's window (solid) and the "
                    f"underlying kernel congestion window (dashed) from the sender's telemetry{share}."
                ),
                png=to_png(fig),
            )
        )
    return figures

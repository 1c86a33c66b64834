"""alcc's user-space Reno and CUBIC over the BPF underlay's follow policy beside the kernel's own
(issue 10 item 5; the CCP reproduction's Figure 1): the window over time of ``tcp-X`` (its
kernel cwnd) and of ``alcc-X@alcc:follow`` (its controller's window, which the kernel's cwnd
follows), side by side on the same axes, from the first completed run of each.
"""

from __future__ import annotations

import numpy as np

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.figures.timeseries import first_runs
from alcc_report.samples import RunFiles
from alcc_report.underlay import KERNEL_TWINS


def _flow(samples):
    """The samples of the flow with the most samples."""
    if samples["flow"].notna().any():
        return samples[samples["flow"] == samples["flow"].value_counts().idxmax()]
    return samples


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per (trace, X) with both ``tcp-X`` and an ``alcc-X@alcc...`` run."""
    figures = []
    chosen = first_runs(files.experiment.ok_runs())
    for trace, runs in chosen.groupby("trace", sort=True):
        for cc in KERNEL_TWINS:
            kernel = runs[runs["scheme"] == f"tcp-{cc}"]
            ours = runs[(runs["cc"] == cc) & runs["underlay"].astype(str).str.startswith("alcc")]
            if kernel.empty or ours.empty:
                continue
            panels = [(kernel.iloc[0], "kernel_cwnd", "kernel cwnd")]
            panels += [(row, "window", "controller window") for _, row in ours.iterrows()]
            loaded = [(row, col, what, files.telemetry(row)) for row, col, what in panels]
            loaded = [(r, c, w, t) for r, c, w, t in loaded if t is not None and len(t)]
            if len(loaded) < 2:
                continue
            fig, axes = new_figure(1, len(loaded), size=(5.0 * len(loaded), 4.0), sharey=True)
            for ax, (row, column, what, telemetry) in zip(axes[0], loaded, strict=True):
                samples = _flow(telemetry)
                t = samples["t"] - samples["t"].min()
                scheme = str(row["scheme"])
                ax.plot(t, samples[column] / 1000.0, color=palette(scheme), lw=1.2, label=what)
                if column == "window":
                    ax.plot(
                        t,
                        samples["kernel_cwnd"] / 1000.0,
                        color="black",
                        lw=0.8,
                        ls="--",
                        label="kernel cwnd",
                    )
                ax.set_title(f"{scheme} (run {int(row['run'])})", fontsize="medium")
                ax.set_xlabel("time (s)")
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize="small", loc="upper right")
            axes[0][0].set_ylabel("window (kB)")
            # In kB, as plotted: the highest of every drawn line.
            tops = [
                tel[c].max(skipna=True) / 1000.0 for _, col, _, tel in loaded for c in {col, "kernel_cwnd"}
            ]
            top = max((t for t in tops if np.isfinite(t)), default=float("nan"))
            axes[0][0].set_ylim(0, top * 1.15 if np.isfinite(top) and top > 0 else None)
            figures.append(
                Figure(
                    key=f"cwnd-pair-{safe_key(trace)}-{cc}",
                    section="underlay",
                    title=f"{trace}: kernel {cc} beside alcc's {cc} over the follow underlay",
                    caption=(
                        f"{trace}: the kernel's {cc} congestion window (left) and alcc's user-space {cc} "
                        "window enforced by the kernel through the BPF underlay (right; dashed: the kernel "
                        "cwnd, which follows it), from the senders' telemetry."
                    ),
                    png=to_png(fig),
                )
            )
    return figures

"""Figure 7 of the ALCC paper: the operating region of each scheme, per trace.

"Each protocol is depicted by a circular shape representing the operational region of the
protocol circumscribed by the 25% and 75% percentile of the obtained throughput and delay, where
the crosses (x) indicate the median values. The lower and upper part of the shape represents the
25% and 75% of the throughput (y-axis) whereas the left and right part ... the 25% and 75% of the
delay (x-axis)" (Section 5.2). The populations are those of :mod:`alcc_report.samples`:
per-bin throughput and per-packet delay over all completed runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.patches import Ellipse

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.samples import RunFiles


@dataclass(frozen=True)
class Region:
    """The 25th, 50th and 75th percentiles of a scheme's throughput and delay populations."""

    throughput_p25: float
    throughput_p50: float
    throughput_p75: float
    delay_p25: float
    delay_p50: float
    delay_p75: float

    def ellipse(self) -> tuple[tuple[float, float], float, float]:
        """Centre (delay, throughput), width (delay) and height (throughput) of the ellipse.

        The ellipse touches x = delay p25 and p75 and y = throughput p25 and p75.
        """
        centre = ((self.delay_p25 + self.delay_p75) / 2, (self.throughput_p25 + self.throughput_p75) / 2)
        return centre, self.delay_p75 - self.delay_p25, self.throughput_p75 - self.throughput_p25


def operating_region(throughput: np.ndarray, delay: np.ndarray) -> Region | None:
    """The :class:`Region` of two populations (linear-interpolated percentiles); ``None`` if empty."""
    throughput = throughput[np.isfinite(throughput)]
    delay = delay[np.isfinite(delay)]
    if not len(throughput) or not len(delay):
        return None
    t25, t50, t75 = np.percentile(throughput, [25, 50, 75])
    d25, d50, d75 = np.percentile(delay, [25, 50, 75])
    return Region(float(t25), float(t50), float(t75), float(d25), float(d50), float(d75))


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per trace with an ellipse and a median cross per scheme."""
    figures = []
    ok = files.experiment.ok_runs()
    for trace, runs in ok.groupby("trace", sort=True):
        regions = {}
        for scheme, of_scheme in runs.groupby("scheme", sort=True):
            region = operating_region(files.throughput_samples(of_scheme), files.delay_samples(of_scheme))
            if region is not None:
                regions[scheme] = region
        if not regions:
            continue
        fig, axes = new_figure(1, 1, size=(8.0, 5.5))
        ax = axes[0][0]
        for scheme, region in regions.items():
            centre, width, height = region.ellipse()
            color = palette(scheme)
            ax.add_patch(
                Ellipse(centre, width, height, facecolor=(*color[:3], 0.25), edgecolor=color, lw=1.5)
            )
            ax.plot(region.delay_p50, region.throughput_p50, "x", color=color, ms=9, mew=2, label=scheme)
        lo_d = min(r.delay_p25 for r in regions.values())
        hi_d = max(r.delay_p75 for r in regions.values())
        hi_t = max(r.throughput_p75 for r in regions.values())
        pad = (hi_d - lo_d) * 0.15 or 1.0
        ax.set_xlim(max(lo_d - pad, 0.0), hi_d + pad)
        ax.set_ylim(0, hi_t * 1.15 or 1.0)
        ax.set_xlabel("one-way delay (ms)")
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_title(f"{trace}: operating region (25th-75th percentiles, x = median)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        figures.append(
            Figure(
                key=f"fig7-{safe_key(trace)}",
                section="fig7",
                title=f"Operating region: {trace}",
                caption=(
                    f"{trace}: each ellipse spans the 25th to 75th percentile of the per-bin throughput "
                    "(vertical) and of the per-packet delay (horizontal); the cross marks the medians."
                ),
                png=to_png(fig),
            )
        )
    return figures

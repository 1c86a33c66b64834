"""Figure 6 of the ALCC paper: kernel density estimates of throughput and delay, per trace.

The paper computes the PDFs with Seaborn's Gaussian kernel density estimate over 20 runs per
trace. Here, per trace and scheme, the throughput population is every 500 ms bin of every
completed run and the delay population every packet's one-way delay (see
:mod:`alcc_report.samples`); the density is :class:`scipy.stats.gaussian_kde` with Scott's
bandwidth rule (Seaborn's default); the axis ends at the 99.5th percentile of the pooled samples.
Delays of different schemes span decades (kernel CUBIC fills a deep buffer), so the delay
density is that of log10(delay), drawn on a logarithmic axis (log scale as in Figure 5).
A population of one value, or of identical values, has no density and is drawn as a vertical
line at that value.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter
from scipy.stats import gaussian_kde

from alcc_report.figures.common import Figure, Palette, new_figure, safe_key, to_png
from alcc_report.samples import RunFiles

#: Delay samples beyond this many are subsampled uniformly (the KDE costs samples x grid points).
MAX_KDE_SAMPLES = 20000

#: Points at which a density is evaluated.
GRID_POINTS = 400


def density(samples: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """The Gaussian KDE of ``samples`` on ``grid``; ``None`` when the samples have no spread."""
    samples = samples[np.isfinite(samples)]
    if len(samples) < 2 or np.ptp(samples) == 0:
        return None
    if len(samples) > MAX_KDE_SAMPLES:
        samples = samples[np.linspace(0, len(samples) - 1, MAX_KDE_SAMPLES).astype(int)]
    try:
        return gaussian_kde(samples)(grid)
    except np.linalg.LinAlgError:
        return None


def _panel(ax, populations: dict[str, np.ndarray], palette: Palette, xlabel: str, log: bool = False) -> None:
    """Draws one density per scheme; ``log``: the density of log10 of the samples, on a log axis."""
    if log:
        populations = {k: np.log10(v[v > 0]) for k, v in populations.items()}
    values = [p for p in populations.values() if len(p)]
    if not values:
        ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
        return
    everything = np.concatenate(values)
    # The axis ends at the 99.5th percentile so that a long tail does not squash the bulk.
    lo, hi = float(np.min(everything)), float(np.percentile(everything, 99.5))
    pad = (hi - lo) * 0.1 or (0.1 if log else 1.0)
    grid = np.linspace(lo - pad if log else max(lo - pad, 0.0), hi + pad, GRID_POINTS)
    shown = 10**grid if log else grid
    for scheme, samples in populations.items():
        if not len(samples):
            continue
        pdf = density(samples, grid)
        label = f"{scheme} (n={len(samples)})"
        if pdf is None:
            at = float(samples[0])
            ax.axvline(10**at if log else at, color=palette(scheme), lw=1.5, label=label)
        else:
            ax.plot(shown, pdf, color=palette(scheme), lw=1.5, label=label)
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density per decade" if log else "density")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")


def draw(files: RunFiles, palette: Palette) -> list[Figure]:
    """One figure per trace: throughput density (upper) and delay density (lower)."""
    figures = []
    ok = files.experiment.ok_runs()
    for trace, runs in ok.groupby("trace", sort=True):
        throughput, delay = {}, {}
        for scheme, of_scheme in runs.groupby("scheme", sort=True):
            throughput[scheme] = files.throughput_samples(of_scheme)
            delay[scheme] = files.delay_samples(of_scheme)
        if not any(len(v) for v in throughput.values()) and not any(len(v) for v in delay.values()):
            continue
        fig, axes = new_figure(2, 1, size=(10.0, 7.0))
        _panel(axes[0][0], throughput, palette, "throughput per 500 ms bin (Mbit/s)")
        axes[0][0].set_title(f"{trace}: throughput and delay densities over all runs")
        _panel(axes[1][0], delay, palette, "one-way delay per packet (ms, log scale)", log=True)
        figures.append(
            Figure(
                key=f"fig6-{safe_key(trace)}",
                section="fig6",
                title=f"Throughput and delay densities: {trace}",
                caption=(
                    f"{trace}: Gaussian kernel density estimates of the per-bin throughput and of the "
                    "per-packet one-way delay (density of its logarithm), all completed runs of each "
                    "scheme pooled."
                ),
                png=to_png(fig),
            )
        )
    return figures

"""alcc's BPF underlay (issue 10): how the kernel's cwnd relates to the application window, and
alcc's user-space Reno and CUBIC enforced through the ``follow`` policy against the kernel's own.

- :func:`cwnd_shares`: in what share of telemetry samples the kernel cwnd is at or above the
  controller's window (what ``hold`` promises: at least 99 %, also under loss) and equal to it in
  whole segments (what ``follow`` promises). Equality is ``kernel_cwnd == max(2, ceil(window /
  kernel_mss)) * kernel_mss``, the underlay's own rounding (``crates/alcc/src/underlay/policy.rs``).
  The kernel takes a window written from user space on its next ACK (a struct_ops congestion
  control runs in ACK processing), so a controller that changes its window on every ACK is one
  ACK ahead of the kernel; ``target`` is the share of samples whose kernel cwnd equals the window
  alcc last wrote (``underlay_cwnd``), which separates that lag from the mechanism.
- :func:`cwnd_share_table`: those shares per trace and ALCC scheme over every completed run.
- :func:`kernel_fidelity_rows`: ``alcc-X@alcc:follow`` (X = reno, cubic) against ``tcp-X`` on
  the same trace: medians of throughput and p95 delay and their differences (the CCP
  reproduction's Figure 10 question for alcc).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from alcc_report.fidelity import percent_difference
from alcc_report.samples import RunFiles
from alcc_report.tables import Table, fmt, signed_percent

#: Controllers of ours that have a kernel twin (``tcp-X``).
KERNEL_TWINS = ("reno", "cubic")


def cwnd_shares(samples: pd.DataFrame) -> dict[str, float]:
    """Counts and shares over the samples with both a window and a kernel cwnd: ``n``,
    ``at_or_above`` (kernel cwnd >= window) and ``equal`` (NaN when no sample has an MSS)."""
    both = samples[samples["window"].notna() & samples["kernel_cwnd"].notna()]
    n = len(both)
    if n == 0:
        return {"n": 0, "at_or_above": math.nan, "equal": math.nan, "target": math.nan}
    above = float((both["kernel_cwnd"] >= both["window"]).mean())
    with_mss = both[both["kernel_mss"].notna() & (both["kernel_mss"] > 0)]
    if len(with_mss):
        mss = with_mss["kernel_mss"]
        segments = np.maximum(2, np.ceil(with_mss["window"] / mss))
        equal = float((with_mss["kernel_cwnd"] == segments * mss).mean())
    else:
        equal = math.nan
    written = with_mss[with_mss["underlay_cwnd"].notna() & (with_mss["underlay_cwnd"] > 0)]
    target = (
        float((written["kernel_cwnd"] == written["underlay_cwnd"] * written["kernel_mss"]).mean())
        if len(written)
        else math.nan
    )
    return {"n": n, "at_or_above": above, "equal": equal, "target": target}


def share_text(shares: dict[str, float]) -> str:
    """The caption's sentence for :func:`cwnd_shares` (empty without samples)."""
    if not shares["n"]:
        return ""
    text = (
        f"; the kernel cwnd is at or above the window in {shares['at_or_above']:.0%} of {shares['n']} samples"
    )
    if not math.isnan(shares["equal"]):
        text += f" and equal to it in whole segments in {shares['equal']:.0%}"
    return text


def cwnd_share_table(files: RunFiles) -> Table | None:
    """Per (trace, ALCC scheme): completed runs with telemetry, samples, the three shares."""
    ok = files.experiment.ok_runs()
    ok = ok[ok["family"] == "alcc"]
    rows = []
    for (trace, scheme), group in ok.groupby(["trace", "scheme"], sort=True):
        parts = [files.telemetry(row) for _, row in group.iterrows()]
        parts = [p for p in parts if p is not None and len(p)]
        if not parts:
            continue
        shares = cwnd_shares(pd.concat(parts, ignore_index=True))
        pct = lambda v: "-" if math.isnan(v) else f"{100 * v:.1f} %"  # noqa: E731
        rows.append(
            [
                trace,
                scheme,
                str(len(parts)),
                str(shares["n"]),
                pct(shares["at_or_above"]),
                pct(shares["equal"]),
                pct(shares["target"]),
            ]
        )
    if not rows:
        return None
    return Table(
        "cwnd-share",
        [
            "trace",
            "scheme",
            "runs",
            "samples",
            "kernel cwnd >= window",
            "kernel cwnd = window",
            "kernel cwnd = last written",
        ],
        rows,
    )


def kernel_fidelity_rows(runs: pd.DataFrame) -> Table | None:
    """``alcc-X@alcc:follow`` against ``tcp-X`` per trace, for X in :data:`KERNEL_TWINS`."""
    ok = runs[runs["status"] == "ok"]
    rows = []
    for (trace, scheme, cc), mine in ok[ok["family"] == "alcc"].groupby(["trace", "scheme", "cc"], sort=True):
        if cc not in KERNEL_TWINS or not str(mine["underlay"].iloc[0]).startswith("alcc"):
            continue
        theirs = ok[(ok["trace"] == trace) & (ok["scheme"] == f"tcp-{cc}")]
        if theirs.empty:
            continue
        values = []
        for column in ("throughput_mbps", "delay_p95_ms"):
            s, r = float(mine[column].median()), float(theirs[column].median())
            values += [fmt(s), fmt(r), signed_percent(percent_difference(s, r))]
        rows.append([trace, scheme, f"tcp-{cc}", f"{len(mine)}/{len(theirs)}", *values])
    if not rows:
        return None
    return Table(
        "kernel-fidelity",
        [
            "trace",
            "scheme",
            "kernel",
            "runs",
            "Mbit/s",
            "kernel Mbit/s",
            "throughput diff",
            "p95 ms",
            "kernel p95 ms",
            "p95 diff",
        ],
        rows,
    )

"""CPU time per scheme relative to plain kernel TCP (the ALCC paper's Section 5.6, Figure 14).

The paper measures the user-space CPU of the sender with and without ALCC. Here each run's
``cpu_s`` is the sender's user plus system CPU time (``rusage.json``). Plain TCP (``tcp-U``) is
served by ``alcc serve-plain``: sendfile from an in-memory file, no alcc code on the data path,
so the ratio includes everything alcc adds (``alcc-none@U``, the engine without a controller,
shows the engine's own share). Per trace and scheme the
table gives the median over the ok runs and its ratio to the median of the plain-TCP baseline on
the same trace: ``tcp-U`` for a scheme over kernel underlay ``U`` when that scheme ran, otherwise
``tcp-cubic``; plain TCP schemes themselves are compared with ``tcp-cubic``.
"""

from __future__ import annotations

import math

import pandas as pd

#: The baseline when no plain TCP with the scheme's underlay ran.
DEFAULT_BASELINE = "tcp-cubic"

#: The columns of :func:`cpu_table`.
CPU_COLUMNS = [
    "trace",
    "scheme",
    "runs",
    "cpu_s",
    "cpu_ms_per_s",
    "baseline",
    "baseline_cpu_s",
    "ratio",
    "note",
]


def baseline_for(family: str, underlay: str, schemes: set[str]) -> str:
    """The plain-TCP scheme a scheme's CPU time is divided by (see the module doc)."""
    if family != "tcp" and underlay and f"tcp-{underlay}" in schemes:
        return f"tcp-{underlay}"
    return DEFAULT_BASELINE


def cpu_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, scheme) with a completed run: median CPU seconds and the ratio.

    ``cpu_ms_per_s`` is the median of ``cpu_s / duration_s`` in milliseconds per second, which
    stays comparable when runs differ in length. The ratio is NaN (and ``note`` says why) when
    the baseline has no completed run with a known CPU time on that trace, or its median is 0.
    """
    ok = runs[runs["status"] == "ok"]
    rows = []
    for trace, group in ok.groupby("trace", sort=True):
        schemes = set(group["scheme"])
        medians = group.groupby("scheme")["cpu_s"].median()
        for scheme, runs_of in group.groupby("scheme", sort=True):
            first = runs_of.iloc[0]
            baseline = baseline_for(str(first["family"]), str(first["underlay"]), schemes)
            cpu = float(runs_of["cpu_s"].median())
            per_s = float((runs_of["cpu_s"] / runs_of["duration_s"]).median() * 1000.0)
            base = float(medians.get(baseline, math.nan))
            note = ""
            if baseline not in schemes:
                note = f"no completed {baseline} run on this trace"
            elif math.isnan(base) or base == 0:
                note = f"{baseline} has no CPU time"
            ratio = cpu / base if not note and not math.isnan(cpu) else math.nan
            rows.append(
                {
                    "trace": trace,
                    "scheme": scheme,
                    "runs": len(runs_of),
                    "cpu_s": cpu,
                    "cpu_ms_per_s": per_s,
                    "baseline": baseline,
                    "baseline_cpu_s": base,
                    "ratio": ratio,
                    "note": note,
                }
            )
    return pd.DataFrame.from_records(rows, columns=CPU_COLUMNS)

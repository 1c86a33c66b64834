"""The fidelity table: ALCC-X (over any kernel underlay) against native-X on the same trace.

The ALCC paper (Section 5, Figures 5-13) claims that ALCC-X matches X as its authors ran it: the
throughput and delay of the two differ by a few percent (3-10 %). Per trace and ALCC scheme we
take the median over runs of the per-run throughput and of the per-run 95th-percentile one-way
delay, and the difference ``(alcc - native) / native * 100``; a difference above
:data:`FLAG_PERCENT` in magnitude is flagged.
"""

from __future__ import annotations

import math

import pandas as pd

#: A difference larger than this (in percent, either sign) is flagged.
FLAG_PERCENT = 10.0

#: The columns of :func:`fidelity_table`.
FIDELITY_COLUMNS = [
    "trace",
    "alcc",
    "native",
    "alcc_runs",
    "native_runs",
    "alcc_throughput_mbps",
    "native_throughput_mbps",
    "throughput_diff_pct",
    "alcc_p95_ms",
    "native_p95_ms",
    "p95_diff_pct",
    "flagged",
    "note",
]


def percent_difference(alcc: float, native: float) -> float:
    """``(alcc - native) / native * 100``; NaN when either is unknown or native is zero."""
    if math.isnan(alcc) or math.isnan(native) or native == 0:
        return math.nan
    return (alcc - native) / native * 100.0


def fidelity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, ALCC scheme): medians over the ok runs, differences, flag and note.

    ``runs`` has the columns of ``results.csv``; failed runs are ignored. A missing native-X, or
    no completed run on either side, leaves the numbers empty and says so in ``note``.
    """
    rows = []
    ok = runs[runs["status"] == "ok"]
    alcc_schemes = runs[runs["family"] == "alcc"][["trace", "scheme", "cc"]].drop_duplicates()
    for trace, scheme, cc in sorted(alcc_schemes.itertuples(index=False, name=None)):
        native = f"native-{cc}"
        mine = ok[(ok["trace"] == trace) & (ok["scheme"] == scheme)]
        theirs = ok[(ok["trace"] == trace) & (ok["family"] == "native") & (ok["cc"] == cc)]
        native_listed = ((runs["trace"] == trace) & (runs["family"] == "native") & (runs["cc"] == cc)).any()
        row = {
            "trace": trace,
            "alcc": scheme,
            "native": native,
            "alcc_runs": len(mine),
            "native_runs": len(theirs),
        }
        a_tput = float(mine["throughput_mbps"].median()) if len(mine) else math.nan
        n_tput = float(theirs["throughput_mbps"].median()) if len(theirs) else math.nan
        a_p95 = float(mine["delay_p95_ms"].median()) if len(mine) else math.nan
        n_p95 = float(theirs["delay_p95_ms"].median()) if len(theirs) else math.nan
        tput_diff = percent_difference(a_tput, n_tput)
        p95_diff = percent_difference(a_p95, n_p95)
        notes = []
        if not native_listed:
            notes.append(f"no {native} runs on this trace")
        elif theirs.empty:
            notes.append(f"every {native} run failed")
        if mine.empty:
            notes.append(f"every {scheme} run failed")
        flagged = any(abs(d) > FLAG_PERCENT for d in (tput_diff, p95_diff) if not math.isnan(d))
        if flagged:
            notes.append(f"differs by more than {FLAG_PERCENT:g} %")
        row.update(
            alcc_throughput_mbps=a_tput,
            native_throughput_mbps=n_tput,
            throughput_diff_pct=tput_diff,
            alcc_p95_ms=a_p95,
            native_p95_ms=n_p95,
            p95_diff_pct=p95_diff,
            flagged=flagged,
            note="; ".join(notes),
        )
        rows.append(row)
    return pd.DataFrame.from_records(rows, columns=FIDELITY_COLUMNS)

"""The fidelity tables: each scheme of one family against the same controller in another family
on the same trace (:data:`alcc_report.schemes.COMPARISONS`: ALCC-X and our UDP X against the
authors' X when their programs ran, and ALCC-X over any kernel underlay against our own UDP X).

The ALCC paper (Section 5, Figures 5-13) claims that ALCC-X matches X as its authors ran it: the
throughput and delay of the two differ by a few percent (3-10 %). Per trace and compared scheme
we take the median over runs of the per-run throughput and of the per-run 95th-percentile
one-way delay, and the difference ``(scheme - reference) / reference * 100``; a difference above
:data:`FLAG_PERCENT` in magnitude is flagged.

Each run's figures are over the harness's common window of the emulator's clock: the experiment's
duration from the scheme's scheduled sender start (``window_from_s``-``window_to_s``;
docs/experiment-format.md, "The common window"), the same rule for every scheme; results written
before it have no window and are over each run's own link log, which ends at a different time
per scheme. The ``window`` column says which, and a cell whose
two sides were judged differently says so in its note (``alcc experiment reanalyze`` recomputes old
results over the window).
"""

from __future__ import annotations

import math

import pandas as pd

from alcc_report.schemes import Comparison, comparison

#: A difference larger than this (in percent, either sign) is flagged.
FLAG_PERCENT = 10.0

#: The columns of :func:`fidelity_table`.
FIDELITY_COLUMNS = [
    "trace",
    "scheme",
    "reference",
    "scheme_runs",
    "reference_runs",
    "scheme_throughput_mbps",
    "reference_throughput_mbps",
    "throughput_diff_pct",
    "scheme_p95_ms",
    "reference_p95_ms",
    "p95_diff_pct",
    "flagged",
    "window",
    "note",
]

#: What :func:`window_label` says of runs written before the common window.
OWN_LOG = "each run's own log"


def window_label(rows: pd.DataFrame) -> str:
    """The window the link figures of ``rows`` are over: ``30 s from each sender's start`` (the
    common window: its length; where it starts on the emulator's clock depends on the scheme's
    start order), :data:`OWN_LOG` for results written before it, several joined with `` + ``
    when they differ; empty for no rows."""
    labels = []
    for _, r in rows.iterrows():
        start, end = r.get("window_from_s", math.nan), r.get("window_to_s", math.nan)
        if pd.isna(start) or pd.isna(end):
            label = OWN_LOG
        else:
            label = f"{float(end) - float(start):g} s from each sender's start"
        if label not in labels:
            labels.append(label)
    return " + ".join(sorted(labels))


def percent_difference(value: float, reference: float) -> float:
    """``(value - reference) / reference * 100``; NaN when either is unknown or reference is 0."""
    if math.isnan(value) or math.isnan(reference) or reference == 0:
        return math.nan
    return (value - reference) / reference * 100.0


def fidelity_table(runs: pd.DataFrame, against: Comparison | None = None) -> pd.DataFrame:
    """One row per (trace, scheme of ``against.subject``): medians over the ok runs,
    differences against the ``against.reference`` scheme of the same controller, flag, note.
    ``against`` defaults to ALCC-X against our own UDP X.

    ``runs`` has the columns of ``results.csv``; failed runs are ignored. A missing reference,
    or no completed run on either side, leaves the numbers empty and says so in ``note``.
    """
    pair = against or comparison("fidelity")
    rows = []
    ok = runs[runs["status"] == "ok"]
    subjects = runs[runs["family"] == pair.subject][["trace", "scheme", "cc"]].drop_duplicates()
    for trace, scheme, cc in sorted(subjects.itertuples(index=False, name=None)):
        mine = ok[(ok["trace"] == trace) & (ok["scheme"] == scheme)]
        listed = runs[(runs["trace"] == trace) & (runs["family"] == pair.reference) & (runs["cc"] == cc)]
        theirs = listed[listed["status"] == "ok"]
        reference_listed = len(listed) > 0
        # The name as run (results of older harnesses say native-X), else the family's form.
        names = sorted(set(listed["scheme"]))
        reference = names[0] if len(names) == 1 else pair.reference_name(cc)
        s_tput = float(mine["throughput_mbps"].median()) if len(mine) else math.nan
        r_tput = float(theirs["throughput_mbps"].median()) if len(theirs) else math.nan
        s_p95 = float(mine["delay_p95_ms"].median()) if len(mine) else math.nan
        r_p95 = float(theirs["delay_p95_ms"].median()) if len(theirs) else math.nan
        tput_diff = percent_difference(s_tput, r_tput)
        p95_diff = percent_difference(s_p95, r_p95)
        notes = []
        if not reference_listed:
            notes.append(f"no {reference} runs on this trace")
        elif theirs.empty:
            notes.append(f"every {reference} run failed")
        if mine.empty:
            notes.append(f"every {scheme} run failed")
        flagged = any(abs(d) > FLAG_PERCENT for d in (tput_diff, p95_diff) if not math.isnan(d))
        if flagged:
            notes.append(f"differs by more than {FLAG_PERCENT:g} %")
        window = window_label(pd.concat([mine, theirs]))
        if " + " in window:
            notes.append("the two sides' runs are judged over different windows (alcc experiment reanalyze)")
        rows.append(
            {
                "trace": trace,
                "scheme": scheme,
                "reference": reference,
                "scheme_runs": len(mine),
                "reference_runs": len(theirs),
                "scheme_throughput_mbps": s_tput,
                "reference_throughput_mbps": r_tput,
                "throughput_diff_pct": tput_diff,
                "scheme_p95_ms": s_p95,
                "reference_p95_ms": r_p95,
                "p95_diff_pct": p95_diff,
                "flagged": flagged,
                "window": window,
                "note": "; ".join(notes),
            }
        )
    return pd.DataFrame.from_records(rows, columns=FIDELITY_COLUMNS)

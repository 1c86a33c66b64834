"""Uploads (``direction = up`` in the spec, the ``direction`` column): the client sends through
the uplink trace to a receiving server, as a phone uploads (issue 17, the paper's Figure 4).

The table puts every upload scheme beside the plain TCP upload on the same trace (the first of
:data:`PLAIN_UPLOADS` the experiment ran there) and each Java client (``java-X``) beside the
Rust client with the same controller and kernel congestion control (``alcc-X``), as ratios of
medians over completed runs.
"""

from __future__ import annotations

import math

import pandas as pd

from alcc_report.tables import Table, fmt

#: The plain TCP uploads a scheme is compared with, in order of preference: Reno (loss-based,
#: as the phones' CUBIC; a network namespace may not be allowed CUBIC as its default), CUBIC,
#: BBR.
PLAIN_UPLOADS: tuple[str, ...] = ("tcp-reno", "tcp-cubic", "tcp-bbr")

#: The table's columns.
COLUMNS = [
    "trace",
    "scheme",
    "runs ok",
    "Mbit/s",
    "p95 ms",
    "plain TCP",
    "Mbit/s / plain",
    "p95 / plain",
    "Java / Rust Mbit/s",
    "Java / Rust p95",
]


def uploads(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that uploaded (none in results written before the ``direction`` column)."""
    return runs[runs["direction"] == "up"]


def _ratio(mine: float, theirs: float) -> str:
    if math.isnan(mine) or math.isnan(theirs) or theirs == 0:
        return "-"
    return f"{mine / theirs:.2f}"


def uplink_table(runs: pd.DataFrame) -> Table | None:
    """The uploads table, or ``None`` when no run uploaded."""
    up = uploads(runs)
    if up.empty:
        return None
    medians: dict[tuple[str, str], tuple[int, int, float, float]] = {}
    columns: dict[str, tuple[str, str, str]] = {}
    for (trace, scheme), group in up.groupby(["trace", "scheme"], sort=False):
        ok = group[group["status"] == "ok"]
        medians[(str(trace), str(scheme))] = (
            len(ok),
            len(group),
            float(ok["throughput_mbps"].median()) if len(ok) else math.nan,
            float(ok["delay_p95_ms"].median()) if len(ok) else math.nan,
        )
        first = group.iloc[0]
        columns[str(scheme)] = (str(first["family"]), str(first["cc"]), str(first["underlay"]))
    rows = []
    for (trace, scheme), (ok, total, tput, p95) in medians.items():
        plain = next((p for p in PLAIN_UPLOADS if (trace, p) in medians and medians[(trace, p)][0]), None)
        row = [trace, scheme, f"{ok}/{total}", fmt(tput), fmt(p95, 1)]
        if plain is None or plain == scheme:
            row += [plain or "-", "-", "-"]
        else:
            _, _, plain_tput, plain_p95 = medians[(trace, plain)]
            row += [plain, _ratio(tput, plain_tput), _ratio(p95, plain_p95)]
        family, cc, underlay = columns[scheme]
        rust = next(
            (
                s
                for s, (f, c, u) in columns.items()
                if family == "java" and f == "alcc" and c == cc and u == underlay and (trace, s) in medians
            ),
            None,
        )
        if rust is None:
            row += ["-", "-"]
        else:
            _, _, rust_tput, rust_p95 = medians[(trace, rust)]
            row += [_ratio(tput, rust_tput), _ratio(p95, rust_p95)]
        rows.append(row)
    return Table("uplink", COLUMNS, rows)

"""The tables of bench/reference.sh (issue 13) from `alcc experiment run` output directories.

    python3 bench/reference_tables.py SWEEP [--before SWEEP] [--alcc SWEEP]

SWEEP is the output directory of experiments/reference.toml (ref-X and udp-X on every shared
trace); --before is an earlier sweep of the same spec whose udp-X medians are shown beside
(ref-X comes from SWEEP); --alcc is the output of experiments/reference-alcc.toml (ALCC-X),
compared with SWEEP's ref-X. Every run directory's result.json is read, so an unfinished
sweep gives the tables of what is complete. Results written before udp-X was renamed (family
`native`, scheme `native-X`) are read as udp-X.

Per cell (trace and scheme): the median over its completed runs of the per-run throughput and
of the per-run p95 one-way delay, the runs' range, and the difference from the authors'
program, (ours - theirs) / theirs. The per-run figures are the harness's (result.json): over the
common window (the experiment's duration from each scheme's scheduled sender start, the same
rule for every scheme: docs/experiment-format.md, "The common window"), or, in results written
before it, over each run's own link log; the
`window` column says which (`alcc experiment reanalyze SWEEP` recomputes old results over the
window from their logs). Our UDP X is flagged where it is beyond 5 % in throughput or
15 % in p95 (the issue's bar), ALCC-X where it is beyond 10 % (the paper's 3-10 %).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

#: The algorithms compared, in table order, and their ref-X/udp-X/alcc-X cc spec.
ALGORITHMS = ["copa", "verus", "sprout"]

#: Flags: our UDP X against the authors' X (the issue), ALCC-X against the authors' X (the paper).
UDP_TPUT_PCT, UDP_P95_PCT = 5.0, 15.0
ALCC_PCT = 10.0


def load(sweep: Path) -> dict[tuple[str, str], list[dict]]:
    """(trace, scheme) -> the completed runs' rows, native-X read as udp-X."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(sweep.glob("runs/*/*/run-*/result.json")):
        row = json.loads(path.read_text())
        if row.get("status") != "ok":
            continue
        scheme = row["scheme"]
        if scheme.startswith("native-"):
            scheme = "udp-" + scheme.removeprefix("native-")
        cells.setdefault((row["trace"], scheme), []).append(row)
    return cells


def traces_in(sweep: Path) -> list[str]:
    """The traces in the order the spec lists them (spec.toml), else sorted."""
    spec = sweep / "spec.toml"
    names = []
    if spec.is_file():
        for line in spec.read_text().splitlines():
            if line.startswith("name = ") and names is not None:
                names.append(line.split("=", 1)[1].strip().strip('"'))
    # The first `name` is the experiment's.
    return names[1:]


def window_label(row: dict) -> str:
    """The window a run's figures are over: `30 s from start` (the common window: the
    experiment's duration from the scheme's scheduled sender start), or `own log` (results
    written before the common window)."""
    start, end = row.get("window_from_s"), row.get("window_to_s")
    if start is None or end is None:
        return "own log"
    return f"{end - start:g} s from start"


def windows_of(*cells: Cell | None) -> str:
    """The windows of some cells' runs, joined; `(sides differ)` when they are not one."""
    labels = sorted(set().union(*(c.windows for c in cells if c is not None)))
    return " + ".join(labels) + (" (sides differ)" if len(labels) > 1 else "")


class Cell:
    """Medians and ranges of one (trace, scheme)."""

    def __init__(self, rows: list[dict]):
        self.runs = len(rows)
        self.tput = [r["throughput_mbps"] for r in rows]
        self.p95 = [
            r["delay_p95_ms"] for r in rows if r.get("delay_p95_ms") is not None
        ]
        self.cpu = [r["cpu_s"] for r in rows if r.get("cpu_s") is not None]
        self.load = [r["load_avg"] for r in rows if r.get("load_avg") is not None]
        self.windows = {window_label(r) for r in rows}
        self.queued = [r["queued_at_end"] for r in rows if r.get("queued_at_end") is not None]

    @staticmethod
    def median(xs: list[float]) -> float:
        return statistics.median(xs) if xs else math.nan

    @property
    def tput_median(self) -> float:
        return self.median(self.tput)

    @property
    def p95_median(self) -> float:
        return self.median(self.p95)

    @property
    def cpu_median(self) -> float:
        return self.median(self.cpu)


def diff(ours: float, theirs: float) -> float:
    if math.isnan(ours) or math.isnan(theirs) or theirs == 0:
        return math.nan
    return (ours - theirs) / theirs * 100.0


def pct(d: float) -> str:
    return "-" if math.isnan(d) else f"{d:+.1f}"


def num(x: float, digits: int = 2) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}f}"


def spread(xs: list[float], digits: int) -> str:
    if not xs:
        return "-"
    return f"{min(xs):.{digits}f}-{max(xs):.{digits}f}"


def cell(cells: dict, trace: str, scheme: str) -> Cell | None:
    rows = cells.get((trace, scheme))
    return Cell(rows) if rows else None


def flag(d_tput: float, d_p95: float, tput_bar: float, p95_bar: float) -> str:
    out = []
    if not math.isnan(d_tput) and abs(d_tput) > tput_bar:
        out.append("tput")
    if not math.isnan(d_p95) and abs(d_p95) > p95_bar:
        out.append("p95")
    return " ".join(out)


def udp_schemes(cells: dict, algorithm: str) -> list[str]:
    """`udp-X` and its named variants (`udp-sprout:clock=half_rtt`) present in the sweep."""
    names = {
        s
        for (_, s) in cells
        if s == f"udp-{algorithm}" or s.startswith(f"udp-{algorithm}:")
    }
    return sorted(names, key=lambda s: (s != f"udp-{algorithm}", s))


def faithfulness(
    cells: dict, before: dict | None, traces: list[str], algorithm: str, udp_name: str
) -> list[str]:
    """Our UDP X (and, with --before, its earlier version) against ref-X, one trace per line."""
    ref_name = f"ref-{algorithm}"
    head = "| trace | runs | ref Mbit/s | ref p95 ms |"
    rule = "| --- | --- | ---: | ---: |"
    if before is not None:
        head += " before: udp Mbit/s | p95 ms | tput % | p95 % | flag |"
        rule += " ---: | ---: | ---: | ---: | --- |"
    head += " udp Mbit/s | p95 ms | tput % | p95 % | flag | window |"
    rule += " ---: | ---: | ---: | ---: | --- | --- |"
    lines = [head, rule]
    for trace in traces:
        ref = cell(cells, trace, ref_name)
        udp = cell(cells, trace, udp_name)
        if ref is None and udp is None:
            continue
        ref_t = ref.tput_median if ref else math.nan
        ref_d = ref.p95_median if ref else math.nan
        runs = f"{ref.runs if ref else 0}/{udp.runs if udp else 0}"
        line = f"| {trace} | {runs} | {num(ref_t)} | {num(ref_d, 0)} |"
        sides = ([cell(before, trace, udp_name)] if before is not None else []) + [udp]
        for side in sides:
            t = side.tput_median if side else math.nan
            d = side.p95_median if side else math.nan
            dt, dd = diff(t, ref_t), diff(d, ref_d)
            line += f" {num(t)} | {num(d, 0)} | {pct(dt)} | {pct(dd)} | {flag(dt, dd, UDP_TPUT_PCT, UDP_P95_PCT)} |"
        lines.append(line + f" {windows_of(ref, udp)} |")
    return lines


def ranges(cells: dict, traces: list[str], algorithm: str, udp_name: str) -> list[str]:
    """Per-run ranges (min-max over the runs) of both sides, to judge the medians' noise, and the
    median 1-minute load average at the end of the runs (`-` for results without it)."""
    lines = [
        "| trace | ref Mbit/s range | udp Mbit/s range | ref p95 range ms | udp p95 range ms | load avg (ref/udp) "
        "| queued at the window's end, packets (ref/udp) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for trace in traces:
        ref = cell(cells, trace, f"ref-{algorithm}")
        udp = cell(cells, trace, udp_name)
        if ref is None and udp is None:
            continue
        lines.append(
            f"| {trace} | {spread(ref.tput, 2) if ref else '-'} | {spread(udp.tput, 2) if udp else '-'} | "
            f"{spread(ref.p95, 0) if ref else '-'} | {spread(udp.p95, 0) if udp else '-'} | "
            f"{num(Cell.median(ref.load), 1) if ref else '-'}/{num(Cell.median(udp.load), 1) if udp else '-'} | "
            f"{spread(ref.queued, 0) if ref else '-'}/{spread(udp.queued, 0) if udp else '-'} |"
        )
    return lines


def alcc_schemes(alcc: dict, trace: str, algorithm: str) -> list[str]:
    """The ALCC-X schemes of `algorithm` that ran on `trace`: `alcc-X` (over kernel CUBIC, the
    harness's default underlay) first, then `alcc-X@UNDERLAY` (e.g. `alcc-verus@reno`)."""
    base = f"alcc-{algorithm}"
    return sorted(
        {s for (t, s) in alcc if t == trace and (s == base or s.startswith(base + "@"))},
        key=lambda s: (s != base, s),
    )


def paper_claim(cells: dict, alcc: dict, traces: list[str]) -> list[str]:
    """ALCC-X (each underlay that ran) against ref-X on the traces ALCC-X ran on."""
    lines = [
        "| trace | ALCC-X | runs (alcc/ref) | alcc Mbit/s | ref Mbit/s | tput % | alcc p95 ms | ref p95 ms | p95 % "
        "| beyond 10 % | window |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for trace in traces:
        for algorithm in ALGORITHMS:
            r = cell(cells, trace, f"ref-{algorithm}")
            for scheme in alcc_schemes(alcc, trace, algorithm):
                a = cell(alcc, trace, scheme)
                if a is None:
                    continue
                at, rt = a.tput_median, r.tput_median if r else math.nan
                ad, rd = a.p95_median, r.p95_median if r else math.nan
                dt, dd = diff(at, rt), diff(ad, rd)
                lines.append(
                    f"| {trace} | {scheme} | {a.runs}/{r.runs if r else 0} | {num(at)} | {num(rt)} | {pct(dt)} | "
                    f"{num(ad, 0)} | {num(rd, 0)} | {pct(dd)} | {flag(dt, dd, ALCC_PCT, ALCC_PCT)} "
                    f"| {windows_of(a, r)} |"
                )
    return lines


def cpu(cells: dict, traces: list[str]) -> list[str]:
    """Median sender CPU seconds per run, per scheme, over every trace."""
    lines = [
        "| scheme | runs | median sender CPU s per run | range |",
        "| --- | ---: | ---: | --- |",
    ]
    schemes = sorted({s for (_, s) in cells})
    for scheme in schemes:
        values = [
            c
            for t in traces
            for c in (cell(cells, t, scheme).cpu if cell(cells, t, scheme) else [])
        ]
        if values:
            lines.append(
                f"| {scheme} | {len(values)} | {statistics.median(values):.2f} | {spread(values, 2)} |"
            )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--alcc", type=Path)
    args = ap.parse_args()
    cells = load(args.sweep)
    before = load(args.before) if args.before else None
    traces = traces_in(args.sweep) or sorted({t for (t, _) in cells})
    out: list[str] = []
    for algorithm in ALGORITHMS:
        for udp_name in udp_schemes(cells, algorithm) or [f"udp-{algorithm}"]:
            out += [
                f"### {algorithm}: our UDP {algorithm} ({udp_name}) against the authors' (ref-{algorithm})",
                "",
            ]
            out += faithfulness(cells, before, traces, algorithm, udp_name) + [""]
            out += (
                ["Per-run ranges:", ""]
                + ranges(cells, traces, algorithm, udp_name)
                + [""]
            )
    if args.alcc:
        alcc = load(args.alcc)
        alcc_traces = [
            t for t in traces if any(alcc_schemes(alcc, t, a) for a in ALGORITHMS)
        ]
        out += ["### ALCC-X against the authors' X (the paper's claim)", ""]
        out += paper_claim(cells, alcc, alcc_traces) + [""]
        cells_all = {**cells, **alcc}
    else:
        cells_all = cells
    out += ["### Sender CPU", ""] + cpu(cells_all, traces) + [""]
    print("\n".join(out))


if __name__ == "__main__":
    main()

"""Issue 19's criteria from one sweep of experiments/sprout-ack.toml.

Per trace, server-only Sprout (alcc-sprout-ack, fetched by plain curl) against framed Sprout
(alcc-sprout: the client runs alcc and Sprout's receiver) and against kernel BBR (tcp-bbr), as
ratios of medians over the runs of each cell (throughput and p95 one-way delay), and whether each
criterion holds:

- against framed Sprout: throughput within 5 % (ratio >= 0.95) and p95 within 25 % (ratio <= 1.25);
- against BBR: p95 at least 2x lower (BBR's p95 / ours >= 2) at >= 95 % of BBR's throughput, on at
  least four of the six traces.

The BBR criterion is also computed for framed Sprout: where framed Sprout fails it too, the
limit is Sprout's (its window rule), not the inference from ACKs. The per-run range (min-max) of
each cell and the highest 1-minute load average at the end of a run say how far a median can be
trusted. Only runs with status ok count; a cell without runs is reported as missing.

Usage: python3 bench/sprout_ack_criteria.py EXPERIMENT_DIR   (the --out of `alcc experiment run`,
with its results.csv). Prints Markdown tables; exits 1 when a cell is missing.
"""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

OURS, FRAMED, BBR, CUBIC = "alcc-sprout-ack", "alcc-sprout", "tcp-bbr", "tcp-cubic"
SCHEMES = (OURS, FRAMED, BBR, CUBIC)

# The thresholds (issue 19, "What must hold").
FRAMED_MIN_THROUGHPUT = 0.95
FRAMED_MAX_P95 = 1.25
BBR_MIN_THROUGHPUT = 0.95
BBR_MIN_P95_FACTOR = 2.0
BBR_MIN_TRACES = 4

Rows = list[dict[str, str]]


def cells(path: Path) -> dict[tuple[str, str], Rows]:
    """(trace, scheme) -> the rows of its completed runs, in the file's trace order."""
    by: dict[tuple[str, str], Rows] = defaultdict(list)
    with (path / "results.csv").open() as f:
        for row in csv.DictReader(f):
            by.setdefault((row["trace"], row["scheme"]), [])
            if row["status"] == "ok":
                by[(row["trace"], row["scheme"])].append(row)
    return by


def med(rows: Rows, column: str) -> float:
    return statistics.median(float(r[column]) for r in rows)


def span(rows: Rows, column: str, digits: int) -> str:
    values = sorted(float(r[column]) for r in rows)
    return f"{values[0]:.{digits}f}-{values[-1]:.{digits}f}"


def max_load(rows: Rows) -> str:
    loads = [float(r["load_avg"]) for r in rows if r.get("load_avg")]
    return f"{max(loads):.1f}" if loads else "-"


def bbr_verdict(tput: float, p95_factor: float) -> str:
    """'holds', or which half of the BBR criterion fails."""
    reasons = []
    if tput < BBR_MIN_THROUGHPUT:
        reasons.append("throughput")
    if p95_factor < BBR_MIN_P95_FACTOR:
        reasons.append("delay")
    return "holds" if not reasons else "fails (" + ", ".join(reasons) + ")"


def main(path: Path) -> int:
    by = cells(path)
    traces = list(dict.fromkeys(t for t, _ in by))
    missing = [(t, s) for t in traces for s in SCHEMES if not by.get((t, s))]

    print(
        "| trace | scheme | ok runs | Mbit/s median (range) | p95 ms median (range) | max load |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for t in traces:
        for s in SCHEMES:
            rows = by.get((t, s), [])
            if rows:
                print(
                    f"| {t} | {s} | {len(rows)} | {med(rows, 'throughput_mbps'):.2f} "
                    f"({span(rows, 'throughput_mbps', 2)}) | {med(rows, 'delay_p95_ms'):.0f} "
                    f"({span(rows, 'delay_p95_ms', 0)}) | {max_load(rows)} |"
                )
            else:
                print(f"| {t} | {s} | 0 | - | - | - |")
    print()

    print(
        "| trace | tput / framed | p95 / framed | vs framed | tput / BBR | BBR p95 / ours | "
        "vs BBR | framed: tput / BBR | framed: BBR p95 / framed | framed vs BBR |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    framed_held = ours_held = framed_bbr_held = 0
    for t in traces:
        ours, framed, bbr = by.get((t, OURS)), by.get((t, FRAMED)), by.get((t, BBR))
        if not (ours and framed and bbr):
            print(f"| {t} | missing runs | | | | | | | | |")
            continue
        thr = {s: med(by[(t, s)], "throughput_mbps") for s in (OURS, FRAMED, BBR)}
        p95 = {s: med(by[(t, s)], "delay_p95_ms") for s in (OURS, FRAMED, BBR)}
        tf, pf = thr[OURS] / thr[FRAMED], p95[OURS] / p95[FRAMED]
        tb, pb = thr[OURS] / thr[BBR], p95[BBR] / p95[OURS]
        ftb, fpb = thr[FRAMED] / thr[BBR], p95[BBR] / p95[FRAMED]
        framed_ok = tf >= FRAMED_MIN_THROUGHPUT and pf <= FRAMED_MAX_P95
        framed_held += framed_ok
        ours_verdict, framed_verdict = bbr_verdict(tb, pb), bbr_verdict(ftb, fpb)
        ours_held += ours_verdict == "holds"
        framed_bbr_held += framed_verdict == "holds"
        print(
            f"| {t} | {tf:.3f} | {pf:.3f} | {'holds' if framed_ok else 'fails'} | {tb:.3f} | "
            f"{pb:.2f} | {ours_verdict} | {ftb:.3f} | {fpb:.2f} | {framed_verdict} |"
        )
    print()
    n = len(traces)
    print(
        f"- server-only within 5 % / 25 % of framed Sprout: {framed_held} of {n} traces"
    )
    print(
        f"- server-only against BBR (p95 >= {BBR_MIN_P95_FACTOR:g}x lower at >= "
        f"{BBR_MIN_THROUGHPUT:.0%} throughput): {ours_held} of {n} traces "
        f"(the issue asks for at least {BBR_MIN_TRACES})"
    )
    print(
        f"- framed Sprout against BBR, the same criterion: {framed_bbr_held} of {n} traces"
    )
    if missing:
        print()
        print("missing cells (no ok run): " + ", ".join(f"{t}/{s}" for t, s in missing))
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 bench/sprout_ack_criteria.py EXPERIMENT_DIR")
    sys.exit(main(Path(sys.argv[1])))

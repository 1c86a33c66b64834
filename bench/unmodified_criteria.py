"""Issue 12's emulator criteria from one sweep of experiments/unmodified.toml.

Per trace and controller X (Copa, Verus): nginx under the preload shim (nginx-shim-X) against
plain nginx (nginx-tcp-cubic) and against `alcc serve` with the same controller (alcc-X), as
ratios of medians over the runs of each cell (throughput and p95 one-way delay of the downlink),
and whether each criterion holds:

- p95 of nginx-shim-X at most a quarter of plain nginx's (ratio <= 0.25);
- throughput of nginx-shim-X within 5 % of alcc-X's (0.95 <= ratio <= 1.05);
- p95 of nginx-shim-X within 10 % of alcc-X's (0.90 <= ratio <= 1.10).

The p95 criterion against plain nginx is also computed for alcc-X itself: where `alcc serve`
misses it too, the limit is the controller's, not the shim's. The per-run range (min-max) and the
highest 1-minute load average at the end of a run say how far a median can be trusted. Only runs
with status ok count; a missing cell is reported as missing.

Usage: python3 bench/unmodified_criteria.py EXPERIMENT_DIR   (the --out of `alcc experiment run`,
with its results.csv). Prints Markdown tables; exits 1 when a cell is missing.
"""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

PLAIN = "nginx-tcp-cubic"
CONTROLLERS = ("copa", "verus")

# The thresholds (issue 12, "What must hold").
MAX_P95_VS_PLAIN = 0.25
THROUGHPUT_TOLERANCE = 0.05
P95_TOLERANCE = 0.10

Rows = list[dict[str, str]]


def cells(path: Path) -> tuple[list[str], dict[tuple[str, str], Rows]]:
    """The traces in file order, and (trace, scheme) -> the rows of its completed runs."""
    by: dict[tuple[str, str], Rows] = defaultdict(list)
    traces: list[str] = []
    with (path / "results.csv").open() as f:
        for row in csv.DictReader(f):
            if row["trace"] not in traces:
                traces.append(row["trace"])
            by.setdefault((row["trace"], row["scheme"]), [])
            if row["status"] == "ok":
                by[(row["trace"], row["scheme"])].append(row)
    return traces, by


def med(rows: Rows, column: str) -> float:
    return statistics.median(float(r[column]) for r in rows)


def span(rows: Rows, column: str, digits: int) -> str:
    values = sorted(float(r[column]) for r in rows)
    return f"{values[0]:.{digits}f}-{values[-1]:.{digits}f}"


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    traces, by = cells(out)
    schemes = [PLAIN] + [s for cc in CONTROLLERS for s in (f"nginx-shim-{cc}", f"alcc-{cc}")]
    missing = [f"{t}/{s}" for t in traces for s in schemes if not by.get((t, s))]

    print("| trace | scheme | runs | Mbit/s (median) | range | p95 ms (median) | range | max load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in traces:
        for s in schemes:
            rows = by.get((t, s), [])
            if not rows:
                print(f"| {t} | {s} | 0 | - | - | - | - | - |")
                continue
            load = max(float(r["load_avg"]) for r in rows if r.get("load_avg"))
            print(
                f"| {t} | {s} | {len(rows)} | {med(rows, 'throughput_mbps'):.2f} | "
                f"{span(rows, 'throughput_mbps', 2)} | {med(rows, 'delay_p95_ms'):.1f} | "
                f"{span(rows, 'delay_p95_ms', 1)} | {load:.1f} |"
            )

    print()
    print(
        "| trace | X | p95 shim / plain nginx | (alcc-X / plain) | <= 1/4 | "
        "throughput shim / alcc-X | within 5 % | p95 shim / alcc-X | within 10 % |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in traces:
        plain = by.get((t, PLAIN), [])
        for cc in CONTROLLERS:
            shim, serve = by.get((t, f"nginx-shim-{cc}"), []), by.get((t, f"alcc-{cc}"), [])
            if not (plain and shim and serve):
                print(f"| {t} | {cc} | missing | | | | | | |")
                continue
            vs_plain = med(shim, "delay_p95_ms") / med(plain, "delay_p95_ms")
            serve_vs_plain = med(serve, "delay_p95_ms") / med(plain, "delay_p95_ms")
            tput = med(shim, "throughput_mbps") / med(serve, "throughput_mbps")
            p95 = med(shim, "delay_p95_ms") / med(serve, "delay_p95_ms")
            print(
                f"| {t} | {cc} | {vs_plain:.3f} | ({serve_vs_plain:.3f}) | "
                f"{verdict(vs_plain <= MAX_P95_VS_PLAIN)} | "
                f"{tput:.3f} | {verdict(abs(tput - 1) <= THROUGHPUT_TOLERANCE)} | "
                f"{p95:.3f} | {verdict(abs(p95 - 1) <= P95_TOLERANCE)} |"
            )
    if missing:
        print(f"\nmissing cells (no ok run): {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

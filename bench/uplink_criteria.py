"""Issue 17's uplink criteria from one sweep of experiments/uplink.toml.

Per trace, as ratios of medians over the runs of each cell (throughput and p95 one-way delay of
the uploaded packets, measured on the emulated uplink), and whether each criterion holds:

- the Java uploader with MDI (java-mdi@reno) against the plain TCP upload (tcp-reno, curl -T):
  p95 at most a quarter (ratio <= 0.25) at 85 % of its throughput or more (the paper's
  Figure 4 claim); the same against tcp-bbr is shown beside it;
- the Java and Rust clients with the same controller (java-mdi@reno against alcc-mdi@reno):
  throughput within 10 % and p95 within 15 % of each other.

Throughput is the table's: bytes departed between the first and the last departure on the
uplink, so a sender that starts later (the JVM's start-up) is not charged for it; the "first
data s" column (the first 500 ms bin of series.csv with uploaded data, median) shows that
start. The per-run range (min-max) of each cell and the highest 1-minute load average at
the end of a run say how far a median can be trusted; runs that did not complete are counted.

Usage: python3 bench/uplink_criteria.py EXPERIMENT_DIR   (the --out of `alcc experiment run`).
Prints Markdown tables; exits 1 when a cell is missing.
"""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

JAVA, RUST, RENO, BBR, VERUS = "java-mdi@reno", "alcc-mdi@reno", "tcp-reno", "tcp-bbr", "alcc-verus@reno"
SCHEMES = (JAVA, RUST, RENO, BBR, VERUS)

# The thresholds (issue 17, "What must hold").
PLAIN_MAX_P95 = 0.25
PLAIN_MIN_THROUGHPUT = 0.85
CLIENTS_THROUGHPUT = 0.10
CLIENTS_P95 = 0.15

Rows = list[dict[str, str]]


def cells(out: Path) -> tuple[dict[tuple[str, str], Rows], dict[tuple[str, str], int]]:
    """(trace, scheme) -> its completed runs (with their first data bin), and -> all runs."""
    ok: dict[tuple[str, str], Rows] = defaultdict(list)
    total: dict[tuple[str, str], int] = defaultdict(int)
    with (out / "results.csv").open() as f:
        for row in csv.DictReader(f):
            key = (row["trace"], row["scheme"])
            total[key] += 1
            if row["status"] == "ok":
                row.update(first_byte(out / row["dir"] / "series.csv"))
                ok[key].append(row)
    return ok, total


def first_byte(series: Path) -> dict[str, str]:
    """The start of the first 500 ms bin with uploaded data."""
    with series.open() as f:
        bins = [(float(r["start_s"]), float(r["throughput_mbps"])) for r in csv.DictReader(f)]
    return {"first_s": str(next((s for s, t in bins if t > 0), float("nan")))}


def med(rows: Rows, column: str) -> float:
    return statistics.median(float(r[column]) for r in rows)


def span(rows: Rows, column: str, digits: int) -> str:
    values = sorted(float(r[column]) for r in rows)
    return f"{values[0]:.{digits}f}-{values[-1]:.{digits}f}"


def verdict(ok: bool) -> str:
    return "yes" if ok else "**no**"


def main() -> int:
    out = Path(sys.argv[1])
    ok, total = cells(out)
    traces = list(dict.fromkeys(t for t, _ in total))
    missing = [f"{t}/{s}" for t in traces for s in SCHEMES if not ok.get((t, s))]
    loads = [float(r["load_avg"]) for rows in ok.values() for r in rows if r.get("load_avg")]
    print(f"Runs: {sum(total.values())} ({sum(len(r) for r in ok.values())} ok); load average at")
    print(f"the end of a run {min(loads):.1f}-{max(loads):.1f}." if loads else "no load recorded.")
    print()
    print("| trace | scheme | runs ok | Mbit/s (range) | p95 ms (range) | first data s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in traces:
        for s in SCHEMES:
            rows = ok.get((t, s), [])
            if not rows:
                print(f"| {t} | {s} | 0/{total.get((t, s), 0)} | - | - | - |")
                continue
            print(
                f"| {t} | {s} | {len(rows)}/{total[(t, s)]} | {med(rows, 'throughput_mbps'):.2f} "
                f"({span(rows, 'throughput_mbps', 2)}) | {med(rows, 'delay_p95_ms'):.0f} "
                f"({span(rows, 'delay_p95_ms', 0)}) | {med(rows, 'first_s'):.1f} |"
            )
    print()
    print("| trace | pair | Mbit/s ratio | p95 ratio | criterion | holds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in traces:
        for a, b, crit in [
            (JAVA, RENO, "p95 <= 0.25, Mbit/s >= 0.85"),
            (JAVA, BBR, "(shown) p95 <= 0.25, Mbit/s >= 0.85"),
            (RUST, RENO, "(shown) p95 <= 0.25, Mbit/s >= 0.85"),
            (JAVA, RUST, "Mbit/s within 10 %, p95 within 15 %"),
            (RUST, VERUS, "(shown) MDI against the Verus it imitates"),
        ]:
            ra, rb = ok.get((t, a)), ok.get((t, b))
            if not ra or not rb:
                print(f"| {t} | {a} / {b} | - | - | {crit} | missing |")
                continue
            tput = med(ra, "throughput_mbps") / med(rb, "throughput_mbps")
            p95 = med(ra, "delay_p95_ms") / med(rb, "delay_p95_ms")
            if b in (RENO, BBR):
                holds = verdict(p95 <= PLAIN_MAX_P95 and tput >= PLAIN_MIN_THROUGHPUT)
            elif b == RUST:
                holds = verdict(abs(tput - 1) <= CLIENTS_THROUGHPUT and abs(p95 - 1) <= CLIENTS_P95)
            else:
                holds = "-"
            print(f"| {t} | {a} / {b} | {tput:.2f} | {p95:.3f} | {crit} | {holds} |")
    if missing:
        print(f"\nmissing cells: {', '.join(missing)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

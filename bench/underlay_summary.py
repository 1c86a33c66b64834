"""The issue-10 criteria from one sweep of experiments/loss.toml and underlay-fidelity.toml
(and the ccp-fidelity-*.toml runs): per trace, each ALCC-X over cubic, over alcc (hold) and over
alcc:follow against the reference, as ratios of medians over runs (throughput and p95 one-way
delay). Usage: python3 bench/underlay_summary.py EXPERIMENT_DIR... (each with results.csv)."""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def medians(path: Path) -> dict[tuple[str, str], tuple[float, float, int]]:
    """(trace, scheme) -> (median throughput, median p95, completed runs)."""
    by = defaultdict(list)
    with (path / "results.csv").open() as f:
        for row in csv.DictReader(f):
            if row["status"] == "ok":
                by[(row["trace"], row["scheme"])].append(row)
    return {
        key: (
            statistics.median(float(r["throughput_mbps"]) for r in rows),
            statistics.median(float(r["delay_p95_ms"]) for r in rows),
            len(rows),
        )
        for key, rows in by.items()
    }


def reference_of(scheme: str) -> str:
    """udp-X for alcc-X (our own X over UDP), tcp-X for X in reno/cubic over follow."""
    cc = scheme.split("-", 1)[1].split("@", 1)[0]
    if cc in ("reno", "cubic") and "@alcc" in scheme:
        return f"tcp-{cc}"
    return f"udp-{cc}"


def main(dirs: list[Path]) -> None:
    print(
        "| experiment | trace | scheme | runs | Mbit/s | p95 ms | reference | ref Mbit/s | ref p95 ms | tput ratio | p95 ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for d in dirs:
        m = medians(d)
        for (trace, scheme), (tput, p95, n) in sorted(m.items()):
            if not scheme.startswith("alcc-"):
                continue
            ref = reference_of(scheme)
            if (trace, ref) not in m:
                continue
            rt, rp, rn = m[(trace, ref)]
            print(
                f"| {d.name} | {trace} | {scheme} | {n}/{rn} | {tput:.2f} | {p95:.0f} | {ref} | {rt:.2f} | {rp:.0f} | "
                f"{tput / rt:.2f} | {p95 / rp:.2f} |"
            )


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]])

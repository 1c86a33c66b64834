"""Summary of bench/coupled.sh's results.csv: per trace and mode the mean aggregate throughput,
p95 one-way delay and each flow's share of the flows' sum (weights 1:2:3:4 ask for 0.1, 0.2,
0.3, 0.4), and the coupled/uncoupled ratios of the same sweep (standard library only)."""

import csv
import statistics
import sys
from collections import defaultdict


def main(path: str) -> None:
    rows = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows[(r["trace"], r["mode"])].append(r)
    print(
        "| trace | mode | runs | aggregate Mbit/s | p95 ms | p50 ms "
        "| shares of flows 1:2:3:4 (want .1/.2/.3/.4) | worst share error |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    means = {}
    for (trace, mode), rs in sorted(rows.items()):
        agg = statistics.mean(float(r["agg_mbps"]) for r in rs)
        p95 = statistics.mean(float(r["p95_ms"]) for r in rs)
        p50 = statistics.mean(float(r["p50_ms"]) for r in rs)
        shares = []
        for r in rs:
            fl = [float(r[f"f{i}"]) for i in range(1, 5)]
            total = sum(fl) or 1.0
            shares.append([x / total for x in fl])
        mean_shares = [statistics.mean(s[i] for s in shares) for i in range(4)]
        err = max(abs(s[i] - (i + 1) / 10) / ((i + 1) / 10) for s in shares for i in range(4))
        means[(trace, mode)] = (agg, p95, mean_shares)
        sh = " / ".join(f"{x:.3f}" for x in mean_shares)
        row = f"| {trace} | {mode} | {len(rs)} | {agg:.2f} | {p95:.1f} | {p50:.1f} | {sh} "
        print(row + f"| {err * 100:.0f} % |")
    print()
    print("| trace | mode vs uncoupled | aggregate ratio | p95 ratio (uncoupled / mode) |")
    print("| --- | --- | --- | --- |")
    for (trace, mode), (agg, p95, _) in sorted(means.items()):
        base = means.get((trace, "uncoupled"))
        if mode == "uncoupled" or base is None:
            continue
        print(f"| {trace} | {mode} | {agg / base[0]:.3f} | {base[1] / p95:.2f}x |")
    # The host manager's group against one process's group of the same sweep.
    against = [(k, v) for k, v in sorted(means.items()) if k[1] != "coupled" and (k[0], "coupled") in means]
    if against:
        print()
        print("| trace | mode vs coupled (one process) | aggregate ratio | p95 ratio (coupled / mode) |")
        print("| --- | --- | --- | --- |")
        for (trace, mode), (agg, p95, _) in against:
            base = means[(trace, "coupled")]
            print(f"| {trace} | {mode} | {agg / base[0]:.3f} | {base[1] / p95:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1])

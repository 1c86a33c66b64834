"""Reclaim time after a member of the host manager is killed with -9 (bench/coupled.sh, mode
kill): from the survivor's telemetry (TAG.tel, one JSON line per flow per 20 ms with `t` since
its start and `acked` bytes), its start (TAG.t0) and the kill (TAG.kill, epoch seconds), and the
emulator's downlink series (TAG.series.csv, 200 ms bins). Prints the survivor's delivered rate
before and after the kill, the link's throughput before it, and the first time after the kill
at which the survivor's rate over 200 ms reaches 90 % of that (standard library only)."""

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path


def main(tag: str) -> None:
    t0 = float(Path(tag + ".t0").read_text())
    kill = float(Path(tag + ".kill").read_text()) - t0
    acked = defaultdict(list)
    with open(tag + ".tel") as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            acked[r["flow"]].append((r["t"], r["acked"]))

    def total(t: float) -> float:
        s = 0.0
        for samples in acked.values():
            last = 0
            for ts, a in samples:
                if ts > t:
                    break
                last = a
            s += last
        return s

    def rate(a: float, b: float) -> float:
        return (total(b) - total(a)) * 8 / (b - a) / 1e6

    link = []
    with open(tag + ".series.csv") as f:
        for r in csv.DictReader(f):
            start = float(r["start_s"])
            if kill - 5.0 <= start and start + 0.2 <= kill - 0.5:
                link.append(float(r["throughput_mbps"]))
    before_link = sum(link) / len(link) if link else float("nan")
    before = rate(kill - 5.0, kill - 0.5)
    reclaimed = None
    t = kill
    while t < kill + 6.0:
        if rate(t, t + 0.2) >= 0.9 * before_link:
            reclaimed = t + 0.2 - kill
            break
        t += 0.02
    after = rate(kill + 3.0, kill + 7.0)
    got = f"{reclaimed:.2f} s" if reclaimed is not None else "not within 6 s"
    print(
        f"{tag.rsplit('/', 1)[-1]}: link before {before_link:.2f} Mbit/s; survivor {before:.2f} "
        f"Mbit/s before, {after:.2f} after; reached 90 % of the link {got} after the kill"
    )


if __name__ == "__main__":
    main(sys.argv[1])

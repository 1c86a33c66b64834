"""Runs a Python controller and Copa over the same simulated cellular link and plots both.

    .venv/bin/python examples/python/compare.py --trace ../shared/traces/alcc-paper/City.trace \
        --cc vegas --out vegas-vs-copa.png

``--cc`` is ``vegas`` or ``toy-rate`` (this folder's controllers) or any controller spec alcc knows.
The figure (matplotlib, written as a PNG) shows throughput and the 95th-percentile one-way delay
in 500 ms bins, with the link's capacity; the summary of each run is printed.
"""

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import alcc
import toy_rate  # noqa: F401  (registers "toy-rate")
import vegas  # noqa: F401  (registers "vegas")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True, help="a Mahimahi trace file")
    parser.add_argument("--cc", default="vegas")
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--out", default="compare.png")
    args = parser.parse_args()

    runs = {}
    for cc in (args.cc, "copa"):
        runs[cc] = alcc.sim(cc=cc, trace=args.trace, delay_ms=args.delay_ms, duration_s=args.duration)
        r = runs[cc]
        print(f"{cc:>10}: {r.throughput_mbps:6.2f} Mbit/s, delay p95 {r.delay_p95_ms:7.1f} ms")

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    first = next(iter(runs.values())).series
    top.fill_between(first["start_s"], first["capacity_mbps"], color="0.85", label="capacity")
    for cc, run in runs.items():
        top.plot(run.series["start_s"], run.series["throughput_mbps"], label=cc)
        bottom.plot(run.series["start_s"], run.series["delay_p95_ms"], label=cc)
    top.set_ylabel("throughput (Mbit/s)")
    bottom.set_ylabel("one-way delay p95 (ms)")
    bottom.set_xlabel("time (s)")
    top.legend()
    fig.suptitle(f"{args.cc} vs copa on {Path(args.trace).name}, {args.delay_ms:g} ms one-way")
    fig.savefig(args.out, dpi=120, bbox_inches="tight")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

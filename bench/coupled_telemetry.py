"""Group shares of the host manager's flows (bench/coupled.sh, mode manager): from the two
servers' telemetry (TAG.p9000.tel and TAG.p9001.tel, one JSON line per flow per 100 ms with `t`
since the server started, `flow` (numbered per process), `group_share` (bytes/s, null before the
flow's first share), `shares_applied` and `acked` bytes). Samples are put in 100 ms bins; per bin
the summed group shares of the flows that have one stand for the group's aggregate (S_CR, as
seen by its members). Prints per flow (PORT/FLOW; a process's flows in order of their mean share,
so on port 9000 the lighter one is weight 1, on 9001 weight 2): its mean group share, its part of
the summed shares, the part of its samples without a share, its delivered rate; and for the
group: the mean and lowest aggregate, and the part of bins in which it was below 0.5 Mbit/s
(collapsed). Standard library only."""

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BIN_S = 0.1
COLLAPSED_MBPS = 0.5


def read(path: Path) -> list[dict]:
    rows = []
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by the end of the run
    return rows


def main(tag: str) -> None:
    # (port, flow) -> {bin: sample}
    flows: dict[tuple[int, int], dict[int, dict]] = defaultdict(dict)
    for port in (9000, 9001):
        for r in read(Path(f"{tag}.p{port}.tel")):
            flows[(port, r["flow"])][int(r["t"] / BIN_S)] = r
    if not flows:
        print(f"{Path(tag).name}: no telemetry")
        return
    bins = sorted({b for samples in flows.values() for b in samples})
    # Bins in which every flow has a sample (all four run): shares are compared there.
    common = [b for b in bins if all(b in s for s in flows.values())]
    aggregate = {}
    for b in common:
        shares = [s[b]["group_share"] for s in flows.values() if s[b]["group_share"] is not None]
        aggregate[b] = sum(shares) * 8 / 1e6
    lines = []
    for (port, flow), samples in sorted(flows.items()):
        shares = [samples[b]["group_share"] for b in common]
        had = [x for x in shares if x is not None]
        parts = [
            samples[b]["group_share"] * 8 / 1e6 / aggregate[b]
            for b in common
            if samples[b]["group_share"] is not None and aggregate[b] > 0
        ]
        ts = sorted(samples)
        first, last = samples[ts[0]], samples[ts[-1]]
        secs = max(last["t"] - first["t"], 1e-9)
        delivered = (last["acked"] - first["acked"]) * 8 / secs / 1e6
        lines.append(
            (
                port,
                statistics.mean(had) * 8 / 1e6 if had else 0.0,
                flow,
                statistics.mean(parts) if parts else 0.0,
                1 - len(had) / len(shares) if shares else 1.0,
                delivered,
                last["shares_applied"],
            )
        )
    lines.sort()
    print(f"{Path(tag).name}: {len(common)} bins of {BIN_S:.1f} s with all {len(flows)} flows")
    for port, share, flow, part, without, delivered, applied in lines:
        print(
            f"  {port}/{flow}: mean share {share:.2f} Mbit/s, {part:.3f} of the summed shares, "
            f"{without * 100:.0f} % of samples without a share, delivered {delivered:.2f} Mbit/s, "
            f"{applied} shares applied"
        )
    if aggregate:
        values = list(aggregate.values())
        collapsed = sum(1 for v in values if v < COLLAPSED_MBPS) / len(values)
        print(
            f"  group aggregate (summed shares): mean {statistics.mean(values):.2f} Mbit/s, "
            f"lowest {min(values):.2f}, below {COLLAPSED_MBPS} Mbit/s in {collapsed * 100:.0f} % of bins"
        )


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env bash
# Benchmarks of the link emulator (run as root): kernel CUBIC bulk downloads through
# `alcc-link`'s testbed at constant rates (utilization, relay CPU use) and over the ALCC
# paper's traces with a deep (2 MB) and a 100-packet drop-tail queue (utilization, p95 delay).
# Usage: bench/link.sh [SECONDS]   (default 20 per run; the traces come from $ALCC_TRACE_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
traces="${ALCC_TRACE_DIR:-$(cd .. && pwd)/shared/traces}/alcc-paper"
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/link.sh: needs root (network namespaces, TUN devices)" >&2
  exit 1
fi
cargo build --release -q -p alcc-link --example linkbench
bench=target/release/examples/linkbench

echo "== ping RTT through a constant 12 Mbit/s link, 20 ms each way (expected 40 ms)"
cargo build --release -q -p alcc-cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
target/release/alcc trace gen --kind constant --rate 12 --duration 1 --out "$tmp/12mbps.trace" >/dev/null
target/release/alcc link --uplink "$tmp/12mbps.trace" --downlink "$tmp/12mbps.trace" --delay 20 \
  -- sh -c 'ping -n -c 100 -i 0.05 "$ALCC_SERVER"' 2>/dev/null \
  | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -n \
  | awk '{v[NR]=$1} END {printf "ping: %d replies, min %.1f median %.1f p90 %.1f max %.1f ms\n", NR, v[1], v[int((NR+1)/2)], v[int(NR*0.9)], v[NR]}'

echo "== constant rates, 5 ms each way, 1000-packet drop-tail queue"
for rate in 10 100 500; do
  "$bench" --rate-mbps "$rate" --seconds "$secs" --warmup 2 --delay-ms 5 --queue droptail --queue-args packets=1000
done

echo "== ALCC paper traces, 10 ms each way"
for t in CampusWalk highwayGold rapidGold; do
  if [ ! -f "$traces/$t.trace" ]; then
    echo "skipped $t: $traces/$t.trace not found (set ALCC_TRACE_DIR)"
    continue
  fi
  "$bench" --trace "$traces/$t.trace" --seconds "$secs" --warmup 2 --delay-ms 10 --queue droptail --queue-args bytes=2000000
  "$bench" --trace "$traces/$t.trace" --seconds "$secs" --warmup 2 --delay-ms 10 --queue droptail --queue-args packets=100
done

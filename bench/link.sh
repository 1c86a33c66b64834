#!/usr/bin/env bash
# Benchmarks of the link emulator (run as root): kernel CUBIC bulk downloads through
# `alcc-link`'s testbed at constant rates (utilization, relay CPU use) and over the ALCC
# paper's traces with a deep (2 MB) and a 100-packet drop-tail queue (utilization, p95 delay).
# Usage: bench/link.sh [SECONDS]   (default 20 per run; the traces come from $ALCC_TRACE_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
traces="${ALCC_TRACE_DIR:-/work/shared/traces}/alcc-paper"
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/link.sh: needs root (network namespaces, TUN devices)" >&2
  exit 1
fi
cargo build --release -q -p alcc-link --example linkbench
bench=target/release/examples/linkbench

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

#!/usr/bin/env bash
# Benchmarks of the link emulator (run as root): kernel CUBIC bulk downloads through
# `alcc-link`'s testbed at constant rates (utilization, relay CPU use) and over the ALCC
# paper's traces with a deep (2 MB) and a 100-packet drop-tail queue (utilization, p95 delay).
# High rates (issue 18 item 5): 500 Mbit/s, 1 and 2 Gbit/s constant links (`alcc trace gen
# --kind constant`) loaded by plain kernel TCP (`alcc serve-plain`, CUBIC, sendfile) and read by
# `alcc get`: goodput over the link rate, the link's utilization (`alcc analyze`), the relay's
# per-packet lateness (p50/p99/p99.9/max against each packet's due time, the opportunity it
# left the link at plus the delay) and what the sending TUN device dropped before the relay.
# Usage: bench/link.sh [SECONDS] [--high-rates-only]   (default 20 per run; the traces come
# from $ALCC_TRACE_DIR; ALCC_BIN=PATH measures another alcc binary, e.g. an older build)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
only_high="${2:-}"
traces="${ALCC_TRACE_DIR:-$(cd .. && pwd)/shared/traces}/alcc-paper"
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/link.sh: needs root (network namespaces, TUN devices)" >&2
  exit 1
fi
cargo build --release -q -p alcc-link --example linkbench -p alcc-cli
bench=target/release/examples/linkbench
alcc="${ALCC_BIN:-$PWD/target/release/alcc}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One download of SECONDS from alcc serve-plain through a constant RATE (Mbit/s) link.
high_rate() {
  local rate="$1" delay="$2"
  "$alcc" trace gen --kind constant --rate "$rate" --duration 1 --out "$tmp/c$rate.trace" >/dev/null
  RUST_BACKTRACE=0 "$alcc" link --uplink "$tmp/c$rate.trace" --downlink "$tmp/c$rate.trace" --delay "$delay" \
    --downlink-queue droptail --downlink-queue-args packets=1000 --downlink-log "$tmp/down.log" --log-unit us \
    --server "$alcc serve-plain --port 9000 --bytes 1000000000000 --count 1 --seconds $secs" \
    -- sh -c 'sleep 0.3; "$0" get "$ALCC_SERVER:9000" >/dev/null 2>&1' "$alcc" >"$tmp/out" 2>&1 || true
  local goodput
  goodput=$(sed -n 's/.*bytes in .* s (\([0-9.]*\) Mbit\/s.*/\1/p' "$tmp/out" | head -1)
  printf '%s Mbit/s constant, %s ms each way: goodput %s Mbit/s (%.1f %% of the link rate, %.1f %% of the %.0f Mbit/s TCP payload can carry in 1500-byte packets); ' \
    "$rate" "$delay" "$goodput" "$(echo "$goodput * 100 / $rate" | bc -l)" "$(echo "$goodput * 100 / ($rate * 1448 / 1500)" | bc -l)" "$(echo "$rate * 1448 / 1500" | bc -l)"
  "$alcc" analyze "$tmp/down.log" | sed -n 's/^utilization: *\(.*\)/link utilization \1/p'
  grep 'alcc link: downlink' "$tmp/out" | sed 's/^alcc link: //'
  rm -f "$tmp/down.log"
}

echo "== high rates: plain kernel TCP (alcc serve-plain, cubic) through 1000-packet drop-tail; uptime: $(uptime)"
for rate in 500 1000 2000; do high_rate "$rate" 5; done
high_rate 2000 1
echo "uptime: $(uptime)"
if [ "$only_high" = --high-rates-only ]; then exit 0; fi

echo "== ping RTT through a constant 12 Mbit/s link, 20 ms each way (expected 40 ms)"
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

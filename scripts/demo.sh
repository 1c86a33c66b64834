#!/usr/bin/env bash
# The main job: what alcc's controllers do to delay and throughput against CUBIC, on the
# project's own synthetic cellular trace. It
#   1. generates the default trace (alcc trace gen --kind cellular --seed 1),
#   2. simulates every controller over it (2 MB buffer, 10 ms one-way delay, 60 s),
#   3. as root, also runs a real download through the trace-driven emulator: plain kernel CUBIC
#      against `alcc serve --cc copa` over kernel CUBIC, both fetched by an unmodified curl.
# Usage: scripts/demo.sh [OUT_DIR]   (default out/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/demo}"
mkdir -p "$out"
alcc=target/release/alcc

"$alcc" trace gen --kind cellular --seed 1 --duration 60 --out "$out/cellular.trace"
echo "trace: $out/cellular.trace"
"$alcc" trace info "$out/cellular.trace" | sed 's/^/  /'

row() { python3 -c '
import json, sys
name, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
p = lambda v: "-" if v is None else "%.0f" % v
print("%-16s %8.2f %6.1f %8s %8s %8s" % (name, d["throughput_mbps"], 100 * d["utilization"],
      p(d["delay_p50_ms"]), p(d["delay_p95_ms"]), p(d["delay_p99_ms"])))' "$1" "$2"; }
header() { printf '%-16s %8s %6s %8s %8s %8s\n' "$1" "Mbit/s" "util%" "p50 ms" "p95 ms" "p99 ms"; }

echo
echo "== simulated: 60 s, 2 MB drop-tail buffer, 10 ms one-way delay"
header scheme
for cc in cubic reno copa verus:r=2 verus sprout; do
  "$alcc" controllers | grep -q "^${cc%%:*} " || continue
  "$alcc" sim --trace "$out/cellular.trace" --cc "$cc" --delay 10 --queue bytes=2000000 \
    --duration 60 --series "$out/sim-${cc//[:=]/_}.csv" >"$out/sim-${cc//[:=]/_}.json"
  row "$cc" "$out/sim-${cc//[:=]/_}.json"
done

if [ "$(id -u)" -ne 0 ]; then
  echo
  echo "(not root: skipping the emulated downloads, which need network namespaces)"
  exit 0
fi
echo
echo "== emulated: curl downloads for 20 s through the same trace (kernel TCP, real sockets)"
header scheme
for cc in none copa; do
  name=$([ "$cc" = none ] && echo "tcp-cubic" || echo "alcc-$cc")
  "$alcc" link --uplink "$out/cellular.trace" --downlink "$out/cellular.trace" --delay 10 \
    --downlink-queue droptail --downlink-queue-args bytes=2000000 --downlink-log "$out/$name.log" \
    --server "$alcc serve --port 9000 --cc $cc --underlay cubic --bytes 100000000000 --http --telemetry $out/$name.telemetry.jsonl" \
    -- sh -c 'sleep 0.5; curl -s -o /dev/null --max-time 20 "http://$ALCC_SERVER:9000/" || true' >/dev/null 2>&1
  "$alcc" analyze --json "$out/$name.log" >"$out/$name.json"
  row "$name" "$out/$name.json"
done
echo
echo "results in $out/"

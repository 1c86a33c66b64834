#!/usr/bin/env bash
# The main job: what alcc does to delay and throughput against plain TCP, on the project's own
# synthetic cellular trace.
#   As root: `alcc experiment run experiments/demo.toml` (real downloads through the
#   trace-driven emulator: plain kernel CUBIC and BBR fetched by curl, alcc's Copa, Verus and
#   Sprout over kernel CUBIC (Sprout framed and server-only, sprout-ack; Copa as the authors' and
#   with our drain check, copa:mode=drain), alcc's own Copa, Verus
#   and Sprout over UDP), then `alcc-report` writes report.html and report.md.
#   Not root (no network namespaces): the same comparison in the simulator only.
# Usage: scripts/demo.sh [OUT_DIR]   (default results/demo-DATE-TIME; an existing OUT_DIR with
# the same spec resumes, skipping complete runs)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/demo-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
alcc=target/release/alcc

if [ "$(id -u)" -eq 0 ]; then
  echo "(root: alcc-copa@alcc and alcc-verus@alcc run over alcc's BPF underlay, a kernel"
  echo " congestion control whose window alcc holds open: crates/alcc/src/underlay, crates/alcc/bpf)"
  start=$(date +%s)
  status=0
  "$alcc" experiment run experiments/demo.toml --out "$out" || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi
  .venv/bin/alcc-report "$out" --check-render --screenshot "$out/report.png"
  echo
  echo "experiment and report took $(($(date +%s) - start)) s; results in $out/"
  echo "report: $PWD/$out/report.html"
  exit "$status"
fi

echo "(not root: the emulated experiment needs network namespaces; showing the simulator only)"

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
for cc in cubic reno copa copa:mode=drain verus:r=2 verus sprout sprout-ack; do
  "$alcc" controllers | grep -q "^${cc%%:*} " || continue
  "$alcc" sim --trace "$out/cellular.trace" --cc "$cc" --delay 10 --queue bytes=2000000 \
    --duration 60 --series "$out/sim-${cc//[:=]/_}.csv" >"$out/sim-${cc//[:=]/_}.json"
  row "$cc" "$out/sim-${cc//[:=]/_}.json"
done

echo
echo "results in $out/"

#!/usr/bin/env bash
# What the host manager costs per flow (docs/coupled-flows.md "Cost"): `alcc manager` and two
# `alcc serve --group g --manager SOCK` processes on loopback, FLOWS flows in all (half per
# process, each paced at 8 Mbit/s by fixed:rate=8, downloaded by curl) for SECONDS: the
# manager's CPU time (/proc/PID/stat utime+stime) per flow and second; then, for 3 s under
# strace, the bytes of the manager's socket reads and writes (13 bytes per Change and per
# Share). Take the quiet lock: `flock /work/locks/quiet.lock bench/manager-cost.sh [FLOWS] [SECONDS]`.
set -euo pipefail
cd "$(dirname "$0")/.."
flows="${1:-16}"
secs="${2:-10}"
A="${ALCC_BIN:-$PWD/target/release/alcc}"
dir="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
"$A" manager --socket "$dir/m.sock" >/dev/null &
mpid=$!
pids+=("$mpid")
sleep 0.3
ports=()
for i in 1 2; do
  "$A" serve --cc fixed:rate=8 --bytes 100000000000 --http --port 0 --group g --manager "$dir/m.sock" \
    >"$dir/serve$i.out" 2>/dev/null &
  pids+=("$!")
done
sleep 0.5
for i in 1 2; do ports+=("$(head -1 "$dir/serve$i.out" | sed 's/.*://')"); done
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null) flows $flows seconds $secs load $(cut -d' ' -f1-3 /proc/loadavg)"
for f in $(seq 1 "$flows"); do
  p="${ports[$((f % 2))]}"
  curl -s -o /dev/null --max-time "$((secs + 6))" "http://127.0.0.1:$p/?weight=$(( (f % 4) + 1 ))" &
  pids+=("$!")
done
sleep 1
tick="$(getconf CLK_TCK)"
cpu() { awk '{print $14 + $15}' "/proc/$mpid/stat"; }
c0="$(cpu)"
sleep "$secs"
c1="$(cpu)"
awk -v c="$((c1 - c0))" -v t="$tick" -v n="$flows" -v s="$secs" 'BEGIN {
  printf "manager CPU: %.1f ms/s in all, %.3f ms per flow-second (%.4f %% of a core per flow)\n", c / t * 1000 / s, c / t * 1000 / s / n, c / t / s / n * 100
}'
timeout -s INT 3 strace -f -e trace=recvfrom,sendto -o "$dir/strace" -p "$mpid" 2>/dev/null || true
awk -v n="$flows" '/recvfrom/ && !/unfinished/ && $NF ~ /^[0-9]+$/ {r += $NF} /sendto/ && !/unfinished/ && $NF ~ /^[0-9]+$/ {w += $NF} END {
  printf "messages: %.1f reports and %.1f answers per flow-second (%.0f and %.0f bytes/s per flow)\n", r / 13 / 3 / n, w / 13 / 3 / n, r / 3 / n, w / 3 / n
}' "$dir/strace"
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"

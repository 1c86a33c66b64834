#!/usr/bin/env bash
# CPU per byte of the sender over each underlay (issue 10: `hold` against `follow`, and kernel
# CUBIC as the baseline), side by side in one run: `alcc serve` sends BYTES to curl on loopback
# under the same controller, and writes its getrusage; the table is CPU seconds per GB and the
# ratio to CUBIC. Run it on a quiet machine (flock /work/locks/quiet.lock when shared).
# Usage (root): bench/underlay-cpu.sh [CC] [BYTES] [REPEATS]
#   default: copa, 2 GB, 3 repeats (about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
cc="${1:-copa}"
bytes="${2:-2000000000}"
repeats="${3:-3}"
alcc="${ALCC:-target/release/alcc}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-12s %8s %10s %12s %8s\n' underlay repeat "Mbit/s" "CPU s/GB" "vs cubic"
declare -A total
for r in $(seq 1 "$repeats"); do
  for underlay in cubic alcc:hold alcc:follow; do
    port=$((20000 + RANDOM % 20000))
    "$alcc" serve --bind 127.0.0.1 --port "$port" --cc "$cc" --underlay "$underlay" --http \
      --bytes "$bytes" --count 1 --rusage "$tmp/rusage.json" >/dev/null &
    pid=$!
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/bytes/1" 2>/dev/null && break; sleep 0.1; done
    wait "$pid" || true
    "$alcc" serve --bind 127.0.0.1 --port "$port" --cc "$cc" --underlay "$underlay" --http \
      --bytes "$bytes" --count 1 --rusage "$tmp/rusage.json" >/dev/null &
    pid=$!
    sleep 0.3
    secs=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/")
    wait "$pid"
    cpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_s"])' "$tmp/rusage.json")
    per_gb=$(python3 -c "print($cpu / ($bytes / 1e9))")
    total[$underlay]=$(python3 -c "print(${total[$underlay]:-0} + $per_gb)")
    printf '%-12s %8s %10.0f %12.3f\n' "$underlay" "$r" "$(python3 -c "print($bytes * 8 / 1e6 / $secs)")" "$per_gb"
  done
done
echo "mean over $repeats repeats:"
for underlay in cubic alcc:hold alcc:follow; do
  python3 -c "
t = {'cubic': ${total[cubic]}, 'hold': ${total[alcc:hold]}, 'follow': ${total[alcc:follow]}}
u = '$underlay'.split(':')[-1]
print('%-12s %12.3f CPU s/GB  %.2f x cubic' % ('$underlay', t[u] / $repeats, t[u] / t['cubic']))"
done

#!/usr/bin/env bash
# Sender CPU of Verus in alcc's three modes through the emulator (issue 18 item 1, second part):
# `alcc serve --cc verus` in kernel mode (curl downloads; the feedback is ACK timestamps and
# TCP_INFO), framed mode (`alcc get --mode framed`; the receiver's ACK frames) and UDP mode
# (`alcc get --mode udp`: our Verus over UDP, the harness's udp-verus), one after the other on
# the same trace, delay, queue and duration, in one run. The figure is the server process's own
# CPU time (getrusage, user + system) per delivered MB (the bytes that left the emulator's
# downlink, from its log), and the ratios kernel / udp and framed / udp. Verus's own
# per-ACK work is the same in every mode; what differs is how the feedback reaches it.
#
# Root (the emulator makes network namespaces). On a shared machine hold the emulator's lock
# and the quiet lock while it runs:
#   flock /work/locks/emu.lock flock /work/locks/quiet.lock bench/verus-cpu.sh
# it prints `uptime` before and after.
#
# Usage: bench/verus-cpu.sh [--trace FILE] [--seconds D] [--runs N] [--cc SPEC] [--underlay U] [--before BIN] [--perf DIR]
#   --trace FILE  the Mahimahi trace of both directions (default: the paper's highwayGold)
#   --seconds D   length of each download (default 30)
#   --runs N      rounds of the three modes (default 1)
#   --cc SPEC     the controller (default verus)
#   --underlay U  the kernel congestion control under it (default cubic; `alcc`: the BPF underlay,
#                 where the controller's window governs the kernel's)
#   --before BIN  also `BIN serve` in kernel mode in every round (an older build: before/after)
#   --perf DIR    afterwards, one more run of each mode (and one of BIN's) under `perf record -g`;
#                 DIR/<kind>.txt gets the top entries of `perf report --no-children`
# Environment: ALCC_BENCH_OUT (keep every file there; default a temporary directory removed at
# exit), ALCC_BIN (use this `alcc` binary instead of building one), ALCC_TRACE_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

trace="${ALCC_TRACE_DIR:-../shared/traces}/alcc-paper/highwayGold.trace"
seconds=30
runs=1
cc=verus
underlay=cubic
before=
perf_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --trace) trace="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --cc) cc="$2"; shift ;;
    --underlay) underlay="$2"; shift ;;
    --before) before="$2"; shift ;;
    --perf) perf_dir="$2"; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "verus-cpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "verus-cpu.sh: needs root (the emulator's namespaces)" >&2; exit 1; }
[ -r "$trace" ] || { echo "verus-cpu.sh: no trace $trace (set ALCC_TRACE_DIR or --trace)" >&2; exit 1; }
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "verus-cpu.sh: needs $tool" >&2; exit 1; }
done
if [ -n "$perf_dir" ]; then
  command -v perf >/dev/null || { echo "verus-cpu.sh: --perf needs perf (apt-get install linux-perf)" >&2; exit 1; }
  mkdir -p "$perf_dir"
  perf_dir="$(cd "$perf_dir" && pwd)"
fi
if [ -n "${ALCC_BIN:-}" ]; then
  A="$ALCC_BIN"
else
  cargo build --release -q -p alcc-cli
  A="$PWD/target/release/alcc"
fi
if [ -n "${ALCC_BENCH_OUT:-}" ]; then
  out="$ALCC_BENCH_OUT"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
out="$(cd "$out" && pwd)"

median() {
  sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# one KIND TAG [WRAPPER]: one download of $seconds through the emulator from the KIND server
# (kernel, framed, udp, before), the server started under WRAPPER if given; writes TAG/. The
# client waits until the server (and its wrapper: perf writes its data at exit) has ended,
# since the emulator kills what still runs in its namespaces when the client is done.
one() {
  local kind="$1" tag="$2" wrap="${3:-}" bin="$A" mode=kernel
  case "$kind" in
    kernel) ;;
    framed|udp) mode="$kind" ;;
    before) bin="$before" ;;
  esac
  local dir="$out/$tag"
  mkdir -p "$dir"
  local server="$wrap $bin serve --port 9000 --cc $cc --underlay $underlay --bytes 100000000000 --count 1 \
--seconds $((seconds + 2)) --rusage $dir/rusage.json" client ok
  if [ "$mode" = kernel ]; then
    server="$server --http"
    client="curl -sS -o /dev/null --max-time $seconds \"http://\$ALCC_SERVER:9000/\""
    ok=28
  else
    server="$server --mode $mode"
    client="timeout $seconds $A get \"\$ALCC_SERVER:9000\" --mode $mode"
    ok=124
  fi
  "$A" link --uplink "$trace" --downlink "$trace" --delay 10 \
    --downlink-queue droptail --downlink-queue-args bytes=2000000 \
    --uplink-queue droptail --uplink-queue-args bytes=2000000 \
    --seed 1 --downlink-log "$dir/down.log" --server "$server; touch $dir/done" -- sh -c \
    "sleep 0.5; $client; s=\$?; [ \$s -eq $ok ] && s=0; i=0; while [ ! -e $dir/done ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i+1)); done; exit \$s" \
    >"$dir/out.txt" 2>&1 || { echo "verus-cpu.sh: $tag failed: $(tail -3 "$dir/out.txt")" >&2; return 1; }
  "$A" analyze --json "$dir/down.log" >"$dir/analysis.json"
}

echo "== $cc over $underlay through the emulator: $(basename "$trace"), 10 ms, 2 MB queues, $seconds s, $runs round(s); kernel vs framed vs udp"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, $(uname -r)"
uptime
kinds=(kernel framed udp)
[ -n "$before" ] && kinds+=(before)
for r in $(seq 1 "$runs"); do
  order=("${kinds[@]:$(((r - 1) % ${#kinds[@]}))}" "${kinds[@]:0:$(((r - 1) % ${#kinds[@]}))}")
  for kind in "${order[@]}"; do one "$kind" "$kind-$r"; done
done
uptime
echo "| sender | runs | Mbit/s (median) | p95 delay ms (median) | CPU s (median) | user s | system s | CPU ms per MB (median) | wake-ups / steps / sleeps per MB (median) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for kind in "${kinds[@]}"; do
  tput="$(for r in $(seq 1 "$runs"); do jq -r .throughput_mbps "$out/$kind-$r/analysis.json"; done | median)"
  p95="$(for r in $(seq 1 "$runs"); do jq -r .delay_p95_ms "$out/$kind-$r/analysis.json"; done | median)"
  cpu="$(for r in $(seq 1 "$runs"); do jq -r .cpu_s "$out/$kind-$r/rusage.json"; done | median)"
  user="$(for r in $(seq 1 "$runs"); do jq -r .user_s "$out/$kind-$r/rusage.json"; done | median)"
  sys="$(for r in $(seq 1 "$runs"); do jq -r .system_s "$out/$kind-$r/rusage.json"; done | median)"
  # CPU per delivered MB: the run's CPU over the bytes its downlink delivered (throughput x duration).
  per_mb="$(for r in $(seq 1 "$runs"); do
    jq -r '.throughput_mbps * .duration_s / 8' "$out/$kind-$r/analysis.json" |
      awk -v c="$(jq -r .cpu_s "$out/$kind-$r/rusage.json")" '{printf "%.4f\n", c * 1000 / $1}'
  done)"
  eval "${kind}_mb=$(echo "$per_mb" | median)"
  # Per delivered MB: the driver's wake-ups and steps, and the process's sleeps (voluntary
  # context switches, getrusage ru_nvcsw).
  per_mb_of() {
    for r in $(seq 1 "$runs"); do
      jq -r '.throughput_mbps * .duration_s / 8' "$out/$kind-$r/analysis.json" |
        awk -v w="$(jq -r "$1 // 0" "$out/$kind-$r/rusage.json")" '{printf "%.0f\n", w / $1}'
    done | median
  }
  counts="$(per_mb_of .driver_wakeups) / $(per_mb_of .driver_steps) / $(per_mb_of .voluntary_switches)"
  echo "$kind: every run's CPU ms per MB (round order): $(echo "$per_mb" | tr '\n' ' ')" >&2
  printf '| %s | %d | %.2f | %.0f | %.3f | %.3f | %.3f | %.2f | %s |\n' "$kind" "$runs" "$tput" "$p95" "$cpu" "$user" \
    "$sys" "$(echo "$per_mb" | median)" "$counts"
done
# shellcheck disable=SC2154 # set by eval above
awk -v k="$kernel_mb" -v f="$framed_mb" -v u="$udp_mb" \
  'BEGIN {printf "per delivered MB: kernel / udp %.2fx; framed / udp %.2fx\n", k / u, f / u}'
if [ -n "$before" ]; then
  # shellcheck disable=SC2154 # set by eval above
  awk -v b="$before_mb" -v u="$udp_mb" 'BEGIN {printf "per delivered MB: before (kernel) / udp %.2fx\n", b / u}'
fi

if [ -n "$perf_dir" ]; then
  echo "== perf record -g, one more run of each"
  for kind in "${kinds[@]}"; do
    one "$kind" "perf-$kind" "perf record -q -g -o $perf_dir/$kind.data --"
    perf report -i "$perf_dir/$kind.data" --no-children --percent-limit 0.7 --stdio \
      --sort dso,symbol -g none 2>/dev/null | grep -v '^$' | head -60 >"$perf_dir/$kind.txt"
    echo "$perf_dir/$kind.txt"
  done
fi
echo "files: $out"

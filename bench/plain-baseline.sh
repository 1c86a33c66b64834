#!/usr/bin/env bash
# The plain-TCP baseline (`alcc serve-plain`: sendfile, no alcc code on the data path) against
# the baseline the harness used before (`alcc serve --cc none`: kernel TCP written through
# alcc's engine with no controller), measured side by side in one run (run as root).
#
# 1. Loopback: ROUNDS rounds, each one download of SIZE bytes by `curl -o /dev/null` from each
#    server (alternating which goes first); per download the server's CPU time (getrusage) and
#    the throughput curl saw. Medians over the rounds and the ratio engine / plain.
# 2. Emulated: `alcc experiment run experiments/baseline.toml` (tcp-cubic against
#    alcc-none@cubic, on the synthetic cellular trace and a constant 50 Mbit/s trace, 10 ms, 2 MB
#    queue); medians of throughput, p95 delay and server CPU per trace and scheme, and the ratios.
#
# CPU figures need a quiet machine: on a shared machine run it under its lock (for example
# `flock /work/locks/quiet.lock bench/plain-baseline.sh`); it prints `uptime` before and after
# each part: repeat when the load average was above 1.5.
#
# Usage: bench/plain-baseline.sh [--quick] [--rounds N] [--size BYTES]
#   --quick       CI-sized: 3 rounds of 1 GB, the experiment's --quick form
#   --rounds N    loopback rounds (default 7)
#   --size BYTES  loopback download size (default 4000000000)
# Environment: ALCC_BENCH_OUT (keep every file there; default a temporary directory removed at
# exit), ALCC_BIN (use this `alcc` binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=7
size=4000000000
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; rounds=3; size=1000000000 ;;
    --rounds) rounds="$2"; shift ;;
    --size) size="$2"; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "plain-baseline.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "plain-baseline.sh: needs root (the emulator's network namespaces)" >&2
  exit 1
fi
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "plain-baseline.sh: needs $tool" >&2; exit 1; }
done
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
# median: the median of the numbers on stdin, one per line.
median() {
  sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# download KIND TAG: one loopback download of $size bytes; writes TAG.rusage.json and TAG.curl.
download() {
  local kind="$1" tag="$2" server
  case "$kind" in
    plain) server=("$A" serve-plain) ;;
    engine) server=("$A" serve --cc none --telemetry "$out/$tag.tel") ;;
  esac
  "${server[@]}" --port 0 --bind 127.0.0.1 --underlay cubic --bytes "$size" --http --count 1 \
    --rusage "$out/$tag.rusage.json" >"$out/$tag.addr" 2>"$out/$tag.err" &
  local pid=$! i=0
  while ! grep -q listening "$out/$tag.addr" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  local port
  port="$(awk '{print $NF}' "$out/$tag.addr" | cut -d: -f2)"
  curl -sS -o /dev/null -w '%{size_download} %{time_total}\n' "http://127.0.0.1:$port/" >"$out/$tag.curl"
  wait "$pid"
}

loopback() {
  echo "== loopback: $rounds rounds, $size bytes each, curl -o /dev/null"
  uptime
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then order=(plain engine); else order=(engine plain); fi
    for kind in "${order[@]}"; do download "$kind" "loop-$kind-$r"; done
  done
  uptime
  echo "| server | runs | Mbit/s (median) | server CPU s (median) | CPU ms per GB |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  for kind in plain engine; do
    local tput cpu
    tput="$(for r in $(seq 1 "$rounds"); do awk '{printf "%.1f\n", $1 * 8 / $2 / 1e6}' "$out/loop-$kind-$r.curl"; done | median)"
    cpu="$(for r in $(seq 1 "$rounds"); do jq -r .cpu_s "$out/loop-$kind-$r.rusage.json"; done | median)"
    eval "${kind}_tput=$tput ${kind}_cpu=$cpu"
    printf '| %s | %d | %.0f | %.3f | %.1f |\n' "$kind" "$rounds" "$tput" "$cpu" \
      "$(awk -v c="$cpu" -v s="$size" 'BEGIN {print c * 1000 / (s / 1e9)}')"
  done
  # shellcheck disable=SC2154 # set by eval above
  awk -v pc="$plain_cpu" -v ec="$engine_cpu" -v pt="$plain_tput" -v et="$engine_tput" \
    'BEGIN {printf "engine / plain: CPU %.2fx, throughput %.2fx\n", ec / pc, et / pt}'
}

emulated() {
  echo "== emulated: experiments/baseline.toml$([ "$quick" -eq 1 ] && echo " --quick")"
  uptime
  local args=(experiment run experiments/baseline.toml --out "$out/emulated" --force)
  [ "$quick" -eq 1 ] && args+=(--quick)
  "$A" "${args[@]}" >"$out/emulated.out" 2>"$out/emulated.err" || {
    echo "the experiment failed:" >&2; tail -5 "$out/emulated.err" >&2; return 1
  }
  uptime
  echo "| trace | scheme | ok runs | Mbit/s | p95 ms | server CPU s | CPU x tcp-cubic | Mbit/s x tcp-cubic |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  jq -r '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    [.runs[] | select(.status == "ok")] | group_by(.trace)[] as $t
    | ($t | map(select(.scheme == "tcp-cubic"))) as $base
    | ($base | map(.cpu_s) | median) as $bc | ($base | map(.throughput_mbps) | median) as $bt
    | $t | group_by(.scheme)[]
    | [.[0].trace, .[0].scheme, length, (map(.throughput_mbps) | median), (map(.delay_p95_ms) | median),
       (map(.cpu_s) | median)] as $r
    | "| \($r[0]) | \($r[1]) | \($r[2]) | \($r[3] * 100 | round / 100) | \($r[4] | round) | \($r[5] * 1000 | round / 1000) | \($r[5] / $bc * 100 | round / 100)x | \($r[3] / $bt * 1000 | round / 1000)x |"
  ' "$out/emulated/results.json"
}

loopback
emulated
echo "files: $out"

#!/usr/bin/env bash
# Coupled flows through the trace emulator (issue 14's criteria; docs/coupled-flows.md). Run as
# root, holding an emulator slot: `/work/locks/emu bench/coupled.sh ...`.
#
# 4 ALCC-Copa flows with the drain check (`--cc copa:mode=drain`: our variant, which a coupled
# group needs to leave competitive mode, docs/coupled-flows.md; a build before the default
# became the authors' switch knows it as `mode=auto`, the same thing) over kernel CUBIC to one client: 4 curls in the client namespace, started
# together, each `curl --max-time S http://SERVER:9000/?weight=W` with W = 1, 2, 3, 4, behind
# `alcc link` with 20 ms one-way delay and a 1000-packet drop-tail downlink queue, over
#   - a constant 12 Mbit/s trace (`alcc trace gen --kind constant --rate 12`) and
#   - the synthetic cellular trace (`alcc trace gen --kind cellular --seed 1`).
# Modes (one interleaved sweep: run r of every trace and mode, then run r+1):
#   coupled    one `alcc serve --group auto` (the 4 flows share one group, weights 1:2:3:4)
#   uncoupled  one `alcc serve --group none` (each flow alone; the weights do nothing)
#   manager    two `alcc serve --group bench --manager SOCK` processes (ports 9000 and 9001,
#              flows 1+3 on one, 2+4 on the other) joined through `alcc manager` (--manager
#              mode only, see --modes)
#              Each server writes its flows' telemetry (TAG.p9000.tel, TAG.p9001.tel, 100 ms;
#              group_share, shares_applied, the controller's window), and
#              bench/coupled_telemetry.py prints per flow the mean group share, the share of
#              the summed group shares and how often the flow had no share (TAG.shares.txt)
#   kill       as manager, and at 10 s the process on port 9001 (flows 2 and 4) is killed
#              with -9; the survivor's telemetry gives its flows' delivered rate in 200 ms
#              windows, and the time from the kill until it reaches 90 % of the link's
#              throughput before the kill is the reclaim time (bench/coupled_kill.py)
# A mode with the suffix -b (e.g. manager-b) runs its servers and manager from the binary given
# with --bin-b (an earlier commit's build): both binaries in one interleaved sweep.
# Per flow: curl's size_download / time_total. Aggregate and one-way delay: `alcc analyze` on
# the emulator's downlink log. results.csv has one line per run; the summary prints per trace
# and mode the means, coupled/uncoupled ratios, and each flow's share of the aggregate.
#
# Usage: bench/coupled.sh [--seconds S] [--runs R] [--modes "coupled uncoupled"] [--out DIR]
#        [--bin-b PATH]
# Environment: ALCC_BENCH_OUT (default /work/results/coupled-engine/bench-<time>), ALCC_BIN (the
# alcc binary, default target/release/alcc; a copy keeps a rebuild from changing it mid-sweep).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=20
runs=3
modes="coupled uncoupled"
out="${ALCC_BENCH_OUT:-}"
bin_b=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --modes) modes="$2"; shift ;;
    --out) out="$2"; shift ;;
    --bin-b) bin_b="$2"; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "coupled.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for mode in $modes; do
  if [ "${mode%-b}" != "$mode" ] && [ ! -x "$bin_b" ]; then
    echo "coupled.sh: mode $mode needs --bin-b PATH (an alcc binary)" >&2
    exit 2
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "coupled.sh: needs root (network namespaces, TUN devices)" >&2
  exit 1
fi
for tool in curl jq python3; do
  command -v "$tool" >/dev/null || { echo "coupled.sh: needs $tool" >&2; exit 1; }
done
A="${ALCC_BIN:-$PWD/target/release/alcc}"
[ -x "$A" ] || { echo "coupled.sh: build first (cargo build --release -p alcc-cli)" >&2; exit 1; }
out="${out:-/work/results/coupled-engine/bench-$(date -u +%H%M%S)}"
mkdir -p "$out"

"$A" trace gen --kind constant --rate 12 --duration 60 --out "$out/const12.trace"
"$A" trace gen --kind cellular --seed 1 --duration 60 --out "$out/cellular.trace"

echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) binary $A${bin_b:+ (-b modes: $bin_b)} load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/meta.txt"
echo "trace,mode,run,agg_mbps,p50_ms,p95_ms,f1,f2,f3,f4" >"$out/results.csv"

server_cmd() {
  local mode="$1" tag="$2" bin="$A"
  if [ "${mode%-b}" != "$mode" ]; then
    bin="$bin_b" mode="${mode%-b}"
  fi
  local common="$bin serve --cc copa:mode=drain --underlay cubic --bytes 100000000000 --http"
  case "$mode" in
    coupled) echo "$common --port 9000 --group auto --telemetry $out/$tag.tel --telemetry-interval-ms 100" ;;
    uncoupled) echo "$common --port 9000 --group none --telemetry $out/$tag.tel --telemetry-interval-ms 100" ;;
    manager)
      echo "sh -c '$bin manager --socket $out/manager.sock & sleep 0.3; \
$common --port 9000 --group bench --manager $out/manager.sock --telemetry $out/$tag.p9000.tel --telemetry-interval-ms 100 & \
$common --port 9001 --group bench --manager $out/manager.sock --telemetry $out/$tag.p9001.tel --telemetry-interval-ms 100 & wait'" ;;
    kill)
      echo "sh -c '$bin manager --socket $out/manager.sock & sleep 0.3; date +%s.%N >$out/$tag.t0; \
$common --port 9000 --group bench --manager $out/manager.sock --telemetry $out/$tag.tel --telemetry-interval-ms 20 & \
$common --port 9001 --group bench --manager $out/manager.sock --telemetry $out/$tag.p9001.tel --telemetry-interval-ms 100 & pb=\$!; \
sleep 11; kill -9 \$pb; date +%s.%N >$out/$tag.kill; wait'" ;;
  esac
}

# The client: 4 curls at once; flow W asks for weight W (manager mode: odd W to port 9000,
# even W to 9001).
client_cmd() {
  local mode="${1%-b}" tag="$2"
  local port2=9000
  [ "$mode" = manager ] || [ "$mode" = kill ] && port2=9001
  cat <<CLIENT
sleep 1
for w in 1 2 3 4; do
  p=9000; [ \$((w % 2)) -eq 0 ] && p=$port2
  curl -s -o /dev/null --max-time $secs -w "%{size_download} %{time_total}\n" "http://\$ALCC_SERVER:\$p/?weight=\$w" >"$out/$tag.curl\$w" &
done
wait
exit 0
CLIENT
}

for run in $(seq 1 "$runs"); do
  for trace in const12 cellular; do
    for mode in $modes; do
      tag="$trace-$mode-$run"
      "$A" link --uplink "$out/$trace.trace" --downlink "$out/$trace.trace" --delay 20 \
        --downlink-queue droptail --downlink-queue-args packets=1000 \
        --downlink-log "$out/$tag.log" \
        --server "$(server_cmd "$mode" "$tag")" \
        -- sh -c "$(client_cmd "$mode" "$tag")" >"$out/$tag.out" 2>"$out/$tag.err" ||
        { echo "run $tag failed:" >&2; tail -5 "$out/$tag.err" >&2; continue; }
      "$A" analyze --json "$out/$tag.log" >"$out/$tag.json"
      flows=""
      for w in 1 2 3 4; do
        f="$(awk '{ if ($2 > 0) printf "%.4f", $1 * 8 / $2 / 1e6; else printf "0" }' "$out/$tag.curl$w")"
        flows="$flows,$f"
      done
      if [ "${mode%-b}" = kill ]; then
        "$A" analyze "$out/$tag.log" --series "$out/$tag.series.csv" --bin-ms 200 >/dev/null
        python3 bench/coupled_kill.py "$out/$tag" | tee -a "$out/kill.txt"
        continue
      fi
      if [ "${mode%-b}" = manager ]; then
        python3 bench/coupled_telemetry.py "$out/$tag" | tee "$out/$tag.shares.txt"
      fi
      line="$trace,$mode,$run,$(jq -r '[.throughput_mbps, .delay_p50_ms, .delay_p95_ms] | map(tostring) | join(",")' "$out/$tag.json")$flows"
      echo "$line" | tee -a "$out/results.csv"
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/meta.txt"
[ "$(wc -l <"$out/results.csv")" -gt 1 ] && python3 bench/coupled_summary.py "$out/results.csv" | tee "$out/summary.md"
exit 0

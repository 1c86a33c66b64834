#!/usr/bin/env bash
# Fidelity of ALCC-X against our own UDP X (issue 5): the same controller code run above kernel
# TCP and over UDP (alcc's own implementation, not the authors' program; the harness calls it
# udp-X), side by side on the same traces.
#
# For each trace (CampusWalk, highwayGold, rapidGold from $ALCC_TRACE_DIR/alcc-paper, or a
# synthetic cellular trace from `alcc trace gen` when that directory is absent), the same trace
# on uplink and downlink, 10 ms one-way delay, a 2 MB drop-tail downlink queue, SECONDS-long
# downloads of the pairs
#   copa   kernel (curl, over kernel CUBIC)  vs  copa   udp (`alcc get --mode udp`)
#   verus  kernel (curl, over kernel CUBIC)  vs  verus  udp
#   sprout framed (`alcc get --mode framed`) vs  sprout udp
# RUNS times each (interleaved: run 1 of every cell, then run 2, ...). `alcc analyze --json` on
# the downlink log gives throughput and p95 one-way delay; the table gives per trace and pair
# the medians over the runs and the difference of alcc from our UDP version in percent.
# Every emulator run holds /tmp/alcc-emu.lock (shared with other users of the emulator).
#
# Usage: bench/fidelity.sh [--quick] [--runs N] [--seconds N] [--traces A,B] [--pairs copa,verus,sprout]
#   --quick       CI: one 10 s run per cell, first trace only
#   --runs N      runs per cell (default 3)
#   --seconds N   length of each download (default 30)
#   --traces L    trace names (default CampusWalk,highwayGold,rapidGold)
#   --pairs L     which pairs (default copa,verus,sprout)
#   --resume      keep runs whose result (TAG.json) is already in ALCC_BENCH_OUT (an interrupted
#                 run, or cells a change did not touch copied from an earlier run)
# Environment: ALCC_TRACE_DIR (default ../shared/traces beside the repository), ALCC_BENCH_OUT
# (keep logs, JSON and telemetry there; default a temporary directory removed at exit),
# SERVE_ARGS (extra arguments for `alcc serve`, e.g. for a targeted experiment), ALCC_BIN (use
# this `alcc` binary instead of building one: a copy keeps a long run independent of rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=30
runs=3
quick=0
trace_names="CampusWalk,highwayGold,rapidGold"
pairs="copa,verus,sprout"
resume=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; secs=10; runs=1 ;;
    --runs) runs="$2"; shift ;;
    --seconds) secs="$2"; shift ;;
    --traces) trace_names="$2"; shift ;;
    --pairs) pairs="$2"; shift ;;
    --resume) resume=1 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "fidelity.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "fidelity.sh: --runs needs a positive integer" >&2; exit 2; }
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "fidelity.sh: --seconds needs a positive integer" >&2; exit 2; }

if [ "$(id -u)" -ne 0 ]; then
  echo "fidelity.sh: needs root (network namespaces, TUN devices)" >&2
  exit 1
fi
for tool in curl jq flock timeout; do
  command -v "$tool" >/dev/null || { echo "fidelity.sh: needs $tool" >&2; exit 1; }
done

if [ -n "${ALCC_BIN:-}" ]; then
  A="$(realpath "$ALCC_BIN")"
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

trace_dir="${ALCC_TRACE_DIR:-$(cd .. && pwd)/shared/traces}/alcc-paper"
traces=()
IFS=, read -ra wanted <<<"$trace_names"
for t in "${wanted[@]}"; do
  [ -f "$trace_dir/$t.trace" ] && traces+=("$trace_dir/$t.trace")
done
if [ ${#traces[@]} -eq 0 ]; then
  echo "# $trace_dir has none of $trace_names: using a synthetic cellular trace"
  "$A" trace gen --kind cellular --seed 1 --duration 60 --out "$out/synthetic.trace"
  traces=("$out/synthetic.trace")
fi
[ "$quick" -eq 1 ] && traces=("${traces[0]}")

# The cells: "cc:alcc-mode" then "cc:udp" per pair.
cells=()
IFS=, read -ra pair_list <<<"$pairs"
for p in "${pair_list[@]}"; do
  case "$p" in
    copa|verus) cells+=("$p:kernel" "$p:udp") ;;
    sprout) cells+=("sprout:framed" "sprout:udp") ;;
    *) echo "fidelity.sh: unknown pair $p" >&2; exit 2 ;;
  esac
done

# run_cell TRACE CC MODE TAG: one download of `secs` seconds behind the emulated link, under the
# emulator lock. Leaves $out/TAG.log (downlink log), .tel (telemetry), .err and .json.
run_cell() {
  local trace="$1" cc="$2" mode="$3" tag="$4" client
  if [ "$mode" = kernel ]; then
    client="curl -s -o /dev/null --max-time $secs http://\$ALCC_SERVER:9000/"
  else
    client="timeout $secs $A get \$ALCC_SERVER:9000 --mode $mode"
  fi
  local http=""
  [ "$mode" = kernel ] && http="--http"
  # shellcheck disable=SC2086 # SERVE_ARGS is a word list on purpose
  flock /tmp/alcc-emu.lock "$A" link --uplink "$trace" --downlink "$trace" --delay 10 \
    --downlink-queue droptail --downlink-queue-args bytes=2000000 \
    --downlink-log "$out/$tag.log" \
    --server "$A serve --port 9000 --cc $cc --mode $mode --underlay cubic --bytes 100000000000 $http --telemetry $out/$tag.tel ${SERVE_ARGS:-}" \
    -- sh -c "sleep 0.5; $client; exit 0" \
    >/dev/null 2>"$out/$tag.err" || { echo "run $tag failed:" >&2; cat "$out/$tag.err" >&2; return 1; }
  "$A" analyze --json "$out/$tag.log" >"$out/$tag.json"
}

# median: the median of the numbers on stdin (mean of the middle two for an even count).
median() {
  sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
    else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

echo "== fidelity: ${secs} s downloads, 10 ms one-way, 2 MB drop-tail downlink, $runs run(s) per cell"
for run in $(seq 1 "$runs"); do
  for trace in "${traces[@]}"; do
    name="$(basename "$trace" .trace)"
    for cell in "${cells[@]}"; do
      cc="${cell%%:*}" mode="${cell##*:}"
      tag="$name-$cc-$mode-$run"
      if [ "$resume" -eq 0 ] || [ ! -s "$out/$tag.json" ]; then
        run_cell "$trace" "$cc" "$mode" "$tag"
      fi
      printf '%-12s %-7s %-7s run %d: %7.2f Mbit/s  p95 %7.1f ms\n' "$name" "$cc" "$mode" "$run" \
        "$(jq -r .throughput_mbps "$out/$tag.json")" "$(jq -r .delay_p95_ms "$out/$tag.json")"
    done
  done
done

# cell_median NAME CC MODE FIELD: the median of FIELD over the runs of one cell.
cell_median() {
  for run in $(seq 1 "$runs"); do jq -r ".$4" "$out/$1-$2-$3-$run.json"; done | median
}

echo
echo "| trace | pair | alcc Mbit/s | udp Mbit/s | diff % | alcc p95 ms | udp p95 ms | diff % |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for trace in "${traces[@]}"; do
  name="$(basename "$trace" .trace)"
  for ((i = 0; i < ${#cells[@]}; i += 2)); do
    a="${cells[i]}" n="${cells[i + 1]}"
    cc="${a%%:*}" am="${a##*:}" nm="${n##*:}"
    at="$(cell_median "$name" "$cc" "$am" throughput_mbps)"
    nt="$(cell_median "$name" "$cc" "$nm" throughput_mbps)"
    ad="$(cell_median "$name" "$cc" "$am" delay_p95_ms)"
    nd="$(cell_median "$name" "$cc" "$nm" delay_p95_ms)"
    awk -v name="$name" -v pair="$cc $am/$nm" -v at="$at" -v nt="$nt" -v ad="$ad" -v nd="$nd" 'BEGIN {
      printf "| %s | %s | %.2f | %.2f | %+.1f | %.1f | %.1f | %+.1f |\n", name, pair, at, nt,
        (at - nt) / nt * 100, ad, nd, (ad - nd) / nd * 100 }'
  done
done

#!/usr/bin/env bash
# Acceptance measurements of the alcc engine over the trace-driven emulator (run as root).
#
# 1. Delay and throughput: for each trace (the ALCC paper's CampusWalk and highwayGold from
#    $ALCC_TRACE_DIR/alcc-paper, or a synthetic cellular trace from `alcc trace gen` when that
#    directory is absent), 10 ms one-way delay, a 2 MB drop-tail downlink queue, a plain `curl`
#    downloads from
#      - `alcc serve-plain` (plain kernel CUBIC by sendfile, no alcc code: the baseline, `none`),
#    and from `alcc serve --http` with
#      - `--cc copa`  over kernel CUBIC,
#      - `--cc verus` over kernel CUBIC (when `alcc controllers` lists it).
#    `alcc analyze` reads the downlink log; the table gives throughput and p95 one-way delay and
#    their ratios to plain CUBIC, and the telemetry check: the fraction of samples in which the
#    controller's window is below the kernel's cwnd. Acceptance: delay ratio <= 0.25 at a
#    throughput ratio >= 0.85.
# 2. Integrity (`--transfer`, not in `--quick`): SIZE bytes of random data (default 1 GiB) over
#    a constant-rate trace, clean and with 1 % random loss on the downlink, through
#    `alcc serve --cc copa --file`; the sha256 of what curl received is compared with the file's;
#    the telemetry's loss count shows that the controller heard the kernel's retransmissions.
#
# Usage: bench/engine-emulated.sh [--quick] [--seconds N] [--no-delay] [--transfer [SIZE]]
#   --quick       CI: 10 s runs, first trace only, no transfer
#   --seconds N   length of each download (default 30)
#   --no-delay    skip part 1
#   --transfer    also run part 2; SIZE in bytes (default 1073741824)
# Environment: ALCC_TRACE_DIR (default ../shared/traces beside the repository), ALCC_BENCH_OUT
# (keep logs there; default a temporary directory removed at exit), TRANSFER_RATE (Mbit/s,
# default 300), TRANSFER_DELAY (ms each way, default 1).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=30
quick=0
delay_part=1
transfer=0
size=$((1 << 30))
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; secs=10 ;;
    --seconds) secs="$2"; shift ;;
    --no-delay) delay_part=0 ;;
    --transfer)
      transfer=1
      if [ $# -gt 1 ] && [[ "$2" =~ ^[0-9]+$ ]]; then size="$2"; shift; fi ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "engine-emulated.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ "$(id -u)" -ne 0 ]; then
  echo "engine-emulated.sh: needs root (network namespaces, TUN devices)" >&2
  exit 1
fi
for tool in curl jq sha256sum; do
  command -v "$tool" >/dev/null || { echo "engine-emulated.sh: needs $tool" >&2; exit 1; }
done

cargo build --release -q -p alcc-cli
A="$PWD/target/release/alcc"
if [ -n "${ALCC_BENCH_OUT:-}" ]; then
  out="$ALCC_BENCH_OUT"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

trace_dir="${ALCC_TRACE_DIR:-$(cd .. && pwd)/shared/traces}/alcc-paper"
traces=()
if [ -d "$trace_dir" ]; then
  for t in CampusWalk highwayGold; do
    [ -f "$trace_dir/$t.trace" ] && traces+=("$trace_dir/$t.trace")
  done
fi
if [ ${#traces[@]} -eq 0 ]; then
  echo "# $trace_dir has no CampusWalk/highwayGold: using a synthetic cellular trace"
  "$A" trace gen --kind cellular --seed 1 --duration 60 --out "$out/synthetic.trace"
  traces=("$out/synthetic.trace")
fi
[ "$quick" -eq 1 ] && traces=("${traces[0]}")

ccs=(none copa)
"$A" controllers | awk '{print $1}' | grep -qx verus && ccs+=(verus)

# run_download TRACE CC TAG: one curl download of `secs` seconds behind the emulated link.
# Leaves $out/TAG.log (downlink log) and $out/TAG.tel (telemetry; none for the plain baseline).
run_download() {
  local trace="$1" cc="$2" tag="$3"
  local server="$A serve --port 9000 --cc $cc --underlay cubic --bytes 100000000000 --http --telemetry $out/$tag.tel"
  [ "$cc" = none ] && server="$A serve-plain --port 9000 --underlay cubic --bytes 100000000000 --http"
  "$A" link --uplink "$trace" --downlink "$trace" --delay 10 \
    --downlink-queue droptail --downlink-queue-args bytes=2000000 \
    --downlink-log "$out/$tag.log" \
    --server "$server" \
    -- sh -c "sleep 0.5; curl -s -o /dev/null --max-time $secs http://\$ALCC_SERVER:9000/; exit 0" \
    >/dev/null 2>"$out/$tag.err" || { echo "run $tag failed:" >&2; cat "$out/$tag.err" >&2; return 1; }
}

# below_cwnd FILE: the fraction of telemetry samples with the controller's window below the
# kernel's cwnd (bytes), over samples that have both (a last line cut short is skipped).
below_cwnd() {
  jq -R 'fromjson? | select(.window != null and .kernel_cwnd != null) | (.window < .kernel_cwnd)' "$1" |
    awk '{n++; if ($1 == "true") b++} END {if (n) printf "%.3f", b / n; else printf "n/a"}'
}

if [ "$delay_part" -eq 1 ]; then
  echo "== downloads by curl, ${secs} s each, 10 ms one-way delay, 2 MB drop-tail downlink queue"
  echo "   (sim: the same controller in \`alcc sim\` on the same trace, throughput and p95 ratios to"
  echo "    simulated CUBIC: the ceiling with an ideal return path and no delayed ACKs)"
  printf '%-12s %-6s %10s %8s %10s %8s %12s %10s %10s\n' trace cc "Mbit/s" "x cubic" "p95 ms" "x cubic" "win<cwnd" \
    "sim tput" "sim p95"
  for trace in "${traces[@]}"; do
    name="$(basename "$trace" .trace)"
    base_tput="" base_p95="" sim_base=""
    for cc in "${ccs[@]}"; do
      tag="$name-$cc"
      run_download "$trace" "$cc" "$tag"
      "$A" analyze --json "$out/$tag.log" >"$out/$tag.json"
      tput="$(jq -r '.throughput_mbps' "$out/$tag.json")"
      p95="$(jq -r '.delay_p95_ms' "$out/$tag.json")"
      if [ "$cc" = none ]; then
        base_tput="$tput" base_p95="$p95" below="-"
      else
        below="$(below_cwnd "$out/$tag.tel")"
      fi
      rt="$(awk -v a="$tput" -v b="$base_tput" 'BEGIN {printf "%.2f", a / b}')"
      rd="$(awk -v a="$p95" -v b="$base_p95" 'BEGIN {printf "%.3f", a / b}')"
      sim_cc="${cc/none/cubic}"
      "$A" sim --trace "$trace" --cc "$sim_cc" --delay 10 --queue bytes=2000000 --duration "$secs" \
        >"$out/$tag.sim.json"
      if [ "$cc" = none ]; then sim_base="$out/$tag.sim.json"; fi
      st="$(jq -n --slurpfile a "$out/$tag.sim.json" --slurpfile b "$sim_base" \
        '$a[0].throughput_mbps / $b[0].throughput_mbps * 100 | round / 100')"
      sd="$(jq -n --slurpfile a "$out/$tag.sim.json" --slurpfile b "$sim_base" \
        '$a[0].delay_p95_ms / $b[0].delay_p95_ms * 1000 | round / 1000')"
      printf '%-12s %-6s %10.2f %8s %10.1f %8s %12s %10s %10s\n' "$name" "$sim_cc" "$tput" "$rt" "$p95" "$rd" \
        "$below" "$st" "$sd"
    done
  done
fi

if [ "$transfer" -eq 1 ] && [ "$quick" -eq 0 ]; then
  rate="${TRANSFER_RATE:-300}"
  tdelay="${TRANSFER_DELAY:-1}"
  echo "== integrity: $size random bytes over a constant $rate Mbit/s trace, ${tdelay} ms each way, copa"
  "$A" trace gen --kind constant --rate "$rate" --duration 1 --out "$out/constant.trace"
  head -c "$size" /dev/urandom >"$out/data.bin"
  want="$(sha256sum "$out/data.bin" | cut -d' ' -f1)"
  for loss in 0 0.01; do
    tag="transfer-loss$loss"
    start=$(date +%s.%N)
    "$A" link --uplink "$out/constant.trace" --downlink "$out/constant.trace" --delay "$tdelay" \
      --downlink-loss "$loss" --downlink-queue droptail --downlink-queue-args packets=1000 \
      --server "$A serve --port 9000 --cc copa --underlay cubic --file $out/data.bin --http --telemetry $out/$tag.tel" \
      -- sh -c "sleep 0.5; curl -sS --max-time 3000 http://\$ALCC_SERVER:9000/ | sha256sum >$out/$tag.sum" \
      >/dev/null 2>"$out/$tag.err" || { echo "transfer $tag failed:" >&2; cat "$out/$tag.err" >&2; exit 1; }
    took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
    got="$(cut -d' ' -f1 "$out/$tag.sum")"
    losses="$(jq -R 'fromjson? | .losses' "$out/$tag.tel" | sort -n | tail -1)"
    verdict=$([ "$got" = "$want" ] && echo identical || echo DIFFERENT)
    echo "loss $loss: $verdict ($got), ${took} s, $(awk -v s="$size" -v t="$took" 'BEGIN {printf "%.1f", s * 8 / t / 1e6}') Mbit/s, controller loss events: ${losses:-0}"
    grep 'alcc serve:' "$out/$tag.err" | grep -v listening || true
    [ "$verdict" = identical ] || exit 1
  done
  rm -f "$out/data.bin"
fi

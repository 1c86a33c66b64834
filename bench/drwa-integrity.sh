#!/usr/bin/env bash
# DRWA never stalls and never corrupts (issue 15): SIZE random bytes (default 1 GiB) from a
# plain kernel CUBIC server (`alcc serve-plain --http`, sendfile) to `alcc get --http --drwa`
# through the trace-driven emulator (a constant-rate trace, RATE Mbit/s, DELAY ms each way,
# a 1000-packet drop-tail queue), clean and with 1 % random loss on the downlink. The received
# stream goes through sha256sum (nothing is written to disk) and must equal the source's.
# Each loss rate runs twice, side by side: the DRWA client and a plain client (`alcc get
# --http`, Linux autotuning), so that DRWA's throughput under loss has its baseline from the
# same invocation. Run as root (namespaces). Reports time, throughput and DRWA's summary line.
#
#   bench/drwa-integrity.sh [SIZE] [--out DIR]      (RATE=300 DELAY=5 in the environment)
# Take /work/locks/emu.lock around it on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
size=$((1 << 30))
out="results/drwa-integrity"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    [0-9]*) size="$1" ;;
    *) echo "usage: $0 [SIZE] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/drwa-integrity.sh needs root (the emulator's namespaces)" >&2
  exit 1
fi
A="${ALCC:-$PWD/target/release/alcc}"
[ -x "$A" ] || cargo build --release -p alcc-cli
rate="${RATE:-300}"
delay="${DELAY:-5}"
mkdir -p "$out"
"$A" trace gen --kind constant --rate "$rate" --duration 1 --out "$out/constant.trace"
head -c "$size" /dev/urandom >"$out/data.bin"
want="$(sha256sum "$out/data.bin" | cut -d' ' -f1)"
echo "== $size random bytes, plain CUBIC server, DRWA and plain clients, constant $rate Mbit/s, ${delay} ms each way"
status=0
for loss in 0 0.01; do
  for client in drwa plain; do
    tag="loss$loss-$client"
    flag=$([ "$client" = drwa ] && echo --drwa || true)
    start=$(date +%s.%N)
    "$A" link --uplink "$out/constant.trace" --downlink "$out/constant.trace" --delay "$delay" \
      --downlink-loss "$loss" --downlink-queue droptail --downlink-queue-args packets=1000 \
      --server "$A serve-plain --port 9000 --underlay cubic --file $out/data.bin --http --count 1" \
      -- sh -c "sleep 0.5; $A get \$ALCC_SERVER:9000 --http $flag --out /dev/stdout 2>$out/$tag.get | sha256sum >$out/$tag.sum" \
      >/dev/null 2>"$out/$tag.err" || { echo "transfer $tag failed:" >&2; cat "$out/$tag.err" "$out/$tag.get" >&2; exit 1; }
    took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
    got="$(cut -d' ' -f1 "$out/$tag.sum")"
    verdict=$([ "$got" = "$want" ] && echo identical || echo DIFFERENT)
    echo "loss $loss, $client client: $verdict, ${took} s, $(awk -v s="$size" -v t="$took" 'BEGIN {printf "%.1f", s * 8 / t / 1e6}') Mbit/s"
    sed 's/^/  /' "$out/$tag.get"
    [ "$verdict" = identical ] || status=1
  done
done
rm -f "$out/data.bin"
exit "$status"

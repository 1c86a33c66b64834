#!/usr/bin/env bash
# Uploads never corrupt (issue 17): SIZE random bytes (default 1 GiB) uploaded from the client
# namespace to `alcc serve --receive` (framed mode: alcc's frames and ACKs) through the
# trace-driven emulator (a constant-rate trace, RATE Mbit/s, DELAY ms each way, 1000-packet
# drop-tail queues), clean and with 1 % random loss on the uplink, by both uploaders: the Rust
# client (`alcc put`) and the Java library's (`alcc-upload.jar`), each with the same controller
# (CC, default copa; the two implement copa and mdi), over kernel BBR in the client namespace
# (under CUBIC, 1 % random loss holds any sender near 30 Mbit/s and 1 GiB takes minutes).
# The received file is compared with cmp. Run as root (namespaces). Reports time and Mbit/s.
#
#   bench/uplink-integrity.sh [SIZE] [--out DIR]      (RATE=300 DELAY=5 CC=copa in the environment)
# Take /work/locks/emu.lock around it on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
size=$((1 << 30))
out="results/uplink-integrity"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    [0-9]*) size="$1" ;;
    *) echo "usage: $0 [SIZE] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/uplink-integrity.sh needs root (the emulator's namespaces)" >&2
  exit 1
fi
A="${ALCC:-$PWD/target/release/alcc}"
JAR="${ALCC_JAVA_JAR:-$PWD/java/target/alcc-upload.jar}"
[ -x "$A" ] || cargo build --release -p alcc-cli
[ -f "$JAR" ] || (cd java && mvn -B -q package -DskipTests)
rate="${RATE:-300}"
delay="${DELAY:-5}"
cc="${CC:-copa}"
mkdir -p "$out"
"$A" trace gen --kind constant --rate "$rate" --duration 1 --out "$out/constant.trace"
head -c "$size" /dev/urandom >"$out/data.bin"
echo "== $size random bytes uploaded, $cc over kernel BBR, constant $rate Mbit/s, ${delay} ms each way"
status=0
for loss in 0 0.01; do
  for client in rust java; do
    tag="loss$loss-$client"
    rm -rf "$out/$tag"
    mkdir -p "$out/$tag"
    case "$client" in
      rust) send="$A put \$ALCC_SERVER:9000 --cc $cc --underlay bbr --file $out/data.bin --close-timeout 300" ;;
      # Java cannot choose its socket's congestion control: the namespace's default becomes BBR.
      java) send="sysctl -qw net.ipv4.tcp_congestion_control=bbr && java -jar $JAR $out/data.bin \$ALCC_SERVER:9000 --cc $cc" ;;
    esac
    start=$(date +%s.%N)
    "$A" link --uplink "$out/constant.trace" --downlink "$out/constant.trace" --delay "$delay" \
      --uplink-loss "$loss" --uplink-queue droptail --uplink-queue-args packets=1000 \
      --server "$A serve --receive --port 9000 --count 1 --out $out/$tag" \
      -- sh -c "sleep 0.5; $send" >"$out/$tag.out" 2>"$out/$tag.err" \
      || { echo "upload $tag failed:" >&2; cat "$out/$tag.err" >&2; status=1; continue; }
    took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
    verdict=$(cmp -s "$out/data.bin" "$out/$tag/upload-0" && echo identical || echo DIFFERENT)
    echo "loss $loss, $client uploader: $verdict, ${took} s (emulator start to end)," \
      "$(awk -v s="$size" -v t="$took" 'BEGIN {printf "%.1f", s * 8 / t / 1e6}') Mbit/s"
    [ "$verdict" = identical ] || status=1
    rm -f "$out/$tag/upload-0"
  done
done
rm -f "$out/data.bin"
exit "$status"

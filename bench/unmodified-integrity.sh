#!/usr/bin/env bash
# Integrity of an unmodified server under the preload shim (issue 12): Debian's nginx
# (`sendfile on`, 2 worker processes, keep-alive) started with LD_PRELOAD=libalcc_preload.so.
#
#  1. Through the trace-driven emulator (a constant-rate trace, RATE Mbit/s, DELAY ms each way,
#     a 1000-packet drop-tail queue): SIZE random bytes (default 1 GiB) fetched by curl, clean
#     and with 1 % random loss on the downlink; the client's sha256 must equal the file's.
#  2. On loopback: 200 concurrent downloads of 1 MiB (curl --parallel) all intact; ten clients
#     that abort a SIZE download mid-body; the workers' open descriptors (/proc/PID/fd) the same
#     before (after a warm-up that starts each worker's engine thread: its epoll, eventfd and
#     timerfd) and after; every governed accept has its close line in ALCC_LOG.
#
#   bench/unmodified-integrity.sh [--out DIR] [--size BYTES]  (CC=fixed UNDERLAY=bbr RATE=300 DELAY=5)
#
# CC is the controller (ALCC_CC; default `fixed`, unbounded, CC=copa works too) and UNDERLAY the
# kernel's congestion control under it (ALCC_UNDERLAY; default BBR, which does not slow down for
# random loss: CUBIC at 1 % loss and 10 ms RTT holds ~14 Mbit/s (Mathis et al. 1997), 1 GiB
# would take 13 minutes). Run as root (the
# emulator's namespaces; nginx runs its workers as root here). Take /work/locks/emu.lock around
# it on a shared machine. Exits 1 when any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
size=$((1 << 30))
out="results/unmodified-integrity"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --size) size="$2"; shift ;;
    *) echo "usage: $0 [--out DIR] [--size BYTES]" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/unmodified-integrity.sh needs root (the emulator's namespaces)" >&2
  exit 1
fi
for p in nginx curl sha256sum; do
  command -v "$p" >/dev/null || { echo "$p is not installed (scripts/setup.sh)" >&2; exit 1; }
done
A="${ALCC:-$PWD/target/release/alcc}"
LIB="${ALCC_PRELOAD:-$(dirname "$A")/libalcc_preload.so}"
[ -x "$A" ] && [ -f "$LIB" ] || nice -n 19 cargo build --release -p alcc-cli -p alcc-preload
cc="${CC:-fixed}"
underlay="${UNDERLAY:-bbr}"
rate="${RATE:-300}"
delay="${DELAY:-5}"
mkdir -p "$out/www" "$out/tmp"
out="$(cd "$out" && pwd)"
echo "uptime before: $(uptime)"

# nginx.conf for one server: $1 = listen address, $2 = file name.
conf() {
  cat >"$out/$2" <<CONF
worker_processes 2;
daemon off;
master_process on;
user root;
pid "$out/$2.pid";
error_log "$out/$2.error.log" notice;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  keepalive_timeout 30;
  client_body_temp_path "$out/tmp";
  proxy_temp_path "$out/tmp";
  fastcgi_temp_path "$out/tmp";
  uwsgi_temp_path "$out/tmp";
  scgi_temp_path "$out/tmp";
  server { listen $1; root "$out/www"; }
}
CONF
}

head -c "$size" /dev/urandom >"$out/www/big.bin"
head -c $((1 << 20)) /dev/urandom >"$out/www/mib.bin"
want="$(sha256sum "$out/www/big.bin" | cut -d' ' -f1)"
want_mib="$(sha256sum "$out/www/mib.bin" | cut -d' ' -f1)"
status=0
check() { # $1 = what, $2 = 0 when it holds
  if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAILED: $1"; status=1; fi
}

echo "== 1. $size random bytes through the emulator: nginx under the shim (ALCC_CC=$cc over $underlay), constant $rate Mbit/s, $delay ms each way"
"$A" trace gen --kind constant --rate "$rate" --duration 1 --out "$out/constant.trace"
conf "0.0.0.0:9000" emu.conf
for loss in 0 0.01; do
  tag="loss$loss"
  rm -f "$out/$tag.sum" "$out/$tag.alcc.log"
  start=$(date +%s.%N)
  "$A" link --uplink "$out/constant.trace" --downlink "$out/constant.trace" --delay "$delay" \
    --downlink-loss "$loss" --downlink-queue droptail --downlink-queue-args packets=1000 \
    --server "LD_PRELOAD=$LIB ALCC_CC=$cc ALCC_UNDERLAY=$underlay ALCC_LOG=$out/$tag.alcc.log exec nginx -c $out/emu.conf -p $out -e $out/emu.conf.error.log" \
    -- sh -c "sleep 1; curl -sS --max-time 900 http://\$ALCC_SERVER:9000/big.bin | sha256sum >$out/$tag.sum" \
    >"$out/$tag.link" 2>&1 || true
  took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s - 1}')
  got="$(cut -d' ' -f1 "$out/$tag.sum" 2>/dev/null || true)"
  governed=$(grep -c ' accept fd=' "$out/$tag.alcc.log" 2>/dev/null || true)
  echo "loss $loss: ${took} s, $(awk -v s="$size" -v t="$took" 'BEGIN {printf "%.0f", s * 8 / t / 1e6}') Mbit/s, governed accepts: $governed"
  grep -E "downlink:" "$out/$tag.link" | sed 's/^/  /'
  check "loss $loss: sha256 identical" "$([ "$got" = "$want" ] && [ "$governed" -ge 1 ]; echo $?)"
done

echo "== 2. loopback: concurrent and aborted downloads, descriptors"
conf "127.0.0.1:18283" lo.conf
rm -f "$out/lo.alcc.log"
LD_PRELOAD="$LIB" ALCC_CC="$cc" ALCC_UNDERLAY="$underlay" ALCC_LOG="$out/lo.alcc.log" \
  nginx -c "$out/lo.conf" -p "$out" -e "$out/lo.conf.error.log" &
master=$!
trap 'kill -TERM $master 2>/dev/null || true; wait $master 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:18283/mib.bin" && break; sleep 0.1; done
workers="$(pgrep -P "$master" | tr '\n' ' ')"
fds() { for w in $workers; do ls "/proc/$w/fd" | wc -l; done | paste -sd+ | bc; }
# Warm-up: each worker's first accept starts its engine thread.
for _ in 1 2 3 4; do curl -sS -o /dev/null "http://127.0.0.1:18283/mib.bin"; done
sleep 0.5
before=$(fds)
rm -rf "$out/par"
mkdir "$out/par"
urls=()
for i in $(seq 200); do urls+=(-o "$out/par/$i.bin" "http://127.0.0.1:18283/mib.bin"); done
curl -sS --parallel --parallel-max 200 "${urls[@]}" 2>"$out/parallel.err" || cat "$out/parallel.err" >&2
intact=0
for f in "$out"/par/*.bin; do [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$want_mib" ] && intact=$((intact + 1)); done
check "200 concurrent downloads of 1 MiB: $intact intact" "$([ "$intact" -eq 200 ]; echo $?)"
for _ in $(seq 10); do curl -sS -o /dev/null --max-time 0.3 "http://127.0.0.1:18283/big.bin" 2>/dev/null || true; done
got="$(curl -sS "http://127.0.0.1:18283/big.bin" | sha256sum | cut -d' ' -f1)"
check "$size after the aborted clients: identical" "$([ "$got" = "$want" ]; echo $?)"
sleep 2
after=$(fds)
check "workers' descriptors: $before before, $after after" "$([ "$before" -eq "$after" ]; echo $?)"
accepts=$(grep -c ' accept fd=' "$out/lo.alcc.log")
closes=$(grep -c ' close fd=' "$out/lo.alcc.log")
check "governed accepts $accepts, close lines $closes" "$([ "$accepts" -eq "$closes" ] && [ "$accepts" -ge 215 ]; echo $?)"
rm -rf "$out/par" "$out/www"
echo "uptime after: $(uptime)"
exit "$status"

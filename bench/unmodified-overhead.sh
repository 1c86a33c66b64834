#!/usr/bin/env bash
# What the preload shim costs an unmodified server (issue 12, "Overhead"): Debian's nginx
# (`sendfile on`, 2 worker processes, keep-alive) plain against the same nginx under
# libalcc_preload.so with an unbounded controller (ALCC_CC=fixed: no window, no pacing, so only
# the shim's and the engine's own work is left), on loopback, loaded by Debian's wrk. The shim's
# underlay is the host's default congestion control, which plain nginx's sockets get too: the
# shim is the only difference.
#
#   bench/unmodified-overhead.sh [--out DIR] [--rounds N] [--seconds S]   (defaults: 4 rounds, 8 s)
#
# Both servers listen at once (idle between their turns); each round runs wrk against plain
# nginx, then against nginx under the shim (the order swaps every round, so a trend in the
# machine's load falls on both alike), for a 1 KiB file (requests/s) and a 1 MiB file (Gbit/s
# of bodies = requests/s x 1 MiB x 8). Prints each round's figures, the medians and the
# ratios shim / plain. wrk: `-t2 -c32 -d S`. Take the locks on a shared machine:
#   flock /work/locks/emu.lock flock /work/locks/quiet.lock bench/unmodified-overhead.sh
# Raw wrk output goes to DIR (default results/unmodified-overhead).
set -euo pipefail
cd "$(dirname "$0")/.."
out="results/unmodified-overhead"
rounds=4
seconds=8
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    *) echo "usage: $0 [--out DIR] [--rounds N] [--seconds S]" >&2; exit 2 ;;
  esac
  shift
done
nginx="$(command -v nginx || echo /usr/sbin/nginx)"
for p in "$nginx" wrk curl; do
  command -v "$p" >/dev/null || { echo "$p is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
done
A="${ALCC:-$PWD/target/release/alcc}"
LIB="${ALCC_PRELOAD:-$(dirname "$A")/libalcc_preload.so}"
[ -f "$LIB" ] || nice -n 19 cargo build --release -p alcc-preload
underlay="$(cat /proc/sys/net/ipv4/tcp_congestion_control)"
mkdir -p "$out/www" "$out/tmp"
out="$(cd "$out" && pwd)"
head -c 1024 /dev/urandom >"$out/www/1k.bin"
head -c $((1 << 20)) /dev/urandom >"$out/www/1m.bin"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%FT%TZ), $(nproc) CPUs"
echo "uptime before: $(uptime)"
echo "nginx $("$nginx" -v 2>&1 | sed 's/.*: //'), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), underlay $underlay"

# nginx.conf for one server: $1 = port, $2 = name.
conf() {
  cat >"$out/$2.conf" <<CONF
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
  keepalive_requests 1000000;
  client_body_temp_path "$out/tmp";
  proxy_temp_path "$out/tmp";
  fastcgi_temp_path "$out/tmp";
  uwsgi_temp_path "$out/tmp";
  scgi_temp_path "$out/tmp";
  server { listen 127.0.0.1:$1; root "$out/www"; }
}
CONF
}
plain_port=18391
shim_port=18392
conf "$plain_port" plain
conf "$shim_port" shim
masters=()
stop() { for m in "${masters[@]}"; do kill -TERM "$m" 2>/dev/null || true; wait "$m" 2>/dev/null || true; done; }
trap stop EXIT
"$nginx" -c "$out/plain.conf" -p "$out" -e "$out/plain.error.log" &
masters+=($!)
LD_PRELOAD="$LIB" ALCC_CC=fixed ALCC_UNDERLAY="$underlay" ALCC_LOG="$out/shim.alcc.log" \
  "$nginx" -c "$out/shim.conf" -p "$out" -e "$out/shim.error.log" &
masters+=($!)
for port in $plain_port $shim_port; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/1k.bin" && break; sleep 0.1; done
done

# One wrk run: $1 = server (plain|shim), $2 = file, $3 = round; prints requests/s.
load() {
  local port=$plain_port
  [ "$1" = shim ] && port=$shim_port
  wrk -t2 -c32 -d"${seconds}s" "http://127.0.0.1:$port/$2" >"$out/$3.$1.$2.wrk" 2>&1
  awk '/^Requests\/sec:/ {print $2}' "$out/$3.$1.$2.wrk"
}
results="$out/rounds.tsv"
printf 'round\tfile\tserver\trequests_per_s\n' >"$results"
for r in $(seq "$rounds"); do
  order="plain shim"
  [ $((r % 2)) -eq 0 ] && order="shim plain"
  for file in 1k.bin 1m.bin; do
    for s in $order; do
      printf '%s\t%s\t%s\t%s\n' "$r" "$file" "$s" "$(load "$s" "$file" "$r")" >>"$results"
    done
  done
done
accepts=$(grep -c ' accept fd=' "$out/shim.alcc.log" || true)
echo "governed accepts (shim): $accepts"
echo "uptime after: $(uptime)"
python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def fig(row):
    rps = float(row["requests_per_s"])
    return rps if row["file"] == "1k.bin" else rps * (1 << 20) * 8 / 1e9
unit = {"1k.bin": "requests/s", "1m.bin": "Gbit/s"}
print("| file | server | " + " | ".join(f"round {r}" for r in sorted({int(x['round']) for x in rows})) + " | median |")
print("| --- | --- |" + " --- |" * (len({x['round'] for x in rows}) + 1))
med = {}
for file in ("1k.bin", "1m.bin"):
    for s in ("plain", "shim"):
        vals = [fig(x) for x in sorted(rows, key=lambda x: int(x["round"])) if x["file"] == file and x["server"] == s]
        med[(file, s)] = statistics.median(vals)
        fmt = "{:.0f}" if file == "1k.bin" else "{:.2f}"
        print(f"| {file} ({unit[file]}) | {s} | " + " | ".join(fmt.format(v) for v in vals) + f" | {fmt.format(med[(file, s)])} |")
print()
for file in ("1k.bin", "1m.bin"):
    per_round = []
    for r in sorted({x["round"] for x in rows}):
        v = {x["server"]: fig(x) for x in rows if x["file"] == file and x["round"] == r}
        per_round.append(v["shim"] / v["plain"])
    print(f"{file}: shim / plain {unit[file]} = {med[(file, 'shim')] / med[(file, 'plain')]:.3f} (medians); "
          f"per round {', '.join(f'{x:.3f}' for x in per_round)}")
PY

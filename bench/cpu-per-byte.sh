#!/usr/bin/env bash
# Sender CPU per byte (issue 18 item 1): one flow on loopback, `alcc serve` in kernel mode under an
# unbounded controller (`--cc fixed`: window and rate unbounded, so the engine's mechanism and
# nothing else is measured) against the plain kernel writer `alcc serve-plain` (sendfile(2) from
# an in-memory file), side by side in one run. `alcc serve` is measured on both of its paths:
# `alcc` hands the stream ranges of an in-memory file (`--send file`, AlccStream::send_file: the
# engine sends them by sendfile, nothing copied in user space) and `write` writes the bytes
# (`--send write`, std::io::Write: every byte copied into the flow's queue, then by sendmsg). Each round downloads SIZE bytes by
# `curl -o /dev/null` from each server (alternating which goes first); the figure is the
# server process's own CPU time (getrusage: user + system, so other processes' load disturbs it
# far less than wall time) per GB, medians over the rounds, and the ratio alcc / plain. curl's
# CPU time is measured too (`alcc rusage`), and the two together: on loopback the kernel sends
# a segment in the context of whoever lets it go, and a plain writer with megabytes of unsent
# data in its socket leaves most of that to the ACKs that curl's reads trigger, while a gated
# sender that keeps little unsent data in the kernel (TCP_NOTSENT_LOWAT) sends in its own.
#
# Take CPU figures on a quiet machine: on a shared one run it under the locks, e.g.
# `flock /work/locks/quiet.lock flock /work/locks/emu.lock bench/cpu-per-byte.sh`; it prints
# `uptime` before and after (repeat when the load average was above 1.5).
#
# Usage: bench/cpu-per-byte.sh [--quick] [--rounds N] [--size BYTES] [--cc SPEC] [--before BIN] [--perf DIR]
#   --quick       3 rounds of 1 GB
#   --rounds N    rounds (default 7)
#   --size BYTES  bytes per download (default 4000000000)
#   --cc SPEC     the controller of `alcc serve` (default fixed)
#   --before BIN  also `BIN serve --cc SPEC` in every round (an older build: before/after in one run)
#   --perf DIR    afterwards, one more download from each server under `perf record -g`
#                 (perf from Debian's linux-perf; needs root or kernel.perf_event_paranoid <= 1);
#                 DIR/<server>.txt gets the top entries of `perf report --no-children`
# Environment: ALCC_BENCH_OUT (keep every file there; default a temporary directory removed at
# exit), ALCC_BIN (use this `alcc` binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=7
size=4000000000
cc=fixed
perf_dir=
before=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) rounds=3; size=1000000000 ;;
    --rounds) rounds="$2"; shift ;;
    --size) size="$2"; shift ;;
    --cc) cc="$2"; shift ;;
    --perf) perf_dir="$2"; shift ;;
    --before) before="$2"; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "cpu-per-byte.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "cpu-per-byte.sh: needs $tool" >&2; exit 1; }
done
if [ -n "$perf_dir" ]; then
  command -v perf >/dev/null || { echo "cpu-per-byte.sh: --perf needs perf (apt-get install linux-perf)" >&2; exit 1; }
  mkdir -p "$perf_dir"
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

# median: the median of the numbers on stdin, one per line.
median() {
  sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# download KIND TAG [WRAPPER...]: one loopback download of $size bytes from server KIND, started
# under WRAPPER if given; writes TAG.rusage.json and TAG.curl.
download() {
  local kind="$1" tag="$2" server
  shift 2
  case "$kind" in
    plain) server=("$A" serve-plain) ;;
    alcc) server=("$A" serve --cc "$cc") ;;
    write) server=("$A" serve --cc "$cc" --send write) ;;
    before) server=("$before" serve --cc "$cc") ;;
  esac
  : >"$out/$tag.addr"
  "$@" "${server[@]}" --port 0 --bind 127.0.0.1 --underlay cubic --bytes "$size" --http --count 1 \
    --rusage "$out/$tag.rusage.json" >"$out/$tag.addr" 2>"$out/$tag.err" &
  local pid=$! i=0
  while ! grep -q listening "$out/$tag.addr" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  local port
  port="$(awk '/listening/ {print $NF}' "$out/$tag.addr" | sed 's/.*://')"
  "$A" rusage --out "$out/$tag.client.json" -- \
    curl -sS -o /dev/null -w '%{size_download} %{time_total}\n' "http://127.0.0.1:$port/" >"$out/$tag.curl"
  wait "$pid"
  [ "$(awk '{print $1}' "$out/$tag.curl")" = "$size" ] || {
    echo "cpu-per-byte.sh: $tag: incomplete download: $(cat "$out/$tag.curl")" >&2; exit 1
  }
}

echo "== loopback, one flow: $rounds rounds of $size bytes, curl -o /dev/null; alcc serve --cc $cc vs serve-plain"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, $(uname -r)"
uptime
kinds=(plain alcc write)
[ -n "$before" ] && kinds+=(before)
for r in $(seq 1 "$rounds"); do
  # Each round starts with the next server: every one goes first as often as the others.
  order=("${kinds[@]:$(((r - 1) % ${#kinds[@]}))}" "${kinds[@]:0:$(((r - 1) % ${#kinds[@]}))}")
  for kind in "${order[@]}"; do download "$kind" "$kind-$r"; done
done
uptime
echo "| server | runs | Mbit/s (median) | CPU s (median) | user s | system s | CPU ms per GB | curl's CPU ms per GB | both, ms per GB |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for kind in "${kinds[@]}"; do
  tput="$(for r in $(seq 1 "$rounds"); do awk '{printf "%.1f\n", $1 * 8 / $2 / 1e6}' "$out/$kind-$r.curl"; done | median)"
  cpu="$(for r in $(seq 1 "$rounds"); do jq -r .cpu_s "$out/$kind-$r.rusage.json"; done | median)"
  user="$(for r in $(seq 1 "$rounds"); do jq -r .user_s "$out/$kind-$r.rusage.json"; done | median)"
  sys="$(for r in $(seq 1 "$rounds"); do jq -r .system_s "$out/$kind-$r.rusage.json"; done | median)"
  all="$(for r in $(seq 1 "$rounds"); do jq -r .cpu_s "$out/$kind-$r.rusage.json"; done | sort -g | tr '\n' ' ')"
  client="$(for r in $(seq 1 "$rounds"); do jq -r .cpu_s "$out/$kind-$r.client.json"; done | median)"
  both="$(for r in $(seq 1 "$rounds"); do
    jq -r .cpu_s "$out/$kind-$r.rusage.json" "$out/$kind-$r.client.json" | awk '{t += $1} END {print t}'
  done | median)"
  eval "${kind}_cpu=$cpu"
  eval "${kind}_both=$both"
  per_gb() { awk -v c="$1" -v s="$size" 'BEGIN {print c * 1000 / (s / 1e9)}'; }
  printf '| %s | %d | %.0f | %.3f | %.3f | %.3f | %.1f | %.1f | %.1f |\n' "$kind" "$rounds" "$tput" "$cpu" "$user" "$sys" \
    "$(per_gb "$cpu")" "$(per_gb "$client")" "$(per_gb "$both")"
  echo "$kind: every run's CPU s: $all" >&2
done
# shellcheck disable=SC2154 # set by eval above
awk -v pc="$plain_cpu" -v ac="$alcc_cpu" 'BEGIN {printf "alcc / plain: CPU %.2fx\n", ac / pc}'
# shellcheck disable=SC2154 # set by eval above
awk -v pc="$plain_cpu" -v wc="$write_cpu" 'BEGIN {printf "write / plain: CPU %.2fx\n", wc / pc}'
# shellcheck disable=SC2154 # set by eval above
awk -v p="$plain_both" -v a="$alcc_both" -v w="$write_both" \
  'BEGIN {printf "server and curl together: alcc / plain %.2fx, write / plain %.2fx\n", a / p, w / p}'
if [ -n "$before" ]; then
  # shellcheck disable=SC2154 # set by eval above
  awk -v pc="$plain_cpu" -v bc="$before_cpu" 'BEGIN {printf "before / plain: CPU %.2fx\n", bc / pc}'
  # shellcheck disable=SC2154 # set by eval above
  awk -v p="$plain_both" -v b="$before_both" 'BEGIN {printf "server and curl together: before / plain %.2fx\n", b / p}'
fi

if [ -n "$perf_dir" ]; then
  echo "== perf record -g, one download from each server"
  for kind in "${kinds[@]}"; do
    download "$kind" "perf-$kind" perf record -q -g -o "$perf_dir/$kind.data" --
    perf report -i "$perf_dir/$kind.data" --no-children --percent-limit 0.7 --stdio \
      --sort dso,symbol -g none 2>/dev/null | grep -v '^$' | head -60 >"$perf_dir/$kind.txt"
    echo "$perf_dir/$kind.txt"
  done
fi
echo "files: $out"

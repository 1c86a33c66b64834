#!/usr/bin/env bash
# Flow completion times (issue 10 item 5; the CCP reproduction's Figure 4): alcc's user-space
# Reno and CUBIC enforced by the kernel through the BPF underlay's follow policy, against the
# kernel's own Reno and CUBIC, on the same emulated links as experiments/ccp-fidelity-*.toml:
# a constant 12 Mbit/s with 10 ms each way and a buffer of 1 BDP (30 000 bytes) or 10 BDPs,
# and the Verizon LTE trace with a 2 MB buffer. Each run is one `alcc link` whose client
# downloads FLOWS transfers one after another, each a new TCP connection, of sizes drawn
# log-uniformly between 10 KB and 10 MB (the same sizes, in the same order, for every scheme),
# and records `size seconds` per transfer (curl's time_total: connect to last byte).
#
# Usage (root): bench/fct.sh [--quick] [OUT]     default OUT: results/fct
#   --quick: 8 flows per run instead of 40.
# Writes OUT/LINK/SCHEME.txt (size seconds per line) and prints medians per size class;
# `python3 bench/fct_summary.py OUT` prints the table of bench/fct-results.md.
# Run time: 3 links x 4 schemes x 40 flows, about 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
flows=40
if [ "${1:-}" = "--quick" ]; then flows=8; shift; fi
out="${1:-results/fct}"
alcc="${ALCC:-target/release/alcc}"
traces="${ALCC_TRACE_DIR:-$(cd .. && pwd)/shared/traces}"
[ "$(id -u)" -eq 0 ] || { echo "bench/fct.sh: the emulator needs root" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench/fct.sh: curl is not installed" >&2; exit 1; }
mkdir -p "$out"
"$alcc" trace gen --kind constant --rate 12 --duration 1 --out "$out/constant-12.trace" >/dev/null

# Sizes: log-uniform in [10^4, 10^7] bytes, fixed seed (awk's srand), the same for every run.
sizes=$(awk -v n="$flows" 'BEGIN { srand(10); for (i = 0; i < n; i++) printf "%d ", int(10 ^ (4 + 3 * rand())) }')

links=(
  "1bdp|$out/constant-12.trace|$out/constant-12.trace|30000"
  "10bdp|$out/constant-12.trace|$out/constant-12.trace|300000"
  "cell|$traces/indigo/Verizon-LTE-driving-60s.down|$traces/indigo/Verizon-LTE-driving-60s.up|2000000"
)
schemes=("tcp-reno|none|reno" "alcc-reno@alcc:follow|reno|alcc:follow" "tcp-cubic|none|cubic" "alcc-cubic@alcc:follow|cubic|alcc:follow")

for link in "${links[@]}"; do
  IFS='|' read -r lname down up queue <<<"$link"
  mkdir -p "$out/$lname"
  for scheme in "${schemes[@]}"; do
    IFS='|' read -r sname cc underlay <<<"$scheme"
    result="$out/$lname/$sname.txt"
    : >"$result"
    server="$alcc serve --port 9000 --cc $cc --underlay $underlay --http --bytes 10000000"
    client="sleep 0.5; for s in $sizes; do curl -s -o /dev/null --max-time 60 -w \"\$s %{time_total}\\n\" http://\$ALCC_SERVER:9000/bytes/\$s >> $result; done"
    "$alcc" link --uplink "$up" --downlink "$down" --delay 10 \
      --downlink-queue droptail --downlink-queue-args "bytes=$queue" \
      --uplink-queue droptail --uplink-queue-args "bytes=$queue" \
      --server "$server" -- sh -c "$client" >"$out/$lname/$sname.log" 2>&1
    echo "$lname $sname: $(wc -l <"$result") flows"
  done
done
python3 bench/fct_summary.py "$out"

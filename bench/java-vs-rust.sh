#!/usr/bin/env bash
# The Java library's sender against the Rust engine's, same controller, framed mode, through
# the emulator (root). Until the engine has the uplink (issue 17 item 3) both send from the
# accepting end to `alcc get --mode framed`: `alcc serve --mode framed --underlay U` and
# `java -cp java/target/alcc-upload.jar org.alcc.tools.Send`. Java cannot choose its socket's
# kernel congestion control, so it gets the system default (bbr here); compare with U = bbr.
# Usage: bench/java-vs-rust.sh [TRACE] [RUNS] [UNDERLAY] [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-${ALCC_TRACE_DIR:-../shared/traces}/alcc-paper/CampusWalk.trace}
runs=${2:-3}
underlay=${3:-bbr}
out=${4:-results/java-vs-rust}
mkdir -p "$out"
for run in $(seq 1 "$runs"); do
  for cc in copa mdi; do
    for who in rust java; do
      if [ "$who" = rust ]; then
        server="./target/release/alcc serve --port 9000 --cc $cc --mode framed --underlay $underlay --bytes 100000000000 --seconds 30"
      else
        server="java -cp java/target/alcc-upload.jar org.alcc.tools.Send --port 9000 --seconds 30 --cc $cc"
      fi
      log="$out/$who-$cc-$run.log"
      ./target/release/alcc link --uplink "$trace" --downlink "$trace" --delay 10 --downlink-queue droptail \
        --downlink-queue-args bytes=2000000 --downlink-log "$log" --server "$server" \
        -- sh -c 'sleep 1.5; ./target/release/alcc get --mode framed $ALCC_SERVER:9000' >"$out/$who-$cc-$run.out" 2>&1
      echo "$who $cc run $run: $(./target/release/alcc analyze "$log" --json | jq -c '{tput: .throughput_mbps, p95: .delay_p95_ms}')"
    done
  done
done

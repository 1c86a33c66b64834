#!/usr/bin/env bash
# Many concurrent flows in one process (issue 18 item 2): raises the open-files limit to the
# hard limit and runs `cargo bench -p alcc --bench flows` (crates/alcc/benches/flows.rs): FLOWS
# alcc streams in one process, every transfer checked byte-identical by a client process; CPU
# and RSS per flow, the driver's step and wake-up latency percentiles. CPU figures need a quiet
# machine: `flock /work/locks/emu.lock flock /work/locks/quiet.lock bench/flows.sh` on a shared
# one; `uptime` is printed before and after.
#
# Usage: bench/flows.sh [FLOWS [BYTES]]   (default 10000 flows of 65536 bytes)
set -euo pipefail
cd "$(dirname "$0")/.."
export ALCC_BENCH_FLOWS="${1:-10000}" ALCC_BENCH_BYTES="${2:-65536}"
# One descriptor per flow here, plus the driver's and the listener's (the client is another
# process with its own limit).
want=$((ALCC_BENCH_FLOWS + 100))
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
  echo "flows.sh: $ALCC_BENCH_FLOWS flows need ulimit -n >= $want; the hard limit is $(ulimit -Hn) (raise it as root or in /etc/security/limits.conf)" >&2
  exit 1
fi
cargo bench -q -p alcc --bench flows --no-run
uptime
cargo bench -q -p alcc --bench flows
uptime

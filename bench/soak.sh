#!/usr/bin/env bash
# The soak (issue 18 item 4; crates/alcc-cli/benches/soak): transfers of random sizes (0 B-10 MB,
# seeded, log-uniform) from one server process over loopback and through the link emulator
# (96 Mbit/s, 5 ms each way, 1 % loss each way), random client resets and aborts, a mix of
# controllers and of the kernel, framed and udp modes. Fails when a completed transfer is not
# byte-identical, when a transfer the client ended early is not an error at the server (or the
# server panics), or when the server's descriptors or RSS grow from the sample after the first
# thousand transfers (a third of a shorter run) to the last.
#
# Usage (root: the emulator):
#   bench/soak.sh --quick            # CI: 300 transfers (200 loopback, 100 emulated), about 35 s
#   bench/soak.sh [ARGS]             # full: 10 000 (7 000 loopback, 3 000 emulated); figures in
#                                    # bench/soak-results.md; on a shared machine under
#                                    # `flock /work/locks/emu.lock`
# ARGS: --seed N, --loopback N, --emulated N (0: loopback alone, unprivileged), --loopback-lanes N,
# --emulated-lanes N, --max-size BYTES, --block N, --rate-mbps R, --delay-ms D, --loss P,
# --series FILE (descriptors and RSS after each block, CSV).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/skip.sh
if [ "$(id -u)" -ne 0 ] && ! printf '%s\n' "$@" | grep -qx -- '--emulated'; then
  skip bench/soak.sh "needs root for the link emulator (network namespaces, TUN devices); --emulated 0 runs loopback alone"
fi
# Each lane holds a listener and a UDP port; each transfer in flight a socket on each side.
ulimit -n "$(ulimit -Hn)"
${CARGO:-cargo} bench -q -p alcc-cli --bench soak --no-run
uptime
${CARGO:-cargo} bench -q -p alcc-cli --bench soak -- "$@"
uptime

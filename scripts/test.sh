#!/usr/bin/env bash
# `make test` after lint: every Rust test (release), the report's tests, the Java library's, and
# the uplink sweep and the paper's experiment in their --quick forms. Whatever happens, it ends with one line listing
# the tests that skipped and why (or "skipped: none"): every skip goes to $ALCC_SKIP_LOG
# (crates/alcc-testenv, python/tests/skip_policy.py, scripts/skip.sh). Under CI=true (.ci/run)
# a skip is a failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
export ALCC_SKIP_LOG="$PWD/target/skipped.log"
: >"$ALCC_SKIP_LOG"
trap './scripts/skipped.sh "$ALCC_SKIP_LOG"' EXIT
# The 1000-flow test needs about three descriptors per flow.
ulimit -n "$(ulimit -Hn)"
${CARGO:-cargo} test --workspace --release
# The engine's optional tokio feature (AsyncRead/AsyncWrite over the readiness descriptor).
${CARGO:-cargo} test --release -p alcc --features tokio --test tokio_server
.venv/bin/python -m pytest -q python/tests
(cd java && ${MVN:-mvn -B -q} verify)
# The soak's CI form (bench/soak.sh: 300 transfers over loopback and the emulator, about 35 s).
./bench/soak.sh --quick
./scripts/test-uplink-quick.sh
./scripts/test-paper-quick.sh

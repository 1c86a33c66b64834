#!/usr/bin/env bash
# Runs alcc's cargo-fuzz (libFuzzer) targets (fuzz/, fuzz/README.md) on stable Rust with
# `cargo fuzz run -s none` (no sanitizer: -Zsanitizer is the only part of cargo-fuzz that needs
# nightly; Rust code is memory-safe without it, and a panic or failed assertion is a finding).
#
# Usage: scripts/fuzz.sh [--quick | --seconds S] [TARGET...]
#   --quick      every target for 5 s (`make fuzz-quick`, part of `make test`: about 40 s
#                after the build)
#   --seconds S  every target for S seconds (default 300: the long run)
#   TARGET...    only these targets (default: all, `cargo fuzz list`)
# Environment: ALCC_FUZZ_OUT (corpus, crash artifacts and logs: DIR/TARGET/...; default
# target/fuzz-runs). Prints per target the executions, the coverage (libFuzzer's `cov:`
# edges) and the findings, then exits non-zero if any target found something: the input is in
# ALCC_FUZZ_OUT/TARGET/artifacts/ (replay it with `cargo fuzz run -s none TARGET FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=300
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) seconds=5 ;;
    --seconds) seconds="$2"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
command -v cargo-fuzz >/dev/null || {
  echo "fuzz.sh: cargo-fuzz is missing: scripts/setup.sh fuzz installs it (cargo install cargo-fuzz)" >&2
  exit 1
}
out="${ALCC_FUZZ_OUT:-$PWD/target/fuzz-runs}"
mkdir -p "$out"
# One target directory per checkout: the fuzz workspace builds into target/fuzz.
fuzz=(cargo fuzz)
common=(-s none --fuzz-dir fuzz --target-dir "$PWD/target/fuzz")
"${fuzz[@]}" build "${common[@]}"
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <("${fuzz[@]}" list --fuzz-dir fuzz)

found=0
printf '| target | seconds | executions | exec/s | coverage (edges) | corpus | findings |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: | --- |\n'
for t in "${targets[@]}"; do
  dir="$out/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  status=0
  # The wire targets start from the frame headers (magic, version, type, lengths).
  dict=()
  case "$t" in wire_decoder|udp_datagram) dict=(-dict="$PWD/fuzz/wire.dict") ;; esac
  "${fuzz[@]}" run "${common[@]}" "$t" "$dir/corpus" -- "${dict[@]}" -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" -rss_limit_mb=2048 -timeout=10 \
    >"$dir/log" 2>&1 || status=$?
  execs="$(awk '/stat::number_of_executed_units/ {print $2}' "$dir/log" | tail -1)"
  rate="$(awk '/stat::average_exec_per_sec/ {print $2}' "$dir/log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | awk '{print $2}' || true)"
  corpus="$(find "$dir/corpus" -type f | wc -l)"
  findings="$(find "$dir/artifacts" -type f | wc -l)"
  if [ "$status" -ne 0 ] || [ "$findings" -gt 0 ]; then
    found=1
    what="$findings (exit $status): $(grep -m1 -E 'panicked|ERROR: libFuzzer' "$dir/log" || echo see log)"
  else
    what=none
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "$corpus" "$what"
done
echo "logs, corpora, artifacts: $out"
exit "$found"

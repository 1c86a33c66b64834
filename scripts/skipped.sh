#!/usr/bin/env bash
# Prints one line: the tests a run skipped and why (the lines of the skip log, LOG or
# $ALCC_SKIP_LOG), or that it skipped none. Used at the end of `make test` (scripts/test.sh).
set -euo pipefail
log="${1:-${ALCC_SKIP_LOG:-}}"
if [ -z "$log" ] || [ ! -s "$log" ]; then
  echo "skipped: none"
  exit 0
fi
sort -u "$log" | awk -F '\t' '
  { items[NR] = $1 " (" $2 ")" }
  END {
    line = "skipped: " NR " test" (NR == 1 ? "" : "s") ": "
    for (i = 1; i <= NR; i++) line = line (i > 1 ? "; " : "") items[i]
    print line
  }'

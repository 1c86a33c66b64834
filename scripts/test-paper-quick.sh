#!/usr/bin/env bash
# CI's end-to-end check of the harness and the report: `experiments/paper.toml --quick` (the
# paper's CampusWalk and highwayGold traces, every scheme once for 8 s, about 3 minutes), then
# `alcc-report` with the headless-Chromium render check and a screenshot.
# Skips visibly (scripts/skip.sh: a failure under CI=true) when not root (the emulator needs
# namespaces) or when the paper's traces are absent ($ALCC_TRACE_DIR/alcc-paper, default
# ../shared/traces beside the repository). Output: target/paper-quick/ (report.html, report.png).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/skip.sh
traces="${ALCC_TRACE_DIR:-$(cd .. && pwd)/shared/traces}/alcc-paper"
if [ "$(id -u)" -ne 0 ]; then
  skip test-paper-quick "needs root (the emulator makes network namespaces)"
fi
if [ ! -f "$traces/CampusWalk.trace" ] || [ ! -f "$traces/highwayGold.trace" ]; then
  skip test-paper-quick "the paper's traces are not in $traces (set ALCC_TRACE_DIR)"
fi
out=target/paper-quick
target/release/alcc experiment run experiments/paper.toml --quick --out "$out" --force
.venv/bin/alcc-report "$out" --check-render --screenshot "$out/report.png"
# Every scheme ran on both traces, and each alcc-X has its udp-X beside it.
.venv/bin/python - "$out/results.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 22, f"expected 2 traces x 11 schemes, got {len(runs)} runs"
bad = [r for r in runs if r["status"] != "ok"]
assert not bad, f"failed runs: {bad}"
for trace in ("CampusWalk", "highwayGold"):
    for cc in ("verus", "copa", "sprout"):
        for family in ("alcc", "udp"):
            row = [r for r in runs if r["trace"] == trace and r["scheme"] == f"{family}-{cc}"]
            assert row and row[0]["throughput_mbps"] > 0.5, f"{trace} {family}-{cc}: {row}"
    # alcc's BPF underlay (issue 10).
    for cc in ("verus", "copa"):
        row = [r for r in runs if r["trace"] == trace and r["scheme"] == f"alcc-{cc}@alcc"]
        assert row and row[0]["throughput_mbps"] > 0.5, f"{trace} alcc-{cc}@alcc: {row}"
print("test-paper-quick: 22 runs ok, report rendered:", sys.argv[1].replace("results.json", "report.html"))
PY

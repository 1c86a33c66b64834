#!/usr/bin/env bash
# CI's end-to-end check of the uplink direction (issue 17): `experiments/uplink.toml --quick`
# (the synthetic trace, one 6 s upload each by the Java uploader and the Rust client with MDI
# and by curl -T, about 40 s), then `alcc-report` on it (its uplink table). It runs after
# `mvn verify`, which builds java/target/alcc-upload.jar: the Java client's one emulator run.
# Skips visibly (scripts/skip.sh: a failure under CI=true) when not root (the emulator needs
# namespaces) or when the jar is not built. Output: target/uplink-quick/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/skip.sh
if [ "$(id -u)" -ne 0 ]; then
  skip test-uplink-quick "needs root (the emulator makes network namespaces)"
fi
if [ ! -f java/target/alcc-upload.jar ]; then
  skip test-uplink-quick "java/target/alcc-upload.jar is not built (make build, or cd java && mvn package)"
fi
out=target/uplink-quick
target/release/alcc experiment run experiments/uplink.toml --quick --out "$out" --force
.venv/bin/alcc-report "$out" >/dev/null
.venv/bin/python - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
runs = json.load(open(out / "results.json"))["runs"]
schemes = [r["scheme"] for r in runs]
assert schemes == ["java-mdi@reno", "alcc-mdi@reno", "tcp-reno"], schemes
for r in runs:
    assert r["status"] == "ok" and r["direction"] == "up", r
    assert r["throughput_mbps"] > 0.5, r
    assert (out / r["dir"] / "uplink.log").is_file(), r
assert "Uploads" in (out / "report.md").read_text(), "the report's uplink section"
print("test-uplink-quick: 3 uploads ok (Java, Rust, curl), report:", out / "report.html")
PY

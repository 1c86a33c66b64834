"""Shared fixtures: crafted experiment directories and, from real `alcc sim` runs, a simulated one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from alcc_report.load import RESULT_COLUMNS

import make_fixture
from skip_policy import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401  (the skip policy's hooks)


def write_results(root: Path, rows: list[dict]) -> Path:
    """Writes results.csv with the contract's header (and ``label`` when a row has one); missing
    cells are empty."""
    root.mkdir(parents=True, exist_ok=True)
    columns = RESULT_COLUMNS + (["label"] if any("label" in r for r in rows) else [])
    with (root / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in columns})
    return root / "results.csv"


def run_row(trace: str, scheme: str, run: int = 0, status: str = "ok", **metrics) -> dict:
    """A results.csv row for ``scheme`` (family, cc, underlay, mode derived from the name)."""
    s = make_fixture.Scheme(scheme)
    row = {
        "trace": trace,
        "scheme": scheme,
        "family": s.family,
        "cc": s.cc,
        "underlay": s.underlay,
        "mode": s.mode,
        "run": run,
        "status": status,
        "dir": f"runs/{trace}/{scheme}/run-{run}",
    }
    if status == "ok":
        row.update(duration_s=10.0, capacity_mbps=10.0, throughput_mbps=8.0, utilization=0.8, loss=0.0)
        row.update(delay_p50_ms=20.0, delay_p95_ms=40.0, delay_p99_ms=50.0, delay_mean_ms=22.0, cpu_s=1.0)
    row.update(metrics)
    return row


def write_series(run_dir: Path, throughput: list[float], delay: list[float | None]) -> None:
    """A series.csv with 500 ms bins, capacity 10 Mbit/s."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = ["start_s,capacity_mbps,throughput_mbps,sent_mbps,delay_p50_ms,delay_p95_ms,delay_p99_ms"]
    for i, (t, d) in enumerate(zip(throughput, delay, strict=True)):
        cell = "" if d is None else f"{d}"
        lines.append(f"{i * 0.5:.3f},10,{t},{t},{cell},{cell},{cell}")
    (run_dir / "series.csv").write_text("\n".join(lines) + "\n")


def write_telemetry(run_dir: Path, samples: list[tuple[float, int | None, int | None]]) -> None:
    """telemetry.jsonl lines (t, window, kernel_cwnd) of flow 1."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"t": t, "flow": 1, "cc": "copa", "window": w, "kernel_cwnd": k, "in_flight": 0})
        for t, w, k in samples
    ]
    (run_dir / "telemetry.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def alcc_bin() -> Path:
    """The alcc binary, or skip."""
    path = make_fixture.alcc_binary()
    if path is None:
        pytest.skip("target/release/alcc is missing: build it with `cargo build --release -p alcc-cli`")
    return path


@pytest.fixture(scope="session")
def simulated(tmp_path_factory, alcc_bin) -> Path:
    """A fixture experiment from real `alcc sim` runs, with one scheme whose runs all fail."""
    out = tmp_path_factory.mktemp("simulated")
    schemes = ["tcp-cubic", "alcc-copa@cubic", "udp-copa", "alcc-verus@cubic", "udp-verus"]
    return make_fixture.build_simulated(out, alcc_bin, schemes, runs=2, duration=10, failing=("udp-verus",))

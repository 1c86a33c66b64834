"""The ``alcc`` Python package's simulator (crates/alcc-py): ``alcc.sim`` against ``alcc sim``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import make_fixture
import skip_policy

alcc = pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")


def trace_path(name: str) -> Path:
    """A shared paper trace; skips (visibly) when the shared traces are not here."""
    path = skip_policy.trace_dir() / "alcc-paper" / name
    if not path.is_file():
        pytest.skip(f"{path} not found (set ALCC_TRACE_DIR to the shared traces)")
    return path


def test_summary_fields_match_the_cli():
    binary = make_fixture.alcc_binary()
    if binary is None:
        pytest.skip("target/release/alcc not built (cargo build --release)")
    got = alcc.sim(cc="copa", rate_mbps=12.0, delay_ms=15, duration_s=5, seed=3)
    cli = subprocess.run(
        [binary, "sim", "--rate", "12", "--cc", "copa", "--delay", "15", "--duration", "5", "--seed", "3"],
        check=True,
        capture_output=True,
        text=True,
    )
    want = json.loads(cli.stdout)
    assert set(got.summary) == set(want)
    for name, value in want.items():
        assert getattr(got, name) == value, name


def test_trace_run_and_tables():
    result = alcc.sim(trace=trace_path("City.trace"), cc="reno", delay_ms=20, duration_s=10, seed=1)
    assert 0 < result.throughput_mbps <= result.capacity_mbps
    assert result.delay_p95_ms >= result.propagation_delay_ms

    packets = result.packets.to_pandas()
    # The summary counts the packets whose fate is known; the table has the queued ones too.
    in_flight = packets.outcome == alcc.OUTCOMES.index("in_flight")
    assert (~in_flight).sum() == result.packets_sent
    assert packets.departed_s.notna().sum() == result.packets_departed
    assert list(packets.columns) == [
        "seq", "bytes", "sent_s", "departed_s", "arrived_s", "delay_ms", "outcome",
    ]  # fmt: skip
    delivered = packets[packets.outcome == alcc.OUTCOMES.index("delivered")]
    assert delivered.delay_ms.notna().all()
    assert packets.loc[packets.outcome != 1, "delay_ms"].isna().all()
    # The p95 of the delivered packets' delays is the summary's (nearest rank, as alcc sim).
    delays = np.sort(delivered.delay_ms.to_numpy())
    rank = int(np.ceil(0.95 * len(delays))) - 1
    assert delays[rank] == pytest.approx(result.delay_p95_ms, abs=0.01)

    series = pd.DataFrame(result.series)
    assert series.start_s.is_monotonic_increasing
    assert len(series) >= 19
    windows = result.windows.to_numpy()
    assert windows.dtype.names == ("t_s", "window_bytes", "pacing_rate")
    assert (windows["window_bytes"] > 0).all()
    assert result.acks.rows > 0


def test_columns_are_views_not_copies():
    result = alcc.sim(cc="cubic", rate_mbps=20, duration_s=2)
    column = result.packets["sent_s"]
    assert isinstance(column.base, bytes)
    assert not column.flags.writeable


def test_bad_spec_is_a_value_error_with_the_rust_message():
    with pytest.raises(ValueError, match="nosuchcc"):
        alcc.sim(cc="nosuchcc", rate_mbps=10, duration_s=1)
    with pytest.raises(ValueError, match="delta"):
        alcc.sim(cc="copa:delta=abc", rate_mbps=10, duration_s=1)
    with pytest.raises(ValueError, match="queue"):
        alcc.sim(cc="copa", rate_mbps=10, duration_s=1, queue="packets=lots")
    with pytest.raises(ValueError, match="rate_mbps"):
        alcc.sim(cc="copa", rate_mbps=-1, duration_s=1)


def test_missing_trace_is_file_not_found(tmp_path):
    missing = tmp_path / "none.trace"
    with pytest.raises(FileNotFoundError) as info:
        alcc.sim(cc="copa", trace=missing, duration_s=1)
    assert info.value.filename == str(missing)


def test_bad_trace_names_the_line(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("1\n2\nthree\n")
    with pytest.raises(ValueError, match=r"bad.trace:3"):
        alcc.sim(cc="copa", trace=bad, duration_s=1)

"""Controllers written in Python (``alcc.Controller``) in the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

import skip_policy

alcc = pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")


def trace_path(name: str) -> Path:
    """A shared trace (``mahimahi/...``); skips (visibly) when the shared traces are not here."""
    path = skip_policy.trace_dir() / name
    if not path.is_file():
        pytest.skip(f"{path} not found (set ALCC_TRACE_DIR to the shared traces)")
    return path


class Reno(alcc.Controller):
    """TCP Reno (RFC 5681) with byte counting (RFC 3465, L = 2 SMSS) and one reduction per
    loss episode (RFC 6582): the rules of crates/alcc-cc/src/reno.rs, written again in Python."""

    def __init__(self, **config):
        super().__init__(**config)
        self.cwnd = 3 * self.mss if 1095 < self.mss <= 2190 else (2 if self.mss > 2190 else 4) * self.mss
        self.ssthresh = float("inf")
        self.bytes_acked = 0
        self.highest_sent = -1
        self.boundary = None
        self.recovering = False

    def on_sent(self, now, packet):
        self.highest_sent = max(self.highest_sent, packet.seq)

    def on_ack(self, now, ack):
        if self.recovering and ack.seq > self.boundary:
            self.recovering = False
        if self.recovering:
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += min(ack.bytes, 2 * self.mss)
        else:
            self.bytes_acked += ack.bytes
            if self.bytes_acked >= self.cwnd:
                self.bytes_acked -= self.cwnd
                self.cwnd += self.mss

    def on_loss(self, now, loss):
        if self.boundary is not None and loss.seq <= self.boundary:
            return
        self.boundary = max(self.highest_sent, loss.seq)
        self.recovering = True
        self.ssthresh = max((loss.bytes_in_flight + loss.bytes) // 2, 2 * self.mss)
        self.cwnd = self.ssthresh
        self.bytes_acked = 0

    def decision(self):
        return alcc.Decision(window=self.cwnd)


@pytest.mark.parametrize(
    "link",
    [{"rate_mbps": 12.0}, {"trace": "Verizon-LTE"}],
    ids=["constant-12mbps", "verizon-lte"],
)
def test_python_reno_reproduces_rust_reno(link):
    if "trace" in link:
        link = {"trace": trace_path("mahimahi/Verizon-LTE-short.down")}
    settings = dict(link, delay_ms=20, queue="packets=100", duration_s=30, seed=2)
    rust = alcc.sim(cc="reno", **settings)
    python = alcc.sim(cc=Reno, **settings)
    assert rust.packets_sent > 1000
    assert rust.loss > 0, "the queue must overflow for the comparison to cover on_loss"
    assert python.throughput_mbps == pytest.approx(rust.throughput_mbps, rel=0.02)
    assert python.delay_p95_ms == pytest.approx(rust.delay_p95_ms, rel=0.02)


def test_a_controller_that_raises_fails_its_run_with_the_traceback():
    class Broken(alcc.Controller):
        def on_ack(self, now, ack):
            if ack.seq == 50:
                raise ZeroDivisionError("deliberate, at seq 50")

        def decision(self):
            return alcc.Decision(window=20 * self.mss)

    with pytest.raises(alcc.ControllerError) as info:
        alcc.sim(cc=Broken, rate_mbps=10, duration_s=2)
    text = str(info.value)
    assert "ZeroDivisionError: deliberate, at seq 50" in text
    assert "in on_ack" in text, "the traceback names the hook"
    # The next run (another flow) is unaffected.
    assert alcc.sim(cc="reno", rate_mbps=10, duration_s=2).throughput_mbps > 5


def test_decision_must_be_a_decision():
    class Wrong(alcc.Controller):
        def decision(self):
            return 10_000

    with pytest.raises(TypeError, match=r"alcc\.Decision, not int"):
        alcc.sim(cc=Wrong, rate_mbps=10, duration_s=1)


def test_timer_and_pacing():
    class Paced(alcc.Controller):
        """A fixed rate, changed by a timer every 100 ms."""

        def __init__(self, **config):
            super().__init__(**config)
            self.rate = 500_000.0
            self.due = 0.1
            self.fired = 0

        def on_timer(self, now):
            self.fired += 1
            self.due = now + 0.1

        def next_timer(self):
            return self.due

        def decision(self):
            return alcc.Decision(window=1_000_000, pacing_rate=self.rate)

    controller = Paced(mss=alcc.PACKET_BYTES, seed=1)
    result = alcc.sim(cc=controller, rate_mbps=20, duration_s=3)
    assert 25 <= controller.fired <= 31
    # 500 kB/s = 4 Mbit/s, well under the link's 20.
    assert result.throughput_mbps == pytest.approx(4.0, rel=0.05)


def test_registered_and_imported_names():
    alcc.register("test-reno", Reno)
    by_name = alcc.sim(cc="test-reno", rate_mbps=10, duration_s=2)
    by_path = alcc.sim(cc=f"py:{__name__}:Reno", rate_mbps=10, duration_s=2)
    assert by_name.throughput_mbps == by_path.throughput_mbps > 0
    assert by_name.cc == "test-reno"
    with pytest.raises(TypeError):
        alcc.register("nope", int)


def test_decision_validates():
    assert alcc.Decision(window=3000.4) == alcc.Decision(window=3000)
    with pytest.raises(ValueError, match="window"):
        alcc.Decision(window=-1)
    with pytest.raises(ValueError, match="pacing_rate"):
        alcc.Decision(window=1, pacing_rate=float("nan"))


@pytest.mark.parametrize("name", ["vegas", "toy-rate"])
def test_the_examples_fill_a_constant_link_with_a_short_queue(name):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))
    import toy_rate  # noqa: F401
    import vegas  # noqa: F401

    run = alcc.sim(cc=name, rate_mbps=12, delay_ms=20, duration_s=20, seed=1)
    assert run.utilization > 0.8
    # Both aim at a queue of a few packets: 1 ms of queue is one 1500-byte packet at 12 Mbit/s.
    assert run.delay_p95_ms < run.propagation_delay_ms + 60

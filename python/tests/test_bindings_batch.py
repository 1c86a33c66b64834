"""Batched delivery of a Python controller's ACKs (``delivery="batch:acks=N"`` / ``"batch:rtt"``):
fewer ``on_ack`` calls, the same totals."""

from __future__ import annotations

import pytest

alcc = pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")


class Counting(alcc.Controller):
    """A fixed window (so the run does not depend on how ACKs arrive) that adds up what it hears."""

    def __init__(self, **config):
        super().__init__(**config)
        self.calls = self.acks = self.bytes = self.delivered = 0
        self.min_rtt = float("inf")
        self.losses = 0
        self.acks_at = {}  # delivered -> ACKs heard so far

    def on_ack(self, now, ack):
        self.calls += 1
        self.acks += ack.count
        self.bytes += ack.bytes
        self.delivered = ack.delivered
        self.acks_at[ack.delivered] = self.acks
        assert ack.min_rtt <= ack.rtt
        self.min_rtt = min(self.min_rtt, ack.min_rtt)

    def on_loss(self, now, loss):
        self.losses += 1

    def decision(self):
        return alcc.Decision(window=40 * self.mss)


def run(delivery: str) -> tuple[Counting, object]:
    controller = Counting(mss=1500, seed=1)
    result = alcc.sim(
        cc=controller, rate_mbps=12, delay_ms=20, queue="packets=30", duration_s=10, delivery=delivery
    )
    return controller, result


def test_batches_see_the_same_totals_in_fewer_calls():
    each, each_run = run("inline")
    assert each.calls == each.acks > 5000 and each.losses > 0  # the queue overflows: losses interleave
    for delivery, most_calls in [
        ("batch:acks=8", each.acks // 8 + each.losses + 2),
        ("batch:rtt", each.acks // 20),
    ]:
        batched, batched_run = run(delivery)
        assert batched_run.throughput_mbps == each_run.throughput_mbps, delivery
        # The same totals up to the last batch delivered (a batch still open when the run ends
        # is not delivered): bytes summed = delivered, and as many ACKs as inline had heard then.
        assert batched.bytes == batched.delivered, delivery
        assert batched.acks == each.acks_at[batched.delivered], delivery
        assert 0 <= each.acks - batched.acks < (8 if delivery == "batch:acks=8" else 200), delivery
        assert batched.min_rtt == each.min_rtt, delivery
        assert batched.losses == each.losses, delivery
        assert batched.calls <= most_calls, f"{delivery}: {batched.calls} calls for {each.acks} ACKs"


def test_bad_deliveries_are_value_errors():
    for bad in ["batch:acks=0", "batch:every", "sometimes"]:
        with pytest.raises(ValueError, match="acks=N"):
            alcc.sim(cc=Counting, rate_mbps=12, duration_s=1, delivery=bad)
    with pytest.raises(ValueError, match="streams"):
        alcc.sim(cc=Counting, rate_mbps=12, duration_s=1, delivery="thread")


def test_a_batched_python_controller_serves_a_stream():
    import threading

    n = 20_000_000
    with alcc.Listener("127.0.0.1", 0, cc=Counting, delivery="batch:acks=4") as listener:
        host, port = listener.getsockname()
        got = bytearray()

        def read():
            import socket

            with socket.create_connection((host, port)) as s:
                while chunk := s.recv(1 << 20):
                    got.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        stream, _ = listener.accept()
        with stream:
            stream.sendall(bytes(range(256)) * (n // 256))
        reader.join(60)
    assert len(got) == n // 256 * 256

"""The ``alcc`` package's streams over loopback: alcc.Listener, alcc.connect, alcc.Stream."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import threading
import time

import pytest

alcc = pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")

BLOCK = 1 << 20


def pattern(index: int) -> bytes:
    """Block ``index`` of the test stream: distinct per block, so a lost or repeated block shows."""
    return index.to_bytes(8, "little") * (BLOCK // 8)


def serve(listener, blocks: int, errors: list) -> None:
    """Accepts one connection and sends ``blocks`` blocks through it, then closes."""
    try:
        stream, _ = listener.accept()
        with stream:
            for i in range(blocks):
                stream.sendall(pattern(i))
    except BaseException as e:  # reported by the test
        errors.append(e)


def receive(port: int) -> tuple[int, str]:
    """Reads everything from a plain TCP connection: (bytes, sha256)."""
    digest = hashlib.sha256()
    total = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        while chunk := sock.recv(1 << 20):
            digest.update(chunk)
            total += len(chunk)
    return total, digest.hexdigest()


def expected(blocks: int) -> str:
    digest = hashlib.sha256()
    for i in range(blocks):
        digest.update(pattern(i))
    return digest.hexdigest()


def transfer(cc, blocks: int, **options) -> float:
    """Sends ``blocks`` MiB under ``cc`` to a plain TCP reader; asserts it arrived intact, returns
    the seconds it took."""
    errors: list = []
    with alcc.Listener("127.0.0.1", 0, cc=cc, **options) as listener:
        sender = threading.Thread(target=serve, args=(listener, blocks, errors))
        sender.start()
        start = time.monotonic()
        total, digest = receive(listener.port)
        took = time.monotonic() - start
        sender.join(60)
    assert not errors, errors
    assert total == blocks * BLOCK
    assert digest == expected(blocks)
    return took


def test_one_gib_intact_with_a_rust_controller():
    took = transfer("copa", 1024)
    print(f"1 GiB under copa in {took:.1f} s")


class Window(alcc.Controller):
    """A Python controller with a fixed window of 200 packets, reading every acknowledgement."""

    def __init__(self, **config):
        super().__init__(**config)
        self.acks = 0

    def on_ack(self, now, ack):
        self.acks += 1

    def decision(self):
        return alcc.Decision(window=200 * self.mss)


@pytest.mark.parametrize("delivery", ["inline", "thread"])
def test_hundred_mb_intact_with_a_python_controller(delivery):
    took = transfer(Window, 100, delivery=delivery)
    print(f"100 MiB under a Python controller ({delivery}) in {took:.1f} s")


class Unbounded(alcc.Controller):
    """No window and no pacing, and no use for RTT samples: the engine sends it no stamped
    records, and still reports what was acknowledged (from TCP_INFO)."""

    rtt_samples = "not-needed"

    def __init__(self, **config):
        super().__init__(**config)
        self.acked = 0

    def on_ack(self, now, ack):
        self.acked += ack.bytes

    def decision(self):
        return alcc.Decision(window=2**64 - 1)


@pytest.mark.parametrize("delivery", ["inline", "thread"])
def test_a_python_controller_that_needs_no_rtt_samples_sends_intact_and_hears_its_acks(delivery):
    errors: list = []
    with alcc.Listener("127.0.0.1", 0, cc=Unbounded, delivery=delivery) as listener:
        controllers: list = []
        infos: list = []

        def serve_and_keep() -> None:
            try:
                stream, _ = listener.accept()
                controllers.append(stream.controller)
                with stream:
                    for i in range(64):
                        stream.sendall(pattern(i))
                    stream.flush()
                    infos.append(stream.info())
            except BaseException as e:  # reported by the test
                errors.append(e)

        sender = threading.Thread(target=serve_and_keep)
        sender.start()
        total, digest = receive(listener.port)
        sender.join(60)
    assert not errors, errors
    assert (total, digest) == (64 * BLOCK, expected(64))
    assert controllers[0].acked > 0
    # Its chunks went out as plain writes: no ACK timestamps were asked for.
    assert infos[0]["chunks_sent"] > 0
    assert infos[0]["ack_stamps"] == 0


def test_rtt_samples_must_be_one_the_contract_names():
    class Misspelt(Unbounded):
        rtt_samples = "none"

    with pytest.raises(ValueError, match='rtt_samples must be "per-packet" or "not-needed", got "none"'):
        alcc.sim(cc=Misspelt, rate_mbps=10, duration_s=1)


@pytest.mark.parametrize("delivery", ["inline", "thread"])
def test_a_python_controller_that_raises_fails_its_flow_only(delivery):
    class Broken(alcc.Controller):
        def on_ack(self, now, ack):
            raise KeyError("deliberate")

        def decision(self):
            return alcc.Decision(window=50 * self.mss)

    errors: list = []
    with (
        alcc.Listener("127.0.0.1", 0, cc=Broken, delivery=delivery) as bad,
        alcc.Listener("127.0.0.1", 0, cc="reno") as good,
    ):
        failing = threading.Thread(target=serve, args=(bad, 64, errors))
        failing.start()
        with socket.create_connection(("127.0.0.1", bad.port)) as sock:
            # The other flow, at the same time, in the same process, finishes intact.
            assert transfer_on(good, 16)
            sock.settimeout(30)
            # The failed flow ends with a reset (or a FIN), and well before its 64 MiB.
            received = 0
            try:
                while chunk := sock.recv(1 << 20):
                    received += len(chunk)
            except ConnectionResetError:
                pass
            assert received < 64 * BLOCK
        failing.join(60)
    assert len(errors) == 1
    assert isinstance(errors[0], alcc.ControllerError)
    assert "KeyError: 'deliberate'" in str(errors[0])
    assert "in on_ack" in str(errors[0])


def transfer_on(listener, blocks: int) -> bool:
    errors: list = []
    sender = threading.Thread(target=serve, args=(listener, blocks, errors))
    sender.start()
    total, digest = receive(listener.port)
    sender.join(60)
    assert not errors, errors
    return total == blocks * BLOCK and digest == expected(blocks)


def test_closed_stream_and_bad_spec_raise():
    with pytest.raises(ValueError, match="nosuchcc"):
        alcc.Listener("127.0.0.1", 0, cc="nosuchcc")
    with pytest.raises(ValueError, match="nosuchcc"):
        alcc.connect("127.0.0.1", 9, cc="nosuchcc")
    with alcc.Listener("127.0.0.1", 0, cc="reno") as listener:
        port = listener.port
        client = alcc.connect("127.0.0.1", port, cc="reno")
        server, peer = listener.accept()
        assert peer[0] == "127.0.0.1"
        client.sendall(b"hello")
        assert server.recv(5) == b"hello"
        client.close(timeout=5)
        client.close()  # twice is fine
        with pytest.raises(OSError) as info:
            client.send(b"x")
        assert info.value.errno == 9
        server.close(timeout=5)
    with pytest.raises(ConnectionRefusedError):
        alcc.connect("127.0.0.1", port, cc="reno")


def test_info_and_nonblocking():
    with alcc.Listener("127.0.0.1", 0, cc="copa") as listener:
        client = alcc.connect("127.0.0.1", listener.port, cc="fixed:window=10")
        server, _ = listener.accept()
        info = client.info()
        assert info["controller"].startswith("fixed")
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.recv(10)
        # Nobody reads the client's side: its queue fills and a non-blocking send says so.
        client.setblocking(False)
        with pytest.raises(BlockingIOError):
            while True:
                client.send(b"x" * 65536)
        # What the client queued will never be read: both reset.
        client.abort()
        server.abort()
        assert client.closed and server.closed


def _proc_ipv4(name: str) -> str:
    with open(f"/proc/sys/net/ipv4/{name}") as f:
        return f.read().strip()


def test_sockets_start_under_the_underlay_not_the_host_default():
    """alcc.Listener and alcc.connect set the underlay on their sockets before the handshake, so
    neither side starts under the host's default (a socket started under bbr keeps the kernel's
    pacing after the switch to the underlay); ``info()["prior_congestion"]`` says what each
    started under. Every allowed name is tried, so one of them differs from the default."""
    allowed = _proc_ipv4("tcp_allowed_congestion_control").split()
    default = _proc_ipv4("tcp_congestion_control")
    if all(name == default for name in allowed):
        pytest.skip(f"needs an allowed congestion control ({allowed}) other than the default {default}")
    for name in allowed:
        with alcc.Listener("127.0.0.1", 0, cc="fixed:window=10", underlay=name) as listener:
            client = alcc.connect("127.0.0.1", listener.port, cc="fixed:window=10", underlay=name)
            server, _ = listener.accept()
            for stream in (client, server):
                info = stream.info()
                assert info["prior_congestion"] == name, (name, default, info)
                assert info["underlay"] == name
            client.abort()
            server.abort()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_no_leaked_threads_or_descriptors_after_1000_cycles():
    with alcc.Listener("127.0.0.1", 0, cc="reno") as listener:

        def cycle():
            c = alcc.connect("127.0.0.1", listener.port, cc="reno")
            s, _ = listener.accept()
            c.sendall(b"ping")
            assert s.recv(4) == b"ping"
            c.close(timeout=5)
            s.close(timeout=5)

        # Warm up: the engine's driver thread starts with the first stream.
        for _ in range(3):
            cycle()
        fds, threads = open_fds(), os_threads()
        for _ in range(1000):
            cycle()
        time.sleep(0.5)  # the driver lets go of finished flows' descriptors on its next step
        assert os_threads() == threads
        assert open_fds() <= fds + 2


def test_asyncio_waits_for_writability():
    with alcc.Listener("127.0.0.1", 0, cc="reno") as listener:
        client = alcc.connect("127.0.0.1", listener.port, cc="fixed:window=100")
        server, _ = listener.accept()
        client.setblocking(False)
        sent = 0
        with pytest.raises(BlockingIOError):
            while True:
                sent += client.send(b"y" * 65536)
        received = []

        def drain():
            while sum(received) < sent:
                received.append(len(server.recv(1 << 20)))

        reader = threading.Thread(target=drain)
        reader.start()
        asyncio.run(asyncio.wait_for(client.wait_writable(), timeout=10))
        assert client.send(b"z") == 1
        reader.join(10)
        client.abort()
        server.abort()

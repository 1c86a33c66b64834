"""Coupled flows from Python (``group=`` and ``weight=`` on alcc.connect and alcc.Listener): the
engine's flow group (docs/coupled-flows.md) divides the group's rate by weight."""

from __future__ import annotations

import socket
import threading
import time

import pytest

alcc = pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")


def drain(port: int, stop: threading.Event) -> None:
    """Reads until the sender closes or resets (the test ends its streams with abort())."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                if not sock.recv(1 << 20):
                    return
            except TimeoutError:
                pass
            except ConnectionResetError:
                return


def test_weights_divide_the_group_and_none_stays_alone():
    stop = threading.Event()
    # Two listeners: each accepted connection joins group "py-test" with its listener's weight;
    # a third stays alone.
    specs = [("py-test", 1.0), ("py-test", 3.0), ("none", 1.0)]
    listeners = [alcc.Listener("127.0.0.1", 0, cc="fixed:rate=8", group=g, weight=w) for g, w in specs]
    readers = [threading.Thread(target=drain, args=(ln.port, stop)) for ln in listeners]
    for reader in readers:
        reader.start()
    streams = [ln.accept()[0] for ln in listeners]
    writers = []

    def send(stream):
        try:
            while not stop.is_set():
                stream.sendall(bytes(1 << 16))
        except OSError:
            pass

    for stream in streams:
        writers.append(threading.Thread(target=send, args=(stream,)))
        writers[-1].start()
    try:
        # Each flow publishes its share at its own steps, so right after the second flow joins
        # the first may still show its share from when it was alone: wait for both to agree.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            shares = [s.info()["group_share"] for s in streams]
            if shares[0] and shares[1] and shares[1] / shares[0] == pytest.approx(3.0, rel=1e-6):
                break
            time.sleep(0.05)
        light, heavy, alone = shares
        assert light and heavy, shares
        assert heavy / light == pytest.approx(3.0, rel=1e-6)
        assert alone is None
    finally:
        stop.set()
        for stream in streams:
            stream.abort()
        for t in writers + readers:
            t.join(10)
        for ln in listeners:
            ln.close()


@pytest.mark.parametrize(("group", "weight"), [("a b", 1.0), ("auto", 0.0), ("auto", float("nan"))])
def test_bad_group_or_weight_is_refused_before_listening(group, weight):
    with pytest.raises(ValueError, match=r"group|weight"):
        alcc.Listener("127.0.0.1", 0, cc="copa", group=group, weight=weight)
    with pytest.raises(ValueError, match=r"group|weight"):
        alcc.connect("127.0.0.1", 9, cc="copa", group=group, weight=weight)

"""A Python program that ends while its controllers' hooks are still running exits cleanly.

Hooks run on threads Python did not make (the engine's driver, a threaded controller's own). A
hook that starts while the interpreter finalizes made CPython end that thread inside Rust code,
and the process aborted (SIGABRT). The package's atexit hook now closes the gate first
(crates/alcc-python-cc/src/finalizing.rs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")

# A flow whose controller sleeps 20 ms in every on_ack: its thread has a long queue of ACKs to
# work through when the script returns, right after the reader stops.
SCRIPT = textwrap.dedent(
    """
    import socket, sys, threading, time
    import alcc

    class Slow(alcc.Controller):
        def on_ack(self, now, ack):
            time.sleep(0.02)

        def decision(self):
            return alcc.Decision(window=200 * self.mss)

    if sys.argv[1] == "unguarded":
        import atexit
        atexit.unregister(alcc._close_controllers)

    listener = alcc.Listener("127.0.0.1", 0, cc=Slow, delivery=sys.argv[2])

    def serve():
        stream, _ = listener.accept()
        try:
            with stream:
                while True:
                    stream.sendall(bytes(1 << 20))
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    sock = socket.create_connection(("127.0.0.1", listener.port))
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        sock.recv(1 << 20)
    print("done", flush=True)
    """
)


def run(guard: str, delivery: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, guard, delivery], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("delivery", ["thread", "inline"])
def test_exit_with_hooks_running_is_clean(delivery):
    for _ in range(3):
        done = run("guarded", delivery)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert done.stdout.strip() == "done"

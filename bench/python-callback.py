"""What a controller written in Python costs: per callback in the simulator, and on loopback.

    .venv/bin/python bench/python-callback.py [--seconds 30] [--megabytes 200]

1. Simulator (one process, side by side): the Rust Reno, a Python Reno with the same rules, and a
   Python controller that only counts ACKs, over a constant 50 Mbit/s link. The cost per Python
   callback is (Python run - Rust run) / callbacks (on_sent + on_ack + on_loss made).
2. Loopback, kernel mode: MEGABYTES through alcc with a fixed 200-packet window, set by the Rust
   `fixed` controller and by a Python controller reading every acknowledgement: throughput of each
   and the Python controller's callbacks per second.
3. Isolation: a Rust-controlled (copa) loopback flow alone, then beside a flow whose Python
   controller sleeps 1 ms in every on_ack, with that controller's hooks delivered inline (on the
   engine's one driver thread: its time is taken from every flow) and on a thread of its own.

Take /work/locks/quiet.lock (CPU figures) and report `uptime` before and after.
"""

import argparse
import socket
import threading
import time

import alcc


class Reno(alcc.Controller):
    """RFC 5681 Reno with byte counting and one reduction per episode (reno.rs's rules)."""

    def __init__(self, **config):
        super().__init__(**config)
        self.cwnd, self.ssthresh, self.acked = 3 * self.mss, float("inf"), 0
        self.highest, self.boundary, self.recovering = -1, None, False
        self.calls = 0

    def on_sent(self, now, packet):
        self.calls += 1
        self.highest = max(self.highest, packet.seq)

    def on_ack(self, now, ack):
        self.calls += 1
        if self.recovering and ack.seq > self.boundary:
            self.recovering = False
        if self.recovering:
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += min(ack.bytes, 2 * self.mss)
        else:
            self.acked += ack.bytes
            if self.acked >= self.cwnd:
                self.acked -= self.cwnd
                self.cwnd += self.mss

    def on_loss(self, now, loss):
        self.calls += 1
        if self.boundary is not None and loss.seq <= self.boundary:
            return
        self.boundary, self.recovering = max(self.highest, loss.seq), True
        self.ssthresh = max((loss.bytes_in_flight + loss.bytes) // 2, 2 * self.mss)
        self.cwnd, self.acked = self.ssthresh, 0

    def decision(self):
        return alcc.Decision(window=self.cwnd)


class Counter(alcc.Controller):
    """A fixed window of 200 packets; counts the acknowledgements (one hook only)."""

    def __init__(self, delay=0.0, **config):
        super().__init__(**config)
        self.calls, self.delay = 0, delay

    def on_ack(self, now, ack):
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)

    def decision(self):
        return alcc.Decision(window=200 * self.mss)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def simulator(seconds: float) -> None:
    link = dict(rate_mbps=50.0, delay_ms=20, queue="packets=200", duration_s=seconds, seed=1)
    rust, t_rust = timed(lambda: alcc.sim(cc="reno", **link))
    reno = Reno(mss=alcc.PACKET_BYTES)
    python, t_python = timed(lambda: alcc.sim(cc=reno, **link))
    counter = Counter(mss=alcc.PACKET_BYTES)
    _, t_counter = timed(lambda: alcc.sim(cc=counter, **link))
    _, t_fixed = timed(lambda: alcc.sim(cc="fixed:window=200", **link))
    print(f"simulator, {seconds:g} s of 50 Mbit/s ({rust.packets_sent} packets):")
    print(
        f"  rust reno {t_rust:.3f} s, python reno {t_python:.3f} s ({reno.calls} callbacks):"
        f" {(t_python - t_rust) / reno.calls * 1e9:.0f} ns per callback"
    )
    print(
        f"  rust fixed {t_fixed:.3f} s, python ack counter {t_counter:.3f} s ({counter.calls} on_ack):"
        f" {(t_counter - t_fixed) / counter.calls * 1e9:.0f} ns per callback"
    )
    print(
        f"  same figures: throughput {rust.throughput_mbps:.3f} vs {python.throughput_mbps:.3f} Mbit/s,"
        f" p95 {rust.delay_p95_ms} vs {python.delay_p95_ms} ms"
    )


def download(cc, megabytes: int) -> float:
    """Mbit/s of MEGABYTES sent under cc to a plain TCP reader on loopback (length checked)."""
    block = bytes(range(256)) * 4096
    with alcc.Listener("127.0.0.1", 0, cc=cc) as listener:

        def serve():
            stream, _ = listener.accept()
            with stream:
                for _ in range(megabytes):
                    stream.sendall(block)

        sender = threading.Thread(target=serve)
        sender.start()
        total = 0
        start = time.perf_counter()
        with socket.create_connection(("127.0.0.1", listener.port)) as sock:
            while chunk := sock.recv(1 << 20):
                total += len(chunk)
        took = time.perf_counter() - start
        sender.join()
    assert total == megabytes * len(block), total
    return total * 8 / took / 1e6


def loopback(megabytes: int) -> None:
    rust = download("fixed:window=200", megabytes)
    counter = Counter(mss=1448)
    start = time.perf_counter()
    python = download(counter, megabytes)
    took = time.perf_counter() - start
    print(f"loopback, {megabytes} MiB, window 200 packets:")
    print(
        f"  rust fixed {rust:.0f} Mbit/s, python {python:.0f} Mbit/s ({python / rust:.2f}x),"
        f" {counter.calls} on_ack = {counter.calls / took:.0f} callbacks/s"
    )


def isolation(megabytes: int, delivery: str) -> None:
    alone = download("copa", megabytes)
    slow = Counter(delay=0.001, mss=1448)
    done = threading.Event()

    def slow_flow():
        with alcc.Listener("127.0.0.1", 0, cc=slow, delivery=delivery) as listener:

            def serve():
                stream, _ = listener.accept()
                with stream:
                    while not done.is_set():
                        stream.sendall(bytes(1 << 20))

            t = threading.Thread(target=serve)
            t.start()
            with socket.create_connection(("127.0.0.1", listener.port)) as sock:
                while sock.recv(1 << 20):
                    pass
            t.join()

    background = threading.Thread(target=slow_flow, daemon=True)
    background.start()
    time.sleep(1)
    beside = download("copa", megabytes)
    done.set()
    print(
        f"isolation ({delivery}), copa {megabytes} MiB: alone {alone:.0f} Mbit/s, beside a Python controller"
        f" sleeping 1 ms per on_ack {beside:.0f} Mbit/s ({beside / alone:.2f}x;"
        f" the slow flow's on_ack calls: {slow.calls})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    simulator(args.seconds)
    loopback(args.megabytes)
    isolation(args.megabytes, "inline")
    isolation(args.megabytes, "thread")


if __name__ == "__main__":
    main()

"""What a controller written in Python costs: per callback in the simulator, and on loopback.

    .venv/bin/python bench/python-callback.py [--seconds 30] [--megabytes 200]

1. Simulator (one process, side by side): the Rust Reno, a Python Reno with the same rules, and a
   Python controller that only counts ACKs, over a constant 50 Mbit/s link. The cost per Python
   callback is (Python run - Rust run) / callbacks (on_sent + on_ack + on_loss made).
2. Loopback, kernel mode: MEGABYTES through alcc with a fixed 200-packet window, set by the Rust
   `fixed` controller and by a Python controller reading every acknowledgement: throughput of each
   and the Python controller's callbacks per second.
3. Isolation: a Rust-controlled loopback flow paced at 400 Mbit/s (fixed:rate=400, read by a
   separate process) alone, then beside a flow whose Python controller sleeps 1 ms in every
   on_ack, with that controller's hooks delivered inline (on the engine's one driver thread: its
   time is taken from every flow), on a thread of its own, and once per round trip.
4. Keeping up (--keep-up): one loopback flow paced at R Mbit/s (R doubling from 100), by the
   Rust `fixed:rate=R` and by a Python controller with the same decision that also keeps
   Reno-like per-ACK bookkeeping (an RTT average, bytes acknowledged), its ACKs delivered inline,
   per 8 ACKs and per round trip. A Python controller keeps up at R when its flow delivers at
   least 95 % of what the Rust controller's delivers at the same R, in the same round (each the
   best of two tries: a loaded machine only ever takes throughput away); the figure is the
   highest such R before the first miss.

Take /work/locks/quiet.lock (CPU figures) and report `uptime` before and after.
"""

import argparse
import socket
import subprocess
import sys
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


def transfer(cc, blocks: int, delivery: str = "inline") -> tuple[float, float]:
    """(Mbit/s, s) of BLOCKS MiB sent under cc to a plain TCP reader on loopback (length checked)."""
    block = bytes(range(256)) * 4096
    with alcc.Listener("127.0.0.1", 0, cc=cc, delivery=delivery) as listener:

        def serve():
            stream, _ = listener.accept()
            with stream:
                for _ in range(blocks):
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
    assert total == blocks * len(block), total
    return total * 8 / took / 1e6, took


def download(cc, megabytes: int) -> float:
    """Mbit/s of MEGABYTES sent under cc to a plain TCP reader on loopback."""
    return transfer(cc, megabytes)[0]


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


def reader(port: int) -> subprocess.Popen:
    """A client in its own process (no GIL shared with the controllers): counts what it reads."""
    code = (
        "import socket, sys\n"
        f"s = socket.create_connection(('127.0.0.1', {port}))\n"
        "n = 0\n"
        "while b := s.recv(1 << 20):\n"
        "    n += len(b)\n"
        "print(n)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def serve_one(listener, total: int) -> threading.Thread:
    block = bytes(1 << 20)

    def serve():
        stream, _ = listener.accept()
        try:
            with stream:
                left = total
                while left > 0:
                    stream.sendall(block[: min(left, len(block))])
                    left -= min(left, len(block))
        except OSError:
            pass  # the endless flow's reader was stopped; a short victim fails its byte count

    thread = threading.Thread(target=serve)
    thread.start()
    return thread


def victim(rate_mbps: float, seconds: float) -> float:
    """Mbit/s of a Rust-controlled flow paced at rate_mbps (fixed:rate), read by another process."""
    total = int(rate_mbps * 1e6 / 8 * seconds)
    with alcc.Listener("127.0.0.1", 0, cc=f"fixed:rate={rate_mbps:g}", group="none") as listener:
        sender = serve_one(listener, total)
        start = time.perf_counter()
        client = reader(listener.port)
        got = int(client.communicate()[0])
        took = time.perf_counter() - start
        sender.join()
    assert got == total, (got, total)
    return got * 8 / took / 1e6


def isolation(rate_mbps: float, seconds: float) -> None:
    """A paced Rust flow alone, then beside a Python controller sleeping 1 ms per on_ack."""
    alone = victim(rate_mbps, seconds)
    print(
        f"isolation: a fixed:rate={rate_mbps:g} flow (Rust), {seconds:g} s, alone {alone:.0f} Mbit/s; beside"
    )
    for delivery in ["inline", "thread", "batch:rtt"]:
        slow = Counter(delay=0.001, mss=1448)
        with alcc.Listener("127.0.0.1", 0, cc=slow, delivery=delivery, group="none") as listener:
            sender = serve_one(listener, 1 << 40)
            client = reader(listener.port)
            time.sleep(0.5)
            beside = victim(rate_mbps, seconds)
            client.kill()
            client.wait()
            sender.join()
        print(
            f"  a Python controller sleeping 1 ms per on_ack, delivery={delivery}: {beside:.0f} Mbit/s"
            f" ({beside / alone:.2f}x alone; the slow flow's on_ack calls: {slow.calls})"
        )


class PacedBookkeeper(alcc.Controller):
    """fixed:rate=R's decision (no window limit, paced at R) with per-ACK work in Python."""

    def __init__(self, rate_mbps=100.0, **config):
        super().__init__(**config)
        self.rate = rate_mbps * 1e6 / 8
        self.srtt, self.acked, self.calls = None, 0, 0

    def on_ack(self, now, ack):
        self.calls += 1
        self.acked += ack.bytes
        if ack.rtt is not None:
            self.srtt = ack.rtt if self.srtt is None else 0.875 * self.srtt + 0.125 * ack.rtt

    def decision(self):
        return alcc.Decision(window=1 << 40, pacing_rate=self.rate)


def paced(cc, seconds: float, rate_mbps: float, delivery: str = "inline") -> tuple[float, float]:
    """(Mbit/s delivered, s) sending rate x seconds worth of bytes under cc on loopback."""
    return transfer(cc, max(1, int(rate_mbps * 1e6 / 8 * seconds) >> 20), delivery)


def keep_up(seconds: float, top_mbps: float) -> None:
    deliveries = ["inline", "batch:acks=8", "batch:rtt"]
    highest = {d: None for d in deliveries}
    missed = set()
    print(f"keeping up, loopback, {seconds:g} s per cell (Mbit/s delivered; x = of rust's; callbacks/s):")
    rate = 100.0
    while rate <= top_mbps and len(missed) < len(deliveries):
        rust = max(paced(f"fixed:rate={rate:g}", seconds, rate)[0] for _ in range(2))
        cells = []
        for delivery in deliveries:
            if delivery in missed:
                cells.append(f"{delivery} -")
                continue
            best = (0.0, 0.0)
            for _ in range(2):
                cc = PacedBookkeeper(rate_mbps=rate, mss=1448)
                got, took = paced(cc, seconds, rate, delivery)
                best = max(best, (got, cc.calls / took))
            got, calls = best
            ratio = got / rust
            cells.append(f"{delivery} {got:.0f} ({ratio:.2f}x, {calls:.0f}/s)")
            if ratio >= 0.95:
                highest[delivery] = rate
            else:
                missed.add(delivery)
        print(f"  R {rate:6.0f}: rust {rust:.0f} | " + " | ".join(cells))
        rate *= 2
    for delivery in deliveries:
        print(f"  highest rate kept up, {delivery}: {highest[delivery]} Mbit/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--keep-up", action="store_true", help="only part 4, keeping up")
    parser.add_argument("--top", type=float, default=25600.0, help="highest rate tried, Mbit/s")
    args = parser.parse_args()
    if args.keep_up:
        keep_up(2.0, args.top)
        return
    simulator(args.seconds)
    loopback(args.megabytes)
    isolation(400.0, 4.0)
    keep_up(2.0, args.top)


if __name__ == "__main__":
    main()

"""Serves a download under a Python controller on a real kernel TCP connection.

    .venv/bin/python examples/python/serve.py --port 9000 --cc vegas --megabytes 100 &
    curl -s localhost:9000 -o /dev/null   # or: nc localhost 9000 > /dev/null

Each connection gets its own controller instance and MEGABYTES of zeros, sent through alcc's
engine in kernel mode (any TCP client receives it); the flow's info is printed when it ends.
"""

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import alcc
import toy_rate  # noqa: F401  (registers "toy-rate")
import vegas  # noqa: F401  (registers "vegas")


def send(stream: alcc.Stream, megabytes: int) -> None:
    peer, block = stream.getpeername(), bytes(1 << 20)
    with stream:
        for _ in range(megabytes):
            stream.sendall(block)
        stream.flush()
        info = stream.info()
    print(f"{peer}: {megabytes} MiB, window {info['window']} B, {info['losses']} losses", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--cc", default="vegas")
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    with alcc.Listener(args.host, args.port, cc=args.cc) as listener:
        print(f"serving {args.megabytes} MiB under {args.cc} on port {listener.port}", flush=True)
        while True:
            stream, _ = listener.accept()
            threading.Thread(target=send, args=(stream, args.megabytes), daemon=True).start()


if __name__ == "__main__":
    main()

"""Streams from Python: :func:`connect`, :class:`Listener` and the :class:`Stream` they give.

A stream sends through alcc's engine on an ordinary kernel TCP connection, its pace set by the
controller ``cc``: a Rust controller's spec (``"copa"``), or a Python controller (a subclass of
:class:`alcc.Controller`, an instance, ``"py:module:Class"`` or a registered name; kernel mode
only). Blocking calls release the GIL. In kernel mode the peer is any TCP client and the stream
also reads what it sends (``recv``).
"""

from __future__ import annotations

import asyncio

from alcc import _alcc
from alcc._controller import Controller, instantiate, resolve

#: The packet size a Python controller on a stream counts in (the engine's default MSS).
STREAM_MSS = 1448


def _controller(cc) -> tuple[str, object, list[str]]:
    """(name, spec or Controller instance, overridden hooks) for the native layer."""
    name, python = resolve(cc)
    if python is None:
        return name, name, []
    controller = instantiate(python, mss=STREAM_MSS, seed=0)
    return name, controller, type(controller)._hooks()


class Stream:
    """One connection sending under alcc: ``send``, ``sendall``, ``recv``, ``flush``, ``close``,
    ``abort``, ``info()``, ``setblocking``, ``fileno``; a context manager that closes on exit.

    ``close(timeout=None)`` flushes, sends the FIN and waits until everything is acknowledged.
    I/O errors are ``OSError`` subclasses with the engine's message; a Python controller that
    raised fails this stream (and no other) with :class:`alcc.ControllerError` and its traceback.
    """

    def __init__(self, native, controller: Controller | None = None):
        self._native = native
        #: The Python controller instance running this flow, if any.
        self.controller = controller

    def send(self, data: bytes) -> int:
        """Queues as much of ``data`` as fits; returns the count."""
        return self._native.send(bytes(data) if not isinstance(data, bytes) else data)

    def sendall(self, data: bytes) -> None:
        """Queues all of ``data``, waiting for room."""
        self._native.sendall(bytes(data) if not isinstance(data, bytes) else data)

    def recv(self, bufsize: int) -> bytes:
        """Up to ``bufsize`` bytes from the peer; ``b""`` at its end."""
        return self._native.recv(bufsize)

    def flush(self) -> None:
        """Waits until everything queued is in the kernel."""
        self._native.flush()

    def close(self, timeout: float | None = None) -> None:
        """Flushes, sends the FIN and waits for the acknowledgements (``timeout`` seconds at most,
        else ``TimeoutError``). Closing twice is fine; other calls then raise ``OSError(EBADF)``."""
        self._native.close(timeout)

    def abort(self) -> None:
        """Resets the connection, discarding what is queued."""
        self._native.abort()

    def info(self) -> dict:
        """The flow's state: controller, window, bytes written/acknowledged, losses, ... (the engine's
        ``FlowInfo``)."""
        return self._native.info()

    def setblocking(self, flag: bool) -> None:
        """Non-blocking (``False``): calls raise ``BlockingIOError`` instead of waiting."""
        self._native.setblocking(flag)

    def fileno(self) -> int:
        """The socket's descriptor."""
        return self._native.fileno()

    def writable_fd(self) -> int:
        """A descriptor that polls writable exactly while ``send`` would not block (for ``select``,
        ``epoll`` or asyncio's ``add_writer``); do not read, write or close it."""
        return self._native.writable_fd()

    async def wait_writable(self) -> None:
        """Waits, in the running asyncio loop, until ``send`` would not block."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = self.writable_fd()
        loop.add_writer(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_writer(fd)

    def getpeername(self) -> tuple[str, int]:
        """The peer's ``(host, port)``."""
        return self._native.getpeername()

    @property
    def closed(self) -> bool:
        """Whether ``close()`` or ``abort()`` was called."""
        return self._native.closed

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


def connect(
    host: str,
    port: int,
    *,
    cc="copa",
    underlay: str = "reno",
    mode: str = "kernel",
    delivery: str = "inline",
    group: str = "auto",
    weight: float = 1.0,
) -> Stream:
    """Connects to ``(host, port)`` and returns a :class:`Stream` sending under ``cc`` over the
    kernel congestion control ``underlay`` in ``mode`` (``kernel`` or ``framed``).

    ``delivery`` says how a Python controller's events reach it: ``"inline"`` (each event on the
    engine's driver thread), ``"thread"`` (on a thread of its own, in batches of whatever
    queued), ``"batch:acks=N"`` (on the driver thread, one ``on_ack`` per N ACKs with their bytes
    summed and ``ack.count`` = N) or ``"batch:rtt"`` (one ``on_ack`` per round trip).

    ``group`` couples flows that share a bottleneck (docs/coupled-flows.md): ``"auto"`` (the
    default) puts this process's flows to the same peer address in one group, ``"none"`` keeps
    the flow alone, any other string names a group; ``weight`` (> 0) is the flow's priority in
    it (RFC 8699's active FSE: each flow's share of the group's rate is proportional to it)."""
    name, controller, hooks = _controller(cc)
    native = _alcc.connect(
        host,
        port,
        cc=controller,
        name=name,
        underlay=underlay,
        mode=mode,
        hooks=hooks,
        delivery=delivery,
        group=group,
        weight=weight,
    )
    return Stream(native, controller if isinstance(controller, Controller) else None)


class Listener:
    """Listens on ``(host, port)`` (port 0: any); ``accept()`` returns ``(Stream, (host, port))``,
    each stream sending under ``cc`` (a Python controller class gives each connection its own
    instance; ``delivery``, ``group`` and ``weight`` as in :func:`connect`, for every accepted
    connection). A context manager that stops listening on exit."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        cc="copa",
        underlay: str = "reno",
        mode: str = "kernel",
        delivery: str = "inline",
        group: str = "auto",
        weight: float = 1.0,
    ):
        self._cc, self._delivery = cc, delivery
        name, python = resolve(cc)
        self._native = _alcc._Listener(
            host,
            port,
            name=name,
            python=python is not None,
            underlay=underlay,
            mode=mode,
            group=group,
            weight=weight,
        )

    def accept(self) -> tuple[Stream, tuple[str, int]]:
        """Waits for a connection."""
        _, controller, hooks = _controller(self._cc)
        native, peer = self._native.accept(controller, hooks, self._delivery)
        return Stream(native, controller if isinstance(controller, Controller) else None), peer

    def getsockname(self) -> tuple[str, int]:
        """The bound ``(host, port)``."""
        return self._native.getsockname()

    @property
    def port(self) -> int:
        """The bound port."""
        return self.getsockname()[1]

    def close(self) -> None:
        """Stops listening."""
        self._native.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

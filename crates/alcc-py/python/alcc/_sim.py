"""The simulator from Python: ``alcc.sim`` and what it returns."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from alcc import _alcc
from alcc._controller import Controller, instantiate, resolve

#: The simulator's packet size, bytes (the ``mss`` a Python controller is built with).
PACKET_BYTES = 1500

#: The meaning of ``packets["outcome"]``'s codes, by code.
OUTCOMES = ("in_flight", "delivered", "queue_drop", "random_drop")


class Table(dict[str, np.ndarray]):
    """Named columns of equal length, each a read-only NumPy array viewing the buffer the
    simulator filled (``numpy.frombuffer``: no per-element copy).

    A dict of column name to array, so ``pandas.DataFrame(table)`` works; ``to_pandas()`` does
    the same, and ``to_numpy()`` gives a structured array.
    """

    def __init__(self, columns: Mapping[str, tuple[str, bytes]]):
        super().__init__((name, np.frombuffer(data, dtype=dtype)) for name, (dtype, data) in columns.items())

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(next(iter(self.values()))) if self else 0

    def to_pandas(self):
        """A pandas DataFrame of the columns (pandas is imported on first use)."""
        import pandas as pd

        return pd.DataFrame(self, copy=False)

    def to_numpy(self) -> np.ndarray:
        """One structured NumPy array with a field per column."""
        out = np.empty(self.rows, dtype=[(n, a.dtype) for n, a in self.items()])
        for name, array in self.items():
            out[name] = array
        return out

    def __repr__(self) -> str:
        return f"Table({self.rows} rows: {', '.join(self)})"


@dataclass(frozen=True)
class SimResult:
    """One simulated run: ``alcc sim``'s summary as attributes, plus the tables.

    ``summary`` holds the summary as a dict; ``packets`` every data packet (``seq``, ``bytes``,
    ``sent_s``, ``departed_s``, ``arrived_s``, ``delay_ms``, ``outcome`` coded as in
    :data:`OUTCOMES`); ``windows`` the controller's decisions (``t_s``, ``window_bytes``,
    ``pacing_rate`` in bytes/s, NaN unpaced); ``acks`` (``t_s``, ``seq``, ``bytes``); ``series``
    the 500 ms bins of ``alcc sim --series``.
    """

    summary: dict
    packets: Table = field(repr=False)
    windows: Table = field(repr=False)
    acks: Table = field(repr=False)
    series: Table = field(repr=False)

    def __getattr__(self, name: str):
        # Only called for names that are not fields: the summary's (throughput_mbps, ...).
        summary = self.__dict__.get("summary", {})
        if name in summary:
            return summary[name]
        raise AttributeError(f"SimResult has no attribute {name!r}")

    def __dir__(self):
        return [*super().__dir__(), *self.summary]


def sim(
    *,
    cc: str | type[Controller] | Controller,
    trace: str | os.PathLike | None = None,
    rate_mbps: float | None = None,
    delay_ms: float = 20.0,
    queue: str = "packets=1000",
    loss: float = 0.0,
    duration_s: float = 60.0,
    seed: int = 1,
    acks: str = "every",
    delivery: str = "inline",
) -> SimResult:
    """Runs controller ``cc`` over a bottleneck given by a
    Mahimahi ``trace`` file or a constant ``rate_mbps``, with ``delay_ms`` one-way delay each way,
    a drop-tail ``queue`` (``packets=N``, ``bytes=N`` or ``infinite``), random ``loss``,
    ``duration_s`` simulated seconds, ``seed``, and ``acks`` (``every``, ``delayed``,
    ``stretch=N``) -- the settings of ``alcc sim``.

    ``cc`` is a Rust controller's spec (``"copa:delta=0.5"``; the GIL is released while it runs),
    or a Python controller: an :class:`alcc.Controller` subclass (built with ``mss=1500`` and
    ``seed``), an instance, ``"py:module:Class"`` or a name given to :func:`alcc.register`. A
    Python controller that raises ends the run with :class:`alcc.ControllerError` carrying its
    traceback. ``delivery`` is how its ACKs reach it: ``"inline"`` (one ``on_ack`` per ACK),
    ``"batch:acks=N"`` or ``"batch:rtt"`` (as in :func:`alcc.connect`).
    """
    name, python = resolve(cc)
    controller = None if python is None else instantiate(python, mss=PACKET_BYTES, seed=seed)
    raw = _alcc.simulate(
        cc=name,
        controller=controller,
        hooks=[] if controller is None else type(controller)._hooks(),
        trace=None if trace is None else os.fspath(trace),
        rate_mbps=rate_mbps,
        delay_ms=delay_ms,
        queue=queue,
        loss=loss,
        duration_s=duration_s,
        seed=seed,
        acks=acks,
        delivery=delivery,
    )
    return SimResult(
        summary=raw["summary"],
        packets=Table(raw["packets"]),
        windows=Table(raw["windows"]),
        acks=Table(raw["acks"]),
        series=Table(raw["series"]),
    )

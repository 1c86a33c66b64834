"""alcc from Python.

``alcc.sim`` runs one congestion controller over the simulated bottleneck (as ``alcc sim``
does) and returns a :class:`SimResult`: the summary fields of ``alcc sim``'s JSON as attributes,
and the per-packet records and time series as :class:`Table` objects that NumPy and pandas take
without copying element by element.

A controller can be written in Python: subclass :class:`Controller`, return
:class:`Decision` from ``decision()``, and pass the class (or ``"py:module:Class"``, or a name
given to :func:`register`) as ``cc``.

``alcc.Listener`` and ``alcc.connect`` give streams that send through alcc's engine on a kernel
TCP connection, under a Rust or a Python controller.

Errors carry the Rust message: ``ValueError`` for a bad spec or setting, ``OSError`` (with errno
and file name) for a file that cannot be read, :class:`ControllerError` (with the traceback) for
a Python controller that raised.
"""

import atexit

from alcc._alcc import _close_controllers
from alcc._controller import Ack, Controller, ControllerError, Decision, Loss, Sent, register
from alcc._sim import OUTCOMES, PACKET_BYTES, SimResult, Table, sim
from alcc._stream import Listener, Stream, connect

# Controller hooks run on threads Python did not make (the engine's, a threaded controller's): once
# the interpreter begins to exit none may start, or CPython would end that thread mid-call and
# abort the process. Registered first, so it runs after the program's own atexit hooks.
atexit.register(_close_controllers)

__all__ = [
    "OUTCOMES",
    "PACKET_BYTES",
    "Ack",
    "Controller",
    "ControllerError",
    "Decision",
    "Listener",
    "Loss",
    "Sent",
    "SimResult",
    "Stream",
    "Table",
    "connect",
    "register",
    "sim",
]

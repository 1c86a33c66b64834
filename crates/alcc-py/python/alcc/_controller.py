"""Congestion controllers written in Python: subclass :class:`Controller`.

The contract is the Rust trait ``alcc_cc::Controller``'s (crates/alcc-cc/src/controller.rs):
the transport calls, in non-decreasing ``now`` order (seconds, a float), ``on_sent`` for every
packet it sends, ``on_ack`` for every acknowledged one, ``on_loss`` for every one it declares
lost, ``on_timer`` once the time ``next_timer()`` asked for has passed, and after any of them
reads ``decision()``. Only the hooks a subclass overrides are called. ``rtt_samples`` says how
many RTT samples the controller needs (``RttSamples`` in the trait).
"""

from __future__ import annotations

import importlib

from alcc._alcc import Ack, ControllerError, Decision, Loss, Sent

#: The hooks the transport calls only when a subclass overrides them.
HOOKS = ("on_sent", "on_ack", "on_loss", "on_timer", "next_timer")

_REGISTRY: dict[str, type[Controller]] = {}


class Controller:
    """Base class of a controller written in Python.

    ``mss`` is the packet size the transport counts in (bytes) and ``seed`` the seed for any
    randomness; the simulator and the streams construct a controller class as
    ``cls(mss=..., seed=...)``, so a subclass's ``__init__`` takes them as keywords and passes them
    on to ``super().__init__``.
    """

    #: The RTT samples this controller needs, read once when a flow is built: ``"per-packet"``
    #: (one per packet; every delay- or ACK-clocked algorithm) or ``"not-needed"`` (nothing it
    #: decides depends on an ACK's timing, e.g. a constant rate with no window). In kernel mode
    #: each sample is a timestamped write of its own, so a flow that needs none and has no
    #: window sends without them and learns what was acknowledged from TCP_INFO.
    rtt_samples: str = "per-packet"

    def __init__(self, *, mss: int = 1448, seed: int = 0):
        self.mss = mss
        self.seed = seed

    def on_sent(self, now: float, packet: Sent) -> int | None:
        """A packet was sent (``packet.seq``, ``.bytes``, ``.bytes_in_flight``). The returned
        whole number (the memo) comes back in that packet's ``ack.memo`` or ``loss.memo``."""
        return None

    def on_ack(self, now: float, ack: Ack) -> None:
        """A packet was acknowledged: ``ack.seq``, ``.bytes``, ``.sent_at`` (s), ``.rtt`` (s),
        ``.bytes_in_flight``, ``.delivered``, ``.memo``, ``.count`` (1) and ``.min_rtt`` (= rtt).

        Under batched delivery (``delivery="batch:acks=N"`` or ``"batch:rtt"``) one call stands for
        ``ack.count`` ACKs: ``ack.bytes`` is their sum, ``ack.min_rtt`` their smallest RTT, the other
        fields the latest ACK's."""

    def on_loss(self, now: float, loss: Loss) -> None:
        """A packet was declared lost: ``loss.seq``, ``.bytes``, ``.sent_at``, ``.bytes_in_flight``,
        ``.memo``."""

    def on_timer(self, now: float) -> None:
        """The time ``next_timer()`` returned has passed."""

    def next_timer(self) -> float | None:
        """When to call ``on_timer`` next (seconds on the ``now`` clock), or ``None``."""
        return None

    def decision(self) -> Decision:
        """The window (bytes in flight at most) and pacing rate (bytes/s or ``None``)."""
        raise NotImplementedError(f"{type(self).__name__} must define decision()")

    def metrics(self) -> dict[str, float]:
        """Named values for telemetry (optional)."""
        return {}

    @classmethod
    def _hooks(cls) -> list[str]:
        """The hooks this class overrides."""
        return [name for name in HOOKS if getattr(cls, name) is not getattr(Controller, name)]


def register(name: str, cls: type[Controller] | None = None):
    """Registers ``cls`` under ``name`` so that ``cc=name`` (or ``cc="py:name"``) finds it; usable
    as a decorator, ``@alcc.register("vegas")``. Names of alcc's own controllers cannot be taken."""

    def add(cls: type[Controller]) -> type[Controller]:
        if not (isinstance(cls, type) and issubclass(cls, Controller)):
            raise TypeError(f"{cls!r} is not a subclass of alcc.Controller")
        _REGISTRY[name] = cls
        return cls

    return add if cls is None else add(cls)


def resolve(cc) -> tuple[str, type[Controller] | Controller | None]:
    """``cc`` as (name, Python controller class or instance) or (spec, None) for a Rust spec.

    A class or instance is itself; ``"py:module:Class"`` imports it; a registered name is its class.
    """
    if isinstance(cc, Controller):
        return type(cc).__name__, cc
    if isinstance(cc, type):
        if not issubclass(cc, Controller):
            raise TypeError(f"cc={cc!r} is not a subclass of alcc.Controller")
        return cc.__name__, cc
    if not isinstance(cc, str):
        raise TypeError(f"cc must be a spec string or an alcc.Controller, not {type(cc).__name__}")
    if cc.startswith("py:"):
        target = cc.removeprefix("py:")
        if target in _REGISTRY:
            return cc, _REGISTRY[target]
        module, _, attr = target.partition(":")
        if not attr:
            raise ValueError(f"cc={cc!r}: give py:module:Class or py:<registered name>")
        cls = getattr(importlib.import_module(module), attr, None)
        if cls is None:
            raise ValueError(f"cc={cc!r}: module {module} has no {attr}")
        return cc, resolve(cls)[1]
    if cc in _REGISTRY:
        return cc, _REGISTRY[cc]
    return cc, None


def instantiate(controller: type[Controller] | Controller, *, mss: int, seed: int) -> Controller:
    """An instance: a class is constructed with ``mss`` and ``seed``."""
    return controller(mss=mss, seed=seed) if isinstance(controller, type) else controller


__all__ = ["Ack", "Controller", "ControllerError", "Decision", "Loss", "Sent", "register"]

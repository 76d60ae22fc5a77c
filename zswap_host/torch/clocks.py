"""Which clock a swapped module's stall figures use, and the figures themselves.

``clock=`` of the modules:

- ``"device"`` (the default): the backend's device clock when it is modeled (the emulated devices
  with a timing preset: deterministic, the SSD model's seconds), else the wall clock (real devices,
  and a device with its timing off, whose clock stands still).
- ``"wall"`` or None: wall time inside the backend calls.
- a callable returning seconds: that clock (``"caller"``), e.g. ``dev.now`` of a device the
  backend does not expose.

``stats()["clock"]`` names the one in use (``"none"`` when there is no backend: no I/O at all).
"""

from __future__ import annotations

CLOCKS = ("device", "wall")


def backend_device(backend):
    """The device under a backend (through wrappers such as ``VerifyingBackend``), or None."""
    seen = 0
    while backend is not None and seen < 8:
        dev = getattr(backend, "device", None)
        if dev is not None:
            return dev
        backend = getattr(backend, "backend", None)        # a wrapper's inner backend
        seen += 1
    return None


def resolve(clock, backend) -> tuple:
    """(callable or None for wall time, the clock's name) for a module's ``clock=`` argument.
    ``ValueError`` for a string other than ``CLOCKS``, ``TypeError`` for anything not callable."""
    if backend is None:
        return None, "none"
    if callable(clock):
        return clock, "caller"
    if clock is None or clock == "wall":
        return None, "wall"
    if clock != "device":
        raise ValueError(f"clock must be one of {CLOCKS}, None or a callable, not {clock!r}")
    dev = backend_device(backend)
    if dev is not None and dev.stats().clock == "modeled":
        return dev.now, "modeled"
    return None, "wall"

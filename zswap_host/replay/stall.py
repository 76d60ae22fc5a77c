"""Where a run's modeled stall goes: the device clock's advance in each kind of call the replay
makes (``StallClock``, a pass-through around the backend), split by the GC counters the store keeps
(``gc_clock_<why>_<read|write|reset>_s``: the clock GC held inside those calls), so the parts are an
exact partition of the stall on the model's clock (``stall_breakdown``).

The host is synchronous on the model's clock (a call returns when its device work is done, or, for
a write, in the device's write buffer), so every second of stall is spent inside one call: a
swap-in's reads, a swap-out's writes (waiting for room in the device's write buffer included),
GC the store ran inside a swap-out (background after it, foreground when it could not get a zone),
GC in an idle window beyond the window, less the I/O the trace overlapped with compute (hidden).
What a read waited for on its die (a program, an erase, another read) is inside the swap-in row:
the device model does not attribute die waits to their cause."""

from __future__ import annotations

from typing import Callable

import numpy as np

GC_WHYS = ("foreground", "background", "idle", "drain", "manual")
GC_ACTS = ("read", "write", "reset")


class StallClock:
    """``backend`` with each call's clock advance summed by kind (``seconds``: ``swap_in``,
    ``swap_out``, ``discard``, ``flush``, ``idle``) and the idle windows handed on (``windows_s``).
    ``clock()``: the device clock; ``on_idle``: what an idle window does instead of
    ``backend.idle`` (None: ``backend.idle``)."""

    def __init__(self, backend, clock: Callable[[], float], on_idle: Callable[[float], None] | None = None) -> None:
        self._b, self._clock = backend, clock
        self._idle = on_idle if on_idle is not None else backend.idle
        self.page_size = backend.page_size
        self.seconds = {k: 0.0 for k in ("swap_in", "swap_out", "discard", "flush", "idle")}
        self.windows_s = 0.0
        words = getattr(backend, "swap_in_words", None)
        if words is not None:
            self.swap_in_words = lambda ids: self._timed("swap_in", words, ids)

    def _timed(self, kind: str, fn, *args):
        t0 = self._clock()
        try:
            return fn(*args)
        finally:
            self.seconds[kind] += self._clock() - t0

    def swap_out(self, ids, pages, stream: int = 0) -> None:
        self._timed("swap_out", self._b.swap_out, ids, pages, stream)

    def swap_in(self, ids) -> np.ndarray:
        return self._timed("swap_in", self._b.swap_in, ids)

    def discard(self, ids) -> None:
        self._timed("discard", self._b.discard, ids)

    def flush(self) -> None:
        self._timed("flush", self._b.flush)

    def idle(self, seconds: float) -> None:
        self.windows_s += seconds
        self._timed("idle", self._idle, seconds)


def stall_breakdown(clock: StallClock, extra: dict, compute_s: float) -> dict:
    """The stall's parts, seconds on the model's clock (see the module): ``swap_in_reads``,
    ``swap_out_writes`` (swap-out, discard and flush calls without the GC inside them),
    ``gc_background_<read|write|reset>`` and ``gc_foreground_<...>`` (GC inside those calls; drain
    and manual GC counted as background), ``idle_overrun`` (idle windows' GC beyond the window),
    ``hidden_by_compute`` (negative: overlapped I/O the compute windows covered), their ``sum``
    (= the stall) and ``gc_in_front_of_reads`` (all GC outside the idle windows). ``extra``: the
    backend's ``stats().extra`` (no GC keys: a Linux run, all its writes are swap-outs);
    ``compute_s``: the trace's compute windows as charged."""
    s = clock.seconds
    gc = {(w, a): float(extra.get(f"gc_clock_{w}_{a}_s", 0.0)) for w in GC_WHYS for a in GC_ACTS}
    out = {"swap_in_reads": s["swap_in"]}
    for a in GC_ACTS:
        out[f"gc_background_{a}"] = gc["background", a] + gc["drain", a] + gc["manual", a]
        out[f"gc_foreground_{a}"] = gc["foreground", a]
    in_calls = sum(v for (w, _), v in gc.items() if w != "idle")
    out["swap_out_writes"] = s["swap_out"] + s["discard"] + s["flush"] - in_calls
    hidden = compute_s - clock.windows_s                  # the part of the windows overlapped I/O took
    out["idle_overrun"] = s["idle"] - clock.windows_s
    out["hidden_by_compute"] = -hidden
    out = {k: round(v, 4) for k, v in out.items()}
    out["gc_in_front_of_reads"] = round(in_calls, 4)
    out["sum"] = round(sum(s.values()) - compute_s, 4)
    return out

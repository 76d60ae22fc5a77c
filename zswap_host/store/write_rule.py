"""The store's write rule: how pages are cut into device writes, and whether a ``swap_out`` call is
one batch. One implementation, in C (``native/store_plan.c``): the planner (``store/plan.py``) calls
it through ``NativeWriteRule`` for the general path, and the express path's C (``native/store_out.c``)
calls the same function for the usual call. ``WriteRule`` is the interface; its pure-Python twin,
the oracle the C is tested against, is ``tests/support/write_rule_oracle.py``.

The rule, in pages:

* ``cut(n, least, room)``: ``n`` pages into a zone with ``room`` pages left go down as whole write
  units (``unit`` pages) while at least ``least`` pages remain and the zone has room, the last one
  cut at the zone's end. What is left waits in a write buffer.
* ``plan_batch``: a user stream's call of ``n`` pages, with ``buffered`` pages waiting in its write
  buffer, is *one batch* when it can go down as the buffer's unit (topped up from the call when
  shorter than ``least``) followed by the call's units, back to back into the stream's open zone:
  the same units, in the same order, as the general steps (top up; the buffer's unit with the
  call's units; the rest unit by unit). A call that fits the buffer, a buffer past its unit, a
  one-unit call with nothing buffered, or a batch past the zone's end is not (``Decline.NO_PLAN``),
  unless ``split_ok`` (a fresh zone can be taken without GC): then it is two runs, phase 1 filling
  the zone and phase 2 (``at``: the call's pages phase 1 wrote) writing the rest in the fresh zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from .._native import ffi, lib


class Decline(IntEnum):
    """Why ``plan_batch`` planned nothing (the numbers of ``native/store_plan.h``)."""

    NO_PLAN = -7        # not one batch: the general steps write the call
    UNITS = -8          # a run of more units than ``max_units``


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """One run of a call planned as one batch, into ``zone``: the call's first ``top`` pages top
    the write buffer up; the run is the buffer's first ``b`` pages then the call's ``w`` pages from
    ``at``, as ``units`` (pages per device append: ``b`` first when ``b``, then the call's in write
    units); ``w2``: phase 1 of a split call, the call's pages phase 2 writes (0: no split);
    ``zone_end``: the run fills the zone."""

    zone: int
    phase: int
    top: int
    at: int
    b: int
    w: int
    w2: int
    zone_end: bool
    units: tuple[int, ...]


class WriteRule(Protocol):
    """The write rule of a store whose write units are ``unit`` pages, whose smallest write (but
    on a flush, at a zone's end, or a GC tail) is ``least`` pages, and whose zones hold
    ``zone_pages`` data pages. ``ValueError`` for counts the rule does not take (negative, or
    ``least`` outside ``1..unit``, a room beyond ``zone_pages``); nothing else raises."""

    unit: int
    least: int
    zone_pages: int

    def cut(self, n: int, least: int, room: int) -> list[int]:
        """Pages per device append of ``n`` pages into a zone with ``room`` pages left (see the
        module docstring); their sum is what gets written, the rest waits."""

    def plan_batch(self, zone: int, n: int, buffered: int, room: int, split_ok: bool = False, phase: int = 1,
                   at: int = 0, max_units: int | None = None) -> BatchPlan | Decline:
        """The call's run into ``zone`` (``room`` pages left) as one batch, or why not. ``max_units``:
        the most units a run may have (None: no limit)."""


class NativeWriteRule:
    """``WriteRule`` in C (``native/store_plan.c``). ``calls``: decisions the C made (tests count
    them, so that a comparison with the oracle cannot pass with the C never run)."""

    def __init__(self, unit: int, least: int, zone_pages: int) -> None:
        if not 1 <= least <= unit or zone_pages < 0:
            raise ValueError(f"write rule: need 1 <= least <= unit and zone_pages >= 0, "
                             f"not {least}, {unit}, {zone_pages}")
        self.unit, self.least, self.zone_pages = unit, least, zone_pages
        self._max = zone_pages // unit + 2           # units of a run into one zone, the buffer's included
        self._pages = ffi.new("int64_t[]", self._max)
        self._p = p = ffi.new("st_batch *")
        p.unit, p.least, p.zone_pages, p.units = unit, least, zone_pages, self._pages
        self.calls = 0

    def cut(self, n: int, least: int, room: int) -> list[int]:
        if n < 0 or not 0 <= room <= self.zone_pages or not 1 <= least <= self.unit:
            raise ValueError(f"write rule: cut({n}, least={least}, room={room}) with units of {self.unit} "
                             f"into zones of {self.zone_pages} pages")
        self.calls += 1
        k = lib.st_cut(n, least, room, self.unit, self._pages, self._max)
        return ffi.unpack(self._pages, k)

    def plan_batch(self, zone: int, n: int, buffered: int, room: int, split_ok: bool = False, phase: int = 1,
                   at: int = 0, max_units: int | None = None) -> BatchPlan | Decline:
        p = self._p
        p.n, p.at, p.buffered, p.room, p.split_ok, p.phase = n, at, buffered, room, split_ok, phase
        p.max_units = self._max if max_units is None else min(max_units, self._max)
        rc = lib.st_plan_batch(p) if room <= self.zone_pages else -10
        if rc == -10:
            raise ValueError(f"write rule: plan_batch(n={n}, buffered={buffered}, room={room}, phase={phase}, "
                             f"at={at}, max_units={max_units}) with units of {self.unit}, least {self.least}, "
                             f"zones of {self.zone_pages} pages")
        self.calls += 1
        if rc != 1:
            return Decline(rc)
        return BatchPlan(zone, phase, p.top, p.at, p.b, p.w, p.w2, bool(p.zone_end),
                         tuple(ffi.unpack(self._pages, p.nunits)))

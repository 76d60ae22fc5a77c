"""The store's write rule in pure Python: the oracle ``NativeWriteRule`` (native/store_plan.c,
zswap_host/store/write_rule.py) is compared with. Written from the general path's steps, which
the rule must reproduce: a stream's pages into a zone (``Planner``'s units: whole write units while
``least`` pages remain and the zone has room), and a swap-out call as the committer writes it
(top the buffer up; the buffer's unit and the call's units; the rest unit by unit; at a zone's
end, fill it, seal, and the rest into a fresh zone)."""

from __future__ import annotations

from zswap_host.store.write_rule import BatchPlan, Decline


class OracleWriteRule:
    """``WriteRule`` in Python (same arguments, results and errors as ``NativeWriteRule``)."""

    def __init__(self, unit: int, least: int, zone_pages: int) -> None:
        if not 1 <= least <= unit or zone_pages < 0:
            raise ValueError("write rule: need 1 <= least <= unit and zone_pages >= 0")
        self.unit, self.least, self.zone_pages = unit, least, zone_pages
        self.calls = 0

    def cut(self, n: int, least: int, room: int) -> list[int]:
        if n < 0 or not 0 <= room <= self.zone_pages or not 1 <= least <= self.unit:
            raise ValueError("write rule: bad cut")
        self.calls += 1
        return self._cut(n, least, room)

    def _cut(self, n: int, least: int, room: int) -> list[int]:
        lens = []
        while n >= least and room > 0:
            m = min(self.unit, n, room)
            lens.append(m)
            n, room = n - m, room - m
        return lens

    def _whole(self, n: int) -> int:
        """The call's pages the general steps write of ``n`` into a zone with room for them all:
        whole units, and a last one of at least ``least`` pages."""
        tail = n % self.unit
        return n - tail if tail < self.least else n

    def plan_batch(self, zone: int, n: int, buffered: int, room: int, split_ok: bool = False, phase: int = 1,
                   at: int = 0, max_units: int | None = None) -> BatchPlan | Decline:
        unit, least = self.unit, self.least
        if min(n, buffered, room) < 0 or room > self.zone_pages or phase not in (1, 2) or \
                (phase == 2 and not 0 <= at <= n) or (max_units is not None and max_units < 1):
            raise ValueError("write rule: bad plan_batch")
        self.calls += 1
        limit = max_units if max_units is not None else 1 << 62
        if phase == 2:
            w = self._whole(n - at)
            if w <= 0 or w > room:
                return Decline.NO_PLAN
            return self._plan(zone, 2, 0, at, 0, w, 0, False, limit)
        r = buffered
        if n <= 0 or r + n < unit or r > unit:      # gathers in the buffer; a buffer to flush first
            return Decline.NO_PLAN
        top = unit - r if 0 < r < least else 0
        rest = n - top
        b = r + top
        if b and rest < least:
            return Decline.NO_PLAN
        w, w2, zone_end = self._whole(rest), 0, False
        if b + w > room:                            # the zone's end: _write_buffer_and fills it
            if not split_ok or b > room:
                return Decline.NO_PLAN
            w = sum(self._cut(rest, least, room - b))
            if b + w != room:
                return Decline.NO_PLAN
            w2 = self._whole(rest - w)              # the rest, _write_one into a fresh zone
            if w2 > self.zone_pages:
                return Decline.NO_PLAN
            if -(-w2 // unit) > limit:
                return Decline.UNITS
            zone_end = True
        elif not b and w <= unit:                   # one unit and nothing buffered: the plain path
            return Decline.NO_PLAN
        return self._plan(zone, 1, top, top, b, w, w2, zone_end, limit)

    def _plan(self, zone, phase, top, at, b, w, w2, zone_end, limit) -> BatchPlan | Decline:
        units = ([b] if b else []) + [self.unit] * (w // self.unit) + ([w % self.unit] if w % self.unit else [])
        if len(units) > limit:
            return Decline.UNITS
        return BatchPlan(zone, phase, top, at, b, w, w2, zone_end, tuple(units))

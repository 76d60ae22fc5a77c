"""The usual ``swap_out`` call in one C call (issue 12): in the QEMU guest (TCG) every Python step
costs tens of microseconds, and the general path's ~120 of them per 2 MiB call cost as much as the
device write itself.

The usual call: a flat int64 batch of distinct ids whose pages are all fresh or replace copies on
the device (none waits in a write buffer), on a placement that sends the whole call to one stream,
written as that stream's buffered unit (topped up from the batch) and the batch's whole units,
back to back into the stream's open zone, which has room for them all; the rest waits in the
buffer. ``native/store_out.c`` checks and plans it (the plan is the store's write rule,
``st_plan_batch``: store/write_rule.py), hands out the new handles, tops the buffer up, and after
the device write commits the run and buffers the tail: the only code that orders these steps (the
general path writes a call it declines unit by unit, with the same units, device calls and
result: ``Committer.stream_write``). At a zone's end the call is two runs, as the
general path writes it: the first fills the zone, the store seals it and opens the next (Python),
the second writes the rest there. On a Linux zoned namespace on the uring-cmd path the device
write runs inside the same C call (``st_out_call`` with the device's ``run_writer``: the run handed
over as a neutral, versioned ``zs_run``, ``native/append_run.h``, appended by
``native/uring_store.c``); elsewhere the committer's ``send_units`` writes between the C steps.

Anything else is declined with nothing changed (``Express.declined`` counts why) and the caller
takes the general path. A batch that was sent but did not land back to back (a failed append,
another order) continues on the general path from that point (``Committer.stream_write(sent=)``,
``_land_sent``: ``_land``'s commits and retries). tests/store/test_store_express.py checks both paths leave the same
state.

Everything it uses of the store comes through the store's ``StoreState`` (store/state.py: the
rooms, the per-handle arrays whose layout it documents, the counters it advances), its
``Committer`` (the general path's steps it hands a call to) and the rooms' public members
(``IdMap.direct`` / ``free_stack`` / ``reused`` / ``handed_out``, ``SlotMap.arrays``, ``ZoneAllocator.cursors``).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..errors import DeviceIOError, SwapFullError
from .book import IN_FLIGHT
from .native import load
from .placement import Placement, Streams
from .write_rule import BatchPlan
from .zone_failures import raise_write_error

_ST_OUT_DEVICE = -9                                 # native/store_out.h: the ring's writer refused the run
_I64 = np.dtype(np.int64)
_U8 = np.dtype(np.uint8)


class Express:
    """One store's usual ``swap_out`` call in C (see the module docstring). Use ``make``."""

    def __init__(self, state, writer, native, ffi, lib, stream_mod: int) -> None:
        self._s = state                             # the store's StoreState (store/state.py)
        self._w = writer                            # its Committer (store/commit.py): the general path
        self._send = writer.send_units              # (bound once: the run's device write, every call)
        self._native = native                       # the store's NativeBook
        self._ffi, self._lib = ffi, lib
        self._fb = ffi.from_buffer
        self._mod = stream_mod                      # stream of a call: stream % mod (0: always 0)
        o = self._o = ffi.new("st_out *")
        z = state.zones
        o.slots_per_zone = state.slots.slots_per_zone
        o.data_slots = z.data_slots
        o.page_size = state.page_size
        o.unit = state.unit_pages
        o.least = state.min_write_pages
        self._ps = state.page_size
        self._p: tuple = ()                         # NativeBook's pointers the struct holds
        self._written = None                        # the zones' cursors the struct points at
        self._bufs: list = [None] * len(state.buffers)   # per stream: (ids, data) the struct may point at
        self._h = np.empty(0, np.int64)             # scratch: the batch's handles, the run's page ids
        self._ids_out = np.empty(0, np.int64)
        # the device's writer of append runs (native/append_run.h: it takes the run the struct
        # describes, o.run, never the struct), for the run inside the C call: st_out_call
        writer = getattr(state.device, "run_writer", None)
        self._port = writer(int(ffi.cast("uintptr_t", ffi.addressof(o, "run")))) if writer is not None else None
        self._call = None if self._port is None else \
            partial(lib.st_out_call, o, ffi.cast("zs_run_writer *", self._port.writer))
        self.taken = 0                              # calls done here
        self.split = 0                              # ... of them written as two runs (a zone's end)
        self.declined: dict[int, int] = {}          # st_out_plan's reason -> calls left to the general path

    @classmethod
    def make(cls, state, writer, native) -> "Express | None":
        """The store's express path (``state``: its ``StoreState``; ``writer``: its ``Committer``;
        ``native``: its ``NativeBook``), or None when its placement looks at more than the call's stream
        (``counts_swap_outs``, or an ``assign`` of its own)."""
        pl = state.placement
        assign = type(pl).assign
        if pl.counts_swap_outs or assign not in (Placement.assign, Streams.assign):
            return None
        ffi, lib = load()
        return cls(state, writer, native, ffi, lib, state.n_user if assign is Streams.assign else 0)

    @property
    def in_one_call(self) -> bool:
        """True when the device write runs inside the C call (the uring-cmd path)."""
        return self._port is not None

    def swap_out(self, ids, pages, stream) -> bool:
        """``SwapStore.swap_out(ids, pages, stream)`` when it is the usual call: True, done (every
        contract of ``swap_out`` held: it returned, or raised what the general path raises past its
        commit point). False, with nothing changed, for any other call."""
        if type(ids) is not np.ndarray or type(pages) is not np.ndarray or type(stream) is not int \
                or ids.dtype != _I64 or ids.ndim != 1 or pages.dtype != _U8:
            return False
        n = ids.size
        if pages.shape != (n, self._ps):
            return False
        try:
            idp, pgp = self._fb("int64_t[]", ids), self._fb("uint8_t[]", pages)
        except ValueError:                          # not C-contiguous
            return False
        s = self._s
        with s.lock:
            idm = s.idmap
            room = s.room()
            if room < 0:
                return False
            k = stream % self._mod if self._mod else 0
            zones = s.zones
            z = zones.current(s.group_of[k])
            if z is None:
                return False
            o = self._o
            p = self._native.pointers()
            if p is not self._p:                    # (the zones' cursors are one array for good)
                self._refresh(p)
            buf = s.buffers[k]
            c = self._bufs[k]
            if c is None or c[0] is not buf.ids or c[1] is not buf.data:
                c = self._bufs[k] = (buf.ids, buf.data, self._fb("int64_t[]", buf.ids), self._fb("uint8_t[]", buf.data))
            if n > self._h.size:
                self._scratch(n)
            o.buf_ids, o.buf_data, o.buf_cap = c[2], c[3], c[0].size
            o.ids, o.pages, o.n, o.zone, o.buf_n, o.tag = idp, pgp, n, z, buf.n, k + 1
            o.next_handle, o.reusable, o.room_pages = idm.handles, idm.reusable, room
            o.split_ok, o.phase = zones.can_take(False), 1
            rc = self._run(o, pages)
            if rc <= 0:
                self.declined[rc] = self.declined.get(rc, 0) + 1
                return False
            # -- past the commit point: the batch is accepted (the handles are handed out)
            if idm.reusable:                        # st_insert's handles: discarded ones first,
                take = min(o.fresh, idm.reusable)
                idm.reused(take)
                idm.handed_out(o.fresh - take)      # then new ones (next_handle moved by as many)
            else:
                idm.handed_out(o.fresh)
            s.stored(o.new_pages, n * self._ps)
            s.fast_path["prepared"] += 1
            group = s.group_of[k]
            b, w, at, w2, top = o.b, o.w, o.top, o.w2, o.top
            for phase in (1, 2):
                if rc <= 0:                         # a second run st_out_plan declined (the first planned it:
                    self._continue(k, ids, idp, pages, pgp, None, None, at)   # not expected): the general path
                    return True
                if rc >> 8 != 1:                    # not landed back to back: the general path lands it
                    out = self._out if self._out is not None else self._port.results(
                        rc, s.config.append_qd, (buf.data[:b], pages[at:at + w]) if b else (pages[at:at + w],))
                    units = self._w.planner.one_batch_units(z, b, w)[2]
                    plan = BatchPlan(z, phase, top, at, b, w, w2, bool(o.zone_end), tuple(units))
                    self._continue(k, ids, idp, pages, pgp, plan, out)
                    return True
                buf.n = o.buf_n
                full = zones.record(z, o.first_slot, self._ids_out[:b + w].copy())
                s.landed_batch(phase, o.zone_end, o.nunits)
                if full:
                    self._w.seal(group, z)
                if phase == 2 or not w2:
                    break
                b, w, at, w2, top = 0, w2, at + w, 0, 0
                try:
                    z = o.zone = self._w.zone_for(group, False)   # a fresh zone: split_ok said one can be taken
                except Exception as e:              # as from _write_one: the rest waits in the buffer
                    buf.n = o.buf_n
                    self._w.buffer(k, self._h[at:n].copy(), pages[at:])
                    if not isinstance(e, (DeviceIOError, SwapFullError)):
                        raise
                    self._w.collector.background()
                    raise_write_error(e)
                o.phase = 2
                self.split += 1
                rc = self._run(o, pages)
            self.taken += 1
            self._w.collector.background()
            return True

    def _run(self, o, pages: np.ndarray) -> int:
        """The C call(s) of one run: ``st_out_call``'s result with the device's run writer, or the
        same from ``st_out_plan`` / ``st_out_stage`` / the committer's ``send_units`` /
        ``st_out_end``: <= 0 declined (nothing changed), else (status << 8) | units, status 1
        landed and committed, 2 not landed back to back (``self._out``: the device's offsets and
        failures when the run was sent from here, None when the ring sent it). A run the ring
        staged without sending (status 3), or a second run its writer refuses (``ST_OUT_DEVICE``:
        past the commit point), is sent from here with the same C steps around the write: their
        order is C's alone (a first run it refuses is declined: the general path writes the call)."""
        self._out = None
        lib = self._lib
        port = self._port
        rc = port(self._s.config.append_qd, self._call) if port is not None else _ST_OUT_DEVICE
        if rc > 0 and rc >> 8 != 3:
            return rc                               # landed (1) or sent (2) by the ring
        if rc <= 0:
            if port is not None and (rc != _ST_OUT_DEVICE or o.phase == 1):
                return rc                           # declined, nothing changed
            rc = lib.st_out_plan(o)
            if rc <= 0:
                return rc
            lib.st_out_stage(o)
        s, b, w, at = self._s, o.b, o.w, o.at
        buf = s.buffers[o.tag - 1]
        buf.n = o.buf_n
        out = self._send(o.zone, b, w, buf, pages[at:at + w], o.first_slot)
        if out is True:
            lib.st_out_end(o)
            return (1 << 8) | o.nunits
        self._out = out
        return (2 << 8) | o.nunits

    def _continue(self, k: int, ids: np.ndarray, idp, pages: np.ndarray, pgp, plan: BatchPlan | None, out,
                  at: int = 0) -> None:
        """A call staged here whose run (``plan``) did not land back to back (``out``: the device's
        offsets and failures) goes on as the general path from that run's device write:
        ``swap_out``'s in-flight marks (phase 2: on the pages not written yet),
        ``Committer.stream_write`` from the landing of that run (which counts it as
        ``StoreState.landed_batch`` says), GC's turn, and the errors ``swap_out`` raises past its
        commit point. ``plan`` None: the pages from ``at`` are written the general path's way."""
        s, nat = self._s, self._native
        s.buffers[k].n = self._o.buf_n
        h = self._h[:ids.size].copy()
        hp = self._fb("int64_t[]", h)
        nat.prepared(ids, idp, h, hp)
        error = None
        if plan is not None:
            at = 0 if plan.phase == 1 else plan.at
        nat.fill(IN_FLIGHT, h[at:] if at else h, 1)
        try:
            try:
                if plan is None:
                    self._w.stream_write(k, h[at:], pages[at:])
                else:
                    self._w.stream_write(k, h, pages, sent=(plan, out))
            except (DeviceIOError, SwapFullError) as e:
                error = e
        finally:
            nat.fill(IN_FLIGHT, h, 0)
        self._w.collector.background()
        raise_write_error(error)

    def _refresh(self, p: tuple) -> None:
        """Point the struct at the store's arrays (one was replaced: grown)."""
        s, o = self._s, self._o
        a = self._native.arrays
        o.direct, o.id_of, o.loc, o.rmap, o.valid, o.buffer_of, o.in_flight, o.free_stack = p
        o.direct_size = a[0].size
        o.handle_cap = min(a[1].size, a[2].size, a[5].size, a[6].size)
        self._written = s.zones.cursors             # the struct points at it: keep it alive here
        o.written = self._fb("int64_t[]", self._written)
        self._p = p

    def _scratch(self, n: int) -> None:
        n = max(n, 2 * self._h.size)
        self._h = np.empty(n, np.int64)
        self._ids_out = np.empty(n + self._s.unit_pages, np.int64)
        self._o.h = self._fb("int64_t[]", self._h)
        self._o.ids_out = self._fb("int64_t[]", self._ids_out)


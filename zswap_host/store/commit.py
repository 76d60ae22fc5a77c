"""The committer: the store's one write path, from write buffers to the map.

Every write of the store goes through here: a swap-out batch (``stream_write``), a buffer flush
(``flush_buffer`` / ``flush_streams``) and a GC relocation (``relocate`` / ``flush_relocated``, the
collector's ``GcHost.queue_relocated`` / ``flush_relocated``). Each is planned by the planner
(``store/plan.py``: a ``WritePlan``) and then landed here: the units sent to the device, the map
entries of those that landed committed (each zone in its order; units back to back are one
commit), zones now full sealed, failed units retried in this or other zones and zone failures
handled (``store/zone_failures.py``: read-only zones retired and drained by GC, offline ones retired
and the pages whose only copy was there flagged lost).

Invariants: a page's map entry moves only after its new copy is written (``commit``, after the
allocator checked the device wrote at the zone's cursor); a zone is reset only when no entry points
into it. The express path (``store/express.py``) makes the usual call's plan, staging and commit in
C on the same state and hands any call whose run did not land back to back to ``stream_write``.
"""

from __future__ import annotations

import numpy as np

from ..errors import DeviceIOError, SwapFullError
from .book import BUFFER_OF, IN_FLIGHT, Bookkeeper
from .plan import Planner, WritePlan
from .state import StoreState
from .write_rule import BatchPlan
from .zone_failures import ZoneFailures, raise_write_error


class Committer:
    """One store's write path (see the module docstring). ``book``: its ``Bookkeeper``
    (store/book.py); ``collector``: set by the store once built (the collector needs the
    committer's port first)."""

    def __init__(self, state: StoreState, planner: Planner, book: Bookkeeper) -> None:
        self._st = state
        self.planner = planner
        self._book = book
        self.collector = None
        self._device = state.device
        self._ps, self._qd = state.page_size, state.config.append_qd
        self._units = planner.one_batch_units
        # the device's append_batch that also says whether the units landed back to back where the
        # store expects them (ZonedDevice.append_run: numpy on the emulated devices, one C call on
        # a Linux zoned namespace's uring-cmd path)
        self._append_run = state.device.append_run
        # when a write fails: retries, seals, zone failures (store/zone_failures.py)
        failures = ZoneFailures(state, self)
        self._write_unit, self.seal, self.zone_trouble = failures.write_unit, failures.seal, failures.trouble

    # -- write buffers ------------------------------------------------------------------------------
    def buffer(self, k: int, handles: np.ndarray, pages: np.ndarray, words: bool = False) -> None:
        """Pages wait in buffer k (``words``: given as their first words, ``WriteBuffer.add_words``)."""
        st = self._st
        if words:
            st.buffers[k].add_words(handles, pages)
        else:
            st.buffers[k].add(handles, pages)
        self._book.fill(BUFFER_OF, handles, k + 1)

    # -- a GC relocation: the GC stream's buffer, written as any stream's ---------------------------
    def relocate(self, handles: np.ndarray, pages: np.ndarray) -> None:
        """Relocated pages (rows, or first words on a payload-free device) join the GC stream; whole
        write units of it are written."""
        k = self._st.gc_buffer
        self.buffer(k, handles, pages, words=pages.ndim == 1)
        self.flush_buffer(k, force=False)

    def flush_relocated(self) -> None:
        self.flush_buffer(self._st.gc_buffer, force=True)

    # -- a swap-out batch ---------------------------------------------------------------------------
    def write_batch(self, h: np.ndarray, pages: np.ndarray, streams) -> None:
        """Write an accepted ``swap_out`` batch (handles ``h``, past its commit point) to its streams
        (``streams``: one stream, or one per page), then give GC its turn; raises what ``swap_out``
        raises past its commit point (``raise_write_error``)."""
        book = self._book
        error = None
        groups = [(int(streams), h, pages)] if type(streams) is int or np.isscalar(streams) else \
            [(int(s), h[streams == s], pages[streams == s]) for s in np.unique(streams)]
        # until every page of the batch is written or buffered, the batch's pages are its newest
        # copies: losing or relocating an old copy of one of them is neither a loss nor a move
        book.fill(IN_FLIGHT, h, 1)
        try:
            for s, sh, spages in groups:
                try:
                    self.stream_write(s, sh, spages)
                except (DeviceIOError, SwapFullError) as e:
                    error = e
        finally:
            book.fill(IN_FLIGHT, h, 0)
        self.collector.background()
        raise_write_error(error)

    def stream_write(self, k: int, handles: np.ndarray, pages: np.ndarray, sent: tuple | None = None) -> None:
        """Small batches gather in the stream's buffer; large ones go to the device straight from
        the caller's array in writes of ``min_write_pages``..``unit_pages`` pages, the rest waits.
        ``sent``: the express path (store/express.py) planned the call, topped the buffer up and
        sent a run of it that did not land back to back: ``(BatchPlan, the device's (offsets,
        failures))``; the call goes on from that run's landing (``_land_sent``)."""
        st = self._st
        buf, unit, i, n = st.buffers[k], st.unit_pages, 0, handles.size
        least = st.min_write_pages
        done = np.zeros(n, bool)
        clean = False                            # True: nothing past i was written (no error)
        try:
            if sent is not None:
                plan, out = sent
                i = plan.at
                i += self._land_sent(k, handles, pages, done, plan, out)
            elif buf.n + n < unit:
                i = n
                self.buffer(k, handles, pages)
                return
            else:
                if buf.n and buf.n < least:      # top the buffer up to one write unit
                    i = unit - buf.n
                    self.buffer(k, handles[:i], pages[:i])
                if buf.n >= least and n - i >= least:
                    i += self._write_buffer_and(k, handles[i:], pages[i:], done[i:])
            if buf.n >= least:
                self.flush_buffer(k, force=False, least=least)
            while n - i >= least:
                done[i:] = False
                i += self._write_one(k, handles[i:], pages[i:], least, False, done[i:])
            clean = True
        finally:
            if i < n:                            # what is not on the device waits in the buffer
                if clean:                        # the tail, as slices (no gather)
                    self.buffer(k, handles[i:], pages[i:])
                else:
                    rest = np.flatnonzero(~done[i:]) + i
                    self.buffer(k, handles[rest], pages[rest])

    def _land_sent(self, k: int, handles: np.ndarray, pages: np.ndarray, done: np.ndarray, plan: BatchPlan,
                   out) -> int:
        """Land an express run (a ``BatchPlan``'s units: the buffer's first ``plan.b`` pages, then the
        caller's from ``handles[plan.at:]``) that did not land back to back, as the general path's
        plan would (``_land``, retries included); ``out``: the device's (offsets, failures). Returns
        the caller's pages written (a prefix of ``handles[plan.at:]``); ``done`` marks them as
        ``_land`` does."""
        st = self._st
        at, b = plan.at, plan.b
        buf = st.buffers[k]
        offsets, failures = out
        caller = (k, handles[at:], pages[at:], st.min_write_pages, False, done[at:])
        if not b:
            wp = self.planner.one_batch_plan(k, plan, None, caller)
            return self._land(wp, offsets, failures)[0]
        bids = buf.ids[:b].copy()
        done_buf = np.zeros(b, bool)
        wp = self.planner.one_batch_plan(k, plan, (k, bids, buf.data[:b], st.min_write_pages, True, done_buf), caller)
        try:
            return self._land(wp, offsets, failures)[1]
        finally:
            buf.drop_written(bids, done_buf)

    def send_units(self, z: int, b: int, w: int, buf, mine: np.ndarray, first: int):
        """Send a one-batch run's units (the buffer's first ``b`` pages, then ``mine``) as one
        batch expected back to back from slot ``first`` (the device's ``append_run``): True when
        they landed so, else the device's (offsets, failures)."""
        zarr, lbytes, _ = self._units(z, b, w)
        return self._append_run(zarr, (buf.data[:b], mine) if b else (mine,), lbytes, self._qd, first * self._ps)

    def _write_buffer_and(self, k: int, handles: np.ndarray, pages: np.ndarray, done: np.ndarray) -> int:
        """Stream k's buffered write unit and the caller's next units as one batch (one trip to the
        device instead of two); returns how many of the caller's pages were written (a prefix)."""
        st = self._st
        buf, least = st.buffers[k], st.min_write_pages
        ids = buf.ids[:buf.n].copy()
        done_buf = np.zeros(ids.size, bool)
        try:
            return self._write_jobs([(k, ids, buf.data[:buf.n], least, True, done_buf),
                                     (k, handles, pages, least, False, done)])[1]
        finally:
            buf.drop_written(ids, done_buf)

    # -- flushes ------------------------------------------------------------------------------------
    def flush_buffer(self, k: int, force: bool, least: int | None = None) -> None:
        """Write buffered pages while at least ``least`` pages wait (default: a whole write unit;
        ``force``: everything)."""
        buf = self._st.buffers[k]
        least = 1 if force else (least or self._st.unit_pages)
        while buf.n >= least:
            ids = buf.ids[:buf.n].copy()
            done = np.zeros(ids.size, bool)
            try:
                self._write_one(k, ids, buf.data[:buf.n], least, True, done)
            finally:
                buf.drop_written(ids, done)

    def flush_streams(self) -> None:
        """The user streams' buffers that fit their open zones go down as one batch (each stream's
        units into its own zone, all in flight together); the rest is left to ``flush_buffer``."""
        st = self._st
        jobs = []
        for k in range(st.n_user):
            buf = st.buffers[k]
            z = st.zones.current(st.group_of[k])
            if buf.n and z is not None and buf.n < st.zones.room(z):   # no zone fills: no seal between
                jobs.append((k, buf.ids[:buf.n].copy(), buf.data[:buf.n], 1, True, np.zeros(buf.n, bool)))
        if len({st.zones.current(st.group_of[j[0]]) for j in jobs}) < 2:
            return
        try:
            self._write_jobs(jobs)
        finally:
            for k, ids, _, _, _, done in jobs:
                st.buffers[k].drop_written(ids, done)

    def flush_all(self) -> Exception | None:
        """Write every buffered page (user streams, then GC's); the last write error, or None."""
        error = None
        try:
            self.flush_streams()
        except (DeviceIOError, SwapFullError) as e:
            error = e
        for k in list(range(self._st.n_user)) + [self._st.gc_buffer]:
            try:
                self.flush_buffer(k, force=True)
            except (DeviceIOError, SwapFullError) as e:
                error = e
        return error

    # -- plans landed -------------------------------------------------------------------------------
    def _write_jobs(self, jobs: list) -> list[int]:
        """One ``append_batch`` for several streams' write units (jobs: ``(k, handles, data, least,
        buffered, done)``, each stream into its own open zone): the units of one zone are in
        flight together and land where the device chooses; they are committed in the zone's
        order. A unit that fails goes through ``ZoneFailures.write_unit``'s retries afterwards."""
        if len(jobs) == 1:
            return [self._write_one(*jobs[0])]
        st = self._st
        zone_of = [self.zone_for(st.group_of[k], k == st.gc_buffer) for k, *_ in jobs]
        wp = self.planner.jobs(jobs, zone_of)
        if len(wp.units) == 1:                   # one unit: the plain path (and its retries)
            j, _, _, m = wp.units[0]
            k, handles, data, _, buffered, done = jobs[j]
            w = self._write_unit(k, handles[:m], data[:m], buffered)
            done[:w] = True
            return [w if i == j else 0 for i in range(len(jobs))]
        # several jobs: one buffer per unit, gathered by the device without a copy
        data = [jobs[j][2][a:a + m] for j, _, a, m in wp.units]
        offsets, failures = self._device.append_batch(wp.zones, data, wp.nbytes, st.config.append_qd)
        return self._land(wp, offsets, failures)

    def _write_one(self, k: int, handles: np.ndarray, data: np.ndarray, least: int, buffered: bool,
                   done: np.ndarray) -> int:
        """Write stream k's pages in write units into its zone: as many units as the zone has room
        for (while at least ``least`` pages remain), as one ``append_batch``. Returns the pages
        written, a prefix of ``handles``; ``done`` marks each page as it is committed, so that a
        caller seeing an exception knows which pages are on the device. (``_write_jobs`` of one
        job, the common case: the plan's arrays cached; units that landed back to back in plan
        order, the usual batch, are one commit.)"""
        st = self._st
        group = st.group_of[k]
        z = self.zone_for(group, k == st.gc_buffer)
        lens = self.planner.stream_lengths(z, handles.size, least)
        if not lens:
            return 0
        if len(lens) == 1:                       # one unit: the plain path (and its retries)
            m = lens[0]
            w = self._write_unit(k, handles[:m], data[:m], buffered)
            done[:w] = True
            return w
        wp = self.planner.stream((k, handles, data, least, buffered, done), z, group, lens)
        offsets, failures = self._device.append_batch(wp.zones, data[:wp.written[0]], wp.nbytes, st.config.append_qd)
        return self._land(wp, offsets, failures)[0]

    def _land(self, wp: WritePlan, offsets: np.ndarray, failures: list) -> list[int]:
        """Account for an ``append_batch`` of ``wp``'s units: commit what landed, each zone in its
        order (units landed back to back: one commit), seal zones now full, retry failed units
        (``ZoneFailures.write_unit``: this or other zones). Returns the pages written per job."""
        st = self._st
        ps = st.page_size
        jobs, plan, owners = wp.jobs, wp.units, wp.owners
        gc = st.gc_buffer
        if not failures and plan and wp.first >= 0:
            # the usual batch: one zone (first >= 0), every unit where the plan expects it (back to
            # back in plan order from the cursor); then
            # the commits below are those of the general loop (same runs, same order), without it
            z = plan[0][1]
            runs = []
            for (j, _, a, m), off, expect in zip(plan, offsets.tolist(), wp.expected(ps)):
                if off != expect:
                    break
                if runs and runs[-1][0] == j and runs[-1][1] + runs[-1][2] == a:
                    runs[-1][2] += m
                else:
                    runs.append([j, a, m, off])
            else:
                full = False
                for j, a, m, off in runs:
                    k, handles, _, _, buffered, done = jobs[j]
                    if self.commit(handles[a:a + m], z, off, k == gc, buffered):
                        full = True
                    done[a:a + m] = True
                if full:
                    self.seal(owners[z], z)
                st.fast_path["one_commit_batches"] += 1
                return wp.written
        zones = np.array([u[1] for u in plan], np.int64)
        full = set()
        run = None                                               # units landed back to back: one commit
        for u in np.lexsort((offsets, zones)).tolist() + [None]:  # each zone in its order: cursors move on
            if u is not None and offsets[u] < 0:
                continue
            if u is not None and run is not None:
                j, z, a, m = plan[u]
                rj, rz, ra, rm, roff = run
                if (j, z, a, int(offsets[u])) == (rj, rz, ra + rm, roff + rm * ps):
                    run = (rj, rz, ra, rm + m, roff)
                    continue
            if run is not None:
                j, z, a, m, off = run
                k, handles, _, _, buffered, done = jobs[j]
                if self.commit(handles[a:a + m], z, off, k == gc, buffered):
                    full.add(z)
                done[a:a + m] = True
            run = None if u is None else (*plan[u], int(offsets[u]))
        for z in sorted(full):
            self.seal(owners[z], z)
        for u, _ in failures:                                    # retried in this or other zones
            j, _, a, left = plan[u]
            k, handles, data_j, _, buffered, done = jobs[j]
            while left:
                w = self._write_unit(k, handles[a:a + left], data_j[a:a + left], buffered)
                done[a:a + w] = True
                a, left = a + w, left - w
        return wp.written

    def zone_for(self, group: int, for_gc: bool) -> int:
        """The group's open zone, taking a free one (GC reclaiming one if need be); SwapFullError."""
        zones = self._st.zones
        while True:
            z = zones.current(group)
            if z is not None:
                return z
            if zones.can_take(for_gc):
                z = zones.take(group)
                self._device.place_zone(z, group, for_gc)
                return z
            if self.collector.reclaim_empty():
                continue
            if for_gc:
                # no free zone (a write failure cost GC its zone mid-victim): borrow the open zone
                # of a user stream rather than stop
                z = zones.borrow(group)
                if z is not None:
                    return z
                raise SwapFullError("no free zone left for GC relocation")
            if not self.collector.foreground():
                raise SwapFullError("no free zone and GC cannot reclaim one")

    def commit(self, handles: np.ndarray, z: int, off: int, for_gc: bool, buffered: bool) -> bool:
        """The new copies are on the device at ``off``: advance the zone's cursor, move the map
        entries (invalidating the old copies). True when the zone's data area is now full."""
        st = self._st
        first = off // st.page_size
        full = st.zones.record(z, first, st.idmap.ids[handles])   # raises before any change
        self._book.commit(handles, first, buffered)
        if for_gc:
            self.collector.wrote(handles.size * st.page_size)
        return full

"""When a write fails: the store's retries and its zone failures.

A unit that failed is appended again (``write_unit``): in the same zone once while the device still
reports it writable (a transient error must not cost a zone), then in other zones, up to
``StoreConfig.write_retries`` more times. A zone given up (``write_failed``) goes back to the free
list when the store wrote nothing there, else it is finished and left to GC. A zone the device
reports read-only is retired and queued for GC to drain; one reported offline is retired and the
pages whose only copy was there are lost (flagged, counted, reported by ``SwapStore.take_lost`` and
``PageLostError``; a page with a newer copy in a write buffer or on its way is not). What
``swap_out`` raises for a write error past its commit point: ``raise_write_error``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..devices.zone import ZoneCond
from ..errors import DeviceIOError, SwapFullError, ZswapError
from .state import StoreState


def raise_write_error(error: Exception | None) -> None:
    """What ``swap_out`` raises for a write error past its commit point (the batch is stored)."""
    if isinstance(error, SwapFullError):
        raise SwapFullError(
            f"{error}: the batch was stored and waits in host buffers until GC frees a zone",
            np.zeros(0, np.int64)) from error
    if error is not None:
        raise error


class UnitWriter(Protocol):
    """What ``ZoneFailures`` uses of the committer: its zone choice, its commit, its collector."""

    collector: object

    def zone_for(self, group: int, for_gc: bool) -> int: ...

    def commit(self, handles: np.ndarray, z: int, off: int, for_gc: bool, buffered: bool) -> bool: ...


class ZoneFailures:
    """One store's retries and zone failures (see the module docstring). ``writer``: its committer."""

    def __init__(self, state: StoreState, writer: UnitWriter) -> None:
        self._st, self._w = state, writer
        self._device = state.device

    def write_unit(self, k: int, handles: np.ndarray, data: np.ndarray, buffered: bool = True) -> int:
        """Append up to len(handles) pages into stream k's zone (one unit, retried in this zone
        once and then in others); returns how many were written. Raises the last
        ``DeviceIOError`` when every try failed, ``SwapFullError`` when no zone is left."""
        st, w = self._st, self._w
        group, for_gc = st.group_of[k], k == st.gc_buffer
        error: DeviceIOError | None = None
        failed_once = None
        for _ in range(st.config.write_retries + 1):
            z = w.zone_for(group, for_gc)
            owner = st.zones.owner_of(z, group)
            n = min(handles.size, st.zones.room(z))
            try:
                off = self._device.append(z, data[:n])
            except DeviceIOError as e:
                error = e
                # a zone the device still reports writable gets one more try (a transient error
                # must not cost a zone); a second failure, or a read-only/offline zone, gives it up
                if failed_once != z and not self.trouble(z):
                    failed_once = z
                    continue
                self.write_failed(owner, z)
                continue
            if w.commit(handles[:n], z, off, for_gc, buffered):
                self.seal(owner, z)
            return n
        raise error

    def seal(self, group: int, z: int) -> None:
        """Close a full zone (its summary footer); a zone that fails it is looked at (``trouble``)."""
        try:
            self._st.zones.seal(group, z)
        except DeviceIOError:
            self.trouble(z)

    def write_failed(self, group: int, z: int) -> None:
        """A write into z failed: give up on z and look at why. A zone the store had not written yet
        goes back to the free list (reset); one holding data is finished and left to GC."""
        st = self._st
        st.zones.abandon(group, z)
        if self.trouble(z):
            return
        try:
            if st.zones.written(z) == 0 and st.slots.valid(z) == 0:
                st.zones.reset(z)
            else:
                st.zones.finish(z)
        except ZswapError:
            self.trouble(z)

    def trouble(self, z: int, cond: ZoneCond | None = None) -> bool:
        """Retire z if the device says (or ``cond`` says) it went read-only (drain it) or offline
        (its pages are lost); True when it did."""
        st = self._st
        if cond is None:
            cond = self._device.report_zones()[z].cond
        if cond == ZoneCond.READ_ONLY:
            if st.zones.retire(z):                       # queued for draining once, not per failure
                st.update_capacity()
                self._w.collector.queue_drain(z)
            return True
        if cond == ZoneCond.OFFLINE:
            if st.zones.retire(z):
                st.update_capacity()
            self._w.collector.zone_lost(z)
            self._lose_zone(z)
            return True
        return False

    def _lose_zone(self, z: int) -> None:
        st = self._st
        gone = st.slots.lose_zone(z)
        # a page whose newer copy waits in a write buffer (a swap-out, or GC that already read it)
        # is not lost: only the old copy was there
        lost = gone[~st.newer_copy(gone)]
        if lost.size:
            st.lost[lost] = True
            st.lost_count += lost.size
            st.lost_total += lost.size
            st.live -= lost.size
            st.lost_unreported.append(st.idmap.ids[lost].copy())
            if st.prefetch.size:
                st.prefetch.drop(st.prefetch_pos, lost)
        st.zones.forget(z)

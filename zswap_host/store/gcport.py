"""The store's side of the collector's ``GcHost`` protocol (gc/collector.py).

Reads go through the store's read path (no prefetch: GC may read copies a write in flight is
replacing), on the reader thread where the device can read while it appends; relocated pages go
to the committer (``Committer.relocate``: the GC stream's buffer, planned and landed by the same
planner and committer as a swap-out).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..devices.fingerprint import first_words
from ..errors import DeviceIOError
from .commit import Committer
from .readpath import plan_reads
from .state import StoreState


class GcPort:
    """``GcHost`` for one store: ``state`` / ``writer`` its ``StoreState`` and ``Committer``;
    ``read_slots(slots, prefetch=, words=)`` its read path ((rows, each slot's row, completion
    times)); ``reader()`` the executor GC's overlapped reads run on; ``now()`` the device's clock;
    ``words``: relocate first words, not pages (a payload-free device keeps nothing else)."""

    def __init__(self, state: StoreState, writer: Committer, read_slots: Callable, reader: Callable,
                 now: Callable[[], float], words: bool) -> None:
        self._st = state
        self._read = read_slots
        self._reader = reader
        self._words = words
        self.now = now
        self.newer_copy = state.newer_copy           # in a buffer, or a swap_out writing it now
        self.queue_relocated = writer.relocate
        self.flush_relocated = writer.flush_relocated
        self.zone_trouble = writer.zone_trouble

    def read_slots(self, slots: np.ndarray) -> np.ndarray:
        # on a payload-free device the pages' first words (all it keeps): queue_relocated takes either
        rows, row, _ = self._read(slots, prefetch=False, words=self._words)
        if row.size == rows.shape[0] and (row.size < 2 or bool((row[1:] > row[:-1]).all())):
            return rows                  # every row once, in order (GC's sorted slots): no copy
        return rows[row]

    def start_read(self, slots: np.ndarray) -> Callable[[], np.ndarray]:
        st = self._st
        if not st.device.overlapped_io:
            data = self.read_slots(slots)
            return lambda: data
        # planned here (store state); only the device read runs on the reader thread
        ps, cfg = st.page_size, st.config
        plan = plan_reads(slots, st.slots.slots_per_zone, st.zones.cursors, 0, cfg.max_read_bytes // ps)
        fut = self._reader().submit(st.device.read_batch, plan.starts * ps, plan.lengths * ps, cfg.read_qd)

        def wait() -> np.ndarray:
            try:
                data, _ = fut.result()
            except DeviceIOError:
                for z in np.unique(st.slots.zone_of(slots)).tolist():
                    self.zone_trouble(z)
                raise
            rows = data.reshape(-1, ps)[plan.row_of_request]
            return first_words(rows) if self._words else rows
        return wait

    def read_chunk_pages(self) -> int:
        return 4 * self._st.unit_pages if self._st.device.overlapped_io else 0

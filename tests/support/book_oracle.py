"""``OracleBook``: the store's per-page bookkeeping in plain numpy, the oracle the C ``NativeBook``
(zswap_host/store/native.py over native/store.c) is compared with.

It satisfies the same ``Bookkeeper`` protocol (zswap_host/store/book.py), rule for rule, and keeps
nothing of its own but the prepared batch: a store built with ``SwapStore(dev, cfg,
book=OracleBook)`` takes the same committer path as the C one, so the twins in
tests/support/store_twins.py compare the two implementations of each step, not two write paths.
``slot_commit`` is ``st_commit``'s slot-map part, for the room tests.
"""

from __future__ import annotations

import numpy as np

from zswap_host.store.book import BUFFER_OF, IN_FLIGHT
from zswap_host.store.slotmap import UNMAPPED, SlotMap


def slot_commit(slots: SlotMap, handles: np.ndarray, first_slot: int) -> None:
    """The handles' new copies are at consecutive slots from ``first_slot`` (one zone): point their
    entries there and invalidate their old copies (distinct handles only)."""
    loc, rmap, valid = slots.arrays
    n = handles.size
    slots.invalidate(handles)
    loc[handles] = np.arange(first_slot, first_slot + n, dtype=np.int64)
    rmap[first_slot:first_slot + n] = handles + 1
    valid[first_slot // slots.slots_per_zone] += n


class OracleBook:
    """The pure-Python ``Bookkeeper`` on one store's ``StoreState``."""

    def __init__(self, state) -> None:
        self.calls = 0
        self._st = state
        self._batch: tuple = (None, None)         # the prepared batch's (ids, handles)

    def prepare(self, ids: np.ndarray):
        self.calls += 1
        st, n = self._st, ids.size
        direct = st.idmap.direct
        bad = np.flatnonzero((ids < 0) | (ids >= direct.size))
        _, first = np.unique(ids, return_index=True)
        again = np.ones(n, bool)
        again[first] = False
        rep = np.flatnonzero(again)
        found = []                                 # (position, status): the first in batch order wins
        if bad.size:
            found.append((int(bad[0]), -1 if ids[bad[0]] < 0 else -2))
        if rep.size:
            found.append((int(rep[0]), -3))
        if found:
            return min(found)[1], None, 0, 0, 0
        h = direct[ids].copy()
        held = h[h >= 0]
        buffered = st.buffer_of[held] != 0
        added = int(np.count_nonzero(~buffered & (st.slots.slots(held) == UNMAPPED)))
        fresh = n - held.size
        self._batch = (ids, h)
        return 0, h, fresh, fresh + added, int(np.count_nonzero(buffered))

    def insert(self, ids: np.ndarray, h: np.ndarray, fresh: int) -> bool:
        idm = self._st.idmap
        nxt = idm.handles
        take = min(fresh, idm.reusable)
        if nxt + fresh - take > idm.ids.size:
            return False
        self.calls += 1
        new = np.flatnonzero(h < 0)
        given = np.concatenate((idm.free_stack[idm.reusable - take:idm.reusable],
                                np.arange(nxt, nxt + new.size - take, dtype=np.int64)))
        h[new] = given
        idm.direct[ids[new]] = given
        idm.ids[given] = ids[new]
        idm.reused(take)
        idm.handed_out(fresh - take)
        return True

    def fill(self, which: int, h: np.ndarray, value: int) -> None:
        self.calls += 1
        st = self._st
        {BUFFER_OF: st.buffer_of, IN_FLIGHT: st.in_flight}[which][h] = value

    def discard(self, ids: np.ndarray, remove: bool) -> bool:
        st = self._st
        idm = st.idmap
        if ((ids < 0) | (ids >= idm.direct.size)).any():
            return False
        self.calls += 1
        _, first = np.unique(ids, return_index=True)
        ids = ids[np.sort(first)]                  # each id once, where it first appears
        h = idm.direct[ids]
        ids, h = ids[h >= 0], h[h >= 0]
        stored = st.slots.mapped(h) | (st.buffer_of[h] != 0)
        st.unbuffer(h)
        st.prefetch.drop(st.prefetch_pos, h)
        st.slots.invalidate(h)
        st.lost_count -= int(st.lost[h].sum())
        st.lost[h] = False
        st.live -= int(stored.sum())
        if remove:
            idm.direct[ids] = -1
            idm.free_room(h.size)
            idm.free_stack[idm.reusable:idm.reusable + h.size] = h
            idm.released(h.size)
            st.swap_outs[h] = 0
        return True

    def commit(self, h: np.ndarray, first_slot: int, buffered: bool) -> None:
        self.calls += 1
        self._commit(h, first_slot, buffered)

    def _commit(self, h: np.ndarray, first_slot: int, buffered: bool) -> None:
        st = self._st
        slot_commit(st.slots, h, first_slot)
        st.in_flight[h] = 0
        if buffered:
            st.buffer_of[h] = 0

"""The swap store's per-page bookkeeping in C (``native/store.c``, in ``zswap_host._native``): the
``Bookkeeper`` (store/book.py) of every store: lookup/classify, handle insert, flag fills,
commit and discard, each one pass over the batch. It is the package's only implementation; the pure-Python
oracle it is compared with lives in tests/support/book_oracle.py (tests/store/test_store_fastpath.py).

The C functions take pointers into the store's arrays; those are cached and refreshed whenever
an array was replaced (grown), so a call costs one cffi call plus one ``from_buffer`` per batch
array. The arrays come from the rooms' public members (``IdMap.direct``, ``SlotMap.arrays``) and
the store's ``StoreState`` (``buffer_of``, ``in_flight``), never from private attributes.
"""

from __future__ import annotations

import numpy as np


def load():
    """``(ffi, lib)`` of the compiled helpers. ImportError naming the fix when ``zswap_host._native``
    is not built or predates native/store_out.c (``pip install -e .`` builds it)."""
    try:
        from .._native import ffi, lib
        lib.st_out_plan                   # noqa: B018 (an older build without store.c / store_out.c)
    except (ImportError, AttributeError) as e:
        raise ImportError("zswap_host._native is not built or is out of date (the swap store's bookkeeping "
                          "is in C): run `pip install -e .` or `python native/build_native.py`") from e
    return ffi, lib


class NativeBook:
    """C bookkeeping on one store's arrays (see the module docstring): a ``Bookkeeper``.
    ``state``: the store's ``StoreState`` (its id map, slot map, per-handle arrays)."""

    def __init__(self, state, ffi=None, lib=None) -> None:
        if lib is None:
            ffi, lib = load()
        self.calls = 0                    # calls that did work (tests: the C path ran)
        self.discards = 0                 # ... of them discards
        self._st = state
        self._idmap, self._slots = state.idmap, state.slots
        self._ffi, self._lib = ffi, lib
        self._counts = np.zeros(3, np.int64)
        self._counts_p = ffi.from_buffer("int64_t[]", self._counts)
        self._dcounts = np.zeros(5, np.int64)
        self._dcounts_p = ffi.from_buffer("int64_t[]", self._dcounts)
        self.arrays: tuple = ()           # the arrays ``pointers`` points at (see there)
        self._p: tuple = ()
        # the last prepared batch's ids and handles with their pointers: insert and fill get them
        # again without a from_buffer each (a call costs tens of microseconds in a TCG guest)
        self._batch: tuple = (None, None, None, None)

    def pointers(self) -> tuple:
        """Pointers to (direct, id_of, loc, rmap, valid, buffer_of, in_flight, the id map's free
        stack), refreshed when one of the arrays was replaced (grown); ``arrays`` holds the arrays
        themselves."""
        idm = self._idmap
        loc, rmap, valid = self._slots.arrays
        st = self._st
        buffer_of, in_flight, free = st.buffer_of, st.in_flight, idm.free_stack
        a = self.arrays
        if not a or a[0] is not idm.direct or a[1] is not idm.ids or a[2] is not loc \
                or a[3] is not rmap or a[4] is not valid or a[5] is not buffer_of or a[6] is not in_flight \
                or a[7] is not free:
            fb = self._ffi.from_buffer
            a = self.arrays = (idm.direct, idm.ids, loc, rmap, valid, buffer_of, in_flight, free)
            self._p = (fb("int64_t[]", a[0]), fb("int64_t[]", a[1]), fb("uint32_t[]", a[2]), fb("int64_t[]", a[3]),
                       fb("int64_t[]", a[4]), fb("uint8_t[]", a[5]), fb("uint8_t[]", a[6]), fb("int64_t[]", a[7]))
        return self._p

    def prepare(self, ids: np.ndarray) -> tuple[int, np.ndarray | None, int, int, int]:
        """(status, handles, not held, new pages, buffered pages): ``st_prepare``. Status 0: classified;
        -1 a negative id; -2 an id beyond the direct array; -3 a repeated id (then only the status)."""
        self.calls += 1
        p = self.pointers()
        n = ids.size
        h = np.empty(n, np.int64)
        fb = self._ffi.from_buffer
        idp, hp = fb("int64_t[]", ids), fb("int64_t[]", h)
        rc = self._lib.st_prepare(idp, n, p[0], self.arrays[0].size, p[2], p[5], p[6], hp, self._counts_p)
        if rc:
            return rc, None, 0, 0, 0
        self._batch = (ids, idp, h, hp)
        c = self._counts
        return 0, h, int(c[0]), int(c[1]), int(c[2])

    def insert(self, ids: np.ndarray, h: np.ndarray, fresh: int) -> bool:
        """Give the ids with ``h < 0`` handles (``IdMap.insert``'s result, in place: discarded
        handles first) when the id map can take them without growing; False (nothing done)
        otherwise."""
        idm = self._idmap
        nxt = idm.handles
        take = min(fresh, idm.reusable)
        if nxt + fresh - take > idm.ids.size:
            return False
        self.calls += 1
        p = self.pointers()
        b = self._batch
        if ids is b[0] and h is b[2]:
            idp, hp = b[1], b[3]
        else:
            fb = self._ffi.from_buffer
            idp, hp = fb("int64_t[]", ids), fb("int64_t[]", h)
        self._lib.st_insert(idp, ids.size, hp, p[0], p[1], nxt, p[7] + (idm.reusable - take), take)
        idm.reused(take)
        idm.handed_out(fresh - take)
        return True

    def prepared(self, ids: np.ndarray, idp, h: np.ndarray, hp) -> None:
        """Make ``ids`` / handles ``h`` (with their C pointers ``idp`` / ``hp``) the prepared batch,
        as ``prepare`` does: ``insert`` and ``fill`` reuse its pointers (the express
        path, store/express.py, prepares a batch in C and hands it to the general path)."""
        self._batch = (ids, idp, h, hp)

    def fill(self, which: int, h: np.ndarray, value: int) -> None:
        """``buffer_of[h] = value`` (which = 5) or ``in_flight[h] = value`` (which = 6)."""
        self.calls += 1
        p = self.pointers()
        if h is self._batch[2]:
            self._lib.st_fill(p[which], self._batch[3], h.size, value)
            return
        h = np.ascontiguousarray(h, np.int64)
        self._lib.st_fill(p[which], self._ffi.from_buffer("int64_t[]", h), h.size, value)

    def commit(self, h: np.ndarray, first_slot: int, buffered: bool) -> None:
        """``SlotMap.commit(h, first_slot)``, ``in_flight[h] = False`` and (buffered) ``buffer_of[h] = 0``."""
        self.calls += 1
        p = self.pointers()
        h = np.ascontiguousarray(h, np.int64)
        self._lib.st_commit(p[2], p[3], p[4], self._slots.slots_per_zone, self._ffi.from_buffer("int64_t[]", h),
                            h.size, first_slot, p[6], p[5], int(buffered))

    def discard(self, ids: np.ndarray, remove: bool) -> bool:
        """Forget the ids (``st_discard``: one pass; the write buffers emptied of them after, the
        counters moved); ``remove``: their handles freed (else ``ids`` are distinct). False, nothing
        changed, for an id beyond the id map's direct array (the caller's id map path finds it)."""
        st, idm = self._st, self._idmap
        n = ids.size
        if remove:
            idm.free_room(n)
        p = self.pointers()
        fb = self._ffi.from_buffer
        ids = np.ascontiguousarray(ids, np.int64)
        buffered = np.empty(n, np.int64)
        rc = self._lib.st_discard(fb("int64_t[]", ids), n, p[0], self.arrays[0].size, p[2], p[3], p[4],
                                  self._slots.slots_per_zone, p[5], fb("int32_t[]", st.prefetch_pos),
                                  fb("int64_t[]", st.prefetch.ids), fb("uint8_t[]", st.lost.view(np.uint8)),
                                  fb("uint16_t[]", st.swap_outs), int(remove), p[7], idm.reusable,
                                  fb("int64_t[]", buffered), self._dcounts_p)
        if rc:
            return False
        self.calls += 1
        self.discards += 1
        held, stored, dropped, cleared, nbuf = self._dcounts.tolist()
        if nbuf:
            st.unbuffer(buffered[:nbuf])
        st.prefetch.wasted_pages += dropped
        st.lost_count -= cleared
        st.live -= stored
        if remove:
            idm.released(held)
        return True

"""Page ids to dense handles: a vectorised open-addressing hash table (numpy, linear probing).

The store keeps its per-page state in arrays indexed by *handle* (0..n-1, reused after a discard),
so memory follows the pages stored, never the largest page id: ids may be sparse 64-bit numbers
(hashed keys, page numbers of a huge address space). Small ids (below ``max(65536, 4 x the ids
held)``, the common dense case) skip the hash: a direct id -> handle array answers them in one
gather; it never grows past that bound, so memory still follows the ids held. Page ids are integers in
``[0, MAX_PAGE_ID]``; ``as_page_ids`` checks that before anything is allocated.
"""

from __future__ import annotations

import numpy as np

MAX_PAGE_ID = (1 << 63) - 1
_EMPTY, _TOMB = -1, -2
_MUL = np.uint64(0x9E3779B97F4A7C15)
_WINDOW = np.arange(8)           # table slots a lookup reads per round (most ids resolve in one)
_DIRECT_MIN = 1 << 16            # the direct array may always cover ids below this


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` in a zeroed array of ``size`` entries (np.resize would repeat its contents there: two
    copies, where calloc'd zeros cost nothing until touched)."""
    out = np.zeros(size, a.dtype)
    out[:a.size] = a
    return out


def distinct_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)``, without sorting ids already strictly increasing (a
    fault batch usually is)."""
    if ids.size < 2 or (ids[1:] > ids[:-1]).all():
        return ids, np.arange(ids.size)
    return np.unique(ids, return_inverse=True)


def as_page_ids(page_ids) -> np.ndarray:
    """``page_ids`` as a flat int64 array; ValueError for anything but integers in [0, MAX_PAGE_ID]
    (floats are refused, never truncated)."""
    try:
        a = np.asarray(page_ids)
    except (OverflowError, ValueError, TypeError) as e:
        raise ValueError(f"page ids must be integers in [0, 2**63 - 1]: {e}") from None
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.dtype == object:
        try:
            vals = [int(x) if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else None
                    for x in a.reshape(-1).tolist()]
        except (TypeError, ValueError):
            vals = [None]
        if any(v is None for v in vals):
            raise ValueError("page ids must be integers")
        if min(vals) < 0 or max(vals) > MAX_PAGE_ID:
            raise ValueError(f"page ids must be in [0, 2**63 - 1], got {min(vals) if min(vals) < 0 else max(vals)}")
        return np.array(vals, np.int64)
    if a.dtype.kind == "u":
        if int(a.max()) > MAX_PAGE_ID:
            raise ValueError(f"page id {int(a.max())} is beyond the supported range [0, 2**63 - 1]")
        return a.astype(np.int64).reshape(-1)
    if a.dtype.kind != "i":
        raise ValueError(f"page ids must be integers, not {a.dtype} (no silent truncation)")
    a = a.astype(np.int64, copy=False).reshape(-1)
    if int(a.min()) < 0:
        raise ValueError(f"page ids must not be negative (got {int(a.min())})")
    return a


class IdMap:
    """id (int64 >= 0) -> handle (int64 >= 0). Memory: a direct array for small ids (at most
    ``max(65536, 4 x ids held)`` entries), a hash table of ~2-4x the other ids, and the handle -> id
    column. ``direct``: ids below it use the direct array from the start, whatever the ids held (a
    known dense id space, e.g. a trace's pages: 8 bytes per id, no hashing).

    Read-only outside (plain attributes: the store's C helpers read them on every call): ``n`` ids
    held; ``handles``, one past the largest handle handed out (the size handle-indexed arrays
    need); ``reusable``, discarded handles ``insert`` hands out again first; ``ids`` (handle -> id),
    ``direct`` (id -> handle below its size, -1: none) and ``free_stack`` (the discarded handles,
    its first ``reusable`` entries, the last reused first), the arrays themselves for C code that
    looks ids up and inserts them in place (store/native.py), replaced when grown: compare by
    identity. C code that handed handles out reports it with ``reused`` and ``handed_out``."""

    def __init__(self, capacity: int = 1024, direct: int = 0) -> None:
        cap = 1 << max(10, int(capacity - 1).bit_length())
        self._keys = np.full(cap, _EMPTY, np.int64)
        self._vals = np.zeros(cap, np.int64)
        self._used = 0                                   # live keys + tombstones
        self._hashed = 0                                 # live keys in the hash table
        self.direct = np.full(max(0, int(direct)), -1, np.int64)    # id -> handle below its size (-1: none)
        self.n = 0                                       # ids held
        self.ids = np.zeros(1024, np.int64)              # handle -> id (garbage for free handles)
        self.free_stack = np.zeros(1024, np.int64)       # a stack of discarded handles, reused first
        self.reusable = 0                                # discarded handles on that stack
        self.handles = 0                                 # handles ever handed out

    def reusable_handles(self) -> np.ndarray:
        """The discarded handles ``insert`` hands out again, bottom of the stack first (a copy)."""
        return self.free_stack[:self.reusable].copy()

    def reused(self, count: int) -> None:
        """Count ``count`` discarded handles that C code took off the top of ``free_stack`` and gave
        to ids (``st_insert``, in the order ``insert`` would): ``reusable`` falls and ``n`` grows by it."""
        self.reusable -= count
        self.n += count

    def handed_out(self, count: int) -> None:
        """Count ``count`` handles that C code handed out in place (``st_insert``: the next ``count``
        handles from ``handles``, written to ``direct`` and ``ids``, after the reused ones it reports
        with ``reused``): ``handles`` and ``n`` grow by it. Only when ``ids`` holds them (the C
        callers check first)."""
        self.handles += count
        self.n += count

    def free_room(self, count: int) -> None:
        """Make ``free_stack`` hold ``count`` more handles (C code that frees handles pushes them
        there: ``st_discard``)."""
        top = self.reusable + count
        if top > self.free_stack.size:
            self.free_stack = _grown(self.free_stack, max(top, 2 * self.free_stack.size))

    def released(self, count: int) -> None:
        """Count ``count`` handles C code freed (``st_discard``: their ids' ``direct`` entries
        cleared, the handles pushed on ``free_stack`` from ``reusable``): ``n`` falls and
        ``reusable`` grows by it."""
        self.reusable += count
        self.n -= count

    def _slot0(self, ids: np.ndarray) -> np.ndarray:
        bits = self._keys.size.bit_length() - 1
        return ((ids.astype(np.uint64) * _MUL) >> np.uint64(64 - bits)).astype(np.int64)

    def _find(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(table slot of each id or -1, first free slot on its probe path or -1)."""
        mask = self._keys.size - 1
        pos = self._slot0(ids)
        found = np.full(ids.size, -1, np.int64)
        free = np.full(ids.size, -1, np.int64)
        todo = np.arange(ids.size)
        while todo.size:
            p = pos[todo]
            k = self._keys[p]
            hit = k == ids[todo]
            found[todo[hit]] = p[hit]
            vacant = (k < 0) & (free[todo] < 0)
            free[todo[vacant]] = p[vacant]
            go = ~hit & (k != _EMPTY)
            todo = todo[go]
            pos[todo] = (pos[todo] + 1) & mask
        return found, free

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Handle of each id, -1 for ids not held."""
        d = self.direct
        if ids.size and int(ids.max()) < d.size:        # all small: one gather
            return d[ids]
        out = np.full(ids.size, -1, np.int64)
        small = ids < d.size
        out[small] = d[ids[small]]
        if self._hashed:
            big = np.flatnonzero(~small)
            out[big] = self._hash_lookup(ids[big])
        return out

    def _hash_lookup(self, ids: np.ndarray) -> np.ndarray:
        out = np.full(ids.size, -1, np.int64)
        if ids.size == 0:
            return out
        mask = self._keys.size - 1
        pos = self._slot0(ids)
        todo = None                                      # None: every id (the first round)
        while True:
            # probe a window of slots per id at once: the first slot holding the id or EMPTY ends it
            p = pos if todo is None else pos[todo]
            want = ids if todo is None else ids[todo]
            win = (p[:, None] + _WINDOW) & mask
            k = self._keys[win]
            hit = k == want[:, None]
            stop = hit | (k == _EMPTY)
            first = stop.argmax(1)
            r = np.arange(first.size)
            done = stop[r, first]
            found = done & hit[r, first]
            idx = r[found] if todo is None else todo[found]
            out[idx] = self._vals[win[r[found], first[found]]]
            if done.all():
                return out
            todo = np.flatnonzero(~done) if todo is None else todo[~done]
            pos[todo] = (pos[todo] + _WINDOW.size) & mask

    def insert(self, ids: np.ndarray) -> np.ndarray:
        """Handles for distinct ids not held yet (new handles; they reuse discarded ones first)."""
        n = ids.size
        if n == 0:
            return np.zeros(0, np.int64)
        take = min(n, self.reusable)
        h = np.empty(n, np.int64)
        if take:
            h[:take] = self.free_stack[self.reusable - take:self.reusable]
            self.reusable -= take
        h[take:] = np.arange(self.handles, self.handles + n - take)
        self.handles += n - take
        if self.handles > self.ids.size:
            self.ids = _grown(self.ids, max(self.handles, 2 * self.ids.size))
        self.ids[h] = ids
        self.n += n
        top = int(ids.max())
        if top >= self.direct.size:
            limit = max(_DIRECT_MIN, 4 * self.n)
            under = top if top < limit else int(ids[ids < limit].max(initial=-1))
            # widen only by doubling: capped by a slowly moving limit it would otherwise copy the
            # array and scan the hash table on nearly every insert (ids above it hash, as before)
            if under >= self.direct.size and min(limit, max(under + 1, 2 * self.direct.size)) >= 2 * self.direct.size:
                self._widen(under + 1, limit)
        d = self.direct
        if top < d.size:
            d[ids] = h
            return h
        small = ids < d.size
        d[ids[small]] = h[small]
        big = ~small
        self._hash_insert(ids[big], h[big])
        return h

    def _widen(self, need: int, limit: int) -> None:
        """Let the direct array cover ids below ``need`` (doubling, never past ``limit``); hashed
        ids it now covers move into it."""
        size = min(max(need, 2 * self.direct.size, 1024), limit)
        self.direct = np.concatenate([self.direct, np.full(size - self.direct.size, -1, np.int64)])
        if self._hashed:
            move = (self._keys >= 0) & (self._keys < size)
            if move.any():
                self.direct[self._keys[move]] = self._vals[move]
                self._keys[move] = _TOMB
                self._hashed -= int(move.sum())

    def _hash_insert(self, ids: np.ndarray, h: np.ndarray) -> None:
        n = ids.size
        if n == 0:
            return
        if 2 * (self._used + n) > self._keys.size:
            self._rehash(3 * (self._hashed + n))
        todo = np.arange(n)
        mask = self._keys.size - 1
        pos = self._slot0(ids)
        while todo.size:
            # each id claims the first vacant slot (EMPTY or tombstone) in a window from its probe
            # position; one id per slot wins, the others go on after the slot they lost
            win = (pos[todo][:, None] + _WINDOW) & mask
            vac = self._keys[win] < 0
            first = vac.argmax(1)
            r = np.arange(todo.size)
            has = vac[r, first]
            claim = win[r, first]
            _, winner = np.unique(np.where(has, claim, -1 - r), return_index=True)   # no claim: never a winner
            winner = winner[has[winner]]
            slots = claim[winner]
            self._used += int(np.count_nonzero(self._keys[slots] == _EMPTY))
            self._keys[slots] = ids[todo[winner]]
            self._vals[slots] = h[todo[winner]]
            placed = np.zeros(todo.size, bool)
            placed[winner] = True
            nxt = np.where(has, claim + 1, win[:, -1] + 1)
            todo, nxt = todo[~placed], nxt[~placed]
            pos[todo] = nxt & mask
        self._hashed += n

    def remove(self, ids: np.ndarray) -> np.ndarray:
        """Forget ids (distinct, held); their handles become free. Returns the handles."""
        if ids.size == 0:
            return np.zeros(0, np.int64)
        h = self.lookup(ids)
        held = h >= 0
        ids, h = ids[held], h[held]
        small = ids < self.direct.size
        self.direct[ids[small]] = -1
        if not small.all():
            found, _ = self._find(ids[~small])
            self._keys[found] = _TOMB
            self._hashed -= found.size
            if self._used > 3 * self._keys.size // 8 and self._used > 2 * self._hashed:   # mostly tombstones
                self._rehash(3 * self._hashed)
        self.free_room(h.size)
        self.free_stack[self.reusable:self.reusable + h.size] = h
        self.released(h.size)
        return h

    def _rehash(self, slots: int) -> None:
        """Rebuild the table with at least ``slots`` slots (a power of two), dropping tombstones."""
        live = self._keys >= 0
        keys, vals = self._keys[live], self._vals[live]
        cap = 1 << max(10, int(max(slots, 1) - 1).bit_length())
        self._keys = np.full(cap, _EMPTY, np.int64)
        self._vals = np.zeros(cap, np.int64)
        self._used = 0
        mask = cap - 1
        pos = self._slot0(keys)
        todo = np.arange(keys.size)
        while todo.size:
            p = pos[todo]
            vac = self._keys[p] == _EMPTY
            cand = todo[vac]
            _, first = np.unique(p[vac], return_index=True)
            win = cand[first]
            self._keys[pos[win]] = keys[win]
            self._vals[pos[win]] = vals[win]
            placed = np.zeros(keys.size, bool)
            placed[win] = True
            todo = todo[~placed[todo]]
            pos[todo] = (pos[todo] + 1) & mask
        self._used = keys.size

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, handles) of every id held."""
        live = self._keys >= 0
        small = np.flatnonzero(self.direct >= 0)
        return np.concatenate([small, self._keys[live]]), np.concatenate([self.direct[small], self._vals[live]])

"""``PagedEmbedding``: DLRM embedding tables kept in 4 KiB pages, with a DRAM page cache of bounded
size in front of any ``SwapBackend``.

Layout. Table t's rows are packed ``rows_per_page = page_size // (dim * 4)`` to a page (a row never
straddles pages; the tail of a page is padding). With row-wise Adagrad each table also has state pages
(one fp32 accumulator per row, ``page_size // 4`` per page). One page id space covers every table:
table t owns the contiguous id range ``[page_base[t], page_base[t + 1])`` — its weight pages, then
its state pages — and every page of table t is swapped out with ``stream=t``.

Cache. ``budget`` frames of ``page_size`` bytes (the frame array is allocated with ``np.zeros``, so
untouched frames cost no memory), CLOCK replacement over per-frame ``referenced`` / ``dirty`` /
``pinned`` bits. The sweep is vectorised: the hand advances over the frame arrays in chunks, clearing
the referenced bits it passes and taking unreferenced, unpinned frames as victims, exactly as
one-frame-at-a-time CLOCK would.

Per batch (``gather``):
1. the unique rows of the batch, their pages (and state pages), all sorted;
2. pages already resident get their referenced bit set and are pinned for the batch;
3. room is made *before* anything is brought in — the cache never holds more than the budget: CLOCK
   picks victims among unpinned frames; dirty victims (and victims the backend holds no copy of) are
   written with ``backend.swap_out(ids, pages, stream=t)``, one call per table present among the
   victims, in CLOCK order within a table; clean victims whose copy the backend still holds are
   dropped without I/O;
4. pages evicted earlier are faulted in with ONE ``backend.swap_in(ids)`` call (ids sorted);
   pages never touched are created on first touch, deterministically from ``seed`` and the page id
   (DLRM's uniform(-1/sqrt(rows), 1/sqrt(rows)) init; Adagrad state starts at 0), so a table larger
   than memory needs no up-front initialisation;
5. the rows are gathered into a (unique rows, dim) float32 array.
``apply(grad)`` then updates those rows (sparse SGD, or row-wise Adagrad) in the frames and marks
their pages dirty. Backends keep a page's copy after ``swap_in`` until it is swapped out again or
discarded, so the copy of a clean page is still good; ``discard_dirty=True`` instead discards the
backend's copy as soon as a page is dirtied (what Linux does on a write fault to a swap-cache page),
which lets GC forget stale copies of resident pages.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from .criteo import splitmix64
from .trace import DISCARD, SWAP_IN, SWAP_OUT

UNTOUCHED, RESIDENT, SWAPPED = 0, 1, 2
OPTIMIZERS = ("sgd", "adagrad")


@dataclass
class PagingCounters:
    """What the page cache did (pages unless named bytes)."""

    lookups: int = 0            # (row) lookups served
    unique_rows: int = 0
    page_refs: int = 0          # distinct pages needed, summed over batches
    hits: int = 0               # ... of which were resident
    faults: int = 0             # pages swapped in
    swap_in_calls: int = 0
    first_touch: int = 0        # pages created on first touch
    evictions: int = 0          # pages evicted (written or dropped)
    pages_written: int = 0      # dirty victims swapped out
    swap_out_calls: int = 0
    clean_drops: int = 0        # clean victims dropped without a write
    discards: int = 0           # backend copies discarded (discard_dirty)
    bytes_read: int = 0
    bytes_written: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def parse_budget(budget, total_bytes: int) -> int:
    """Budget in bytes: a float in (0, 1] is a fraction of ``total_bytes``; an int is bytes; a string
    is a size (``64MiB``) or a percentage (``25%``)."""
    if isinstance(budget, str):
        b = budget.strip()
        if b.endswith("%"):
            budget = float(b[:-1]) / 100.0
        else:
            from ..units import parse_size
            budget = parse_size(b)
    if isinstance(budget, (bool, np.bool_)):
        raise ValueError(f"not a budget: {budget!r}")
    if isinstance(budget, (float, np.floating)):
        if not 0.0 < budget <= 1.0:
            raise ValueError(f"a fractional budget must be in (0, 1] (of {total_bytes} table bytes), not {budget}")
        return int(budget * total_bytes) if budget < 1.0 else int(total_bytes)
    budget = int(budget)
    if budget <= 0:
        raise ValueError(f"budget must be positive, not {budget}")
    return budget


class PagedEmbedding:
    """Embedding tables of ``dim`` fp32 columns, ``tables[t]`` rows each, paged through ``backend``.

    ``budget``: DRAM page-cache size — bytes (int), a fraction of the paged bytes (float in (0, 1]),
    or a string (``"25%"``, ``"64MiB"``). ``backend=None`` or a budget covering every page = DRAM only
    (no eviction). ``optimizer``: ``"sgd"`` (row -= lr * grad) or ``"adagrad"`` (row-wise: one
    accumulator per row, ``acc += mean(grad**2)``, ``row -= lr * grad / (sqrt(acc) + eps)``; the
    accumulators live in pages that swap too). ``trace``: a ``TraceBuilder`` that records every
    swap_in / swap_out / discard. ``clock``: callable giving the device's (modeled) clock; the change
    of ``clock()`` across each backend call is added to ``io_stall_s`` (wall time inside the call if
    None). ``io_wall_s`` always accumulates the wall time spent inside backend calls.
    """

    def __init__(self, tables, dim: int, backend=None, budget=1.0, page_size: int = 4096, seed: int = 0,
                 optimizer: str = "sgd", lr: float = 0.1, trace=None, *, eps: float = 1e-8,
                 clock=None, discard_dirty: bool = False) -> None:
        self.tables = tuple(int(n) for n in tables)
        if not self.tables or min(self.tables) < 1:
            raise ValueError("every table needs at least one row")
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {optimizer!r}")
        self.dim = int(dim)
        self.page_size = int(page_size)
        if backend is not None and backend.page_size != self.page_size:
            raise ValueError(f"backend page size {backend.page_size} != {self.page_size}")
        self.rows_per_page = R = self.page_size // (4 * self.dim)
        if R < 1:
            raise ValueError(f"a {self.dim}-float row does not fit a {self.page_size}-byte page")
        self.states_per_page = S = self.page_size // 4
        self.backend = backend
        self.seed = int(seed)
        self.optimizer = optimizer
        self.lr = float(lr)
        self.eps = float(eps)
        self.trace = trace
        self.clock = clock
        self.discard_dirty = bool(discard_dirty)
        T = len(self.tables)
        rows = np.array(self.tables, np.int64)
        self.weight_pages = -(-rows // R)
        self.state_pages = -(-rows // S) if optimizer == "adagrad" else np.zeros(T, np.int64)
        per_table = self.weight_pages + self.state_pages
        self.page_base = np.concatenate([[0], np.cumsum(per_table)]).astype(np.int64)  # T + 1 entries
        self.state_base = self.page_base[:-1] + self.weight_pages
        self.total_pages = int(self.page_base[-1])
        self.total_bytes = self.total_pages * self.page_size
        self._bound = (1.0 / np.sqrt(rows.astype(np.float64))).astype(np.float64)
        with np.errstate(over="ignore"):
            self._word_mix = np.arange(self.page_size // 4, dtype=np.uint32) * np.uint32(0x9E3779B1)
        if backend is None:
            self.budget_bytes = self.total_bytes
        else:
            self.budget_bytes = min(parse_budget(budget, self.total_bytes), self.total_bytes)
        self.nframes = min(self.total_pages, self.budget_bytes // self.page_size)
        if self.nframes < 1:
            raise ValueError(f"budget of {self.budget_bytes} bytes holds no {self.page_size}-byte page")
        self.dram_only = self.nframes >= self.total_pages
        n, P = self.nframes, self.total_pages
        self.frames = np.zeros((n, self.page_size), np.uint8)       # lazily backed by the OS
        self._f32 = self.frames.view(np.float32)                     # (n, page_size // 4)
        self._rows = np.lib.stride_tricks.as_strided(
            self._f32, shape=(n, R, self.dim), strides=(self.page_size, 4 * self.dim, 4), writeable=True)
        self.frame_page = np.full(n, -1, np.int64)
        self.ref = np.zeros(n, bool)
        self.dirty = np.zeros(n, bool)
        self.pin = np.zeros(n, bool)
        self._free = np.arange(n - 1, -1, -1, dtype=np.int64)       # stack: pop from the end
        self._nfree = n
        self.hand = 0
        self.page_frame = np.full(P, -1, np.int32 if n < 2**31 else np.int64)
        self.page_state = np.zeros(P, np.uint8)
        self.held = np.zeros(P, bool)      # the backend holds a copy equal to the page (when clean)
        self.counters = PagingCounters()
        self.io_wall_s = 0.0
        self.io_stall_s = 0.0
        self._ctx = None

    # -- public ------------------------------------------------------------------------------
    @property
    def resident_pages(self) -> int:
        return self.nframes - self._nfree

    @property
    def budget_pages(self) -> int:
        return self.nframes

    def table_of_page(self, pages: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.page_base, pages, side="right") - 1

    def page_of(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Weight page ids of rows of one table."""
        return self.page_base[table] + np.asarray(rows, np.int64) // self.rows_per_page

    def gather(self, sparse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bring a batch's rows into DRAM. ``sparse``: int indices of shape (tables, ...) (table t's
        indices in ``sparse[t]``). Returns ``(rows, inverse)``: the unique rows, float32 (U, dim),
        and for every entry of ``sparse`` (flattened, C order) its row in ``rows``. The pages stay
        pinned until the next ``gather``; call ``apply(grad)`` to update these rows."""
        sp = np.asarray(sparse)
        T = len(self.tables)
        if sp.shape[0] != T:
            raise ValueError(f"sparse must have {T} tables on axis 0, has shape {sp.shape}")
        idx = sp.reshape(T, -1).astype(np.int64, copy=False)
        R = self.rows_per_page
        key = (self.page_base[:-1, None] * R + idx).reshape(-1)     # page * R + slot
        if idx.size:
            lo, hi = idx.min(axis=1), idx.max(axis=1)
            if (lo < 0).any() or (hi >= np.array(self.tables)).any():
                t = int(np.flatnonzero((lo < 0) | (hi >= np.array(self.tables)))[0])
                raise IndexError(f"table {t}: index out of range [0, {self.tables[t]})")
        rows, inverse = self._gather_keys(key)
        self.counters.lookups += int(idx.size)
        return rows, inverse

    def _gather_keys(self, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        R = self.rows_per_page
        ukeys, inverse = np.unique(key, return_inverse=True)
        upage, uslot = ukeys // R, ukeys % R
        first = np.ones(upage.size, bool)
        first[1:] = upage[1:] != upage[:-1]
        pages = upage[first]
        spage = sslot = None
        if self.optimizer == "adagrad" and ukeys.size:
            t = self.table_of_page(upage)
            row = (upage - self.page_base[t]) * R + uslot
            spage = self.state_base[t] + row // self.states_per_page
            sslot = row % self.states_per_page
            pages = np.union1d(pages, spage)
        self.pin.fill(False)
        self._make_resident(pages)
        f = self.page_frame[upage].astype(np.int64)
        rows = self._rows[f, uslot]
        sf = self.page_frame[spage].astype(np.int64) if spage is not None else None
        self._ctx = (f, uslot, sf, sslot, rows)
        self.counters.unique_rows += int(ukeys.size)
        return rows, inverse.reshape(-1)

    def apply(self, grad: np.ndarray) -> None:
        """Apply the gradient of the rows last returned by ``gather`` (float32 (U, dim)) and mark
        their pages dirty."""
        if self._ctx is None:
            raise RuntimeError("apply() without a gather()")
        f, slot, sf, sslot, rows = self._ctx
        self._ctx = None
        g = np.asarray(grad, np.float32)
        if g.shape != rows.shape:
            raise ValueError(f"grad shape {g.shape} != rows shape {rows.shape}")
        if self.optimizer == "sgd":
            self._rows[f, slot] = rows - np.float32(self.lr) * g
        else:
            acc = self._f32[sf, sslot] + (g * g).mean(axis=1)
            self._f32[sf, sslot] = acc
            step = (np.float32(self.lr) / (np.sqrt(acc) + np.float32(self.eps))).astype(np.float32)
            self._rows[f, slot] = rows - step[:, None] * g
            self.dirty[sf] = True
        self.dirty[f] = True
        if self.discard_dirty and self.backend is not None:
            fr = np.unique(f if sf is None else np.concatenate([f, sf]))
            pages = self.frame_page[fr]
            pages = pages[self.held[pages]]
            if pages.size:
                self._io(self.backend.discard, pages)
                self.held[pages] = False
                self.counters.discards += int(pages.size)
                if self.trace is not None:
                    self.trace.add(DISCARD, pages)

    def read_rows(self, table: int, rows) -> np.ndarray:
        """Current values of some rows of one table, float32 (n, dim), faulting their pages in as a
        batch would (for tests and inspection; does not count as lookups)."""
        r = np.asarray(rows, np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.tables[table]):
            raise IndexError(f"table {table}: index out of range [0, {self.tables[table]})")
        out, inv = self._gather_keys(self.page_base[table] * self.rows_per_page + r)
        self._ctx = None
        return out[inv]

    def flush(self) -> None:
        """Write every dirty resident page to the backend (keeping it resident and now clean)."""
        if self.backend is None:
            return
        fr = np.flatnonzero((self.frame_page >= 0) & (self.dirty | ~self.held[np.maximum(self.frame_page, 0)]))
        if fr.size:
            self._write(fr)
            self.dirty[fr] = False

    def stats(self) -> dict:
        d = self.counters.as_dict()
        d.update(total_pages=self.total_pages, budget_pages=self.nframes, resident_pages=self.resident_pages,
                 page_size=self.page_size, rows_per_page=self.rows_per_page, dram_only=self.dram_only,
                 io_wall_s=self.io_wall_s, io_stall_s=self.io_stall_s)
        return d

    # -- internals ---------------------------------------------------------------------------
    def _io(self, fn, *args, **kw):
        clk = self.clock
        c0 = clk() if clk is not None else 0.0
        w0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            w = time.perf_counter() - w0
            self.io_wall_s += w
            self.io_stall_s += (clk() - c0) if clk is not None else w

    def _make_resident(self, pages: np.ndarray) -> None:
        c = self.counters
        fr = self.page_frame[pages]
        res = fr >= 0
        rf = fr[res]
        self.ref[rf] = True
        self.pin[rf] = True
        c.page_refs += int(pages.size)
        c.hits += int(rf.size)
        missing = pages[~res]
        m = int(missing.size)
        if m == 0:
            return
        if m > self._nfree:
            if pages.size > self.nframes:
                raise ValueError(
                    f"one batch needs {pages.size} pages but the DRAM budget holds {self.nframes} "
                    f"({self.budget_bytes} bytes): raise the budget or lower the batch size")
            self._evict(m - self._nfree)
        newf = self._free[self._nfree - m:self._nfree][::-1].copy()
        self._nfree -= m
        st = self.page_state[missing]
        old = st == SWAPPED
        if old.any():
            ids = missing[old]
            data = self._io(self.backend.swap_in, ids)
            self.frames[newf[old]] = data
            self.dirty[newf[old]] = False
            c.faults += int(ids.size)
            c.swap_in_calls += 1
            c.bytes_read += int(ids.size) * self.page_size
            if self.trace is not None:
                self.trace.add(SWAP_IN, ids)
        if not old.all():
            new = ~old
            self._create(missing[new], newf[new])
            self.dirty[newf[new]] = True
            c.first_touch += int(new.sum())
        self.page_frame[missing] = newf
        self.frame_page[newf] = missing
        self.page_state[missing] = RESIDENT
        self.ref[newf] = True
        self.pin[newf] = True

    def _create(self, pages: np.ndarray, frames: np.ndarray) -> None:
        """First touch: weight pages from a counter-based hash of (seed, page, word), uniform in
        (-1/sqrt(rows), 1/sqrt(rows)) as DLRM initialises; state pages zero."""
        t = self.table_of_page(pages)
        is_state = pages >= self.state_base[t]
        W = self.rows_per_page * self.dim
        wp, wf, wt = pages[~is_state], frames[~is_state], t[~is_state]
        if wp.size:
            # per-page 32-bit seed (splitmix64 of page id and seed), then murmur3's fmix32 of
            # seed ^ word * golden: cheap uint32 passes over the (pages, words) block
            ps = splitmix64(wp.astype(np.uint64) ^ np.uint64((self.seed * 0x9E3779B1 + 0x51ED) & (2**64 - 1)))
            h = (ps >> np.uint64(32)).astype(np.uint32)[:, None] ^ self._word_mix[None, :W]
            h *= np.uint32(0x85EBCA6B)
            h ^= h >> np.uint32(13)
            h *= np.uint32(0xC2B2AE35)
            h ^= h >> np.uint32(16)
            u = (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))     # [0, 1)
            b = self._bound[wt].astype(np.float32)[:, None]
            vals = (2.0 * u - 1.0) * b
            self._f32[wf, :W] = vals
            self._f32[wf, W:] = 0.0
        sf = frames[is_state]
        if sf.size:
            self._f32[sf] = 0.0

    def _clock_select(self, k: int) -> np.ndarray:
        """k victim frames by CLOCK: unpinned, occupied frames; a referenced one gets its bit
        cleared and a second chance. Vectorised over chunks of the frame array."""
        n = self.nframes
        out = []
        need = k
        sweeps = 0
        while need > 0:
            c = min(n, max(4 * need, 4096))
            idx = np.arange(self.hand, self.hand + c, dtype=np.int64)
            if self.hand + c > n:
                idx %= n
            elig = (self.frame_page[idx] >= 0) & ~self.pin[idx]
            cand = elig & ~self.ref[idx]
            pos = np.flatnonzero(cand)
            if pos.size >= need:
                last = int(pos[need - 1])
                sel = idx[pos[:need]]
                e = elig[:last + 1]
                self.ref[idx[:last + 1][e]] = False
                self.hand = (self.hand + last + 1) % n
                out.append(sel)
                self.pin[sel] = True
                need = 0
            else:
                sel = idx[pos]
                out.append(sel)
                self.pin[sel] = True          # not chosen twice in this sweep
                self.ref[idx[elig]] = False
                self.hand = (self.hand + c) % n
                need -= int(pos.size)
                sweeps += c
                if sweeps > 3 * n:
                    raise RuntimeError("CLOCK found no evictable frame")  # guarded by the capacity check
        return np.concatenate(out) if len(out) > 1 else out[0]

    def _write(self, fr: np.ndarray) -> None:
        """swap_out the pages in frames ``fr``: one call per table, CLOCK order within a table."""
        pages = self.frame_page[fr]
        t = self.table_of_page(pages)
        order = np.argsort(t, kind="stable")
        t, fr, pages = t[order], fr[order], pages[order]
        cuts = np.flatnonzero(np.diff(t)) + 1
        c = self.counters
        for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [t.size]])):
            ids = pages[lo:hi]
            data = self.frames[fr[lo:hi]]
            self._io(self.backend.swap_out, ids, data, stream=int(t[lo]))
            if self.trace is not None:
                self.trace.add(SWAP_OUT, ids, int(t[lo]))
            c.swap_out_calls += 1
        self.held[pages] = True
        c.pages_written += int(pages.size)
        c.bytes_written += int(pages.size) * self.page_size

    def _evict(self, k: int) -> None:
        fr = self._clock_select(k)
        pages = self.frame_page[fr]
        w = self.dirty[fr] | ~self.held[pages]
        if w.any():
            self._write(fr[w])
        c = self.counters
        c.evictions += int(fr.size)
        c.clean_drops += int(fr.size - w.sum())
        self.page_state[pages] = SWAPPED
        self.page_frame[pages] = -1
        self.frame_page[fr] = -1
        self.ref[fr] = False
        self.dirty[fr] = False
        self.pin[fr] = False
        self._free[self._nfree:self._nfree + fr.size] = fr
        self._nfree += int(fr.size)

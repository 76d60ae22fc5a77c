"""``PagedEmbedding``: DLRM embedding tables kept in 4 KiB pages, with a DRAM page cache of bounded
size in front of any ``SwapBackend``.

Layout. Table t's rows are packed ``rows_per_page = page_size // (dim * 4)`` to a page (a row never
straddles pages; the tail of a page is padding); ``dim`` may differ per table. With row-wise Adagrad
each table also has state pages (one fp32 accumulator per row, ``page_size // 4`` per page); with Adam
two sets of state pages laid out like the weights (``exp_avg``, then ``exp_avg_sq``: one fp32 per
element). One page id space covers every table: table t owns the contiguous id range
``[page_base[t], page_base[t + 1])`` — its weight pages, then its state pages — and every page of
table t is swapped out with ``stream=t``. ``id_base`` / ``stream_base`` shift the ids and streams the
backend sees, so that several page caches can share one backend.

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
A batch whose pages do not fit the budget is gathered and updated in pieces that do
(``paged_stream``; the same values). A backend error in a step leaves the cache consistent: no frame
taken by a failed fault, the pins as before (``_make_resident`` is atomic), written pages marked call
by call, and after a failed gather nothing pinned and no step pending.
``apply(grad)`` then updates those rows (sparse SGD or row-wise Adagrad) in the frames and marks
their pages dirty. ``gather_tables`` / ``apply_tables`` do the same for per-table index arrays of any
lengths (tables of different dims, or absent from a step), and take an update rule of the caller's
(``rule(t, rows, grad, states) -> (rows, states)``): Adam's arithmetic always comes from the caller
(``zswap_host.torch`` uses torch's own, so that it equals ``torch.optim.SparseAdam`` bit for bit;
numpy's sqrt rounds differently), the paging of its state is done here. ``read_array`` /
``write_array`` move rows of a table's weights or optimizer state between the store and the caller
page by page, without going through the cache (checkpoints). Backends keep a page's copy after ``swap_in`` until it is swapped out again or
discarded, so the copy of a clean page is still good; ``discard_dirty=True`` instead discards the
backend's copy as soon as a page is dirtied (what Linux does on a write fault to a swap-cache page),
which lets GC forget stale copies of resident pages.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from ..errors import ZswapError
from . import paged_stream
from .criteo import splitmix64
from .row_packing import RowPacker, RowPacking
from .trace import DISCARD, SWAP_IN, SWAP_OUT

UNTOUCHED, RESIDENT, SWAPPED = 0, 1, 2
OPTIMIZERS = ("sgd", "adagrad", "adam")
# the per-table arrays each optimizer keeps (weights first); "sum" is row-wise Adagrad's accumulator
ARRAYS = {"sgd": ("weight",), "adagrad": ("weight", "sum"), "adam": ("weight", "exp_avg", "exp_avg_sq")}


def _bookkeeping(method):
    """Adds a gather's or an update's wall time, its demand backend calls excluded, to
    ``bookkeeping_wall_s``: the page cache's own cost inside a training step."""
    @functools.wraps(method)
    def timed(self, *args, **kw):
        w0, io0 = time.perf_counter(), self.io_wall_s
        try:
            return method(self, *args, **kw)
        finally:
            self.bookkeeping_wall_s += time.perf_counter() - w0 - (self.io_wall_s - io0)
    return timed


# the rows of the last gather (held in paged_stream.py, whose pieces are ones too)
_Pending = paged_stream.Pending


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
    prefetch_calls: int = 0     # prefetch() calls that had pages to bring in
    prefetched: int = 0         # pages a prefetch brought in (swapped in or created), counted in faults / first_touch too
    prefetch_cut: int = 0       # upcoming batches a prefetch left out: their pages would not fit beside the pinned ones
    repacks: int = 0            # repacks that moved rows (``pack``)
    rows_moved: int = 0         # rows a repack moved to another slot (their values and state with them)
    repack_pages: int = 0       # pages a repack rewrote (made resident and dirtied)
    repack_faults: int = 0      # pages swapped in for repacks, counted in faults too
    repack_errors: int = 0      # repacks a device error cut short (nothing moved; retried at the next step)

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

    ``dim``: one int, or one per table. ``budget``: DRAM page-cache size — bytes (int), a fraction of
    the paged bytes (float in (0, 1]), or a string (``"25%"``, ``"64MiB"``). ``backend=None`` or a
    budget covering every page = DRAM only (no eviction). ``optimizer``: ``"sgd"`` (row -= lr * grad),
    ``"adagrad"`` (row-wise: one accumulator per row, ``acc += mean(grad**2)``,
    ``row -= lr * grad / (sqrt(acc) + eps)``) or ``"adam"`` (state pages for ``exp_avg`` and
    ``exp_avg_sq``; the update rule is the caller's, see ``apply_tables``); ``steps[t]`` counts the
    updates table t took part in (Adam's bias correction). Optimizer state lives in pages that swap
    too. ``trace``: a ``TraceBuilder`` that records every swap_in / swap_out / discard.
    ``clock``: callable giving the device's (modeled) clock; the change of ``clock()`` across each
    backend call is added to ``io_stall_s`` (wall time inside the call if None). ``io_wall_s`` always
    accumulates the wall time spent inside backend calls, ``bookkeeping_wall_s`` the rest of the wall
    time of gathers and updates (the cache's own work). ``id_base`` / ``stream_base``: added to every
    page id / stream handed to the backend (0: the ids are the page ids).
    ``payload=False``: pages carry no values (no frames): the paging decisions only, driven by
    ``touch`` (trace generation, ``trace_gen.py``).
    ``pack``: a ``RowPacking`` — hot rows packed together (see ``repack``): rows move between slots
    by measured access frequency, every ``pack.every`` steps; no value ever changes. None: row r
    sits in slot r. Everything public takes rows; slots are internal, except ``read_slots`` /
    ``write_slots`` / ``slot_rows`` (streaming in page order).
    """

    def __init__(self, tables, dim, backend=None, budget=1.0, page_size: int = 4096, seed: int = 0,
                 optimizer: str = "sgd", lr: float = 0.1, trace=None, *, eps: float = 1e-8,
                 clock=None, discard_dirty: bool = False, id_base: int = 0, stream_base: int = 0,
                 payload: bool = True, pack: RowPacking | None = None) -> None:
        self.tables = tuple(int(n) for n in tables)
        if not self.tables or min(self.tables) < 1:
            raise ValueError("every table needs at least one row")
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {optimizer!r}")
        T = len(self.tables)
        dims = np.broadcast_to(np.asarray(dim, np.int64), (T,)).copy() if np.ndim(dim) == 0 else \
            np.asarray([int(d) for d in dim], np.int64)
        if dims.shape != (T,) or dims.min() < 1:
            raise ValueError(f"dim must be a positive int or one per table ({T}), not {dim!r}")
        self.page_size = int(page_size)
        if backend is not None and backend.page_size != self.page_size:
            raise ValueError(f"backend page size {backend.page_size} != {self.page_size}")
        self.dims = dims
        self.rpp = self.page_size // (4 * dims)                     # rows per page, per table
        if self.rpp.min() < 1:
            raise ValueError(f"a {int(dims.max())}-float row does not fit a {self.page_size}-byte page")
        self.uniform = bool((dims == dims[0]).all())
        # one dim: the scalars the bench reads; several dims: None (use dims / rpp)
        self.dim = int(dims[0]) if self.uniform else None
        self.rows_per_page = R = int(self.rpp[0]) if self.uniform else None
        self._kR = int(self.rpp.max())                              # key = page * _kR + slot
        self.states_per_page = S = self.page_size // 4
        self.backend = backend
        self.seed = int(seed)
        self.optimizer = optimizer
        self.lr = float(lr)
        self.eps = float(eps)
        self.trace = trace
        self.clock = clock
        self.discard_dirty = bool(discard_dirty)
        self.id_base = int(id_base)
        self.stream_base = int(stream_base)
        self.steps = np.zeros(T, np.int64)                          # updates each table took part in
        rows = np.array(self.tables, np.int64)
        self.weight_pages = -(-rows // self.rpp)
        if optimizer == "adagrad":
            self.state_pages = -(-rows // S)
        elif optimizer == "adam":
            self.state_pages = 2 * self.weight_pages
        else:
            self.state_pages = np.zeros(T, np.int64)
        per_table = self.weight_pages + self.state_pages
        self.page_base = np.concatenate([[0], np.cumsum(per_table)]).astype(np.int64)  # T + 1 entries
        self.state_base = self.page_base[:-1] + self.weight_pages
        self.total_pages = int(self.page_base[-1])
        self.total_bytes = self.total_pages * self.page_size
        self._bound = (1.0 / np.sqrt(rows.astype(np.float64))).astype(np.float64)
        self._init_shift = np.zeros(T, np.int64)     # first touch's page id - the page id (init_as)
        self._words = self.rpp * dims                                # fp32 words of rows per weight page
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
        self.payload = bool(payload)
        # lazily backed by the OS; payload-free: no bytes at all (a 24 GB budget would not even map)
        self.frames = np.zeros((n, self.page_size if self.payload else 0), np.uint8)
        self._f32 = self.frames.view(np.float32)                     # (n, page_size // 4)
        if self.uniform and self.payload:
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
        self.bookkeeping_wall_s = 0.0             # gathers and updates, backend calls excluded (wall)
        self._ctx: _Pending | paged_stream.StreamedStep | None = None
        self._unsettled: paged_stream.StreamedStep | None = None    # an update not yet written back
        self._ahead: np.ndarray | None = None     # pages the last prefetch pinned for queued batches
        self._prefetching = False                 # backend calls now count as overlapped I/O
        self.io_overlap_s = 0.0                   # clock change across prefetch backend calls
        self.prefetch_wall_s = 0.0                # wall time inside prefetch backend calls
        # hot rows packed together (row_packing): None = row r sits in slot r
        self.packer = RowPacker(self.tables, self.rpp, pack) if pack is not None else None
        self.last_repack_error: ZswapError | None = None

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
        return self.page_base[table] + self._slots_of(table, np.asarray(rows, np.int64)) // self.rpp[table]

    def _slots_of(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Slots of rows of one table (the rows themselves without packing)."""
        if self.packer is None:
            return rows
        return self.packer.slots(np.full(rows.shape, table, np.int64), rows)

    @_bookkeeping
    def gather(self, sparse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bring a batch's rows into DRAM. ``sparse``: int indices of shape (tables, ...) (table t's
        indices in ``sparse[t]``). Returns ``(rows, inverse)``: the unique rows, float32 (U, dim),
        and for every entry of ``sparse`` (flattened, C order) its row in ``rows``. The pages stay
        pinned until the next ``gather``; call ``apply(grad)`` to update these rows. Tables of one
        dim only (else ``gather_tables``)."""
        sp = np.asarray(sparse)
        T = len(self.tables)
        if sp.shape[0] != T:
            raise ValueError(f"sparse must have {T} tables on axis 0, has shape {sp.shape}")
        if not self.uniform:
            raise ValueError("gather() needs tables of one dim; use gather_tables()")
        idx = sp.reshape(T, -1).astype(np.int64, copy=False)
        R = self.rows_per_page
        if idx.size:
            lo, hi = idx.min(axis=1), idx.max(axis=1)
            if (lo < 0).any() or (hi >= np.array(self.tables)).any():
                t = int(np.flatnonzero((lo < 0) | (hi >= np.array(self.tables)))[0])
                raise IndexError(f"table {t}: index out of range [0, {self.tables[t]})")
        self._pack_tick()
        if self.packer is not None:
            idx = self.packer.slots(np.arange(T)[:, None], idx)
        key = (self.page_base[:-1, None] * R + idx).reshape(-1)     # page * R + slot
        rows, inverse = self._gather_keys(key, count=True)
        self.counters.lookups += int(idx.size)
        return rows, inverse

    @_bookkeeping
    def gather_tables(self, indices) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """``gather`` for per-table index arrays: ``indices[t]`` holds table t's lookups (an int array
        of any shape and length, or None: table t is not in this step). Returns, per table, None or
        ``(rows, inverse)``: its unique rows, float32 (U_t, dims[t]) in row order, and for each of its
        lookups (flattened) the row in ``rows``. All the tables' pages are made resident and pinned
        together (one budget); ``IndexError`` for an index outside ``[0, tables[t])``, before any
        paging. Update with ``apply_tables``."""
        T = len(self.tables)
        present, lens, key = self._lookup_keys(indices)
        if self._pack_tick():
            key = self._lookup_keys(indices)[2]
        rows, inverse = self._gather_keys(key, count=True)
        p = self._ctx
        p.tables = present
        self.counters.lookups += int(key.size)
        cut = np.searchsorted(p.table, np.arange(T + 1))
        koff = np.concatenate([[0], np.cumsum(lens)])
        out: list = [None] * T
        streamed = isinstance(p, paged_stream.StreamedStep)
        for j, t in enumerate(present.tolist()):          # per table, never per row
            lo, hi = int(cut[t]), int(cut[t + 1])
            r = rows[lo:hi] if rows is not None else \
                p.rows[t] if streamed else self._view(t)[p.f[lo:hi], p.slot[lo:hi]]
            if rows is None and p.order is not None:
                r = r[p.order[lo:hi] - lo]
            out[t] = (r, inverse[koff[j]:koff[j + 1]] - lo)
        return out

    def _key_pages(self, ukeys: np.ndarray) -> tuple:
        """For sorted unique keys (page * _kR + slot): (upage, uslot, table, state pages, state slots,
        every page needed, sorted)."""
        R = self._kR
        upage, uslot = ukeys // R, ukeys % R
        first = np.ones(upage.size, bool)
        first[1:] = upage[1:] != upage[:-1]
        pages = upage[first]
        t = self.table_of_page(upage)
        spage = sslot = None
        if self.optimizer == "adagrad":
            row = (upage - self.page_base[t]) * self.rpp[t] + uslot
            spage = self.state_base[t] + row // self.states_per_page
            sslot = row % self.states_per_page
            pages = np.union1d(pages, spage)
        elif self.optimizer == "adam":            # exp_avg, exp_avg_sq: the weight page's twins
            m = self.state_base[t] + (upage - self.page_base[t])
            spage = np.stack([m, m + self.weight_pages[t]])
            pages = np.union1d(pages, spage)
        return upage, uslot, t, spage, sslot, pages

    def _gather_keys(self, key: np.ndarray, count: bool = False) -> tuple[np.ndarray | None, np.ndarray]:
        """Bring in and pin the pages of lookup keys; the step's context in ``_ctx``. A step whose
        pages do not fit the budget is gathered in pieces (``paged_stream``). On an error nothing
        is pinned and no step is pending. ``count``: a step's lookups (counted for packing)."""
        self.settle()
        ukeys, inverse = np.unique(key, return_inverse=True)
        upage, uslot, t, spage, sslot, pages = self._key_pages(ukeys)
        order = rank = None
        if count and self.packer is not None:
            slots = (upage - self.page_base[t]) * self.rpp[t] + uslot
            self.packer.count(t, slots)
            order, rank = self._ordered(t, slots)
        self._ctx = None
        self.pin.fill(False)
        if pages.size > self.nframes and self.payload:
            self._ctx = step = paged_stream.gather(self, self._stream_port(), upage, uslot, t, spage, sslot)
            self.counters.unique_rows += int(ukeys.size)
            step.order, step.rank = order, rank
            return self._out(step.flat_rows(), inverse.reshape(-1), order, rank)
        if self._ahead is not None and self._ahead.size:      # keep what a prefetch queued, if both fit
            fa = self.page_frame[self._ahead]
            fa = fa[fa >= 0]
            if fa.size + pages.size <= self.nframes:
                self.pin[fa] = True
        try:
            self._make_resident(pages)
        except BaseException:
            self.pin.fill(False)
            raise
        f = self.page_frame[upage].astype(np.int64)
        rows = self._rows[f, uslot] if self.uniform and self.payload else None
        sf = self.page_frame[spage].astype(np.int64) if spage is not None else None
        self._ctx = _Pending(f, uslot, t, sf, sslot, rows, order=order, rank=rank)
        self.counters.unique_rows += int(ukeys.size)
        return self._out(rows, inverse.reshape(-1), order, rank)

    def _ordered(self, t: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """With packing, a step's unique rows (sorted by page) put back in (table, row) order, as
        without it — so torch's pooling backward sums a row's duplicates in the same order, bit for
        bit: ``order`` (that order's entries, by page-sorted index) and ``rank`` (its inverse)."""
        rows = self.packer.rows_of_slots(t, slots)
        order = np.lexsort((rows, t))
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return order, rank

    @staticmethod
    def _out(rows, inverse, order, rank):
        if order is None:
            return rows, inverse
        return (rows[order] if rows is not None else None), rank[inverse]

    @staticmethod
    def _to_pages(p, grads: list, present) -> list:
        """Per-table gradients given in row order (``_ordered``) back in the step's page order."""
        if p.rank is None:
            return grads
        cut = np.searchsorted(p.table, np.arange(len(grads) + 1))
        out = list(grads)
        for t in present.tolist():
            lo, hi = int(cut[t]), int(cut[t + 1])
            if hi > lo:
                out[t] = np.asarray(grads[t])[p.rank[lo:hi] - lo]
        return out

    @_bookkeeping
    def apply(self, grad: np.ndarray) -> None:
        """Apply the gradient of the rows last returned by ``gather`` (float32 (U, dim)) and mark
        their pages dirty."""
        if self._ctx is None:
            raise RuntimeError("apply() without a gather()")
        p = self._ctx
        if self.optimizer == "adam":
            raise ValueError("optimizer 'adam' has no built-in update: use apply_tables() with a rule")
        if isinstance(p, paged_stream.StreamedStep):
            if not self.uniform:
                raise ValueError("apply() needs tables of one dim; use apply_tables()")
            self._ctx = None
            g = np.asarray(grad, np.float32)
            if p.rank is not None:
                g = g[p.rank]
            self._unsettled = paged_stream.apply(self, self._stream_port(), p, np.arange(len(self.tables)),
                                                 [g[p.tcut[t]:p.tcut[t + 1]] for t in range(len(self.tables))], None)
            return
        self._ctx = None
        if p.rows is None:
            raise ValueError("apply() needs tables of one dim; use apply_tables()")
        g = np.asarray(grad, np.float32)
        if g.shape != p.rows.shape:
            raise ValueError(f"grad shape {g.shape} != rows shape {p.rows.shape}")
        if p.rank is not None:
            g = g[p.rank]
        stepped = np.arange(len(self.tables)) if p.tables is None else p.tables
        self.steps[stepped] += 1
        sel = slice(None)
        rows, states = self._rule()(p.rows, g, self._states(p, sel, self._rows))
        self._put(p, sel, self._rows, rows, states)
        self._dirtied(p.f, p.sf)
        self._unpin(p)

    @_bookkeeping
    def apply_tables(self, grads, rule=None) -> None:
        """Apply per-table gradients of the rows last returned by ``gather_tables``: ``grads[t]``
        float32 (U_t, dims[t]) for every table in that step (None or anything for the others). Each
        table in the step counts one step (``steps[t]``, incremented before the update), rows or not.
        ``rule(t, rows, grad, states) -> (rows, states)``: the caller's update arithmetic over table
        t's rows (states: () for sgd, (acc,) for adagrad, (exp_avg, exp_avg_sq) for adam; float32
        arrays, returned updated); None = the built-in one (sgd, adagrad; adam has none)."""
        if self._ctx is None:
            raise RuntimeError("apply_tables() without a gather_tables()")
        p = self._ctx
        T = len(self.tables)
        if len(grads) != T:
            raise ValueError(f"grads must have one entry per table ({T}), has {len(grads)}")
        if rule is None and self.optimizer == "adam":
            raise ValueError("optimizer 'adam' has no built-in update: pass a rule")
        self._ctx = None
        present = np.arange(T) if p.tables is None else p.tables
        grads = self._to_pages(p, grads, present)
        if isinstance(p, paged_stream.StreamedStep):
            self._unsettled = paged_stream.apply(self, self._stream_port(), p, present, grads, rule)
            return
        self.steps[present] += 1
        builtin = self._rule() if rule is None else None
        cut = np.searchsorted(p.table, np.arange(T + 1))
        for t in present.tolist():                          # per table, never per row
            lo, hi = int(cut[t]), int(cut[t + 1])
            if hi == lo:
                continue
            sel = slice(lo, hi)
            view = self._view(t)
            rows = p.rows[sel] if p.rows is not None else view[p.f[sel], p.slot[sel]]
            g = np.asarray(grads[t], np.float32)
            if g.shape != rows.shape:
                raise ValueError(f"table {t}: grad shape {g.shape} != rows shape {rows.shape}")
            states = self._states(p, sel, view)
            new_rows, states = builtin(rows, g, states) if rule is None else rule(t, rows, g, states)
            self._put(p, sel, view, new_rows, states)
        self._dirtied(p.f, p.sf)
        self._unpin(p)

    @_bookkeeping
    def touch(self, indices, between: Callable[[], object] | None = None) -> None:
        """A payload-free step (``payload=False``): make the pages of per-table index arrays (as
        ``gather_tables`` takes) resident and dirty them, exactly as ``gather_tables`` then
        ``apply_tables`` would — the same evictions, faults, discards and trace events — without
        any row values. ``between()``: run after the gather and before the update, as a training
        step runs its lookahead prefetch between forward and backward. ``RuntimeError`` on a cache
        with payload."""
        if self.payload:
            raise RuntimeError("touch() is the payload-free step; use gather_tables() and apply_tables()")
        present, _, key = self._lookup_keys(indices)
        if self._pack_tick():
            key = self._lookup_keys(indices)[2]
        self._gather_keys(key, count=True)
        p = self._ctx
        if between is not None:
            between()
        self._ctx = None
        self.counters.lookups += int(key.size)
        self.steps[present] += 1
        self._dirtied(p.f, p.sf)

    def read_rows(self, table: int, rows) -> np.ndarray:
        """Current values of some rows of one table, float32 (n, dims[table]), faulting their pages
        in as a batch would (for tests and inspection; does not count as lookups)."""
        r = np.asarray(rows, np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.tables[table]):
            raise IndexError(f"table {table}: index out of range [0, {self.tables[table]})")
        R = self.rpp[table]
        s = self._slots_of(table, r)
        out, inv = self._gather_keys((self.page_base[table] + s // R) * self._kR + s % R)
        p = self._ctx
        self._ctx = None
        if out is None:
            out = p.rows[table] if isinstance(p, paged_stream.StreamedStep) else self._view(table)[p.f, p.slot]
        self.pin.fill(False)
        return out[inv]

    def peek_rows(self, table: int, rows) -> np.ndarray:
        """Current values of some rows of one table, float32 (n, dims[table]), read page by page
        without going through the cache (``read_array``'s way: nothing made resident or evicted, no
        budget limit; the current step stays)."""
        r = np.asarray(rows, np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.tables[table]):
            raise IndexError(f"table {table}: index out of range [0, {self.tables[table]})")
        self.settle()
        R, d = int(self.rpp[table]), int(self.dims[table])
        s = self._slots_of(table, r)
        pages, inv = np.unique(self.page_base[table] + s // R, return_inverse=True)
        data = self._read_pages(pages).view(np.float32)[:, :R * d].reshape(-1, R, d)
        return data[inv.reshape(-1), s % R]

    def array_shape(self, table: int, name: str) -> tuple[int, ...]:
        """Shape of one of table ``table``'s arrays (``ARRAYS[optimizer]``): (rows, dim), or (rows,)
        for row-wise Adagrad's ``"sum"``."""
        self.array_layout(table, name)
        n = self.tables[table]
        return (n,) if name == "sum" else (n, int(self.dims[table]))

    def read_array(self, table: int, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Rows ``[lo, hi)`` of table ``table``'s array ``name`` (``"weight"`` or an optimizer state
        of ``ARRAYS[optimizer]``), float32, read page by page without going through the cache:
        resident pages from their frames, swapped-out pages with one ``swap_in``, pages never touched
        as first touch creates them. Nothing is made resident or evicted (the current step stays).
        With packing the rows may sit on up to ``hi - lo`` pages: ``read_slots`` streams in page order."""
        lo, hi = self._range(table, name, lo, hi)
        return self._read_at(table, name, self._slots_of(table, np.arange(lo, hi, dtype=np.int64)))

    def read_slots(self, table: int, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """``read_array`` of slots ``[lo, hi)`` (the rows ``slot_rows(table, lo, hi)``), in page order."""
        lo, hi = self._range(table, name, lo, hi)
        return self._read_at(table, name, np.arange(lo, hi, dtype=np.int64))

    def slot_rows(self, table: int, lo: int, hi: int):
        """The rows held by slots ``[lo, hi)`` of a table: ``slice(lo, hi)`` without packing, else an
        int64 array."""
        if self.packer is None:
            return slice(int(lo), int(hi))
        return self.packer.rows_in(table, slice(int(lo), int(hi)))

    def _range(self, table: int, name: str, lo, hi) -> tuple[int, int]:
        n = self.array_layout(table, name)[3]
        hi = n if hi is None else int(hi)
        lo = int(lo)
        if not 0 <= lo <= hi <= n:
            raise IndexError(f"table {table}: rows [{lo}, {hi}) not within [0, {n})")
        return lo, hi

    def _read_at(self, table: int, name: str, slots: np.ndarray) -> np.ndarray:
        first, R, w, _ = self.array_layout(table, name)
        if not slots.size:
            return np.zeros((0,) if name == "sum" else (0, w), np.float32)
        self.settle()
        pages, inv = np.unique(first + slots // R, return_inverse=True)
        data = self._read_pages(pages)
        out = data.view(np.float32)[:, :R * w].reshape(pages.size, R, w)[inv.reshape(-1), slots % R]
        return out[:, 0] if name == "sum" else out

    def write_array(self, table: int, name: str, lo: int, values) -> None:
        """Set rows ``[lo, lo + len(values))`` of table ``table``'s array ``name``, page by page,
        without evicting anything: a resident page is overwritten in its frame (and dirtied), the
        others go to free frames while there are any, then straight to the backend with one
        ``swap_out`` (``stream`` = the table). Pages only partly covered are read first. Ends the
        current step."""
        v, lo, hi = self._values(table, name, lo, values)
        self._write_at(table, name, self._slots_of(table, np.arange(lo, hi, dtype=np.int64)), v)

    def write_slots(self, table: int, name: str, lo: int, values) -> None:
        """``write_array`` of slots ``[lo, lo + len(values))`` (``slot_rows``), in page order."""
        v, lo, hi = self._values(table, name, lo, values)
        self._write_at(table, name, np.arange(lo, hi, dtype=np.int64), v)

    def _values(self, table: int, name: str, lo, values) -> tuple[np.ndarray, int, int]:
        _, _, w, n = self.array_layout(table, name)
        v = np.asarray(values, np.float32)
        want = (v.shape[0],) if name == "sum" else (v.shape[0], w)
        if v.ndim == 0 or v.shape != want:
            raise ValueError(f"table {table} {name}: values of shape {v.shape}, want (rows{', ' + str(w) if name != 'sum' else ''})")
        lo = int(lo)
        hi = lo + v.shape[0]
        if not 0 <= lo <= hi <= n:
            raise IndexError(f"table {table}: rows [{lo}, {hi}) not within [0, {n})")
        return v, lo, hi

    def _write_at(self, table: int, name: str, slots: np.ndarray, v: np.ndarray) -> None:
        first, R, w, n = self.array_layout(table, name)
        self.settle()
        self._ctx = None
        if not slots.size:
            return
        pages, inv = np.unique(first + slots // R, return_inverse=True)
        inv = inv.reshape(-1)
        buf = np.zeros((pages.size, self.page_size), np.uint8)
        # pages holding slots outside these: read first, to keep them
        full = np.minimum(R, n - (pages - first) * R)
        part = np.flatnonzero(np.bincount(inv, minlength=pages.size) < full)
        if part.size:
            buf[part] = self._read_pages(pages[part])
        buf.view(np.float32)[:, :R * w].reshape(pages.size, R, w)[inv, slots % R] = v.reshape(-1, w)
        self._write_pages(table, pages, buf)

    def flush(self) -> None:
        """Write every dirty resident page to the backend (keeping it resident and now clean)."""
        if self.backend is None:
            return
        self.settle()
        fr = np.flatnonzero((self.frame_page >= 0) & (self.dirty | ~self.held[np.maximum(self.frame_page, 0)]))
        if fr.size:
            self._write(fr)
            self.dirty[fr] = False

    def release(self) -> None:
        """Forget the tables: discard (one call) every page the backend holds for them and drop the
        DRAM cache. The object is unusable afterwards."""
        self._ctx = None
        self._unsettled = None
        if self.backend is not None:
            ids = np.flatnonzero((self.page_state == SWAPPED) | self.held)
            if ids.size:
                self._io(self.backend.discard, self._bid(ids))
                if self.trace is not None:
                    self.trace.add(DISCARD, self._bid(ids))
        self.frames = self._f32 = self._rows = None
        self.page_state[:] = UNTOUCHED
        self.held[:] = False

    def settle(self) -> None:
        """Finish writing back the update of a step larger than the budget whose write-back a device
        error interrupted (``paged_stream``): every read of values calls it first, so the update is
        never lost; it raises the device's error again while the write-back cannot finish."""
        if self._unsettled is not None:
            paged_stream.write_back(self, self._stream_port(), self._unsettled)
            self._unsettled = None

    def _stream_port(self) -> paged_stream.CachePort:
        """This cache's steps for ``paged_stream`` (see there)."""
        return paged_stream.CachePort(self._make_resident, self._view, self._states, self._put, self._dirtied,
                                      self._rule)

    def repack(self) -> int:
        """Pack hot rows together now (``pack``; also run by the first gather of every ``pack.every``
        steps): the rows ``RowPacker.plan`` picks (at most ``pack.max_rows``, and at most what the
        budget's unpinned frames hold with their pages) swap slots; their values and optimizer
        state move with them, within the pages those slots are on: the pages are made resident
        together (evicting as a gather does), the values moved in DRAM, the pages dirtied. No value
        changes. Ends the current step. Returns the rows moved.

        A device error (making the pages resident) is not raised: nothing has moved then (the
        mapping and every value as before; pages evicted on the way stay evicted, each consistent),
        it is counted (``repack_errors``, ``last_repack_error``) and the next step tries again."""
        pk = self.packer
        if pk is None:
            return 0
        try:
            self.settle()
        except ZswapError as e:
            return self._repack_failed(e)
        self._ctx = None                  # its frames are about to move: a new step starts anyway
        self.pin.fill(False)
        if self._ahead is not None and self._ahead.size:     # keep what a prefetch queued
            fa = self.page_frame[self._ahead]
            self.pin[fa[fa >= 0]] = True
        room = self.nframes - int(np.count_nonzero(self.pin))
        names = ARRAYS[self.optimizer]
        # rows moved: pack.max_rows, else a budget's worth of rows; fewer while their pages do not fit
        cap = int(pk.cfg.max_rows) if pk.cfg.max_rows is not None else room * int(self.rpp.max())
        while True:
            plan = pk.plan(cap)
            if not plan:
                pk.decay()
                return 0
            layouts = {(t, nm): self.array_layout(t, nm) for t, _, _, _ in plan for nm in names}
            pages = np.unique(np.concatenate([layouts[t, nm][0] + src // layouts[t, nm][1]
                                              for t, _, src, _ in plan for nm in names]))
            if pages.size <= room:
                break
            cap = min(cap - 1, int(cap * room / pages.size * 0.9))
        new = pages[self.page_frame[pages] < 0]
        c = self.counters
        refs, hits, f0 = c.page_refs, c.hits, c.faults
        pin0 = self.pin.copy()
        try:
            self._make_resident(pages)    # atomic: on an error no frame taken, the pins as they were
        except ZswapError as e:
            return self._repack_failed(e)
        finally:
            c.page_refs, c.hits = refs, hits          # not lookups
        c.repack_faults += c.faults - f0
        if self.payload:                  # pure DRAM from here: nothing can fail half-way
            for t, _, src, dst in plan:
                for nm in names:
                    first, R, w, _ = layouts[t, nm]
                    v = np.lib.stride_tricks.as_strided(self._f32, shape=(self.nframes, R, w),
                                                        strides=(self.page_size, 4 * w, 4), writeable=True)
                    v[self.page_frame[first + dst // R], dst % R] = v[self.page_frame[first + src // R], src % R]
        self._dirtied(self.page_frame[pages].astype(np.int64), None)
        pk.commit(plan)
        self.pin[:] = pin0
        self.ref[self.page_frame[new]] = False        # brought in for the move only: first to go
        moved = int(sum(r.size for _, r, _, _ in plan))
        c.repacks += 1
        c.rows_moved += moved
        c.repack_pages += int(pages.size)
        pk.decay()
        return moved

    def _pack_tick(self) -> bool:
        """At a step's start (its indices checked, its keys not yet used): repack when due. True if
        rows moved (the caller's keys are stale)."""
        if self.packer is None or not self.packer.due():
            return False
        return self.repack() > 0

    def _repack_failed(self, e: ZswapError) -> int:
        self.counters.repack_errors += 1
        self.last_repack_error = e
        return 0

    @property
    def unsettled(self) -> bool:
        """Whether an applied update still waits to be written into the pages (``settle``)."""
        return self._unsettled is not None

    def stats(self) -> dict:
        d = self.counters.as_dict()
        d.update(total_pages=self.total_pages, budget_pages=self.nframes, resident_pages=self.resident_pages,
                 page_size=self.page_size, rows_per_page=self.rows_per_page, dram_only=self.dram_only,
                 io_wall_s=self.io_wall_s, io_stall_s=self.io_stall_s, io_overlap_s=self.io_overlap_s,
                 prefetch_wall_s=self.prefetch_wall_s, bookkeeping_wall_s=self.bookkeeping_wall_s,
                 pack_bytes=self.packer.nbytes if self.packer is not None else 0)
        return d

    # -- update rules ------------------------------------------------------------------------
    def _rule(self):
        """The built-in update of ``optimizer`` (sgd, adagrad) as ``rule(rows, grad, states) ->
        (rows, states)``."""
        lr, eps = np.float32(self.lr), np.float32(self.eps)
        if self.optimizer == "sgd":
            return lambda rows, g, states: (rows - lr * g, ())

        def adagrad(rows, g, states):
            acc = states[0] + (g * g).mean(axis=1)
            step = (lr / (np.sqrt(acc) + eps)).astype(np.float32)
            return rows - step[:, None] * g, (acc,)
        return adagrad

    def _states(self, p: _Pending, sel, view) -> tuple:
        if self.optimizer == "adagrad":
            return (self._f32[p.sf[sel], p.sslot[sel]],)
        if self.optimizer == "adam":
            return (view[p.sf[0, sel], p.slot[sel]], view[p.sf[1, sel], p.slot[sel]])
        return ()

    def _put(self, p: _Pending, sel, view, rows, states) -> None:
        if self.optimizer == "adagrad":
            self._f32[p.sf[sel], p.sslot[sel]] = states[0]
        elif self.optimizer == "adam":
            view[p.sf[0, sel], p.slot[sel]] = states[0]
            view[p.sf[1, sel], p.slot[sel]] = states[1]
        view[p.f[sel], p.slot[sel]] = rows

    # -- internals ---------------------------------------------------------------------------
    def _io(self, fn, *args, **kw):
        clk = self.clock
        c0 = clk() if clk is not None else 0.0
        w0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            w = time.perf_counter() - w0
            d = (clk() - c0) if clk is not None else w
            if self._prefetching:            # beside the step's compute: not stall (lookahead.py)
                self.prefetch_wall_s += w
                self.io_overlap_s += d
            else:
                self.io_wall_s += w
                self.io_stall_s += d

    def prefetch(self, batches) -> tuple[float, int]:
        """Fault in the pages of upcoming batches (each a ``sparse`` array as ``gather`` takes, or
        per-table index arrays as ``gather_tables`` takes; nearest first) and pin them, beside the pages of the batch last gathered, which stay pinned: eviction
        for them never takes a page of that batch or of an earlier-queued one. Batches whose pages
        would not fit the budget beside those are left out (from the first that does not fit on;
        counted in ``prefetch_cut``). The queued pages stay pinned through the next ``gather`` when
        that batch and they fit together. Returns the clock change across the prefetch's backend
        calls (wall time there without a clock: see :mod:`.lookahead`) and the pages brought in.
        Numerics are unaffected: pages come in, rows are read at ``gather``."""
        if self.backend is None or self.dram_only or self.frames is None:
            return 0.0, 0
        pinned = int(np.count_nonzero(self.pin))
        room = self.nframes - pinned
        want = np.zeros(0, np.int64)
        cut = 0
        for k, sp in enumerate(batches):
            pages = self._batch_pages(sp)
            u = np.union1d(want, pages)
            f = self.page_frame[u]
            if int(np.count_nonzero((f < 0) | ~self.pin[np.maximum(f, 0)])) > room:
                cut = len(batches) - k
                break
            want = u
        self.counters.prefetch_cut += cut
        self._ahead = want
        if not want.size:
            return 0.0, 0
        c = self.counters
        before = c.faults + c.first_touch
        refs, hits = c.page_refs, c.hits
        o0 = self.io_overlap_s
        self._prefetching = True
        try:
            self._make_resident(want)
        except BaseException:
            self._ahead = None               # nothing queued: the pins are as before the call
            raise
        finally:
            self._prefetching = False
        c.page_refs, c.hits = refs, hits            # a prefetch is not a reference: gather counts those
        brought = c.faults + c.first_touch - before
        if brought:
            c.prefetch_calls += 1
            c.prefetched += brought
        return self.io_overlap_s - o0, brought

    def _batch_pages(self, indices) -> np.ndarray:
        """The sorted pages (weights and optimizer state) a gather of ``indices`` needs: a ``sparse``
        array as ``gather`` takes, or per-table index arrays (None: not in the step) as
        ``gather_tables`` takes. Errors as ``gather_tables``."""
        if not isinstance(indices, (list, tuple)):
            sp = np.asarray(indices)
            T = len(self.tables)
            if sp.shape[0] != T:
                raise ValueError(f"sparse must have {T} tables on axis 0, has shape {sp.shape}")
            indices = list(sp.reshape(T, -1))
        return self._key_pages(np.unique(self._lookup_keys(indices)[2]))[-1]

    def check_indices(self, indices) -> None:
        """Check one step's per-table index arrays (None: table not in the step) as ``gather_tables``
        would, changing nothing: ``ValueError`` for the wrong number of tables, ``TypeError`` for
        non-integer indices, ``IndexError`` for one out of range."""
        self._lookup_keys(indices)

    def _lookup_keys(self, indices) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-table index arrays (None: table not in the step), checked (``ValueError`` for the wrong
        number of tables, ``TypeError`` for non-integer indices, ``IndexError`` for one out of range):
        (the tables present, their lookup counts, every lookup's key = page * _kR + slot, table by
        table)."""
        T = len(self.tables)
        if len(indices) != T:
            raise ValueError(f"indices must have one entry per table ({T}), has {len(indices)}")
        present = np.array([t for t in range(T) if indices[t] is not None], np.int64)
        idx = [np.asarray(indices[t]).reshape(-1) for t in present]
        for t, i in zip(present, idx):
            if i.size and not np.issubdtype(i.dtype, np.integer):
                raise TypeError(f"table {t}: indices must be integers, not {i.dtype}")
        lens = np.array([i.size for i in idx], np.int64)
        flat = np.concatenate(idx).astype(np.int64, copy=False) if idx else np.zeros(0, np.int64)
        tt = np.repeat(present, lens)
        bad = (flat < 0) | (flat >= np.asarray(self.tables, np.int64)[tt])
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            t = int(tt[k])
            raise IndexError(f"table {t}: index {int(flat[k])} out of range [0, {self.tables[t]})")
        R = self.rpp[tt]
        if self.packer is not None:
            flat = self.packer.slots(tt, flat)
        return present, lens, (self.page_base[tt] + flat // R) * self._kR + flat % R

    def _make_resident(self, pages: np.ndarray) -> None:
        """Make ``pages`` (sorted, unique) resident and pin them. Atomic for the caller: if an
        eviction's write or the fault's read fails, the error propagates with no page half brought
        in, no frame taken and the pins as they were (pages evicted before the failure stay
        evicted: each is consistent on its own)."""
        c = self.counters
        fr = self.page_frame[pages]
        res = fr >= 0
        rf = fr[res]
        missing = pages[~res]
        m = int(missing.size)
        if m > self._nfree and pages.size > self.nframes:
            raise ValueError(
                f"one batch needs {pages.size} pages but the DRAM budget holds {self.nframes} "
                f"({self.budget_bytes} bytes): raise the budget or lower the batch size")
        self.ref[rf] = True
        if m == 0:
            self.pin[rf] = True
            c.page_refs += int(pages.size)
            c.hits += int(rf.size)
            return
        pin0 = self.pin.copy()
        self.pin[rf] = True
        st = self.page_state[missing]
        old = st == SWAPPED
        faulted = bool(old.any())
        try:
            if m > self._nfree:
                self._evict(m - self._nfree)
            data = self._io(self.backend.swap_in, self._bid(missing[old])) if faulted else None
        except BaseException:
            self.pin[:] = pin0          # the victims chosen and the pages asked for: unpinned again
            raise
        c.page_refs += int(pages.size)
        c.hits += int(rf.size)
        newf = self._free[self._nfree - m:self._nfree][::-1].copy()
        self._nfree -= m
        if faulted:
            ids = missing[old]
            if self.payload:
                self.frames[newf[old]] = data
            self.dirty[newf[old]] = False
            c.faults += int(ids.size)
            c.swap_in_calls += 1
            c.bytes_read += int(ids.size) * self.page_size
            if self.trace is not None:
                self.trace.add(SWAP_IN, self._bid(ids))
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
        """First touch: the pages' initial values (``_weights``) into their frames; state pages zero."""
        if not self.payload:
            return
        t = self.table_of_page(pages)
        is_state = pages >= self.state_base[t]
        wf = frames[~is_state]
        if wf.size:
            vals, W = self._weights(pages[~is_state], t[~is_state])
            self._f32[wf, :W] = vals
            self._f32[wf, W:] = 0.0
        sf = frames[is_state]
        if sf.size:
            self._f32[sf] = 0.0

    def _init_values(self, pages: np.ndarray) -> np.ndarray:
        """What first touch would put in these pages, float32 (n, page_size // 4)."""
        out = np.zeros((pages.size, self.page_size // 4), np.float32)
        t = self.table_of_page(pages)
        w = pages < self.state_base[t]
        if w.any():
            vals, W = self._weights(pages[w], t[w])
            out[w, :W] = vals
        return out

    def init_as(self, first_pages, rows) -> None:
        """Make first touch create the values a shard would have in the whole tables: table t's weight
        page p gets those of page ``first_pages[t] + p`` (a page id of the whole tables' layout) of a
        table of ``rows[t]`` rows (DLRM's init bound is the whole table's). A sharded run then starts
        from the same tables as the unsharded one (``zswap_host.distributed``); a row shard must start
        on a page boundary. ``ValueError`` once any page was touched, or for arrays of the wrong length."""
        first = np.asarray(first_pages, np.int64)
        n = np.asarray(rows, np.int64)
        T = len(self.tables)
        if first.shape != (T,) or n.shape != (T,) or first.min() < 0 or n.min() < 1:
            raise ValueError(f"init_as needs {T} page ids >= 0 and {T} row counts >= 1")
        if (self.page_state != UNTOUCHED).any():
            raise ValueError("init_as after pages were touched: their values would not match")
        self._init_shift = first - self.page_base[:-1]
        self._bound = 1.0 / np.sqrt(n.astype(np.float64))

    def _weights(self, wp: np.ndarray, wt: np.ndarray) -> tuple[np.ndarray, int]:
        """Initial values of weight pages ``wp`` of tables ``wt``: (float32 (n, W), W) for the first W
        words of each page (the rest is padding, zero). A counter-based hash of (seed, page, word),
        uniform in (-1/sqrt(rows), 1/sqrt(rows)) as DLRM initialises."""
        W = int(self._words[wt].max())
        # per-page 32-bit seed (splitmix64 of page id and seed), then murmur3's fmix32 of
        # seed ^ word * golden: cheap uint32 passes over the (pages, words) block
        wp = wp + self._init_shift[wt]
        ps = splitmix64(wp.astype(np.uint64) ^ np.uint64((self.seed * 0x9E3779B1 + 0x51ED) & (2**64 - 1)))
        h = (ps >> np.uint64(32)).astype(np.uint32)[:, None] ^ self._word_mix[None, :W]
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
        u = (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))     # [0, 1)
        b = self._bound[wt].astype(np.float32)[:, None]
        vals = (2.0 * u - 1.0) * b
        if not self.uniform:                     # tables with narrower rows have more padding
            vals[np.arange(W)[None, :] >= self._words[wt][:, None]] = 0.0
        return vals, W

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
            self._io(self.backend.swap_out, self._bid(ids), data, stream=int(t[lo]) + self.stream_base)
            if self.trace is not None:
                self.trace.add(SWAP_OUT, self._bid(ids), int(t[lo]) + self.stream_base)
            # marked call by call: if a later table's call fails, these pages are written and clean
            self.held[ids] = True
            self.dirty[fr[lo:hi]] = False
            c.swap_out_calls += 1
            c.pages_written += int(ids.size)
            c.bytes_written += int(ids.size) * self.page_size

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

    def _unpin(self, p: _Pending) -> None:
        """The step is over: its frames are evictable again (queued prefetch pages are pinned anew at
        the next gather)."""
        self.pin[p.f] = False
        if p.sf is not None:
            self.pin[p.sf] = False

    def _bid(self, pages: np.ndarray) -> np.ndarray:
        """The ids the backend knows these pages by."""
        return pages + self.id_base if self.id_base else pages

    def _dirtied(self, f: np.ndarray, sf: np.ndarray | None) -> None:
        """Mark updated frames dirty; with ``discard_dirty`` the backend forgets its stale copies."""
        if sf is not None:
            self.dirty[sf] = True
        self.dirty[f] = True
        if self.discard_dirty and self.backend is not None:
            fr = np.unique(f if sf is None else np.concatenate([f, sf.reshape(-1)]))
            pages = self.frame_page[fr]
            pages = pages[self.held[pages]]
            if pages.size:
                try:
                    self._io(self.backend.discard, self._bid(pages))
                except ZswapError:
                    return          # the stale copies stay, harmless: the pages are dirty, rewritten before a read
                self.held[pages] = False
                self.counters.discards += int(pages.size)
                if self.trace is not None:
                    self.trace.add(DISCARD, self._bid(pages))

    def _view(self, t: int) -> np.ndarray:
        """The frames seen as (frames, rows_per_page, dim) rows of table t's layout."""
        if self.uniform:
            return self._rows
        R, d = int(self.rpp[t]), int(self.dims[t])
        return np.lib.stride_tricks.as_strided(
            self._f32, shape=(self.nframes, R, d), strides=(self.page_size, 4 * d, 4), writeable=True)

    def array_layout(self, t: int, name: str) -> tuple[int, int, int, int]:
        """(first page, rows per page, floats per row, rows) of table t's array ``name``; ``KeyError``
        for an array the optimizer does not keep."""
        if name not in ARRAYS[self.optimizer]:
            raise KeyError(f"{name!r} is not an array of optimizer {self.optimizer!r}: {ARRAYS[self.optimizer]}")
        if not 0 <= t < len(self.tables):
            raise IndexError(f"no table {t} (there are {len(self.tables)})")
        R, d, n = int(self.rpp[t]), int(self.dims[t]), self.tables[t]
        if name == "weight":
            return int(self.page_base[t]), R, d, n
        if name == "sum":
            return int(self.state_base[t]), self.states_per_page, 1, n
        first = int(self.state_base[t]) + (int(self.weight_pages[t]) if name == "exp_avg_sq" else 0)
        return first, R, d, n

    def _read_pages(self, ids: np.ndarray) -> np.ndarray:
        """Current bytes of pages, (n, page_size) uint8, without making any resident."""
        out = np.empty((ids.size, self.page_size), np.uint8)
        fr = self.page_frame[ids]
        res = fr >= 0
        out[res] = self.frames[fr[res]]
        st = self.page_state[ids]
        sw = ~res & (st == SWAPPED)
        if sw.any():
            out[sw] = self._io(self.backend.swap_in, self._bid(ids[sw]))
            if self.trace is not None:
                self.trace.add(SWAP_IN, self._bid(ids[sw]))
        new = ~res & (st == UNTOUCHED)
        if new.any():
            out[new] = self._init_values(ids[new]).view(np.uint8)
        return out

    def _write_pages(self, table: int, ids: np.ndarray, data: np.ndarray) -> None:
        """Replace pages of one table: in their frames if resident, else in free frames while there
        are any, else with one swap_out. Nothing is evicted."""
        fr = self.page_frame[ids]
        res = fr >= 0
        if res.any():
            self.frames[fr[res]] = data[res]
            self._dirtied(fr[res].astype(np.int64), None)
        miss = ids[~res]
        m = int(miss.size)
        if m == 0:
            return
        if m <= self._nfree:
            newf = self._free[self._nfree - m:self._nfree][::-1].copy()
            self._nfree -= m
            self.frames[newf] = data[~res]
            self.page_frame[miss] = newf
            self.frame_page[newf] = miss
            self.page_state[miss] = RESIDENT
            self.ref[newf] = False
            self.pin[newf] = False
            self._dirtied(newf, None)
        else:
            self._io(self.backend.swap_out, self._bid(miss), data[~res], stream=int(table) + self.stream_base)
            if self.trace is not None:
                self.trace.add(SWAP_OUT, self._bid(miss), int(table) + self.stream_base)
            self.page_state[miss] = SWAPPED
            self.held[miss] = True
